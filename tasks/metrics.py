"""Prefect tasks: the metric context of a corpus (counted once) and scoring one model output."""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
from prefect import task
from prefect.cache_policies import NONE

from topicbench.core.corpus import Corpus
from topicbench.core.metrics.registry import METRICS, MetricContext, score_output
from topicbench.core.output import TopicModelOutput
from topicbench.core.validation import InputError

logger = logging.getLogger(__name__)


@task(name="metric_context", cache_policy=NONE)
def metric_context(corpus: Corpus, metrics, top_n, heldout: Corpus | None = None) -> MetricContext:
    """What the metrics need for one corpus. Word vectors are embedded once per vocabulary (and
    cached on disk); co-occurrence counts are filled on first use and shared by every output."""
    vectors = None
    if any("word_vectors" in METRICS.get(name).needs for name in metrics):
        from topicbench.baselines.embeddings import word_vectors

        vectors = word_vectors(corpus.vocabulary)
    return MetricContext(
        corpus=corpus, top_n=tuple(top_n), word_vectors=vectors,
        vector_vocabulary=tuple(corpus.vocabulary) if vectors is not None else None,
        heldout_corpus=heldout,
    )


def applicable(name: str, output: TopicModelOutput, context: MetricContext, heldout_theta) -> str | None:
    """Why a metric does not apply to this output (None if it does)."""
    needs = METRICS.get(name).needs
    if "token_topics" in needs and output.token_topics is None:
        return f"{output.model} assigns no topics to tokens"
    if "labels" in needs and context.document_labels is None:
        return "the corpus has no labels"
    if "heldout" in needs and (context.heldout_corpus is None or heldout_theta is None):
        return "no held-out split" if context.heldout_corpus is None else f"{output.model} cannot infer held-out documents"
    return None


@task(name="score_output", cache_policy=NONE)
def score_model_output(output: TopicModelOutput, context: MetricContext, metrics, seed: int, heldout_theta=None):
    """All applicable metrics of one output: (scores, {metric: reason it was skipped})."""
    run_context = dataclasses.replace(context, rng=np.random.default_rng(seed), heldout_doc_topic=heldout_theta)
    skipped = {}
    shortest = min(len(words) for words in output.topics)
    usable = tuple(n for n in context.top_n if n <= shortest)
    if usable != tuple(context.top_n):
        # e.g. BERTopic's topics can hold fewer words than the grid's largest N; those N are left out
        dropped = [n for n in context.top_n if n > shortest]
        skipped["top_n " + ",".join(map(str, dropped))] = f"{output.model}'s shortest topic has {shortest} words"
        run_context = dataclasses.replace(run_context, top_n=usable)
    names = []
    for name in metrics:
        reason = applicable(name, output, run_context, heldout_theta)
        if reason:
            skipped[name] = reason
        else:
            names.append(name)
    scores = {}
    for name in names:
        try:
            scores.update(score_output(output, [name], run_context))
        except InputError as error:  # the output does not fit this metric (e.g. topics too short)
            skipped[name] = str(error)
    return scores, skipped
