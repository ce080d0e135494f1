"""The benchmark flow: corpora x models x seeds, fitted and scored concurrently where each fit runs
(a Dask worker, or this process's thread), tracked in MLflow by this process.

Each fit task scores its own output and writes its artifacts where it ran
(:func:`~topicbench.tasks.run.fit.fit_and_score`) and sends back scores and the artifacts' folder,
never matrices: the flow process only claims, tracks and reports. What becomes of each run
(finished before, held by another process, logged from the spool, logged, spooled, FAILED) is
decided and recorded in :mod:`~topicbench.flows.benchmark_runs`.

No fit is lost to the store: one that cannot be logged is kept in the spool, whose folder the
command's last line names, and the next run of the same config logs it without refitting. Once the
store is found gone it is not waited on again: the fits still running are spooled as they end, and
the flow then fails naming the spool. Runs that another process holds are waited for after this
process's own, and claimed again if their claim ends otherwise than FINISHED, so that every run
ends done whichever process does it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time

from prefect import flow, get_run_logger
from prefect.states import Failed

from topicbench.tasks.run.corpus import check_topics_fit, coherence_references, corpus_splits, load_corpus
from topicbench.tasks.run.embeddings import embed_documents
from topicbench.tasks.run.fit import fit_and_score
from topicbench.tasks.run.progress import listening
from topicbench.tasks.store.spool import Spool
from topicbench.tasks.store.interrupts import raise_interrupt_behind
from topicbench.tasks.store.checks import (
    TrackingError,
    check_free_space,
    check_tracking_uri,
    store_unavailable,
)
from topicbench.tasks.store.tracking import Tracker

from topicbench.flows.config.model import BenchmarkConfig
from .benchmark_runs import (
    TOPICS_USED_METRIC,
    Job,
    Ledger,
    log_or_spool,
    log_spooled_fits,
    look_at_held,
    matched_jobs,
    record_failure,
    sort_claims,
    store_gone_message,
)
from .console import CONSOLE
from .progress import live_progress
from .runtime import prefect_defaults, shared_prefect_server, task_runner, uses_worker_processes
from .worker_progress import showing_worker_progress

logger = logging.getLogger(__name__)

#: Seconds between two looks at the runs other processes hold, and between two console lines
#: saying what is waited for.
WAIT_POLL_SECONDS = 5.0
WAIT_NOTE_SECONDS = 30.0


@flow(name="benchmark", validate_parameters=False)
def benchmark(config: BenchmarkConfig) -> dict:
    """Fit every (corpus, model, seed) of ``config`` that is not finished, score and track it: the
    runs this process claims first (spooled fits of earlier runs are logged, not refitted), then
    those that other processes held and did not finish. Models whose K is matched
    (``num_topics: {match: LABEL}``) are fitted after all of that, each at the K that LABEL's
    finished fit used on the same corpus and seed (:func:`~topicbench.flows.benchmark_runs.matched_jobs`).

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
    coherence_references(config, splits)  # a reference a corpus cannot give fails here, before any fit
    own_k = [model for model in config.models if model.matched_label is None]
    check_topics_fit(splits, [(f"model {model.name!r}: num_topics", model.num_topics) for model in own_k])
    jobs = [
        Job(spec, splits[spec.name][0], model, seed, config)
        for spec in config.corpora for model in own_k for seed in config.seeds
    ]
    finished, done_elsewhere = fit_jobs(jobs, config, tracker, parent, splits, ledger, log)
    if len(own_k) < len(config.models):  # then the fits at a matched K, once the K they match are known
        matched, more_finished, more_elsewhere = _fit_matched(jobs, config, tracker, parent, splits, ledger, log)
        jobs, finished, done_elsewhere = jobs + matched, finished + more_finished, done_elsewhere + more_elsewhere
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
    finished, held, todo = sort_claims(jobs, claims, log)
    # Costliest first (largest corpora, then most topics): the longest fits start early and the run
    # does not end on one long fit while the other workers idle (the order of results does not matter).
    todo.sort(key=lambda job: (-job.corpus_data.n_tokens, -(job.model.num_topics or 0)))
    with live_progress(len(todo), log) as progress, listening(progress), \
            (showing_worker_progress(progress) if todo or held else contextlib.nullcontext()):  # no cluster start for nothing
        _run_claimed(todo, claims, config, tracker, splits, progress, log, ledger)
        done_elsewhere = _wait_for_others(held, parent, config, tracker, splits, progress, log, ledger)
    if ledger.store_gone is not None:
        raise TrackingError(store_gone_message(config.tracking_uri, ledger))
    return finished, done_elsewhere


def _fit_matched(fitted: list, config: BenchmarkConfig, tracker: Tracker, parent: str, splits: dict, ledger: Ledger,
                 log) -> tuple:
    """Fit the models whose K is matched (``num_topics: {match: LABEL}``) at the K that LABEL's
    finished fits (``fitted``, here or in another process, now or before) used on each corpus and
    seed; a run whose match did not finish is counted failed, with why. Returns (the matched jobs,
    those finished before, those another process finished)."""
    finished_runs = tracker.finished_runs([job.key for job in fitted])
    topics_used = {key: run.data.metrics.get(TOPICS_USED_METRIC) for key, run in finished_runs.items()}
    jobs, missing = matched_jobs(config, splits, fitted, topics_used)
    for line in missing:
        log.warning("%s", line, extra=CONSOLE)
    ledger.failed.extend(missing)
    check_topics_fit(splits, [(f"model {job.model.name!r}: num_topics matched to {job.matched_to!r}", job.model.num_topics)
                              for job in jobs])
    return (jobs, *fit_jobs(jobs, config, tracker, parent, splits, ledger, log))


def _run_claimed(todo: list, claims: dict, config, tracker: Tracker, splits: dict, progress, log, ledger: Ledger):
    """Log the spooled fits of ``todo`` (fitted by an earlier run that could not log them), then fit
    the others, and those whose spooled fit cannot be logged."""
    to_fit = log_spooled_fits(todo, claims, tracker, ledger, progress, log)
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
            record_failure(tracker, run_id, job, error, ledger)
            progress.run_done(job.label, failed=True)
            log.warning("[%d/%d] %s FAILED: %s", done, len(todo), job.label, error)
            continue
        log_or_spool(tracker, run_id, job, scored, ledger, log)
        progress.run_done(job.label)
        # in the run logs; the console shows the live progress instead (this line with -v)
        log.info("[%d/%d] %s: fitted in %.1f s, scored in %.1f s (%.0f s elapsed)", done, len(todo), job.label,
                 scored.output.fit_seconds, scored.scoring_seconds, time.perf_counter() - started)


def _wait_for_others(held: list, parent: str, config, tracker: Tracker, splits: dict, progress, log,
                     ledger: Ledger) -> list:
    """Wait until each run of ``held`` (claimed by other processes) is FINISHED, claiming again
    and fitting those whose claim ends otherwise (KILLED, FAILED, or its owner gone). The wait is
    bounded by the holders' lives: a dead holder's claim is stale at once on this host, after
    ``TOPICBENCH_STALE_RUN_SECONDS`` without a heartbeat elsewhere. Returns the jobs another
    process finished."""
    done_elsewhere, noted, waited = [], 0.0, time.monotonic()
    while held and ledger.store_gone is None:
        look = look_at_held(held, parent, tracker)
        done_elsewhere += look.finished
        held = look.held
        if look.won:
            log.info("claimed again %d runs that another process did not finish: %s", len(look.won),
                     ", ".join(job.label for job in look.won), extra=CONSOLE)
            progress.total += len(look.won)
            _run_claimed(look.won, look.claims, config, tracker, splits, progress, log, ledger)
        if held and time.monotonic() - noted >= WAIT_NOTE_SECONDS:
            noted = time.monotonic()
            log.info("waiting for %d runs that other processes are fitting (%.0f s so far): %s", len(held),
                     noted - waited, ", ".join(job.label for job in held[:5]) + (", ..." if len(held) > 5 else ""),
                     extra=CONSOLE)
        if held:
            time.sleep(WAIT_POLL_SECONDS)
    return done_elsewhere


def _submit_fits(todo: list, config: BenchmarkConfig, splits: dict, budget: str | None = None) -> dict:
    """One fit-and-score task per job (after its corpus's document embeddings, where the model
    reads them). ``budget`` names what the LLM metrics' token budget is counted against (this
    benchmark's parent run)."""
    embeddings = _embed_documents_once(todo)
    flow_host = socket.gethostname()
    references, oov = coherence_references(config, splits), config.coherence_settings()[0]
    return {
        fit_and_score.submit(
            job.corpus_data, job.model.model, job.model.num_topics, job.model.settings, job.seed,
            splits[job.corpus.name][1], job.label, metrics=job.metrics, context_metrics=config.metrics,
            top_n=config.top_n, flow_host=flow_host, llm=job.llm, llm_budget=budget,
            reference=references[job.corpus.name], oov=oov, wait_for=embeddings.get(job.embedding_key, []),
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
