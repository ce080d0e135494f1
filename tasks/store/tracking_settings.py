"""The environment's tracking settings: their defaults and checks, and topicbench's settings of MLflow's client.

:data:`TRACKING_SETTINGS` lists the settings a tracked run reads (MLflow's HTTP client reads the
``MLFLOW_*`` ones at every call); :func:`check_tracking_settings` checks them before any work
(:func:`~topicbench.tasks.store.checks.check_tracking_uri` calls it), and
:func:`use_tracking_defaults` sets topicbench's defaults of MLflow's client where runs start.
"""

from __future__ import annotations

import logging
import os

from topicbench.tasks.store.tracking_error import TrackingError

#: Environment settings of tracking: (name, default, minimum, what it is). MLflow's HTTP client
#: reads the ``MLFLOW_*`` ones at every call; topicbench sets its own defaults (:func:`use_tracking_defaults`).
TRACKING_SETTINGS = {
    "TOPICBENCH_STALE_RUN_SECONDS": (600.0, 0.0, "seconds without a heartbeat after which a run of another host is stale"),
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": (5, 0, "retries of a tracking server request"),
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": (1, 0, "seconds of the first backoff between tracking server retries"),
    "MLFLOW_HTTP_REQUEST_TIMEOUT": (60, 1, "seconds to wait for a tracking server's answer"),
}


def use_tracking_defaults() -> None:
    """topicbench's settings of MLflow's client, each unless the environment sets it: no progress
    bar of artifact uploads; no "View run ... at: URL" line per ended run on a tracking server
    (two lines a run on the console; the report and the summary line already say where the runs
    are); bounded retries of a server's requests (:data:`TRACKING_SETTINGS`).
    And MLflow's sqlalchemy store, which logs every database error it raises again with its
    traceback (60 lines for a full disk) before the flow handles it and says what happened, is
    heard only with -v. Called where runs start; calling it again changes nothing."""
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    for name in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "MLFLOW_HTTP_REQUEST_TIMEOUT"):
        os.environ.setdefault(name, str(TRACKING_SETTINGS[name][0]))
    logging.getLogger("mlflow.store.db.utils").addFilter(_with_verbose_logging)  # once: a filter is kept once


def _with_verbose_logging(record: logging.LogRecord) -> bool:
    return logging.getLogger().isEnabledFor(logging.DEBUG)


def check_tracking_settings() -> None:
    """Every setting of :data:`TRACKING_SETTINGS` in the environment is a number of its kind."""
    for name in TRACKING_SETTINGS:
        tracking_setting(name)


def tracking_setting(name: str):
    """The value of the environment setting ``name`` (its default when unset), checked."""
    default, minimum, meaning = TRACKING_SETTINGS[name]
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    kind = type(default)
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not value >= minimum or value == float("inf"):
        raise TrackingError(
            f"{name}={text!r} is not {'an integer' if kind is int else 'a number'} >= {minimum:g} ({meaning}): "
            f"set it to e.g. {default}, or unset it"
        )
    return value
