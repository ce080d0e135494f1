"""A new sqlite tracking store, copied from an empty one of the installed MLflow's schema.

MLflow makes a new sqlite store by creating its first tables and then running every migration of
its history, one commit each (about 60 in MLflow 3): 2 s of CPU and 6 to 13 s of wall time on a
busy machine, before a benchmark in a new folder could claim its first fit. The result is the same
empty schema every time, so it is made once per MLflow schema revision, in the user's cache
folder (:func:`template_folder`), by MLflow's own code (``_initialize_tables``, what its store
runs on an empty database), checked, and copied wherever a new store is wanted. Opening the copy,
MLflow finds its tables and revision and adds the ``Default`` experiment with the new store's
artifact root, as it does for a store it made itself. Where the template cannot be made or read
(no writable cache folder, another MLflow), MLflow makes the store as before.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

from topicbench.tasks.store.checks import _inspect_sqlite, sqlite_path
from topicbench.tasks.store.mlflow_schema import MLFLOW_TABLES, mlflow_schema_revisions
from topicbench.tasks.store.tracking_error import TrackingError

logger = logging.getLogger(__name__)

#: Where the templates are kept unless the user's cache folder says otherwise.
TEMPLATE_FOLDER_VARIABLE = "TOPICBENCH_STORE_TEMPLATES"


def template_folder() -> Path:
    """``$TOPICBENCH_STORE_TEMPLATES``, else the user's cache folder (platformdirs when installed,
    else ``$XDG_CACHE_HOME`` or ``~/.cache``) + ``topicbench/mlflow-stores``."""
    configured = os.environ.get(TEMPLATE_FOLDER_VARIABLE)
    if configured:
        return Path(configured).expanduser()
    try:
        import platformdirs
    except ImportError:
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "topicbench" / "mlflow-stores"
    return Path(platformdirs.user_cache_dir("topicbench")) / "mlflow-stores"


def create_from_template(uri: str) -> bool:
    """Create the sqlite store of ``uri`` as a copy of the empty template when it does not exist
    yet; whether it did. The caller holds the store's creation lock
    (:func:`~topicbench.tasks.store.locks.creation_lock`), as MLflow's own creation needs."""
    path = sqlite_path(uri)
    if path is None or path.exists():
        return False
    try:
        template = empty_store_template()
        partial = _new_file(path.parent, f".{path.name}.")
        try:
            shutil.copyfile(template, partial)
            os.replace(partial, path)  # whole or not at all: never a half-copied store
        finally:
            partial.unlink(missing_ok=True)
    except (OSError, TrackingError, ImportError, AttributeError) as error:  # MLflow makes it, as before
        logger.debug("the new store %s is made by MLflow (no empty template: %s)", path, error)
        return False
    logger.debug("new tracking store %s copied from %s", path, template)
    return True


def empty_store_template() -> Path:
    """The empty store of the installed MLflow's schema revision, made on first use (by one
    process at a time: each writes its own file, then renames it into place)."""
    head = mlflow_schema_revisions()[0]
    folder = template_folder()
    template = folder / f"mlflow-empty-{head}.db"
    if template.is_file():
        return template
    folder.mkdir(parents=True, exist_ok=True)
    made = _new_file(folder, f".{template.name}.")
    try:
        made.unlink()  # MLflow creates the database file itself
        _create_empty_store(made)
        tables, revision = _inspect_sqlite(made, timeout=5.0)
        if not MLFLOW_TABLES <= tables or revision != head:
            raise TrackingError(f"the empty store MLflow made has revision {revision}, not {head}")
        os.replace(made, template)
    finally:
        made.unlink(missing_ok=True)
    return template


def _new_file(folder: Path, prefix: str) -> Path:
    """A new empty file of a unique name in ``folder`` (to be renamed into place)."""
    handle, name = tempfile.mkstemp(prefix=prefix, dir=folder)
    os.close(handle)
    return Path(name)


def _create_empty_store(path: Path) -> None:
    """MLflow's tables and migrations in a new database at ``path``, as MLflow's store makes them
    in an empty database (``SqlAlchemyStore.__init__``), without the experiment it adds then."""
    from mlflow.store.db.utils import _initialize_tables, create_sqlalchemy_engine

    engine = create_sqlalchemy_engine(f"sqlite:///{path}")
    try:
        _initialize_tables(engine)
    finally:
        engine.dispose()
