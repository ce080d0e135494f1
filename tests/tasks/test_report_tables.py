"""The report's numbers: pivots, the best value from each metric's direction, short topics shown at
the N they were scored at, Set 1's paired test, the ranking agreement, and the run status."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from topicbench.core.metrics.registry import metric_for_key
from topicbench.tasks.report_statistics import ranking_agreement, set1_table
from topicbench.tasks.report_tables import (
    Estimate, Share, TopicWords, metric_pivot, model_topics, run_status, summary_table, training_table,
)


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
    runs = _runs(_scores({"low": {key: 1.0}, "mid": {key: 2.0}, "high": {key: 3.0}}))
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
    )
    table = metric_pivot(runs, "umass@10", models=["lda", "bertopic"], corpora=["c1"])
    cell = table.cells.set_index("model").loc["bertopic", "c1"]
    assert cell.scored_at == 5 and cell.mean == pytest.approx(-0.5)
    assert table.best == {(0, "c1")}  # -0.5 at N=5 is not comparable with -3.0 at N=10
    # the one rule for the best, and what becomes of a value at a smaller N, said under the table
    assert table.note.startswith("Bold: the best per column, the highest mean (higher is better) among the models scored at N = 10.")
    assert "shown in grey and not ranked" in table.note
    assert metric_pivot(runs, "umass@5", models=["lda", "bertopic"], corpora=["c1"]).best == {(1, "c1")}


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
    assert table.cells["converged"].iloc[0] == Share(1, 1) and table.cells["epochs / iterations"].iloc[0] == (5,)
    assert math.isnan(table.cells["relative change, last 10%"].iloc[0].sd)


def test_the_summary_ranks_every_metric_and_corpus_in_one_table_by_one_rule():
    runs = _runs(
        _scores({"lda": {"umass@5": -2.0, "umass@10": -3.0, "npmi@10": 0.05}, "elda": {"umass@10": -1.0, "npmi@10": 0.02},
                 "ctm": {"umass@10": -5.0, "npmi@10": 0.09}})
        + _scores({"bertopic": {"umass@5": -0.5, "npmi@5": 0.3}})  # short topics: no score at 10
        + _scores({"lda": {"umass@10": -2.0, "npmi@10": 0.01}, "elda": {"umass@10": -2.5, "npmi@10": 0.04}}, "c2", seeds=(0,))
    )
    table = summary_table(runs, [("umass@10", "UMass@10"), ("npmi@10", "NPMI@10")], models=["elda", "lda", "ctm", "bertopic"],
                          corpora=["c1", "c2"], expected=2)
    assert list(table.cells.columns) == ["model", "UMass@10 · c1", "UMass@10 · c2", "NPMI@10 · c1", "NPMI@10 · c2"]
    assert list(table.cells.model) == ["elda", "lda", "ctm", "bertopic"]
    assert table.column_groups["NPMI@10 · c2"] == ("NPMI@10", "c2") and not table.spread
    # ranks within each column, higher is better; bertopic's N=5 values take no part
    assert [table.ranks.get((row, "UMass@10 · c1")) for row in range(4)] == [1, 2, 3, None]
    assert [table.ranks.get((row, "NPMI@10 · c1")) for row in range(4)] == [3, 2, 1, None]
    assert table.best == {(0, "UMass@10 · c1"), (2, "NPMI@10 · c1"), (1, "UMass@10 · c2"), (0, "NPMI@10 · c2")}
    assert table.cells["UMass@10 · c1"][3].scored_at == 5 and table.cells["UMass@10 · c2"][0].n == 1  # one seed of two
    assert "the best mean among the models scored at N = 10" in table.note and "shown in grey and not ranked" in table.note


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
