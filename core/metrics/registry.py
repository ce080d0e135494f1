"""The metrics registry: every metric by name, with what it needs and which direction is better.

Calling convention
------------------
A metric is a :class:`MetricSpec`. ``spec(output, context)`` takes one model's
:class:`~topicbench.core.output.TopicModelOutput` and a :class:`MetricContext` holding what the
metric ``needs``, checks those needs (an :class:`InputError` names the missing field), and returns
a flat ``dict`` of named float scores:

- topic-level metrics return one key per N of ``context.top_n``: ``"npmi@5"``, ``"npmi@10"``, ...
  (``"inverted_rbo@10"`` uses ``context.rbo_top_n``);
- corpus-level metrics return their own name (``"log_likelihood_own"``) or the names listed in
  ``spec.outputs`` (``"classification_accuracy"``, ``"classification_macro_f1"``).

Every key of a spec's result shares the spec's ``higher_is_better``: :func:`metric_for_key` maps a
key back to its spec and :func:`best_index` picks the best of several models' values, which is
how a report marks the best value.

Typical use (e.g. from a Prefect task; nothing here logs to MLflow or touches Prefect)::

    from topicbench.core.metrics.registry import METRICS, MetricContext, score_output
    from topicbench.core.metrics.coherence import count_reference

    counts = count_reference(train, [out.topics for out in outputs])   # once per reference
    context = MetricContext(corpus=train, counts=counts,
                            word_vectors=vectors, vector_vocabulary=train.vocabulary,
                            rng=np.random.default_rng(seed))
    for output in outputs:
        scores = score_output(output, ["umass", "npmi", "cv", "topic_diversity"], context)

``context.counts`` is a cache shared by every output scored with the context (and by copies made
with :func:`dataclasses.replace`, e.g. to set a model's held-out ``heldout_doc_topic``):
counts that do not cover a new output's topics are rebuilt on demand, so precounting with
:func:`~topicbench.core.metrics.coherence.count_reference` is an optimisation, not a requirement.
Randomness comes only from ``context.rng`` (RandK offsets, the label split): pass a fresh
``np.random.default_rng(seed)`` per run to make results repeatable.

Needs (fields of :class:`MetricContext`):

==================  ====================================================================
``reference``       a reference corpus for coherence (``reference``, or else ``corpus``)
``word_vectors``    ``word_vectors`` and ``vector_vocabulary``
``corpus``          the corpus the model was fitted on (token order of ``token_topics``)
``token_topics``    the output's per-token topics (``output.token_topics``)
``rng``             ``rng``, a ``numpy.random.Generator``
``labels``          document labels (``labels``, or else ``corpus.labels``)
``heldout``         ``heldout_corpus`` and the model's ``heldout_doc_topic`` (K × D_test)
==================  ====================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..config import COHERENCE_TOP_N, CV_GAMMA, RANDK_DRAWS, RBO_PERSISTENCE, RBO_TOP_N, UMASS_EPSILON
from ..corpus import Corpus
from ..output import TopicModelOutput
from ..registry import Registry
from ..validation import InputError
from . import coherence as coherence_module
from .diversity import inverted_rbo, topic_diversity
from .embedding import embedding_coherence
from .heldout import heldout_log_likelihood
from .labels import classification_scores, clustering_scores
from .posterior import (
    assignment_log_likelihood,
    log_topic_word,
    matched_budget_elda,
    randk_log_likelihood,
)

#: Names a spec may list in ``needs``.
NEEDS = ("reference", "word_vectors", "corpus", "token_topics", "rng", "labels", "heldout")


@dataclass(frozen=True, eq=False)
class MetricContext:
    """What metrics need besides the model output; shared by every output of a run.

    Parameters
    ----------
    corpus : Corpus, optional
        The corpus the model was fitted on (its tokens align with ``output.token_topics``).
    reference : Corpus, optional
        Reference corpus for coherence; ``corpus`` when None.
    top_n : tuple of int
        N grid of topic-level metrics (``config.COHERENCE_TOP_N``).
    counts : dict
        Cache (reference fingerprint, window) -> CooccurrenceCounts, filled on demand.
    oov : {"error", "drop"}
        Topic words the reference or the word vectors do not know.
    epsilon, smoothing, gamma, windows
        Coherence settings (see :func:`topicbench.core.metrics.coherence.score`).
    word_vectors : ndarray (n_words, dim), optional
    vector_vocabulary : sequence of str, optional
        The words of the rows of ``word_vectors``.
    rng : numpy.random.Generator, optional
    randk_draws : int
    labels, partitions : sequence of str, optional
        Per-document labels and OCTIS partitions; ``corpus``'s when None.
    heldout_corpus : Corpus, optional
    heldout_doc_topic : ndarray (K, D_test), optional
        θ of ``heldout_corpus`` from the model being scored.
    rbo_top_n : int
    rbo_persistence : float
    """

    corpus: Corpus | None = None
    reference: Corpus | None = None
    top_n: tuple = COHERENCE_TOP_N
    counts: dict = field(default_factory=dict)
    oov: str = "error"
    epsilon: float = UMASS_EPSILON
    smoothing: str = "probability"
    gamma: float = CV_GAMMA
    windows: dict | None = None
    word_vectors: np.ndarray | None = None
    vector_vocabulary: tuple | None = None
    rng: np.random.Generator | None = None
    randk_draws: int = RANDK_DRAWS
    labels: tuple | None = None
    partitions: tuple | None = None
    heldout_corpus: Corpus | None = None
    heldout_doc_topic: np.ndarray | None = None
    rbo_top_n: int = RBO_TOP_N
    rbo_persistence: float = RBO_PERSISTENCE

    @property
    def reference_corpus(self) -> Corpus | None:
        return self.reference if self.reference is not None else self.corpus

    @property
    def document_labels(self):
        if self.labels is not None:
            return self.labels
        return self.corpus.labels if self.corpus is not None else None

    @property
    def document_partitions(self):
        if self.partitions is not None:
            return self.partitions
        return self.corpus.partitions if self.corpus is not None else None


def _missing_need(need: str, output: TopicModelOutput, context: MetricContext) -> str | None:
    """Why ``need`` is not met, or None."""
    if need == "reference" and context.reference_corpus is None:
        return "a reference corpus: set MetricContext(reference=...) or corpus=..."
    if need == "word_vectors" and (context.word_vectors is None or context.vector_vocabulary is None):
        return "word vectors: set MetricContext(word_vectors=..., vector_vocabulary=...)"
    if need == "corpus" and context.corpus is None:
        return "the corpus the model was fitted on: set MetricContext(corpus=...)"
    if need == "token_topics" and output.token_topics is None:
        return f"token assignments, which the {output.model!r} output does not have"
    if need == "rng" and not isinstance(context.rng, np.random.Generator):
        return "a random generator: set MetricContext(rng=np.random.default_rng(seed))"
    if need == "labels" and context.document_labels is None:
        return "document labels: the corpus has none (set MetricContext(labels=...))"
    if need == "heldout" and (context.heldout_corpus is None or context.heldout_doc_topic is None):
        return "held-out documents and the model's theta for them: set heldout_corpus and heldout_doc_topic"
    return None


@dataclass(frozen=True)
class MetricSpec:
    """A registered metric.

    Attributes
    ----------
    name : str
    compute : callable
        ``compute(output, context) -> dict[str, float]``.
    higher_is_better : bool
        For every key the metric returns.
    needs : tuple of str
        Context fields required (see :data:`NEEDS`).
    aggregate : str
        How per-topic or per-token values become the reported number.
    outputs : tuple of str
        Keys returned when they are not ``name`` or ``name@N``.
    description : str
    """

    name: str
    compute: Callable
    higher_is_better: bool
    needs: tuple = ()
    aggregate: str = "mean over topics"
    outputs: tuple = ()
    description: str = ""

    def __post_init__(self):
        unknown = sorted(set(self.needs) - set(NEEDS))
        if unknown:
            raise ValueError(f"metric {self.name!r} needs unknown context fields {unknown}; known: {NEEDS}")

    def __call__(self, output: TopicModelOutput, context: MetricContext) -> dict:
        for need in self.needs:
            reason = _missing_need(need, output, context)
            if reason is not None:
                raise InputError(f"metric {self.name!r} needs {reason}")
        scores = self.compute(output, context)
        return {key: float(value) for key, value in scores.items()}

    def owns(self, key: str) -> bool:
        """Whether ``key`` is one of the keys this metric returns."""
        return key == self.name or key.split("@", 1)[0] == self.name or key in self.outputs

    def best_index(self, values) -> int | None:
        """Index of the best of several models' values (NaN ignored; None if all are NaN)."""
        values = np.asarray(values, dtype=np.float64)
        if values.size == 0 or np.isnan(values).all():
            return None
        return int(np.nanargmax(values) if self.higher_is_better else np.nanargmin(values))


#: Every metric, by name.
METRICS = Registry("metric")


def _register(spec: MetricSpec) -> MetricSpec:
    METRICS.register(spec.name, spec)
    return spec


def metric_for_key(key: str) -> MetricSpec:
    """The spec that returns a score key such as ``"npmi@10"`` or ``"classification_macro_f1"``."""
    for name in METRICS:
        spec = METRICS.get(name)
        if spec.owns(key):
            return spec
    raise InputError(f"no metric returns the score {key!r}. Metrics: {', '.join(METRICS.names())}")


def best_index(key: str, values) -> int | None:
    """Which of several models' values of ``key`` is best (by the metric's direction)."""
    return metric_for_key(key).best_index(values)


def score_output(output: TopicModelOutput, names, context: MetricContext) -> dict:
    """Run the named metrics on one output and merge their scores into one dict."""
    scores: dict = {}
    for name in names:
        result = METRICS.get(name)(output, context)
        clash = sorted(set(result) & set(scores))
        if clash:
            raise InputError(f"metric {name!r} returns {clash[0]!r}, already returned by another metric")
        scores.update(result)
    return scores


# ------------------------------------------------------------------------------------------------
# Coherence over the reference corpus
# ------------------------------------------------------------------------------------------------


def _coherence_metric(measure: str) -> Callable:
    def compute(output: TopicModelOutput, context: MetricContext) -> dict:
        results = coherence_module.coherence(
            output.topics, context.reference_corpus, (measure,), context.top_n, oov=context.oov,
            epsilon=context.epsilon, smoothing=context.smoothing, gamma=context.gamma,
            windows=context.windows, counts=context.counts,
        )
        return results[measure].as_dict()

    compute.__name__ = f"{measure}_coherence"
    return compute


for _measure in coherence_module.MEASURES.values():
    _register(MetricSpec(
        name=_measure.name, compute=_coherence_metric(_measure.name),
        higher_is_better=_measure.higher_is_better, needs=("reference",),
        description=_measure.description,
    ))


# ------------------------------------------------------------------------------------------------
# Embedding coherence and diversity
# ------------------------------------------------------------------------------------------------


def _embedding_metric(kind: str) -> Callable:
    def compute(output: TopicModelOutput, context: MetricContext) -> dict:
        return embedding_coherence(
            output.topics, context.word_vectors, context.vector_vocabulary, context.top_n,
            kind=kind, oov=context.oov,
        ).as_dict()

    compute.__name__ = f"embedding_{kind}"
    return compute


_register(MetricSpec(
    "embedding_pairwise", _embedding_metric("pairwise"), True, ("word_vectors",),
    description="mean cosine of the word vectors of each pair of a topic's top-N words",
))
_register(MetricSpec(
    "embedding_centroid", _embedding_metric("centroid"), True, ("word_vectors",),
    description="mean cosine of each top-N word's vector with the topic's centroid",
))
_register(MetricSpec(
    "topic_diversity",
    lambda output, context: topic_diversity(output.topics, context.top_n).as_dict(),
    True, aggregate="share of unique words over all topics",
    description="unique words among all topics' top-N / (K N)",
))
_register(MetricSpec(
    "inverted_rbo",
    lambda output, context: inverted_rbo(
        output.topics, context.rbo_top_n, persistence=context.rbo_persistence
    ).as_dict(),
    True, aggregate="1 - mean over pairs of topics",
    description="1 - mean extrapolated rank-biased overlap over pairs of topics (OCTIS)",
))


# ------------------------------------------------------------------------------------------------
# Posterior quality (spec §4, Experiment Set 1)
# ------------------------------------------------------------------------------------------------


def _own(output: TopicModelOutput, context: MetricContext) -> dict:
    log_phi = log_topic_word(output.topic_word_matrix)
    return {"log_likelihood_own": assignment_log_likelihood(context.corpus, log_phi, output.token_topics)}


def _randk(output: TopicModelOutput, context: MetricContext) -> dict:
    log_phi = log_topic_word(output.topic_word_matrix)
    draws = randk_log_likelihood(context.corpus, log_phi, output.token_topics, context.rng,
                                 draws=context.randk_draws)
    return {"log_likelihood_randk": draws.mean}


def _elda(output: TopicModelOutput, context: MetricContext) -> dict:
    log_phi = log_topic_word(output.topic_word_matrix)
    solution = matched_budget_elda(context.corpus, log_phi, output.token_topics)
    return {"log_likelihood_elda": solution.log_posterior}


_register(MetricSpec(
    "log_likelihood_own", _own, True, ("corpus", "token_topics"), aggregate="sum over tokens",
    description="sum over tokens of log phi_z[w] for the model's own assignment",
))
_register(MetricSpec(
    "log_likelihood_randk", _randk, True, ("corpus", "token_topics", "rng"),
    aggregate="sum over tokens, mean over draws",
    description="the own assignment with topic labels shifted by a random offset (RandK)",
))
_register(MetricSpec(
    "log_likelihood_elda", _elda, True, ("corpus", "token_topics"), aggregate="sum over tokens",
    description="E-LDA on the model's topics, budget matched to its mean distinct topics per document",
))


# ------------------------------------------------------------------------------------------------
# Held-out fit and labels
# ------------------------------------------------------------------------------------------------


def _heldout(output: TopicModelOutput, context: MetricContext) -> dict:
    return heldout_log_likelihood(
        context.heldout_corpus, output.topic_word_matrix, context.heldout_doc_topic
    ).as_dict()


_register(MetricSpec(
    "heldout_log_likelihood",
    lambda output, context: {"heldout_log_likelihood": _heldout(output, context)["heldout_log_likelihood"]},
    True, ("heldout",), aggregate="per held-out word",
    description="per-word log-likelihood of held-out documents",
))
_register(MetricSpec(
    "perplexity",
    lambda output, context: {"perplexity": _heldout(output, context)["perplexity"]},
    False, ("heldout",), aggregate="exp(-per-word log-likelihood)",
    description="held-out perplexity",
))
_register(MetricSpec(
    "classification",
    lambda output, context: {
        key: value
        for key, value in classification_scores(
            output.topic_document_matrix, context.document_labels, context.rng,
            partitions=context.document_partitions,
        ).items()
        if key.startswith("classification_")
    },
    True, ("labels", "rng"), aggregate="over test documents",
    outputs=("classification_accuracy", "classification_macro_f1"),
    description="accuracy and macro-F1 of a logistic regression on document-topic features",
))
_register(MetricSpec(
    "clustering",
    lambda output, context: clustering_scores(output.topic_document_matrix, context.document_labels),
    True, ("labels",), aggregate="over documents", outputs=("nmi", "purity"),
    description="NMI and purity of each document's main topic against its label",
))
