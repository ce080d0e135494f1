"""The one thread limiter: numba's and the BLAS/OpenMP pools' threads, held for a block of code.

Used where work runs inside a Dask worker (a shard round, a model fit and its scoring) so that a
worker with ``nthreads`` threads uses that many cores.
"""

from __future__ import annotations

import contextlib

import numba
from threadpoolctl import threadpool_limits


@contextlib.contextmanager
def thread_limit(threads: int):
    """Hold numba's and the BLAS/OpenMP pools' (torch's included) threads to ``threads`` in the block.

    numba's thread count is restored on leaving; ``threadpoolctl`` restores the pools'.
    """
    with numba_thread_limit(threads), threadpool_limits(limits=int(threads)):
        yield


@contextlib.contextmanager
def numba_thread_limit(threads: int):
    """Hold numba's threads to ``threads`` in the block (restored on leaving).

    For code that calls numba kernels and no BLAS, such as a parallel E-LDA shard round: it costs
    nothing, where :func:`thread_limit`'s ``threadpoolctl`` pass re-reads every loaded library
    (about 1 ms, several on busy cores), once per round on the rounds' critical path.
    """
    previous = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def dask_worker_threads() -> int | None:
    """The thread count of the Dask worker running this code, or None outside a Dask worker."""
    try:
        # imported here for its import cost: dask is only needed when running on a cluster
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return None
    return worker_nthreads(worker)


def worker_nthreads(worker) -> int:
    """A Dask worker's thread count (``worker.state.nthreads`` in recent ``distributed``)."""
    return getattr(getattr(worker, "state", worker), "nthreads", 1) or 1


@contextlib.contextmanager
def worker_threads():
    """Inside a Dask worker, :func:`thread_limit` to the worker's threads; elsewhere nothing."""
    threads = dask_worker_threads()
    if threads is None:
        yield
        return
    with thread_limit(threads):
        yield
