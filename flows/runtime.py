"""Where flows run: Prefect without a server of the user's, and Dask task runners.

Prefect 3 runs flows without a server by starting a temporary one. Dask worker *processes* would
each start their own unless ``PREFECT_API_URL`` points at a real one, so for a process-based Dask
runner we start one API server for the whole benchmark (on 127.0.0.1) and hand its URL to the
flow and to every worker through the environment.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile

logger = logging.getLogger(__name__)


def prefect_defaults() -> None:
    """Quiet, local defaults unless the user set them: no analytics, a patient server start."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_LOGGING_TO_API_ENABLED", "false")


@contextlib.contextmanager
def shared_prefect_server(needed: bool):
    """A Prefect API server shared by the flow and its Dask worker processes (if ``needed`` and
    no ``PREFECT_API_URL`` is set)."""
    if not needed or os.environ.get("PREFECT_API_URL"):
        yield None
        return
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_API_URL, temporary_settings

    server = SubprocessASGIServer()
    server.start(timeout=int(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")))
    os.environ["PREFECT_API_URL"] = server.api_url
    logger.info("Prefect API server for the Dask workers at %s", server.api_url)
    try:
        with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
            yield server.api_url
    finally:
        os.environ.pop("PREFECT_API_URL", None)
        server.stop()


def task_runner(workers: int, scheduler: str | None):
    """Dask on an existing scheduler, a local Dask cluster of worker processes, or in-process."""
    if scheduler:
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(address=scheduler)
    if workers > 1:
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(
            cluster_kwargs={
                "n_workers": workers, "threads_per_worker": 1, "processes": True,
                "host": "127.0.0.1", "dashboard_address": None,
                "local_directory": tempfile.gettempdir(),  # keep dask-scratch-space out of the repo
            }
        )
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner(max_workers=1)


def uses_worker_processes(workers: int, scheduler: str | None) -> bool:
    return bool(scheduler) or workers > 1
