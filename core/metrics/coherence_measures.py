r"""The coherence measures as pipelines: segmentation, confirmation over window counts, aggregation.

A measure is a pipeline (Röder, Both & Hinneburg, "Exploring the space of topic coherence
measures", WSDM 2015; gensim's ``CoherenceModel``):

    segmentation -> probability estimation (window counts) -> confirmation -> aggregation

and :data:`MEASURES` lists the four, each with its window (``config.SLIDING_WINDOW``):

========  ===============  ==============  =====================================  ==========
name      segmentation     windows         confirmation                           aggregate
========  ===============  ==============  =====================================  ==========
umass     one-preceding    whole document  log conditional probability (spec §4)  mean
uci       one-one          sliding, 10     PMI (log ratio)                        mean
npmi      one-one          sliding, 10     NPMI (normalised log ratio)            mean
cv        one-set          sliding, 110    cosine of NPMI context vectors, γ = 1  mean
========  ===============  ==============  =====================================  ==========

Probabilities are window frequencies, P(w) = D(w) / N and P(w_i, w_j) = D(w_i, w_j) / N, with N
the number of windows (:mod:`topicbench.core.metrics.counts`). The smoothed joint probability is

    P_ε(w_i, w_j) = D(w_i, w_j) / N + ε          (``smoothing="probability"``, gensim)
    P_ε(w_i, w_j) = (D(w_i, w_j) + ε) / N        (``smoothing="count"``, spec §4 as written)

with ε = ``config.UMASS_EPSILON`` = 1e-12 by default. The two agree whenever a pair co-occurs (up to
ε·N/D(w_i, w_j)) and differ by log N for pairs that never do. The default, ``"probability"``, is
gensim's arithmetic and reproduces ``CoherenceModel`` to rounding error.

Nothing here reads a corpus: a measure scores the :class:`TopicCounts` it is given. Counting a
reference corpus and scoring topics against it is :mod:`topicbench.core.metrics.coherence`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from topicbench.core.constants import CV_GAMMA, SLIDING_WINDOW, UMASS_EPSILON
from ..validation import InputError

#: How the smoothing ε enters the joint probability (see the module docstring).
SMOOTHINGS = ("probability", "count")


# ------------------------------------------------------------------------------------------------
# Segmentations: which (W', W*) pairs of a topic's top-N words are confirmed
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Segments:
    """Segments of an N-word topic as index arrays: ``prime[s]`` is W' of segment s and
    ``star[s]`` its W* (a single word), or ``star`` is None for W* = the whole topic."""

    prime: np.ndarray
    star: np.ndarray | None


def one_preceding(n: int) -> Segments:
    r"""S_one^pre: (W' = {w_i}, W* = {w_j}) for i > j, i.e. each word with every word ranked above it.

    >>> s = one_preceding(3); list(zip(s.prime.tolist(), s.star.tolist()))
    [(1, 0), (2, 0), (2, 1)]
    """
    prime, star = np.tril_indices(n, k=-1)
    return Segments(prime=prime.astype(np.int64), star=star.astype(np.int64))


def one_one(n: int) -> Segments:
    """S_one^one: (W' = {w_i}, W* = {w_j}) for every ordered pair i != j."""
    prime, star = np.nonzero(~np.eye(n, dtype=bool))
    return Segments(prime=prime.astype(np.int64), star=star.astype(np.int64))


def one_set(n: int) -> Segments:
    """S_one^set: (W' = {w_i}, W* = W), each word against the whole topic."""
    return Segments(prime=np.arange(n, dtype=np.int64), star=None)


# ------------------------------------------------------------------------------------------------
# Confirmations: a value per (topic, segment) from the topics' window counts
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicCounts:
    """Window counts of a set of N-word topics.

    Attributes
    ----------
    joint : ndarray of float64, shape (n_topics, N, N)
        D(w_i, w_j) for the words of each topic; D(w_i, w_i) = D(w_i) (gensim's diagonal).
    occurrences : ndarray of float64, shape (n_topics, N)
        D(w_i).
    n_windows : float
        N, the number of windows.
    """

    joint: np.ndarray
    occurrences: np.ndarray
    n_windows: float

    def head(self, n: int) -> "TopicCounts":
        """The counts of each topic's first n words."""
        return TopicCounts(self.joint[:, :n, :n], self.occurrences[:, :n], self.n_windows)


def _joint_probability(counts: TopicCounts, joint: np.ndarray, epsilon: float, smoothing: str):
    if smoothing == "probability":
        return joint / counts.n_windows + epsilon
    return (joint + epsilon) / counts.n_windows


def log_conditional_probability(counts: TopicCounts, segments: Segments, *, epsilon: float = UMASS_EPSILON,
                                smoothing: str = "probability", **_) -> np.ndarray:
    r"""UMass confirmation m_lc(W', W*) = log( P_ε(w', w*) / P(w*) ).

    With ``smoothing="count"`` this is spec §4's log((D(w_i, w_j) + ε) / D(w_j)); with the default
    ``"probability"`` it is gensim's log((D(w_i, w_j)/N + ε) / (D(w_j)/N)). Averaged over
    :func:`one_preceding` segments it is the normalised UMass of spec §4:

        C_N(t) = 2 / (N(N−1)) · Σ_{i=2..N} Σ_{j<i} log( P_ε(w_i, w_j) / P(w_j) ).
    """
    joint = counts.joint[:, segments.prime, segments.star]
    star = counts.occurrences[:, segments.star]
    return np.log(_joint_probability(counts, joint, epsilon, smoothing) / (star / counts.n_windows))


def log_ratio(counts: TopicCounts, segments: Segments, *, epsilon: float = UMASS_EPSILON,
              smoothing: str = "probability", **_) -> np.ndarray:
    r"""UCI confirmation (PMI): m_lr(W', W*) = log( P_ε(w', w*) / (P(w') · P(w*)) )."""
    return _log_ratio(counts, segments.prime, segments.star, epsilon, smoothing)


def normalized_log_ratio(counts: TopicCounts, segments: Segments, *, epsilon: float = UMASS_EPSILON,
                         smoothing: str = "probability", **_) -> np.ndarray:
    r"""NPMI confirmation: m_nlr(W', W*) = m_lr(W', W*) / ( −log P_ε(w', w*) )."""
    return _normalized_log_ratio(counts, segments.prime, segments.star, epsilon, smoothing)


def indirect_cosine(counts: TopicCounts, segments: Segments, *, epsilon: float = UMASS_EPSILON,
                    smoothing: str = "probability", gamma: float = CV_GAMMA, **_) -> np.ndarray:
    r"""C_V confirmation: cosine of NPMI context vectors (gensim ``cosine_similarity``, measure 'nlr').

    Over the topic's words W = {w_1..w_N}, the context vector of a word set S is
    v_S[j] = Σ_{w_i ∈ S} NPMI(w_i, w_j)^γ (with NPMI(w, w) from D(w, w) = D(w)); the value of
    segment (W' = {w_i}, W* = W) is cos(v_{w_i}, v_W) = v_{w_i}·v_W / (‖v_{w_i}‖ ‖v_W‖).
    """
    if segments.star is not None:
        raise InputError("indirect_cosine confirms one-set segments (W* = the whole topic)")
    n = counts.joint.shape[1]
    rows, cols = np.indices((n, n))
    npmi = _normalized_log_ratio(counts, rows.ravel(), cols.ravel(), epsilon, smoothing)
    npmi = npmi.reshape(-1, n, n) ** gamma
    word_vectors = npmi[:, segments.prime, :]  # v_{w_i}[j] = NPMI(w_i, w_j)^γ
    topic_vector = npmi.sum(axis=1)  # v_W[j] = Σ_i NPMI(w_i, w_j)^γ
    dots = np.einsum("kij,kj->ki", word_vectors, topic_vector)
    norms = np.sqrt((word_vectors**2).sum(axis=2)) * np.sqrt((topic_vector**2).sum(axis=1))[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return dots / norms


def _log_ratio(counts: TopicCounts, prime, star, epsilon, smoothing):
    joint = counts.joint[:, prime, star]
    p_prime = counts.occurrences[:, prime] / counts.n_windows
    p_star = counts.occurrences[:, star] / counts.n_windows
    return np.log(_joint_probability(counts, joint, epsilon, smoothing) / (p_prime * p_star))


def _normalized_log_ratio(counts: TopicCounts, prime, star, epsilon, smoothing):
    joint = counts.joint[:, prime, star]
    return _log_ratio(counts, prime, star, epsilon, smoothing) / -np.log(
        _joint_probability(counts, joint, epsilon, smoothing)
    )


# ------------------------------------------------------------------------------------------------
# The measures table
# ------------------------------------------------------------------------------------------------


def arithmetic_mean(values: np.ndarray, axis=None):
    """Aggregation: the arithmetic mean (NaN propagates, as in gensim)."""
    return np.mean(values, axis=axis)


@dataclass(frozen=True)
class Measure:
    """A coherence measure as a pipeline.

    Attributes
    ----------
    name : str
    segmentation : callable
        ``segmentation(N) -> Segments``.
    confirmation : callable
        ``confirmation(topic_counts, segments, epsilon=, smoothing=, gamma=) -> (n_topics, n_segments)``.
    window : int or None
        Default window (None: whole documents).
    aggregate : callable
        Over segments (per topic) and over topics (per model).
    higher_is_better : bool
    gensim_name : str
        The same measure in gensim's ``CoherenceModel``.
    """

    name: str
    segmentation: Callable
    confirmation: Callable
    window: int | None
    aggregate: Callable = arithmetic_mean
    higher_is_better: bool = True
    gensim_name: str = ""
    description: str = field(default="", compare=False)

    def per_topic(self, counts: TopicCounts, **options) -> np.ndarray:
        """One value per topic, for topics of N = ``counts.joint.shape[1]`` words."""
        segments = self.segmentation(counts.joint.shape[1])
        return self.aggregate(self.confirmation(counts, segments, **options), axis=1)


#: The coherence measures, by name.
MEASURES = {
    "umass": Measure(
        "umass", one_preceding, log_conditional_probability, None, gensim_name="u_mass",
        description="normalised UMass (spec §4): mean over i > j of log(P_ε(w_i, w_j) / P(w_j)), documents",
    ),
    "uci": Measure(
        "uci", one_one, log_ratio, SLIDING_WINDOW["uci"], gensim_name="c_uci",
        description="UCI: mean PMI over word pairs, sliding windows of 10",
    ),
    "npmi": Measure(
        "npmi", one_one, normalized_log_ratio, SLIDING_WINDOW["npmi"], gensim_name="c_npmi",
        description="NPMI: mean normalised PMI over word pairs, sliding windows of 10",
    ),
    "cv": Measure(
        "cv", one_set, indirect_cosine, SLIDING_WINDOW["cv"], gensim_name="c_v",
        description="C_V: mean cosine of NPMI context vectors (gamma 1), sliding windows of 110",
    ),
}


def get_measure(name: str) -> Measure:
    """The measure named ``name`` from :data:`MEASURES` (a :class:`Measure` is returned as is)."""
    if isinstance(name, Measure):
        return name
    if name not in MEASURES:
        raise InputError(f"Unknown coherence measure {name!r}. Available: {', '.join(MEASURES)}")
    return MEASURES[name]
