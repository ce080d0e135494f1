"""A new sqlite tracking store is a copy of an empty one of MLflow's schema, made once by MLflow's
own code: the same tables, revision and Default experiment as a store MLflow makes itself."""

from __future__ import annotations

import sqlite3

import mlflow.store.db.utils as mlflow_db
from mlflow.tracking import MlflowClient

from topicbench.tasks.store.mlflow_schema import mlflow_schema_revisions
from topicbench.tasks.store.new_store import TEMPLATE_FOLDER_VARIABLE, create_from_template
from topicbench.tasks.store.tracking import Tracker


def _tables(path) -> dict:
    with sqlite3.connect(path) as connection:
        names = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {name: [row[1] for row in connection.execute(f'PRAGMA table_info("{name}")')] for name in names}


def test_a_new_store_is_the_template_copied_and_mlflow_does_not_migrate_it(tmp_path, monkeypatch):
    monkeypatch.setenv(TEMPLATE_FOLDER_VARIABLE, str(tmp_path / "templates"))
    Tracker(f"sqlite:///{tmp_path / 'first' / 'mlflow.db'}", "exp")  # makes the template, then copies it
    assert [p.name for p in (tmp_path / "templates").iterdir()] == [f"mlflow-empty-{mlflow_schema_revisions()[0]}.db"]

    def migrate(engine):
        raise AssertionError("a second new store was migrated from scratch")

    monkeypatch.setattr(mlflow_db, "_initialize_tables", migrate)
    tracker = Tracker(f"sqlite:///{tmp_path / 'second' / 'mlflow.db'}", "exp")
    monkeypatch.undo()
    own = tmp_path / "own.db"
    MlflowClient(f"sqlite:///{own}").search_experiments()  # a store MLflow makes itself
    assert _tables(tmp_path / "second" / "mlflow.db") == _tables(own)
    with sqlite3.connect(tmp_path / "second" / "mlflow.db") as copy, sqlite3.connect(own) as made:
        assert copy.execute("SELECT * FROM alembic_version").fetchall() == made.execute(
            "SELECT * FROM alembic_version").fetchall()
    experiments = {e.name: e for e in tracker.client.search_experiments()}
    assert set(experiments) == {"Default", "exp"}
    assert experiments["exp"].artifact_location == (tmp_path / "second" / "mlartifacts" / "exp").as_uri()
    run = tracker.client.create_run(tracker.experiment_id)
    tracker.client.log_metric(run.info.run_id, "m", 1.5)
    assert tracker.client.get_run(run.info.run_id).data.metrics == {"m": 1.5}


def test_an_existing_store_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.setenv(TEMPLATE_FOLDER_VARIABLE, str(tmp_path / "templates"))
    store = tmp_path / "mlflow.db"
    Tracker(f"sqlite:///{store}", "exp")
    before = store.read_bytes()
    assert create_from_template(f"sqlite:///{store}") is False
    assert store.read_bytes() == before


def test_without_a_usable_template_folder_mlflow_makes_the_store(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(TEMPLATE_FOLDER_VARIABLE, str(blocker / "templates"))  # cannot be made
    tracker = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "exp")
    assert {e.name for e in tracker.client.search_experiments()} == {"Default", "exp"}
    assert blocker.read_text() == "not a folder"
