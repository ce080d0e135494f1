"""Parallel E-LDA on a real Dask scheduler whose workers are killed, and the candidates' files that
killed runs leave.

The scheduler and its two workers are real processes on 127.0.0.1, started by the team page's (docs/team.md)
commands (``tests/servers.py``); each worker runs under a nanny, which starts a new worker when
one is killed. A worker is killed with SIGKILL at each stage of a run, at a moment chosen by a
hook (no sleeps), and the run must end with exactly the links and F of a run without a kill.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from servers import dask_scheduler, kill_dask_worker, wait_for_workers  # noqa: F401 (fixture)
from test_parallel import instance
from topicbench.core.elda import parallel
from topicbench.core.elda.parallel import LocalShards, WorkersUnavailable, parallel_elda

pytest.importorskip("distributed")

from topicbench.core.elda.dask_shards import DaskShards  # noqa: E402 (after the skip)

#: Seconds a run with a worker killed may take on a loaded 2-core machine: far less than the 30 s
#: that the scheduler spends retrying a connection to a worker it was told to reach by name.
RECOVERY_SECONDS = 25.0


@pytest.fixture(scope="module")
def problem():
    """39 documents, 13 threshold rounds, and the result without a kill (in this process)."""
    corpus, candidates = instance(2, "raw_umass")
    reference = parallel_elda(corpus, candidates, 3, n_shards=2, seed=0, executor=LocalShards())
    return corpus, candidates, reference


@pytest.fixture
def address(dask_scheduler):
    """The module's scheduler, once both of its workers run (a killed one is replaced)."""
    wait_for_workers(dask_scheduler.url, 2)
    return dask_scheduler.url


def killing_itself(function, victim_pid: int):
    """``function`` made to SIGKILL the worker process ``victim_pid`` when it runs there, in the
    middle of a round (defined here, it travels to the workers by value)."""

    def shard_function(*args):
        if os.getpid() == victim_pid:
            os.kill(victim_pid, signal.SIGKILL)
        return function(*args)

    return shard_function


def kill_in_round(monkeypatch, call: int) -> list:
    """Make the ``call``-th round of a DaskShards (1: FastInitialize) kill one of the shards'
    workers in the middle of its work; returns the list that gets the killed worker's pid."""
    calls, killed = [], []
    run = DaskShards.run

    def run_killing(self, function, *args, **kwargs):
        calls.append(function)
        if len(calls) == call and not killed:
            victim = self._home[0]
            killed.append(self.client.run(os.getpid, workers=[victim])[victim])
            function = killing_itself(function, killed[0])
        return run(self, function, *args, **kwargs)

    monkeypatch.setattr(DaskShards, "run", run_killing)
    return killed


def assert_same_result(solution, reference):
    np.testing.assert_array_equal(solution.links, reference.links)
    assert solution.log_posterior == reference.log_posterior


def run_parallel(executor, problem, **options):
    corpus, candidates, _ = problem
    started = time.monotonic()
    solution = parallel_elda(corpus, candidates, 3, n_shards=2, seed=0, executor=executor, **options)
    return solution, time.monotonic() - started


# -- a worker killed at each stage -------------------------------------------------------------


@pytest.mark.slow
def test_a_worker_killed_while_the_candidates_are_built(address, problem):
    """The executor connected and started the workers' warm-ups; the driver builds candidates."""
    executor = DaskShards(address)
    kill_dask_worker(executor.client, executor._workers()[0])
    solution, seconds = run_parallel(executor, problem)
    assert_same_result(solution, problem[2])
    assert seconds < RECOVERY_SECONDS


@pytest.mark.slow
def test_a_worker_killed_after_start_lists_the_workers(address, problem, monkeypatch):
    """The worker list is read, then a worker is gone before its shard reaches it: the scatter to
    it fails (with KeyError: 'tcp://...' from the scheduler) and the shards are placed again."""
    listed = DaskShards._wait_for_workers
    killed = []

    def list_then_kill(self):
        workers = listed(self)
        if not killed:
            killed.append(kill_dask_worker(self.client, workers[0]))
        return workers

    monkeypatch.setattr(DaskShards, "_wait_for_workers", list_then_kill)
    solution, seconds = run_parallel(DaskShards(address), problem)
    assert killed
    assert_same_result(solution, problem[2])
    assert seconds < RECOVERY_SECONDS


@pytest.mark.slow
def test_a_worker_killed_while_the_shards_are_placed(address, problem, monkeypatch):
    """The placing tasks and the warm-ups are pinned to their workers: one pinned to a worker
    that is gone would wait forever."""
    waited = DaskShards._wait_for
    killed = []

    def kill_then_wait(self, futures, workers):
        if not killed:
            killed.append(kill_dask_worker(self.client, workers[0]))
        return waited(self, futures, workers)

    monkeypatch.setattr(DaskShards, "_wait_for", kill_then_wait)
    solution, seconds = run_parallel(DaskShards(address), problem)
    assert killed
    assert_same_result(solution, problem[2])
    assert seconds < RECOVERY_SECONDS


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["first round", "middle round", "last round"])
def test_a_worker_killed_in_the_middle_of_a_round(address, problem, monkeypatch, stage):
    reference = problem[2]
    last = 1 + len(reference.stats["thresholds"])  # FastInitialize is one call of two rounds
    call = {"first round": 1, "middle round": last // 2, "last round": last}[stage]
    executor = DaskShards(address)
    killed = kill_in_round(monkeypatch, call)
    solution, seconds = run_parallel(executor, problem)
    assert killed, f"the run made fewer than {call} rounds"
    assert_same_result(solution, reference)
    assert solution.stats["recovered_shards"] >= 2
    assert seconds < RECOVERY_SECONDS


@pytest.mark.slow
def test_a_worker_killed_between_rounds_is_not_waited_for(address, problem):
    """The next round goes to the workers the scheduler has: the one removed is missing from the
    answers at once (asked by name, the scheduler would retry connecting to it for 30 s)."""
    executor = DaskShards(address)
    rounds = []

    def kill_after_round_3(made, budget, log_posterior):
        rounds.append(made)
        if len(rounds) == 3:
            kill_dask_worker(executor.client, executor._home[0])

    solution, seconds = run_parallel(executor, problem, on_progress=kill_after_round_3)
    assert len(rounds) > 3
    assert_same_result(solution, problem[2])
    assert seconds < RECOVERY_SECONDS


@pytest.mark.slow
def test_a_worker_killed_after_the_last_round_before_close(address, problem, monkeypatch):
    close = DaskShards.close
    killed = []

    def kill_then_close(self):
        killed.append(kill_dask_worker(self.client, self._home[0]))
        close(self)

    monkeypatch.setattr(DaskShards, "close", kill_then_close)
    executor = DaskShards(address)
    solution, seconds = run_parallel(executor, problem)
    assert killed and executor.client.status == "closed"
    assert_same_result(solution, problem[2])
    assert seconds < RECOVERY_SECONDS


@pytest.mark.slow
def test_a_killed_worker_s_replacement_is_used(address, problem):
    """The nanny starts a new worker (a new address) for the one killed: after the loss the
    shards go to the workers there then, the newcomer included."""
    executor = DaskShards(address)
    rounds, homes = [], []

    def kill_and_wait_for_the_replacement(made, budget, log_posterior):
        rounds.append(made)
        if len(rounds) == 3:
            survivor = (set(executor._home) - {executor._home[0]}).pop()
            kill_dask_worker(executor.client, executor._home[0])
            homes.append(wait_for_workers(address, 2) - {survivor})
        elif len(rounds) == 5:
            homes.append(set(executor._home))

    solution, _ = run_parallel(executor, problem, on_progress=kill_and_wait_for_the_replacement)
    (replacement,), used = homes
    assert replacement in used
    assert_same_result(solution, problem[2])


@pytest.mark.slow
def test_a_worker_lost_while_the_shards_are_rebuilt_is_one_more_recovery(address, problem, monkeypatch):
    """A second worker killed during the rebuild that follows the first loss."""
    executor = DaskShards(address)
    run, rounds, killed = DaskShards.run, [], []

    def run_killing_in_the_rebuild(self, function, *args, **kwargs):
        if function is parallel.rebuild_shard and not killed:
            wait_for_workers(address, 2)  # the first one's replacement, to place the shards again on
            killed.append(kill_dask_worker(self.client, self._home[0]))
        return run(self, function, *args, **kwargs)

    def kill_after_round_3(made, budget, log_posterior):
        rounds.append(made)
        if len(rounds) == 3:
            kill_dask_worker(executor.client, executor._home[0])

    monkeypatch.setattr(DaskShards, "run", run_killing_in_the_rebuild)
    solution, _ = run_parallel(executor, problem, on_progress=kill_after_round_3)
    assert killed
    assert_same_result(solution, problem[2])
    assert solution.stats["recovered_shards"] == 4  # two rebuilds of both shards


# -- every worker gone --------------------------------------------------------------------------


@pytest.mark.slow
def test_with_every_worker_gone_the_run_stops_with_one_line_after_the_wait(tmp_path, problem):
    from servers import running_dask_cluster

    with running_dask_cluster(tmp_path, dict(os.environ), n_workers=1) as scheduler:
        (worker,) = scheduler.extra["workers"]
        executor = DaskShards(scheduler.url, worker_timeout=3)
        rounds = []

        def kill_every_worker_after_round_3(made, budget, log_posterior):
            rounds.append(made)
            if len(rounds) == 3:  # the nanny too, so that no worker comes back
                os.killpg(worker.process.pid, signal.SIGKILL)

        started = time.monotonic()
        with pytest.raises(WorkersUnavailable) as raised:
            run_parallel(executor, problem, on_progress=kill_every_worker_after_round_3)
        seconds = time.monotonic() - started
    assert str(raised.value) == (
        f"every Dask worker of the scheduler at {scheduler.url} is gone and none joined within 3 s: "
        f"start workers (`dask worker {scheduler.url}`) and run again"
    )
    assert seconds < 3 + RECOVERY_SECONDS
    assert executor.client.status == "closed"  # parallel_elda closed what it was given


# -- candidates' files left by killed runs --------------------------------------------------------

#: Writes a candidates' folder as a run does, says where, and waits to be killed.
WRITE_AND_WAIT = """
import sys, time
from pathlib import Path
from topicbench.core.elda.mapped_candidates import new_candidates_directory
folder = new_candidates_directory(Path(sys.argv[1]))
(folder / "values.npy").write_bytes(bytes(1000))
print(folder, flush=True)
time.sleep(600)
"""


def start_writer(folder):
    """A process that wrote a candidates' folder in ``folder``, and the folder."""
    process = subprocess.Popen([sys.executable, "-c", WRITE_AND_WAIT, str(folder)], stdout=subprocess.PIPE, text=True)
    return process, Path(process.stdout.readline().strip())


def test_candidates_left_by_a_killed_run_are_removed_and_a_live_run_s_kept(tmp_path):
    from topicbench.core.elda.mapped_candidates import (
        CANDIDATES_PREFIX,
        new_candidates_directory,
        remove_leftover_candidates,
    )

    killed, killed_folder = start_writer(tmp_path)
    live, live_folder = start_writer(tmp_path)
    try:
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
        mine = new_candidates_directory(tmp_path)
        unowned = tmp_path / f"{CANDIDATES_PREFIX}abc123"  # an older run's name says no owner
        elsewhere = tmp_path / f"{CANDIDATES_PREFIX}0123456789abcdef-{killed.pid}-1-xyz"  # another boot or machine
        unowned.mkdir()
        elsewhere.mkdir()
        assert killed_folder.parent == tmp_path and killed_folder.name.startswith(CANDIDATES_PREFIX)

        assert remove_leftover_candidates([tmp_path]) == [killed_folder]
        assert not killed_folder.exists()
        assert all(p.is_dir() for p in (live_folder, mine, unowned, elsewhere))
        assert (live_folder / "values.npy").stat().st_size == 1000
    finally:
        live.kill()
        live.wait(timeout=30)
    assert remove_leftover_candidates([tmp_path]) == [live_folder]  # once its process is gone


def test_a_reused_pid_does_not_keep_a_killed_run_s_folder(tmp_path):
    """A folder names its process by pid and start time: the same pid started later is another process."""
    from topicbench.core.elda.mapped_candidates import (
        CANDIDATES_PREFIX,
        _process_scope,
        _start_ticks,
        remove_leftover_candidates,
    )

    this = os.getpid()
    earlier = tmp_path / f"{CANDIDATES_PREFIX}{_process_scope()}-{this}-{_start_ticks(this) - 1}-abc"
    earlier.mkdir()
    assert remove_leftover_candidates([tmp_path]) == [earlier]
