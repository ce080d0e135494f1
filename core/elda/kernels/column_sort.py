"""Column stores of the candidates and their sort by value (high to low), which lets a gain scan
stop at the first entry that does not beat a token's best score (the E-LDA paper). Private."""

from __future__ import annotations

from collections import namedtuple

import numba as nb
import numpy as np

from topicbench.core.kernel_cache import load_cached_kernels_directly
from topicbench.core.elda.kernels.segments import (
    CYCLIC_CHUNKS,
    PARALLEL,
    SERIAL,
    longest_document,
    offsets_of,
)


#: Segments up to this long are sorted by insertion, longer ones by radix (:func:`_sort_segment_by_value`).
INSERTION_SORT_MAX = 32
_SIGN_BIT = np.uint64(1) << np.uint64(63)


@nb.njit(**SERIAL)
def _descending_key(bits):
    """A uint64 that orders as the float64 whose bits these are, in reverse: larger values,
    smaller keys (-0.0 keyed as 0.0, so that equal values have equal keys)."""
    if bits == _SIGN_BIT:
        bits = np.uint64(0)
    if bits & _SIGN_BIT:
        return bits  # negative: the larger the magnitude (the lower the value), the larger the bits
    return ~(bits | _SIGN_BIT)  # non-negative: below every negative's key, reversed among themselves


#: Work arrays of :func:`_sort_segment_by_value`, for segments up to their length.
SortScratch = namedtuple("SortScratch", "keys keys_out topics_out values_out")


@nb.njit(**SERIAL)
def sort_scratch(longest, topics):
    return SortScratch(
        np.empty(longest, dtype=np.uint64), np.empty(longest, dtype=np.uint64),
        np.empty(longest, dtype=topics.dtype), np.empty(longest, dtype=np.float64),
    )


@nb.njit(**SERIAL)
def _sort_segment_by_value(topics, values, start, stop, scratch):
    """Entries [start, stop) by value, high to low; ties keep their order (stable), as
    ``np.argsort(-values, kind="stable")`` orders them. Short segments by insertion, longer ones
    by an LSD radix sort of :func:`_descending_key` (stable, linear; about half the time of a
    merge sort of the indices on the paper's columns), which skips the bytes all keys share."""
    n = stop - start
    if n <= INSERTION_SORT_MAX:
        for i in range(start + 1, stop):
            value = values[i]
            topic = topics[i]
            k = i
            while k > start and values[k - 1] < value:
                values[k] = values[k - 1]
                topics[k] = topics[k - 1]
                k -= 1
            values[k] = value
            topics[k] = topic
        return
    keys, keys_out, topics_out, values_out = scratch.keys[:n], scratch.keys_out[:n], scratch.topics_out[:n], scratch.values_out[:n]
    bits = values[start:stop].view(np.uint64)
    for i in range(n):
        keys[i] = _descending_key(bits[i])
    keys_in, topics_in, values_in = keys, topics[start:stop], values[start:stop]
    counts = np.empty(257, dtype=np.int64)
    moved = False
    for byte in range(8):
        shift = np.uint64(8 * byte)
        counts[:] = 0
        for i in range(n):
            counts[((keys_in[i] >> shift) & np.uint64(255)) + 1] += 1
        if counts[((keys_in[0] >> shift) & np.uint64(255)) + 1] == n:
            continue  # every key has this byte: the pass would not move anything
        for b in range(256):
            counts[b + 1] += counts[b]
        for i in range(n):
            b = (keys_in[i] >> shift) & np.uint64(255)
            q = counts[b]
            counts[b] = q + 1
            keys_out[q] = keys_in[i]
            topics_out[q] = topics_in[i]
            values_out[q] = values_in[i]
        keys_in, keys_out = keys_out, keys_in
        topics_in, topics_out = topics_out, topics_in
        values_in, values_out = values_out, values_in
        moved = not moved
    if moved:  # the sorted entries are in the scratch arrays
        topics[start:stop] = topics_in
        values[start:stop] = values_in


@nb.njit(**PARALLEL)
def column_heads(columns, doc_words, best):
    """The part of each column of ``columns`` (a :class:`.records.Columns`) a scan can still read,
    sorted by value high to low (ties: the entries' order, topic ids ascending), as a new column
    store (indptr, topics, values).

    A scan of word v stops at the first entry that does not beat the token's best score, and
    best scores only rise, so an entry no higher than the lowest best score of any (document,
    word v) slot now is never read again. Only the entries above it are kept and sorted: after
    FastInitialize's first round, about a third of them on the paper's corpora.
    """
    col_indptr, col_topics, col_values = columns.indptr, columns.topics, columns.values
    n_words = len(col_indptr) - 1
    floor = np.full(n_words, np.inf)
    for j in range(len(doc_words)):
        v = doc_words[j]
        if best[j] < floor[v]:
            floor[v] = best[j]
    lengths = np.zeros(n_words, dtype=np.int64)
    for chunk in nb.prange(CYCLIC_CHUNKS):
        for v in range(chunk, n_words, CYCLIC_CHUNKS):
            kept = 0
            for p in range(col_indptr[v], col_indptr[v + 1]):
                if col_values[p] > floor[v]:
                    kept += 1
            lengths[v] = kept
    head_indptr = offsets_of(lengths)
    head_topics = np.empty(head_indptr[-1], dtype=np.int32)
    head_values = np.empty(head_indptr[-1], dtype=np.float64)
    longest = longest_document(head_indptr, 0, n_words)
    for chunk in nb.prange(CYCLIC_CHUNKS):  # cyclic: frequent words (long columns) come first
        scratch = sort_scratch(longest, head_topics)
        for v in range(chunk, n_words, CYCLIC_CHUNKS):
            q = head_indptr[v]
            for p in range(col_indptr[v], col_indptr[v + 1]):
                if col_values[p] > floor[v]:
                    head_topics[q] = col_topics[p]
                    head_values[q] = col_values[p]
                    q += 1
            _sort_segment_by_value(head_topics, head_values, head_indptr[v], head_indptr[v + 1], scratch)
    return head_indptr, head_topics, head_values


@nb.njit(**SERIAL)
def columns_of_rows(indptr, indices, values, n_columns):
    """The column store (col_indptr, col_topics, col_values) of CSR rows: a counting sort by
    column, so each column lists its rows in ascending order (one pass to count, one to place)."""
    col_indptr = np.zeros(n_columns + 1, dtype=np.int64)
    for e in range(len(indices)):
        col_indptr[indices[e] + 1] += 1
    for v in range(n_columns):
        col_indptr[v + 1] += col_indptr[v]
    col_topics = np.empty(len(indices), dtype=np.int32)
    col_values = np.empty(len(indices), dtype=np.float64)
    filled = col_indptr[:-1].copy()
    for t in range(len(indptr) - 1):
        for e in range(indptr[t], indptr[t + 1]):
            q = filled[indices[e]]
            col_topics[q] = t
            col_values[q] = values[e]
            filled[indices[e]] = q + 1
    return col_indptr, col_topics, col_values


@nb.njit(**PARALLEL)
def sort_columns_by_value(columns):
    """Sort each column's entries by value, high to low, in place; ties keep their order (stable)."""
    col_indptr, col_topics, col_values = columns.indptr, columns.topics, columns.values
    n_cols = len(col_indptr) - 1
    longest = longest_document(col_indptr, 0, n_cols)
    for chunk in nb.prange(CYCLIC_CHUNKS):  # cyclic: frequent words (long columns) come first
        scratch = sort_scratch(longest, col_topics)
        for v in range(chunk, n_cols, CYCLIC_CHUNKS):
            _sort_segment_by_value(col_topics, col_values, col_indptr[v], col_indptr[v + 1], scratch)


# a cached kernel loads without numba's compiler start-up (0.3-0.5 s a process): see _kernel_cache
load_cached_kernels_directly(globals())
