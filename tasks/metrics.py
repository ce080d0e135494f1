"""Prefect tasks: the metric context of a corpus (one per corpus, its counts shared by every output)
and scoring one model output. The logic is :func:`topicbench.core.metrics.scoring.score`."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NONE

from topicbench.core.corpus import Corpus
from topicbench.core.metrics.context import MetricContext, MetricInputs, MetricSettings
from topicbench.core.metrics.registry import METRICS
from topicbench.core.metrics.scoring import Scores, score
from topicbench.core.output import TopicModelOutput


def _embed_words(vocabulary):
    """Word vectors of the offline sentence model, cached on disk per vocabulary."""
    from topicbench.baselines.embeddings import word_vectors

    return word_vectors(vocabulary)


@task(name="metric_context", cache_policy=NONE)
def metric_context(corpus: Corpus, metrics, top_n, heldout: Corpus | None = None) -> MetricContext:
    """What the metrics need for one corpus; word vectors (when a metric needs them) are embedded on
    first use, once per vocabulary."""
    inputs = MetricInputs(corpus=corpus, heldout_corpus=heldout, settings=MetricSettings(top_n=tuple(top_n)))
    wants_vectors = any("word_vectors" in METRICS.get(name).needs for name in metrics)
    return MetricContext(inputs, embed_words=_embed_words if wants_vectors else None)


@task(name="score_output", cache_policy=NONE)
def score_model_output(output: TopicModelOutput, context: MetricContext, metrics, seed: int,
                       heldout_theta=None) -> Scores:
    """All applicable metrics of one output: ``(scores, {metric: reason it was skipped})``."""
    return score(output, context, metrics, seed=seed, heldout_theta=heldout_theta)
