"""The one way topicbench starts a local Dask cluster or connects to a scheduler.

Shared by parallel E-LDA's shard executor (:mod:`.dask_shards`) and the benchmark's Dask task
runner (``flows/runtime.py``), so both start the same cluster: worker processes with one thread
each on 127.0.0.1, no dashboard (Dask's ``/health`` and ``/metrics`` still answer, on 127.0.0.1
only, on a free port), scratch space in the temporary folder. Nothing here imports Dask
at module import: only a caller that starts a cluster pays for it.

This module is also the local workers' preload: :func:`dask_setup` runs in each worker process
and keeps a shutdown-time heartbeat error off the console (:class:`ClosingHeartbeatFilter`).
"""

from __future__ import annotations

import logging
import os
import tempfile
import weakref

#: Seconds a Dask client waits for the scheduler given by address before failing.
CLIENT_CONNECT_TIMEOUT = 20.0

#: Seconds a run waits for a worker when every worker is gone (a nanny restarting a killed one,
#: a job scheduler starting a new one) before failing.
WORKER_WAIT_SECONDS = 60.0


#: Dask settings of the workers a local cluster starts, as dotted keys (each nanny adds them to
#: this process's settings, top-level keys only, and the worker sets them). Without a dashboard
#: nothing shows the workers' statistical profiler, which samples every thread's stack every
#: 10 ms: CPU taken from the computing thread when every core is busy.
LOCAL_WORKER_CONFIG = {"distributed.worker.profile.enabled": False}


def local_cluster_options(n_workers: int | None = None) -> dict:
    """Keyword arguments of ``distributed.LocalCluster`` for a local cluster of ``n_workers``
    single-threaded worker processes (default: one per core)."""
    import dask  # the user's preloads are kept; a caller starting a cluster imports dask anyway

    return {
        "n_workers": n_workers or os.cpu_count() or 1,
        "threads_per_worker": 1,
        "processes": True,
        "host": "127.0.0.1",
        # no dashboard, and Dask's /health and /metrics on a free port (None would still take
        # 8787, and a second benchmark on this machine would print Dask's "already in use" warning)
        "dashboard_address": "127.0.0.1:0",
        "local_directory": tempfile.gettempdir(),  # keep dask-scratch-space out of the repo
        "config": LOCAL_WORKER_CONFIG,  # to each worker's nanny
        "preload": [*dask.config.get("distributed.worker.preload", default=[]), __name__],  # dask_setup, below
    }


def start_local_cluster(n_workers: int | None = None):
    """A running ``distributed.LocalCluster`` with :func:`local_cluster_options`; close it when done."""
    # imported here for its import cost: dask is only needed when running on a cluster
    from distributed import LocalCluster

    return LocalCluster(**local_cluster_options(n_workers))


def connect_scheduler(address: str, *, timeout: float = CLIENT_CONNECT_TIMEOUT):
    """A ``distributed.Client`` of the scheduler at ``address``.

    Raises ``ConnectionError`` when nothing answers within ``timeout`` seconds, or when what
    answers is not a Dask scheduler.
    """
    from distributed import Client  # for its import cost, as above

    try:
        return Client(address, timeout=f"{timeout}s")
    except (OSError, TimeoutError) as error:
        raise ConnectionError(f"cannot reach the Dask scheduler at {address}: {error}") from error
    except Exception as error:  # something answered, but not Dask's protocol (garbage sizes, ...)
        raise ConnectionError(
            f"{address} answered, but not as a Dask scheduler ({type(error).__name__}: "
            f"{str(error)[:200]}); give the address `dask scheduler` prints"
        ) from error


class ClosingHeartbeatFilter(logging.Filter):
    """Drops a worker's "Failed to communicate with scheduler during heartbeat." once it is closing.

    ``Worker.close`` closes the worker's connections while a heartbeat may still wait for the
    scheduler's answer; that heartbeat then fails with ``CommClosedError``, logged with its
    traceback by the worker process, after the command's last line (the scheduler of a local
    cluster answers late when its process is busy shutting down). A heartbeat that fails while the
    worker runs is still logged.
    """

    MESSAGE = "Failed to communicate with scheduler during heartbeat."

    def __init__(self, worker):
        super().__init__()
        self._worker = weakref.ref(worker)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != self.MESSAGE:
            return True
        from distributed.core import Status  # imported already: this runs in a worker

        worker = self._worker()
        return worker is not None and worker.status in (Status.running, Status.paused)


def dask_setup(worker) -> None:
    """Dask's preload hook, run in each worker process of a local cluster started here."""
    logging.getLogger("distributed.worker").addFilter(ClosingHeartbeatFilter(worker))
