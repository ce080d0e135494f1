"""A Dask task whose client is gone stops its fit at the next progress step."""

from __future__ import annotations

import threading
import time

import pytest

from topicbench.tasks.store.abandoned import (
    CHECK_SECONDS,
    FitAbandoned,
    dask_task_abandoned,
    stop_if_abandoned,
)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_the_callback_passes_progress_on_until_the_task_is_abandoned():
    seen, gone, clock = [], [False], Clock()
    on_progress = stop_if_abandoned(lambda *a: seen.append(a), "m@c seed 0", is_abandoned=lambda: gone[0], clock=clock)
    on_progress(1, 10, 0.5)
    gone[0] = True
    on_progress(2, 10)  # looked less than CHECK_SECONDS ago: not yet
    clock.now += CHECK_SECONDS
    with pytest.raises(FitAbandoned, match=r"m@c seed 0: stopped at step 3/10: its Dask task was cancelled"):
        on_progress(3, 10)
    assert seen == [(1, 10, 0.5), (2, 10, None)]


def test_outside_a_dask_worker_nothing_is_abandoned():
    assert dask_task_abandoned() is False


# module-level: a task's function is pickled by reference, and the in-process worker shares these
STARTED, ENDED = threading.Event(), {}


def fake_fit(steps: int) -> int:
    """A fit of ``steps`` progress steps of 20 ms, reporting as a real fit on a worker does."""
    on_progress = stop_if_abandoned(lambda *a: None, "fake@toy seed 0")
    try:
        for step in range(1, steps + 1):
            on_progress(step, steps)
            STARTED.set()
            time.sleep(0.02)
        ENDED["how"] = "finished"
    except FitAbandoned:
        ENDED["how"] = "abandoned"
        raise
    finally:
        ENDED["when"] = time.monotonic()
    return steps


def test_a_fit_on_a_worker_stops_soon_after_its_client_closes():
    distributed = pytest.importorskip("distributed")
    STARTED.clear()
    ENDED.clear()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        client = distributed.Client(cluster)
        future = client.submit(fake_fit, 3000, pure=False)  # 60 s if nobody stops it
        assert STARTED.wait(30)
        del future
        client.close()
        closed = time.monotonic()
        deadline = closed + 20
        while "when" not in ENDED and time.monotonic() < deadline:
            time.sleep(0.05)
    assert ENDED.get("how") == "abandoned", ENDED
    assert ENDED["when"] - closed < CHECK_SECONDS + 5, ENDED
