"""The local Dask cluster's settings, and what its workers print when it closes."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

#: Starts a local cluster of one worker whose scheduler answers heartbeats 5 s late, so that a
#: heartbeat is in flight when the cluster closes (the race that printed a CommClosedError
#: traceback after a `--workers 2` run's last line, 1 run in 5); prints "closed" after the close.
CLOSE_DURING_A_HEARTBEAT = """
import asyncio, sys, time
from distributed import Client, LocalCluster
from topicbench.core.dask_cluster import local_cluster_options

options = local_cluster_options(1)
if sys.argv[1] == "without-preload":
    options["preload"] = []
with LocalCluster(**options) as cluster:
    answer = cluster.scheduler.handlers["heartbeat_worker"]

    async def late_answer(**kwargs):
        await asyncio.sleep(5)
        return answer(**kwargs)

    cluster.scheduler.handlers["heartbeat_worker"] = late_answer
    with Client(cluster) as client:
        client.run(lambda: None)
        time.sleep(2)  # heartbeats go every second: one is now waiting for its answer
print("closed", flush=True)
"""


def close_during_a_heartbeat(preload: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", CLOSE_DURING_A_HEARTBEAT, preload], capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0 and done.stdout.strip() == "closed", done.stderr[-3000:]
    return done.stderr


@pytest.mark.slow
def test_a_heartbeat_cut_by_the_close_prints_no_traceback():
    from topicbench.core.dask_cluster import ClosingHeartbeatFilter

    # the race, reproduced: without the workers' preload the traceback is printed
    assert ClosingHeartbeatFilter.MESSAGE in close_during_a_heartbeat("without-preload")
    printed = close_during_a_heartbeat("with-preload")
    assert ClosingHeartbeatFilter.MESSAGE not in printed and "Traceback" not in printed, printed


class Worker:
    def __init__(self, status):
        self.status = status


def heartbeat_failure(message: str) -> logging.LogRecord:
    return logging.LogRecord("distributed.worker", logging.ERROR, __file__, 1, message, None, None)


def test_a_heartbeat_failure_is_dropped_only_while_its_worker_closes():
    pytest.importorskip("distributed")
    from distributed.core import Status

    from topicbench.core.dask_cluster import ClosingHeartbeatFilter

    message = ClosingHeartbeatFilter.MESSAGE
    for status, shown in [(Status.running, True), (Status.paused, True), (Status.closing, False), (Status.closed, False)]:
        worker = Worker(status)
        assert ClosingHeartbeatFilter(worker).filter(heartbeat_failure(message)) is shown, status
        assert ClosingHeartbeatFilter(worker).filter(heartbeat_failure("Worker stream died")) is True


def test_local_workers_load_the_closing_heartbeat_filter_and_keep_the_user_s_preloads():
    import dask

    from topicbench.core.dask_cluster import local_cluster_options

    assert local_cluster_options(1)["preload"] == ["topicbench.core.dask_cluster"]
    with dask.config.set({"distributed.worker.preload": ["lab_setup"]}):
        assert local_cluster_options(1)["preload"] == ["lab_setup", "topicbench.core.dask_cluster"]


@pytest.mark.slow
def test_a_local_cluster_listens_on_127_0_0_1_only():
    """Scheduler, nanny and worker: every socket this process and its children listen on."""
    import psutil

    from topicbench.core.dask_cluster import start_local_cluster

    this = psutil.Process()
    before = {c.laddr for c in this.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}
    with start_local_cluster(1) as cluster:
        processes = [this, *this.children(recursive=True)]
        listening = {
            c.laddr for process in processes for c in process.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN
        } - before
        workers = len(cluster.scheduler_info["workers"])
    assert workers == 1 and len(listening) >= 3, listening  # the scheduler, the nanny, the worker
    assert {address.ip for address in listening} == {"127.0.0.1"}, listening


@pytest.mark.slow
def test_two_local_clusters_on_one_machine_start_without_a_port_warning():
    """A second benchmark beside a first (a paper run in the background): no Dask warning on the
    console that a port is taken."""
    import warnings

    from topicbench.core.dask_cluster import start_local_cluster

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with start_local_cluster(1) as first, start_local_cluster(1) as second:
            addresses = {first.scheduler_address, second.scheduler_address}
    assert len(addresses) == 2
    assert not [w for w in caught if "already in use" in str(w.message)], [str(w.message) for w in caught]
