"""Prefect tasks: fit one model with one seed (runs on the flow's task runner, e.g. Dask); and fit,
score and write its artifacts there, so that only scores and the artifacts' folder come back."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field

from typing import TYPE_CHECKING

from prefect import task
from prefect.cache_policies import NONE

from topicbench.core.jsonl import json_lines
from topicbench.tasks.store.artifacts import (
    FIT_WARNINGS,
    LLM_FIT_RECORDS,
    LLM_RECORDS,
    TOPIC_DOCUMENTS,
    TOPIC_SCORES,
    ArtifactFolder,
    topic_documents_text,
    topic_scores_text,
)
from topicbench.tasks.run import progress
from topicbench.tasks.run.fit_warnings import capturing_warnings, warning_lines
from topicbench.tasks.run.progress import fit_progress

# The models, the metrics and numba are imported where a fit runs, not where the flow that sends it
# imports this module: the flow's start (before its first fit) has no use for them (seconds of CPU).
if TYPE_CHECKING:
    import numpy as np

    from topicbench.core.corpus import Corpus
    from topicbench.core.output import TopicModelOutput


@dataclass(frozen=True, eq=False)
class FitResult:
    """What a fit sends back to the flow: the output, the model's resolved values (tracked as
    ``resolved.<name>``), p(topic | document) of the held-out documents where the model can
    infer them, where it was fitted (:func:`fit_location`, tracked as ``topicbench.fitted_on.*``
    tags), and what was asked, the fitted model's ``get_params()`` (K, the seed and every setting,
    defaults filled in; tracked as ``settings.<name>``)."""

    output: TopicModelOutput
    resolved: dict
    heldout_theta: np.ndarray | None = None
    fitted_on: dict = field(default_factory=dict)
    params: dict | None = None
    llm_records: list = field(default_factory=list)


@task(name="fit_model", retries=0, cache_policy=NONE)
def fit_model(
    corpus: Corpus, model: str, num_topics, settings: dict, seed: int, heldout: Corpus | None = None,
    label: str | None = None, *, llm=None, llm_budget=None,
) -> FitResult:
    """``MODELS.get(model)(num_topics, random_state=seed, **settings).fit(corpus)``, plus
    p(topic | document) of the ``heldout`` documents for models that can infer them. numba and
    BLAS threads are held to the Dask worker's thread count when it runs inside one. Fits never
    retry. The fit's progress, under ``label`` (default "model@corpus seed N"), goes to the
    benchmark's live display or the run logs (:func:`~topicbench.tasks.run.progress.fit_progress`).
    A model that asks an LLM itself (``asks_llm``: TopicGPT) asks the endpoint of ``llm``
    ((endpoint, judge settings)) through the judges' client, cache and token budget
    (``llm_budget``); what it asked is in ``llm_records`` and its cost in the output's ``extra``
    as ``fit_llm_requests``, ``fit_llm_cached_replies``, ``fit_llm_prompt_tokens``,
    ``fit_llm_completion_tokens`` (and ``fit_llm_cost`` where the endpoint states prices). A fit
    in the flow's own process stops at its next step once the flow stops listening to it
    (:func:`stops_with_its_flow`)."""
    from topicbench.baselines.registry import MODELS
    from topicbench.core.threads import worker_threads

    label = label or f"{model}@{corpus.name} seed {seed}"
    stop_requested = stops_with_its_flow()
    with worker_threads(), fit_progress(label) as on_progress:
        estimator = MODELS.get(model)(num_topics, random_state=seed, **settings)
        judge = _hand_llm(estimator, llm, llm_budget)
        estimator.fit(corpus, on_progress=on_progress, stop_requested=stop_requested,
                      on_phase=lambda phase: progress.fit_phase(label, phase))
        theta = None
        if heldout is not None and estimator.supports_transform:
            theta = estimator.transform(heldout)
        output, records = estimator.output_, judge.take_records() if judge is not None else []
        if records:
            from dataclasses import replace

            from topicbench.tasks.llm.judge import usage_of

            cost = {f"fit_{key}": value for key, value in usage_of(records, llm[0]).items()}
            output = replace(output, extra={**output.extra, **cost})
        return FitResult(output, dict(estimator.resolved_), theta, fit_location(), estimator.get_params(), records)


def stops_with_its_flow():
    """The ``stop_requested`` of a fit that runs in its flow's own process (the thread task
    runner): true once the flow's progress display no longer listens, i.e. the flow was
    interrupted (SIGINT, or SIGTERM, which the CLI turns into one) or failed and nobody will log
    the fit. Why stop it: a thread cannot be killed, and a step of a C extension (a tomotopy
    sweep) holds the interpreter, so the interrupted flow would get it back for one store write
    per step while closing its runs, and its runs stayed RUNNING for minutes. None where no flow
    listens in this process (a Dask worker: its fits stop through
    :func:`~topicbench.tasks.store.abandoned.stop_if_abandoned`; a model fitted directly)."""
    listener = progress.current_listener()  # the display the flow registered (progress.listening), if any
    if listener is None:
        return None
    return lambda: progress.current_listener() is not listener


def _hand_llm(estimator, llm, budget):
    """The judges' client for a model that asks an LLM itself (None for any other model, or
    without an endpoint: the model's fit then says what to give)."""
    if not getattr(estimator, "asks_llm", False) or llm is None:
        return None
    from topicbench.tasks.llm.judge import EndpointJudge

    judge = EndpointJudge(llm[0], budget=budget)
    estimator.ask_with(judge)
    return judge


@dataclass(frozen=True)
class OutputSummary:
    """What tracking logs of an output besides its artifacts (the fields of
    :class:`~topicbench.core.output.TopicModelOutput` of those names; no matrices), and
    ``vocabulary_size``, its vocabulary's length (the uniform model's V; None where not known)."""

    fit_seconds: float
    n_topics: int
    peak_memory_mb: float | None
    extra: dict
    vocabulary_size: int | None = None

    @classmethod
    def of(cls, output: TopicModelOutput) -> "OutputSummary":
        return cls(output.fit_seconds, output.n_topics, output.peak_memory_mb, dict(output.extra), len(output.vocabulary))


@dataclass(frozen=True, eq=False)
class ScoredFit:
    """What a fit scored where it ran sends back to the flow: no matrices.

    Attributes
    ----------
    output : OutputSummary
    resolved : dict
        The model's resolved values (tracked as ``resolved.<name>``).
    scores : dict
        Score key -> value.
    skipped : dict
        Metric (or ``"top_n ..."``) -> why it was not scored.
    artifacts : ArtifactFolder
        The output's artifacts, written where it was fitted.
    fitted_on : dict
        :func:`fit_location`.
    scoring_seconds : float
        Time spent scoring (the metric context's first build included).
    context_built : bool
        Whether this scoring built the corpus's metric context (its counts), or reused this
        process's (:func:`~topicbench.tasks.run.metric_context.process_metric_context`).
    params : dict or None
        The fitted model's ``get_params()`` (:attr:`FitResult.params`).
    """

    output: OutputSummary
    resolved: dict
    scores: dict
    skipped: dict
    artifacts: ArtifactFolder
    fitted_on: dict = field(default_factory=dict)
    scoring_seconds: float = 0.0
    context_built: bool = False
    params: dict | None = None


@task(name="fit_model_and_score", retries=0, cache_policy=NONE)
def fit_and_score(
    corpus: Corpus, model: str, num_topics, settings: dict, seed: int, heldout: Corpus | None = None,
    label: str | None = None, *, metrics, context_metrics, top_n, flow_host: str, llm=None, llm_budget=None,
    reference: Corpus | None = None, oov: str = "error",
) -> ScoredFit:
    """:func:`fit_model`, then score its output with ``metrics`` and write its artifacts, here.

    The metric context is this process's for the corpus (:func:`process_metric_context`, keyed
    by ``context_metrics`` and ``top_n``: built once, its counts reused by every later output);
    coherence counts in ``reference`` (default: ``corpus``) under ``oov`` (the config's ``coherence``).
    The artifacts go to a temporary folder, sent as a path to a flow on ``flow_host`` or as
    files to one elsewhere (:class:`~topicbench.tasks.store.artifacts.ArtifactFolder`). With ``llm``
    ((endpoint, judge settings)) the LLM metrics ask that endpoint; every question and reply is
    an artifact (``llm/requests.jsonl``) and their usage scores (``llm_requests``, tokens, cost),
    with the token budget counted against ``llm_budget``. Each topic's own scores are an artifact
    too (:data:`~topicbench.tasks.store.artifacts.TOPIC_SCORES`), and each topic's documents with examples
    (:data:`~topicbench.tasks.store.artifacts.TOPIC_DOCUMENTS`). Library warnings raised meanwhile are
    said once each, with their count and the fit's ``label`` (:func:`say_warnings`), and kept as the
    artifact :data:`~topicbench.tasks.store.artifacts.FIT_WARNINGS`. A failure of the fit or of the
    scoring raises, as a failed fit always has.
    """
    label = label or f"{model}@{corpus.name} seed {seed}"
    with capturing_warnings() as caught:
        try:
            fitted = fit_model.fn(corpus, model, num_topics, settings, seed, heldout, label, llm=llm,
                                  llm_budget=llm_budget)
            started = time.perf_counter()
            scored, records, context_built = _score_fit(fitted, corpus, heldout, seed, metrics, context_metrics, top_n,
                                                        llm, llm_budget, reference=reference, oov=oov,
                                                        on_metric=lambda name: progress.fit_phase(label, f"scoring {name}"))
        finally:  # a failed fit's warnings are said too: they may be why it failed
            said = say_warnings(label, caught)
    scoring_seconds = time.perf_counter() - started
    summary = OutputSummary.of(fitted.output)
    extra = {TOPIC_SCORES: topic_scores_text(scored.topic_scores)} if scored.topic_scores else {}
    documents = topic_documents_text(fitted.output, corpus)
    if documents is not None:
        extra[TOPIC_DOCUMENTS] = documents
    if records:  # tracked like the output's other numbers (not scores: no metric returns them)
        from topicbench.tasks.llm.judge import usage_of

        summary.extra.update(usage_of(records, llm[0]))
        extra[LLM_RECORDS] = json_lines(records)
    if fitted.llm_records:  # what the model itself asked (TopicGPT)
        extra[LLM_FIT_RECORDS] = json_lines(fitted.llm_records)
    if said:
        extra[FIT_WARNINGS] = "".join(f"{line}\n" for line in said)
    artifacts = ArtifactFolder.write(fitted.output, flow_host, extra)
    return ScoredFit(summary, fitted.resolved, scored.values, scored.skipped, artifacts, fitted.fitted_on, scoring_seconds,
                     context_built, fitted.params)


def _score_fit(fitted: FitResult, corpus, heldout, seed, metrics, context_metrics, top_n, llm, llm_budget, *,
               reference=None, oov: str = "error", on_metric=None):
    """The scores of ``fitted`` in this process's metric context for ``corpus`` (coherence counted
    in ``reference``), the LLM records its scoring made, and whether that context was built for it."""
    from topicbench.core.metrics.scoring import score
    from topicbench.core.threads import worker_threads
    from topicbench.tasks.run.metric_context import process_metric_context_built

    with worker_threads():
        context, lock, context_built = process_metric_context_built(corpus, context_metrics, top_n, heldout, llm=llm,
                                                                    llm_budget=llm_budget, reference=reference, oov=oov)
        with lock:
            try:
                scored = score(fitted.output, context, metrics, seed=seed, heldout_theta=fitted.heldout_theta,
                               on_metric=on_metric)
            finally:
                records = context.judge.take_records() if context.judge is not None else []
    return scored, records, context_built


def say_warnings(label: str, caught) -> list[str]:
    """Log each distinct warning of the fit ``label`` once, with its count, as a warning of the
    task's run logger (the console and Prefect's run logs); return the lines."""
    lines = warning_lines(label, caught)
    log = progress._run_logger() if lines else None  # the run logger of this room's tasks
    for line in lines:
        log.warning("%s", line)
    return lines


def fit_location() -> dict:
    """Where this code runs: ``host``, ``pid`` and, inside a Dask worker, ``dask_worker`` (its
    address), so a run on a shared cluster says which machine and process fitted it."""
    location = {"host": socket.gethostname(), "pid": str(os.getpid())}
    try:
        from distributed import get_worker  # imported here for its import cost, as in core.threads

        location["dask_worker"] = get_worker().address
    except (ImportError, ValueError):  # not inside a Dask worker
        pass
    return location
