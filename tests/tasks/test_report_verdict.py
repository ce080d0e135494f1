"""The summary's verdict in words, what a report rests on, and why every gap is there: built from
a run table made here (a labelled corpus, three models, three seeds), no benchmark run.
``tests/flows/test_new_user_study.py`` checks the same on a real benchmark and its bundle."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pandas as pd

from topicbench.tasks.report.data_and_settings import data_settings_blocks, typed_value
from topicbench.tasks.report.parts import ReportData
from topicbench.tasks.report.plots import COLOURS, model_colour, model_styles
from topicbench.tasks.report.render import render_html, render_markdown
from topicbench.tasks.report.sections import build_report
from topicbench.tasks.report.tables import ReportTable
from topicbench.tasks.report.text import Markdown
from topicbench.tasks.report.verdict import column_lead, format_p
from topicbench.tasks.results.data_settings import data_and_settings, typed

#: Per model: (npmi@10 per seed, topic_diversity@10 per seed, nmi per seed, K per seed). gibbs leads
#: NPMI far beyond its seeds' noise; nmf leads TD by a hair (not significant); hdp uses many topics.
SCORES = {
    "gibbs": ([0.30, 0.31, 0.32], [0.70, 0.74, 0.66], [0.52, 0.55, 0.50], [8, 8, 8]),
    "nmf": ([0.10, 0.11, 0.12], [0.71, 0.75, 0.67], [0.31, 0.35, 0.30], [8, 8, 8]),
    "hdp": ([0.05, 0.07, 0.06], [0.40, 0.44, 0.42], [0.20, 0.22, 0.24], [101, 105, 109]),
}
CONFIG = {"corpora": [{"name": "man"}], "seeds": [0, 1, 2], "metrics": ["npmi", "topic_diversity", "clustering"],
          "models": [{"model": "gibbs_lda", "label": "gibbs"}, {"model": "nmf"}, {"model": "hdp"}, {"model": "elda"}]}


def _runs() -> pd.DataFrame:
    rows = []
    for model, (npmi, td, nmi, k) in SCORES.items():
        for seed in range(3):
            rows.append({"status": "FINISHED", "corpus": "man", "model": model, "seed": seed, "error": "",
                         "npmi@10": npmi[seed], "topic_diversity@10": td[seed], "nmi": nmi[seed], "ari": nmi[seed] / 2,
                         "purity": 0.9 if model == "hdp" else 0.5 + 0.01 * seed, "num_topics_used": k[seed],
                         "changed_settings": "", "training_loss_kind": "", "fit_seconds": 1.0})
    for seed in range(3):  # E-LDA: no coherence (its topics' words are out of the reference), not iterative
        rows.append({"status": "FINISHED", "corpus": "man", "model": "elda", "seed": seed, "error": "",
                     "topic_diversity@10": 0.5 + 0.01 * seed, "nmi": 0.1, "ari": 0.05, "purity": 0.4,
                     "num_topics_used": 8, "changed_settings": "", "training_loss_kind": "", "fit_seconds": 1.0,
                     "skipped_metrics": '{"npmi": "the word \'zebi\' does not occur in the reference corpus"}'})
    runs = pd.DataFrame(rows)
    gibbs = runs.model == "gibbs"
    runs["converged"] = np.where(gibbs, 1.0, np.nan)
    runs["training_curve"] = [([0, 10, 20], [3.0, 2.0, 1.9]) if g else None for g in gibbs]
    return runs


def _summary(data):
    (section,) = build_report(data, ["summary"]).sections
    table = next(block for block in section.blocks if isinstance(block, ReportTable))
    verdict = next(block for block in section.blocks if isinstance(block, Markdown) and str(block).startswith("**On "))
    return section, table, str(verdict)


def test_the_verdict_names_the_leader_the_table_ranks_first_and_says_how_strongly():
    data = ReportData(runs=_runs(), experiment="x", command="cmd", config=CONFIG)
    section, table, verdict = _summary(data)
    assert section.blocks[0] == next(b for b in section.blocks if isinstance(b, Markdown))  # it opens the summary
    assert re.search(r"gibbs \(K = 8, mean over its seeds\) leads on NPMI@10 clearly \(.*largest p [<=] [\d.]+, "
                     r"below α = 0.05\)", verdict), verdict
    assert re.search(r"nmf \(K = 8, mean over its seeds\) leads on TD@10 but not significantly \(p = [\d.]+", verdict)
    assert "The criteria disagree" in verdict
    assert "search K with topicbench search search.yaml (the models' K differ (8 to 105) and a lead is not clear" in verdict
    assert "run 5 or more seeds (now 3" in verdict
    # every model the verdict names as leading is ranked 1 in its column, and bold where it leads clearly
    for key, title in (("npmi@10", "NPMI@10"), ("topic_diversity@10", "TD@10"), ("nmi", "NMI (labels)"), ("ari", "ARI (labels)")):
        lead = column_lead(table, data.runs, "man", key, title)
        column = f"{title} · man"
        (row,) = [r for r, model in enumerate(table.cells.model) if model == lead.models[0]]
        assert table.ranks[(row, column)] == 1 and f"{lead.models[0]} (K = 8, mean over its seeds) leads on" in verdict
        if lead.clear:
            assert (row, column) in table.best and f"{title} clearly" in verdict
        else:
            assert f"{title} but not significantly" in verdict or f"{title}, untested" in verdict
    assert format_p(0.0004) == "p < 0.001" and format_p(0.004) == "p = 0.004" and format_p(0.213) == "p = 0.21"


def test_label_scores_are_in_the_summary_and_purity_carries_a_caution_on_k():
    data = ReportData(runs=_runs(), experiment="x", command="cmd", config=CONFIG)
    _, table, _ = _summary(data)
    assert {"NMI (labels)", "ARI (labels)"} <= {group for group, _ in table.column_groups.values()}
    (others,) = build_report(data, ["requested_scores"]).sections
    titles = [block.title for block in others.blocks if isinstance(block, ReportTable)]
    # NMI and ARI are in the summary; purity and the others stay here
    assert titles == [f"{key} (higher is better)" for key in ("purity", "inverse_purity", "harmonic_purity")]
    purity, inverse, harmonic = (block for block in others.blocks if isinstance(block, ReportTable))
    assert str(purity.note).startswith("Caution: purity rewards many topics")
    assert str(inverse.note).startswith("Caution: inverse purity rewards few topics")
    assert "Caution" not in str(harmonic.note)
    assert "man: gibbs 8, nmf 8, hdp 105, elda 8" in str(purity.note)


def test_every_gap_says_why():
    data = ReportData(runs=_runs(), experiment="x", command="cmd", config=CONFIG)
    report = build_report(data, ["robustness", "training", "coherence", "topics"])
    robustness, training, coherence = report.sections[:3]
    assert "the config does not ask for umass" in str(robustness.blocks[-1]) and "metrics: [umass" in str(robustness.blocks[-1])
    assert not any(isinstance(block, ReportTable) and block.empty for block in robustness.blocks)
    absent = [str(block) for block in training.blocks if str(block).startswith("Not in the table")]
    assert absent == ["Not in the table or the loss plots: nmf (nmf's runs logged no training loss (the model is not "
                      "fitted by iterations, or its package keeps no loss per iteration)); hdp (hdp's runs logged no "
                      "training loss (the model is not fitted by iterations, or its package keeps no loss per "
                      "iteration)); elda (E-LDA is not iterative: it selects its keyword topics greedily, so it has no "
                      "loss per iteration)."]
    plot_gap = [str(block) for block in coherence.blocks if str(block).startswith("Not in the plot")]
    assert plot_gap == ["Not in the plot of man: elda (npmi does not apply to elda: the word 'zebi' does not occur in "
                        "the reference corpus)."]


def test_counts_of_one_seed_are_told_apart_from_the_summarys_mean_over_seeds():
    runs = _runs()
    runs["topics_json"] = None
    runs["topics_json"] = runs["topics_json"].astype(object)
    first = runs.index[(runs.model == "hdp") & (runs.seed == 0)][0]
    runs.at[first, "topics_json"] = pd.Series([[{"topic": t, "words": "a b c"} for t in range(101)]]).map(
        __import__("json").dumps).iloc[0]
    (topics,) = build_report(ReportData(runs=runs, experiment="x", command="cmd", config=CONFIG), ["topics"]).sections
    assert any("hdp on man: 101 topics here, K = 105 in the summary (mean of 3 seeds)" in str(block)
               for block in topics.blocks)


def _fit(corpus, model, seed, params, metrics=None):
    return SimpleNamespace(info=SimpleNamespace(start_time=seed, run_id=f"{model}-{seed}"),
                           data=SimpleNamespace(params=params, tags={"corpus": corpus, "model": model, "seed": str(seed)},
                                                metrics=metrics or {}))


PARAMS = {"model": "gibbs_lda", "num_topics": "8", "corpus_documents": "750", "corpus_vocabulary": "8070",
          "corpus_tokens": "91000", "corpus_fingerprint": "ab" * 32, "corpus_vocabulary_from": "train",
          "corpus_partitions": '{"train": 642, "test": 108}', "corpus_labels": '{"1": 125, "2": 125, "3": 125}',
          "corpus_label_count": "3", "corpus_test_only_words": "37", "corpus_test_only_tokens": "41",
          "preprocessing.lowercase": "True", "preprocessing.min_df": "2", "preprocessing.max_df": "0.5",
          "preprocessing.stopwords": "english", "settings.alpha": "0.1", "settings.iterations": "1000",
          "resolved.alpha_": "0.1", "version.numpy": "2.1.0", "version.tomotopy": "0.13.0"}


def test_data_and_settings_print_each_setting_with_its_type():
    assert (typed("True"), typed("8"), typed("0.1"), typed("None"), typed("english")) == (True, 8, 0.1, None, "english")
    assert typed_value(True) == "true" and typed_value("english") == '"english"' and typed_value(None) == "null"
    fits = [_fit("man", "gibbs", seed, PARAMS, {"heldout_dropped_tokens": 41.0}) for seed in (2, 0, 1)]
    record = data_and_settings(fits)
    assert record["corpora"]["man"]["preprocessing"]["lowercase"] is True
    assert record["corpora"]["man"]["partitions"] == {"train": 642, "test": 108}
    (model,) = record["models"]
    assert model["seeds"] == [0, 1, 2] and model["settings"] == {"alpha": 0.1, "iterations": 1000}
    assert list(model["heldout_dropped"].items()) == [("corpus_test_only_tokens", 41), ("corpus_test_only_words", 37),
                                                      ("heldout_dropped_tokens", 41.0)]
    blocks = data_settings_blocks(record, ["man"], ["gibbs"])
    corpora, preprocessing, models, versions = blocks[1:]
    row = corpora.cells.iloc[0]
    assert row["documents (per partition)"] == "750 (train 642, test 108)" and row["labels (documents each)"] == "3: 1 125, 2 125, 3 125"
    assert row["vocabulary built"].startswith("counted from the training documents only")
    assert row["test-only words dropped from held-out scoring"] == "37 words (41 tokens)"
    assert dict(zip(preprocessing.cells.setting, preprocessing.cells.man)) == {
        "lowercase": "true", "max_df": "0.5", "min_df": "2", "stopwords": '"english"'}
    assert models.cells.iloc[0]["settings (as fitted)"] == ("alpha = 0.1", "iterations = 1000")
    assert "heldout_dropped_tokens = 41.0" in models.cells.iloc[0]["held-out: test-only dropped"]
    assert dict(zip(versions.cells.package, versions.cells.version)) == {"numpy": "2.1.0", "tomotopy": "0.13.0"}
    data = ReportData(runs=_runs(), experiment="x", command="cmd", config=CONFIG, data_settings=record)
    report = build_report(data, ["summary", "data_and_settings"])
    markdown, page = render_markdown(report, {}), render_html(report, {})
    assert "## Data and settings" in markdown and '"True"' not in markdown and "| lowercase | true |" in markdown
    assert "Data and settings" in page and "train 642, test 108" in page


def test_each_small_table_keeps_its_footnotes_under_it():
    one = ReportTable(pd.DataFrame({"model": ["a", "b"], "c": [1.0, None]}), title="A", note="–¹ a's reason.")
    two = ReportTable(pd.DataFrame({"model": ["a", "b"], "c": [2.0, None]}), title="B", note="–¹ b's reason.")
    from topicbench.tasks.report.parts import Report, Section

    report = Report("t", (), (Section("S", (one, two)),))
    page = render_html(report, {})
    first, second = page.index("<caption>A</caption>"), page.index("<caption>B</caption>")
    assert first < page.index("a&#x27;s reason") < second < page.index("b&#x27;s reason")
    markdown = render_markdown(report, {})
    assert markdown.index("**A**") < markdown.index("a's reason") < markdown.index("**B**") < markdown.index("b's reason")


def test_a_model_keeps_its_colour_whatever_the_order_or_view():
    models = ["gibbs", "nmf", "hdp", "prodlda", "elda"]
    styles, shuffled = model_styles(models), model_styles(list(reversed(models)))
    assert styles == shuffled and len({style["color"] for style in styles.values()}) == 5
    assert all(model_colour(model, models) == styles[model]["color"] for model in models)
    assert all(style["color"] in COLOURS for style in styles.values())
    from topicbench.tasks.report.study import _curves_figure

    choices = [SimpleNamespace(label=model, corpus="man", point={"num_topics": 8},
                               trials=[{"state": "COMPLETE", "point": {"num_topics": k}, "per_seed": {"npmi@10": [0.1, 0.2]}}
                                       for k in (4, 8)]) for model in ("nmf", "gibbs")]
    figure = _curves_figure(choices, [SimpleNamespace(key="npmi@10", higher_is_better=True)])
    drawn = {axis.get_title(): axis.get_lines()[0].get_color() for axis in figure.axes}
    assert drawn == {"nmf": model_colour("nmf", ["nmf", "gibbs"]), "gibbs": model_colour("gibbs", ["gibbs", "nmf"])}
