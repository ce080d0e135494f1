"""A local Dask cluster's worker processes are closed patiently at the end of a run, so Dask never
kills one ("distributed.nanny: Worker process still alive after 4.0 seconds, killing")."""

from __future__ import annotations

import asyncio
import logging

import pytest

from topicbench.flows import runtime


class FakeNanny:
    def __init__(self, log):
        self.log = log

    async def close(self, timeout, reason):
        self.log.append(("start", round(timeout, 6), reason))
        await asyncio.sleep(0.05)
        self.log.append(("end",))


def test_every_worker_process_gets_the_long_wait_and_all_close_at_once():
    log = []
    asyncio.run(runtime.close_worker_processes([FakeNanny(log), FakeNanny(log)], 30.0))
    # a nanny waits 80% of its timeout before killing: 30 s for the process to exit
    assert log[:2] == [("start", 37.5, "benchmark-done")] * 2 and log[2:] == [("end",), ("end",)]


def test_a_local_cluster_runner_closes_its_workers_first_and_drains_prefect_in_them():
    pytest.importorskip("prefect_dask")
    runner = runtime.task_runner(2, None)
    assert type(runner).__name__ == "PatientLocalDaskTaskRunner"
    assert runner.cluster_kwargs["preload"][-1] == "topicbench.flows.runtime"  # its dask_teardown, in each worker
    assert runner.cluster_kwargs["n_workers"] == 2
    assert type(runtime.task_runner(2, "tcp://127.0.0.1:8786")).__name__ == "DaskTaskRunner"  # not ours to close


def test_the_teardown_drains_prefects_queues_quietly(monkeypatch):
    drained = []
    monkeypatch.setattr(runtime, "_drain_prefect_workers", lambda seconds: drained.append(seconds))
    events_logger = logging.getLogger("EventsWorker")
    level = events_logger.level
    try:
        asyncio.run(runtime.dask_teardown(worker=None))
        assert drained == [5.0] and events_logger.level == logging.ERROR
    finally:
        events_logger.setLevel(level)  # this process goes on
