r"""Coherence of topics over a reference corpus: count its windows once, score many topics and measures.

The measures, UMass, UCI, NPMI and C_V, are pipelines of segmentation, confirmation and
aggregation over window counts (:mod:`topicbench.core.metrics.coherence_measures`, which holds
:data:`~topicbench.core.metrics.coherence_measures.MEASURES`, their windows and the smoothing).
Here the reference corpus is counted (:mod:`topicbench.core.metrics.counts`), each topic's words
are found in it, and the topics are scored under each measure for every N of a grid.

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
from typing import Callable

import numpy as np

from topicbench.core.constants import COHERENCE_TOP_N, CV_GAMMA, DENSE_COUNTS_MAX_WORDS, UMASS_EPSILON
from ..corpus import Corpus
from ..validation import InputError
from ._topics import ResolvedTopics, TopicScores, resolve_topics
from .coherence_measures import MEASURES, SMOOTHINGS, TopicCounts, get_measure
from .counts import CooccurrenceCounts, count_for_topics, topic_pairs

logger = logging.getLogger(__name__)


def reference_degeneracy(reference: Corpus, known=None) -> str | None:
    """Why ``reference`` cannot tell coherent topics from others, or None when it can.

    Coherence compares how often words occur together with how often they occur apart. In a
    reference of fewer than two documents, or one where every word occurs in every document, no
    word is ever seen apart from another at the level of documents: UMass is log 1 = 0 for every
    pair, and where documents fit in a window P(w_i, w_j) = P(w_i) = P(w_j) = 1, so NPMI is
    0 / 0 (the smoothing ε turns it into -1 for every pair: every model "ties" at the worst
    score). The measures are then undefined, not low. ``known``: which words of the vocabulary
    occur in ``reference`` (``MetricContext.reference_known()``, counted here when not given).
    """
    if reference.n_documents < 2:
        documents = "document" if reference.n_documents == 1 else "documents"
        return (f"the reference corpus {reference.name!r} has {reference.n_documents} {documents}: coherence needs "
                f"at least two, in which words occur apart, to be defined")
    if known is None:
        known = np.bincount(reference.token_ids, minlength=reference.n_words) > 0
    used = int(np.count_nonzero(known))
    if reference.n_tokens < reference.n_documents * used:  # some document lacks a word: no need to look
        return None
    distinct = np.diff(reference.document_words[0])  # the distinct words of each document
    if used and np.all(distinct == used):
        return (f"every word of the reference corpus {reference.name!r} occurs in every one of its "
                f"{reference.n_documents} documents: no word occurs apart from another, so coherence is undefined "
                f"(NPMI would be -1 for every pair)")
    return None


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
        Where ε enters (:mod:`~topicbench.core.metrics.coherence_measures`); "probability" is gensim's.
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
