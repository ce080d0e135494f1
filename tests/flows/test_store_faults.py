"""Tracking stores that cannot be used, against the command line: a database of another MLflow
schema, damaged or of another application, sqlite in memory, MySQL or SQL Server, an unreachable
PostgreSQL, a full disk, a malformed tracking setting. Each must end ``run``, ``report`` and ``ui``
before any work with exit 2, one line naming the problem and the fix, no traceback, and the store
untouched.

The cases run ``topicbench`` in this process (``main(argv)``), as ``test_faults.py`` does; the
stores are real MLflow databases holding runs, damaged or restamped by hand.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from topicbench.flows.cli.main import main
from topicbench.tasks.store.mlflow_schema import mlflow_schema_revisions

CONFIG = """\
experiment: kept
corpora:
  - {{name: tiny, source: {corpus}, preprocessing: {{preprocessed: true}}}}
models:
  - {{model: elda}}
seeds: [0]
"""


@dataclass
class Case:
    """``command`` (run, report or ui) against the store ``store`` (a key of the ``stores``
    fixture, or a URI template), ending with ``message`` in its last line."""

    name: str
    command: str
    store: str
    message: str
    env: dict = field(default_factory=dict)


def _argv(command: str, uri: str, tmp: Path, config: Path) -> list:
    if command == "run":
        return ["run", str(config), "--tracking-uri", uri, "--out", str(tmp / "report")]
    if command == "report":
        return ["report", "--experiment", "kept", "--tracking-uri", uri, "--out", str(tmp / "report")]
    return ["ui", "--tracking-uri", uri, "--port", str(_free_port())]


COMMANDS = ("run", "report", "ui")
DAMAGED = "is damaged"
RECOVER = '.recover" | sqlite3 recovered.db'
CASES = [
    *[Case(f"{command}: damaged header", command, "header", "not sqlite, or its header is damaged") for command in COMMANDS],
    *[Case(f"{command}: damaged at 75%", command, "at75", DAMAGED) for command in COMMANDS],
    *[Case(f"{command}: damaged at 90%", command, "at90", DAMAGED) for command in COMMANDS],
    *[Case(f"{command}: older MLflow schema", command, "older", "has the schema of an older MLflow") for command in COMMANDS],
    *[Case(f"{command}: newer MLflow schema", command, "newer", "was written by a newer MLflow") for command in COMMANDS],
    *[Case(f"{command}: another application's database", command, "foreign", "is not an MLflow store") for command in COMMANDS],
    *[Case(f"{command}: sqlite in memory", command, "sqlite:///:memory:", "keeps the runs in memory") for command in COMMANDS],
    Case("run: mysql", "run", "mysql://lab@127.0.0.1:{closed_port}/mlflow", "MySQL stores are used through an MLflow server"),
    Case("run: mysql with a driver", "run", "mysql+pymysql://lab:secret@127.0.0.1/mlflow",
         "mlflow server --backend-store-uri mysql+pymysql://lab:***@127.0.0.1/mlflow"),
    Case("report: mssql", "report", "mssql://lab@127.0.0.1:{closed_port}/mlflow", "SQL Server stores are used through an MLflow server"),
    *[Case(f"{command}: postgresql not answering", command, "postgresql://lab:secret@127.0.0.1:{closed_port}/mlflow",
           "cannot be reached") for command in COMMANDS],
    Case("run: postgresql with a driver not installed", "run", "postgresql+pg8000://lab@127.0.0.1:{closed_port}/mlflow",
         "needs a database driver that is not installed"),
    *[Case(f"{command}: stale-run seconds not a number", command, "good", "TOPICBENCH_STALE_RUN_SECONDS='abc' is not a number",
           env={"TOPICBENCH_STALE_RUN_SECONDS": "abc"}) for command in COMMANDS],
    Case("run: stale-run seconds negative", "run", "good", "TOPICBENCH_STALE_RUN_SECONDS='-5' is not a number >= 0",
         env={"TOPICBENCH_STALE_RUN_SECONDS": "-5"}),
    Case("run: MLflow's retries not an integer", "run", "good", "MLFLOW_HTTP_REQUEST_MAX_RETRIES='many' is not an integer",
         env={"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "many"}),
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nobody listens once the probe closes


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_store(path: Path, runs: int = 12) -> str:
    """A real MLflow sqlite store: experiment 'kept' with ``runs`` finished runs, each with
    params, metrics and a metric history, as a benchmark leaves them."""
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{path}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("kept")
    for index in range(runs):
        run = client.create_run(experiment, tags={"topicbench.role": "fit", "model": "elda", "seed": str(index)})
        client.log_batch(
            run.info.run_id,
            metrics=[Metric(f"umass_top{k}", -1.0 - k, 0, 0) for k in range(5, 30, 5)]
            + [Metric("training_loss", 10.0 / (step + 1), 0, step) for step in range(50)],
            params=[Param(f"settings.setting_{k}", "x" * 40) for k in range(40)],
            tags=[RunTag("topicbench.run_key", f"key{index}")],
        )
        client.set_terminated(run.info.run_id, "FINISHED")
    return uri


def damage(source: Path, target: Path, fraction: float) -> Path:
    """A copy of ``source`` with 8 KB of random bytes written at ``fraction`` of its length."""
    shutil.copy(source, target)
    size = target.stat().st_size
    with open(target, "r+b") as database:
        database.seek(int(size * fraction))
        database.write(random.Random(fraction).randbytes(8192))
    return target


def restamp(source: Path, target: Path, revision: str) -> Path:
    """A copy of ``source`` whose alembic_version says ``revision``."""
    shutil.copy(source, target)
    with sqlite3.connect(target) as connection:
        connection.execute("UPDATE alembic_version SET version_num = ?", (revision,))
    return target


def older_revision() -> str:
    """The revision before the installed MLflow's head, read from its migration script."""
    head, _ = mlflow_schema_revisions()
    import importlib.util
    import re

    versions = Path(importlib.util.find_spec("mlflow").submodule_search_locations[0]) / "store" / "db_migrations" / "versions"
    (script,) = versions.glob(f"{head}_*.py")
    return re.search(r"^down_revision\b[^=]*=\s*[\"'](\w+)[\"']", script.read_text(), re.MULTILINE).group(1)


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict:
    """name -> sqlite file: a good store holding runs, its damaged and restamped copies, and
    another application's database."""
    folder = tmp_path_factory.mktemp("stores")
    good = folder / "good" / "mlflow.db"
    good.parent.mkdir()
    make_store(good)
    made = {"good": good}
    for name, fraction in (("header", 0.0), ("at75", 0.75), ("at90", 0.9)):
        (folder / name).mkdir()
        made[name] = damage(good, folder / name / "mlflow.db", fraction)
    for name, revision in (("older", older_revision()), ("newer", "f0e1d2c3b4a5")):
        (folder / name).mkdir()
        made[name] = restamp(good, folder / name / "mlflow.db", revision)
    (folder / "foreign").mkdir()
    made["foreign"] = folder / "foreign" / "mlflow.db"
    with sqlite3.connect(made["foreign"]) as connection:
        connection.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        connection.execute("INSERT INTO customers (name) VALUES ('Ada'), ('Grace')")
    return made


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_an_unusable_store_ends_the_command_with_one_line_before_any_work(case, stores, tmp_path, tiny_octis, monkeypatch, capsys):
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG.format(corpus=tiny_octis))
    database = stores.get(case.store)
    uri = f"sqlite:///{database}" if database else case.store.format(closed_port=_free_port())
    folder_before = sorted(p.name for p in database.parent.iterdir()) if database else None
    digest_before = _digest(database) if database else None
    tmp_before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))

    started = time.monotonic()
    code = main(_argv(case.command, uri, tmp_path, config))
    seconds = time.monotonic() - started

    captured = capsys.readouterr()
    lines = [line for line in captured.err.strip().splitlines() if line.strip()]
    assert code == 2, captured.err
    assert lines and lines[-1].startswith("topicbench: error: ") and case.message in lines[-1], lines[-1:]
    assert "Traceback" not in captured.err
    if case.store in ("header", "at75", "at90"):
        assert RECOVER in lines[-1]  # the fix: a backup, or sqlite's recovery
    if case.store == "older":
        assert f"mlflow db upgrade {uri}" in lines[-1] and "back it up" in lines[-1]
    # nothing created (no report folder, no lock or journal beside the store), nothing changed
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == tmp_before
    if database:
        assert sorted(p.name for p in database.parent.iterdir()) == folder_before
        assert _digest(database) == digest_before
    assert seconds < 30, f"took {seconds:.0f} s to fail"


def test_the_table_covers_every_command_for_each_store_fault():
    for store in ("header", "at75", "at90", "older", "newer", "foreign", "sqlite:///:memory:"):
        assert {case.command for case in CASES if case.store == store} == set(COMMANDS), store


def test_the_undamaged_store_passes_its_checks(stores, capsys):
    """The same store before the damage: the checks find nothing (so the cases above fail for
    their fault alone), and report reads its runs."""
    assert main(["report", "--experiment", "kept", "--tracking-uri", f"sqlite:///{stores['good']}",
                 "--out", str(stores["good"].parent / "report")]) == 0
    assert "(12 runs, 0 failed)" in capsys.readouterr().out


def test_the_schema_revisions_read_from_the_scripts_are_alembics():
    from alembic.script import ScriptDirectory
    from mlflow.store.db.utils import _get_alembic_config

    scripts = ScriptDirectory.from_config(_get_alembic_config(""))
    head, known = mlflow_schema_revisions()
    assert [head] == list(scripts.get_heads())
    assert known == {revision.revision for revision in scripts.walk_revisions()}


def test_an_empty_file_or_a_new_path_is_a_store_to_be(tmp_path):
    from topicbench.tasks.store.checks import check_tracking_uri

    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    check_tracking_uri(f"sqlite:///{empty}")
    check_tracking_uri(f"sqlite:///{tmp_path / 'new' / 'mlflow.db'}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"] and empty.stat().st_size == 0


# -- a full disk --------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 24 MB tmpfs mounted in the test's folder (needs root; skipped where mounting is refused)."""
    folder = tmp_path / "disk"
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs (a disk to fill) needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(folder)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path, leave_bytes: int = 0) -> Path:
    """Fill the filesystem of ``folder`` up to ``leave_bytes`` free with one file."""
    filler = folder / "filler"
    with open(filler, "wb") as sink:
        chunk = b"\0" * 2**20
        try:
            while shutil.disk_usage(folder).free - leave_bytes >= len(chunk):
                sink.write(chunk)
                sink.flush()
            sink.write(b"\0" * max(shutil.disk_usage(folder).free - leave_bytes, 0))
            sink.flush()
        except OSError:  # full
            pass
    return filler


@pytest.mark.parametrize("existing", [False, True], ids=["new store", "store holding runs"])
def test_run_on_a_full_disk_is_refused_before_any_work(existing, small_disk, tmp_path, tiny_octis, capsys):
    database = small_disk / "mlflow.db"
    if existing:
        make_store(database, runs=2)
    fill(small_disk, leave_bytes=200_000)
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG.format(corpus=tiny_octis))
    before = {p.name: _digest(p) for p in small_disk.iterdir() if p.name != "filler"}
    started = time.monotonic()
    code = main(["run", str(config), "--tracking-uri", f"sqlite:///{database}", "--no-report"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "Traceback" not in "\n".join(err)
    assert err[-1].startswith("topicbench: error: the disk holding the tracking database") and "MB free" in err[-1], err[-1]
    assert "free some space, or give a --tracking-uri on another disk" in err[-1]
    assert {p.name: _digest(p) for p in small_disk.iterdir() if p.name != "filler"} == before
    assert time.monotonic() - started < 30
    if existing:  # reading needs no room: the report of a store on a full disk is still written
        out = tmp_path / "report"
        assert main(["report", "--experiment", "kept", "--tracking-uri", f"sqlite:///{database}", "--out", str(out)]) == 0
        assert (out / "report.md").is_file()
