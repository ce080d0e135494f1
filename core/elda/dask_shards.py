"""Dask execution of parallel E-LDA's shard rounds: the :class:`DaskShards` executor.

The candidate matrix reaches every worker once per run: on a cluster this process starts (all
workers on this machine) it is written once to files that every worker memory-maps (in shared
memory when it has room: :func:`candidates_folder`), so the workers share one copy in RAM and
nothing is sent; on any other cluster it is sent to one worker, from which the others fetch it.
Each shard's documents are scattered once to one worker and its state stays there as a
worker-local object between rounds (the driver's ledger of links rebuilds it if that worker is
lost). Only round summaries (the links accepted) come back to the driver; a round sends the
workers a function and a threshold, never arrays.

Rounds run out of band (``Client.run``): one message to each worker through the scheduler and one
answer back. As tasks, a round also went through the scheduler's task bookkeeping and a separate
fetch of each result: 10-16 ms a round with one worker and 20-24 ms with two on 2 cores, against
4-6 ms (measured with 40 ms of work per round). Parallel E-LDA runs tens of rounds, each of tens
of milliseconds, so that was a tenth of a run on reuters and more of it with more workers.

Worker processes start cold: numba's kernels load from the on-disk cache (or compile) on first
use, which took seconds inside the first timed round. Each worker therefore warms its kernels up
once (:func:`.shard_rounds.warm_up_kernels`), all in parallel, starting as soon as the executor
connects, so the warm-up overlaps this process's own work (building the candidates); ``start``
waits for what is left of it before the first round. A user who
outgrows one machine passes a scheduler address instead of starting a ``LocalCluster``; nothing
else changes (:func:`dask_executor`).

Workers may leave at any moment (killed, out of memory, their machine gone) and others join (a
nanny restarting a killed worker). ``start`` places the shards on the workers there at the time
and places them again when one leaves meanwhile; a round that misses a shard's worker raises
:class:`.parallel.ShardStateLost`, and the algorithm starts again from its ledger. No wait here
hangs on a worker that is gone: the waits for tasks pinned to a worker check that it is still
there, rounds go to the workers the scheduler has (a worker named that has left would make the
scheduler retry connecting to it for 30 s), and the wait for a worker when none is left is
bounded (``worker_timeout``).

The candidates' files, where they go and the clean-up of those a killed run left are in
:mod:`.mapped_candidates`.

This module sits beside :mod:`.parallel` and imports only downward (the algorithm never imports
Dask); ``distributed`` itself is imported where a cluster is used, for its import cost.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from topicbench.core.dask_cluster import (
    CLIENT_CONNECT_TIMEOUT,
    WORKER_WAIT_SECONDS,
    connect_scheduler,
    start_local_cluster,
)
from topicbench.core.elda.mapped_candidates import (
    SHARED_MEMORY,
    MappedCandidates,
    candidates_folder,
    new_candidates_directory,
    remove_leftover_candidates,
    unmap,
)
from topicbench.core.elda.parallel import ShardStateLost, WorkersUnavailable
from topicbench.core.elda.shard_rounds import warm_up_kernels
from topicbench.core.threads import numba_thread_limit, worker_nthreads

logger = logging.getLogger(__name__)

#: Seconds between checks that the workers a wait depends on are still there (a task pinned to a
#: worker that has left waits for it forever).
LIVENESS_SECONDS = 0.5
#: Tries at placing the shards while workers leave.
PLACING_TRIES = 3
#: Seconds that dropping a run's data on the workers may take (best effort, at close).
CLEANUP_SECONDS = 10.0

#: What each shard's rounds need on this worker process, by (run token, shard index): the
#: candidates (opened once) and the shard's documents, placed by :meth:`DaskShards.start`.
_PLACED: dict = {}
#: Shard states on this worker process, by (run token, shard index). They stay here between
#: rounds: a round sends a function and a threshold, never arrays.
_SHARD_STATES: dict = {}


def _place_shard(candidates, shard, key) -> None:
    """Keep a shard's documents and the candidates on this worker for the run's rounds (a task
    pinned to the shard's home worker, so Dask delivers the scattered data)."""
    if isinstance(candidates, MappedCandidates):
        candidates = candidates.load()
    _PLACED[key] = (candidates, shard)


async def _run_shards(token, function, args, jobs, dask_worker=None):
    """One round on this worker's shards, run out of band (``Client.run``): ``jobs`` maps worker
    addresses to ``[(shard index, fresh, extra args)]``. The work runs on the worker's own task
    thread, so its event loop keeps answering (heartbeats) through a long round. Returns
    ``[(index, summary)]``, or the index of a shard whose data or state this worker no longer
    has (its memory was lost since the last round): the driver then rebuilds every shard."""
    import asyncio

    mine = jobs.get(dask_worker.address)
    if not mine:  # no shard of this run here (a worker that joined since): answer at once
        return []
    threads = worker_nthreads(dask_worker)
    return await asyncio.get_running_loop().run_in_executor(
        dask_worker.executors["default"], _run_shards_here, token, function, args, mine, threads
    )


def _run_shards_here(token, function, args, jobs, threads):
    done = []
    for index, fresh, extra in jobs:
        placed = _PLACED.get((token, index))
        if placed is None or (not fresh and (token, index) not in _SHARD_STATES):
            return index
        candidates, shard = placed
        with numba_thread_limit(threads):
            state, summary = function(candidates, shard, _SHARD_STATES.get((token, index)), *args, *extra)
        if (token, index) in _PLACED:  # else the run was forgotten while this round ran
            _SHARD_STATES[token, index] = state
        done.append((index, summary))
    return done


def _warm_up_worker() -> float:
    """:func:`.shard_rounds.warm_up_kernels` on this worker, under its thread count (numba's pool
    starts with the threads the rounds will use)."""
    from distributed import get_worker  # runs on a worker: distributed is imported there already

    with numba_thread_limit(worker_nthreads(get_worker())):
        return warm_up_kernels()


def _forget_states(token) -> None:
    # runs on the worker's event loop while a round may be storing states on its task thread:
    # list() copies the keys in one step, so the dict cannot change while they are read
    for key in [k for k in list(_SHARD_STATES) if k[0] == token]:
        _SHARD_STATES.pop(key, None)


def _forget_run(token) -> None:
    """Drop a run's placed data and shard states on this worker (a round still running for the
    run, one that the driver abandoned, then stores no state: see :func:`_run_shards_here`)."""
    for key in [k for k in list(_PLACED) if k[0] == token]:
        _PLACED.pop(key, None)
    _forget_states(token)


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
    memory_map : bool, optional
        Share the candidates through memory-mapped files instead of scattering them. Default: only
        for the local cluster started here (its workers are certain to see this machine's files).
    worker_timeout : float
        Seconds to wait for a worker when every worker is gone, before failing with
        :class:`.parallel.WorkersUnavailable`.
    """

    def __init__(
        self, scheduler: str | None = None, *, n_workers: int | None = None, client=None,
        connect_timeout: float = CLIENT_CONNECT_TIMEOUT, memory_map: bool | None = None,
        worker_timeout: float = WORKER_WAIT_SECONDS,
    ):
        self._own_client = client is None
        self._cluster = None
        self._scheduler = scheduler
        if client is None:
            if scheduler:
                client = connect_scheduler(scheduler, timeout=connect_timeout)
            else:
                from distributed import Client  # for its import cost (see the module docstring)

                self._cluster = start_local_cluster(n_workers)
                client = Client(self._cluster)
        self.client = client
        self.memory_map = self._cluster is not None if memory_map is None else bool(memory_map)
        self.worker_timeout = float(worker_timeout)
        workers = self._workers()
        self.n_workers = max(1, len(workers))
        self._token = None  # names this run's shard states on the workers
        self._home = []  # each shard's worker
        self._mapped = None  # (candidates object, MappedCandidates) written by this executor
        self._warm_ups = {}  # worker address -> future of its kernel warm-up (seconds)
        self.warm_up_seconds = 0.0  # what the last start waited for the workers' warm-ups
        self._warm_up(workers)  # runs while this process builds candidates

    def __repr__(self) -> str:
        where = repr(self._scheduler) if self._scheduler else "local cluster"
        return f"DaskShards({where}, n_workers={self.n_workers})"

    def start(self, candidates, shards: list) -> None:
        """Send the candidates to every worker there now and each shard's documents to one of them.

        A worker that leaves meanwhile is left out: the shards are placed again on the workers
        there then (a replacement included). With no worker at all, waits up to
        ``worker_timeout`` seconds for one, then raises :class:`.parallel.WorkersUnavailable`.
        """
        for attempt in range(1, PLACING_TRIES + 1):
            self._forget()
            workers = self._wait_for_workers()
            try:
                self._place(candidates, shards, workers)
                return
            except Exception as error:  # a worker left (a scatter to it fails with KeyError), or not
                gone = sorted(set(workers) - set(self._workers(running=False)))
                if not gone:
                    raise
                if attempt == PLACING_TRIES:
                    raise WorkersUnavailable(
                        f"Dask workers kept leaving while the shards were placed ({PLACING_TRIES} tries, the last "
                        f"lost {', '.join(gone)}); see why in the workers' logs, then run again"
                    ) from error
                logger.warning(
                    "Dask worker %s left while the shards were placed (%s); placing them again",
                    ", ".join(gone), type(error).__name__,
                )

    def _place(self, candidates, shards: list, workers: list) -> None:
        """One try at placing: the shards go round ``workers``; waits for them and the warm-ups."""
        client = self.client
        self.n_workers = len(workers)
        if self.memory_map:
            # the handle is small: it travels inside each placing task (a broadcast scatter of it
            # took 70-130 ms on 1-2 workers, on the first run's critical path)
            self._candidates = self._map(candidates)
        else:
            # to one worker; the others fetch it as the placing tasks' input. A broadcast scatter
            # replicates it by the scheduler instead, which loops forever when a worker dies meanwhile
            self._candidates = client.scatter(candidates, hash=False)
        self._home = [workers[i % len(workers)] for i in range(len(shards))]
        self._token = uuid.uuid4().hex
        self._started = [False] * len(shards)
        placed = [
            client.submit(
                _place_shard, self._candidates, client.scatter(shard, workers=[home]), (self._token, i),
                workers=[home], allow_other_workers=False, pure=False,
            )
            for i, (shard, home) in enumerate(zip(shards, self._home))
        ]
        waiting = time.perf_counter()
        self._wait_for(self._warm_up(workers) + placed, workers)
        self.warm_up_seconds = time.perf_counter() - waiting

    def _workers(self, running: bool = True) -> list:
        """The addresses of the scheduler's workers (only those running, with ``running``), sorted."""
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        return sorted(a for a, worker in workers.items() if not running or worker.get("status", "running") == "running")

    def _wait_for_workers(self) -> list:
        """The running workers; while there are none, waits up to ``worker_timeout`` seconds for one."""
        deadline = time.monotonic() + self.worker_timeout
        while not (workers := self._workers()):
            if time.monotonic() >= deadline:
                if self._scheduler:
                    raise WorkersUnavailable(
                        f"every Dask worker of the scheduler at {self._scheduler} is gone and none joined within "
                        f"{self.worker_timeout:g} s: start workers (`dask worker {self._scheduler}`) and run again"
                    )
                raise WorkersUnavailable(
                    f"every worker of the local Dask cluster is gone and none restarted within "
                    f"{self.worker_timeout:g} s: run again"
                )
            time.sleep(LIVENESS_SECONDS)
        return workers

    def _wait_for(self, futures: list, workers: list) -> None:
        """Wait for ``futures`` (tasks pinned to ``workers``) while each of those workers is there;
        raise :class:`.parallel.ShardStateLost` when one leaves, and a task's error if one failed."""
        from distributed import wait  # imported already by the client (see the module docstring)

        while True:
            try:
                wait(futures, timeout=LIVENESS_SECONDS)
                break
            except TimeoutError:
                gone = sorted(set(workers) - set(self._workers(running=False)))
                if gone:
                    raise ShardStateLost(f"Dask worker {', '.join(gone)} left while the shards were placed") from None
        for future in futures:
            if future.status != "finished":
                future.result()  # raises the task's error

    def _warm_up(self, workers) -> list:
        """Start the kernel warm-up on every worker that has not had one (once per worker, all in
        parallel, without waiting); return the futures of those still to be waited for."""
        for gone in set(self._warm_ups) - set(workers):  # a lost worker's future would never finish
            del self._warm_ups[gone]
        for worker in workers:
            if worker not in self._warm_ups:
                self._warm_ups[worker] = self.client.submit(
                    _warm_up_worker, workers=[worker], allow_other_workers=False, pure=False,
                    key=f"warm-up-{uuid.uuid4().hex}",
                )
        return [future for future in self._warm_ups.values() if not future.done() or future.status == "error"]

    def _map(self, candidates) -> MappedCandidates:
        """Write the candidates' files once per candidates object (a later run or a recovery reuses them)."""
        if self._mapped is None or self._mapped[0] is not candidates:
            self._remove_mapped_files()
            _remove_leftovers()  # first, for the room they take
            candidates.columns  # sorted before the files are sized and written
            directory = new_candidates_directory(candidates_folder(candidates.nbytes))
            try:
                self._mapped = (candidates, MappedCandidates(candidates, directory))
            except BaseException:
                shutil.rmtree(directory, ignore_errors=True)
                raise
        return self._mapped[1]

    def run(self, function, *args, per_shard_args=None) -> list:
        """One round: every worker runs its shards (``Client.run``, one message each way per
        worker; tasks cost two more hops a round through the scheduler, about 15 ms on 2 cores).

        The round goes to every worker the scheduler has, not to the shards' workers by name: a
        worker that has left is then missing from the answers at once (named, it would make the
        scheduler retry connecting to it for 30 s); one without shards answers at once."""
        jobs = {}
        for i, home in enumerate(self._home):
            extra = tuple(per_shard_args[i]) if per_shard_args is not None else ()
            jobs.setdefault(home, []).append((i, not self._started[i], extra))
        answers = self.client.run(_run_shards, self._token, function, args, jobs)
        gone = sorted(set(jobs) - set(answers))
        if gone:
            raise ShardStateLost(f"Dask worker {', '.join(gone)} left, with shards of this run")
        summaries = [None] * len(self._home)
        for address, answer in answers.items():
            if not isinstance(answer, list):
                raise ShardStateLost(f"the state of shard {answer} is not on worker {address}")
            for index, summary in answer:
                summaries[index] = summary
        self._started = [True] * len(self._home)
        return summaries

    def _forget(self) -> None:
        """Drop the previous run's shard states on every worker."""
        if self._token is not None:
            try:
                self.client.run(_forget_run, self._token, callback_timeout=CLEANUP_SECONDS)
            except Exception as error:  # a worker that is gone has forgotten them anyway
                logger.debug("could not drop shard states of run %s: %s", self._token, error)
            self._token = None

    def _remove_mapped_files(self) -> None:
        if self._mapped is not None:
            directory = self._mapped[1].directory
            try:
                self.client.run(unmap, directory, callback_timeout=CLEANUP_SECONDS)
            except Exception as error:  # a worker that is gone holds no map
                logger.debug("could not unmap %s on the workers: %s", directory, error)
            # On POSIX a map still open somewhere keeps its pages until it closes.
            shutil.rmtree(directory, ignore_errors=True)
        self._mapped = None

    def close(self) -> None:
        if self.client.status == "running":
            self._forget()
        self._home = []
        self._candidates = None
        self._remove_mapped_files()
        if self._own_client:
            self.client.close()
            if self._cluster is not None:
                self._cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _remove_leftovers() -> None:
    """Remove candidates' folders that killed runs left here (:func:`remove_leftover_candidates`)."""
    removed = remove_leftover_candidates([SHARED_MEMORY, Path(tempfile.gettempdir())])
    if removed:
        logger.info("removed candidates' files left by killed runs: %s", ", ".join(map(str, removed)))


def dask_executor(
    scheduler: str | None = None, *, workers: int | None = None, connect_timeout: float = CLIENT_CONNECT_TIMEOUT,
    worker_timeout: float = WORKER_WAIT_SECONDS,
) -> DaskShards:
    """A Dask shard executor for :class:`topicbench.core.elda.model.ELDA` or :func:`.parallel_elda`.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:8786``). Without it a local cluster of
        ``workers`` single-threaded processes starts (:func:`.dask_cluster.start_local_cluster`).
    workers : int, optional
        Workers of the local cluster (default: the number of cores); ignored with ``scheduler``.
    connect_timeout : float
        Seconds to wait for ``scheduler`` before failing with ``ConnectionError``.
    worker_timeout : float
        Seconds to wait for a worker when every worker is gone, before failing.

    Returns
    -------
    DaskShards
        Close it when done (``close()`` or a ``with`` block): that stops the local cluster.
    """
    return DaskShards(scheduler, n_workers=workers, connect_timeout=connect_timeout, worker_timeout=worker_timeout)
