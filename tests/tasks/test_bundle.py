"""Result bundles: an experiment's finished runs exported to files and imported into another store,
run keys kept (a later run fits nothing imported), importing twice adding nothing."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from topicbench.tasks.results.bundle import BundleError, export_bundle, import_bundle, read_manifest
from topicbench.tasks.store.claims import FIT_ROLE, PARENT_ROLE, ROLE_TAG, RUN_KEY
from topicbench.tasks.store.tracking import Tracker


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
        read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"bundle_format": 99}))
    (tmp_path / "runs.jsonl").write_text("")
    with pytest.raises(BundleError, match="bundle format 99, this topicbench reads 1 and 2"):
        read_manifest(tmp_path)
    with pytest.raises(BundleError, match="has no experiment 'nope'"):
        export_bundle(f"sqlite:///{tmp_path / 'mlflow.db'}", "nope", tmp_path / "out")


def test_the_tables_have_their_columns_and_types_and_a_damaged_one_is_named(tmp_path):
    from topicbench.tasks.results.bundle_tables import TABLE_COLUMNS, TableError, read_tables

    export_bundle(_store_with_runs(tmp_path / "a"), "paper", tmp_path / "bundle")
    tables = read_tables(tmp_path / "bundle")
    assert set(tables) == set(TABLE_COLUMNS)
    for name, columns in TABLE_COLUMNS.items():
        assert list(tables[name].columns)[:len(columns)] == list(columns), name
        assert {c: str(t) for c, t in tables[name].dtypes.items() if c in columns} == columns, name
    [run] = tables["runs"].to_dict("records")
    assert (run["run_key"], run["model"], run["seed"], run["settings"]) == ("key-0", "gensim_lda", 0, "{}")
    assert pd.isna(run["num_topics"]) and pd.isna(run["num_topics_used"])  # none asked for, none recorded
    assert tables["scores"][["metric", "score", "value"]].values.tolist() == [["npmi_10", "npmi_10", 0.125]]
    assert tables["topics"][["topic", "rank", "word"]].values.tolist() == [[0, 0, "tax"], [0, 1, "vote"]]
    assert tables["topics"].weight.isna().all()  # no matrices to weigh the words with

    (tmp_path / "bundle" / "tables" / "scores.parquet").write_bytes(b"PAR1 not a table")
    with pytest.raises(TableError, match=r"scores.parquet: table 'scores' is damaged"):
        read_tables(tmp_path / "bundle")
    (tmp_path / "bundle" / "tables" / "scores.parquet").unlink()
    with pytest.raises(TableError, match=r"table 'scores' is missing; export the bundle again"):
        read_tables(tmp_path / "bundle")


def test_a_bundle_of_format_1_still_imports_but_has_no_tables(tmp_path):
    from topicbench.tasks.results.bundle_tables import TableError, read_tables

    export_bundle(_store_with_runs(tmp_path / "a"), "paper", tmp_path / "bundle")
    manifest = json.loads((tmp_path / "bundle" / "manifest.json").read_text())
    old = {key: value for key, value in manifest.items() if key not in ("tables", "report_columns")}
    (tmp_path / "bundle" / "manifest.json").write_text(json.dumps({**old, "bundle_format": 1}))
    assert read_manifest(tmp_path / "bundle")[0]["bundle_format"] == 1
    with pytest.raises(TableError, match="has no tables; export it again"):
        read_tables(tmp_path / "bundle")
    assert import_bundle(tmp_path / "bundle", f"sqlite:///{tmp_path / 'b' / 'mlflow.db'}")["imported"] == 2


def test_the_stability_table_gives_back_its_findings_only_for_the_runs_it_covered():
    from topicbench.tasks.results.bundle_tables import findings_from_table, stability_table
    from topicbench.tasks.results.stability import StabilityFindings, UnreadableRun

    runs = pd.DataFrame({"corpus": ["c"] * 5, "model": ["a", "a", "b", "b", "d"], "seed": [0, 1, 0, 1, 0],
                         "run_key": ["a0", "a1", "b0", "b1", "d0"], "run_id": ["r1", "r2", "r3", "r4", "r5"],
                         "status": ["FINISHED"] * 5})
    findings = StabilityFindings(
        pd.DataFrame([{"corpus": "c", "model": "a", "seeds": 2, "pairs": 1, "top_words_mean": 0.5}]),
        one_seed=(("c", "d"),), unreadable=(UnreadableRun("c", "b", 1, "r4", "no output/matrices.npz"),),
        not_compared=(("c", "b", "1 of 2 seeds readable"),))
    table = stability_table(findings, runs)
    assert table.kind.tolist() == ["scored", "one_seed", "unreadable", "not_compared"]
    back = findings_from_table(table, runs)
    pd.testing.assert_frame_equal(back.table, findings.table)
    assert (back.one_seed, back.unreadable, back.not_compared) == (
        findings.one_seed, findings.unreadable, findings.not_compared)
    rerun = runs.assign(run_key=["a0", "a9", "b0", "b1", "d0"])  # model a's seed 1 fitted again since
    assert findings_from_table(table, rerun).table.empty
