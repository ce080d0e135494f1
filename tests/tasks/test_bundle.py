"""Result bundles: an experiment's finished runs exported to files and imported into another store,
run keys kept (a later run fits nothing imported), importing twice adding nothing."""

from __future__ import annotations

import json

import pytest
from mlflow.tracking import MlflowClient

from topicbench.tasks.bundle import BundleError, export_bundle, import_bundle, read_bundle
from topicbench.tasks.run_claims import FIT_ROLE, PARENT_ROLE, ROLE_TAG, RUN_KEY
from topicbench.tasks.tracking import Tracker


def _store_with_runs(folder):
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    tracker = Tracker(uri, "paper")
    client = tracker.client
    parent = client.create_run(tracker.experiment_id, tags={ROLE_TAG: PARENT_ROLE}, run_name="paper")
    artifacts = folder / "fit-artifacts"
    (artifacts / "output").mkdir(parents=True)
    (artifacts / "topics.json").write_text(json.dumps([{"words": "tax vote"}]))
    (artifacts / "output" / "matrices.npz").write_bytes(b"\0" * 1000)
    for seed, status in ((0, "FINISHED"), (1, "FAILED")):
        fit = client.create_run(tracker.experiment_id, run_name=f"lda seed {seed}", tags={
            ROLE_TAG: FIT_ROLE, RUN_KEY: f"key-{seed}", "mlflow.parentRunId": parent.info.run_id, "model": "gensim_lda"})
        client.log_param(fit.info.run_id, "seed", str(seed))
        client.log_metric(fit.info.run_id, "npmi_10", 0.125 + seed)
        client.log_artifacts(fit.info.run_id, str(artifacts))
        client.set_terminated(fit.info.run_id, status)
    client.set_terminated(parent.info.run_id, "FINISHED")
    return uri


def _runs(uri):
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("paper")
    return client, client.search_runs([experiment.experiment_id])


def test_a_bundle_carries_the_finished_runs_into_another_store_once(tmp_path):
    source = _store_with_runs(tmp_path / "a")
    manifest = export_bundle(source, "paper", tmp_path / "bundle")
    assert (manifest["runs"], manifest["fits"], manifest["run_keys"]) == (2, 1, ["key-0"])  # the failed fit is not exported
    target = f"sqlite:///{tmp_path / 'b' / 'mlflow.db'}"
    assert import_bundle(tmp_path / "bundle", target) == {"imported": 2, "already_there": 0}
    client, runs = _runs(target)
    assert {run.info.status for run in runs} == {"FINISHED"}
    [fit] = [run for run in runs if run.data.tags[ROLE_TAG] == FIT_ROLE]
    [parent] = [run for run in runs if run.data.tags[ROLE_TAG] == PARENT_ROLE]
    assert fit.data.tags[RUN_KEY] == "key-0" and fit.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert fit.data.params == {"seed": "0"} and fit.data.metrics == {"npmi_10": 0.125}
    assert [a.path for a in client.list_artifacts(fit.info.run_id)] == ["topics.json"]
    assert client.list_artifacts(fit.info.run_id, "output") == []  # the matrices stay out unless asked for
    # artifacts beside the target store, nowhere else
    assert (tmp_path / "b" / "mlartifacts").is_dir() and not (tmp_path / "mlruns").exists()
    assert import_bundle(tmp_path / "bundle", target) == {"imported": 0, "already_there": 2}
    assert len(_runs(target)[1]) == 2


def test_the_matrices_travel_when_asked_for(tmp_path):
    source = _store_with_runs(tmp_path / "a")
    export_bundle(source, "paper", tmp_path / "bundle", with_matrices=True)
    target = f"sqlite:///{tmp_path / 'b' / 'mlflow.db'}"
    import_bundle(tmp_path / "bundle", target)
    client, runs = _runs(target)
    [fit] = [run for run in runs if run.data.tags[ROLE_TAG] == FIT_ROLE]
    assert [a.path for a in client.list_artifacts(fit.info.run_id, "output")] == ["output/matrices.npz"]


def test_a_folder_that_is_no_bundle_is_one_error_naming_it(tmp_path):
    with pytest.raises(BundleError, match="is not a readable result bundle"):
        read_bundle(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"bundle_format": 99}))
    (tmp_path / "runs.jsonl").write_text("")
    with pytest.raises(BundleError, match="bundle format 99, this topicbench reads 1"):
        read_bundle(tmp_path)
    with pytest.raises(BundleError, match="has no experiment 'nope'"):
        export_bundle(f"sqlite:///{tmp_path / 'mlflow.db'}", "nope", tmp_path / "out")
