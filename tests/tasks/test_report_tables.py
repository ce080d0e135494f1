"""The report's numbers: pivots, the best value from each metric's direction, short topics shown at
the N they were scored at, Set 1's paired test, the ranking agreement, and the run status."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from topicbench.core.metrics.registry import metric_for_key
from topicbench.tasks.report.statistics import ranking_agreement, set1_table
from topicbench.tasks.report.summary import gap_reason, k_differences, summary_table
from topicbench.tasks.report.tables import (
    Estimate, Gap, Share, TopicWords, estimate, bold_best, metric_pivot, run_status, training_table, convergence_verdict,
)
from topicbench.tasks.report.topics import model_topics


def _runs(rows):
    return pd.DataFrame([{"status": "FINISHED", **row} for row in rows])


def _scores(metric_values: dict, corpus="c1", seeds=(0, 1)) -> list:
    """One row per (model, seed) with the given mean score, +-0.01 across seeds."""
    return [{"corpus": corpus, "model": model, "seed": seed, **{key: value + 0.01 * (seed - 0.5) for key, value in scores.items()}}
            for model, scores in metric_values.items() for seed in seeds]


def test_pivot_puts_models_in_rows_and_corpora_in_columns_with_mean_and_sd():
    runs = _runs(_scores({"a": {"npmi@10": 0.1}, "b": {"npmi@10": 0.3}}, "c1")
                 + _scores({"a": {"npmi@10": 0.2}, "b": {"npmi@10": 0.05}}, "c2"))
    table = metric_pivot(runs, "npmi@10", models=["b", "a"], corpora=["c2", "c1"], expected=2)
    assert list(table.cells.columns) == ["model", "c2", "c1"] and list(table.cells.model) == ["b", "a"]
    cell = table.cells.set_index("model").loc["a", "c1"]
    assert isinstance(cell, Estimate) and cell.n == 2
    assert cell.mean == pytest.approx(0.1) and cell.sd == pytest.approx(np.std([0.095, 0.105], ddof=1))


@pytest.mark.parametrize("key", ["npmi@10", "perplexity"])
def test_the_best_per_corpus_follows_the_metrics_direction(key):
    higher = metric_for_key(key).higher_is_better
    base = {"npmi@10": 0.0, "perplexity": 100.0}[key]  # values inside the metric's valid range
    runs = _runs(_scores({"low": {key: base + 0.1}, "mid": {key: base + 0.2}, "high": {key: base + 0.3}}))
    table = metric_pivot(runs, key, models=["low", "mid", "high"], corpora=["c1"])
    assert table.best == {(2 if higher else 0, "c1")}
    assert ("higher" if higher else "lower") in table.note


def test_a_column_that_is_not_a_metric_is_not_marked():
    runs = _runs(_scores({"a": {"fit_seconds": 1.0}, "b": {"fit_seconds": 9.0}}))
    table = metric_pivot(runs, "fit_seconds", models=["a", "b"], corpora=["c1"])
    assert table.best == frozenset() and table.note == ""


def test_short_topics_show_the_score_at_the_largest_n_they_allow_and_are_never_best():
    runs = _runs(
        _scores({"lda": {"umass@5": -2.0, "umass@10": -3.0}})
        + _scores({"bertopic": {"umass@5": -0.5}})  # topics of 6 words: no score at 10
        + _scores({"ctm": {"umass@5": -4.0, "umass@10": -6.0}})
    )
    table = metric_pivot(runs, "umass@10", models=["lda", "bertopic", "ctm"], corpora=["c1"])
    cell = table.cells.set_index("model").loc["bertopic", "c1"]
    assert cell.scored_at == 5 and cell.mean == pytest.approx(-0.5)
    assert table.best == {(0, "c1")}  # -0.5 at N=5 is not comparable with -3.0 at N=10
    # the one rule for the best, and what becomes of a value at a smaller N, said under the table
    assert table.note.startswith("Bold: the best per column, the highest mean (higher is better) among the models "
                                 "scored at N = 10, where the test under this section finds it better than every other")
    assert table.tested and table.tips[(0, "c1")].startswith("the best mean; largest Holm-adjusted Welch p")
    assert "shown in grey and not ranked" in table.note
    assert metric_pivot(runs, "umass@5", models=["lda", "bertopic", "ctm"], corpora=["c1"]).best == {(1, "c1")}


def test_set1_table_tests_elda_against_the_lda_across_seeds_and_marks_the_best_posterior():
    own = [-2.0e6, -2.1e6, -2.2e6]
    elda = [-1.8e6, -1.85e6, -2.05e6]
    runs = _runs([{"corpus": "c", "model": "gibbs", "seed": s, "log_likelihood_own": o, "log_likelihood_elda": e,
                   "log_likelihood_randk": -5e6} for s, (o, e) in enumerate(zip(own, elda))])
    table = set1_table(runs)
    row = table.cells.iloc[0]
    from scipy.stats import ttest_rel

    assert row["paired p (E-LDA vs LDA)"] == pytest.approx(ttest_rel(elda, own).pvalue)
    assert row["E-LDA > LDA in"] == Share(3, 3)
    assert row["E-LDA ×1e6"].mean == pytest.approx(np.mean(elda) / 1e6)
    assert table.best == {(0, "E-LDA ×1e6")}


def test_ranking_agreement_gives_tau_the_number_of_flips_and_the_largest_first():
    # UMass orders a > b > c > d; NPMI reverses d to the top: three pairs flip, d vs a the largest
    runs = _runs(_scores({
        "a": {"umass@10": -1.0, "npmi@10": 0.3}, "b": {"umass@10": -2.0, "npmi@10": 0.2},
        "c": {"umass@10": -3.0, "npmi@10": 0.1}, "d": {"umass@10": -4.0, "npmi@10": 0.4},
    }))
    row = ranking_agreement(runs, 10).cells.set_index("against").loc["NPMI"]
    from scipy.stats import kendalltau

    assert row["Kendall tau"] == pytest.approx(kendalltau([4, 3, 2, 1], [3, 2, 1, 4]).statistic)
    assert row["pairs that flip"] == Share(3, 6)
    largest = row["largest flips"][0]
    assert {largest.first, largest.second} == {"a", "d"} and largest.size == 3 + 1  # ranks 1,4 -> 2,1
    assert len(row["largest flips"]) == 3
    assert row["best under UMass"] == "a" and row["best under the other"] == "d"


def test_run_status_names_the_pairs_not_finished_and_those_running():
    runs = _runs([{"corpus": "c", "model": "a", "seed": s} for s in (0, 1)] + [{"corpus": "c", "model": "b", "seed": 0}])
    runs = pd.concat([runs, pd.DataFrame([{"status": "RUNNING", "corpus": "c", "model": "b", "seed": 1},
                                          {"status": "FAILED", "corpus": "d", "model": "a", "seed": 0},
                                          {"status": "KILLED", "corpus": "d", "model": "a", "seed": 1}])])
    status = run_status(runs, corpora=["c", "d"], models=["a", "b"], seeds=[0, 1])
    assert status.finished == 3 and status.failed == 1 and status.interrupted == 1 and status.expected == 8
    assert status.pending == ("b@c", "a@d", "b@d") and status.running == ("b@c",)
    assert run_status(runs).pending is None


def test_training_table_follows_the_given_order():
    runs = _runs([{"corpus": corpus, "model": model, "seed": 0, "converged": 1.0, "training_loss_kind": "loss",
                   "training_loss_relative_change": 0.001, "training_curve": ([0, 5], [2.0, 1.0])}
                  for corpus in ("x", "y") for model in ("m", "n")])
    table = training_table(runs, corpora=["y", "x"], models=["n", "m"])
    assert list(zip(table.cells.corpus, table.cells.model)) == [("y", "n"), ("y", "m"), ("x", "n"), ("x", "m")]
    assert table.cells["verdict"].iloc[0] == "converged 1/1" and table.cells["epochs / iterations"].iloc[0] == (5,)
    assert table.cells["rule"].iloc[0].startswith("change under 1% over the last 10%")  # tracked before the tail rule


def test_training_table_says_converged_still_improving_or_stopped_at_the_cap_with_the_rule():
    curve = {"training_loss_kind": "negative log-likelihood per word", "training_curve": ([0, 10, 20], [3.0, 2.0, 1.9]),
             "convergence_threshold": 0.001}
    runs = _runs([{"corpus": "c", "model": "hdp", "seed": 0, "converged": 0.0, "training_loss_tail_fall": 0.004, **curve},
                  {"corpus": "c", "model": "hdp", "seed": 1, "converged": 0.0, "training_loss_tail_fall": 0.005, **curve},
                  {"corpus": "c", "model": "hdp", "seed": 2, "converged": 1.0, "training_loss_tail_fall": 0.0002, **curve},
                  *({"corpus": "c", "model": "nmf", "seed": seed, "converged": float(seed > 0),
                     "training_loss_kind": "no curve: scikit-learn's stopping rule (tol reached before max_iter)"}
                    for seed in (0, 1))])
    table = training_table(runs, corpora=["c"], models=["hdp", "nmf"])
    hdp, nmf = table.cells.to_dict("records")
    assert hdp["verdict"] == "still improving 2/3, converged 1/3"
    assert hdp["rule"] == "tail rule, fall over 0.1% (gibbs, variational)"
    assert hdp["fall of the loss, last 20%"].n == 3
    assert nmf["verdict"] == "stopped at its iteration cap 1/2, converged 1/2"
    assert nmf["rule"] == "scikit-learn's stopping rule (tol reached before max_iter)"
    # a curve with a threshold but no finite fall was too short to judge
    assert convergence_verdict({"converged": 0.0, "convergence_threshold": 0.005})[0] == "too short to tell"


def _summary_runs():
    return _runs(
        _scores({"lda": {"umass@5": -2.0, "umass@10": -3.0, "npmi@10": 0.05, "num_topics_used": 10},
                 "elda": {"umass@10": -1.0, "npmi@10": 0.02, "num_topics_used": 81},
                 "ctm": {"umass@10": -5.0, "npmi@10": 0.09, "num_topics_used": 10}})
        + _scores({"bertopic": {"umass@5": -0.5, "npmi@5": 0.3, "num_topics_used": 30}})  # short topics: no score at 10
        + _scores({"lda": {"umass@10": -2.0, "npmi@10": 0.01, "num_topics_used": 10},
                   "elda": {"umass@10": -2.5, "npmi@10": 0.04, "num_topics_used": 80.5}}, "c2", seeds=(0,))
    )


def test_the_summary_ranks_every_metric_and_corpus_in_one_table_by_one_rule():
    table = summary_table(_summary_runs(), [("umass@10", "UMass@10"), ("npmi@10", "NPMI@10")],
                          models=["elda", "lda", "ctm", "bertopic"], corpora=["c1", "c2"], expected=2)
    assert list(table.cells.columns) == ["model", "K · c1", "seeds · c1", "K · c2", "seeds · c2", "UMass@10 · c1",
                                         "UMass@10 · c2", "NPMI@10 · c1", "NPMI@10 · c2"]
    assert list(table.cells.model) == ["elda", "lda", "ctm", "bertopic"]
    assert table.column_groups["NPMI@10 · c2"] == ("NPMI@10", "c2") and not table.spread
    # K (mean over seeds) and the seeds behind each model's cells, neither ranked nor bold
    assert list(table.cells["K · c1"]) == [81, 10, 10, 30] and list(table.cells["K · c2"])[:2] == [80.5, 10]
    assert list(table.cells["seeds · c1"]) == [2, 2, 2, 2] and list(table.cells["seeds · c2"]) == [1, 1, None, None]
    assert not any(column.startswith(("K ", "seeds")) for _, column in [*table.ranks, *table.best])
    # ranks within each column, higher is better; bertopic's N=5 values take no part
    assert [table.ranks.get((row, "UMass@10 · c1")) for row in range(4)] == [1, 2, 3, None]
    assert [table.ranks.get((row, "NPMI@10 · c1")) for row in range(4)] == [3, 2, 1, None]
    # bold only out of the seeds' noise: c2 rests on one seed, so nothing there is bold
    assert table.best == {(0, "UMass@10 · c1"), (2, "NPMI@10 · c1")}
    assert table.cells["UMass@10 · c1"][3].scored_at == 5 and table.cells["UMass@10 · c2"][0].n == 1  # one seed of two
    assert "the test under this section" in table.note and "shown in grey and not ranked" in table.note
    assert table.tested and "Holm-adjusted" in table.tips[(0, "UMass@10 · c1")]  # the p, in the hover
    # a model without a value says why, in a footnote under the table
    gap = table.cells["UMass@10 · c2"][2]
    assert isinstance(gap, Gap) and gap.reason == "not fitted" and "–¹ not fitted." in table.note


def test_the_bold_best_must_beat_every_other_by_welch_and_holm():
    from scipy.stats import ttest_ind

    best, runner_up, far = [0.30, 0.31, 0.32], [0.20, 0.26, 0.32], [0.10, 0.11, 0.12]
    rows, tips = bold_best([estimate(best), estimate(runner_up), estimate(far)], True)
    raw = [ttest_ind(best, other, equal_var=False).pvalue for other in (runner_up, far)]
    assert raw[0] > 0.05 and rows == []  # the runner-up is not beaten: no bold, though the far one is
    # Holm: the smaller p times 2, the larger times 1 (and never below the smaller's adjusted)
    assert f"{max(raw[0], 2 * raw[1]):.2g}" in tips[0] and "not bold" in tips[0]
    assert tips[2] == f"Welch p against the best mean, Holm-adjusted: {2 * raw[1]:.2g}"  # the smaller p, times 2
    rows, tips = bold_best([estimate(best), estimate([0.20, 0.21, 0.22]), estimate(far)], True)
    assert rows == [0] and "bold" in tips[0]
    # the old rule's example (results/congress-models): 0.0930 ± 0.0051 over 0.0853 ± 0.0012 was beyond 2 se;
    # Welch's p is about 0.11, so it is not bold
    nmf, gibbs = [0.0930 - 0.0051, 0.0930, 0.0930 + 0.0051], [0.0853 - 0.0012, 0.0853, 0.0853 + 0.0012]
    assert ttest_ind(nmf, gibbs, equal_var=False).pvalue > 0.05
    assert bold_best([estimate(nmf), estimate(gibbs)], True)[0] == []
    # one seed, a tie and estimates without their seeds' values take no part; lower is better reads the other way
    assert bold_best([estimate([0.3]), estimate([0.1])], True)[0] == []
    assert bold_best([estimate([0.3, 0.31, 0.32]), estimate([0.3, 0.31, 0.32])], True)[0] == []
    assert bold_best([Estimate(0.3, 0.01, 3), Estimate(0.1, 0.01, 3)], True) == ([], {})
    assert bold_best([estimate([1.0, 1.1, 1.2]), estimate([2.0, 2.1, 2.2])], False)[0] == [0]


def test_a_deterministic_model_is_never_bold_on_zero_variance():
    exact, other_exact = estimate([0.5, 0.5, 0.5]), estimate([0.4, 0.4, 0.4])
    assert exact.interval.deterministic and not exact.interval.has_interval
    # two deterministic models: nothing to test on, whatever the gap between them
    rows, tips = bold_best([exact, other_exact], True)
    assert rows == [] and "not testable" in tips[1]
    # a deterministic best and a seeded model: the test rests on the seeded model's seed variance
    assert bold_best([exact, estimate([0.40, 0.49, 0.58])], True)[0] == []  # within its seeds' noise
    assert bold_best([exact, estimate([0.30, 0.31, 0.32])], True)[0] == [0]  # beyond it
    # a seeded best is tested against a deterministic runner-up too (no bold beside a close exact value)
    assert bold_best([estimate([0.49, 0.51, 0.53]), exact], True)[0] == []
    # and a deterministic model beside the one it cannot be told from leaves the column without bold
    assert bold_best([exact, other_exact, estimate([0.1, 0.11, 0.12])], True)[0] == []
    # bookkeeping (the share of topics an LLM answered for) has no best: shown, never bold
    runs = _runs(_scores({"a": {"llm_rating_answered": 0.0}, "b": {"llm_rating_answered": 1.0}}))
    assert metric_pivot(runs, "llm_rating_answered", models=["a", "b"], corpora=["c1"]).best == frozenset()


def test_models_far_apart_in_k_are_named_for_a_caution():
    found = k_differences(_summary_runs(), models=["elda", "lda", "ctm", "bertopic"], corpora=["c1", "c2"])
    assert found == {"c1": {"elda": 81, "lda": 10, "ctm": 10, "bertopic": 30}, "c2": {"elda": 80.5, "lda": 10}}
    assert k_differences(_runs(_scores({"a": {"num_topics_used": 10}, "b": {"num_topics_used": 20}})),
                         models=["a", "b"], corpora=["c1"]) == {}  # 2x: within the factor


def test_every_gap_says_why():
    import json

    runs = pd.concat([
        _runs(_scores({"lda": {"npmi@10": 0.1}, "prodlda": {"umass@10": -1.0}})),
        pd.DataFrame([{"corpus": "c1", "model": "broken", "seed": 0, "status": "FAILED",
                       "error": "ValueError: boom\nTraceback ..."},
                      {"corpus": "c1", "model": "later", "seed": 0, "status": "RUNNING", "error": ""}]),
    ], ignore_index=True)
    runs["skipped_metrics"] = [json.dumps({"npmi": "topic 3: the word 'zzz' does not occur in the reference corpus 'c1'"})
                               if model == "prodlda" else "" for model in runs.model]
    assert gap_reason(runs, "c1", "broken", "npmi@10") == "its runs failed: ValueError: boom"
    assert gap_reason(runs, "c1", "later", "npmi@10") == "its runs are still being fitted"
    assert gap_reason(runs, "c1", "prodlda", "npmi@10") == (
        "npmi does not apply to prodlda: topic 3: the word 'zzz' does not occur in the reference corpus 'c1'")
    assert gap_reason(runs, "c1", "prodlda", "npmi@10", asked=["umass"]) == "npmi was not asked of prodlda (its metrics: umass)"
    assert gap_reason(runs, "c1", "lda", "nmi").startswith("lda's runs logged no nmi")
    runs.loc[runs.model == "lda", "skipped_metrics"] = json.dumps({"npmi@5": "npmi@5 came out nan (not a number: ...)"})
    assert gap_reason(runs, "c1", "lda", "npmi@5") == "npmi@5 came out nan (not a number: ...)"
    table = summary_table(runs, [("npmi@10", "NPMI@10")], models=["lda", "prodlda", "broken", "later"], corpora=["c1"])
    marks = [value.mark for value in table.cells["NPMI@10 · c1"][1:]]
    assert marks == [1, 2, 3] and table.note.count("–¹") == 1 and "–³ its runs are still being fitted." in table.note


def test_every_models_topics_side_by_side_most_prevalent_first():
    import json

    def topics(shares):
        return json.dumps([{"topic": k, "label": None, "words": " ".join(f"w{k}{i}" for i in range(10)),
                            **({"prevalence": share} if share is not None else {})} for k, share in enumerate(shares)])

    runs = _runs([
        {"corpus": "c1", "model": "lda", "seed": 1, "topics_json": topics([0.9, 0.1])},
        {"corpus": "c1", "model": "lda", "seed": 0, "topics_json": topics([0.1, 0.2, 0.7])},
        {"corpus": "c1", "model": "nmf", "seed": 0, "topics_json": topics([None] * 7)},
        {"corpus": "c2", "model": "lda", "seed": 0, "topics_json": None},
    ])
    tables = model_topics(runs, corpora=["c2", "c1"], models=["nmf", "lda"], topics=5, words=8)
    assert [t.title for t in tables] == ["c1"]
    cells = tables[0].cells.set_index("model")
    assert list(cells.columns) == [f"topic {k}" for k in range(1, 6)] and list(cells.index) == ["nmf", "lda"]
    assert cells.loc["lda", "topic 1"] == TopicWords(tuple(f"w2{i}" for i in range(8)), 0.7)  # seed 0, most prevalent first
    assert cells.loc["nmf", "topic 2"] == TopicWords(tuple(f"w1{i}" for i in range(8)), None)  # its own order
    assert pd.isna(cells.loc["lda", "topic 4"])  # three topics only


def test_each_shown_topic_carries_its_own_scores_where_its_run_logged_them():
    import json

    records = [{"topic": 0, "label": None, "words": "a b c", "prevalence": 0.2, "scores": {"npmi@10": 0.1, "umass@10": -2.0}},
               {"topic": 1, "label": None, "words": "d e f", "prevalence": 0.8, "scores": {"npmi@10": -0.05, "llm_rating": 2.5}},
               {"topic": 2, "label": None, "words": "g h i", "prevalence": 0.0}]
    runs = _runs([{"corpus": "c", "model": "lda", "seed": 0, "topics_json": json.dumps(records)}])
    shown = (("npmi@10", "NPMI"), ("llm_rating", "LLM rating"))
    cells = model_topics(runs, corpora=["c"], models=["lda"], topics=3, words=2, scored_by=shown)[0].cells.iloc[0]
    assert cells["topic 1"] == TopicWords(("d", "e"), 0.8, (("NPMI", -0.05), ("LLM rating", 2.5)))
    assert cells["topic 2"] == TopicWords(("a", "b"), 0.2, (("NPMI", 0.1),))  # only the keys asked for
    assert cells["topic 3"] == TopicWords(("g", "h"), 0.0, ())  # none logged: none shown


def _topic_records(words, shares, **facts):
    """topics.json records as collect_runs leaves them: words, prevalence, and per-topic facts
    (``facts[name][k]``: topic k's value of that fact, where given)."""
    import json

    return json.dumps([{"topic": k, "label": None, "words": text, "prevalence": share,
                        **{name: values[k] for name, values in facts.items() if values[k] is not None}}
                       for k, (text, share) in enumerate(zip(words, shares))])


def test_topics_shown_are_counted_against_every_topic_of_the_model():
    from topicbench.tasks.report.topics import elda_topics

    many = [f"w{k} x{k}" for k in range(81)]
    runs = _runs([{"corpus": "c", "model": "elda", "model_class": "elda", "seed": 0,
                   "topics_json": _topic_records(many, [1 / 81] * 81)},
                  {"corpus": "c", "model": "lda", "model_class": "gensim_lda", "seed": 0,
                   "topics_json": _topic_records(many[:3], [0.5, 0.3, 0.2])}])
    table = model_topics(runs, corpora=["c"], models=["elda", "lda"], topics=5, words=2)[0]
    assert table.note == "Topics shown: elda 5 of 81, lda all 3."
    assert elda_topics(runs)[("c", "elda")].title == "elda on c: 15 of 81 topics"


def test_each_shown_topic_comes_with_its_example_documents():
    from topicbench.tasks.report.topics import topic_examples

    examples = [[{"document": 2, "weight": 0.8, "excerpt": "game team"}],
                [{"document": 4, "weight": 0.9, "excerpt": "tax vote bill"}, {"document": 0, "weight": 0.7, "excerpt": "tax cut"}],
                None]
    runs = _runs([{"corpus": "c", "model": "lda", "seed": 0, "topics_json": _topic_records(
        ["game team win", "tax vote bill", "song band"], [0.3, 0.6, 0.1], documents=[2, 5, 0], examples=examples)},
        {"corpus": "c", "model": "old", "seed": 0, "topics_json": _topic_records(["a b"], [1.0])}])  # logged none
    tables = topic_examples(runs, corpora=["c"], models=["lda", "old"], topics=2, words=2)
    assert [table.title for table in tables] == ["lda on c: 2 of 3 topics, with example documents"]
    cells = tables[0].cells
    assert list(cells.columns) == ["topic", "main topic of", "example documents"]
    assert cells.iloc[0].tolist() == [TopicWords(("tax", "vote"), 0.6), 5, ("#4: tax vote bill", "#0: tax cut")]
    assert cells.iloc[1].tolist() == [TopicWords(("game", "team"), 0.3), 2, ("#2: game team",)]


def test_topics_by_label_count_each_topics_documents_and_sum_the_topics_not_shown(monkeypatch):
    from topicbench.tasks.report import topics as report_topics
    from topicbench.tasks.report.topics import topics_by_label

    monkeypatch.setattr(report_topics, "LABEL_COLUMNS", 2)
    by_label = [{"sport": 7, "music": 1}, {"politics": 5, "topic": 2}, {"music": 3}, {"sport": 1, "music": 4}]
    runs = _runs([{"corpus": "c", "model": "lda", "seed": 0, "topics_json": _topic_records(
        ["game team", "tax vote", "song band", "tour album"], [0.4, 0.3, 0.2, 0.1], by_label=by_label)},
        {"corpus": "c", "model": "unlabelled", "seed": 0, "topics_json": _topic_records(["a b"], [1.0])}])
    tables = topics_by_label(runs, corpora=["c"], models=["lda", "unlabelled"], topics=2, words=1)
    assert len(tables) == 1 and "2 of 4 topics in rows, 2 of 4 labels in columns" in tables[0].title
    # labels by their documents: music 8, sport 8 (ties by name), then politics 5 and "topic" 2 summed
    assert tables[0].cells.to_dict("records") == [
        {"topic": "game", "music": 1, "sport": 7, "other labels": 0},
        {"topic": "tax", "music": 0, "sport": 0, "other labels": 7},
        {"topic": "the other 2 topics", "music": 7, "sport": 1, "other labels": 0},
    ]


def test_similar_topics_are_matched_across_models_by_their_top_words():
    from topicbench.tasks.report.topics import matched_topics

    runs = _runs([
        {"corpus": "c", "model": "elda", "seed": 0, "topics_json": _topic_records(
            ["tax vote bill", "game team win", "song band tour"], [0.5, 0.3, 0.2])},
        {"corpus": "c", "model": "lda", "seed": 0, "topics_json": _topic_records(
            ["rain snow wind", "team game coach", "vote tax law"], [0.6, 0.3, 0.1])},
        {"corpus": "d", "model": "lda", "seed": 0, "topics_json": _topic_records(["a b"], [1.0])},  # alone: no table
    ])
    tables = matched_topics(runs, corpora=["c", "d"], models=["elda", "lda"], topics=3, words=2)
    assert [table.title for table in tables] == ["c: elda's topics (all 3) and the closest topic of each other model"]
    cells = tables[0].cells
    assert list(cells.columns) == ["elda", "lda"] and cells.elda[0] == TopicWords(("tax", "vote"), 0.5)
    # p = 0.9, N = 3, w = (0.1, 0.045, 0.27): tax vote bill vs vote tax law: X = (0, 2, 2) -> 0.63
    match = cells.lda[0]
    assert match.words == ("vote", "tax") and match.share == 0.1 and match.scores[0][0] == "RBO"
    assert match.scores[0][1] == pytest.approx(0.63)
    assert cells.lda[1].words == ("team", "game") and cells.lda[2] is None  # no shared word: no match


def test_a_tau_over_few_models_carries_a_caution_and_every_tau_is_marked_descriptive():
    three = _runs(_scores({"a": {"umass@10": -1.0, "npmi@10": 0.3}, "b": {"umass@10": -2.0, "npmi@10": 0.2},
                           "c": {"umass@10": -3.0, "npmi@10": 0.1}}))
    assert ranking_agreement(three, 10).note.startswith(
        "Kendall's tau is descriptive, over 3 models' means: no interval. Caution: over 3 models, Kendall's tau takes "
        "only a few values")
    five = _runs(_scores({name: {"umass@10": -i, "npmi@10": 0.1 * i} for i, name in enumerate("abcde")}))
    assert ranking_agreement(five, 10).note == "Kendall's tau is descriptive, over 5 models' means: no interval."
    # a model without the base score is in no ranking, and the note says so, with why
    without = pd.concat([five, _runs(_scores({"f": {"npmi@10": 0.3}}))], ignore_index=True)
    assert ranking_agreement(without, 10).note == "Kendall's tau is descriptive, over 5 models' means: no interval. " \
        "Not ranked, without UMass@10: f on c1 (f's runs logged no umass@10: " \
        "not a number for its topics, or tracked before umass was asked for (rerun to score it))."


def test_a_failure_that_a_later_fit_of_the_same_seed_replaced_is_not_a_failure():
    runs = _runs(_scores({"a": {"npmi@10": 0.1}}))
    runs = pd.concat([runs, pd.DataFrame([  # seed 0 failed under an earlier run key; seed 5 failed for good
        {"status": "FAILED", "corpus": "c1", "model": "a", "seed": 0, "error": "boom"},
        {"status": "KILLED", "corpus": "c1", "model": "a", "seed": 1, "error": ""},
        {"status": "FAILED", "corpus": "c1", "model": "a", "seed": 5, "error": "boom"}])], ignore_index=True)
    status = run_status(runs)
    assert (status.finished, status.failed, status.interrupted) == (2, 1, 0)


def test_set1_bolds_a_row_only_where_a_paired_test_beats_both_others():
    from scipy.stats import ttest_rel

    from topicbench.tasks.report.statistics import paired_best

    own, close, randk = [-2.0, -2.1, -2.2], [-1.9, -2.15, -2.1], [-5.0, -5.1, -4.9]
    top, largest = paired_best([own, close, randk], True)
    raw = [ttest_rel(close, own).pvalue, ttest_rel(close, randk).pvalue]
    assert top == 1 and largest == pytest.approx(max(2 * min(raw), max(raw)))  # Holm over two tests
    assert largest > 0.05  # close's lead over own is within the seeds' paired noise
    runs = _runs([{"corpus": "c", "model": "gibbs", "seed": s, "log_likelihood_own": o * 1e6,
                   "log_likelihood_elda": e * 1e6, "log_likelihood_randk": r * 1e6}
                  for s, (o, e, r) in enumerate(zip(own, close, randk))])
    table = set1_table(runs)
    assert table.best == frozenset() and "not" not in table.tips[(0, "E-LDA ×1e6")]
    assert f"{largest:.2g}" in table.tips[(0, "E-LDA ×1e6")] and "paired t-test" in table.note
    # differences the same on every seed: no test on zero variance, so no bold
    assert paired_best([[1.0, 2.0, 3.0], [2.0, 3.0, 4.0]], True) == (1, None)
