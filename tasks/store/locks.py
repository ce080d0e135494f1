"""Locks of a whole tracking store: sqlite's lock file beside its database, PostgreSQL's advisory
locks. Store creation, run claims and bundle imports each serialise through them."""

from __future__ import annotations

import contextlib

from topicbench.tasks.store.checks import lock_file_of, sqlite_path, uri_scheme
from topicbench.tasks.store.tracking_error import TrackingError

#: How long a process waits for the lock of a sqlite store held by another.
STORE_LOCK_SECONDS = 300.0
#: The key of the PostgreSQL advisory lock that :func:`creation_lock` takes.
CREATION_LOCK_KEY = 7_242_019_511


@contextlib.contextmanager
def store_lock(uri: str, timeout: float = STORE_LOCK_SECONDS):
    """Hold the lock file beside a sqlite database (``mlflow.db.lock``); no lock for other stores.

    Serialises what must not interleave between processes on one database: creating it and its
    schema migration, creating an experiment, and claiming runs.
    """
    path = sqlite_path(uri)
    if path is None:
        yield
        return
    from filelock import FileLock, Timeout

    lock = FileLock(str(lock_file_of(path)))
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        raise TrackingError(
            f"another process has held the lock {lock.lock_file} of the tracking database for {timeout:.0f} s; "
            f"if no topicbench process is running, delete that file"
        ) from None
    try:
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def creation_lock(uri: str):
    """Serialise what MLflow does unguarded when a process opens a store: creating a new
    database's tables and migrating them (two processes doing it at once fail), and creating the
    experiment. sqlite: :func:`store_lock`; PostgreSQL: an advisory lock, held by one connection
    for the block (the database drops it if the process dies); a server: none (it creates its
    database itself)."""
    with store_wide_lock(uri, CREATION_LOCK_KEY):
        yield


@contextlib.contextmanager
def store_wide_lock(uri: str, key: int):
    """One lock of the whole store for the block: sqlite's lock file (:func:`store_lock`), or on
    PostgreSQL the advisory lock ``key`` (a signed 64-bit number), held by one connection (the
    database drops it if the process dies). An MLflow server: none (it guards its database itself).
    Store creation and bundle import each take it with their own key."""
    if uri_scheme(uri) != "postgresql":
        with store_lock(uri):
            yield
        return
    import sqlalchemy
    from sqlalchemy.pool import NullPool

    engine = sqlalchemy.create_engine(uri, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            connection.exec_driver_sql(f"SELECT pg_advisory_lock({int(key)})")
            try:
                yield
            finally:
                connection.exec_driver_sql(f"SELECT pg_advisory_unlock({int(key)})")
    finally:
        engine.dispose()
