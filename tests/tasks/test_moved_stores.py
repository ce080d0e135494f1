"""A copied or moved sqlite store reads and writes the artifact folder beside it, never the original's."""

from __future__ import annotations

import logging
import shutil

from mlflow.tracking import MlflowClient

from topicbench.flows.console import ConsoleFilter
from topicbench.tasks.store.moved import MOVED_FROM_TAG, follow_moved_store
from topicbench.tasks.store.checks import check_tracking_uri
from topicbench.tasks.store.tracking import Tracker


def _store(folder):
    """A store in ``folder`` with one finished run holding ``topics.json``; (uri, run id)."""
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    tracker = Tracker(uri, "moving")
    run = tracker.client.create_run(tracker.experiment_id, run_name="fit")
    tracker.client.log_text(run.info.run_id, '["tax vote"]', "topics.json")
    tracker.client.set_terminated(run.info.run_id, "FINISHED")
    return uri, run.info.run_id


def _files(folder):
    return {path: path.stat().st_mtime_ns for path in folder.rglob("*") if path.is_file()}


def test_a_copied_store_reads_and_writes_its_own_artifacts(tmp_path, caplog):
    _, run_id = _store(tmp_path / "first")
    shutil.copytree(tmp_path / "first", tmp_path / "copy", ignore=shutil.ignore_patterns("*.lock"))
    shutil.rmtree(tmp_path / "first")
    uri = f"sqlite:///{tmp_path / 'copy' / 'mlflow.db'}"
    with caplog.at_level(logging.INFO, logger="topicbench.tasks.store.moved"):
        check_tracking_uri(uri)  # what every command opens a store with
    (record,) = caplog.records
    # the line docs/sharing.md promises, word for word, and shown on the console at the default verbosity
    assert record.getMessage() == (
        f"the tracking store {(tmp_path / 'copy' / 'mlflow.db').resolve()} was copied or moved: experiment 'moving' now "
        f"keeps its artifacts beside it, in {(tmp_path / 'copy' / 'mlartifacts' / 'moving').resolve()} "
        f"(was {tmp_path / 'first' / 'mlartifacts' / 'moving'})")
    assert ConsoleFilter(verbose=False).filter(record)
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("moving")
    assert experiment.artifact_location == (tmp_path / "copy" / "mlartifacts" / "moving").as_uri()
    assert experiment.tags[MOVED_FROM_TAG] == (tmp_path / "first" / "mlartifacts" / "moving").as_uri()
    assert client.get_run(run_id).info.artifact_uri.startswith(experiment.artifact_location + "/")
    assert "tax vote" in (tmp_path / "copy" / "mlartifacts" / "moving" / run_id / "artifacts" / "topics.json").read_text()
    assert "tax vote" in open(client.download_artifacts(run_id, "topics.json", str(tmp_path))).read()
    client.log_text(run_id, "new", "report/report.md")  # a write lands in the copy
    assert not (tmp_path / "first").exists()
    assert (tmp_path / "copy" / "mlartifacts" / "moving" / run_id / "artifacts" / "report" / "report.md").is_file()
    assert follow_moved_store(tmp_path / "copy" / "mlflow.db") == []  # once re-pointed, nothing more to do


def test_a_store_that_never_moved_is_left_as_it_is(tmp_path):
    uri, _ = _store(tmp_path / "here")
    # an experiment a server made, with its artifacts in its own mlartifacts/<id>: not topicbench's to move
    served = (tmp_path / "server" / "mlartifacts" / "7").as_uri()
    MlflowClient(uri).create_experiment("served", artifact_location=served)
    before = _files(tmp_path)
    assert follow_moved_store(tmp_path / "here" / "mlflow.db") == []
    assert _files(tmp_path) == before
    assert MOVED_FROM_TAG not in MlflowClient(uri).get_experiment_by_name("moving").tags
    assert MlflowClient(uri).get_experiment_by_name("served").artifact_location == served


def test_a_store_copied_without_its_artifacts_says_which_folder_to_copy_where(tmp_path, caplog):
    _store(tmp_path / "first")
    (tmp_path / "copy").mkdir()
    shutil.copy(tmp_path / "first" / "mlflow.db", tmp_path / "copy" / "mlflow.db")
    original = _files(tmp_path / "first")
    uri = f"sqlite:///{tmp_path / 'copy' / 'mlflow.db'}"
    with caplog.at_level(logging.WARNING, logger="topicbench.tasks.store.moved"):
        follow_moved_store(tmp_path / "copy" / "mlflow.db")
        follow_moved_store(tmp_path / "copy" / "mlflow.db")  # named once a process
    (line,) = [record.getMessage() for record in caplog.records]
    assert line.startswith(f"experiment 'moving' of the tracking store {tmp_path / 'copy' / 'mlflow.db'}: 1 of its 1 "
                           f"finished runs have no artifacts beside it; copy {tmp_path / 'first' / 'mlartifacts' / 'moving'} ")
    assert f"to {tmp_path / 'copy' / 'mlartifacts' / 'moving'}, and" in line
    # it no longer points at the original: nothing is written there
    location = MlflowClient(uri).get_experiment_by_name("moving").artifact_location
    assert location == (tmp_path / "copy" / "mlartifacts" / "moving").as_uri()
    assert _files(tmp_path / "first") == original
