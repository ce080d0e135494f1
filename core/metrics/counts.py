"""Word and word-pair counts over a reference corpus: count once, score many.

:class:`CooccurrenceCounts` holds, for a set W of reference words, the number of *windows* in which
each word and each pair of words occur. Every coherence measure (UMass, UCI, NPMI, C_V) and every
top-N is scored from these counts, so a reference corpus is read once per (window, word set).

Windows follow gensim 4.4 (``probability_estimation``, ``text_analysis``) exactly:

- ``window=None`` (boolean document, UMass): each document is one window.
- ``window=s`` (boolean sliding window, NPMI/UCI s = 10, C_V s = 110): a document of length
  L > s has the L - s + 1 windows ``tokens[t:t+s]``; a document of length L <= s (even L = 0) is a
  single window. Tokens outside W keep their positions (they take up window space).
- Presence inside a window slides as in gensim's ``WordOccurrenceAccumulator._slide_window``:
  at each step the word leaving at the left edge is marked absent *even if it occurs again inside
  the window*, then the entering word is marked present. A pair's count is the number of windows
  in which both words are marked present; the total number of windows is gensim's ``num_docs``.

A word's presence depends only on its own tokens, so counts for W contain the counts of every
subset of W: recount only when a new word set is not covered (:meth:`CooccurrenceCounts.covers`).
Document shards counted separately add up (:meth:`CooccurrenceCounts.merge`), since no window
crosses a document boundary.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from topicbench.core.constants import DENSE_COUNTS_MAX_WORDS
from ..corpus import Corpus
from ..validation import InputError

logger = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class CooccurrenceCounts:
    """Window counts of a word set W over a reference corpus.

    Parameters
    ----------
    vocabulary : tuple of str
        The reference corpus vocabulary (word ids below index it).
    word_frequencies : ndarray of int64, shape (n_reference_words,)
        Tokens of each reference word in the reference corpus (0: the word never occurs, so it
        cannot be scored).
    word_ids : ndarray of int64, shape (|W|,)
        The counted words W (sorted reference ids). Position in this array = local id.
    window : int or None
        Sliding-window size, or None for whole documents (boolean document).
    n_windows : int
        Number of windows N (documents when ``window`` is None).
    occurrences : ndarray of int64, shape (|W|,)
        D(w): windows in which each word of W is present.
    joint : ndarray of int64, shape (|W|, |W|), or None
        Dense mode: D(u, v) for every pair, with D(w, w) = D(w) on the diagonal (as gensim).
    pair_keys, pair_counts : ndarray of int64, or None
        Listed-pairs mode (W too large for a dense matrix): sorted keys ``i * |W| + j`` (local ids,
        i < j) of the counted pairs and their counts.
    reference_name, reference_fingerprint : str
        Identity of the reference corpus.
    """

    vocabulary: tuple
    word_frequencies: np.ndarray
    word_ids: np.ndarray
    window: int | None
    n_windows: int
    occurrences: np.ndarray
    joint: np.ndarray | None = None
    pair_keys: np.ndarray | None = None
    pair_counts: np.ndarray | None = None
    reference_name: str = ""
    reference_fingerprint: str = ""

    # -------------------------------------------------------------------------------- building

    @classmethod
    def build(cls, reference: Corpus, window: int | None, word_ids, *, pairs=None) -> "CooccurrenceCounts":
        """Count the words ``word_ids`` (and all their pairs, or only ``pairs``) over ``reference``.

        Parameters
        ----------
        reference : Corpus
            The reference corpus (any tokenised corpus; the training corpus by default upstream).
        window : int or None
            Sliding-window size (>= 1), or None for whole documents.
        word_ids : array-like of int
            Reference word ids to count.
        pairs : array-like of int, shape (n_pairs, 2), optional
            Count only these pairs of reference word ids (both in ``word_ids``). Without it every
            pair of W is counted into a dense matrix, which needs
            ``len(word_ids) <= DENSE_COUNTS_MAX_WORDS``.
        """
        from topicbench.core.metrics import kernels as _kernels  # numba's, here: not on a config check's import
        window = _check_window(window)
        word_ids = _check_word_ids(word_ids, reference.n_words, dense=pairs is None)
        n_counted = len(word_ids)
        local_of_word = np.full(reference.n_words, -1, dtype=np.int64)
        local_of_word[word_ids] = np.arange(n_counted)
        local_ids = local_of_word[reference.token_ids]
        doc_offsets = np.asarray(reference.doc_offsets, dtype=np.int64)
        # whole documents = one window each: any window longer than every document
        size = window if window is not None else int(np.diff(doc_offsets).max(initial=0)) + 1
        run_word, run_start, run_end, n_windows = _kernels.presence_runs(
            local_ids, doc_offsets, size, n_counted
        )
        occurrences = np.bincount(run_word, weights=run_end - run_start, minlength=n_counted)
        occurrences = np.rint(occurrences).astype(np.int64)
        frequencies = np.bincount(reference.token_ids, minlength=reference.n_words).astype(np.int64)
        common = dict(
            vocabulary=tuple(reference.vocabulary),
            word_frequencies=frequencies,
            word_ids=word_ids,
            window=window,
            n_windows=int(n_windows),
            occurrences=occurrences,
            reference_name=reference.name,
            reference_fingerprint=reference.fingerprint(),
        )
        if pairs is None:
            triangle = _kernels.all_pair_counts(run_word, run_start, run_end, n_counted)
            joint = triangle + triangle.T
            joint[np.diag_indices(n_counted)] = occurrences
            counts = cls(joint=joint, **common)
        else:
            keys = _pair_keys(pairs, local_of_word, n_counted)
            indptr, partners, slots = _partner_lists(keys, n_counted)
            pair_counts = _kernels.listed_pair_counts(
                run_word, run_start, run_end, n_counted, indptr, partners, slots, len(keys)
            )
            counts = cls(pair_keys=keys, pair_counts=pair_counts, **common)
        logger.info(
            "counted %d words%s over %d windows (window %s) of %r",
            n_counted, "" if pairs is None else f", {len(counts.pair_keys)} pairs",
            counts.n_windows, window if window is not None else "document", reference.name,
        )
        return counts

    # -------------------------------------------------------------------------------- queries

    @property
    def n_counted_words(self) -> int:
        return len(self.word_ids)

    @property
    def is_dense(self) -> bool:
        return self.joint is not None

    def local_ids(self, word_ids) -> np.ndarray:
        """Positions of reference word ids in W; an error for a word that was not counted."""
        word_ids = np.asarray(word_ids, dtype=np.int64)
        positions = np.searchsorted(self.word_ids, word_ids)
        positions = np.minimum(positions, max(len(self.word_ids) - 1, 0))
        missing = (self.word_ids[positions] != word_ids) if len(self.word_ids) else np.ones(word_ids.shape, bool)
        if missing.any():
            word = int(word_ids[missing].flat[0])
            raise InputError(
                f"the counts do not cover the word {self.vocabulary[word]!r} (id {word}): build "
                "counts for a word set that includes every scored word"
            )
        return positions

    def covers(self, word_ids, pairs=None) -> bool:
        """Whether the counts can score these words: every word is counted and so is every pair
        (``pairs``, reference ids, shape (n, 2); None: all pairs of ``word_ids``).

        Dense counts hold all pairs of their words; listed-pairs counts only the listed pairs.
        """
        word_ids = np.unique(np.asarray(word_ids, dtype=np.int64))
        if not np.isin(word_ids, self.word_ids).all():
            return False
        if self.is_dense:
            return pairs is None or np.isin(np.asarray(pairs, dtype=np.int64), self.word_ids).all()
        if pairs is None:
            first, second = np.triu_indices(len(word_ids), k=1)
            pairs = np.column_stack([word_ids[first], word_ids[second]])
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        if not np.isin(pairs, self.word_ids).all():
            return False
        local = self.local_ids(pairs)
        local = local[local[:, 0] != local[:, 1]]
        keys = _keys(local[:, 0], local[:, 1], self.n_counted_words)
        return bool(np.isin(keys, self.pair_keys).all())

    def joint_counts(self, first, second) -> np.ndarray:
        """D(u, v) for local ids ``first`` and ``second`` (same shape); D(w, w) = D(w)."""
        first = np.asarray(first, dtype=np.int64)
        second = np.asarray(second, dtype=np.int64)
        if self.is_dense:
            return self.joint[first, second]
        first, second = np.broadcast_arrays(first, second)
        out = np.empty(first.shape, dtype=np.int64)
        same = first == second
        out[same] = self.occurrences[first[same]]
        keys = _keys(first[~same], second[~same], self.n_counted_words)
        if keys.size:
            at = np.minimum(np.searchsorted(self.pair_keys, keys), max(len(self.pair_keys) - 1, 0))
            if not len(self.pair_keys) or (self.pair_keys[at] != keys).any():
                raise InputError(
                    "the counts do not cover some scored word pairs: build them for these topics "
                    "(count_for_topics)"
                )
            out[~same] = self.pair_counts[at]
        return out

    # -------------------------------------------------------------------------------- combining

    def merge(self, other: "CooccurrenceCounts") -> "CooccurrenceCounts":
        """Counts of two document shards of one reference (same vocabulary, window, words, pairs)."""
        same_words = np.array_equal(self.word_ids, other.word_ids)
        same_pairs = self.is_dense == other.is_dense and (
            self.is_dense or np.array_equal(self.pair_keys, other.pair_keys)
        )
        if self.vocabulary != other.vocabulary or self.window != other.window or not same_words or not same_pairs:
            raise InputError(
                "only counts over the same vocabulary, window, word set and pairs can be merged "
                f"(window {self.window} vs {other.window}, {self.n_counted_words} vs "
                f"{other.n_counted_words} words)"
            )
        joint = None
        if self.is_dense:
            joint = self.joint + other.joint
        return CooccurrenceCounts(
            vocabulary=self.vocabulary,
            word_frequencies=self.word_frequencies + other.word_frequencies,
            word_ids=self.word_ids,
            window=self.window,
            n_windows=self.n_windows + other.n_windows,
            occurrences=self.occurrences + other.occurrences,
            joint=joint,
            pair_keys=self.pair_keys,
            pair_counts=None if self.is_dense else self.pair_counts + other.pair_counts,
            reference_name=f"{self.reference_name}+{other.reference_name}",
            reference_fingerprint="",
        )

    def summary(self) -> dict:
        return {
            "reference": self.reference_name,
            "reference_fingerprint": self.reference_fingerprint,
            "window": self.window,
            "windows": self.n_windows,
            "words": self.n_counted_words,
            "pairs": None if self.is_dense else int(len(self.pair_keys)),
        }


def _check_window(window):
    """A positive int, or None for whole documents."""
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise InputError(f"window must be a positive integer or None (whole documents), got {window!r}")
    return int(window)


def _check_word_ids(word_ids, n_words: int, *, dense: bool) -> np.ndarray:
    """Sorted distinct reference word ids, few enough for dense pair counts when ``dense``."""
    word_ids = np.unique(np.asarray(word_ids, dtype=np.int64))
    if word_ids.size and (word_ids[0] < 0 or word_ids[-1] >= n_words):
        raise InputError(
            f"word ids must lie in [0, {n_words - 1}] (the reference vocabulary), "
            f"got {word_ids[0]}..{word_ids[-1]}"
        )
    if dense and len(word_ids) > DENSE_COUNTS_MAX_WORDS:
        raise InputError(
            f"{len(word_ids)} words are too many for dense pair counts (at most "
            f"DENSE_COUNTS_MAX_WORDS = {DENSE_COUNTS_MAX_WORDS}): pass the pairs to count "
            "(count_for_topics does this)"
        )
    return word_ids


def topic_pairs(word_ids) -> np.ndarray:
    """All pairs (u, v), u < v, of words that share a topic: ``word_ids`` is (n_topics, n)."""
    word_ids = np.asarray(word_ids, dtype=np.int64)
    first, second = np.triu_indices(word_ids.shape[1], k=1)
    if not word_ids.size or not len(first):
        return np.zeros((0, 2), dtype=np.int64)
    keys = np.unique(_keys(word_ids[:, first].ravel(), word_ids[:, second].ravel(), int(word_ids.max()) + 1))
    size = int(word_ids.max()) + 1
    return np.column_stack([keys // size, keys % size])


def count_for_topics(reference: Corpus, window: int | None, word_ids) -> CooccurrenceCounts:
    """Counts that cover topics given as reference word ids, shape (n_topics, n).

    All pairs of their words are counted (dense) when there are at most
    ``DENSE_COUNTS_MAX_WORDS`` distinct words; otherwise only pairs of words that share a topic.
    """
    word_ids = np.asarray(word_ids, dtype=np.int64)
    words = np.unique(word_ids)
    if len(words) <= DENSE_COUNTS_MAX_WORDS:
        return CooccurrenceCounts.build(reference, window, words)
    return CooccurrenceCounts.build(reference, window, words, pairs=topic_pairs(word_ids))


def _keys(first, second, n_words: int) -> np.ndarray:
    first = np.asarray(first, dtype=np.int64)
    second = np.asarray(second, dtype=np.int64)
    return np.minimum(first, second) * np.int64(n_words) + np.maximum(first, second)


def _pair_keys(pairs, local_of_word, n_counted: int) -> np.ndarray:
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= len(local_of_word)):
        raise InputError("pairs hold word ids outside the reference vocabulary")
    local = local_of_word[pairs]
    if (local < 0).any():
        raise InputError("every word of a counted pair must be in the counted word set")
    local = local[local[:, 0] != local[:, 1]]
    return np.unique(_keys(local[:, 0], local[:, 1], n_counted))


def _partner_lists(keys: np.ndarray, n_words: int):
    """CSR lists of each word's partners and the pair's slot, from sorted pair keys."""
    first = keys // n_words
    second = keys % n_words
    slots = np.arange(len(keys), dtype=np.int64)
    owner = np.concatenate([first, second])
    partner = np.concatenate([second, first])
    slot = np.concatenate([slots, slots])
    order = np.argsort(owner, kind="stable")
    indptr = np.zeros(n_words + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n_words), out=indptr[1:])
    return indptr, partner[order], slot[order]
