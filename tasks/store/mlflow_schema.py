"""MLflow's database schema: the tables that make a database MLflow's, and the schema revisions.

A database records its revision in ``alembic_version`` (:func:`schema_revision`); the installed
MLflow's own are read from its migration scripts (:func:`mlflow_schema_revisions`).
:func:`~topicbench.tasks.store.checks.check_mlflow_schema` compares the two before a store is used.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from topicbench.tasks.store.tracking_error import TrackingError

#: MLflow's tables that make a database an MLflow store (with ``alembic_version``).
MLFLOW_TABLES = {"experiments", "runs", "alembic_version"}
#: The tables MLflow creates first in a new database, before it migrates them and records the
#: schema revision: a database holding them without a revision is MLflow's, being created.
MLFLOW_INITIAL_TABLES = {"experiments", "runs", "tags", "metrics", "params"}


def schema_revision(execute, tables) -> str | None:
    """The MLflow schema revision a database records (``alembic_version``), or None where it
    records none; ``execute(sql)`` returns the rows of a query, ``tables`` are its table names."""
    if "alembic_version" not in tables:
        return None
    rows = list(execute("SELECT version_num FROM alembic_version"))
    return rows[0][0] if len(rows) == 1 else None


@functools.lru_cache(maxsize=1)
def mlflow_schema_revisions() -> tuple:
    """(head revision, every revision) of the installed MLflow's database migrations, read from the
    migration scripts' ``revision``/``down_revision`` lines (alembic's own parser takes ~2 s)."""
    import importlib.util

    package = Path(importlib.util.find_spec("mlflow").submodule_search_locations[0])
    assignment = re.compile(r"^(down_revision|revision)\b[^=]*=\s*(.+)$", re.MULTILINE)
    revisions, parents = set(), set()
    for script in (package / "store" / "db_migrations" / "versions").glob("*.py"):
        for name, value in assignment.findall(script.read_text(encoding="utf-8")):
            ids = set(re.findall(r"[\"']([0-9a-zA-Z_]+)[\"']", value))
            (parents if name == "down_revision" else revisions).update(ids)
    heads = revisions - parents
    if len(heads) != 1:
        raise TrackingError(f"cannot tell the installed MLflow's schema revision (heads {sorted(heads)}): reinstall mlflow")
    return heads.pop(), frozenset(revisions)


def mlflow_version() -> str:
    """The installed MLflow's version."""
    from importlib.metadata import version

    return version("mlflow")
