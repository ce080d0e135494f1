"""The benchmark flow: corpora x models x seeds, fitted and scored concurrently where each fit runs
(a Dask worker, or this process's thread), tracked in MLflow by this process.

Each fit task scores its own output and writes its artifacts where it ran
(:func:`~topicbench.tasks.fit.fit_and_score`) and sends back scores and the artifacts' folder,
never matrices: the flow process only claims, tracks and reports.
"""

from __future__ import annotations

import logging
import socket
import time
from dataclasses import dataclass

from prefect import flow, get_run_logger
from prefect.exceptions import TerminationSignal
from prefect.states import Failed

from topicbench.baselines.registry import MODELS
from topicbench.core.corpus import Corpus
from topicbench.tasks.corpus import load_corpus
from topicbench.tasks.embeddings import embed_documents
from topicbench.tasks.fit import fit_and_score
from topicbench.tasks.progress import listening
from topicbench.tasks.records import settings_key
from topicbench.tasks.tracking import (
    Tracker, check_tracking_uri, exception_chain, log_failed_run, log_model_run, run_record,
)

from .config import BenchmarkConfig, CorpusSpec, ModelSpec
from .console import CONSOLE
from .progress import live_progress
from .runtime import prefect_defaults, shared_prefect_server, task_runner, uses_worker_processes

logger = logging.getLogger(__name__)


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
        return settings_key(
            self.corpus_data.fingerprint(), self.model.model, self.model.num_topics, self.model.settings,
            self.seed, sorted(self.metrics), list(self.config.top_n),
        )

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


@flow(name="benchmark", validate_parameters=False)
def benchmark(config: BenchmarkConfig) -> dict:
    """Fit every (corpus, model, seed) of ``config`` that is neither finished nor being fitted by
    another process on the same store, score and track it.

    A model that fails is recorded as a FAILED nested run with its error and the others go on;
    the flow then ends Failed, naming what failed. Any other exit (an error of the flow itself, an
    interrupt) ends the parent and every claimed run FAILED or KILLED, with the cause, and raises.
    """
    tracker = Tracker(config.tracking_uri, config.experiment)
    parent = tracker.open_parent(config)
    try:
        with tracker.heartbeat():
            return _fit_score_and_track(config, tracker, parent)
    except BaseException as error:  # interrupts included: nothing is left RUNNING
        tracker.abandon(error)
        raise


def _fit_score_and_track(config: BenchmarkConfig, tracker: Tracker, parent: str):
    """The benchmark's body: claim the runs, fit them concurrently, score and log each as it ends."""
    log = get_run_logger()
    splits = {spec.name: _splits(load_corpus(spec)) for spec in config.corpora}
    jobs = [
        Job(spec, splits[spec.name][0], model, seed, config)
        for spec in config.corpora for model in config.models for seed in config.seeds
    ]
    claims = tracker.claim_jobs(parent, jobs)
    finished, elsewhere, todo = _sort_claims(jobs, claims, log)
    with live_progress(len(todo), log) as progress, listening(progress):
        logged, failed = _fit_all(todo, claims, config, tracker, splits, progress, log)
    summary = {
        "experiment": config.experiment, "runs": len(jobs), "skipped_finished": len(finished),
        "claimed_elsewhere": elsewhere, "logged": logged, "failed": failed, "parent_run_id": parent,
    }
    tracker.close_parent(parent, summary, failed)
    if failed:
        return Failed(message=f"{len(failed)} of {len(todo)} runs failed: " + "; ".join(failed), data=summary)
    return summary


def _fit_all(todo: list, claims: dict, config: BenchmarkConfig, tracker: Tracker, splits: dict, progress, log):
    """Fit and score every job of ``todo`` (where it runs) and log each as it ends; a failure is
    recorded as the job's FAILED run and the others go on. Returns the labels logged and the failures."""
    futures = _submit_fits(todo, config, splits)
    failed, logged = [], []
    started = time.perf_counter()
    for done, (future, job) in enumerate(finished_one_by_one(futures), start=1):
        run_id = claims[job].run_id
        try:
            scored = _scored(future)
        except Exception as error:  # a failed fit or scoring: record it, go on with the others
            raise_interrupt_behind(error)
            log_failed_run(tracker, run_id, job, error)
            tracker.open_runs.discard(run_id)
            failed.append(f"{job.label}: {type(error).__name__}: {error}")
            progress.run_done(job.label, failed=True)
            log.warning("[%d/%d] %s FAILED: %s", done, len(todo), job.label, error)
            continue
        _log_scored(tracker, run_id, job, scored)
        logged.append(job.label)
        progress.run_done(job.label)
        # in the run logs; the console shows the live progress instead (this line with -v)
        log.info("[%d/%d] %s: fitted in %.1f s, scored in %.1f s (%.0f s elapsed)", done, len(todo), job.label,
                 scored.output.fit_seconds, scored.scoring_seconds, time.perf_counter() - started)
    return logged, failed


def _log_scored(tracker: Tracker, run_id: str, job: Job, scored) -> None:
    """Log a scored fit to its claimed run, then remove its artifacts' temporary folder."""
    try:
        log_model_run(tracker, run_id, job, scored)
    except Exception as error:
        raise_interrupt_behind(error)
        raise
    finally:
        scored.artifacts.remove()
    tracker.open_runs.discard(run_id)


def _sort_claims(jobs: list, claims: dict, log):
    """(finished elsewhere or before, lines naming the runs other processes hold, jobs to run)."""
    finished = [job for job in jobs if claims[job].finished_by]
    elsewhere = [f"{job.label}: claimed by {claims[job].held_by}" for job in jobs if claims[job].held_by]
    for line in elsewhere:
        log.info("skipped %s", line, extra=CONSOLE)
    # Largest corpora first: the costliest fits start early and the run does not end on one long
    # fit while the other workers idle (the order of results does not matter).
    todo = sorted((job for job in jobs if claims[job].run_id), key=lambda job: -job.corpus_data.n_tokens)
    log.info("%d runs: %d already finished (skipped), %d fitted by other processes, %d to run",
             len(jobs), len(finished), len(elsewhere), len(todo), extra=CONSOLE)
    return finished, elsewhere, todo


def _submit_fits(todo: list, config: BenchmarkConfig, splits: dict) -> dict:
    """One fit-and-score task per job (after its corpus's document embeddings, where the model
    reads them)."""
    embeddings = _embed_documents_once(todo)
    flow_host = socket.gethostname()
    return {
        fit_and_score.submit(
            job.corpus_data, job.model.model, job.model.num_topics, job.model.settings, job.seed,
            splits[job.corpus.name][1], job.label, metrics=job.metrics, context_metrics=config.metrics,
            top_n=config.top_n, flow_host=flow_host, wait_for=embeddings.get(job.embedding_key, []),
        ): job
        for job in todo
    }


def _scored(future):
    """The :class:`~topicbench.tasks.fit.ScoredFit` of a finished task; raises its fit's or
    scoring's error."""
    result = future.result(raise_on_failure=False)
    if isinstance(result, BaseException):
        raise result
    return result


def raise_interrupt_behind(error: BaseException) -> None:
    """Raise the interrupt that ``error`` was raised while handling, if any.

    Logging runs Prefect tasks in this (the main) thread, so Ctrl-C can land inside Prefect's task
    engine before the task run exists; the engine's crash handler then fails with
    ``ValueError("Task run is not set")``, and the interrupt survives only as that error's context.
    Without this the interrupt would be recorded as one failed fit and the benchmark would go on.
    """
    for cause in exception_chain(error):
        if isinstance(cause, (KeyboardInterrupt, SystemExit, TerminationSignal)):
            raise cause


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


def _splits(corpus: Corpus):
    """(fitting corpus, held-out corpus or None): OCTIS 'test' documents are held out when present."""
    if corpus.partitions is not None and "test" in corpus.partitions and "train" in corpus.partitions:
        return corpus.split("train"), corpus.split("test")
    return corpus, None


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
    prefect_defaults()
    with shared_prefect_server(uses_worker_processes(config.workers, config.scheduler)):
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
