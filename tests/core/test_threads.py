"""The one thread limiter (numba and BLAS pools) and its Dask-worker form."""

from __future__ import annotations

import numba
import pytest

from topicbench.core.threads import dask_worker_threads, numba_thread_limit, thread_limit, worker_threads


def test_thread_limit_holds_numba_threads_in_the_block_and_restores_them():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = numba.get_num_threads()
    with thread_limit(1):
        assert numba.get_num_threads() == 1
        for pool in threadpoolctl.threadpool_info():
            assert pool["num_threads"] == 1, pool
    assert numba.get_num_threads() == before


def test_thread_limit_never_asks_numba_for_more_threads_than_it_has():
    with thread_limit(10**6):
        assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS


def test_thread_limit_restores_threads_after_an_error():
    before = numba.get_num_threads()
    with pytest.raises(RuntimeError):
        with thread_limit(1):
            raise RuntimeError("fit failed")
    assert numba.get_num_threads() == before


def test_numba_thread_limit_holds_numba_threads_only_and_restores_them():
    """The shard rounds' limiter: numba's pool in the block, BLAS pools untouched, restored after an error."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = numba.get_num_threads()
    pools = [pool["num_threads"] for pool in threadpoolctl.threadpool_info()]
    with pytest.raises(RuntimeError):
        with numba_thread_limit(1):
            assert numba.get_num_threads() == 1
            assert [pool["num_threads"] for pool in threadpoolctl.threadpool_info()] == pools
            raise RuntimeError("round failed")
    assert numba.get_num_threads() == before
    with numba_thread_limit(10**6):
        assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS


def test_outside_a_dask_worker_nothing_is_limited():
    assert dask_worker_threads() is None
    before = numba.get_num_threads()
    with worker_threads():
        assert numba.get_num_threads() == before
