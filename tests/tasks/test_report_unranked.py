"""A value outside its metric's range, or worse than the uniform model over the vocabulary, is
kept and shown with its reason but never ranked: not in the report's bold cells or ranks, not in
the leaderboard's ranks (issue 47: NMF's and HDP's held-out perplexities of 10^10 beside Gibbs
LDA's 2023, over 8,070 words), and a fit that scored one carries a tag that says so."""

from __future__ import annotations

import json

import pandas as pd

from topicbench.core.metrics.validity import VOCABULARY_SIZE
from topicbench.tasks.leaderboard.ranking import Bundle, build_leaderboard
from topicbench.tasks.leaderboard.render import render_markdown
from topicbench.tasks.report.render import format_value
from topicbench.tasks.report.summary import score_table, summary_table
from topicbench.tasks.report.tables import metric_pivot
from topicbench.tasks.run.fit import OutputSummary, ScoredFit
from topicbench.tasks.store.fit_record import FitRecord

V = 8070
#: Three seeds each: Gibbs LDA and ProdLDA below V, NMF and HDP 10^6 times worse than uniform.
PERPLEXITY = {"gibbs_lda": [2010.0, 2023.0, 2036.0], "prodlda": [2500.0, 2600.0, 2700.0],
              "nmf": [2.01e10, 2.02e10, 2.0e10], "hdp": [8.0e9, 8.9e9, 9.7e9]}
MODELS = list(PERPLEXITY)


def _runs(vocabulary_size=V) -> pd.DataFrame:
    return pd.DataFrame([{"corpus": "manpages", "model": model, "seed": seed, "status": "FINISHED",
                          "perplexity": values[seed], "npmi@10": 0.1 + 0.01 * seed + 0.05 * (model == "nmf"),
                          VOCABULARY_SIZE: vocabulary_size}
                         for model, values in PERPLEXITY.items() for seed in range(3)])


def test_the_report_shows_an_impossible_value_with_its_reason_and_never_ranks_it():
    runs = _runs()
    table = metric_pivot(runs, "perplexity", models=MODELS, corpora=["manpages"])
    cells = table.cells.set_index("model")["manpages"]
    assert not cells["gibbs_lda"].unranked
    for model in ("nmf", "hdp"):
        assert "worse than a uniform model over the 8,070-word vocabulary (perplexity 8,070)" in cells[model].unranked
        assert "not ranked: a seed scored" in format_value(cells[model])  # the value stays, with its reason
    assert cells["nmf"].mean > 1e10
    assert table.best == {(0, "manpages")}  # Gibbs LDA: the lowest of the values that rank
    summary = summary_table(runs, [("perplexity", "perplexity")], models=MODELS, corpora=["manpages"])
    ranked = {summary.cells.model[row] for (row, column) in summary.ranks if column == "perplexity · manpages"}
    assert ranked == {"gibbs_lda", "prodlda"}
    assert {summary.cells.model[row] for row, _ in summary.best} <= {"gibbs_lda"}
    assert score_table(runs, "perplexity", models=MODELS, corpora=["manpages"]).best == {(0, "manpages")}


def test_without_the_vocabulary_size_only_the_range_is_checked():
    runs = _runs(vocabulary_size=float("nan"))  # runs tracked before the size was logged
    table = metric_pivot(runs, "perplexity", models=MODELS, corpora=["manpages"])
    assert all(not cell.unranked for cell in table.cells["manpages"])
    assert table.best == {(0, "manpages")}


def test_the_leaderboard_keeps_an_impossible_value_out_of_its_ranks():
    runs, scores = [], []
    for model, values in PERPLEXITY.items():
        for seed, value in enumerate(values):
            run_id = f"{model}-{seed}"
            runs.append({"run_id": run_id, "corpus": "manpages", "model": model, "model_class": model, "seed": seed,
                         "status": "FINISHED", "num_topics_used": 8.0, "num_topics": "8", "settings": "{}",
                         "preprocessing": json.dumps({"lowercase": True}), "corpus_fingerprint": "f" * 64,
                         "corpus_source": "/data/manpages", "fit_seconds": 1.0, "peak_memory_mb": 100.0})
            scores += [{"run_id": run_id, "score": "perplexity", "value": value},
                       {"run_id": run_id, "score": VOCABULARY_SIZE, "value": float(V)}]
    bundle = Bundle("bench", {"experiment": "bench"}, pd.DataFrame(runs), pd.DataFrame(scores))
    board = build_leaderboard([bundle], metrics=["perplexity"]).datasets[0]
    entries = {entry.model: entry for entry in board.entries}
    assert [entry.model for entry in board.entries][:2] == ["gibbs_lda", "prodlda"]
    assert entries["gibbs_lda"].ranks["perplexity"].rank == 1 and entries["prodlda"].ranks["perplexity"].of == 2
    for model in ("nmf", "hdp"):
        assert "perplexity" not in entries[model].ranks and "perplexity" not in entries[model].scores
        shown, reason = entries[model].unranked["perplexity"]
        assert shown.mean > 1e9 and "worse than a uniform model" in reason
    page = render_markdown(build_leaderboard([bundle], metrics=["perplexity"]), with_diagram=False)
    assert "(not ranked)" in page and "worse than a uniform model over the 8,070-word vocabulary" in page


def test_a_fit_that_scored_an_impossible_value_is_tagged_with_why():
    fit = ScoredFit(OutputSummary(1.0, 8, None, {}, vocabulary_size=V), {},
                    {"perplexity": 2.01e10, "npmi@10": 0.1}, {}, None, {}, 0.1)
    record = FitRecord.of(fit, "nmf@manpages seed 0")
    assert record.metrics["perplexity"] == 2.01e10 and record.metrics[VOCABULARY_SIZE] == V  # the value is kept
    assert record.tags["topicbench.invalid.perplexity"] == (
        "2.01e+10 is worse than a uniform model over the 8,070-word vocabulary (perplexity 8,070)")
    assert json.loads(record.tags["topicbench.invalid_scores"]) == {"perplexity": record.tags["topicbench.invalid.perplexity"]}
    assert not any(tag.startswith("topicbench.invalid") for tag in FitRecord.of(
        ScoredFit(OutputSummary(1.0, 8, None, {}, vocabulary_size=V), {}, {"perplexity": 2023.0}, {}, None, {}, 0.1)).tags)
