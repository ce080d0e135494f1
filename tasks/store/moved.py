"""A sqlite store that was copied or moved, with its artifact folder, works where it lands.

topicbench keeps a sqlite store's artifacts beside it, in ``<store folder>/mlartifacts/<experiment>``
(:func:`~topicbench.tasks.store.tracking.local_artifact_location`), but MLflow records where they are
as absolute URIs: the experiment's ``artifact_location``, each run's ``artifact_uri``, each
logged model's and each trace's. Copied elsewhere, a store would read the original's artifacts
(or none, once the original is gone) and write new ones, such as a report's, into the original.

:func:`follow_moved_store` runs each time a command opens a store (it is called by
:func:`~topicbench.tasks.store.checks.check_tracking_uri`, which every command and every
:class:`~topicbench.tasks.store.tracking.Tracker` goes through): an experiment whose artifacts are
recorded in another folder's ``mlartifacts/`` is re-pointed to this store's own, in one
transaction, and one log line says so. Where finished runs' artifacts are missing here (the
database was copied alone), one line in every command says which folder to copy where; nothing is
ever read from or written to the original's place again.
Any other artifact location (a server's, an object store's, one chosen by hand) is left alone.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

logger = logging.getLogger(__name__)

#: The folder beside a sqlite store that holds its experiments' artifacts.
ARTIFACTS_FOLDER = "mlartifacts"
#: The experiment tag that keeps where its artifacts were before the store last moved, so that
#: every later command can still say which folder to copy while runs' artifacts are missing.
MOVED_FROM_TAG = "topicbench.artifacts_moved_from"
#: MLflow's tag of a trace that holds the trace's artifact location.
TRACE_LOCATION_TAG = "mlflow.artifactLocation"

#: ``extra=`` of the line saying a store was re-pointed: the console shows it at the default
#: verbosity (the marker of ``flows/console.py``'s ``CONSOLE``, which ``tasks`` does not import),
#: since a user who copied a store should see, once, that the copy now keeps its own artifacts.
ON_THE_CONSOLE = {"topicbench_console": True}

_told = set()  # (database, experiment) pairs whose missing artifacts this process has named


@dataclass(frozen=True)
class Move:
    """One experiment's artifact location, from the folder it was made in to this store's."""

    experiment_id: int
    experiment: str
    old: str
    new: str
    folder: Path


def follow_moved_store(database, timeout: float = 5.0) -> list:
    """Re-point the experiments of the MLflow sqlite database file ``database`` whose artifacts
    are recorded in another folder's ``mlartifacts/`` to the one beside this database, and name
    each moved experiment whose runs' artifacts are missing here; the :class:`Move` list (empty
    for a store that never moved). Changes nothing else."""
    database = Path(database).resolve()
    if not database.is_file():
        return []
    home = database.parent / ARTIFACTS_FOLDER
    with closing(sqlite3.connect(f"{database.as_uri()}?mode=rw", uri=True, timeout=timeout,
                                 isolation_level=None)) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"experiments", "runs", "experiment_tags"} <= tables:
            return []
        moves = _moves(connection, home)
        if moves:
            connection.execute("BEGIN IMMEDIATE")  # read again under the write lock: another process may be first
            try:
                moves = _moves(connection, home)
                for move in moves:
                    _repoint(connection, tables, move)
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        stranded = _stranded_runs(connection)
    if moves:
        _forget_cached_locations()
    for move in moves:
        logger.info("the tracking store %s was copied or moved: experiment %r now keeps its artifacts beside it, in "
                    "%s (was %s)", database, move.experiment, move.folder, _local_path(move.old), extra=ON_THE_CONSOLE)
    for (experiment, old, new), (missing, finished) in stranded.items():
        if (database, experiment) not in _told:  # once a process
            _told.add((database, experiment))
            logger.warning("experiment %r of the tracking store %s: %d of its %d finished runs have no artifacts beside "
                           "it; copy %s (from where the store was before) to %s, and until then its reports lack the runs' "
                           "topics and stability", experiment, database, missing, finished, _local_path(old) or old,
                           _local_path(new) or new)
    return moves


def _moves(connection, home: Path) -> list:
    """The experiments whose artifact location is another folder's ``mlartifacts/<name>``, as
    topicbench makes it; a location of another making (a server's ``mlartifacts/<id>``) is not ours to move."""
    from topicbench.core.io import file_name_for

    found = []
    rows = connection.execute("SELECT experiment_id, name, artifact_location FROM experiments").fetchall()
    for experiment_id, name, location in rows:
        path = _local_path(location)
        if path is None or path.parent.name != ARTIFACTS_FOLDER or path.name != file_name_for(name):
            continue
        if path.parent == home or path.parent.resolve() == home.resolve():  # here (or here through a link)
            continue
        folder = home / path.name
        found.append(Move(experiment_id, name, location, folder.as_uri(), folder))
    return found


def _repoint(connection, tables: set, move: Move) -> None:
    """Every location MLflow recorded under ``move.old`` (the experiment's, its runs', logged
    models' and traces'), now under ``move.new``; the old one kept as :data:`MOVED_FROM_TAG`."""
    connection.execute("UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?",
                       (move.new, move.experiment_id))
    queries = [("runs", "run_uuid", "artifact_uri", "experiment_id = ?")]
    if "logged_models" in tables:
        queries.append(("logged_models", "model_id", "artifact_location", "experiment_id = ?"))
    if {"trace_tags", "trace_info"} <= tables:
        queries.append(("trace_tags", "request_id", "value", f"key = '{TRACE_LOCATION_TAG}' AND request_id IN "
                        "(SELECT request_id FROM trace_info WHERE experiment_id = ?)"))
    for table, key, column, where in queries:
        rows = connection.execute(f"SELECT {key}, {column} FROM {table} WHERE {where}", (move.experiment_id,)).fetchall()
        changed = [(move.new + value[len(move.old):], row_key) for row_key, value in rows
                   if value and (value == move.old or value.startswith(move.old + "/"))]
        extra = f" AND key = '{TRACE_LOCATION_TAG}'" if table == "trace_tags" else ""
        connection.executemany(f"UPDATE {table} SET {column} = ? WHERE {key} = ?{extra}", changed)
    # where it was before this move: where its artifacts are, when they were not copied along
    connection.execute("INSERT OR REPLACE INTO experiment_tags (key, value, experiment_id) VALUES (?, ?, ?)",
                       (MOVED_FROM_TAG, move.old, move.experiment_id))


def _forget_cached_locations() -> None:
    """Drop the artifact repositories MLflow's client keeps per run id in this process: one made
    before the move would still write into the original's folder."""
    utils = sys.modules.get("mlflow.tracking._tracking_service.utils")  # not imported: nothing cached
    cache = getattr(utils, "_artifact_repos_cache", None)
    if cache is not None:
        cache.clear()


def _stranded_runs(connection) -> dict:
    """{(experiment, old location, location): (finished runs without their artifact folder, finished
    runs)} of the moved experiments (:data:`MOVED_FROM_TAG`) that lack some runs' artifacts here."""
    found = {}
    moved = connection.execute(
        "SELECT e.experiment_id, e.name, t.value, e.artifact_location FROM experiments e JOIN experiment_tags t "
        "ON t.experiment_id = e.experiment_id WHERE t.key = ?", (MOVED_FROM_TAG,)).fetchall()
    for experiment_id, name, old, new in moved:
        # a finished run always has artifacts (a fit's topics, a parent's config)
        uris = [row[0] for row in connection.execute(
            "SELECT artifact_uri FROM runs WHERE experiment_id = ? AND status = 'FINISHED' AND lifecycle_stage = "
            "'active'", (experiment_id,))]
        missing = sum(1 for uri in uris if (path := _local_path(uri)) is not None and not path.is_dir())
        if missing:
            found[(name, old, new)] = (missing, len(uris))
    return found


def _local_path(location: str | None) -> Path | None:
    """The absolute local path of a ``file:`` URI or a plain absolute path; None for anything else."""
    if not location:
        return None
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme == "" and Path(location).is_absolute():
        return Path(location)
    return None
