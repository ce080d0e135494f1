r"""Coherence over the top words a reference corpus has, for topics whose other top words it lacks.

A model may rank among a topic's top words some that never occur in the reference corpus (a
neural model's words seen only in test documents, a reference that is not the training corpus).
The coherence of such topics is undefined (:func:`~topicbench.core.metrics.coherence.coherence`
with ``oov="error"``), and a table shows a gap. Beside that gap, this module gives the same
measure over what can be scored: each topic's top N words restricted to those the reference has,
in their order, scored over the m <= N words left where m >= ``config.IN_REFERENCE_MIN_WORDS``
(every measure confirms word pairs) and left out of the mean otherwise:

    C_in(t, N) = C(t restricted to the reference's words among its top N)   for m_t >= 2
    value(N)   = mean of C_in(t, N) over the topics with m_t >= 2, and how many there are

This is not ``oov="drop"`` (which skips unknown words and takes further ones until N are known, as
gensim's ``CoherenceModel`` does): the words scored are the model's own top N, so a topic is
never credited with words it ranks lower. Counts come from the same cache as the full measure
(count once, score many), so scoring both costs one count per window.

Example (the reference lacks ``z``; topic 0 keeps a, b and c, topic 1 keeps only a and is left out):

>>> from topicbench.core.preprocess import corpus_from_token_lists
>>> reference = corpus_from_token_lists([["a", "b"], ["a", "b", "c"], ["c"]])
>>> scores = coherence_in_reference([["a", "z", "b", "c"], ["z", "a", "y", "x"]], reference,
...                                 ("umass",), top_n=4)["umass"]
>>> round(scores.mean[4], 6), scores.topics_scored(4)
(-0.462098, 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from topicbench.core.constants import CV_GAMMA, IN_REFERENCE_MIN_WORDS, UMASS_EPSILON
from ..corpus import Corpus
from ..validation import InputError
from ._topics import check_top_n, check_topics
from .coherence import counts_covering, measure_windows, topic_counts
from .coherence_measures import SMOOTHINGS, get_measure

#: A measure's score over the in-reference words is tracked as ``<measure>_in_reference@N``...
IN_REFERENCE = "_in_reference"
#: ... and the number of topics it averages as ``<measure>_in_reference_topics@N``...
IN_REFERENCE_TOPICS = "_in_reference_topics"
#: ... and the number of top-N words (over all topics) the reference lacks as ``<measure>_in_reference_dropped@N``.
IN_REFERENCE_DROPPED = "_in_reference_dropped"


@dataclass(frozen=True)
class InReferenceScores:
    """One measure's scores over each topic's in-reference top words, for each N of a grid.

    Attributes
    ----------
    metric : str
        The measure's name (the prefix of :meth:`as_dict`'s keys).
    top_n : tuple of int
    per_topic : dict of int -> ndarray (n_topics,)
        Each topic's score at N; NaN for a topic left with fewer than ``IN_REFERENCE_MIN_WORDS``
        in-reference words among its top N.
    words_kept : dict of int -> ndarray of int64 (n_topics,)
        How many of each topic's top N words the reference has.
    settings : dict
    words_dropped : dict of int -> int
        How many of the topics' top N words (all topics together) the reference lacks.
    """

    metric: str
    top_n: tuple
    per_topic: dict
    words_kept: dict
    settings: dict = field(default_factory=dict)
    words_dropped: dict = field(default_factory=dict)

    def scored(self, n: int) -> np.ndarray:
        """Which topics are scored at N (enough of their top N words are in the reference)."""
        return self.words_kept[n] >= IN_REFERENCE_MIN_WORDS

    def topics_scored(self, n: int) -> int:
        return int(self.scored(n).sum())

    @property
    def mean(self) -> dict:
        """N -> the mean over the topics scored at N (NaN where none is)."""
        return {n: float(np.mean(values[self.scored(n)])) if self.topics_scored(n) else float("nan")
                for n, values in self.per_topic.items()}

    def as_dict(self) -> dict:
        """``{"<metric>_in_reference@N": mean, "<metric>_in_reference_topics@N": topics scored,
        "<metric>_in_reference_dropped@N": top words the reference lacks}``."""
        found = {}
        for n, value in self.mean.items():
            found[f"{self.metric}{IN_REFERENCE}@{n}"] = value
            found[f"{self.metric}{IN_REFERENCE_TOPICS}@{n}"] = float(self.topics_scored(n))
            if n in self.words_dropped:
                found[f"{self.metric}{IN_REFERENCE_DROPPED}@{n}"] = float(self.words_dropped[n])
        return found

    def per_topic_by_key(self) -> dict:
        """``{"<metric>_in_reference@N": per-topic values}`` (NaN for the topics not scored)."""
        return {f"{self.metric}{IN_REFERENCE}@{n}": values for n, values in self.per_topic.items()}


def in_reference_top_words(topics, word_index: dict, known, n: int) -> list[np.ndarray]:
    """Each topic's top ``n`` words that the reference has, as reference ids in the topic's order."""
    known = np.asarray(known, dtype=bool)
    found = []
    for words in topics:
        ids = [word_index.get(word) for word in words[:n]]
        found.append(np.array([i for i in ids if i is not None and known[i]], dtype=np.int64))
    return found


def has_out_of_reference_words(topics, word_index: dict, known, n: int) -> bool:
    """Whether some topic's top ``n`` words include one the reference does not have."""
    return any(len(kept) < min(n, len(words))
               for kept, words in zip(in_reference_top_words(topics, word_index, known, n), topics))


def coherence_in_reference(topics, reference: Corpus, measures, top_n, *, known=None,
                           epsilon: float = UMASS_EPSILON, smoothing: str = "probability", gamma: float = CV_GAMMA,
                           windows: dict | None = None, counts: dict | None = None) -> dict:
    """Score topics under several measures over their top words that ``reference`` has.

    Parameters
    ----------
    topics : list of list of str
        Each topic's words, best first.
    reference : Corpus
    measures : sequence of str
        Coherence measures (:data:`~topicbench.core.metrics.coherence_measures.MEASURES`).
    top_n : int or sequence of int
        N (>= 2) or a grid of N; each topic's first N words are restricted, never refilled.
    known : ndarray of bool (n_reference_words,), optional
        Which reference words the reference has (occur in it), where known already
        (``MetricContext.reference_known()``); computed otherwise.
    epsilon, smoothing, gamma, windows
        As in :func:`~topicbench.core.metrics.coherence.coherence`.
    counts : dict, optional
        The counts cache of :func:`~topicbench.core.metrics.coherence.coherence`, read and
        extended in place (the full measure's counts are reused).

    Returns
    -------
    dict of str -> InReferenceScores
    """
    topics = check_topics(topics)
    grid = check_top_n(top_n, minimum=IN_REFERENCE_MIN_WORDS)
    if smoothing not in SMOOTHINGS:
        raise InputError(f"smoothing must be one of {', '.join(SMOOTHINGS)}, got {smoothing!r}")
    if known is None:
        known = np.bincount(reference.token_ids, minlength=reference.n_words) > 0
    kept = {n: in_reference_top_words(topics, reference.word_index, known, n) for n in grid}
    scorable = [ids for lists in kept.values() for ids in lists if len(ids) >= IN_REFERENCE_MIN_WORDS]
    if not scorable:
        raise InputError(f"no topic keeps {IN_REFERENCE_MIN_WORDS} of its top {grid[-1]} words in the reference "
                         f"corpus {reference.name!r}: there is nothing to score (wrong reference corpus?)")
    words = np.unique(np.concatenate(scorable))
    cache = counts if counts is not None else {}
    options = {"epsilon": float(epsilon), "smoothing": smoothing, "gamma": gamma}
    results = {}
    for name, window in measure_windows(measures, windows).items():
        table = counts_covering(cache, reference, window, words, lambda: _pairs(scorable))
        per_topic = {n: _score_by_length(table, kept[n], get_measure(name), options) for n in grid}
        results[name] = InReferenceScores(
            metric=name, top_n=grid, per_topic=per_topic,
            words_kept={n: np.array([len(ids) for ids in kept[n]], dtype=np.int64) for n in grid},
            settings={"window": window, **options, "reference": reference.name,
                      "reference_fingerprint": reference.fingerprint()},
            words_dropped={n: sum(min(n, len(words)) - len(ids) for words, ids in zip(topics, kept[n])) for n in grid},
        )
    return results


def _score_by_length(counts, kept: list, measure, options: dict) -> np.ndarray:
    """Each topic's score over its kept word ids (NaN where too few), topics of one length at a time."""
    values = np.full(len(kept), np.nan)
    lengths = np.array([len(ids) for ids in kept])
    for length in np.unique(lengths[lengths >= IN_REFERENCE_MIN_WORDS]):
        rows = np.flatnonzero(lengths == length)
        with np.errstate(divide="ignore", invalid="ignore"):
            values[rows] = measure.per_topic(topic_counts(counts, np.vstack([kept[k] for k in rows])), **options)
    return values


def _pairs(word_lists) -> np.ndarray:
    """Every pair (u, v), u < v, of words that share a list (the pairs the counts must hold)."""
    pairs = [np.column_stack([ids[first], ids[second]])
             for ids in word_lists for first, second in [np.triu_indices(len(ids), k=1)]]
    pairs = np.sort(np.vstack(pairs), axis=1)
    return np.unique(pairs, axis=0)
