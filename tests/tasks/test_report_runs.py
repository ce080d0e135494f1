"""The run table a report rests on: one row per fit (run key), in its present state, read from a
temporary sqlite store whose runs are logged by hand with chosen start times."""

from __future__ import annotations

import pytest

from topicbench.tasks.results.store import collect_runs

EXPERIMENT = "attempts-test"


@pytest.fixture()
def store(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment_id = client.create_experiment(EXPERIMENT, artifact_location=(tmp_path / "artifacts").as_uri())
    return uri, client, experiment_id


def _attempt(store, model: str, status: str, start: int, error: str = "") -> str:
    _, client, experiment_id = store
    tags = {"topicbench.role": "fit", "corpus": "toy", "model": model, "seed": "0",
            "topicbench.run_key": f"toy/{model}/0", "topicbench.error": error}
    run = client.create_run(experiment_id, start_time=start, tags=tags)
    if status != "RUNNING":
        client.set_terminated(run.info.run_id, status)
    return run.info.run_id


def test_each_fit_counts_once_in_its_present_state(store):
    resumed = [_attempt(store, "resumed", "KILLED", 1, "the benchmark stopped: SIGTERM"),
               _attempt(store, "resumed", "RUNNING", 2)]
    refitted = [_attempt(store, "refitted", "FAILED", 1, "ValueError"), _attempt(store, "refitted", "FINISHED", 2)]
    kept = [_attempt(store, "kept", "FINISHED", 1), _attempt(store, "kept", "FAILED", 2, "ValueError")]
    stopped = [_attempt(store, "stopped", "FAILED", 1, "ValueError"),
               _attempt(store, "stopped", "KILLED", 2, "the benchmark stopped: SIGINT")]
    runs = collect_runs(store[0], EXPERIMENT).set_index("model")
    assert len(runs) == 4
    assert runs.loc["resumed", ["status", "run_id"]].tolist() == ["RUNNING", resumed[1]]  # being fitted again
    assert runs.loc["refitted", ["status", "run_id"]].tolist() == ["FINISHED", refitted[1]]
    assert runs.loc["kept", ["status", "run_id"]].tolist() == ["FINISHED", kept[0]]  # a finished fit is not undone
    assert runs.loc["stopped", ["status", "error"]].tolist() == ["KILLED", "the benchmark stopped: SIGINT"]
    assert runs.loc["stopped", "run_id"] == stopped[1]


def test_runs_without_a_run_key_are_not_merged(store):
    _, client, experiment_id = store
    for _ in range(2):
        run = client.create_run(experiment_id, tags={"topicbench.role": "fit", "corpus": "toy", "model": "old"})
        client.set_terminated(run.info.run_id, "FAILED")
    assert len(collect_runs(store[0], EXPERIMENT)) == 2


def test_a_fits_topics_carry_the_documents_it_logged_without_reading_its_matrices(store, tmp_path, monkeypatch):
    import json

    from topicbench.tasks.results import store as report

    _, client, _ = store
    run_id = _attempt(store, "lda", "RUNNING", 1)
    folder = tmp_path / "artifacts-of-lda"
    folder.mkdir()
    (folder / "topics.json").write_text(json.dumps([{"topic": 0, "label": None, "words": "tax vote"},
                                                    {"topic": 1, "label": None, "words": "game team"}]))
    example = {"document": 3, "weight": 0.9, "excerpt": "team coach game"}
    (folder / "topic_documents.json").write_text(json.dumps({"documents": 4, "labels": ["a", "b"], "topics": [
        {"topic": 1, "share": 0.7, "documents": 3, "by_label": {"b": 3}, "examples": [example]},
        {"topic": 0, "share": 0.3, "documents": 1, "by_label": {"a": 1}, "examples": []}]}))
    client.log_artifacts(run_id, str(folder))
    client.set_terminated(run_id, "FINISHED")
    monkeypatch.setattr(report, "_topic_shares", lambda *args: pytest.fail("the matrices were read for the shares"))
    records = json.loads(collect_runs(store[0], EXPERIMENT).topics_json.iloc[0])
    assert records[1] == {"topic": 1, "label": None, "words": "game team", "prevalence": 0.7, "documents": 3,
                          "by_label": {"b": 3}, "examples": [example]}
    assert records[0]["prevalence"] == 0.3 and records[0]["examples"] == []
