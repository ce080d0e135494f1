"""Dask execution of parallel E-LDA's shard rounds.

The candidate matrix is scattered once to every worker (broadcast); each shard's documents are
scattered once to one worker and its state stays there as a future between rounds. Only round
summaries (the links accepted) come back to the driver. A user who outgrows one machine passes a
scheduler address instead of starting a ``LocalCluster``; nothing else changes.
"""

from __future__ import annotations

import logging
import operator
import os
import tempfile

import numba

logger = logging.getLogger(__name__)


def _call_on_worker(function, candidates, shard, state, *args):
    """Run a shard function with numba and BLAS threads set to the worker's thread count."""
    from distributed import get_worker
    from threadpoolctl import threadpool_limits

    worker = get_worker()
    threads = getattr(getattr(worker, "state", worker), "nthreads", 1) or 1
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    with threadpool_limits(limits=threads):
        return function(candidates, shard, state, *args)


class DaskShards:
    """Shard executor on a Dask cluster.

    Parameters
    ----------
    scheduler : str, optional
        Address of an existing scheduler (``tcp://host:8786``). Without it a ``LocalCluster`` of
        ``n_workers`` processes (one thread each) starts on 127.0.0.1 and stops on ``close``.
    n_workers : int, optional
        Workers of the local cluster (default: the number of cores).
    client : distributed.Client, optional
        Use this client as it is (it is not closed).
    connect_timeout : float
        Seconds to wait for ``scheduler`` before failing with ``ConnectionError``.
    """

    def __init__(
        self, scheduler: str | None = None, *, n_workers: int | None = None, client=None,
        connect_timeout: float = 20.0,
    ):
        from distributed import Client, LocalCluster

        self._own_client = client is None
        self._cluster = None
        if client is None:
            if scheduler:
                try:
                    client = Client(scheduler, timeout=f"{connect_timeout}s")
                except (OSError, TimeoutError) as error:
                    raise ConnectionError(f"cannot reach the Dask scheduler at {scheduler}: {error}") from error
            else:
                self._cluster = LocalCluster(
                    n_workers=n_workers or os.cpu_count() or 1,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                    local_directory=tempfile.gettempdir(),  # keep dask-scratch-space out of the repo
                )
                client = Client(self._cluster)
        self.client = client
        self.n_workers = max(1, len(client.scheduler_info()["workers"]))

    def start(self, candidates, shards: list) -> None:
        """Scatter the candidates to every worker and each shard to one worker."""
        client = self.client
        workers = sorted(client.scheduler_info()["workers"])
        self.n_workers = max(1, len(workers))
        self._candidates = client.scatter(candidates, broadcast=True)
        self._home = [workers[i % len(workers)] for i in range(len(shards))]
        self._shards = [client.scatter(shard, workers=[home]) for shard, home in zip(shards, self._home)]
        self._states = [None] * len(shards)

    def run(self, function, *args, per_shard_args=None) -> list:
        client = self.client
        results = []
        for i, (shard, home) in enumerate(zip(self._shards, self._home)):
            extra = per_shard_args[i] if per_shard_args is not None else ()
            results.append(
                client.submit(
                    _call_on_worker, function, self._candidates, shard, self._states[i], *args, *extra,
                    workers=[home], allow_other_workers=True, pure=False,
                )
            )
        states = [client.submit(operator.itemgetter(0), r, workers=[h], allow_other_workers=True, pure=False) for r, h in zip(results, self._home)]
        summaries = [client.submit(operator.itemgetter(1), r, pure=False) for r in results]
        gathered = client.gather(summaries)
        self._states = states
        return gathered

    def close(self) -> None:
        self._states = []
        self._shards = []
        self._candidates = None
        if self._own_client:
            self.client.close()
            if self._cluster is not None:
                self._cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
