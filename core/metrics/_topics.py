"""Topic word lists -> word ids, the input checks every topic-level metric shares, and the
result type of per-topic scores (:class:`TopicScores`).

The checks live here rather than in :mod:`topicbench.core.validation` because only the metrics
use them; every message says what is wrong, where, and how to fix it.

Out-of-vocabulary (OOV) words are an explicit choice, never a silent substitution:

- ``oov="error"`` (default): a scored word the reference does not know raises :class:`InputError`.
- ``oov="drop"``: such words are removed from the topic's list *before* its top N are taken (as
  gensim's ``CoherenceModel`` does), and the number dropped per topic is returned and reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..validation import InputError

#: Policies for topic words the reference (corpus or word vectors) does not know.
OOV_POLICIES = ("error", "drop")


def check_topics(topics) -> list[list[str]]:
    """Topics as lists of distinct, non-empty words; errors for empty input."""
    if topics is None:
        raise InputError("no topics to score: got None (give a list of word lists)")
    if isinstance(topics, str):
        raise InputError("topics must be a list of word lists, got a string")
    topics = [list(words) for words in topics]
    if not topics:
        raise InputError("no topics to score: the topic list is empty")
    for k, words in enumerate(topics):
        if not words:
            raise InputError(f"topic {k} has no words: every topic needs at least one word")
        for word in words:
            if not isinstance(word, str) or not word:
                raise InputError(f"topic {k} holds {word!r}: topic words must be non-empty strings")
        if len(set(words)) != len(words):
            seen, twice = set(), None
            for word in words:
                if word in seen:
                    twice = word
                    break
                seen.add(word)
            raise InputError(f"topic {k} lists the word {twice!r} twice: a topic's words must be distinct")
    return topics


def check_top_n(top_n, *, minimum: int = 1, what: str = "top-N") -> tuple[int, ...]:
    """One N or a grid of N, each an integer >= ``minimum``; returned sorted and without repeats."""
    values = (top_n,) if np.ndim(top_n) == 0 else tuple(top_n)
    if not values:
        raise InputError(f"{what} grid is empty: give at least one N")
    checked = []
    for value in values:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise InputError(f"{what} must be an integer, got {value!r}")
        if value < minimum:
            raise InputError(f"{what} must be >= {minimum}, got {value}")
        checked.append(int(value))
    return tuple(sorted(set(checked)))


def check_oov(oov: str) -> str:
    if oov not in OOV_POLICIES:
        raise InputError(f"oov must be one of {', '.join(OOV_POLICIES)}, got {oov!r}")
    return oov


@dataclass(frozen=True)
class ResolvedTopics:
    """Topics as word ids of a reference, each cut to the largest N.

    Attributes
    ----------
    word_ids : ndarray of int64, shape (n_topics, max_n)
        Row k: the first ``max_n`` known words of topic k, best first.
    dropped : ndarray of int64, shape (n_topics,)
        OOV words skipped before the ``max_n`` kept ones (always 0 with ``oov="error"``).
    top_n : tuple of int
        The checked N grid.
    """

    word_ids: np.ndarray
    dropped: np.ndarray
    top_n: tuple

    @property
    def max_n(self) -> int:
        return self.top_n[-1]

    @property
    def n_dropped(self) -> int:
        return int(self.dropped.sum())


def too_short(k: int, n_words: int, top_n: int) -> str:
    """The message for topic ``k`` holding fewer words than top-N."""
    return (f"top-N = {top_n} is larger than topic {k}'s word list ({n_words} words): "
            f"lower N or give each topic at least {top_n} words")


def topic_word_problem(topics, word_index: dict, known, max_n: int, *, oov: str = "error",
                       reference: str = "the reference") -> str | None:
    """Why checked ``topics`` cannot be scored at N = ``max_n`` against a reference, or None.

    The one check behind :func:`resolve_topics` (which raises it as an :class:`InputError`) and
    behind the scoring's applicability of reference-based metrics (which records it as the reason).
    Arguments as in :func:`resolve_topics`.
    """
    known = np.asarray(known, dtype=bool)

    def is_known(word):
        i = word_index.get(word)
        return i is not None and bool(known[i])

    if not any(is_known(word) for words in topics for word in words):
        return (f"{reference} shares no words with the topics: none of their "
                f"{sum(len(w) for w in topics)} words occurs in it (wrong reference corpus or vocabulary?)")
    for k, words in enumerate(topics):
        if len(words) < max_n:
            return too_short(k, len(words), max_n)
        unknown = [word for word in words if not is_known(word)]
        if oov == "error" and any(not is_known(word) for word in words[:max_n]):
            word = next(word for word in words if not is_known(word))
            return (f"topic {k}: the word {word!r} does not occur in {reference}; pass oov='drop' "
                    "to drop such words (they are counted), or use a reference that has it")
        if len(words) - len(unknown) < max_n:
            return (f"topic {k} keeps {len(words) - len(unknown)} words after dropping {len(unknown)} "
                    f"that do not occur in {reference}: fewer than top-N = {max_n}")
    return None


def resolve_topics(topics, word_index: dict, known, top_n, *, oov: str = "error",
                   reference: str = "the reference", minimum_n: int = 1) -> ResolvedTopics:
    """Map each topic's words to ids of a reference and check the N grid against them.

    Parameters
    ----------
    topics : list of list of str
    word_index : dict
        Word -> id in the reference.
    known : ndarray of bool, shape (n_reference_words,)
        Whether each reference word can be scored (e.g. it occurs in the reference corpus).
    top_n : int or sequence of int
    oov : {"error", "drop"}
    reference : str
        How messages name the reference.
    minimum_n : int
        Smallest N the metric accepts (2 for measures over word pairs).
    """
    topics = check_topics(topics)
    grid = check_top_n(top_n, minimum=minimum_n)
    oov = check_oov(oov)
    max_n = grid[-1]
    known = np.asarray(known, dtype=bool)
    problem = topic_word_problem(topics, word_index, known, max_n, oov=oov, reference=reference)
    if problem is not None:
        raise InputError(problem)
    rows = np.empty((len(topics), max_n), dtype=np.int64)
    dropped = np.zeros(len(topics), dtype=np.int64)
    for k, words in enumerate(topics):
        ids = [word_index.get(word) for word in words]
        usable = [i is not None and bool(known[i]) for i in ids]
        last = np.flatnonzero(usable)[max_n - 1]  # the max_n-th known word
        rows[k] = [i for i, ok in zip(ids[:last + 1], usable[:last + 1]) if ok]
        dropped[k] = last + 1 - max_n  # unknown words before it (0 under oov="error")
    return ResolvedTopics(word_ids=rows, dropped=dropped, top_n=grid)


@dataclass(frozen=True)
class TopicScores:
    """Per-topic scores of one metric for each N of a grid, and their aggregate.

    Attributes
    ----------
    metric : str
        Its name (the prefix of :meth:`as_dict`'s keys).
    top_n : tuple of int
    per_topic : dict of int -> ndarray (n_topics,)
    dropped_words : ndarray of int64 (n_topics,)
        Out-of-vocabulary words dropped per topic (``oov="drop"``) before the top N were taken.
    settings : dict
        The settings the scores depend on (window, epsilon, reference, ...).
    """

    metric: str
    top_n: tuple
    per_topic: dict
    dropped_words: np.ndarray
    settings: dict = field(default_factory=dict)

    @property
    def mean(self) -> dict:
        """N -> the model-level value: the arithmetic mean over topics (NaN propagates)."""
        return {n: float(np.mean(values)) for n, values in self.per_topic.items()}

    def as_dict(self, prefix: str | None = None) -> dict:
        """``{"<metric>@<N>": mean}`` for every N of the grid."""
        prefix = prefix or self.metric
        return {f"{prefix}@{n}": value for n, value in self.mean.items()}

    def per_topic_by_key(self, prefix: str | None = None) -> dict:
        """``{"<metric>@<N>": per-topic values}`` for every N of the grid (the keys of :meth:`as_dict`)."""
        prefix = prefix or self.metric
        return {f"{prefix}@{n}": values for n, values in self.per_topic.items()}
