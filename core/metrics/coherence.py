r"""Coherence over a reference corpus: UMass, UCI, NPMI and C_V as tables of pipelines.

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

Count once, score many::

    counts = CooccurrenceCounts.build(reference, 10, word_ids)      # or count_for_topics(...)
    scores = score(counts, topics, "npmi", top_n=(5, 10, 15, 20, 25))
    scores.as_dict()                    # {"npmi@5": ..., "npmi@10": ..., ...}

or, for several measures at once (one count per distinct window)::

    results = coherence(topics, reference, ("umass", "npmi", "uci", "cv"))

Example (a toy reference of three documents; D(a) = D(b) = D(c) = 2, D(a, b) = 2,
D(a, c) = D(b, c) = 1, so UMass = (log(2/2) + log(1/2) + log(1/2)) / 3):

>>> from topicbench.core.preprocess import corpus_from_token_lists
>>> reference = corpus_from_token_lists([["a", "b"], ["a", "b", "c"], ["c"]])
>>> round(coherence([["a", "b", "c"]], reference, ["umass"], top_n=3)["umass"].mean[3], 6)
-0.462098

Every document is shorter than the windows, so each is one window (N = 3, P(a) = P(b) = P(c) = 2/3,
P(a, b) = 2/3, P(a, c) = P(b, c) = 1/3): UCI = (log(3/2) + 2 log(3/4)) / 3 and
NPMI = (log(3/2) / log(3/2) + 2 log(3/4) / log 3) / 3:

>>> scores = coherence([["a", "b", "c"]], reference, ("uci", "npmi", "cv"), top_n=3)
>>> {name: round(result.mean[3], 6) for name, result in scores.items()}
{'uci': -0.056633, 'npmi': 0.15876, 'cv': 0.566282}
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from topicbench.core.constants import (
    COHERENCE_TOP_N,
    CV_GAMMA,
    DENSE_COUNTS_MAX_WORDS,
    SLIDING_WINDOW,
    UMASS_EPSILON,
)
from ..corpus import Corpus
from ..validation import InputError
from ._topics import ResolvedTopics, TopicScores, resolve_topics
from .counts import CooccurrenceCounts, count_for_topics, topic_pairs

logger = logging.getLogger(__name__)

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
    if isinstance(name, Measure):
        return name
    if name not in MEASURES:
        raise InputError(f"Unknown coherence measure {name!r}. Available: {', '.join(MEASURES)}")
    return MEASURES[name]


# ------------------------------------------------------------------------------------------------
# Scoring
# ------------------------------------------------------------------------------------------------


def resolve_reference_topics(topics, counts_or_reference, top_n, *, oov: str = "error") -> ResolvedTopics:
    """Topics as reference word ids; a word is known when it occurs in the reference corpus."""
    if isinstance(counts_or_reference, CooccurrenceCounts):
        vocabulary = counts_or_reference.vocabulary
        frequencies = counts_or_reference.word_frequencies
        name = counts_or_reference.reference_name
        index = {word: i for i, word in enumerate(vocabulary)}
    else:
        reference = counts_or_reference
        frequencies = np.bincount(reference.token_ids, minlength=reference.n_words)
        name = reference.name
        index = reference.word_index
    return resolve_topics(
        topics, index, frequencies > 0, top_n, oov=oov,
        reference=f"the reference corpus {name!r}", minimum_n=2,
    )


def topic_counts(counts: CooccurrenceCounts, word_ids) -> TopicCounts:
    """Gather the counts of topics given as reference word ids, shape (n_topics, N); an
    :class:`InputError` if a word (or, for listed-pairs counts, a pair) was not counted."""
    word_ids = np.asarray(word_ids, dtype=np.int64)
    local = counts.local_ids(word_ids)
    joint = counts.joint_counts(local[:, :, None], local[:, None, :]).astype(np.float64)
    return TopicCounts(joint=joint, occurrences=counts.occurrences[local].astype(np.float64),
                       n_windows=float(counts.n_windows))


def score(counts: CooccurrenceCounts, topics, measure="npmi", top_n=COHERENCE_TOP_N, *,
          oov: str = "error", epsilon: float = UMASS_EPSILON, smoothing: str = "probability",
          gamma: float = CV_GAMMA) -> TopicScores:
    """Score topics under one measure from existing counts, for every N of ``top_n``.

    Parameters
    ----------
    counts : CooccurrenceCounts
        Counts over the reference corpus with the measure's window, covering the topics' words.
    topics : list of list of str
        Each topic's words, best first.
    measure : str or Measure
        ``"umass"``, ``"uci"``, ``"npmi"`` or ``"cv"``.
    top_n : int or sequence of int
        N (>= 2) or a grid of N; every topic needs at least max(N) known words.
    oov : {"error", "drop"}
        Words that never occur in the reference corpus: an error, or dropped (and counted).
    epsilon : float
        Smoothing ε (``config.UMASS_EPSILON`` = 1e-12, gensim's).
    smoothing : {"probability", "count"}
        Where ε enters (module docstring); "probability" is gensim's.
    gamma : float
        C_V's exponent γ.
    """
    resolved = resolve_reference_topics(topics, counts, top_n, oov=oov)
    return _score_resolved(counts, resolved, measure, epsilon=epsilon, smoothing=smoothing, gamma=gamma)


def _score_resolved(counts: CooccurrenceCounts, resolved: ResolvedTopics, measure, *, epsilon: float,
                    smoothing: str, gamma: float) -> TopicScores:
    measure = get_measure(measure)
    if smoothing not in SMOOTHINGS:
        raise InputError(f"smoothing must be one of {', '.join(SMOOTHINGS)}, got {smoothing!r}")
    if counts.window != measure.window:
        logger.info("scoring %s with window %s (its default is %s)", measure.name, counts.window, measure.window)
    table = topic_counts(counts, resolved.word_ids)
    options = {"epsilon": float(epsilon), "smoothing": smoothing, "gamma": gamma}
    with np.errstate(divide="ignore", invalid="ignore"):
        per_topic = {n: measure.per_topic(table.head(n), **options) for n in resolved.top_n}
    if resolved.n_dropped:
        logger.warning("%s: dropped %d out-of-vocabulary topic words", measure.name, resolved.n_dropped)
    return TopicScores(
        metric=measure.name,
        top_n=resolved.top_n,
        per_topic=per_topic,
        dropped_words=resolved.dropped,
        settings={
            "window": counts.window,
            "epsilon": float(epsilon),
            "smoothing": smoothing,
            "gamma": gamma,
            "reference": counts.reference_name,
            "reference_fingerprint": counts.reference_fingerprint,
        },
    )


def measure_windows(measures, windows: dict | None = None) -> dict:
    """Measure name -> window (the measure's default unless ``windows`` overrides it)."""
    windows = dict(windows or {})
    unknown = sorted(set(windows) - set(MEASURES))
    if unknown:
        raise InputError(f"windows given for unknown measures {unknown}. Available: {', '.join(MEASURES)}")
    return {get_measure(m).name: windows.get(get_measure(m).name, get_measure(m).window) for m in measures}


def coherence(topics, reference: Corpus, measures=("umass", "uci", "npmi", "cv"), top_n=COHERENCE_TOP_N, *,
              oov: str = "error", epsilon: float = UMASS_EPSILON, smoothing: str = "probability",
              gamma: float = CV_GAMMA, windows: dict | None = None, counts: dict | None = None) -> dict:
    """Score topics under several measures, counting the reference once per distinct window.

    Parameters
    ----------
    topics : list of list of str
    reference : Corpus
        The reference corpus (e.g. the training corpus).
    measures : sequence of str
    top_n : int or sequence of int
    oov, epsilon, smoothing, gamma
        As in :func:`score`.
    windows : dict, optional
        Measure name -> window, overriding ``config.SLIDING_WINDOW``.
    counts : dict, optional
        A cache (reference fingerprint, window) -> :class:`CooccurrenceCounts`, read and updated in
        place: counts that cover the topics are reused; otherwise they are rebuilt, over the union
        of the cached and the new words while that stays dense.

    Returns
    -------
    dict of str -> TopicScores
    """
    if not measures:
        raise InputError("no coherence measures requested")
    if smoothing not in SMOOTHINGS:
        raise InputError(f"smoothing must be one of {', '.join(SMOOTHINGS)}, got {smoothing!r}")
    window_of = measure_windows(measures, windows)
    resolved = resolve_reference_topics(topics, reference, top_n, oov=oov)
    cache = counts if counts is not None else {}
    for window in dict.fromkeys(window_of.values()):
        counts_covering(cache, reference, window, resolved.word_ids, lambda: topic_pairs(resolved.word_ids))
    return {
        name: _score_resolved(cache[(reference.fingerprint(), window)], resolved, name, epsilon=epsilon,
                              smoothing=smoothing, gamma=gamma)
        for name, window in window_of.items()
    }


def counts_covering(cache: dict, reference: Corpus, window: int | None, word_ids, pairs: Callable) -> CooccurrenceCounts:
    """The counts of ``reference`` at ``window`` in ``cache`` (keyed (reference fingerprint,
    window)) that cover the words ``word_ids`` and the pairs ``pairs()`` (reference ids, shape
    (n, 2): the pairs of words that share a topic; called only where needed); where the cached
    counts do not cover them, counted again (over the union of the cached and the new words while
    that stays dense) and cached in their place."""
    key = (reference.fingerprint(), window)
    cached = cache.get(key)
    if cached is not None and cached.covers(word_ids, None if cached.is_dense else pairs()):
        return cached
    words = np.unique(np.asarray(word_ids, dtype=np.int64))
    if cached is not None and cached.is_dense:  # extend the cached word set rather than replace it
        union = np.union1d(cached.word_ids, words)
        words = union if len(union) <= DENSE_COUNTS_MAX_WORDS else words
    dense = len(words) <= DENSE_COUNTS_MAX_WORDS
    cache[key] = CooccurrenceCounts.build(reference, window, words, pairs=None if dense else pairs())
    return cache[key]



def count_reference(reference: Corpus, topic_sets, measures=("umass", "uci", "npmi", "cv"),
                    top_n=COHERENCE_TOP_N, *, oov: str = "error", windows: dict | None = None) -> dict:
    """Count a reference corpus once for several models' topics (one count per distinct window).

    Parameters
    ----------
    reference : Corpus
    topic_sets : sequence of (list of list of str)
        Each model's topics; the counts cover all of them.
    measures, top_n, oov, windows
        As in :func:`coherence`.

    Returns
    -------
    dict
        (reference fingerprint, window) -> :class:`CooccurrenceCounts`, the ``counts`` cache that
        :func:`coherence` and ``MetricContext(counts=...)`` take.
    """
    topic_sets = list(topic_sets)
    if not topic_sets:
        raise InputError("no topic sets to count for")
    resolved = [resolve_reference_topics(topics, reference, top_n, oov=oov).word_ids for topics in topic_sets]
    all_topics = np.vstack(resolved)  # every set is cut to the same max(top_n) words
    fingerprint = reference.fingerprint()
    return {
        (fingerprint, window): count_for_topics(reference, window, all_topics)
        for window in dict.fromkeys(measure_windows(measures, windows).values())
    }
