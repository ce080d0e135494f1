"""Run claims: which process fits which run key, told through the store itself.

A nested run is created as a *claim* before its fit is submitted: a RUNNING run tagged with its
run key and its owner (host, pid, process start time), whose heartbeat the flow refreshes.
Concurrent processes on one store thereby fit each run key once (:meth:`RunClaims.claim`), and the
RUNNING runs of a process that died are recognised as stale, marked KILLED and fitted again. On
sqlite, claims are made under a lock file beside the database (:func:`~topicbench.tasks.store.locks.store_lock`); elsewhere
the earliest live claim of a key wins, unless a later one has already decided that it won (its
check ran before the earlier claim reached the store: :meth:`RunClaims.claim`). A process that stops ends its open runs
(:meth:`RunClaims.abandon`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass

from topicbench.core.redaction import redact
from topicbench.tasks.store.locks import store_lock
from topicbench.tasks.store.interrupts import describe_stop, release_interrupted_calls
from topicbench.tasks.store.checks import SERVER_SCHEMES, check_server, store_busy, uri_scheme
from topicbench.tasks.store.tracking_error import TrackingError
from topicbench.tasks.store.tracking_settings import TRACKING_SETTINGS, tracking_setting
from topicbench.tasks.store.filters import search_runs

logger = logging.getLogger(__name__)

#: The ``topicbench.role`` tag of a benchmark's parent run, a fit's nested run, a search's parent.
PARENT_ROLE, FIT_ROLE, STUDY_ROLE = "benchmark", "fit", "search"
ROLE_TAG = "topicbench.role"
OWNER_HOST, OWNER_PID, OWNER_STARTED = "topicbench.owner_host", "topicbench.owner_pid", "topicbench.owner_started"
HEARTBEAT, RUN_KEY, ERROR_TAG = "topicbench.heartbeat", "topicbench.run_key", "topicbench.error"
END_REASON = "topicbench.end_reason"
#: Tagged "won" on a claim once the check after its creation kept it (before its fit starts).
CLAIM_DECISION = "topicbench.claim_decision"

#: Seconds between two heartbeats of a process's RUNNING runs.
HEARTBEAT_SECONDS = 30.0
#: A RUNNING run of another host whose heartbeat is older than this is stale (its owner is
#: presumed dead; on this host the owner's pid is checked instead). Override with the
#: environment variable TOPICBENCH_STALE_RUN_SECONDS (checked before any work).
STALE_RUN_SECONDS = TRACKING_SETTINGS["TOPICBENCH_STALE_RUN_SECONDS"][0]
#: How long an interrupted benchmark keeps trying to mark its open runs while the store is busy
#: (an sqlite store that another connection holds locked answers "database is locked"), and the
#: pause between tries. Any other failure (a server gone) is not retried: the command exits.
ABANDON_RETRY_SECONDS = 20.0
ABANDON_RETRY_PAUSE = 0.5
#: Seconds an interrupted benchmark gives a tracking server to answer ``/health`` before it
#: leaves its runs to the next run's stale sweep rather than wait on a server that is gone.
ABANDON_PROBE_SECONDS = 2.0
#: How long a claim waits for a later rival claim, seen by its check, to decide (withdraw or
#: win) before giving way to it, and the pause between looks. A rival decides with one search
#: of the store; giving way is always safe (the key is claimed again once it is free).
CLAIM_DECISION_SECONDS = 60.0
CLAIM_DECISION_POLL = 0.2


# -- the store's locks ---------------------------------------------------------------------------




# -- owners and stale runs ---------------------------------------------------------------------


@dataclass(frozen=True)
class Owner:
    """The process that holds a RUNNING run: host, pid and the process's start time (epoch s),
    which tells a live owner from a later process that reused its pid."""

    host: str
    pid: int
    started: float

    @classmethod
    def current(cls) -> "Owner":
        import psutil

        return cls(socket.gethostname(), os.getpid(), round(psutil.Process().create_time(), 3))

    @classmethod
    def from_tags(cls, tags: dict) -> "Owner | None":
        try:
            return cls(tags[OWNER_HOST], int(tags[OWNER_PID]), float(tags[OWNER_STARTED]))
        except (KeyError, ValueError):
            return None

    def tags(self) -> dict:
        return {OWNER_HOST: self.host, OWNER_PID: str(self.pid), OWNER_STARTED: f"{self.started:.3f}"}

    def __str__(self) -> str:
        return f"pid {self.pid} on host {self.host}"

    def is_alive(self) -> bool:
        """On this host: the pid runs and started when the owner did. Elsewhere: unknown (True)."""
        import psutil

        if self.host != socket.gethostname():
            return True
        try:
            process = psutil.Process(self.pid)
            return abs(process.create_time() - self.started) < 1.0 and process.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False


def stale_reason(run, now: float | None = None) -> str | None:
    """Why the RUNNING ``run`` is stale (its owner died), or None while it may still be alive.

    On this host a run is stale once its owner's process is gone; a run of another host (or of
    an older topicbench that recorded no owner) once its heartbeat is older than
    ``TOPICBENCH_STALE_RUN_SECONDS`` (default :data:`STALE_RUN_SECONDS`).
    """
    tags = run.data.tags
    owner = Owner.from_tags(tags)
    if owner is not None and owner.host == socket.gethostname():
        return None if owner.is_alive() else f"its owner, {owner}, is gone"
    limit = tracking_setting("TOPICBENCH_STALE_RUN_SECONDS")
    last_seen = float(tags.get(HEARTBEAT, (run.info.start_time or 0) / 1000))
    silent = (now or time.time()) - last_seen
    if silent <= limit:
        return None
    return f"no heartbeat from {owner or 'its owner'} for {silent:.0f} s"


@dataclass(frozen=True)
class Claim:
    """The outcome of claiming one run key: ``run_id`` is ours to fill; otherwise ``finished_by``
    (a FINISHED run of the key) or ``held_by`` (a live process fitting it) says why not."""

    run_id: str | None = None
    finished_by: str | None = None
    held_by: str | None = None


def _claim_order(run) -> tuple:
    """Claims of one key are ranked by (start time, run id): the first wins, in every process."""
    return (run.info.start_time or 0, run.info.run_id)


# -- the claims of one process on one experiment ---------------------------------------------------


class RunClaims:
    """The runs one process claims, keeps alive and ends in one MLflow experiment.

    The base of :class:`~topicbench.tasks.store.tracking.Tracker`, which opens the store and sets
    ``client`` (an ``MlflowClient``) and ``experiment_id``.

    Parameters
    ----------
    tracking_uri : str
        The MLflow store.
    experiment : str
        The experiment's name.

    Attributes
    ----------
    open_runs : set of str
        Runs this process created and has not terminated yet (closed on every exit path).
    owner : Owner
        This process, as recorded on its runs.
    parent_id : str or None
        The parent run this process opened (what an LLM token budget is counted against).
    """

    client = None
    experiment_id: str = ""

    def __init__(self, tracking_uri: str, experiment: str):
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.owner = Owner.current()
        self.open_runs: set = set()
        self.parent_id: str | None = None

    # -- claims -------------------------------------------------------------------------------

    def claim_jobs(self, parent_id: str, jobs) -> dict:
        """{job: :class:`Claim`} for ``jobs``, claimed under the store's lock, after marking the
        experiment's stale runs KILLED."""
        with store_lock(self.tracking_uri):
            self.kill_stale_runs()
            return {job: self.claim(parent_id, job) for job in jobs}

    def claim(self, parent_id: str, job) -> Claim:
        """Claim ``job``'s run key: create its nested run RUNNING, then keep it only if no FINISHED
        run of the key exists, it is the earliest (start time, run id) live claim of the key, and
        no later live claim of the key has decided it won (:data:`CLAIM_DECISION`).

        The check after the creation resolves races between processes on stores without a lock
        (an MLflow server); on sqlite the caller holds :func:`store_lock`, so none arise. Of two
        racing claims at least one check sees the other; the earliest alone does not settle it,
        as a start time is the client's clock when it sent the request: a claim that reached the
        store late can be the earliest and yet unseen by a later claim's check, which kept it. So
        a claim that sees later rivals waits for each to withdraw or win (they never wait for
        earlier ones, so no two wait on each other).
        """
        before = self._decisive_runs(job.key)
        if before:
            return self._lost(None, before)
        run = self.client.create_run(
            self.experiment_id,
            run_name=f"{job.corpus.name}/{job.model.name}/seed{job.seed}",
            tags={
                "mlflow.parentRunId": parent_id, "topicbench.role": FIT_ROLE, RUN_KEY: job.key,
                "experiment": self.experiment, "corpus": job.corpus.name, "model": job.model.name,
                "model_class": job.model.model, "seed": str(job.seed), **self._liveness_tags(),
            },
        )
        run_id = run.info.run_id
        self.open_runs.add(run_id)
        rivals = self._decisive_runs(job.key)
        if rivals and (any(r.info.status == "FINISHED" for r in rivals)
                       or min(_claim_order(r) for r in rivals) < _claim_order(run)
                       or not self._rivals_withdraw(rivals)):
            return self._lost(run_id, rivals)
        self.client.set_tag(run_id, CLAIM_DECISION, "won")
        return Claim(run_id=run_id)

    def _rivals_withdraw(self, later: list) -> bool:
        """Whether every one of the ``later`` claims (all of them created after ours, as ranked by
        :func:`_claim_order`) withdraws; False at once when one has won, or when one is still
        undecided after :data:`CLAIM_DECISION_SECONDS` (a claim made before decisions were
        tagged, or an owner on another host that died deciding)."""
        deadline = time.monotonic() + CLAIM_DECISION_SECONDS
        waiting = [run.info.run_id for run in later]
        while True:
            runs = [self.client.get_run(run_id) for run_id in waiting]
            if any(run.data.tags.get(CLAIM_DECISION) == "won" for run in runs):
                return False
            waiting = [run.info.run_id for run in runs if run.info.status == "RUNNING" and stale_reason(run) is None]
            if not waiting:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(CLAIM_DECISION_POLL)

    def kill_stale_runs(self) -> list:
        """Mark KILLED every RUNNING run of the experiment (parents and nested runs) whose owner is
        gone (:func:`stale_reason`), tagging the reason; returns their ids."""
        killed = []
        for run in search_runs(self.client, [self.experiment_id], status="RUNNING"):
            reason = stale_reason(run)
            if reason is not None:
                self._set_tags(run.info.run_id, {END_REASON: f"stale: {reason}", ERROR_TAG: f"stale: {reason}"})
                self.client.set_terminated(run.info.run_id, "KILLED")
                logger.warning("run %s (%s) was left RUNNING and %s: marked KILLED",
                               run.info.run_id, run.info.run_name, reason)
                killed.append(run.info.run_id)
        return killed

    def claim_states(self, jobs) -> dict:
        """{job: state} of claims other processes hold: "finished" (a FINISHED run of the job's key
        exists), "held" (a live claim of another process), or None (free again: that claim ended
        KILLED or FAILED, or its owner is gone). One search of the experiment's fit runs."""
        runs = search_runs(self.client, [self.experiment_id], tags={ROLE_TAG: FIT_ROLE}, status_not="KILLED")
        by_key = {}
        for run in runs:
            by_key.setdefault(run.data.tags.get(RUN_KEY), []).append(run)
        states = {}
        for job in jobs:
            decisive = [r for r in by_key.get(job.key, []) if self._decides(r)]
            finished = any(r.info.status == "FINISHED" for r in decisive)
            states[job] = "finished" if finished else "held" if decisive else None
        return states

    def _decides(self, run) -> bool:
        """A run that keeps its key from being claimed: FINISHED, or a live claim of another process."""
        if run.info.status == "FINISHED":
            return True
        return run.info.status == "RUNNING" and Owner.from_tags(run.data.tags) != self.owner and stale_reason(run) is None

    def _decisive_runs(self, run_key: str) -> list:
        """The runs of ``run_key`` that keep it from being claimed: FINISHED ones, and live RUNNING
        ones of other processes (two jobs of one config may share a key, e.g. two labels with the
        same settings: each gets its run, as before claims existed)."""
        runs = search_runs(self.client, [self.experiment_id], tags={RUN_KEY: run_key, ROLE_TAG: FIT_ROLE})
        return [r for r in runs if self._decides(r)]

    def _lost(self, own_run_id: str | None, rivals: list) -> Claim:
        """Withdraw our claim (if made) in favour of ``rivals``: it ends KILLED and deleted, so a
        lost race leaves no trace among the experiment's runs."""
        finished = [r for r in rivals if r.info.status == "FINISHED"]
        if own_run_id is not None:
            self.client.set_tag(own_run_id, END_REASON, "claimed by another process")
            self.client.set_terminated(own_run_id, "KILLED")
            self.client.delete_run(own_run_id)
            self.open_runs.discard(own_run_id)
        if finished:
            return Claim(finished_by=finished[0].info.run_id)
        holder = min(rivals, key=_claim_order)
        return Claim(held_by=str(Owner.from_tags(holder.data.tags) or f"run {holder.info.run_id}"))

    def _liveness_tags(self) -> dict:
        return {**self.owner.tags(), HEARTBEAT: f"{time.time():.3f}"}

    def _set_tags(self, run_id: str, tags: dict) -> None:
        from mlflow.entities import RunTag

        # the one point every tag passes (an error text may quote a URL with a key)
        self.client.log_batch(run_id, tags=[RunTag(k, redact(str(v))) for k, v in tags.items()])

    # -- heartbeat ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def heartbeat(self, seconds: float = HEARTBEAT_SECONDS):
        """Refresh the heartbeat tag of :attr:`open_runs` every ``seconds`` in a daemon thread
        while the block runs (other hosts judge our runs' liveness by it)."""
        stop = threading.Event()

        def beat():
            while not stop.wait(seconds):
                stamp = f"{time.time():.3f}"
                for run_id in list(self.open_runs):
                    if stop.is_set():
                        return
                    try:
                        self.client.set_tag(run_id, HEARTBEAT, stamp)
                    except Exception as error:  # a missed beat is harmless; the next one retries
                        logger.debug("heartbeat of run %s failed: %s", run_id, error)
                        break  # the store answers the other runs alike

        thread = threading.Thread(target=beat, name="topicbench-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            # a beat waiting on a server that is gone must not hold up the exit (the thread is a daemon)
            thread.join(timeout=1.0)

    # -- the end of a process's runs -----------------------------------------------------------

    def abandon(self, error: BaseException) -> None:
        """End every run this process left open after ``error`` stopped the benchmark: KILLED when
        it was interrupted (KeyboardInterrupt, SIGTERM, SystemExit), FAILED otherwise, each tagged
        with the cause. Never raises: the caller re-raises ``error``.

        A tracking server that does not answer ``/health`` within :data:`ABANDON_PROBE_SECONDS` is
        not waited on, nor is a store after its first failure that is not "database is locked":
        the runs left RUNNING are the next run's stale claims (its sweep marks them KILLED)."""
        status = "FAILED" if isinstance(error, Exception) else "KILLED"
        reason = f"the benchmark stopped: {describe_stop(error)}"[:4900]
        if status == "KILLED":
            release_interrupted_calls(error)
        if self.open_runs and not self.answers(ABANDON_PROBE_SECONDS):
            logger.warning("the tracking store at %s does not answer: %d open runs stay RUNNING until the next run "
                           "on it marks them stale", self.tracking_uri, len(self.open_runs))
            return
        deadline = time.monotonic() + ABANDON_RETRY_SECONDS
        while True:
            failure = self._end_open_runs(status, reason)
            if failure is None or not store_busy(failure) or time.monotonic() >= deadline:
                break
            time.sleep(ABANDON_RETRY_PAUSE)
        if failure is not None:  # the next run on this store sweeps them (stale claims)
            logger.warning("could not mark %d open runs %s: %s", len(self.open_runs), status, failure)
        logger.info("open runs marked %s: %s", status, reason)

    def _end_open_runs(self, status: str, reason: str) -> Exception | None:
        """End each open run still RUNNING with ``status``; the first failure (the store answers
        every run alike, so the others are not tried), or None."""
        for run_id in list(self.open_runs):
            try:
                if self.client.get_run(run_id).info.status == "RUNNING":
                    self._set_tags(run_id, {ERROR_TAG: reason, END_REASON: reason})
                    self.client.set_terminated(run_id, status)
                self.open_runs.discard(run_id)
            except Exception as failure:
                return failure
        return None

    def answers(self, timeout: float) -> bool:
        """Whether the store answers now: a server's ``/health`` within ``timeout`` seconds; a
        database is taken to answer (its calls fail fast when it does not)."""
        if uri_scheme(self.tracking_uri) not in SERVER_SCHEMES:
            return True
        try:
            check_server(self.tracking_uri, timeout)
        except TrackingError:
            return False
        return True
