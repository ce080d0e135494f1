"""Whether a tracking store can be used, told before any work and without changing what it holds.

Every command checks its store here first (:func:`check_tracking_uri`): the URI's scheme, a
tracking server's ``/health``, a sqlite database's file, integrity (``PRAGMA quick_check``) and
owner (MLflow's tables, or none yet), a PostgreSQL database's connection, the schema revision of
an MLflow database against the installed MLflow's (:mod:`.mlflow_schema`), and the environment's
tracking settings (:mod:`.tracking_settings`). A problem raises
:class:`~topicbench.tasks.store.tracking_error.TrackingError`, whose message names the store and
the fix: the CLI prints it as one line. Once runs are under way, :func:`store_unavailable` tells a
store that is gone or full from one call that was wrong. The one change a check makes is
:mod:`.moved`'s: a copied sqlite store uses its own artifacts.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from urllib.parse import urlparse

from topicbench.core.io import sqlite_path  # noqa: F401 (the stores' callers read it here)
from topicbench.core.io import can_write_in

from topicbench.tasks.store.interrupts import exception_chain
from topicbench.tasks.store.mlflow_schema import (
    MLFLOW_INITIAL_TABLES, MLFLOW_TABLES, mlflow_schema_revisions, mlflow_version, schema_revision,
)
from topicbench.tasks.store.tracking_error import TrackingError
from topicbench.tasks.store.tracking_settings import check_tracking_settings

#: Schemes of the stores topicbench tracks runs in: a sqlite file, a PostgreSQL database (its
#: driver, psycopg, is a dependency), an MLflow tracking server.
SERVER_SCHEMES = ("http", "https")
#: Databases MLflow supports but topicbench installs no driver for: used through an MLflow server.
SERVED_ONLY_SCHEMES = {"mysql": "MySQL", "mssql": "SQL Server"}
#: The least free space on a sqlite store's disk a benchmark starts with: room for the database's
#: journal and a few runs' artifacts (written beside it); a full disk fails the first write.
MIN_FREE_MEGABYTES = 16
#: How long a check waits for another process that creates or migrates a new sqlite store.
CREATION_WAIT_SECONDS = 300.0


def check_tracking_uri(uri: str, timeout: float = 5.0) -> None:
    """Fail fast, before any work and without creating anything, if runs cannot be tracked at
    ``uri``. The one change it makes: a sqlite store that was copied or moved is re-pointed to the
    artifact folder beside it (:func:`~topicbench.tasks.store.moved.follow_moved_store`).

    Parameters
    ----------
    uri : str
        An MLflow tracking URI: ``sqlite:///PATH``, ``postgresql://USER@HOST:PORT/DATABASE`` or
        ``http(s)://HOST:PORT`` of an MLflow server.
    timeout : float, default 5.0
        Seconds to wait for a server's ``/health``, a database's connection or a locked sqlite file.

    Raises
    ------
    TrackingError
        The scheme is unsupported (a plain path or ``file:`` store, which MLflow 3 refuses unless
        ``MLFLOW_ALLOW_FILE_STORE=true``; MySQL and SQL Server, which need an MLflow server in front;
        sqlite in memory), the server or database does not answer, the sqlite file or its folder
        is not writable, the database is damaged, belongs to another application or has another
        MLflow's schema, or a tracking setting of the environment is malformed
        (:func:`~topicbench.tasks.store.tracking_settings.check_tracking_settings`). The message names the URI or path and the fix.
    """
    if not isinstance(uri, str) or not uri.strip():
        raise TrackingError(f"the tracking URI must be a non-empty string, got {uri!r}")
    check_tracking_settings()
    scheme = uri_scheme(uri)
    if scheme in SERVER_SCHEMES:
        check_server(uri, timeout)
    elif scheme == "sqlite":
        _check_sqlite(uri, timeout)
    elif scheme == "postgresql":
        _check_database(uri, timeout)
    elif scheme in SERVED_ONLY_SCHEMES:
        raise TrackingError(
            f"{SERVED_ONLY_SCHEMES[scheme]} stores are used through an MLflow server (topicbench installs no "
            f"{SERVED_ONLY_SCHEMES[scheme]} driver): start one on it, `mlflow server --backend-store-uri {_hidden(uri)} "
            f"--host 127.0.0.1 --port 5000`, and give --tracking-uri http://127.0.0.1:5000"
        )
    elif scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt"):
        _check_file_store(uri)
    else:
        raise TrackingError(
            f"unsupported tracking URI {uri!r}: give sqlite:///PATH/mlflow.db, postgresql://USER@HOST:PORT/DATABASE, "
            f"or http(s)://HOST:PORT of an MLflow server"
        )


def uri_scheme(uri: str) -> str:
    """The scheme of ``uri`` without its driver (``postgresql+psycopg`` -> ``postgresql``), lower case."""
    return urlparse(uri).scheme.split("+", 1)[0].lower()


def check_server(uri: str, timeout: float) -> None:
    """The MLflow server at ``uri`` answers ``/health`` within ``timeout`` seconds."""
    import requests

    try:
        response = requests.get(uri.rstrip("/") + "/health", timeout=timeout)
        response.raise_for_status()
    except requests.RequestException as error:
        raise TrackingError(
            f"the MLflow tracking server at {uri} is unreachable: {error} "
            f"(start it with `mlflow server`, or give another --tracking-uri)"
        ) from None


# -- sqlite -------------------------------------------------------------------------------------


def _check_sqlite(uri: str, timeout: float) -> None:
    """The database (when it exists) is writable, sound, and MLflow's of this schema, or has no
    tables yet; otherwise its folder can be made and written. Opens the file without creating it."""
    path = sqlite_path(uri)
    if path is None:
        if ":memory:" in uri:
            raise TrackingError(
                f"the tracking URI {uri!r} keeps the runs in memory: every result would vanish when the command "
                f"ends; give a file, e.g. sqlite:///results/mlflow.db"
            )
        raise TrackingError(f"the tracking URI {uri!r} names no database file: give sqlite:///PATH/mlflow.db")
    if path.is_dir():
        raise TrackingError(f"the tracking database {path} is a folder: give a file, e.g. sqlite:///{path / 'mlflow.db'}")
    if path.exists():
        if not os.access(path, os.R_OK | os.W_OK):
            raise TrackingError(f"the tracking database {path} is not writable: fix its permissions or give another --tracking-uri")
        if not can_write_in(path.parent):
            raise TrackingError(
                f"the folder {path.parent} of the tracking database is not writable (sqlite writes its journal "
                f"there): fix its permissions or give another --tracking-uri"
            )
        tables, revision = _inspect_sqlite(path, timeout)
        if tables and revision != mlflow_schema_revisions()[0]:  # half made, or being migrated right now?
            _wait_for_creation(path)
            tables, revision = _inspect_sqlite(path, timeout)
        check_mlflow_schema(tables, revision, f"the tracking database {path}", uri)
        from topicbench.tasks.store.moved import follow_moved_store

        follow_moved_store(path, timeout)  # a copied store's artifacts: its own, never the original's
        return
    existing = next(folder for folder in [path.parent, *path.parent.parents] if folder.exists())
    if not existing.is_dir() or not can_write_in(existing):
        raise TrackingError(
            f"cannot create the tracking database {path}: {existing} is not a writable folder "
            f"(give a --tracking-uri sqlite:///PATH in a writable folder)"
        )


def _inspect_sqlite(path: Path, timeout: float) -> tuple:
    """(table names, MLflow schema revision or None) of a sound sqlite database; read-write but
    without creating it (``mode=rw``), and changing nothing.

    ``PRAGMA quick_check`` reads every page, so damage anywhere in the file is found before MLflow
    trusts it (random bytes in mid-file pages otherwise leave some queries answering nothing,
    silently). Measured here: 0.04 s for a 31 MB store and 0.08-0.13 s for 113 MB whose pages are
    in the OS cache; a first read from disk is bound by the disk (4 s for those 113 MB).
    """
    recover = (f"restore it from a backup, or recover what is readable with "
               f"`sqlite3 {path} \".recover\" | sqlite3 recovered.db` and give sqlite:///recovered.db")
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=timeout)
        try:
            verdict = [" ".join(row[0].split()) for row in connection.execute("PRAGMA quick_check(5)").fetchall()]
            if verdict != ["ok"]:  # sqlite's findings, on one line
                raise TrackingError(f"the tracking database {path} is damaged ({'; '.join(verdict)[:300]}): {recover}")
            tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            revision = schema_revision(connection.execute, tables)
        finally:
            connection.close()
    except sqlite3.DatabaseError as error:
        if "file is not a database" in str(error) and not _has_sqlite_header(path):
            raise TrackingError(
                f"the tracking database {path} cannot be opened: file is not a database (not sqlite, or its header is "
                f"damaged): if it is an MLflow store, {recover}; otherwise give another --tracking-uri"
            ) from None
        if "locked" in str(error):
            raise TrackingError(f"the tracking database {path} stayed locked for {timeout:g} s: {error}; try again") from None
        raise TrackingError(f"the tracking database {path} is damaged or not a database ({error}): {recover}") from None
    return tables, revision


def lock_file_of(database) -> Path:
    """The lock file beside a sqlite database (``mlflow.db.lock``, ``optuna-studies.db.lock``):
    held while the database is created, and around each run claim of a tracking store."""
    return Path(f"{database}.lock")


def _wait_for_creation(path: Path) -> None:
    """Wait while another process holds the lock beside the database (``mlflow.db.lock``), which
    a process holds while MLflow creates and migrates a new store (:func:`~topicbench.tasks.store.locks.creation_lock`):
    two commands started at once on a new store would otherwise see its schema half migrated and
    call it an older MLflow's. No lock file, no wait (and nothing created)."""
    from filelock import FileLock, Timeout

    lock_file = lock_file_of(path)
    if not lock_file.exists():
        return
    try:
        with FileLock(str(lock_file)).acquire(timeout=CREATION_WAIT_SECONDS):
            pass
    except Timeout:
        raise TrackingError(
            f"the tracking database {path} is not at this MLflow's schema and another process has held its lock "
            f"{lock_file} for {CREATION_WAIT_SECONDS:.0f} s; if no topicbench process is running, delete that file"
        ) from None


def _has_sqlite_header(path: Path) -> bool:
    with open(path, "rb") as database:
        return database.read(16) == b"SQLite format 3\x00"


# -- PostgreSQL ---------------------------------------------------------------------------------


def _check_database(uri: str, timeout: float) -> None:
    """The database answers, and is MLflow's of this schema or has no tables yet."""
    tables, revision = database_tables(uri, timeout)
    check_mlflow_schema(tables, revision, f"the tracking database {_hidden(uri)}", uri)


def database_tables(uri: str, timeout: float = 5.0) -> tuple:
    """(table names, MLflow schema revision or None) of the SQLAlchemy database ``uri``, read with
    one short connection."""
    import sqlalchemy
    from sqlalchemy.pool import NullPool

    try:
        engine = sqlalchemy.create_engine(uri, poolclass=NullPool, connect_args={"connect_timeout": max(1, int(timeout))})
    except (ImportError, sqlalchemy.exc.ArgumentError) as error:
        raise TrackingError(
            f"the tracking URI {_hidden(uri)} needs a database driver that is not installed ({error}): give "
            f"postgresql://USER@HOST:PORT/DATABASE (psycopg, installed with topicbench)"
        ) from None
    try:
        with engine.connect() as connection:
            tables = set(sqlalchemy.inspect(connection).get_table_names())
            revision = schema_revision(lambda sql: connection.exec_driver_sql(sql).fetchall(), tables)
    except sqlalchemy.exc.SQLAlchemyError as error:
        reason = str(getattr(error, "orig", error)).strip().splitlines()[0]
        raise TrackingError(
            f"the tracking database {_hidden(uri)} cannot be reached: {reason} (start the database server, check "
            f"the URI's user, host, port and database, or give another --tracking-uri)"
        ) from None
    finally:
        engine.dispose()
    return tables, revision


def _hidden(uri: str) -> str:
    """``uri`` with its password replaced by ``***``."""
    parsed = urlparse(uri)
    if parsed.password is None:
        return uri
    return uri.replace(f":{parsed.password}@", ":***@", 1)


# -- MLflow's schema ----------------------------------------------------------------------------


def check_mlflow_schema(tables: set, revision: str | None, what: str, uri: str) -> None:
    """A database with no tables (MLflow creates its own), or MLflow's at the installed MLflow's
    schema revision; otherwise a :class:`~topicbench.tasks.store.tracking_error.TrackingError`
    naming what it is and the fix."""
    if not tables:
        return
    if not MLFLOW_INITIAL_TABLES <= tables:
        shown = ", ".join(sorted(tables)[:6]) + (", ..." if len(tables) > 6 else "")
        raise TrackingError(
            f"{what} is not an MLflow store: it holds other tables ({shown}), which topicbench leaves untouched; "
            f"give a new file or database, or an MLflow store, as --tracking-uri"
        )
    head, known = mlflow_schema_revisions()
    if revision is None or revision == head:  # None: another process's MLflow is creating it (under a lock)
        return
    version = mlflow_version()
    if revision in known:
        raise TrackingError(
            f"{what} has the schema of an older MLflow (revision {revision}; MLflow {version} here needs {head}): "
            f"back it up, then upgrade it with `mlflow db upgrade {_hidden(uri)}`"
        )
    raise TrackingError(
        f"{what} was written by a newer MLflow (schema revision {revision}, unknown to MLflow {version} here): "
        f"use that MLflow version (pip install the one that wrote it), or give another --tracking-uri"
    )


# -- file stores, existence, space --------------------------------------------------------------


def _check_file_store(uri: str) -> None:
    from mlflow.environment_variables import MLFLOW_ALLOW_FILE_STORE

    if not MLFLOW_ALLOW_FILE_STORE.get():
        raise TrackingError(
            f"the tracking URI {uri!r} is a file store, which MLflow 3 refuses unless MLFLOW_ALLOW_FILE_STORE=true: "
            f"give sqlite:///PATH/mlflow.db instead"
        )


def tracking_store_exists(uri: str, timeout: float = 5.0) -> bool:
    """Whether ``uri`` names a store that already exists, without creating one.

    sqlite: the database file exists; http(s): the server answers ``/health``; PostgreSQL: the
    database answers and holds MLflow's tables; a file store: its folder exists.
    """
    scheme = uri_scheme(uri)
    if scheme == "sqlite":
        path = sqlite_path(uri)
        return path is not None and path.is_file()
    if scheme in SERVER_SCHEMES:
        try:
            check_server(uri, timeout)
        except TrackingError:
            return False
        return True
    if scheme == "postgresql":
        try:
            return MLFLOW_TABLES <= database_tables(uri, timeout)[0]
        except TrackingError:
            return False
    if scheme in ("", "file"):
        return Path(urlparse(uri).path if scheme == "file" else uri).is_dir()
    return False


def check_free_space(uri: str, megabytes: float = MIN_FREE_MEGABYTES) -> None:
    """A sqlite store's disk has ``megabytes`` free for a benchmark's writes (other stores: their
    server's business)."""
    path = sqlite_path(uri)
    if path is None:
        return
    existing = next((folder for folder in [path.parent, *path.parent.parents] if folder.exists()), None)
    if existing is None:
        return
    free = shutil.disk_usage(existing).free / 2**20
    if free < megabytes:
        raise TrackingError(
            f"the disk holding the tracking database {path} has {free:.1f} MB free, less than the {megabytes:g} MB a "
            f"benchmark needs for the store's journal and the runs' artifacts: free some space, or give a "
            f"--tracking-uri on another disk"
        )


# -- what a store's errors say ------------------------------------------------------------------

#: What a store that is gone or full answers (messages of MLflow, requests, sqlite, psycopg, the OS).
UNAVAILABLE = (
    "Max retries exceeded", "Connection refused", "Failed to establish a new connection", "Connection reset",
    "Connection aborted", "RemoteDisconnected", "timed out", "database or disk is full", "No space left on device",
    "disk I/O error", "unable to open database file", "database disk image is malformed",
    "server closed the connection", "connection is bad", "could not connect to server", "Disk quota exceeded",
)


def store_unavailable(error: BaseException) -> bool:
    """Whether ``error`` (or an error it was raised from) says the store is gone or full, rather
    than that one call was wrong: a server that does not answer, a disk that is full."""
    import errno

    for cause in exception_chain(error):
        if isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if any(text in str(cause) for text in UNAVAILABLE):
            return True
    return False


def store_busy(error: BaseException) -> bool:
    """Whether ``error`` is a database lock that a later try may find released."""
    return "database is locked" in str(error)


def lost_insert_race(error: BaseException) -> bool:
    """Whether ``error`` is a unique constraint that another process's insert of the same row
    violated first (sqlite's or PostgreSQL's words, directly or through a server)."""
    return any(text in str(error) for text in ("UNIQUE constraint failed", "duplicate key value", "IntegrityError"))
