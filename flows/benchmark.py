"""The benchmark flow: corpora x models x seeds, fitted concurrently, scored, tracked in MLflow."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass

from prefect import flow, get_run_logger
from prefect.states import Failed

from topicbench.baselines.registry import MODELS
from topicbench.core.corpus import Corpus
from topicbench.tasks.corpus import load_corpus
from topicbench.tasks.embeddings import embed_documents
from topicbench.tasks.fit import fit_model, thread_limit
from topicbench.tasks.metrics import metric_context, score_model_output
from topicbench.tasks.records import settings_key
from topicbench.tasks.tracking import Tracker, check_tracking_uri, log_failed_run, log_model_run, run_record

from .config import BenchmarkConfig, CorpusSpec, ModelSpec
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
    """Fit every (corpus, model, seed) of ``config`` not already finished, score and track it.

    A model that fails is recorded as a FAILED nested run with its error and the others go on;
    the flow then ends Failed, naming what failed.
    """
    log = get_run_logger()
    tracker = Tracker(config.tracking_uri, config.experiment)
    parent = tracker.open_parent(config)
    finished = tracker.finished_run_keys()
    splits = {spec.name: _splits(load_corpus(spec)) for spec in config.corpora}
    jobs = [
        Job(spec, splits[spec.name][0], model, seed, config)
        for spec in config.corpora for model in config.models for seed in config.seeds
    ]
    # Largest corpora first: the costliest fits start early and the run does not end on one long
    # fit while the other workers idle (the order of results does not matter).
    todo = sorted((job for job in jobs if job.key not in finished), key=lambda job: -job.corpus_data.n_tokens)
    log.info("%d runs: %d already finished (skipped), %d to run", len(jobs), len(jobs) - len(todo), len(todo))
    embeddings = _embed_documents_once(todo)
    futures = {
        fit_model.submit(
            job.corpus_data, job.model.model, job.model.num_topics, job.model.settings, job.seed,
            splits[job.corpus.name][1], wait_for=embeddings.get(job.embedding_key, []),
        ): job
        for job in todo
    }
    contexts = {}
    failed, logged = [], []
    started = time.perf_counter()
    for done, (future, job) in enumerate(finished_one_by_one(futures), start=1):
        result = future.result(raise_on_failure=False)
        try:
            if isinstance(result, BaseException):
                raise result
            output, heldout_theta = result
            if job.corpus.name not in contexts:
                contexts[job.corpus.name] = metric_context(
                    job.corpus_data, config.metrics, config.top_n, splits[job.corpus.name][1]
                )
            with _scoring_threads(config):
                scores, skipped = score_model_output(output, contexts[job.corpus.name], job.metrics, job.seed, heldout_theta)
        except Exception as error:  # a failed fit or scoring: record it, go on with the others
            log_failed_run(tracker, parent, job, error)
            failed.append(f"{job.label}: {type(error).__name__}: {error}")
            log.warning("[%d/%d] %s FAILED: %s", done, len(todo), job.label, error)
            continue
        log_model_run(tracker, parent, job, output, scores, skipped)
        logged.append(job.label)
        log.info("[%d/%d] %s: fitted in %.1f s (%.0f s elapsed)", done, len(todo), job.label,
                 output.fit_seconds, time.perf_counter() - started)
    summary = {
        "experiment": config.experiment, "runs": len(jobs), "skipped_finished": len(jobs) - len(todo),
        "logged": logged, "failed": failed, "parent_run_id": parent,
    }
    tracker.close_parent(parent, summary, failed)
    if failed:
        return Failed(message=f"{len(failed)} of {len(todo)} runs failed: " + "; ".join(failed), data=summary)
    return summary


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


def _scoring_threads(config: BenchmarkConfig):
    """Threads for scoring in the flow's process: one while local worker processes already use
    every core (more would only oversubscribe them), else numba's and BLAS's defaults."""
    if config.scheduler or config.workers < (os.cpu_count() or 1):
        return contextlib.nullcontext()
    return thread_limit(1)


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
    """Run the benchmark flow on the config's task runner; returns the flow's final state."""
    check_tracking_uri(config.tracking_uri)  # before any work: an unreachable store fails now
    prefect_defaults()
    needs_server = uses_worker_processes(config.workers, config.scheduler)
    with shared_prefect_server(needs_server):
        runner = task_runner(config.workers, config.scheduler)
        return benchmark.with_options(task_runner=runner)(config, return_state=True)
