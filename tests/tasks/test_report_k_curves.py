"""The K section's data: every run as (K, score), verdicts only among fits at the same K, and one
number per model at unequal K as the prevalence-weighted mean, with its sensitivity to k."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from topicbench.core.metrics.prevalence import prevalence_weighted_mean, top_k_means
from topicbench.core.validation import InputError
from topicbench.tasks.report.k_curves import (
    k_advice, k_points, same_k_groups, same_k_verdicts, top_k_curves, weighted_mean_table,
)
from topicbench.tasks.report.tables import Gap


def _run(model, seed, k, npmi, corpus="c", model_class=None, status="FINISHED"):
    return {"status": status, "corpus": corpus, "model": model, "model_class": model_class or model, "seed": seed,
            "num_topics_used": k, "npmi@10": npmi}


#: E-LDA at two kappas (K 40 and 90, the same on every seed), NMF matched to the first (K 40 per
#: seed), gensim LDA at K 40 on seed 0 only (its seed 1 used 41: not the same K), HDP at K 7 / 9.
RUNS = pd.DataFrame([
    *(_run("elda", s, 40, 0.05, model_class="elda") for s in (0, 1, 2)),
    *(_run("elda[kappa=4]", s, 90, 0.03, model_class="elda") for s in (0, 1, 2)),
    *(_run("nmf", s, 40, v) for s, v in zip((0, 1, 2), (0.10, 0.11, 0.12))),
    _run("lda", 0, 40, 0.2), _run("lda", 1, 41, 0.2), _run("lda", 2, 40, 0.2),
    _run("hdp", 0, 7, 0.01), _run("hdp", 1, 9, 0.02), _run("hdp", 2, 8, float("nan")),
    _run("broken", 0, None, None, status="FAILED"),
])
MODELS = ["elda", "elda[kappa=4]", "nmf", "lda", "hdp", "broken"]


def test_every_finished_run_with_a_k_and_a_score_is_a_point():
    points = k_points(RUNS, "npmi@10")
    assert len(points) == 3 + 3 + 3 + 3 + 2  # hdp's seed 2 has no value, the failed run none at all
    elda = points[points.model_class == "elda"]
    assert sorted(set(zip(elda.model, elda.k))) == [("elda", 40), ("elda[kappa=4]", 90)]
    assert k_points(RUNS, "cv@10").empty


def test_only_models_that_used_the_same_k_on_every_seed_form_a_group():
    groups = same_k_groups(RUNS, models=MODELS, corpora=["c"])
    assert [(g.models, g.k_text) for g in groups] == [(("elda", "nmf"), "40")]
    moving = pd.DataFrame([_run(m, s, k, 0.1) for m in ("hdp", "lda") for s, k in ((0, 7), (1, 9))])
    (group,) = same_k_groups(moving, models=["hdp", "lda"], corpora=["c"])
    assert group.k_text == "7, 9 (by seed)"


def test_the_same_k_verdict_is_welchs_t_of_the_best_against_the_rest():
    runs = pd.DataFrame([*(_run("a", s, 20, v) for s, v in enumerate((0.10, 0.11, 0.12))),
                         *(_run("b", s, 20, v) for s, v in enumerate((0.02, 0.04, 0.03))),
                         *(_run("c", s, 20, v) for s, v in enumerate((0.09, 0.12, 0.10)))])
    table = same_k_verdicts(runs, [("npmi@10", "NPMI@10")], models=["a", "b", "c"], corpora=["c"])
    (row,) = table.cells.to_dict("records")
    assert (row["corpus"], row["K"], row["models"]) == ("c", "20", "a, b, c") and table.tested
    # Holm over the two comparisons: the smaller raw p doubled, the larger as it is (never below the first)
    p_ab = stats.ttest_ind([0.10, 0.11, 0.12], [0.02, 0.04, 0.03], equal_var=False).pvalue
    p_ac = stats.ttest_ind([0.10, 0.11, 0.12], [0.09, 0.12, 0.10], equal_var=False).pvalue
    assert p_ab < p_ac
    assert row["NPMI@10"] == f"no clear best (a has the best mean; Holm-adjusted p ≤ {max(2 * p_ab, p_ac):.2g}, not below α = 0.05)"
    clear = same_k_verdicts(runs[runs.model != "c"], [("npmi@10", "NPMI@10")], models=["a", "b"], corpora=["c"])
    assert clear.cells["NPMI@10"][0] == f"a (Holm-adjusted p ≤ {p_ab:.2g})"


def test_a_deterministic_model_is_never_the_clear_best_on_zero_variance():
    both = pd.DataFrame([*(_run("elda", s, 40, 0.2) for s in (0, 1, 2)), *(_run("nmf", s, 40, 0.1) for s in (0, 1, 2))])
    verdict = same_k_verdicts(both, [("npmi@10", "NPMI@10")], models=["elda", "nmf"], corpora=["c"]).cells["NPMI@10"][0]
    assert verdict == ("no clear best (elda has the best mean; not testable: fewer than 2 seeds, or no seed variance "
                       "(deterministic))")
    # against one deterministic model, the other's seeds carry the test: a one-sample t against its value
    table = same_k_verdicts(RUNS, [("npmi@10", "NPMI@10")], models=MODELS, corpora=["c"])
    p = stats.ttest_1samp([0.10, 0.11, 0.12], 0.05).pvalue
    assert table.cells["NPMI@10"][0] == f"nmf (Holm-adjusted p ≤ {p:.2g})" and table.cells.models[0] == "elda, nmf"


def test_no_verdict_without_two_models_at_the_same_k():
    runs = RUNS[RUNS.model.isin(["elda[kappa=4]", "hdp"])]
    assert same_k_verdicts(runs, [("npmi@10", "NPMI@10")], models=MODELS, corpora=["c"]).empty


def test_the_prevalence_weighted_mean_counts_each_topic_by_its_share():
    # a many-topic model whose coherent topics are rare: its plain mean 0.09 hides that its
    # documents are made of the incoherent one
    scores, shares = [0.30, 0.0, 0.0, 0.0, 0.0, 0.24], [0.05, 0.8, 0.05, 0.04, 0.03, 0.03]
    assert prevalence_weighted_mean(scores, shares) == pytest.approx(0.30 * 0.05 + 0.24 * 0.03)
    assert prevalence_weighted_mean([0.1, np.nan], [0.5, 0.5]) == pytest.approx(0.1)  # NaN: left out, renormalised
    assert prevalence_weighted_mean([np.nan], [1.0]) is None
    np.testing.assert_allclose(top_k_means(scores, shares), [0.0, 0.15, 0.1, 0.075, 0.06, 0.09])
    with pytest.raises(InputError, match="one score and one share per topic"):
        prevalence_weighted_mean([0.1, 0.2], [1.0])
    with pytest.raises(InputError, match="finite number >= 0"):
        top_k_means([0.1], [-1.0])


def _topics(npmi, shares):
    return pd.DataFrame({"npmi@10": npmi, "share": shares})


SCORES = {
    ("c", "many", 0): _topics([0.30, 0.0, 0.0, 0.24], [0.1, 0.6, 0.2, 0.1]),
    ("c", "many", 1): _topics([0.32, 0.0, 0.0, 0.22], [0.1, 0.6, 0.2, 0.1]),
    ("c", "few", 0): _topics([0.10, 0.12], [0.5, 0.5]),
    ("c", "few", 1): _topics([0.11, 0.13], [0.4, 0.6]),
}


def test_weighted_means_per_seed_then_over_seeds_and_a_gap_for_a_model_without_topic_scores():
    table = weighted_mean_table(SCORES, [("npmi@10", "NPMI@10")], models=["many", "few", "none"], corpora=["c"])
    many, few, none = table.cells["NPMI@10 · c"]
    assert many.mean == pytest.approx(np.mean([0.054, 0.054])) and many.n == 2
    assert few.mean == pytest.approx(np.mean([0.11, 0.4 * 0.11 + 0.6 * 0.13]))
    assert isinstance(none, Gap) and "its runs hold no per-topic npmi@10" in table.note and table.tested


def test_top_k_curves_average_seeds_up_to_the_fewest_topics_of_any_seed():
    scores = {**SCORES, ("c", "few", 2): _topics([0.2], [1.0])}
    curves = dict((model, (ks, means)) for model, ks, means in
                  top_k_curves(scores, "npmi@10", corpus="c", models=["many", "few", "none"]))
    assert set(curves) == {"many", "few"}  # only models with per-topic scores
    ks, means = curves["many"]
    assert ks == (1, 2, 3, 4) and means[-1] == pytest.approx(np.mean([0.135, 0.135]))  # k = K: the plain mean
    assert means[0] == pytest.approx(0.0)  # the most prevalent topic alone
    assert curves["few"][0] == (1,)


def test_the_k_caution_points_to_what_exists():
    groups = same_k_groups(RUNS, models=MODELS, corpora=["c"])
    shown = k_advice(groups, "c", shown=True)
    assert "K: every score against the number of topics" in shown and "elda, nmf at K = 40" in shown
    assert "num_topics: {match: LABEL}" in shown
    hidden = k_advice([], "c", shown=False)
    assert "add the report section k_comparison" in hidden and "no two models here share a K" in hidden


def test_the_k_section_draws_every_score_against_k_and_weighs_topics_where_k_differ(tmp_path):
    from topicbench.tasks.report.k_section import K_TITLE, NO_SAME_K_TEXT, WEIGHTED_TEXT, k_section
    from topicbench.tasks.report.parts import Plot, ReportData
    from topicbench.tasks.report.plots import model_styles
    from topicbench.tasks.report.sections import DEFAULT_REPORT_SECTIONS, REPORT_SECTIONS, build_report
    from topicbench.tasks.report.tables import ReportTable

    runs = RUNS.assign(**{"topic_diversity@10": 0.8})
    config = {"metrics": ["npmi", "topic_diversity"], "models": [{"model": m} for m in MODELS], "seeds": [0, 1, 2]}
    scores = {("c", {"many": "elda", "few": "hdp"}[model], seed): frame for (_, model, seed), frame in SCORES.items()}
    data = ReportData(runs=runs, experiment="k", command="", config=config, topic_scores=scores)
    section = k_section(data)
    assert section.title == K_TITLE and REPORT_SECTIONS.get("k_comparison") is k_section
    assert "k_comparison" in DEFAULT_REPORT_SECTIONS
    plots = [block for block in section.blocks if isinstance(block, Plot)]
    tables = [block for block in section.blocks if isinstance(block, ReportTable)]
    assert [plot.file_name for plot in plots] == ["k_c.png", "top_k_c.png"]
    assert [table.title for table in tables] == ["Verdicts at the same K", "One number per model at unequal K: the "
                                                 "prevalence-weighted mean over all topics"]
    assert WEIGHTED_TEXT in section.blocks and NO_SAME_K_TEXT not in section.blocks
    styles = model_styles(data.models)
    for plot in plots:  # both figures draw: one panel per score, every model's points or lines
        figure = plot.draw(runs, styles)
        assert len(figure.axes) == (2 if plot.file_name == "k_c.png" else 1)
        figure.savefig(tmp_path / plot.file_name)
    against_k = plots[0].draw(runs, styles).axes[0]
    assert against_k.get_xscale() == "log"  # K from 7 to 90
    assert {text.get_text() for text in against_k.figure.legends[0].get_texts()} == set(MODELS) - {"broken"}
    # no two models at the same K: the section says how to get a verdict, and the summary's caution points there
    apart = runs[runs.model.isin(["elda[kappa=4]", "hdp", "lda"])]
    alone = ReportData(runs=apart, experiment="k", command="", config=config)
    assert NO_SAME_K_TEXT in k_section(alone).blocks
    summary = build_report(alone, ["summary"]).sections[0]
    caution = next(str(block) for block in summary.blocks if "Caution: the models differ in K" in str(block))
    assert "K: every score against the number of topics" in caution and "no two models here share a K" in caution
