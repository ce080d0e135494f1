"""What metrics read besides a model's output, in three parts by lifetime.

- :class:`MetricInputs` (frozen): one corpus's data and the metric settings. Never changes.
- :class:`MetricContext` (one per corpus, shared by every output scored against it): the inputs
  and what is built from them on first use and then reused: co-occurrence counts per
  (reference, window) covering the words scored so far, word vectors, which reference words occur.
  Count once, score many: a second output whose words are counted already is scored from the
  same counts.
- :class:`MetricRun` (frozen, one per scored output): the context plus that run's own values,
  the random generator (from the run's seed), the model's θ of the held-out documents and the
  N grid its topics allow.

Typical use::

    context = MetricContext(MetricInputs(corpus=train, settings=MetricSettings(top_n=(5, 10))))
    for seed, output in enumerate(outputs):
        scores = score(output, context, ["umass", "npmi", "topic_diversity"], seed=seed)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from topicbench.core.constants import (
    COHERENCE_TOP_N,
    CV_GAMMA,
    RANDK_DRAWS,
    RBO_PERSISTENCE,
    RBO_TOP_N,
    UMASS_EPSILON,
)
from ..corpus import Corpus
from ._topics import OOV_POLICIES
from .coherence import count_reference
from .llm_judging import JudgeSettings

#: What a benchmark's coherence counts its co-occurrences in, by partition of each corpus:
#: ``"train"`` the documents the model was fitted on (the default), ``"test"`` the held-out ones,
#: ``"all"`` every document; or an external corpus (a config's ``coherence.reference.source``).
REFERENCE_PARTITIONS = ("train", "test", "all")
#: The policies a config's ``coherence.oov`` takes (what coherence does with top words the
#: reference lacks): ``"error"`` (the full measure does not apply; the in-reference one is
#: scored) or ``"drop"`` (skip them and take further words, as gensim does).
COHERENCE_OOV_POLICIES = OOV_POLICIES


@dataclass(frozen=True)
class MetricSettings:
    """How the metrics score (the same for every output of a benchmark).

    Parameters
    ----------
    top_n : tuple of int
        N grid of topic-level metrics (``config.COHERENCE_TOP_N``).
    oov : {"error", "drop"}
        Topic words the reference corpus or the word vectors do not know.
    epsilon, smoothing, gamma, windows
        Coherence settings (see :func:`topicbench.core.metrics.coherence.coherence`).
    randk_draws : int
        RandK offsets drawn per run.
    rbo_top_n : int
        Depth of inverted RBO.
    rbo_persistence : float
    """

    top_n: tuple = COHERENCE_TOP_N
    oov: str = "error"
    epsilon: float = UMASS_EPSILON
    smoothing: str = "probability"
    gamma: float = CV_GAMMA
    windows: dict | None = None
    randk_draws: int = RANDK_DRAWS
    rbo_top_n: int = RBO_TOP_N
    rbo_persistence: float = RBO_PERSISTENCE


@dataclass(frozen=True, eq=False)
class MetricInputs:
    """One corpus's data the metrics read, and the settings.

    Parameters
    ----------
    corpus : Corpus, optional
        The corpus the model was fitted on (its tokens align with ``output.token_topics``).
    reference : Corpus, optional
        Reference corpus for coherence; ``corpus`` when None.
    labels, partitions : sequence of str, optional
        Per-document labels and OCTIS partitions; ``corpus``'s when None.
    heldout_corpus : Corpus, optional
        Held-out documents (the model's θ for them comes with each run).
    word_vectors : ndarray (n_words, dim), optional
        Rows for ``vector_vocabulary``; or let :class:`MetricContext` embed them on first use.
    vector_vocabulary : sequence of str, optional
    settings : MetricSettings
    """

    corpus: Corpus | None = None
    reference: Corpus | None = None
    labels: tuple | None = None
    partitions: tuple | None = None
    heldout_corpus: Corpus | None = None
    word_vectors: np.ndarray | None = None
    vector_vocabulary: tuple | None = None
    settings: MetricSettings = field(default_factory=MetricSettings)

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


class MetricContext:
    """One corpus's :class:`MetricInputs` and the caches built from them on first use.

    Parameters
    ----------
    inputs : MetricInputs
    embed_words : callable, optional
        ``embed_words(vocabulary) -> ndarray (n_words, dim)``: builds the word vectors of
        ``inputs.corpus``'s vocabulary the first time a metric needs them (when ``inputs`` has none).
    counts : dict, optional
        Co-occurrence counts counted beforehand (:func:`~topicbench.core.metrics.coherence.count_reference`
        or :meth:`count_for`), adopted as the counts cache.
    judge : object, optional
        What the LLM metrics ask (``judge.ask(requests) -> replies``,
        :mod:`~topicbench.core.metrics.llm_judging`); None: they do not apply.
    judge_settings : JudgeSettings, optional
        How they ask (default: :class:`~topicbench.core.metrics.llm_judging.JudgeSettings()`).
    """

    def __init__(self, inputs: MetricInputs | None = None, *, embed_words: Callable | None = None,
                 counts: dict | None = None, judge=None, judge_settings: JudgeSettings | None = None):
        self.inputs = inputs if inputs is not None else MetricInputs()
        self.judge = judge
        self.judge_settings = judge_settings if judge_settings is not None else JudgeSettings()
        self._embed_words = embed_words
        # (reference fingerprint, window) -> CooccurrenceCounts; read and extended in place by
        # coherence(), which recounts only words it does not cover yet
        self._counts = counts if counts is not None else {}
        self._word_vectors: tuple | None = None
        self._vector_index: dict | None = None
        self._usable_vectors: np.ndarray | None = None
        self._reference_known: np.ndarray | None = None

    @property
    def counts(self) -> dict:
        """The co-occurrence counts cache, shared by every output scored with this context."""
        return self._counts

    def count_for(self, topic_sets, measures=("umass", "uci", "npmi", "cv")) -> None:
        """Count the reference once for several outputs' topics (an optimisation: counts missing
        at scoring time are built then)."""
        settings = self.inputs.settings
        self._counts.update(count_reference(
            self.inputs.reference_corpus, topic_sets, measures, settings.top_n,
            oov=settings.oov, windows=settings.windows,
        ))

    @property
    def has_word_vectors(self) -> bool:
        """Whether word vectors are given or can be built."""
        given = self.inputs.word_vectors is not None and self.inputs.vector_vocabulary is not None
        return given or (self._embed_words is not None and self.inputs.corpus is not None)

    def word_vectors(self) -> tuple[np.ndarray, tuple]:
        """(vectors, vocabulary of their rows): the given ones, or embedded once on first use."""
        if self._word_vectors is None:
            if self.inputs.word_vectors is not None:
                self._word_vectors = (self.inputs.word_vectors, tuple(self.inputs.vector_vocabulary))
            else:
                vocabulary = tuple(self.inputs.corpus.vocabulary)
                self._word_vectors = (self._embed_words(vocabulary), vocabulary)
        return self._word_vectors

    def vector_index(self) -> dict:
        """Word -> row of :meth:`word_vectors`."""
        if self._vector_index is None:
            self._vector_index = {word: i for i, word in enumerate(self.word_vectors()[1])}
        return self._vector_index

    def usable_vectors(self) -> np.ndarray:
        """Which rows of :meth:`word_vectors` can be scored (finite, non-zero)."""
        if self._usable_vectors is None:
            norms = np.linalg.norm(np.asarray(self.word_vectors()[0], dtype=np.float64), axis=1)
            self._usable_vectors = np.isfinite(norms) & (norms > 0)
        return self._usable_vectors

    def reference_known(self) -> np.ndarray:
        """Which words of the reference vocabulary occur in the reference corpus."""
        if self._reference_known is None:
            reference = self.inputs.reference_corpus
            self._reference_known = np.bincount(reference.token_ids, minlength=reference.n_words) > 0
        return self._reference_known


@dataclass(frozen=True, eq=False)
class MetricRun:
    """The context of one scored output: the corpus's context and this run's own values.

    Parameters
    ----------
    context : MetricContext
    top_n : tuple of int, optional
        The N grid this output is scored at; the settings' grid when None.
    rng : numpy.random.Generator, optional
        The run's only source of randomness (RandK offsets, a random label split).
    heldout_doc_topic : ndarray (K, D_test), optional
        θ of ``inputs.heldout_corpus`` from the model being scored.
    topic_scores : dict of str -> tuple of float
        Filled while scoring: score key (``"npmi@10"``) -> each topic's own value, in the order of
        ``output.topics`` (NaN where a topic has none), from the metrics that score topics one by
        one before averaging them (:meth:`keep_topic_scores`). A reader judges a topic by it.
    """

    context: MetricContext
    top_n: tuple | None = None
    rng: np.random.Generator | None = None
    heldout_doc_topic: np.ndarray | None = None
    topic_scores: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.top_n is None:
            object.__setattr__(self, "top_n", tuple(self.context.inputs.settings.top_n))

    @property
    def inputs(self) -> MetricInputs:
        return self.context.inputs

    @property
    def settings(self) -> MetricSettings:
        return self.context.inputs.settings

    def keep_topic_scores(self, by_key: dict) -> None:
        """Keep each topic's values: ``by_key`` maps a score key to one value per topic."""
        for key, values in by_key.items():
            self.topic_scores[key] = tuple(float(value) for value in values)
