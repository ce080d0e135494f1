"""The benchmark flow: corpora x models x seeds, fitted and scored concurrently where each fit runs
(a Dask worker, or this process's thread), tracked in MLflow by this process.

Each fit task scores its own output and writes its artifacts where it ran
(:func:`~topicbench.tasks.run.fit.fit_and_score`) and sends back scores and the artifacts' folder,
never matrices: the flow process only claims, tracks and reports.

No fit is lost to the store: one that cannot be logged (the tracking server went away, the store's
disk filled up, an interrupt during its logging) is kept in the spool
(:mod:`~topicbench.tasks.store.spool`), whose folder the command's last line names, and the next run
of the same config logs it without refitting. Once the store is found gone it is not waited on
again: the fits still running are spooled as they end, and the flow then fails naming the spool.
A spooled fit that cannot be logged is named once in a warning with why, moved aside
(:meth:`~topicbench.tasks.store.spool.Spool.set_aside`) and fitted again; the benchmark goes on.
Runs that another process holds are waited for after this process's own, and claimed again if
their claim ends otherwise than FINISHED, so that every run ends done whichever process does it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from dataclasses import dataclass, field, replace

from prefect import flow, get_run_logger
from prefect.states import Failed

from topicbench.baselines.registry import MODELS
from topicbench.core.corpus import Corpus
from topicbench.tasks.run.corpus import check_topics_fit, corpus_splits, load_corpus
from topicbench.tasks.run.embeddings import embed_documents
from topicbench.tasks.run.fit import fit_and_score
from topicbench.tasks.store.fit_record import FitRecord
from topicbench.tasks.run.progress import listening
from topicbench.tasks.store.records import settings_key
from topicbench.tasks.store.spool import Spool, UnusableEntry
from topicbench.tasks.store.interrupts import exception_chain, raise_interrupt_behind
from topicbench.tasks.llm.judge import judge_record
from topicbench.tasks.store.checks import (
    TrackingError,
    check_free_space,
    check_tracking_uri,
    store_unavailable,
)
from topicbench.tasks.store.tracking import Tracker, claimed_params, log_failed_run, log_model_run, run_record

from topicbench.flows.config.model import BenchmarkConfig, CorpusSpec, ModelSpec
from .console import CONSOLE
from .progress import live_progress
from .runtime import prefect_defaults, shared_prefect_server, task_runner, uses_worker_processes
from .worker_progress import showing_worker_progress

logger = logging.getLogger(__name__)

#: Seconds between two looks at the runs other processes hold, and between two console lines
#: saying what is waited for.
WAIT_POLL_SECONDS = 5.0
WAIT_NOTE_SECONDS = 30.0


@dataclass(frozen=True, eq=False)
class Job:
    """One (corpus, model, seed) run."""

    corpus: CorpusSpec
    corpus_data: Corpus
    model: ModelSpec
    seed: int
    config: BenchmarkConfig

    @property
    def metrics(self) -> tuple:
        return tuple(self.model.metrics) if self.model.metrics is not None else tuple(self.config.metrics)

    @property
    def key(self) -> str:
        """Hash of everything that decides the run's result (resume matches on it)."""
        parts = [self.corpus_data.fingerprint(), self.model.model, self.model.num_topics, self.model.settings,
                 self.seed, sorted(self.metrics), list(self.config.top_n)]
        if self.llm is not None:  # who judged, and how (runs without LLM metrics keep their keys)
            endpoint, judge = self.llm
            parts.append({"llm_model": endpoint.model, "judge": judge_record(judge)})
        return settings_key(*parts)

    @property
    def llm(self):
        """(endpoint, judge settings) when this run's metrics or its model (TopicGPT) ask an LLM, else None."""
        asking = set(self.metrics) & set(self.config.llm_metrics()) or getattr(MODELS.get(self.model.model), "asks_llm", False)
        return self.config.llm_settings() if asking else None

    @property
    def label(self) -> str:
        return f"{self.model.name}@{self.corpus.name} seed {self.seed}"

    @property
    def embedding_key(self):
        """(corpus, embedding model) when the model reads document embeddings, else None."""
        if not getattr(MODELS.get(self.model.model), "uses_document_embeddings", False):
            return None
        return (self.corpus.name, self.model.settings.get("embedding_model"))

    def record(self) -> dict:
        return run_record(self.corpus_data, self.model, self.seed, self.config)


@dataclass
class Ledger:
    """What became of the runs this process claimed: labels logged (``from_spool`` of them logged
    from the spool), failed (with their error), spooled; and the error that showed the store gone."""

    spool: Spool
    logged: list = field(default_factory=list)
    from_spool: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    spooled: list = field(default_factory=list)
    store_gone: BaseException | None = None


@flow(name="benchmark", validate_parameters=False)
def benchmark(config: BenchmarkConfig) -> dict:
    """Fit every (corpus, model, seed) of ``config`` that is not finished, score and track it: the
    runs this process claims first (spooled fits of earlier runs are logged, not refitted), then
    those that other processes held and did not finish.

    A model that fails is recorded as a FAILED nested run with its error and the others go on;
    the flow then ends Failed, naming what failed. A store that stops answering ends it with a
    :class:`TrackingError` naming the spool that keeps the fits it could not log. Any other exit
    (an error of the flow itself, an interrupt) ends the parent and every claimed run FAILED or
    KILLED, with the cause, and raises.
    """
    tracker = Tracker(config.tracking_uri, config.experiment)
    ledger = Ledger(Spool.of(config.tracking_uri, config.experiment))
    parent = tracker.open_parent(config)
    try:
        with tracker.heartbeat():
            return _fit_score_and_track(config, tracker, parent, ledger)
    except BaseException as error:  # interrupts included: nothing is left RUNNING
        tracker.abandon(error)
        if not isinstance(error, Exception):  # an interrupt (the command's last line names the spool)
            raise
        if not isinstance(error, TrackingError) and (ledger.store_gone is not None or store_unavailable(error)):
            ledger.store_gone = ledger.store_gone or error
            raise TrackingError(store_gone_message(config.tracking_uri, ledger)) from error
        raise


def _fit_score_and_track(config: BenchmarkConfig, tracker: Tracker, parent: str, ledger: Ledger):
    """The benchmark's body: claim the runs, fit them concurrently, score and log each as it ends,
    then wait for those held elsewhere."""
    log = get_run_logger()
    splits = {spec.name: corpus_splits(load_corpus(spec)) for spec in config.corpora}
    check_topics_fit(splits, [(f"model {model.name!r}: num_topics", model.num_topics) for model in config.models])
    jobs = [
        Job(spec, splits[spec.name][0], model, seed, config)
        for spec in config.corpora for model in config.models for seed in config.seeds
    ]
    finished, done_elsewhere = fit_jobs(jobs, config, tracker, parent, splits, ledger, log)
    summary = {
        "experiment": config.experiment, "runs": len(jobs), "skipped_finished": len(finished),
        "claimed_elsewhere": [f"{job.label}: fitted by another process" for job in done_elsewhere],
        "logged": ledger.logged, "from_spool": ledger.from_spool, "failed": ledger.failed, "parent_run_id": parent,
    }
    tracker.close_parent(parent, summary, ledger.failed)
    if ledger.failed:
        return Failed(message=f"{len(ledger.failed)} of {len(ledger.logged) + len(ledger.failed)} runs failed: "
                      + "; ".join(ledger.failed), data=summary)
    return summary


def fit_jobs(jobs: list, config: BenchmarkConfig, tracker: Tracker, parent: str, splits: dict, ledger: Ledger,
             log) -> tuple:
    """Claim ``jobs`` under ``parent``, fit and log those this process won (with the live progress
    display), then wait for those other processes hold. Returns (jobs finished before, jobs
    another process finished); raises :class:`TrackingError` when the store went away.
    ``splits`` maps each corpus name to its (fitting corpus, held-out corpus or None)."""
    claims = tracker.claim_jobs(parent, jobs)
    finished, held, todo = _sort_claims(jobs, claims, log)
    with live_progress(len(todo), log) as progress, listening(progress), \
            (showing_worker_progress(progress) if todo or held else contextlib.nullcontext()):  # no cluster start for nothing
        _run_claimed(todo, claims, config, tracker, splits, progress, log, ledger)
        done_elsewhere = _wait_for_others(held, parent, config, tracker, splits, progress, log, ledger)
    if ledger.store_gone is not None:
        raise TrackingError(store_gone_message(config.tracking_uri, ledger))
    return finished, done_elsewhere


def _run_claimed(todo: list, claims: dict, config, tracker: Tracker, splits: dict, progress, log, ledger: Ledger):
    """Log the spooled fits of ``todo`` (fitted by an earlier run that could not log them), then fit
    the others, and those whose spooled fit cannot be logged."""
    spooled, to_fit = ledger.spool.keys(), []
    for job in todo:
        if job.key in spooled:
            spooled.discard(job.key)  # two jobs of one key: the second is fitted
            if _log_spooled(tracker, claims[job].run_id, job, ledger, log):
                progress.run_done(job.label)
                continue
        to_fit.append(job)
    _fit_all(to_fit, claims, config, tracker, splits, progress, log, ledger)


def _fit_all(todo: list, claims: dict, config, tracker: Tracker, splits: dict, progress, log, ledger: Ledger):
    """Fit and score every job of ``todo`` (where it runs) and log each as it ends; a failure is
    recorded as the job's FAILED run and the others go on."""
    futures = _submit_fits(todo, config, splits, budget=tracker.parent_id)
    started = time.perf_counter()
    for done, (future, job) in enumerate(finished_one_by_one(futures), start=1):
        run_id = claims[job].run_id
        try:
            scored = _scored(future)
        except Exception as error:  # a failed fit or scoring: record it, go on with the others
            raise_interrupt_behind(error)
            _record_failure(tracker, run_id, job, error, ledger)
            progress.run_done(job.label, failed=True)
            log.warning("[%d/%d] %s FAILED: %s", done, len(todo), job.label, error)
            continue
        _log_or_spool(tracker, run_id, job, scored, ledger, log)
        progress.run_done(job.label)
        # in the run logs; the console shows the live progress instead (this line with -v)
        log.info("[%d/%d] %s: fitted in %.1f s, scored in %.1f s (%.0f s elapsed)", done, len(todo), job.label,
                 scored.output.fit_seconds, scored.scoring_seconds, time.perf_counter() - started)


def _record_failure(tracker: Tracker, run_id: str, job: Job, error: BaseException, ledger: Ledger) -> None:
    """A failed fit as its FAILED run (unless the store is gone: the claim then goes stale and the
    next run fits it again)."""
    ledger.failed.append(f"{job.label}: {type(error).__name__}: {error}")
    if ledger.store_gone is None:
        try:
            log_failed_run(tracker, run_id, job, error)
        except Exception as failure:
            raise_interrupt_behind(failure)
            if not store_unavailable(failure):
                raise
            ledger.store_gone = failure
    tracker.open_runs.discard(run_id)


def _log_or_spool(tracker: Tracker, run_id: str, job: Job, scored, ledger: Ledger, log) -> None:
    """Log a scored fit to its claimed run and remove its artifacts' temporary folder; or keep it
    in the spool when the store is gone or full, or when an interrupt stops its logging (which is
    then raised again)."""
    record = FitRecord.of(scored, job.label)
    if ledger.store_gone is None:
        try:
            with scored.artifacts.local_folder() as folder:
                log_model_run(tracker, run_id, record, folder)
        except BaseException as error:
            _spool(ledger, job, record, scored.artifacts)
            if not (isinstance(error, Exception) and store_unavailable(error)):
                log.warning("%s: its logging stopped (%s); the fit is kept in %s", job.label, short_reason(error),
                            ledger.spool.folder)
                raise_interrupt_behind(error)
                raise
            ledger.store_gone = error
            log.warning("the tracking store at %s stopped answering (%s): finished fits are kept in %s from now on, "
                        "to be logged by the same command once it answers", tracker.tracking_uri,
                        short_reason(error), ledger.spool.folder, extra=CONSOLE)
        else:
            ledger.logged.append(job.label)
            scored.artifacts.remove()
        tracker.open_runs.discard(run_id)
        return
    _spool(ledger, job, record, scored.artifacts)
    tracker.open_runs.discard(run_id)


def _spool(ledger: Ledger, job: Job, record: FitRecord, artifacts) -> None:
    try:
        ledger.spool.put(job.key, record, artifacts)
    except OSError as error:
        raise TrackingError(
            f"could not log the fit of {job.label}, nor keep it in the spool {ledger.spool.folder} ({error}); its "
            f"artifacts are in {artifacts.path or 'memory'}: free some space, or set TOPICBENCH_SPOOL to another disk"
        ) from error
    ledger.spooled.append(job.label)


def _log_spooled(tracker: Tracker, run_id: str, job: Job, ledger: Ledger, log) -> bool:
    """Log the spooled fit of ``job`` to its new claim, then drop it from the spool (unless the
    store is gone again: it stays there). An entry that cannot be logged is moved aside: when
    that shows before anything is logged, False (the job is to be fitted now); when the store
    refuses it midway, its run is recorded FAILED (the next run fits it again)."""
    if ledger.store_gone is None:
        try:
            record, artifacts = ledger.spool.entry(job.key)
            _check_params_agree(record, job)
        except UnusableEntry as error:
            _set_aside(ledger, job, str(error), "fitted again now", log)
            return False
        record = replace(record, tags={**record.tags, "topicbench.logged_from_spool": str(ledger.spool.folder / job.key)})
        try:
            log_model_run(tracker, run_id, record, artifacts)
        except Exception as error:
            raise_interrupt_behind(error)
            if not store_unavailable(error):
                reason = f"the store refused it: {short_reason(error)}"
                aside = _set_aside(ledger, job, reason, "its run is FAILED and the next run fits it again", log)
                _record_failure(tracker, run_id, job, UnusableEntry(f"its spooled fit ({aside}) could not be logged: "
                                                                    f"{reason}"), ledger)
                return True
            ledger.store_gone = error
        else:
            ledger.spool.remove(job.key)
            ledger.logged.append(job.label)
            ledger.from_spool.append(job.label)
            log.info("%s: logged from the spool, not refitted", job.label, extra=CONSOLE)
            return True
    ledger.spooled.append(job.label)
    tracker.open_runs.discard(run_id)
    return True


def _check_params_agree(record: FitRecord, job: Job) -> None:
    """An :class:`UnusableEntry` when ``record`` gives a param of ``job``'s claimed run another
    value (MLflow refuses to change a param, and would refuse it after logging part of it)."""
    claimed = claimed_params(job)
    clashes = sorted(name for name, value in record.params.items() if claimed.get(name, value) != value)
    if clashes:
        raise UnusableEntry(f"its params {', '.join(clashes[:5])} differ from those of the run it was fitted for "
                            f"(e.g. {clashes[0]}={record.params[clashes[0]]!r}, not {claimed[clashes[0]]!r})"[:500])


def _set_aside(ledger: Ledger, job: Job, reason: str, outcome: str, log) -> str:
    """Move the spool entry of ``job`` aside (kept, never deleted) and say so once, with
    ``reason`` and ``outcome``; where it went (or, if it could not be moved, where it is)."""
    entry = ledger.spool.folder / job.key
    try:
        where = f"moved to {ledger.spool.set_aside(job.key, reason)}"
    except OSError as error:
        where = f"left in place, as it could not be moved aside ({error.strerror or error})"
    log.warning("%s: the spooled fit in %s cannot be logged (%s); %s, %s", job.label, entry, reason, where, outcome,
                extra=CONSOLE)
    return where


def _wait_for_others(held: list, parent: str, config, tracker: Tracker, splits: dict, progress, log,
                     ledger: Ledger) -> list:
    """Wait until each run of ``held`` (claimed by other processes) is FINISHED, claiming again
    and fitting those whose claim ends otherwise (KILLED, FAILED, or its owner gone). The wait is
    bounded by the holders' lives: a dead holder's claim is stale at once on this host, after
    ``TOPICBENCH_STALE_RUN_SECONDS`` without a heartbeat elsewhere. Returns the jobs another
    process finished."""
    done_elsewhere, noted, waited = [], 0.0, time.monotonic()
    while held and ledger.store_gone is None:
        states = tracker.claim_states(held)
        done_elsewhere += [job for job, state in states.items() if state == "finished"]
        free = [job for job, state in states.items() if state is None]
        held = [job for job, state in states.items() if state == "held"]
        if free:
            claims = tracker.claim_jobs(parent, free)
            won = [job for job in free if claims[job].run_id]
            done_elsewhere += [job for job in free if claims[job].finished_by]
            held += [job for job in free if claims[job].held_by]
            if won:
                log.info("claimed again %d runs that another process did not finish: %s", len(won),
                         ", ".join(job.label for job in won), extra=CONSOLE)
                progress.total += len(won)
                _run_claimed(won, claims, config, tracker, splits, progress, log, ledger)
        if held and time.monotonic() - noted >= WAIT_NOTE_SECONDS:
            noted = time.monotonic()
            log.info("waiting for %d runs that other processes are fitting (%.0f s so far): %s", len(held),
                     noted - waited, ", ".join(job.label for job in held[:5]) + (", ..." if len(held) > 5 else ""),
                     extra=CONSOLE)
        if held:
            time.sleep(WAIT_POLL_SECONDS)
    return done_elsewhere


def store_gone_message(tracking_uri: str, ledger: Ledger) -> str:
    """The last line of a benchmark whose store stopped answering: why, and where its fits are."""
    reason = short_reason(ledger.store_gone) if ledger.store_gone is not None else "unknown"
    if not ledger.spooled:
        return (f"the tracking store at {tracking_uri} stopped answering ({reason}); no fit was lost: the same "
                f"command resumes once it answers")
    return (f"the tracking store at {tracking_uri} stopped answering ({reason}): {len(ledger.spooled)} fitted runs "
            f"are kept in {ledger.spool.folder}; run the same command once the store answers to log them without "
            f"refitting")


def short_reason(error: BaseException) -> str:
    """What the store's failure was, in a few words."""
    text = " ".join(str(cause) for cause in exception_chain(error))
    for words, reason in (("Connection refused", "connection refused"), ("disk is full", "its disk is full"),
                          ("No space left", "its disk is full"), ("timed out", "timed out"),
                          ("Max retries exceeded", "no answer")):
        if words in text:
            return reason
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


def _sort_claims(jobs: list, claims: dict, log):
    """(finished elsewhere or before, jobs other processes hold, jobs to run)."""
    finished = [job for job in jobs if claims[job].finished_by]
    held = [job for job in jobs if claims[job].held_by]
    for job in held:
        log.info("%s: claimed by %s (waited for after this process's runs)", job.label, claims[job].held_by,
                 extra=CONSOLE)
    # Costliest first (largest corpora, then most topics): the longest fits start early and the run
    # does not end on one long fit while the other workers idle (the order of results does not matter).
    todo = sorted((job for job in jobs if claims[job].run_id),
                  key=lambda job: (-job.corpus_data.n_tokens, -(job.model.num_topics or 0)))
    log.info("%d runs: %d already finished (skipped), %d fitted by other processes, %d to run",
             len(jobs), len(finished), len(held), len(todo), extra=CONSOLE)
    return finished, held, todo


def _submit_fits(todo: list, config: BenchmarkConfig, splits: dict, budget: str | None = None) -> dict:
    """One fit-and-score task per job (after its corpus's document embeddings, where the model
    reads them). ``budget`` names what the LLM metrics' token budget is counted against (this
    benchmark's parent run)."""
    embeddings = _embed_documents_once(todo)
    flow_host = socket.gethostname()
    return {
        fit_and_score.submit(
            job.corpus_data, job.model.model, job.model.num_topics, job.model.settings, job.seed,
            splits[job.corpus.name][1], job.label, metrics=job.metrics, context_metrics=config.metrics,
            top_n=config.top_n, flow_host=flow_host, llm=job.llm, llm_budget=budget,
            wait_for=embeddings.get(job.embedding_key, []),
        ): job
        for job in todo
    }


def _scored(future):
    """The :class:`~topicbench.tasks.run.fit.ScoredFit` of a finished task; raises its fit's or
    scoring's error."""
    result = future.result(raise_on_failure=False)
    if isinstance(result, BaseException):
        raise result
    return result


def finished_one_by_one(futures: dict, poll_seconds: float = 0.5):
    """Yield (future, value) from ``futures`` (a dict future -> value) as each future finishes,
    removing it from the dict first.

    The caller's reference is then the only one left, so a fit's output (in this process and on
    the Dask worker that made it) is freed once it has been scored and logged. Prefect's
    ``as_completed`` keeps every future, hence every output, until the last one finishes: on the
    paper's corpora that ran this process out of memory.
    """
    handover = []  # emptied by each yield: this frame holds no finished future while suspended
    while futures:
        ready = next((future for future in futures if future.wrapped_future.done()), None)
        if ready is None:
            time.sleep(poll_seconds)
            continue
        handover.append((ready, futures.pop(ready)))
        ready = None
        yield handover.pop()


def _embed_documents_once(jobs) -> dict:
    """One embedding task per (corpus, embedding model) that some job reads, as wait_for lists."""
    tasks = {}
    for job in jobs:
        if job.embedding_key is not None and job.embedding_key not in tasks:
            tasks[job.embedding_key] = [embed_documents.submit(job.corpus_data, job.embedding_key[1])]
    return tasks


def run_benchmark(config: BenchmarkConfig):
    """Run the benchmark flow on the config's task runner.

    Returns
    -------
    prefect.State
        The flow's final state: Completed (its result is the summary dict), or Failed when some
        fits failed (``state.message``: "N of M runs failed: label: error; ...").

    Raises
    ------
    TrackingError
        The tracking store cannot be used (checked before any work).
    PrefectServerStartError
        The temporary Prefect API server did not start (twice).
    Exception
        Any failure of the flow itself (not of a single fit), re-raised as the original exception
        with its type and message, e.g. ``InputError("corpus not found: ...")`` or
        ``OSError("Timed out trying to connect to tcp://...")``: its message is the real cause.
    KeyboardInterrupt
        On SIGINT (and SIGTERM, once the CLI turns it into KeyboardInterrupt), after the parent
        and the claimed runs were marked KILLED and the temporary servers stopped.
    """
    check_tracking_uri(config.tracking_uri)  # before any work: an unusable store fails now
    check_free_space(config.tracking_uri)
    prefect_defaults()
    prepare_store = lambda: Tracker(config.tracking_uri, config.experiment)  # noqa: E731 (while the server starts)
    with shared_prefect_server(uses_worker_processes(config.workers, config.scheduler), meanwhile=prepare_store):
        runner = task_runner(config.workers, config.scheduler)
        state = benchmark.with_options(task_runner=runner)(config, return_state=True)
    raise_flow_error(state)
    return state


def raise_flow_error(state) -> None:
    """Raise the exception that stopped the flow itself, if one did (a Failed or Crashed state whose
    result is an exception rather than the summary of failed fits)."""
    if not (state.is_failed() or state.is_crashed()):
        return
    outcome = state.result(raise_on_failure=False)
    if isinstance(outcome, BaseException):
        raise outcome
