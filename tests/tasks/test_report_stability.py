"""The stability section: each model's seeds read back from their MLflow artifacts and matched,
a table per corpus; models with one seed, and runs whose output cannot be read, named in words.

The runs are logged by hand into a temporary sqlite store (no benchmark, no Prefect server):
their outputs are chosen, so the numbers are known (tests/flows/test_report.py scores real fits)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from topicbench.core.output import TopicModelOutput
from topicbench.core.topic_word import ConstantPlusSparse
from topicbench.tasks.store.artifacts import write_output_artifacts
from topicbench.tasks.results.store import collect_runs
from topicbench.tasks.report.render import html_table, render_html, render_markdown
from topicbench.tasks.report.parts import ReportData
from topicbench.tasks.report.sections import build_report
from topicbench.tasks.report.stability import stability_tables
from topicbench.tasks.results.stability import collect_stability, model_stability

VOCABULARY = tuple("tax budget war troops school teacher health doctor vote bill law court".split())
EXPERIMENT = "stability-test"


def _output(topic_word, seed: int) -> TopicModelOutput:
    n_topics = topic_word.shape[0]
    dense = topic_word.toarray() if isinstance(topic_word, ConstantPlusSparse) else topic_word
    topics = [[VOCABULARY[i] for i in np.argsort(-row, kind="stable")[:10]] for row in dense]
    return TopicModelOutput(model="gibbs_lda", vocabulary=VOCABULARY, topics=topics, topic_word_matrix=topic_word,
                            topic_document_matrix=np.full((n_topics, 4), 1 / n_topics), seed=seed)


def _keyword_topics() -> ConstantPlusSparse:
    """Three E-LDA-like rows: a small constant everywhere, most mass on a few stored words."""
    indptr, indices = np.array([0, 3, 6, 9]), np.array([0, 1, 2, 3, 4, 5, 6, 7, 8])
    constant = 0.1 / 9  # the 9 words a row does not store share 0.1
    values = np.full(9, 0.3)
    return ConstantPlusSparse(np.full(3, constant), indptr, indices, values, len(VOCABULARY))


def _log_run(client, experiment_id, tmp_path, corpus, model, seed, output=None, status="FINISHED"):
    run = client.create_run(experiment_id, tags={
        "topicbench.role": "fit", "corpus": corpus, "model": model, "seed": str(seed),
        "topicbench.run_key": f"{corpus}/{model}/{seed}",
    })
    if output is not None:
        folder = write_output_artifacts(output, tmp_path / run.info.run_id)
        client.log_artifacts(run.info.run_id, str(folder))
    client.set_terminated(run.info.run_id, status)
    return run.info.run_id


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Crafted runs on corpus "toy": ``same`` one output's topics, in another order at seed 1 (the
    same topics found again); ``keywords`` twice one constant-plus-sparse output (a deterministic
    model: one fit); ``random`` three unrelated outputs; ``single`` one seed;
    ``broken`` two seeds, one without ``output/``."""
    from mlflow.tracking import MlflowClient

    root = tmp_path_factory.mktemp("stability")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment_id = client.create_experiment(EXPERIMENT, artifact_location=(root / "artifacts").as_uri())
    rng = np.random.default_rng(0)
    same = rng.dirichlet(np.full(len(VOCABULARY), 0.3), size=4)
    for seed in (0, 1):
        _log_run(client, experiment_id, root, "toy", "same", seed, _output(same if seed == 0 else same[::-1], seed))
        _log_run(client, experiment_id, root, "toy", "keywords", seed, _output(_keyword_topics(), seed))
    for seed in (0, 1, 2):
        _log_run(client, experiment_id, root, "toy", "random", seed,
                 _output(rng.dirichlet(np.full(len(VOCABULARY), 0.3), size=4), seed))
    _log_run(client, experiment_id, root, "toy", "single", 0, _output(same, 0))
    _log_run(client, experiment_id, root, "toy", "broken", 0, _output(same, 0))
    broken = _log_run(client, experiment_id, root, "toy", "broken", 1)  # finished, but no output/
    _log_run(client, experiment_id, root, "toy", "failed", 0, status="FAILED")
    return uri, broken


def test_the_same_topics_found_again_are_stable_above_chance_and_one_fit_is_not_applicable(store):
    uri, _ = store
    findings = collect_stability(uri, collect_runs(uri, EXPERIMENT))
    rows = findings.table.set_index("model")
    assert sorted(rows.index) == ["keywords", "random", "same"]
    row = rows.loc["same"]
    assert row.seeds == 2 and row.pairs == 1 and row.deterministic == 0.0
    assert row.jensen_shannon_mean == pytest.approx(1.0) and row.jensen_shannon_share_mean == 1.0
    assert row.top_words_mean == pytest.approx(1.0)
    assert row.jensen_shannon_chance < 0.9 and np.isnan(row.jensen_shannon_sd)  # one pair: no sd
    assert row.jensen_shannon_chance_sd > 0 and row.permutations == 19
    assert row.jensen_shannon_chance_p == pytest.approx(1 / 20)  # beats every draw: the smallest p, ≤ α
    keywords = rows.loc["keywords"]  # constant-plus-sparse as E-LDA writes it, the same fit at both seeds
    assert keywords.deterministic == 1.0 and keywords.pairs == 1
    assert np.isnan(keywords.jensen_shannon_mean) and np.isnan(keywords.top_words_chance_p)  # never 1.0
    assert rows.loc["random", "pairs"] == 3 and rows.loc["random", "jensen_shannon_mean"] < 0.9
    assert np.isfinite(rows.loc["random", "jensen_shannon_sd"])
    assert findings.one_seed == (("toy", "single"),)
    assert findings.not_compared == (("toy", "broken", "1 of 2 seeds readable"),)


def test_the_section_has_a_table_per_corpus_and_names_what_it_could_not_measure(store, tmp_path):
    uri, broken = store
    runs = collect_runs(uri, EXPERIMENT)
    data = ReportData(runs=runs, experiment=EXPERIMENT, command="cmd", stability=collect_stability(uri, runs))
    report = build_report(data, ["stability"])
    markdown = render_markdown(report, {})
    assert "## Stability across seeds" in markdown and "Hungarian" in markdown and "**toy**" in markdown
    assert "| model | seeds | matched similarity (1 − JS distance) | topics reappearing | chance similarity |" in markdown
    assert "| same | 2 | 1.00 | 1.00 |" in markdown
    assert "JS: above chance (p = 0.05); RBO: above chance (p = 0.05)" in markdown
    assert "not applicable: deterministic, one fit |" in markdown.split("| keywords |")[1].splitlines()[0]
    assert "one-sided permutation test" in markdown and "19 permutation draws" in markdown
    assert "One seed, so not measurable: single on toy." in markdown
    assert "| single |" not in markdown and "| broken |" not in markdown  # words, not rows of dashes
    assert f"broken on toy seed 1 (run {broken}:" in markdown and "broken on toy (1 of 2 seeds readable)" in markdown
    assert "failed" not in markdown.split("## Stability")[1]  # a failed run is no seed
    page = render_html(report, {})
    assert "<caption>toy</caption>" in page and "One seed, so not measurable" in page


def test_tables_follow_the_configs_order_and_a_report_without_findings_has_no_section():
    row = {"seeds": 2, "pairs": 1, "jensen_shannon_mean": 0.8, "jensen_shannon_sd": np.nan,
           "jensen_shannon_share_mean": 0.5, "jensen_shannon_share_sd": np.nan,
           "jensen_shannon_chance": 0.3, "top_words_mean": 0.6, "top_words_sd": np.nan,
           "top_words_share_mean": 0.5, "top_words_share_sd": np.nan, "top_words_chance": 0.01}
    table = pd.DataFrame([{"corpus": c, "model": m, **row} for c in ("c1", "c2") for m in ("a", "b")])
    from topicbench.tasks.results.stability import StabilityFindings

    tables = stability_tables(StabilityFindings(table), corpora=["c2", "c1"], models=["b", "a"])
    assert [t.title for t in tables] == ["c2", "c1"] and list(tables[0].cells.model) == ["b", "a"]
    assert "<td class='number'>0.800</td>" in html_table(tables[0])
    runs = pd.DataFrame([{"status": "FINISHED", "corpus": "c1", "model": "a", "seed": 0}])
    assert build_report(ReportData(runs=runs, experiment="x", command="cmd"), ["stability"]).sections == ()


def test_model_stability_of_unrelated_runs_sits_near_its_chance_level():
    rng = np.random.default_rng(1)
    runs = [rng.dirichlet(np.ones(200), size=5) for _ in range(3)]
    row = model_stability(runs, [tuple(map(str, range(200)))] * 3, [0, 1, 2])
    assert abs(row["jensen_shannon_mean"] - row["jensen_shannon_chance"]) < 0.05
    assert row["pairs"] == 3 and row["jensen_shannon_chance_p"] > 0.05 and row["top_words_chance_p"] > 0.05
    again = model_stability(runs, [tuple(map(str, range(200)))] * 3, [0, 1, 2])
    assert again["jensen_shannon_chance"] == row["jensen_shannon_chance"]  # the shuffles are seeded


def test_stability_found_once_is_kept_with_the_runs_and_read_back_without_their_outputs(store, tmp_path, monkeypatch):
    """A second report reads each model's kept stability.json, not its seeds' matrices, and shows
    the same numbers; a record covering other runs (another seed fitted since) is not used."""
    import json

    from mlflow.tracking import MlflowClient

    from topicbench.tasks.results import stability

    uri, _ = store
    runs = collect_runs(uri, EXPERIMENT)
    first = collect_stability(uri, runs)
    kept = MlflowClient(uri).download_artifacts(runs.set_index("model").loc["same", "run_id"].iloc[0],
                                                "stability.json", str(tmp_path))
    assert json.loads(open(kept).read())["run_keys"] == ["toy/same/0", "toy/same/1"]

    def no_outputs(client, group, folder):
        raise AssertionError(f"read the outputs of {list(group.model)[0]} again")

    monkeypatch.setattr(stability, "_download_outputs", no_outputs)
    again = collect_stability(uri, runs[runs.model != "broken"])  # broken: never kept (a seed unreadable)
    pd.testing.assert_frame_equal(again.table, first.table, check_dtype=False)
    other_runs = runs[runs.model == "same"].assign(run_key=["toy/same/0", "toy/same/9"])
    with pytest.raises(AssertionError, match="read the outputs of same again"):
        collect_stability(uri, other_runs)
