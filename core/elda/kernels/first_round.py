"""FastInitialize's first round (the E-LDA paper's algorithms): each document's best topic on the empty solution,
from approximate gains (dense quantised rows for frequent words) checked exactly. Private."""

from __future__ import annotations

import numba as nb
import numpy as np

from topicbench.core.kernel_cache import load_cached_kernels_directly
from topicbench.core.elda.kernels.gains import (
    base_gain,
    document_base,
    evaluation_scratch,
    link_topic,
    topic_gain,
)
from topicbench.core.elda.kernels.segments import PARALLEL, SERIAL, longest_document

#: Dense first-round rows hold each entry as a multiple of its row's quantum (largest / this).
DENSE_ROW_LEVELS = 32767


@nb.njit(**PARALLEL)
def dense_first_round_rows(cols, row_constants, dense_words, null_score):
    """One int16 row per dense word (dense words x topics): what its column adds to a topic's
    first-round gain (every best score at the null score), in units of the row's quantum
    (its largest addition / :data:`DENSE_ROW_LEVELS`), rounded to the nearest; zero where nothing
    is stored. Returns the rows and each row's quantum (float64): an entry is its score to within
    half a quantum. int16 rather than float32 halves the memory the first round streams, its
    bottleneck (congress: 0.65-0.76 s against 0.79-1.08 s for the round). ``cols``: a
    :class:`.records.Columns`, its entries in any order."""
    col_indptr, col_topics, col_values = cols.indptr, cols.topics, cols.values
    n_topics = len(row_constants)
    rows = np.zeros((len(dense_words), n_topics), dtype=np.int16)
    quantum = np.zeros(len(dense_words), dtype=np.float64)
    for h in nb.prange(len(dense_words)):
        v = dense_words[h]
        largest = 0.0
        for p in range(col_indptr[v], col_indptr[v + 1]):
            value = col_values[p]
            if value > null_score:  # the column's entries may come in any order
                largest = max(largest, value - max(row_constants[col_topics[p]], null_score))
        if largest > 0.0:
            quantum[h] = largest / DENSE_ROW_LEVELS
            for p in range(col_indptr[v], col_indptr[v + 1]):
                value = col_values[p]
                if value > null_score:
                    t = col_topics[p]
                    level = np.rint((value - max(row_constants[t], null_score)) / quantum[h])
                    rows[h, t] = np.int16(min(level, DENSE_ROW_LEVELS))
    return rows, quantum


@nb.njit(**SERIAL)
def add_dense_rows(corrections, dense_rows, rows, steps, n_rows):
    """corrections += sum_i steps[i] * dense_rows[rows[i]] over the first n_rows, eight rows a
    pass over the topics: each pass loads and stores ``corrections`` (larger than the L1 cache on
    the paper's corpora) once for eight rows, which about halves the first round's main loop."""
    i = 0
    while i + 8 <= n_rows:
        r0, r1, r2, r3 = dense_rows[rows[i]], dense_rows[rows[i + 1]], dense_rows[rows[i + 2]], dense_rows[rows[i + 3]]
        r4, r5, r6, r7 = dense_rows[rows[i + 4]], dense_rows[rows[i + 5]], dense_rows[rows[i + 6]], dense_rows[rows[i + 7]]
        s0, s1, s2, s3, s4, s5, s6, s7 = steps[i], steps[i + 1], steps[i + 2], steps[i + 3], steps[i + 4], steps[i + 5], steps[i + 6], steps[i + 7]
        for t in range(len(corrections)):
            corrections[t] += (s0 * r0[t] + s1 * r1[t] + s2 * r2[t] + s3 * r3[t]) + (s4 * r4[t] + s5 * r5[t] + s6 * r6[t] + s7 * r7[t])
        i += 8
    while i < n_rows:
        row = dense_rows[rows[i]]
        step = steps[i]
        for t in range(len(corrections)):
            corrections[t] += step * row[t]
        i += 1


#: Gains within this relative distance of a document's best approximate gain are recomputed
#: exactly (float64 sums in another order differ by about 1e-13 relative).
FIRST_ROUND_SLACK = 1e-9


@nb.njit(**PARALLEL)
def first_round_best_topics(dense, docs, best, rows, cols, n_chunks):
    """FastInitialize's first round: each document's best topic and gain on the empty solution.

    Approximate gains, summed in whatever order is fastest, into a zeroed float64 array: a
    dense word (``dense_row_of_word[v] >= 0``) adds its quantised row of ``dense_rows`` (times
    its quantum) in one vectorised pass over the topics, any other word reads its whole column
    (its entries in any order: the columns need not be sorted yet); then each topic's base joins
    in one pass over the topics. Quantising moves a document's gains by at most
    sum_j n_j quantum_j / 2, so the true best topic's approximate gain lies within twice that of
    the best approximate gain: the topics in that window (about one per document) get their exact
    gains (:func:`topic_gain`, the same sum as any later evaluation) and the best of them (ties:
    lowest id) is the document's first topic. ``dense``: a :class:`.records.DenseRows`."""
    dense_rows, dense_quantum, dense_row_of_word = dense.rows, dense.quantum, dense.row_of_word
    doc_indptr, doc_words, doc_counts = docs.indptr, docs.words, docs.counts
    row_constants = rows.constants
    col_indptr, col_topics, col_values = cols.indptr, cols.topics, cols.values
    n_topics = len(row_constants)
    n = len(doc_indptr) - 1
    topics = np.empty(n, dtype=np.int64)
    gains_out = np.empty(n, dtype=np.float64)
    entries = np.zeros(n, dtype=np.int64)
    n_chunks = min(n_chunks, max(n, 1))
    longest = longest_document(doc_indptr, 0, n)
    for chunk in nb.prange(n_chunks):
        corrections = np.zeros(n_topics, dtype=np.float64)
        window_topics = np.empty(n_topics, dtype=np.int64)
        window_gains = np.empty(n_topics, dtype=np.float64)
        scratch = evaluation_scratch(row_constants[:0], longest)
        doc_rows = np.empty(longest, dtype=np.int64)
        doc_steps = np.empty(longest, dtype=np.float64)
        for d in range(chunk, n, n_chunks):
            m = document_base(d, docs, best, scratch)
            read = 0
            error = 0.0
            n_rows = 0
            for j in range(doc_indptr[d], doc_indptr[d + 1]):
                v = doc_words[j]
                count = doc_counts[j]
                h = dense_row_of_word[v]
                if h >= 0:
                    doc_rows[n_rows] = h
                    doc_steps[n_rows] = count * dense_quantum[h]
                    error += doc_steps[n_rows]
                    n_rows += 1
                    continue
                b = best[j]
                for p in range(col_indptr[v], col_indptr[v + 1]):  # entries in any order: no early stop
                    value = col_values[p]
                    if value > b:
                        t = col_topics[p]
                        corrections[t] += count * (value - max(row_constants[t], b))
                        read += 1
            add_dense_rows(corrections, dense_rows, doc_rows, doc_steps, n_rows)
            entries[d] = read
            error *= 1.01  # twice half a quantum per count, with room for float64 rounding
            top = -np.inf
            k = 0
            for t in range(n_topics):
                g = base_gain(row_constants[t], m, scratch) + corrections[t]
                corrections[t] = 0.0
                if g > top:
                    top = g
                if g >= top - error - FIRST_ROUND_SLACK * abs(top):  # may be the best: kept
                    window_topics[k] = t
                    window_gains[k] = g
                    k += 1
            floor = top - error - FIRST_ROUND_SLACK * abs(top)
            best_t = -1
            best_g = -np.inf
            for r in range(k):  # topic order: the first of equal exact gains wins
                if window_gains[r] >= floor:
                    t = window_topics[r]
                    g = topic_gain(d, t, m, docs, best, rows, scratch)
                    if g > best_g:
                        best_t = t
                        best_g = g
            topics[d] = best_t
            gains_out[d] = best_g
    return topics, gains_out, entries


@nb.njit(**PARALLEL)
def link_per_document(documents, topics, docs, best, rows):
    """Link topics[i] to documents[i] for all i, in parallel (documents are independent)."""
    for i in nb.prange(len(documents)):
        link_topic(documents[i], topics[i], docs, best, rows)


# a cached kernel loads without numba's compiler start-up (0.3-0.5 s a process): see _kernel_cache
load_cached_kernels_directly(globals())
