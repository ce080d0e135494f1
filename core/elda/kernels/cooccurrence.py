"""Document co-occurrence counts C = B^T B (B: binary document-word matrix) and the keyword
candidates read off them (the E-LDA paper's keyword generators). Private: arrays in, arrays out; callers validate."""

from __future__ import annotations

import numba as nb
import numpy as np

from topicbench.core.kernel_cache import load_cached_kernels_directly
from topicbench.core.elda.kernels.records import CountRows, Segments
from topicbench.core.elda.kernels.segments import CYCLIC_CHUNKS, PARALLEL, SERIAL, offsets_of

#: A row of C longer than n_words / DENSE_ROW_FRACTION is read off its dense counts in word order
#: (n_words steps); a shorter one sorts its word ids (length x log(length) steps).
DENSE_ROW_FRACTION = 16


@nb.njit(**PARALLEL)
def cooccurrence_matrix(doc_indptr, doc_words, word_indptr, word_docs, n_words, n_chunks):
    """CSR (indptr, indices, counts) of C, column ids sorted: a pass that counts each row's
    entries, then one that fills them. Rows are dealt cyclically (frequent words come first)."""
    lengths = np.zeros(n_words, dtype=np.int64)
    for chunk in nb.prange(n_chunks):
        last_seen = np.full(n_words, -1, dtype=np.int64)
        for u in range(chunk, n_words, n_chunks):
            count = 0
            for p in range(word_indptr[u], word_indptr[u + 1]):
                d = word_docs[p]
                for q in range(doc_indptr[d], doc_indptr[d + 1]):
                    v = doc_words[q]
                    if last_seen[v] != u:
                        last_seen[v] = u
                        count += 1
            lengths[u] = count
    indptr = offsets_of(lengths)
    indices = np.empty(indptr[-1], dtype=np.int32)
    counts = np.empty(indptr[-1], dtype=np.int32)
    words_of_doc, docs_of_word = Segments(doc_indptr, doc_words), Segments(word_indptr, word_docs)
    rows = CountRows(indptr, indices, counts)
    for chunk in nb.prange(n_chunks):
        dense = np.zeros(n_words, dtype=np.int32)
        for u in range(chunk, n_words, n_chunks):
            _cooccurrence_row(u, words_of_doc, docs_of_word, rows, dense)
    return indptr, indices, counts


@nb.njit(**SERIAL)
def _cooccurrence_row(u, words_of_doc, docs_of_word, rows, dense):
    """Row u of C into ``rows``' indices/counts[indptr[u]:indptr[u + 1]], word ids ascending;
    ``dense`` is all zeros before and after."""
    doc_indptr, doc_words = words_of_doc.indptr, words_of_doc.ids
    word_indptr, word_docs = docs_of_word.indptr, docs_of_word.ids
    indices, counts = rows.indices, rows.counts
    start, stop = rows.indptr[u], rows.indptr[u + 1]
    read_dense = (stop - start) * DENSE_ROW_FRACTION > len(dense)
    filled = start
    for p in range(word_indptr[u], word_indptr[u + 1]):
        d = word_docs[p]
        for q in range(doc_indptr[d], doc_indptr[d + 1]):
            v = doc_words[q]
            if dense[v] == 0 and not read_dense:
                indices[filled] = v
                filled += 1
            dense[v] += 1
    if read_dense:
        for v in range(len(dense)):
            if dense[v] != 0:
                indices[filled] = v
                counts[filled] = dense[v]
                dense[v] = 0
                filled += 1
        return
    indices[start:stop] = np.sort(indices[start:stop])
    for i in range(start, stop):
        counts[i] = dense[indices[i]]
        dense[indices[i]] = 0


# Keyword generators (the E-LDA paper's keyword generators). Codes: 0 raw_umass, 1 exp_umass, 2 cooccurrence.
RAW_UMASS, EXP_UMASS, COOCCURRENCE = 0, 1, 2


@nb.njit(**SERIAL)
def count_scores(max_count, generator, epsilon):
    """The part of L[w*, v] that depends on the count C[w*, v] = c, for every c <= max_count:
    log(c + eps) (raw_umass) or c + eps; L[w*, v] is this minus the row's log-normaliser (0 for
    cooccurrence). A table: one log per distinct count, not one per stored entry."""
    table = np.empty(max_count + 1, dtype=np.float64)
    for c in range(max_count + 1):
        table[c] = np.log(c + epsilon) if generator == RAW_UMASS else c + epsilon
    return table


@nb.njit(**PARALLEL)
def keyword_row_normalisers(indptr, counts, n_words, generator, epsilon):
    """Per keyword row: (log-normaliser, row constant = L at words that never co-occur)."""
    n_rows = len(indptr) - 1
    log_norm = np.zeros(n_rows, dtype=np.float64)
    constants = np.empty(n_rows, dtype=np.float64)
    for u in nb.prange(n_rows):
        start, stop = indptr[u], indptr[u + 1]
        if generator == RAW_UMASS:
            total = 0.0
            for p in range(start, stop):
                total += counts[p]
            log_norm[u] = np.log(total + n_words * epsilon)
            constants[u] = np.log(epsilon) - log_norm[u]
        elif generator == EXP_UMASS:
            peak = epsilon
            for p in range(start, stop):
                peak = max(peak, counts[p] + epsilon)
            total = 0.0
            for p in range(start, stop):
                total += np.exp(counts[p] + epsilon - peak)
            total += (n_words - (stop - start)) * np.exp(epsilon - peak)
            log_norm[u] = peak + np.log(total)
            constants[u] = epsilon - log_norm[u]
        else:
            constants[u] = epsilon
    return log_norm, constants


@nb.njit(**PARALLEL)
def integer_row_hashes(indptr, indices, counts):
    """A 64-bit FNV-style hash of each row's (index, count) pairs (to find identical rows)."""
    n_rows = len(indptr) - 1
    hashes = np.empty(n_rows, dtype=np.uint64)
    prime = np.uint64(1099511628211)
    for u in nb.prange(n_rows):
        h = np.uint64(14695981039346656037)
        for p in range(indptr[u], indptr[u + 1]):
            h = (h ^ np.uint64(indices[p])) * prime
            h = (h ^ np.uint64(counts[p])) * prime
        hashes[u] = h
    return hashes


@nb.njit(**PARALLEL)
def keyword_rows(indptr, indices, counts, kept_words, log_norm, generator, epsilon):
    """CSR rows (word ids, values) of the kept keyword topics."""
    scores = count_scores(counts.max() if len(counts) else 0, generator, epsilon)
    n_topics = len(kept_words)
    out_indptr = offsets_of(indptr[kept_words + 1] - indptr[kept_words])
    out_words = np.empty(out_indptr[-1], dtype=np.int32)
    out_values = np.empty(out_indptr[-1], dtype=np.float64)
    # Cyclic over rows: the vocabulary comes most frequent first, so the first rows are longest.
    for chunk in nb.prange(CYCLIC_CHUNKS):
        for t in range(chunk, n_topics, CYCLIC_CHUNKS):
            u = kept_words[t]
            q = out_indptr[t]
            for p in range(indptr[u], indptr[u + 1]):
                out_words[q] = indices[p]
                out_values[q] = scores[counts[p]] - log_norm[u]
                q += 1
    return out_indptr, out_words, out_values


@nb.njit(**PARALLEL)
def keyword_column_entries(indptr, indices, counts, topic_of_word, log_norm, generator, epsilon):
    """Column store of keyword topics, read off C's rows (C is symmetric): column v holds
    (topic of keyword u, L[u, v]) for each kept keyword u co-occurring with v, topic ids ascending
    (not sorted by value: :func:`sort_columns_by_value` or :func:`column_heads` do that)."""
    scores = count_scores(counts.max() if len(counts) else 0, generator, epsilon)
    n_words = len(indptr) - 1
    lengths = np.zeros(n_words, dtype=np.int64)
    for chunk in nb.prange(CYCLIC_CHUNKS):
        for v in range(chunk, n_words, CYCLIC_CHUNKS):
            kept = 0
            for p in range(indptr[v], indptr[v + 1]):
                if topic_of_word[indices[p]] >= 0:
                    kept += 1
            lengths[v] = kept
    col_indptr = offsets_of(lengths)
    col_topics = np.empty(col_indptr[-1], dtype=np.int32)
    col_values = np.empty(col_indptr[-1], dtype=np.float64)
    for chunk in nb.prange(CYCLIC_CHUNKS):  # cyclic: frequent words (long columns) come first
        for v in range(chunk, n_words, CYCLIC_CHUNKS):
            q = col_indptr[v]
            for p in range(indptr[v], indptr[v + 1]):
                u = indices[p]
                t = topic_of_word[u]
                if t >= 0:
                    col_topics[q] = t
                    col_values[q] = scores[counts[p]] - log_norm[u]
                    q += 1
    return col_indptr, col_topics, col_values


# a cached kernel loads without numba's compiler start-up (0.3-0.5 s a process): see _kernel_cache
load_cached_kernels_directly(globals())
