"""Sections: built from the run table by registered builders, without drawing or writing anything;
plots are drawn and written afterwards, each model in one style across all of them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from topicbench.core.validation import InputError
from topicbench.tasks.report import plots as report_plots
from topicbench.tasks.report.parts import ReportData
from topicbench.tasks.report.sections import DEFAULT_REPORT_SECTIONS, REPORT_SECTIONS, build_report, register_section
from topicbench.tasks.report.tables import ReportTable


def _runs():
    rows = []
    for corpus in ("c1", "c2"):
        for i, model in enumerate(("elda", "gibbs", "bertopic")):
            for seed in (0, 1):
                row = {"status": "FINISHED", "corpus": corpus, "model": model, "seed": seed,
                       "umass@5": -1.0 - i, "npmi@5": 0.1 * i, "topic_diversity@5": 0.5, "fit_seconds": 1.0 + i,
                       "changed_settings": "", "training_loss_kind": "", "error": ""}
                if model != "bertopic":  # BERTopic's topics are too short for N = 10
                    row.update({"umass@10": -2.0 - i, "npmi@10": 0.05 * i, "topic_diversity@10": 0.4})
                if model == "gibbs":
                    row.update({"converged": 1.0, "training_loss_kind": "negative log-likelihood per word",
                                "training_loss_relative_change": 0.001, "training_curve": ([0, 10, 20], [3.0, 2.0, 1.9])})
                rows.append(row)
    return pd.DataFrame(rows)


CONFIG = {"corpora": [{"name": "c2"}, {"name": "c1"}], "seeds": [0, 1, 2],
          "models": [{"model": "gibbs_lda", "label": "gibbs"}, {"model": "elda"}, {"model": "bertopic"}]}


def test_building_the_report_draws_and_writes_nothing(monkeypatch):
    import matplotlib.figure

    def refuse(*args, **kwargs):
        raise AssertionError("a plot was drawn or written while building the report")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", refuse)
    monkeypatch.setattr(report_plots, "coherence_figure", refuse)
    report = build_report(ReportData(runs=_runs(), experiment="x", command="cmd", config=CONFIG))
    titles = [section.title for section in report.sections]
    assert titles[:3] == ["Summary: who wins where", "Coherence against N", "Topic diversity"]
    assert "Failed runs" not in titles and "Experiment Set 1: log posterior with the topics held fixed" not in titles
    assert [plot.file_name for plot in report.plots()][:2] == ["coherence_c2.png", "coherence_c1.png"]


def test_the_lead_names_the_pairs_that_are_not_finished():
    report = build_report(ReportData(runs=_runs(), experiment="x", command="cmd", config=CONFIG), ["coherence"])
    assert report.lead[0].startswith("12 finished runs (2 corpora, 3 models, seeds [0, 1]); 0 failed.")
    assert "12 of the config's 18 fits are finished" in report.lead[1]
    assert "gibbs@c2, elda@c2, bertopic@c2, gibbs@c1" in report.lead[1]
    queued = pd.concat([_runs(), pd.DataFrame([{"status": "RUNNING", "corpus": "c1", "model": "gibbs", "seed": 2}])])
    report = build_report(ReportData(runs=queued, experiment="x", command="cmd", config=CONFIG), ["coherence"])
    assert "; claimed by a benchmark still running (fitting or queued): gibbs@c1." in report.lead[1]


def test_interrupted_runs_are_told_apart_from_failed_ones():
    stopped = {"corpus": "c2", "model": "gibbs", "seed": 2, "error": "the benchmark stopped: SIGTERM", "status": "KILLED"}
    broken = {"corpus": "c1", "model": "elda", "seed": 2, "error": "ValueError: boom", "status": "FAILED"}
    runs = pd.concat([_runs(), pd.DataFrame([stopped, broken])], ignore_index=True)
    report = build_report(ReportData(runs=runs, experiment="x", command="cmd", config=CONFIG), ["failed_runs"])
    assert report.lead[0].startswith("12 finished runs (2 corpora, 3 models, seeds [0, 1]); 1 failed, "
                                      "1 interrupted (a rerun of the same command fits them again). Generated")
    (section,) = report.sections
    failed, interrupted = section.blocks
    assert section.title == "Failed and interrupted runs"
    assert failed.title.startswith("failed") and failed.cells.to_dict("records") == [
        {key: broken[key] for key in ("corpus", "model", "seed", "error")}]
    assert interrupted.title.startswith("interrupted") and interrupted.cells.model.tolist() == ["gibbs"]
    only_stopped = pd.concat([_runs(), pd.DataFrame([stopped])], ignore_index=True)
    report = build_report(ReportData(runs=only_stopped, experiment="x", command="cmd", config=CONFIG), ["failed_runs"])
    assert "; 0 failed, 1 interrupted" in report.lead[0] and report.sections[0].title == "Interrupted runs"


def test_sections_are_chosen_by_name_and_unknown_names_list_the_choices():
    data = ReportData(runs=_runs(), experiment="x", command="cmd", config=CONFIG)
    report = build_report(data, ["fit_time"])
    assert [section.title for section in report.sections] == ["Fit time and memory"]
    with pytest.raises(InputError, match="Unknown report section 'nope'. Available: .*coherence"):
        build_report(data, ["nope"])
    assert set(DEFAULT_REPORT_SECTIONS) <= set(REPORT_SECTIONS.names())


def test_tables_follow_the_configs_order_and_show_short_topics_at_their_n():
    data = ReportData(runs=_runs(), experiment="x", command="cmd", config=CONFIG)
    assert data.models == ["gibbs", "elda", "bertopic"] and data.corpora == ["c2", "c1"]
    coherence = build_report(data, ["coherence"]).sections[0]
    umass = next(block for block in coherence.blocks if isinstance(block, ReportTable) and block.title == "UMass@10")
    assert list(umass.cells.columns) == ["model", "c2", "c1"] and list(umass.cells.model) == ["gibbs", "elda", "bertopic"]
    assert umass.cells.set_index("model").loc["bertopic", "c1"].scored_at == 5
    # elda's -2 over gibbs' -3 is the best mean, but every seed gave the same value (deterministic): there is
    # no seed variance to test on, so nothing is bold, and the hover says why; bertopic's N=5 score takes no part
    assert umass.best == frozenset() and "not testable" in umass.tips[(0, "c1")]
    assert umass.tips[(1, "c1")].startswith("the best mean") and (2, "c1") not in umass.tips
    assert "Welch's t-test over seeds" in next(block for block in coherence.blocks if isinstance(block, str)
                                               and block.startswith("Bold: the best mean beats every other"))


def test_a_benchmark_can_register_its_own_section(monkeypatch):
    monkeypatch.setattr(REPORT_SECTIONS, "_entries", dict(REPORT_SECTIONS._entries))  # undone after the test

    @register_section("test_only_section")
    def only(data):
        from topicbench.tasks.report.parts import Section

        return Section("Mine", (f"{len(data.runs)} runs",))

    report = build_report(ReportData(runs=_runs(), experiment="x", command="cmd"), ["test_only_section"])
    assert report.sections[0].title == "Mine" and report.sections[0].blocks == ("12 runs",)


def test_plots_are_written_by_their_own_function_each_model_in_one_style(tmp_path):
    runs = _runs()
    data = ReportData(runs=runs, experiment="x", command="cmd", config=CONFIG)
    report = build_report(data, ["coherence", "training", "fit_time"])
    written = report_plots.write_plots(report.plots(), runs, tmp_path, data.models)
    assert set(written) == {"coherence_c1.png", "coherence_c2.png", "training_c1.png", "training_c2.png", "fit_time.png"}
    assert all(path.read_bytes().startswith(b"\x89PNG") for path in written.values())

    styles = report_plots.model_styles(data.models)
    assert len({(s["color"], s["marker"]) for s in styles.values()}) == 3
    coherence = report_plots.coherence_figure(runs, styles, corpus="c1", measures=(("umass", "UMass"),))
    lines = {line.get_label(): line for line in coherence.axes[0].get_lines()}
    for model in ("gibbs", "elda", "bertopic"):
        assert (lines[model].get_color(), lines[model].get_marker()) == (styles[model]["color"], styles[model]["marker"])
    training = report_plots.training_figure(runs, styles, corpus="c1")
    assert {line.get_color() for line in training.axes[0].get_lines()} == {styles["gibbs"]["color"]}
    # legends outside the axes: one figure legend, none on an axis, and it starts right of the axes
    for figure in (coherence, training):
        assert len(figure.legends) == 1 and all(axis.get_legend() is None for axis in figure.axes)
        assert figure.legends[0].get_bbox_to_anchor().x0 >= max(axis.get_position().x1 for axis in figure.axes) * figure.bbox.width - 1


def test_the_fit_time_plot_is_a_dot_plot_on_durations_and_an_outlier_does_not_squash_the_coherence_axis():
    runs = _runs()
    styles = report_plots.model_styles(["gibbs", "elda", "bertopic"])
    figure = report_plots.fit_time_figure(runs, styles, corpora=["c2", "c1"])
    axis = figure.axes[0]
    assert axis.get_xscale() == "log" and [t.get_text() for t in axis.get_yticklabels()] == ["gibbs", "elda", "bertopic"]
    assert [t.get_text() for t in axis.get_xticklabels()] == ["1 s", "2 s", "5 s"]  # fits of 1-3 s
    assert report_plots.duration_label(600.0) == "10 min" and report_plots.duration_label(0.01) == "10 ms"
    # fits of 40 s to 3 min (20ng_politics's Gibbs and ProdLDA): ticks a reader says, not "1.67 min"
    _, _, ticks = report_plots.time_ticks(pd.Series([39.7, 43.1, 173.0]))
    assert [report_plots.duration_label(t) for t in ticks] == ["30 s", "1 min", "2 min", "5 min"]
    # thirteen models: thirteen colours and thirteen markers
    many = report_plots.model_styles([f"m{i}" for i in range(13)])
    assert len({s["color"] for s in many.values()}) == 13 and len({s["marker"] for s in many.values()}) == 13
    # one model far below the others: the axis fits the others, the outlier is named at the edge
    rows = [{**row, "umass@5": -14.0 if row["model"] == "m0" else -1.0 - 0.1 * i, "umass@10": -14.5 if row["model"] == "m0" else -1.2 - 0.1 * i}
            for i, row in enumerate({"status": "FINISHED", "corpus": "c", "model": f"m{k}", "seed": 0} for k in range(5))]
    coherence = report_plots.coherence_figure(pd.DataFrame(rows), many, corpus="c", measures=(("umass", "UMass"),))
    low, high = coherence.axes[0].get_ylim()
    assert low > -3 and high < 0 and any("m0: -14.5 to -14" in t.get_text() for t in coherence.axes[0].texts)
    # one model beyond the others' quartiles but next to them (20ng_politics's embedding coherence:
    # FASTopic 0.231-0.241 by ProdLDA's 0.237-0.254) stays on the axis: drawing it costs no room
    near = {"m0": np.array([0.241, 0.231]), "m1": np.array([0.254, 0.237]),
            **{f"m{k}": np.array([0.286 + 0.001 * k, 0.236 + 0.001 * k]) for k in range(2, 13)}}
    assert "m0" in report_plots.outlier_models({m: c.mean() for m, c in near.items()})
    assert report_plots.clipped_axis(near) is None
    far = report_plots.clipped_axis({**near, "m0": np.array([0.05, 0.04])})
    assert list(far.below) == ["m0"] and not far.above and far.limits[0] > 0.2
    assert coherence.axes[0].get_ylabel() == "UMass (mean over seeds)"
    training = report_plots.training_figure(runs, styles, corpus="c1")
    assert training.axes[0].get_ylabel().replace("\n", " ") == "negative log-likelihood per word"


def _every_metrics_keys() -> dict:
    """Metric -> the score keys its runs log (topic-level metrics at N = 10)."""
    from topicbench.core.metrics.registry import METRICS

    keys = {}
    for name in METRICS.names():
        spec = METRICS.get(name)
        keys[name] = list(spec.outputs) or ([f"{name}@10"] if {"top_words", "rbo_words"} & set(spec.needs) else [name])
    return keys


def test_every_metric_a_config_asks_for_appears_in_the_report_with_its_direction():
    import json

    from topicbench.tasks.report.render import render_markdown
    from topicbench.tasks.report.sections import summary_keys

    keys = _every_metrics_keys()
    rows = [{"status": "FINISHED", "corpus": "c1", "model": model, "seed": seed, "num_topics_used": 10,
             "skipped_metrics": json.dumps({"perplexity": "the corpus has no test documents"}) if model == "b" else "",
             **{key: 0.1 * (i + 1) + 0.01 * seed for key in sum(keys.values(), []) if not (model == "b" and key == "perplexity")}}
            for i, model in enumerate(("a", "b")) for seed in (0, 1)]
    config = {"corpora": [{"name": "c1"}], "seeds": [0, 1], "models": [{"model": "a"}, {"model": "b"}], "metrics": list(keys)}
    data = ReportData(runs=pd.DataFrame(rows), experiment="x", command="cmd", config=config)
    text = render_markdown(build_report(data), {})
    in_summary = dict(summary_keys(data))
    for metric, metric_keys in keys.items():
        for key in metric_keys:
            if key.endswith("_answered"):  # bookkeeping: in the LLM's own section
                assert f"**share of topics" in text, key
            elif key in in_summary:
                assert f"{in_summary[key]} · c1" in text, key
            else:
                higher = "lower" if key == "perplexity" else "higher"
                assert f"**{key} ({higher} is better)**" in text, key
    # a model without a value says why, under the table
    perplexity = text[text.index("**perplexity (lower is better)**"):]
    assert "| b | –¹ |" in perplexity and "–¹ perplexity does not apply to b: the corpus has no test documents." in perplexity


def test_the_summary_cautions_where_the_models_k_differ_more_than_twice():
    from topicbench.tasks.report.render import render_html, render_markdown

    runs = _runs()
    runs["num_topics_used"] = [81 if model == "elda" else 10 for model in runs.model]
    report = build_report(ReportData(runs=runs, experiment="x", command="cmd", config=CONFIG), ["summary"])
    text = render_markdown(report, {})
    assert "**Caution: the models differ in K on c2** (topics used: elda 81, gibbs 10, bertopic 10)" in text
    assert "| model | K · c2 | seeds · c2 | K · c1 | seeds · c1 |" in text
    assert "<strong>Caution: the models differ in K on c2</strong>" in render_html(report, {})
    runs["num_topics_used"] = 10
    report = build_report(ReportData(runs=runs, experiment="x", command="cmd", config=CONFIG), ["summary"])
    assert "Caution" not in render_markdown(report, {})


def test_stability_near_chance_is_a_test_and_a_deterministic_model_is_not_applicable():
    """HDP at 0.301 against a chance level of 0.230 is above chance when its p says so, ProdLDA at
    0.97 against 0.959 near chance when its p does not: the verdict is the permutation test's, not
    a distance from the chance level; a model with one fit gets no similarity at all."""
    from topicbench.tasks.report.stability import stability_tables
    from topicbench.tasks.results.stability import StabilityFindings

    def row(model, similarity, chance, p, deterministic=0.0):
        return {"corpus": "c1", "model": model, "seeds": 3, "pairs": 3, "deterministic": deterministic,
                "permutations": 19.0, "sampled_topics": np.nan,
                **{f"{m}_{name}": value for m in ("jensen_shannon", "top_words") for name, value in (
                    ("mean", similarity), ("sd", 0.01), ("share_mean", 1.0), ("share_sd", 0.0), ("chance", chance),
                    ("chance_sd", 0.004), ("chance_error", 0.0), ("chance_p", p))}}

    table = pd.DataFrame([row("hdp", 0.301, 0.230, 0.05), row("prodlda", 0.970, 0.959, 0.4),
                          {**row("elda", np.nan, np.nan, np.nan, 1.0)}])
    (flagged,) = stability_tables(StabilityFindings(table), models=["hdp", "prodlda", "elda"])
    verdicts = list(flagged.cells["vs chance"])
    assert verdicts[:2] == ["JS: above chance (p = 0.05); RBO: above chance (p = 0.05)",
                            "JS: near chance (p = 0.4); RBO: near chance (p = 0.4)"]
    assert verdicts[2] == "not applicable: deterministic, one fit"
    assert flagged.cells["matched similarity (1 − JS distance)"].iloc[2] is None  # never 1.0
    assert list(flagged.cells["chance similarity"])[:2] == ["0.230 ± 0.004", "0.959 ± 0.004"]
    assert "one-sided permutation test" in flagged.note and "p ≤ α = 0.05" in flagged.note


def test_the_llms_scores_on_few_topics_or_one_seed_carry_a_caution_and_its_shares_answered_are_never_bold():
    from topicbench.tasks.report.render import render_markdown

    runs = _runs()
    runs["num_topics_used"] = 5
    runs["llm_rating"] = [2.0 if model == "elda" else 1.93 for model in runs.model]
    runs["llm_rating_answered"] = [0.0 if model == "elda" else 1.0 for model in runs.model]
    config = {**CONFIG, "llm": {"model": "judge", "max_topics": 50}}
    report = build_report(ReportData(runs=runs, experiment="x", command="cmd", config=config), ["llm_judged"])
    text = render_markdown(report, {})
    assert "**Small sample:** the fewest topics judged for a model is 5, over 3 seeds" in text
    answered = text[text.index("**share of topics rated**"):]
    assert "**" not in answered.split("\n\n")[1]  # its cells: none bold
    runs["num_topics_used"] = 20
    report = build_report(ReportData(runs=runs, experiment="x", command="cmd", config=config), ["llm_judged"])
    text = render_markdown(report, {})
    assert "Small sample" not in text and "Sample: the fewest topics judged for a model is 20, over 3 seeds." in text
