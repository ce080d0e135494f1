"""MLflow tracking: one parent run per benchmark, one nested run per (corpus, model, seed).

Everything goes through an explicit ``MlflowClient`` (no global active run), from the flow's
process. Metric keys such as ``umass@10`` are stored as ``umass_top10`` (MLflow names cannot hold
'@'); :func:`score_key` maps them back.

A nested run is created as a *claim* before its fit is submitted: a RUNNING run tagged with its
run key and its owner (host, pid, process start time), whose heartbeat the flow refreshes.
Concurrent processes on one store thereby fit each run key once (:meth:`Tracker.claim`), and the
RUNNING runs of a process that died are recognised as stale, marked KILLED and fitted again.

Every call to a tracking server is bounded: MLflow's client retries a request
``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` times, backing off from ``MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR``
seconds (topicbench's defaults, 5 and 1 s: about 30 s for a server that is gone, a restart's
worth; MLflow's own, 7 and 2 s, spent about 4 minutes a call), each try waiting at most
``MLFLOW_HTTP_REQUEST_TIMEOUT`` seconds; the environment overrides them. A store found gone
(:func:`store_unavailable`) is not waited on again: the flow spools what it cannot log.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import re
import socket
import threading
import time
import traceback
from dataclasses import dataclass

from prefect import task
from prefect.cache_policies import NONE

from topicbench.core.io import file_name_for

from .fit_record import FitRecord, tracked_name
from .records import git_commit, package_versions
from .store_checks import (
    SERVER_SCHEMES, TRACKING_SETTINGS, TrackingError, check_server, check_tracking_uri, sqlite_path,
    tracking_setting, tracking_store_exists, uri_scheme,
)

logger = logging.getLogger(__name__)

__all__ = [  # the store's checks are re-exported: commands and tests import them from here
    "TrackingError", "check_tracking_uri", "sqlite_path", "tracking_store_exists", "tracked_name", "Tracker",
]

PARENT_ROLE, FIT_ROLE, STUDY_ROLE = "benchmark", "fit", "search"
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
# on a tracking server MLflow's client prints a "View run ... at: URL" line per ended run (two
# lines a run on the console); the report and the summary line already say where the runs are
os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
for _name in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "MLFLOW_HTTP_REQUEST_TIMEOUT"):
    os.environ.setdefault(_name, str(TRACKING_SETTINGS[_name][0]))
_TOP = re.compile(r"^(.*)_top(\d+)$")


def _with_verbose_logging(record: logging.LogRecord) -> bool:
    return logging.getLogger().isEnabledFor(logging.DEBUG)


# MLflow's sqlalchemy store logs every database error it raises again with its traceback (60 lines
# for a full disk) before the flow handles the error and says what happened: shown with -v only
logging.getLogger("mlflow.store.db.utils").addFilter(_with_verbose_logging)

#: Seconds between two heartbeats of a process's RUNNING runs.
HEARTBEAT_SECONDS = 30.0
#: A RUNNING run of another host whose heartbeat is older than this is stale (its owner is
#: presumed dead; on this host the owner's pid is checked instead). Override with the
#: environment variable TOPICBENCH_STALE_RUN_SECONDS (checked before any work).
STALE_RUN_SECONDS = TRACKING_SETTINGS["TOPICBENCH_STALE_RUN_SECONDS"][0]
#: How long a process waits for the lock of a sqlite store held by another.
STORE_LOCK_SECONDS = 300.0
#: How long an interrupted benchmark keeps trying to mark its open runs while the store is busy
#: (an sqlite store that another connection holds locked answers "database is locked"), and the
#: pause between tries. Any other failure (a server gone) is not retried: the command exits.
ABANDON_RETRY_SECONDS = 20.0
ABANDON_RETRY_PAUSE = 0.5
#: Seconds an interrupted benchmark gives a tracking server to answer ``/health`` before it
#: leaves its runs to the next run's stale sweep rather than wait on a server that is gone.
ABANDON_PROBE_SECONDS = 2.0
#: Tries of logging a corpus as a run's input: two processes logging one new dataset at once race
#: on the store's table of datasets, and the loser's insert fails; its next try finds the row.
INPUT_TRIES = 5
#: What a store that is gone or full answers (messages of MLflow, requests, sqlite, psycopg, the OS).
UNAVAILABLE = (
    "Max retries exceeded", "Connection refused", "Failed to establish a new connection", "Connection reset",
    "Connection aborted", "RemoteDisconnected", "timed out", "database or disk is full", "No space left on device",
    "disk I/O error", "unable to open database file", "database disk image is malformed",
    "server closed the connection", "connection is bad", "could not connect to server", "Disk quota exceeded",
)

OWNER_HOST, OWNER_PID, OWNER_STARTED = "topicbench.owner_host", "topicbench.owner_pid", "topicbench.owner_started"
HEARTBEAT, RUN_KEY, ERROR_TAG = "topicbench.heartbeat", "topicbench.run_key", "topicbench.error"
END_REASON = "topicbench.end_reason"


def score_key(name: str) -> str:
    match = _TOP.match(name)
    return f"{match.group(1)}@{match.group(2)}" if match else name


def store_unavailable(error: BaseException) -> bool:
    """Whether ``error`` (or an error it was raised from) says the store is gone or full, rather
    than that one call was wrong: a server that does not answer, a disk that is full."""
    import errno

    for cause in exception_chain(error):
        if isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if any(text in str(cause) for text in UNAVAILABLE):
            return True
    return False


# -- the store: its artifacts and its lock ---------------------------------------------------


def local_artifact_location(tracking_uri: str, experiment: str) -> str | None:
    """For a sqlite file store, artifacts beside the database (``<db folder>/mlartifacts/<experiment>``)
    rather than MLflow's default ``./mlruns`` under whatever folder the command ran in; for any
    other store, None (the server's or MLflow's default)."""
    database = sqlite_path(tracking_uri)
    if database is None:
        return None
    folder = database.resolve().parent / "mlartifacts" / file_name_for(experiment)
    return folder.as_uri()


@contextlib.contextmanager
def store_lock(uri: str, timeout: float = STORE_LOCK_SECONDS):
    """Hold the lock file beside a sqlite database (``mlflow.db.lock``); no lock for other stores.

    Serialises what must not interleave between processes on one database: creating it and its
    schema migration, creating an experiment, and claiming runs.
    """
    path = sqlite_path(uri)
    if path is None:
        yield
        return
    from filelock import FileLock, Timeout

    lock = FileLock(str(path) + ".lock")
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        raise TrackingError(
            f"another process has held the lock {lock.lock_file} of the tracking database for {timeout:.0f} s; "
            f"if no topicbench process is running, delete that file"
        ) from None
    try:
        yield
    finally:
        lock.release()


#: The key of the PostgreSQL advisory lock that :func:`creation_lock` takes.
CREATION_LOCK_KEY = 7_242_019_511


@contextlib.contextmanager
def creation_lock(uri: str):
    """Serialise what MLflow does unguarded when a process opens a store: creating a new
    database's tables and migrating them (two processes doing it at once fail), and creating the
    experiment. sqlite: :func:`store_lock`; PostgreSQL: an advisory lock, held by one connection
    for the block (the database drops it if the process dies); a server: none (it creates its
    database itself)."""
    if uri_scheme(uri) != "postgresql":
        with store_lock(uri):
            yield
        return
    import sqlalchemy
    from sqlalchemy.pool import NullPool

    engine = sqlalchemy.create_engine(uri, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            connection.exec_driver_sql(f"SELECT pg_advisory_lock({CREATION_LOCK_KEY})")
            try:
                yield
            finally:
                connection.exec_driver_sql(f"SELECT pg_advisory_unlock({CREATION_LOCK_KEY})")
    finally:
        engine.dispose()


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


class Tracker:
    """Reads and writes the runs of one MLflow experiment.

    Parameters
    ----------
    tracking_uri : str
        The MLflow store (checked by :func:`check_tracking_uri` first).
    experiment : str
        The experiment's name; created when missing.

    Attributes
    ----------
    open_runs : set of str
        Runs this process created and has not terminated yet (closed on every exit path).
    owner : Owner
        This process, as recorded on its runs.
    """

    def __init__(self, tracking_uri: str, experiment: str):
        from mlflow.tracking import MlflowClient

        check_tracking_uri(tracking_uri)
        _make_database_folder(tracking_uri)
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.owner = Owner.current()
        self.open_runs: set = set()
        self.parent_id: str | None = None
        with creation_lock(tracking_uri):  # a fresh database's migration, the experiment's creation
            self.client = MlflowClient(tracking_uri)
            self.experiment_id = self._experiment_id(experiment)

    def _experiment_id(self, name: str) -> str:
        """The experiment's id, created when missing. On a server (no lock) another process may
        create it between our look-up and our creation: ours then fails, and its is read."""
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            return found.experiment_id
        try:
            return self.client.create_experiment(name, artifact_location=local_artifact_location(self.tracking_uri, name))
        except Exception as error:
            found = self.client.get_experiment_by_name(name)
            if found is None:
                raise
            logger.debug("experiment %r was created by another process meanwhile (%s)", name, error)
            return found.experiment_id

    # -- parent -------------------------------------------------------------------------------

    def open_parent(self, config) -> str:
        run = self.client.create_run(
            self.experiment_id,
            run_name=f"{config.experiment}-benchmark",
            tags={"topicbench.role": PARENT_ROLE, "experiment": config.experiment,
                  "topicbench.config_fingerprint": config.fingerprint(), **self._liveness_tags()},
        )
        run_id = run.info.run_id
        self.parent_id = run_id  # what an LLM token budget is counted against
        self.open_runs.add(run_id)
        self.client.log_batch(run_id, params=_params({
            "config_fingerprint": config.fingerprint(), "git_commit": git_commit(),
            "corpora": ",".join(c.name for c in config.corpora),
            "models": ",".join(m.name for m in config.models),
            "seeds": ",".join(map(str, config.seeds)), "metrics": ",".join(config.metrics),
            "top_n": ",".join(map(str, config.top_n)),
        }))
        self._log_json(run_id, config.to_dict(), "config.json")
        return run_id

    def open_study_parent(self, config, study: str) -> str:
        """The one parent run of search ``study``: created on its first run, reopened (RUNNING,
        owned by this process) on every later one, so that every trial of the study, however
        often it was resumed, is a nested run of one parent. Raises :class:`TrackingError` when a
        live process holds it (that search is running now)."""
        with store_lock(self.tracking_uri):
            self.kill_stale_runs()
            found = self.client.search_runs(
                [self.experiment_id], f"tags.`topicbench.role` = '{STUDY_ROLE}' and tags.`topicbench.study` = '{study}'",
                max_results=1, order_by=["attributes.start_time ASC"],
            )
            if not found:
                run = self.client.create_run(self.experiment_id, run_name=f"{study}-search", tags={
                    "topicbench.role": STUDY_ROLE, "topicbench.study": study, "experiment": config.experiment,
                    **self._liveness_tags()})
                run_id = run.info.run_id
            else:
                run = found[0]
                run_id = run.info.run_id
                if run.info.status == "RUNNING":
                    holder = Owner.from_tags(run.data.tags)
                    if holder != self.owner:
                        raise TrackingError(f"search {study!r} is running in another process ({holder}); "
                                            "wait for it, or stop it (its trials are resumed by the next run)")
                self.client.update_run(run_id, status="RUNNING")
                self._set_tags(run_id, self._liveness_tags())
                for stale_tag in (END_REASON, ERROR_TAG):  # why it stopped last time, no longer true
                    if stale_tag in run.data.tags:
                        self.client.delete_tag(run_id, stale_tag)
        self.parent_id = run_id
        self.open_runs.add(run_id)
        self._log_json(run_id, config.to_dict(), "config.json")
        return run_id

    def finished_runs(self, keys) -> dict:
        """{run key: the newest FINISHED fit run of that key} for ``keys`` (one search of the
        experiment)."""
        wanted = set(keys)
        runs = self.client.search_runs(
            [self.experiment_id], f"tags.`topicbench.role` = '{FIT_ROLE}' and attributes.status = 'FINISHED'",
            max_results=50_000, order_by=["attributes.start_time ASC"],
        )
        return {run.data.tags.get(RUN_KEY): run for run in runs if run.data.tags.get(RUN_KEY) in wanted}

    def close_parent(self, run_id: str, summary: dict, failed: list) -> None:
        self._log_json(run_id, summary, "summary.json")
        self.client.set_tag(run_id, "topicbench.failed_runs", str(len(failed)))
        self._terminate(run_id, "FAILED" if failed else "FINISHED")

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
            if failure is None or not _store_busy(failure) or time.monotonic() >= deadline:
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

    # -- claims -------------------------------------------------------------------------------

    def claim_jobs(self, parent_id: str, jobs) -> dict:
        """{job: :class:`Claim`} for ``jobs``, claimed under the store's lock, after marking the
        experiment's stale runs KILLED. The runs won are then described (params, inputs)."""
        with store_lock(self.tracking_uri):
            self.kill_stale_runs()
            claims = {job: self.claim(parent_id, job) for job in jobs}
        for job, claim in claims.items():
            if claim.run_id is not None:
                self._describe(claim.run_id, job)
        return claims

    def claim(self, parent_id: str, job) -> Claim:
        """Claim ``job``'s run key: create its nested run RUNNING, then keep it only if no FINISHED
        run of the key exists and it is the earliest (start time, run id) live claim of the key.

        The check after the creation resolves races between processes on stores without a lock
        (an MLflow server); on sqlite the caller holds :func:`store_lock`, so none arise.
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
                       or min(_claim_order(r) for r in rivals) < _claim_order(run)):
            return self._lost(run_id, rivals)
        return Claim(run_id=run_id)

    def kill_stale_runs(self) -> list:
        """Mark KILLED every RUNNING run of the experiment (parents and nested runs) whose owner is
        gone (:func:`stale_reason`), tagging the reason; returns their ids."""
        killed = []
        for run in self.client.search_runs([self.experiment_id], "attributes.status = 'RUNNING'", max_results=50_000):
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
        runs = self.client.search_runs(
            [self.experiment_id], f"tags.`topicbench.role` = '{FIT_ROLE}' and attributes.status != 'KILLED'",
            max_results=50_000,
        )
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
        runs = self.client.search_runs(
            [self.experiment_id], f"tags.`{RUN_KEY}` = '{run_key}' and tags.`topicbench.role` = '{FIT_ROLE}'",
            max_results=50_000,
        )
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

    # -- resume -------------------------------------------------------------------------------

    def finished_run_keys(self) -> set:
        """Run keys of nested runs that finished successfully (to skip on a re-run)."""
        runs = self.client.search_runs(
            [self.experiment_id],
            filter_string=f"tags.`topicbench.role` = '{FIT_ROLE}' and attributes.status = 'FINISHED'",
            max_results=50_000,
        )
        return {r.data.tags.get(RUN_KEY) for r in runs}

    # -- nested runs --------------------------------------------------------------------------

    def _describe(self, run_id: str, job) -> None:
        """What a claimed run will fit: its params, changed settings and the corpus as an input."""
        self.client.log_batch(run_id, params=_params(job.record()))
        changed = changed_settings(job.model.model, job.model.settings)
        if changed:
            self.client.set_tag(run_id, "topicbench.changed_settings", json.dumps(changed, default=str)[:4900])
        self._log_corpus_input(run_id, job)

    def log_fit(self, run_id: str, record: FitRecord, artifacts) -> str:
        """Fill the claimed run ``run_id`` with a finished fit's ``record`` (its resolved values as
        ``resolved.<name>`` params, tags, metrics and training curve) and the files of the folder
        ``artifacts``, and end it FINISHED."""
        from mlflow.entities import Metric

        if record.params:
            self.client.log_batch(run_id, params=_params(record.params))
        self._set_tags(run_id, record.tags)
        stamp = int(time.time() * 1000)
        entries = [Metric(name, value, stamp, 0) for name, value in record.metrics.items()]
        # an iterative fit's loss per epoch as the history of ``training_loss``, which MLflow's
        # UI and the report plot
        entries += [Metric("training_loss", value, stamp, step) for step, value in record.curve]
        for start in range(0, len(entries), 900):
            self.client.log_batch(run_id, metrics=entries[start : start + 900])
        self.client.log_artifacts(run_id, str(artifacts))
        self._log_llm_traces(run_id, artifacts)
        self._terminate(run_id, "FINISHED")
        return run_id

    def _log_llm_traces(self, run_id: str, artifacts) -> None:
        """The LLM metrics' requests of the run as traces (:mod:`~topicbench.tasks.llm_traces`)."""
        from .llm_traces import log_traces, read_records

        records = read_records(artifacts)
        if records:
            traced = log_traces(self.tracking_uri, self.experiment_id, run_id, records)
            self.client.set_tag(run_id, "topicbench.llm_traces", str(traced))

    def log_failed_run(self, run_id: str, job, error: BaseException) -> str:
        """Record ``error`` (message and traceback) on the claimed run ``run_id`` and end it FAILED."""
        message = f"{type(error).__name__}: {error}"
        self.client.set_tag(run_id, ERROR_TAG, message[:4900])
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        self.client.log_text(run_id, text, "error.txt")
        self._terminate(run_id, "FAILED")
        return run_id

    # -- helpers ------------------------------------------------------------------------------

    def _set_tags(self, run_id: str, tags: dict) -> None:
        from mlflow.entities import RunTag

        self.client.log_batch(run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])

    def _terminate(self, run_id: str, status: str) -> None:
        self.client.set_terminated(run_id, status)
        self.open_runs.discard(run_id)

    def training_curves(self, run_ids) -> dict:
        """{run id: (steps, losses)} of the runs that logged a ``training_loss`` history."""
        curves = {}
        for run_id in run_ids:
            history = sorted(self.client.get_metric_history(run_id, "training_loss"), key=lambda m: m.step)
            if history:
                curves[run_id] = ([m.step for m in history], [m.value for m in history])
        return curves

    def _log_json(self, run_id: str, data: dict, name: str) -> None:
        self.client.log_text(run_id, json.dumps(data, indent=1, default=str), name)

    def _log_corpus_input(self, run_id: str, job) -> None:
        from mlflow.data.meta_dataset import MetaDataset
        from mlflow.data.sources import LocalArtifactDatasetSource
        from mlflow.entities import DatasetInput, InputTag

        corpus = job.corpus_data
        dataset = MetaDataset(
            LocalArtifactDatasetSource(corpus.source or corpus.name), name=corpus.name,
            digest=corpus.fingerprint()[:36],
        )
        inputs = [DatasetInput(dataset._to_mlflow_entity(), tags=[InputTag("mlflow.data.context", "training")])]
        for tries_left in reversed(range(INPUT_TRIES)):
            try:
                self.client.log_inputs(run_id, datasets=inputs)
                return
            except Exception as error:  # MLflow's store looks the dataset up, then inserts it
                if tries_left == 0 or not _lost_insert_race(error):
                    raise
                time.sleep(random.uniform(0.05, 0.5))  # apart from the process that won


def release_interrupted_calls(error: BaseException) -> None:
    """Let go of what the calls that ``error`` (an interrupt) cut short still hold.

    An interrupt that lands inside a store call (a sqlite write in MLflow's ``log_batch``, say)
    can leave that call's database session alive in the frames of the exception's traceback, its
    write transaction open: the store then answers "database is locked" to every later call,
    ours included, until the process exits, so no open run could be marked. Clearing the locals
    of those finished frames (and of the exceptions chained to it) frees the session, and its
    connection rolls back as it returns to the pool. The traceback itself (files and lines) is
    kept for printing.
    """
    import gc

    for raised in exception_chain(error):
        traceback.clear_frames(raised.__traceback__)  # frames still running are left alone
    gc.collect()  # sessions sit in reference cycles


def exception_chain(error: BaseException | None):
    """``error``, then the exception it was raised from or while handling, and so on (each once)."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def _lost_insert_race(error: BaseException) -> bool:
    """Whether ``error`` is a unique constraint that another process's insert of the same row
    violated first (sqlite's or PostgreSQL's words, directly or through a server)."""
    return any(text in str(error) for text in ("UNIQUE constraint failed", "duplicate key value", "IntegrityError"))


def _store_busy(error: BaseException) -> bool:
    """Whether ``error`` is a database lock that a later try may find released."""
    return "database is locked" in str(error)


def describe_stop(error: BaseException) -> str:
    """``error`` as one line: 'SIGTERM' for Prefect's TerminationSignal, 'KeyboardInterrupt (SIGINT
    or SIGTERM)' for an interrupt, else 'Type: message'."""
    signal_number = getattr(error, "signal", None)
    if isinstance(signal_number, int):
        import signal

        return f"{signal.Signals(signal_number).name}"
    if isinstance(error, KeyboardInterrupt):
        return "KeyboardInterrupt (SIGINT or SIGTERM)"
    return f"{type(error).__name__}: {error}".rstrip(": ")


def _claim_order(run) -> tuple:
    """Claims of one key are ranked by (start time, run id): the first wins, in every process."""
    return (run.info.start_time or 0, run.info.run_id)


def _make_database_folder(uri: str) -> None:
    """Create the folder of a sqlite database (MLflow does not, and retries for minutes instead)."""
    path = sqlite_path(uri)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise TrackingError(f"cannot create the folder of the tracking database {path}: {error}") from None


def worth_retrying(task, task_run, state) -> bool:
    """A logging task is retried unless the store is gone or full (:func:`store_unavailable`):
    MLflow's client has already waited for a server through its own bounded retries."""
    error = state.data if isinstance(state.data, BaseException) else None
    return error is None or not store_unavailable(error)


@task(name="log_model_run", retries=3, retry_delay_seconds=[1, 2, 4], retry_condition_fn=worth_retrying,
      cache_policy=NONE)
def log_model_run(tracker: Tracker, run_id: str, record: FitRecord, artifacts) -> str:
    """:meth:`Tracker.log_fit`, retried on transient failures ("database is locked")."""
    return tracker.log_fit(run_id, record, artifacts)


@task(name="log_failed_run", retries=3, retry_delay_seconds=[1, 2, 4], retry_condition_fn=worth_retrying,
      cache_policy=NONE)
def log_failed_run(tracker: Tracker, run_id: str, job, error: BaseException) -> str:
    return tracker.log_failed_run(run_id, job, error)


def _params(values: dict) -> list:
    from mlflow.entities import Param

    return [Param(str(k)[:250], str(v)[:6000]) for k, v in values.items()]


def changed_settings(model: str, settings: dict) -> dict:
    """{setting: [value, default]} for each setting given that differs from the model's default
    (a run trained otherwise than its authors ship the model, which the report flags)."""
    from topicbench.baselines.registry import MODELS

    defaults = MODELS.get(model).defaults
    as_json = lambda value: json.loads(json.dumps(value, default=str))  # (100, 100) == [100, 100]
    return {key: [value, defaults.get(key)] for key, value in settings.items() if as_json(value) != as_json(defaults.get(key))}


def run_record(corpus, model_spec, seed: int, config) -> dict:
    """Every setting needed to repeat one (corpus, model, seed) run, flattened for MLflow params."""
    import numba

    record = {
        "corpus": corpus.name, "corpus_fingerprint": corpus.fingerprint(), "corpus_source": corpus.source,
        "corpus_documents": corpus.n_documents, "corpus_vocabulary": corpus.n_words, "corpus_tokens": corpus.n_tokens,
        "model": model_spec.model, "model_label": model_spec.name, "num_topics": model_spec.num_topics, "seed": seed,
        "config_fingerprint": config.fingerprint(), "git_commit": git_commit(), "numba_threads": numba.get_num_threads(),
        "metrics": ",".join(model_spec.metrics or config.metrics), "top_n": ",".join(map(str, config.top_n)),
    }
    record.update({f"preprocessing.{k}": v for k, v in corpus.preprocessing.items()})
    from topicbench.baselines.registry import MODELS

    # what was asked, as the model holds it (get_params(): K, the seed and every setting)
    params = MODELS.get(model_spec.model)(model_spec.num_topics, random_state=seed, **model_spec.settings).get_params()
    record.update({"num_topics": params.pop("num_topics"), "seed": params.pop("random_state")})
    record.update({f"settings.{k}": v for k, v in params.items()})
    record.update({f"version.{k}": v for k, v in package_versions().items()})
    llm_metrics = set(model_spec.metrics or config.metrics) & set(config.llm_metrics())
    if llm_metrics:  # who judged and how (the key's variable's name, never the key)
        from .llm_judge import judge_record

        endpoint, judge = config.llm_settings()
        record.update({f"llm.{k}": v for k, v in endpoint.record().items()})
        record.update({f"llm.judge.{k}": v for k, v in judge_record(judge).items()})
    plugin = MODELS.plugin_source(model_spec.model)
    if plugin is not None:  # a model of another installed package: which entry point, which version
        record.update({"model_plugin": plugin["entry_point"], f"version.{plugin['distribution']}": plugin["version"]})
    return record
