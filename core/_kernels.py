"""numba kernels of the E-LDA core. Private: arrays in, arrays out; callers validate.

Candidate topics are stored as ``L[t, v] = row_constant[t]`` except at stored entries
(``L[t, v] > row_constant[t]``), kept twice: row-major (word ids sorted, for look-ups) and
column-major with each column sorted by value, high to low (for pruned gain scans). A gain scan
of word v stops at the first entry whose value does not beat the token's current best score,
so after a document's first link most of each column is skipped (spec §2-3).
"""

from __future__ import annotations

from collections import namedtuple

import numba as nb
import numpy as np

from ._kernel_cache import load_cached_kernels_directly

_PARALLEL = dict(parallel=True, cache=True, nogil=True)

#: Work items per parallel loop over words, dealt cyclically: words come most frequent first,
#: so contiguous blocks would leave one thread with all the long rows.
CYCLIC_CHUNKS = 64
_SERIAL = dict(cache=True, nogil=True)


# ----------------------------------------------------------------------------------------------
# Document co-occurrence counts C = B^T B (B: binary document-word matrix), one row per word.
# ----------------------------------------------------------------------------------------------


@nb.njit(**_SERIAL)
def offsets_of(lengths):
    """CSR offsets (an ``indptr``) of consecutive segments of these lengths: 0, then running sums."""
    indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    for i in range(len(lengths)):
        indptr[i + 1] = indptr[i] + lengths[i]
    return indptr


#: A row of C longer than n_words / DENSE_ROW_FRACTION is read off its dense counts in word order
#: (n_words steps); a shorter one sorts its word ids (length x log(length) steps).
DENSE_ROW_FRACTION = 16


@nb.njit(**_PARALLEL)
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
    for chunk in nb.prange(n_chunks):
        dense = np.zeros(n_words, dtype=np.int32)
        for u in range(chunk, n_words, n_chunks):
            _cooccurrence_row(u, doc_indptr, doc_words, word_indptr, word_docs, indptr, dense, indices, counts)
    return indptr, indices, counts


@nb.njit(**_SERIAL)
def _cooccurrence_row(u, doc_indptr, doc_words, word_indptr, word_docs, indptr, dense, indices, counts):
    """Row u of C into indices/counts[indptr[u]:indptr[u + 1]], word ids ascending; ``dense`` is
    all zeros before and after."""
    start, stop = indptr[u], indptr[u + 1]
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


# Keyword generators (spec §2). Codes: 0 raw_umass, 1 exp_umass, 2 cooccurrence.
RAW_UMASS, EXP_UMASS, COOCCURRENCE = 0, 1, 2


@nb.njit(**_SERIAL)
def count_scores(max_count, generator, epsilon):
    """The part of L[w*, v] that depends on the count C[w*, v] = c, for every c <= max_count:
    log(c + eps) (raw_umass) or c + eps; L[w*, v] is this minus the row's log-normaliser (0 for
    cooccurrence). A table: one log per distinct count, not one per stored entry."""
    table = np.empty(max_count + 1, dtype=np.float64)
    for c in range(max_count + 1):
        table[c] = np.log(c + epsilon) if generator == RAW_UMASS else c + epsilon
    return table


@nb.njit(**_PARALLEL)
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


@nb.njit(**_PARALLEL)
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


@nb.njit(**_PARALLEL)
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


@nb.njit(**_PARALLEL)
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


#: Segments up to this long are sorted by insertion, longer ones by radix (:func:`_sort_segment_by_value`).
INSERTION_SORT_MAX = 32
_SIGN_BIT = np.uint64(1) << np.uint64(63)


@nb.njit(**_SERIAL)
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


@nb.njit(**_SERIAL)
def sort_scratch(longest, topics):
    return SortScratch(
        np.empty(longest, dtype=np.uint64), np.empty(longest, dtype=np.uint64),
        np.empty(longest, dtype=topics.dtype), np.empty(longest, dtype=np.float64),
    )


@nb.njit(**_SERIAL)
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


@nb.njit(**_PARALLEL)
def column_heads(col_indptr, col_topics, col_values, doc_words, best):
    """The part of each column a scan can still read, sorted by value high to low (ties: the
    entries' order, topic ids ascending), as a new column store.

    A scan of word v stops at the first entry that does not beat the token's best score, and
    best scores only rise, so an entry no higher than the lowest best score of any (document,
    word v) slot now is never read again. Only the entries above it are kept and sorted: after
    FastInitialize's first round, about a third of them on the paper's corpora.
    """
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


@nb.njit(**_SERIAL)
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


@nb.njit(**_PARALLEL)
def sort_columns_by_value(col_indptr, col_topics, col_values):
    """Sort each column's entries by value, high to low, in place; ties keep their order (stable)."""
    n_cols = len(col_indptr) - 1
    longest = longest_document(col_indptr, 0, n_cols)
    for chunk in nb.prange(CYCLIC_CHUNKS):  # cyclic: frequent words (long columns) come first
        scratch = sort_scratch(longest, col_topics)
        for v in range(chunk, n_cols, CYCLIC_CHUNKS):
            _sort_segment_by_value(col_topics, col_values, col_indptr[v], col_indptr[v + 1], scratch)


# ----------------------------------------------------------------------------------------------
# Gains (spec §1): gain(t, d) = sum_i max(0, L[t, w_i] - best_d[i]).
# Tokens of one word in one document share their best score, so state is kept per
# (document, distinct word) with the word's count as weight.
# ----------------------------------------------------------------------------------------------


@nb.njit(**_SERIAL)
def topic_value(t, v, row_constants, row_indptr, row_words, row_values):
    """L[t, v] by binary search in row t."""
    lo = row_indptr[t]
    hi = row_indptr[t + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        w = row_words[mid]
        if w < v:
            lo = mid + 1
        elif w > v:
            hi = mid
        else:
            return row_values[mid]
    return row_constants[t]


@nb.njit(**_SERIAL)
def column_corrections(
    d, doc_indptr, doc_words, doc_counts, best, row_constants, col_indptr, col_topics, col_values, gains,
):
    """Add, for each stored entry that beats b_j, n_j (L - max(c_t, b_j)) to ``gains``: what the
    entry adds to the topic's base. Each column scan stops at the first entry <= b_j. Returns the
    entries read."""
    entries = 0
    for j in range(doc_indptr[d], doc_indptr[d + 1]):
        v = doc_words[j]
        b = best[j]
        n = doc_counts[j]
        for p in range(col_indptr[v], col_indptr[v + 1]):
            value = col_values[p]
            if value <= b:
                break
            t = col_topics[p]
            gains[t] += n * (value - max(row_constants[t], b))
            entries += 1
    return entries


@nb.njit(**_SERIAL)
def link_topic(
    d, t, doc_indptr, doc_words, best,
    row_constants, row_indptr, row_words, row_values,
):
    """Raise document d's best scores to topic t's where t does better."""
    for j in range(doc_indptr[d], doc_indptr[d + 1]):
        value = topic_value(t, doc_words[j], row_constants, row_indptr, row_words, row_values)
        if value > best[j]:
            best[j] = value


# ----------------------------------------------------------------------------------------------
# Sparse document evaluation. A topic that no stored entry of the document's words lifts above
# the words' best scores gains exactly base(row constant), and base grows with the constant; so
# a document's best topics are among the topics its column scans reach plus the first few others
# by row constant. An evaluation reads the entries that beat the best scores, never all topics.
# Gains are summed in the same order as base_gains + column_corrections, so they are the same
# floats, and so are the choices and their ties (largest gain, then lowest topic id).
# ----------------------------------------------------------------------------------------------


@nb.njit(**_SERIAL)
def longest_document(doc_indptr, first, stop):
    """The most distinct words of any of documents first .. stop - 1."""
    longest = 0
    for d in range(first, stop):
        longest = max(longest, doc_indptr[d + 1] - doc_indptr[d])
    return longest


#: Per-thread work arrays of an evaluation. ``reached``: per topic (row constant, gain so far),
#: NaN gain while not reached (a sparse scan jumps between topics, so both share a cache line);
#: ``reached_list`` the topics reached, to read and reset; ``excluded`` topics left out of the
#: result; ``sorted_b``, ``below_n``, ``below_nb`` a document's base (:func:`document_base`).
EvaluationScratch = namedtuple(
    "EvaluationScratch", "gains reached reached_list excluded sorted_b below_n below_nb"
)


@nb.njit(**_SERIAL)
def evaluation_scratch(row_constants, longest):
    """Work arrays for evaluating documents of up to ``longest`` words over these topics."""
    n_topics = len(row_constants)
    reached = np.empty((n_topics, 2), dtype=np.float64)
    reached[:, 0] = row_constants
    reached[:, 1] = np.nan
    return EvaluationScratch(
        np.empty(n_topics, dtype=np.float64), reached, np.empty(n_topics, dtype=np.int64),
        np.zeros(n_topics, dtype=np.bool_), np.empty(longest + 1, dtype=np.float64),
        np.empty(longest + 1, dtype=np.float64), np.empty(longest + 1, dtype=np.float64),
    )


@nb.njit(**_SERIAL)
def document_base(d, doc_indptr, doc_counts, best, scratch):
    """Make base(c) = sum_j n_j max(0, c - b_j) of document d readable for any c (:func:`base_gain`):
    its best scores sorted, and for each k the count and weighted sum of the words below the k-th.
    The sums remove words from the totals highest first. Returns m."""
    sorted_b, below_n, below_nb = scratch.sorted_b, scratch.below_n, scratch.below_nb
    start, stop = doc_indptr[d], doc_indptr[d + 1]
    m = stop - start
    order = np.argsort(best[start:stop])
    total_n = 0.0
    total_nb = 0.0
    for j in range(start, stop):
        total_n += doc_counts[j]
        total_nb += doc_counts[j] * best[j]
    below_n[m] = total_n
    below_nb[m] = total_nb
    for k in range(m - 1, -1, -1):
        j = start + order[k]
        sorted_b[k] = best[j]
        below_n[k] = below_n[k + 1] - doc_counts[j]
        below_nb[k] = below_nb[k + 1] - doc_counts[j] * best[j]
    return m


@nb.njit(**_SERIAL)
def base_gain(c, m, scratch):
    """base(c) of the document last prepared by :func:`document_base` (0 at or below its lowest score)."""
    sorted_b, below_n, below_nb = scratch.sorted_b, scratch.below_n, scratch.below_nb
    if m == 0 or c <= sorted_b[0]:
        return 0.0
    if c > sorted_b[m - 1]:  # above every best score (every score is null before the first link)
        return c * below_n[m] - below_nb[m]
    lo = 0
    hi = m
    while lo < hi:  # words from lo on have b >= c
        mid = (lo + hi) >> 1
        if sorted_b[mid] < c:
            lo = mid + 1
        else:
            hi = mid
    return c * below_n[lo] - below_nb[lo]


@nb.njit(**_SERIAL)
def base_gains(d, doc_indptr, doc_counts, best, row_constants, constants_desc, scratch, gains):
    """Fill ``gains[t]`` with base(row_constant[t]) for every topic: :func:`base_gain`'s values,
    in one walk down the constants (high to low) instead of a search per topic. Returns m."""
    m = document_base(d, doc_indptr, doc_counts, best, scratch)
    sorted_b, below_n, below_nb = scratch.sorted_b, scratch.below_n, scratch.below_nb
    gains[:] = 0.0
    k = m  # words from k on have b >= c
    for r in range(len(constants_desc)):
        t = constants_desc[r]
        c = row_constants[t]
        if m == 0 or c <= sorted_b[0]:
            break
        while k > 0 and sorted_b[k - 1] >= c:
            k -= 1
        gains[t] = c * below_n[k] - below_nb[k]
    return m


@nb.njit(**_SERIAL)
def topic_gain(
    d, t, m, doc_indptr, doc_words, doc_counts, best,
    row_constants, row_indptr, row_words, row_values, scratch,
):
    """The gain of one topic on document d (prepared by :func:`document_base`), by row look-ups."""
    c = row_constants[t]
    g = base_gain(c, m, scratch)
    for j in range(doc_indptr[d], doc_indptr[d + 1]):
        value = topic_value(t, doc_words[j], row_constants, row_indptr, row_words, row_values)
        b = best[j]
        if value > b and value > c:  # a stored entry that beats the word's best score
            g += doc_counts[j] * (value - max(c, b))
    return g


@nb.njit(**_SERIAL)
def _before(g, t, top_g, top_t):
    """Does (gain g, topic t) rank before the entry (top_g, top_t)? An empty slot (-1) ranks last."""
    return top_t < 0 or g > top_g or (g == top_g and t < top_t)


@nb.njit(**_SERIAL)
def offer(t, g, top_t, top_g):
    """Put (t, g) into the list sorted by gain, high to low (ties: lower topic id), if it ranks."""
    i = len(top_t) - 1
    if not _before(g, t, top_g[i], top_t[i]):
        return
    while i > 0 and _before(g, t, top_g[i - 1], top_t[i - 1]):
        top_g[i] = top_g[i - 1]
        top_t[i] = top_t[i - 1]
        i -= 1
    top_g[i] = g
    top_t[i] = t


#: A document is evaluated sparsely (reached topics only) when the entries its words' columns
#: hold, times this, are fewer than the topics; otherwise every topic's gain is filled in.
#: Measured on the synthetic |V| = 10^5 corpus: keeping the list of reached topics costs about
#: 9 ns per entry read, filling in costs about 3 ns per entry plus a pass over the topics, so
#: sparse pays for short documents of rare words; congress's documents all go dense.
SPARSE_ADVANTAGE = 4


@nb.njit(**_SERIAL)
def document_top_topics(
    d, doc_indptr, doc_words, doc_counts, best,
    row_constants, constants_desc, col_indptr, col_topics, col_values, scratch, top_t, top_g,
):
    """The len(top_t) best topics of document d and their gains (high to low, ties: lowest id),
    leaving out topics flagged in ``scratch``'s excluded array; -1 / -inf pad. Returns entries read."""
    reach = 0
    for j in range(doc_indptr[d], doc_indptr[d + 1]):
        reach += col_indptr[doc_words[j] + 1] - col_indptr[doc_words[j]]
    if reach * SPARSE_ADVANTAGE < len(row_constants):
        return sparse_top_topics(
            d, doc_indptr, doc_words, doc_counts, best,
            row_constants, constants_desc, col_indptr, col_topics, col_values, scratch, top_t, top_g,
        )
    return dense_top_topics(
        d, doc_indptr, doc_words, doc_counts, best,
        row_constants, constants_desc, col_indptr, col_topics, col_values, scratch, top_t, top_g,
    )


@nb.njit(**_SERIAL)
def dense_top_topics(
    d, doc_indptr, doc_words, doc_counts, best,
    row_constants, constants_desc, col_indptr, col_topics, col_values, scratch, top_t, top_g,
):
    """:func:`document_top_topics` by filling in every topic's gain."""
    top_t[:] = -1
    top_g[:] = -np.inf
    gains, excluded = scratch.gains, scratch.excluded
    base_gains(d, doc_indptr, doc_counts, best, row_constants, constants_desc, scratch, gains)
    entries = column_corrections(
        d, doc_indptr, doc_words, doc_counts, best, row_constants, col_indptr, col_topics, col_values, gains,
    )
    last = len(top_t) - 1
    for t in range(len(gains)):
        if not excluded[t] and (top_t[last] < 0 or gains[t] > top_g[last]):
            offer(t, gains[t], top_t, top_g)
    return entries


@nb.njit(**_SERIAL)
def sparse_top_topics(
    d, doc_indptr, doc_words, doc_counts, best,
    row_constants, constants_desc, col_indptr, col_topics, col_values, scratch, top_t, top_g,
):
    """:func:`document_top_topics` without touching every topic. Three kinds of topic: those the
    column scans reach (base + corrections), those they miss with a row constant above the
    document's lowest best score (base > 0, highest constant first), and the rest, which gain
    exactly 0 (lowest ids first)."""
    top_t[:] = -1
    top_g[:] = -np.inf
    reached, reached_list, excluded = scratch.reached, scratch.reached_list, scratch.excluded
    m = document_base(d, doc_indptr, doc_counts, best, scratch)
    n_reached = 0
    entries = 0
    for j in range(doc_indptr[d], doc_indptr[d + 1]):
        v = doc_words[j]
        b = best[j]
        n = doc_counts[j]
        for p in range(col_indptr[v], col_indptr[v + 1]):
            value = col_values[p]
            if value <= b:
                break
            t = col_topics[p]
            c = reached[t, 0]
            g = reached[t, 1]
            if g != g:  # NaN: first reached in this evaluation
                reached_list[n_reached] = t
                n_reached += 1
                g = base_gain(c, m, scratch)
            reached[t, 1] = g + n * (value - max(c, b))
            entries += 1
    for i in range(n_reached):
        t = reached_list[i]
        if not excluded[t]:
            offer(t, reached[t, 1], top_t, top_g)
    last = len(top_t) - 1
    lowest = scratch.sorted_b[0] if m > 0 else np.inf
    for r in range(len(constants_desc)):
        t = constants_desc[r]
        c = row_constants[t]
        if c <= lowest:
            break
        g = base_gain(c, m, scratch)
        if top_t[last] >= 0 and g < top_g[last]:
            break  # a topic not reached further on gains its base, which only falls from here
        if reached[t, 1] == reached[t, 1] or excluded[t]:  # reached (scored above), or left out
            continue
        offer(t, g, top_t, top_g)
    if top_t[last] < 0 or top_g[last] <= 0.0:
        for t in range(len(row_constants)):
            if top_t[last] >= 0 and (top_g[last] > 0.0 or (top_g[last] == 0.0 and t > top_t[last])):
                break
            if reached[t, 1] == reached[t, 1] or excluded[t] or row_constants[t] > lowest:
                continue
            offer(t, 0.0, top_t, top_g)
    for i in range(n_reached):
        reached[reached_list[i], 1] = np.nan
    return entries


@nb.njit(**_SERIAL)
def _exclude_linked(d, excluded, flag, doc_head, link_topics, link_next):
    """Flag (or unflag) the topics linked to d, read from the per-document linked list of links."""
    p = doc_head[d]
    while p >= 0:
        excluded[link_topics[p]] = flag
        p = link_next[p]


@nb.njit(**_SERIAL)
def _exclude_listed(topics, excluded, flag):
    """Flag (or unflag) the listed topics; -1 entries (padding) are skipped."""
    for t in topics:
        if t >= 0:
            excluded[t] = flag


#: Dense first-round rows hold each entry as a multiple of its row's quantum (largest / this).
DENSE_ROW_LEVELS = 32767


@nb.njit(**_PARALLEL)
def dense_first_round_rows(col_indptr, col_topics, col_values, row_constants, dense_words, null_score):
    """One int16 row per dense word (dense words x topics): what its column adds to a topic's
    first-round gain (every best score at the null score), in units of the row's quantum
    (its largest addition / :data:`DENSE_ROW_LEVELS`), rounded to the nearest; zero where nothing
    is stored. Returns the rows and each row's quantum (float64): an entry is its score to within
    half a quantum. int16 rather than float32 halves the memory the first round streams, its
    bottleneck (congress: 0.65-0.76 s against 0.79-1.08 s for the round)."""
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


@nb.njit(**_SERIAL)
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


@nb.njit(**_PARALLEL)
def first_round_best_topics(
    dense_rows, dense_quantum, dense_row_of_word, doc_indptr, doc_words, doc_counts, best,
    row_constants, col_indptr, col_topics, col_values, row_indptr, row_words, row_values, n_chunks,
):
    """FastInitialize's first round: each document's best topic and gain on the empty solution.

    Approximate gains, summed in whatever order is fastest, into a zeroed float64 array: a
    dense word (``dense_row_of_word[v] >= 0``) adds its quantised row of ``dense_rows`` (times
    its quantum) in one vectorised pass over the topics, any other word reads its whole column
    (its entries in any order: the columns need not be sorted yet); then each topic's base joins
    in one pass over the topics. Quantising moves a document's gains by at most
    sum_j n_j quantum_j / 2, so the true best topic's approximate gain lies within twice that of
    the best approximate gain: the topics in that window (about one per document) get their exact
    gains (:func:`topic_gain`, the same sum as any later evaluation) and the best of them (ties:
    lowest id) is the document's first topic."""
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
            m = document_base(d, doc_indptr, doc_counts, best, scratch)
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
                    g = topic_gain(
                        d, t, m, doc_indptr, doc_words, doc_counts, best,
                        row_constants, row_indptr, row_words, row_values, scratch,
                    )
                    if g > best_g:
                        best_t = t
                        best_g = g
            topics[d] = best_t
            gains_out[d] = best_g
    return topics, gains_out, entries


@nb.njit(**_PARALLEL)
def link_per_document(
    documents, topics, doc_indptr, doc_words, best,
    row_constants, row_indptr, row_words, row_values,
):
    """Link topics[i] to documents[i] for all i, in parallel (documents are independent)."""
    for i in nb.prange(len(documents)):
        link_topic(
            documents[i], topics[i], doc_indptr, doc_words, best,
            row_constants, row_indptr, row_words, row_values,
        )


# ----------------------------------------------------------------------------------------------
# Max-heap of (gain, document, topic): larger gain first, ties: lower document id.
# ----------------------------------------------------------------------------------------------


@nb.njit(**_SERIAL)
def _heap_before(gain_a, doc_a, gain_b, doc_b):
    return gain_a > gain_b or (gain_a == gain_b and doc_a < doc_b)


@nb.njit(**_SERIAL)
def heap_sift_down(heap_gain, heap_doc, heap_topic, size, i):
    while True:
        left = 2 * i + 1
        if left >= size:
            return
        child = left
        right = left + 1
        if right < size and _heap_before(heap_gain[right], heap_doc[right], heap_gain[left], heap_doc[left]):
            child = right
        if _heap_before(heap_gain[child], heap_doc[child], heap_gain[i], heap_doc[i]):
            heap_gain[i], heap_gain[child] = heap_gain[child], heap_gain[i]
            heap_doc[i], heap_doc[child] = heap_doc[child], heap_doc[i]
            heap_topic[i], heap_topic[child] = heap_topic[child], heap_topic[i]
            i = child
        else:
            return


@nb.njit(**_SERIAL)
def heapify(heap_gain, heap_doc, heap_topic, size):
    for i in range(size // 2 - 1, -1, -1):
        heap_sift_down(heap_gain, heap_doc, heap_topic, size, i)


@nb.njit(**_SERIAL)
def _refill_cache(
    d, doc_indptr, doc_words, doc_counts, best,
    row_constants, constants_desc, col_indptr, col_topics, col_values,
    doc_head, link_topics, link_next, pending, cache_topics, cache_bounds, cache_size, rest_bound,
    scratch, top_t, top_g,
):
    """A full evaluation of document d at its links (those in the linked list, and ``pending``:
    topics linked to d that the list does not hold yet): its len(top_t) - 1 best topics go to its
    cache; the next one's gain bounds every topic left out. Returns entries read."""
    excluded = scratch.excluded
    _exclude_linked(d, excluded, True, doc_head, link_topics, link_next)
    _exclude_listed(pending, excluded, True)
    entries = document_top_topics(
        d, doc_indptr, doc_words, doc_counts, best,
        row_constants, constants_desc, col_indptr, col_topics, col_values, scratch, top_t, top_g,
    )
    _exclude_linked(d, excluded, False, doc_head, link_topics, link_next)
    _exclude_listed(pending, excluded, False)
    size = cache_topics.shape[1]
    kept = 0
    for i in range(size):
        cache_topics[d, i] = top_t[i]
        cache_bounds[d, i] = top_g[i]
        if top_t[i] >= 0:
            kept += 1
    cache_size[d] = kept
    rest_bound[d] = top_g[size]
    return entries


@nb.njit(**_PARALLEL)
def second_topics(
    doc_indptr, doc_words, doc_counts, best,
    row_constants, constants_desc, col_indptr, col_topics, col_values,
    doc_head, link_topics, link_next, cache_topics, cache_bounds, cache_size, rest_bound, n_chunks,
):
    """FastInitialize's second round: each document's best unlinked topic and gain, in parallel,
    with its cache of next-best topics filled (see :func:`greedy_steps`)."""
    n = len(doc_indptr) - 1
    topics = np.empty(n, dtype=np.int64)
    gains_out = np.empty(n, dtype=np.float64)
    entries = np.zeros(n, dtype=np.int64)
    n_chunks = min(n_chunks, max(n, 1))
    size = cache_topics.shape[1]
    longest = longest_document(doc_indptr, 0, n)
    for chunk in nb.prange(n_chunks):
        scratch = evaluation_scratch(row_constants, longest)
        top_t = np.empty(size + 1, dtype=np.int64)
        top_g = np.empty(size + 1, dtype=np.float64)
        for d in range(chunk, n, n_chunks):
            entries[d] = _refill_cache(
                d, doc_indptr, doc_words, doc_counts, best,
                row_constants, constants_desc, col_indptr, col_topics, col_values,
                doc_head, link_topics, link_next, top_t[:0], cache_topics, cache_bounds, cache_size, rest_bound,
                scratch, top_t, top_g,
            )
            topics[d] = top_t[0]
            gains_out[d] = top_g[0]
    return topics, gains_out, entries


@nb.njit(**_SERIAL)
def _sort_cache(d, cache_topics, cache_bounds, size):
    """Insertion sort of document d's cache by bound, high to low (ties: lower topic id)."""
    for i in range(1, size):
        t = cache_topics[d, i]
        g = cache_bounds[d, i]
        k = i
        while k > 0 and _before(g, t, cache_bounds[d, k - 1], cache_topics[d, k - 1]):
            cache_topics[d, k] = cache_topics[d, k - 1]
            cache_bounds[d, k] = cache_bounds[d, k - 1]
            k -= 1
        cache_topics[d, k] = t
        cache_bounds[d, k] = g


@nb.njit(**_SERIAL)
def _next_best(
    d, t, doc_indptr, doc_words, doc_counts, best,
    row_constants, constants_desc, col_indptr, col_topics, col_values,
    row_indptr, row_words, row_values,
    doc_head, link_topics, link_next, pending, cache_topics, cache_bounds, cache_size, rest_bound,
    scratch, top_t, top_g, work,
):
    """Document d's best topic and gain just after topic t was linked to it (its best scores
    already raised), found lazily: gains only fall as links are added (submodularity), so the
    gains its cache holds from its last full evaluation bound its topics' gains now, and
    ``rest_bound`` bounds every other topic. Cached topics are re-evaluated one at a time, best
    bound first, until no bound can beat the best gain found; if that gain does not beat
    ``rest_bound``, the document is evaluated in full again and its cache refilled. ``pending``:
    as for :func:`_refill_cache`. Adds (entries read, full evaluations, single-topic
    evaluations) to ``work``."""
    kept = 0
    for i in range(cache_size[d]):
        if cache_topics[d, i] != t:
            cache_topics[d, kept] = cache_topics[d, i]
            cache_bounds[d, kept] = cache_bounds[d, i]
            kept += 1
    m = document_base(d, doc_indptr, doc_counts, best, scratch)
    new_t = -1
    new_g = -np.inf
    for i in range(kept):
        topic = cache_topics[d, i]
        if new_t >= 0 and not _before(cache_bounds[d, i], topic, new_g, new_t):
            break  # bounds only fall further down the cache
        gain = topic_gain(
            d, topic, m, doc_indptr, doc_words, doc_counts, best,
            row_constants, row_indptr, row_words, row_values, scratch,
        )
        work[2] += 1
        cache_bounds[d, i] = gain
        if new_t < 0 or _before(gain, topic, new_g, new_t):
            new_t = topic
            new_g = gain
    _sort_cache(d, cache_topics, cache_bounds, kept)
    cache_size[d] = kept
    if new_t < 0 or not new_g > rest_bound[d]:
        work[0] += _refill_cache(
            d, doc_indptr, doc_words, doc_counts, best,
            row_constants, constants_desc, col_indptr, col_topics, col_values,
            doc_head, link_topics, link_next, pending, cache_topics, cache_bounds, cache_size, rest_bound,
            scratch, top_t, top_g,
        )
        work[1] += 1
        new_t = top_t[0]
        new_g = top_g[0]
    return new_t, new_g


@nb.njit(**_SERIAL)
def greedy_steps(
    n_steps, heap_gain, heap_doc, heap_topic, heap_size,
    doc_indptr, doc_words, doc_counts, best,
    row_constants, constants_desc, col_indptr, col_topics, col_values,
    row_indptr, row_words, row_values,
    doc_head, link_topics, link_next, link_doc, link_gain, n_links,
    cache_topics, cache_bounds, cache_size, rest_bound,
):
    """FastGreedy (spec §3): pop the best (gain, document, topic), link it, find that document's
    new best topic (:func:`_next_best`) and push it back. Runs ``n_steps`` iterations; returns
    (links made, entries read, full evaluations, single-topic evaluations)."""
    size = cache_topics.shape[1]
    longest = longest_document(doc_indptr, 0, len(doc_indptr) - 1)
    scratch = evaluation_scratch(row_constants, longest)
    top_t = np.empty(size + 1, dtype=np.int64)
    top_g = np.empty(size + 1, dtype=np.float64)
    work = np.zeros(3, dtype=np.int64)
    made = 0
    for _ in range(n_steps):
        if heap_size == 0:
            break
        g = heap_gain[0]
        d = heap_doc[0]
        t = heap_topic[0]
        if t < 0:  # every topic is already linked to this document
            break
        k = n_links + made
        link_doc[k] = d
        link_topics[k] = t
        link_gain[k] = g
        link_next[k] = doc_head[d]
        doc_head[d] = k
        made += 1
        link_topic(d, t, doc_indptr, doc_words, best, row_constants, row_indptr, row_words, row_values)
        new_t, new_g = _next_best(
            d, t, doc_indptr, doc_words, doc_counts, best,
            row_constants, constants_desc, col_indptr, col_topics, col_values,
            row_indptr, row_words, row_values,
            doc_head, link_topics, link_next, top_t[:0], cache_topics, cache_bounds, cache_size, rest_bound,
            scratch, top_t, top_g, work,
        )
        heap_gain[0] = new_g
        heap_topic[0] = new_t
        heap_sift_down(heap_gain, heap_doc, heap_topic, heap_size, 0)
    return made, work[0], work[1], work[2]


@nb.njit(**_PARALLEL)
def extend_chains(
    threshold, cap, active, head_topic, head_gain, chain_floor,
    doc_indptr, doc_words, doc_counts, best,
    row_constants, constants_desc, col_indptr, col_topics, col_values,
    row_indptr, row_words, row_values,
    doc_head, link_topics, link_next, cache_topics, cache_bounds, cache_size, rest_bound, n_chunks,
):
    """Exact FastGreedy's links of the ``active`` documents down to ``threshold``, in parallel.

    Documents never interact, so each document's own sequence of greedy choices (its chain: link
    its best topic, find the next best, ...) does not depend on the others; FastGreedy's heap
    only interleaves the chains. Each active document links its head (``head_topic/gain``) and
    moves on while the chain's running minimum gain (``chain_floor``, its key in that
    interleaving) stays at or above ``threshold``, for at most ``cap`` links. Returns the links
    made, per active document: topics and raw gains (``cap`` columns, -1 / NaN padded), keys, and
    (entries read, full evaluations, single-topic evaluations). The links are not in the
    linked list yet (:func:`append_links` puts them there); heads and floors are updated.
    """
    n = len(active)
    size = cache_topics.shape[1]
    out_topics = np.full((n, cap), -1, dtype=np.int64)
    out_gains = np.full((n, cap), np.nan)
    out_keys = np.full((n, cap), np.nan)
    work = np.zeros((n, 3), dtype=np.int64)
    n_chunks = min(n_chunks, max(n, 1))
    longest = 0
    for i in range(n):
        longest = max(longest, doc_indptr[active[i] + 1] - doc_indptr[active[i]])
    for chunk in nb.prange(n_chunks):
        scratch = evaluation_scratch(row_constants, longest)
        top_t = np.empty(size + 1, dtype=np.int64)
        top_g = np.empty(size + 1, dtype=np.float64)
        for i in range(chunk, n, n_chunks):
            d = active[i]
            t = head_topic[d]
            g = head_gain[d]
            key = min(g, chain_floor[d])
            made = 0
            while made < cap and t >= 0 and key >= threshold:
                out_topics[i, made] = t
                out_gains[i, made] = g
                out_keys[i, made] = key
                made += 1
                chain_floor[d] = key
                link_topic(d, t, doc_indptr, doc_words, best, row_constants, row_indptr, row_words, row_values)
                t, g = _next_best(
                    d, t, doc_indptr, doc_words, doc_counts, best,
                    row_constants, constants_desc, col_indptr, col_topics, col_values,
                    row_indptr, row_words, row_values,
                    doc_head, link_topics, link_next, out_topics[i, :made],
                    cache_topics, cache_bounds, cache_size, rest_bound, scratch, top_t, top_g, work[i],
                )
                key = min(g, chain_floor[d])
            head_topic[d] = t
            head_gain[d] = g
    return out_topics, out_gains, out_keys, work


@nb.njit(**_SERIAL)
def append_links(docs, topics, gains, doc_head, link_doc, link_topics, link_next, link_gain, n_links):
    """Append links (in this order) to the link arrays and each document's linked list."""
    for i in range(len(docs)):
        k = n_links + i
        d = docs[i]
        link_doc[k] = d
        link_topics[k] = topics[i]
        link_gain[k] = gains[i]
        link_next[k] = doc_head[d]
        doc_head[d] = k


# ----------------------------------------------------------------------------------------------
# Reading a solution back: token topics and the objective recomputed from the links alone.
# ----------------------------------------------------------------------------------------------


@nb.njit(**_PARALLEL)
def assign_words(
    doc_indptr, doc_words, doc_link_indptr, doc_link_topics,
    row_constants, row_indptr, row_words, row_values, null_score,
):
    """For each (document, distinct word): the best linked topic (ties: lowest topic id) and the
    word's score max(null_score, L[topic, word])."""
    n_docs = len(doc_indptr) - 1
    word_topic = np.full(len(doc_words), -1, dtype=np.int64)
    word_score = np.full(len(doc_words), null_score, dtype=np.float64)
    for d in nb.prange(n_docs):
        for j in range(doc_indptr[d], doc_indptr[d + 1]):
            best_value = -np.inf
            best_t = -1
            for p in range(doc_link_indptr[d], doc_link_indptr[d + 1]):
                t = doc_link_topics[p]
                value = topic_value(t, doc_words[j], row_constants, row_indptr, row_words, row_values)
                if value > best_value or (value == best_value and t < best_t):
                    best_value = value
                    best_t = t
            word_topic[j] = best_t
            if best_value > null_score:
                word_score[j] = best_value
    return word_topic, word_score


# ----------------------------------------------------------------------------------------------
# Low-adaptivity rounds (core/parallel.py). Links already made are given per document as CSR
# (doc_link_indptr, doc_link_topics); each document's state is its best scores and a cache of its
# top gains at its current links, sorted high to low.
# ----------------------------------------------------------------------------------------------


@nb.njit(**_PARALLEL)
def top_gains_per_document(
    doc_indptr, doc_words, doc_counts, best,
    row_constants, constants_desc, col_indptr, col_topics, col_values,
    doc_link_indptr, doc_link_topics, top_size, n_chunks,
):
    """Each document's ``top_size`` best unlinked topics and their gains at its current links,
    and the entries read per document."""
    n_docs = len(doc_indptr) - 1
    top_topics = np.empty((n_docs, top_size), dtype=np.int64)
    top_gains = np.empty((n_docs, top_size), dtype=np.float64)
    entries = np.zeros(n_docs, dtype=np.int64)
    n_chunks = min(n_chunks, max(n_docs, 1))
    longest = longest_document(doc_indptr, 0, n_docs)
    for chunk in nb.prange(n_chunks):
        scratch = evaluation_scratch(row_constants, longest)
        for d in range(chunk, n_docs, n_chunks):
            linked = doc_link_topics[doc_link_indptr[d] : doc_link_indptr[d + 1]]
            _exclude_listed(linked, scratch.excluded, True)
            entries[d] = document_top_topics(
                d, doc_indptr, doc_words, doc_counts, best,
                row_constants, constants_desc, col_indptr, col_topics, col_values, scratch,
                top_topics[d], top_gains[d],
            )
            _exclude_listed(linked, scratch.excluded, False)
    return top_topics, top_gains, entries


@nb.njit(**_PARALLEL)
def threshold_round(
    threshold, max_accept, doc_indptr, doc_words, doc_counts, best,
    row_constants, constants_desc, col_indptr, col_topics, col_values,
    row_indptr, row_words, row_values,
    doc_link_indptr, doc_link_topics, top_topics, top_gains, n_chunks,
):
    """One adaptive round at a threshold (adaptive sequencing, spec §3).

    Every document whose cached best gain reaches the threshold takes as its sequence its cached
    topics with gain >= threshold (best first, at most ``max_accept``). The queries "gain of the
    j-th topic given the document's links plus topics 1..j-1" are fixed by the sequence before the
    round, so they are one round of parallel evaluations; the document accepts the longest prefix
    whose every conditional gain reaches the threshold. Documents never interact, so no topic of
    one document changes another's gain. ``best`` and the top-gain cache are updated in place for
    the accepted prefixes; returns the accepted topics, their conditional gains (rows padded with
    -1 / -inf), and per document the full evaluations (the one that refills its cache) and the
    single-topic gains evaluated.
    """
    n_docs = len(doc_indptr) - 1
    top_size = top_topics.shape[1]
    accepted_topics = np.full((n_docs, max_accept), -1, dtype=np.int64)
    accepted_gains = np.full((n_docs, max_accept), -np.inf, dtype=np.float64)
    evaluations = np.zeros(n_docs, dtype=np.int64)
    topic_evaluations = np.zeros(n_docs, dtype=np.int64)
    n_chunks = min(n_chunks, max(n_docs, 1))
    longest = longest_document(doc_indptr, 0, n_docs)
    for chunk in nb.prange(n_chunks):
        scratch = evaluation_scratch(row_constants, longest)
        sequence = np.empty(top_size, dtype=np.int64)
        for d in range(chunk, n_docs, n_chunks):
            if not top_gains[d, 0] >= threshold:
                continue
            length = 0
            while length < min(top_size, max_accept) and top_gains[d, length] >= threshold:
                sequence[length] = top_topics[d, length]
                length += 1
            condition = top_gains[d, 0]
            for j in range(length):
                if j > 0:
                    m = document_base(d, doc_indptr, doc_counts, best, scratch)
                    condition = topic_gain(
                        d, sequence[j], m, doc_indptr, doc_words, doc_counts, best,
                        row_constants, row_indptr, row_words, row_values, scratch,
                    )
                    topic_evaluations[d] += 1
                if not condition >= threshold:
                    break
                t = sequence[j]
                link_topic(d, t, doc_indptr, doc_words, best, row_constants, row_indptr, row_words, row_values)
                accepted_topics[d, j] = t
                accepted_gains[d, j] = condition
            excluded = scratch.excluded
            linked = doc_link_topics[doc_link_indptr[d] : doc_link_indptr[d + 1]]
            _exclude_listed(linked, excluded, True)
            _exclude_listed(accepted_topics[d], excluded, True)
            document_top_topics(
                d, doc_indptr, doc_words, doc_counts, best,
                row_constants, constants_desc, col_indptr, col_topics, col_values, scratch,
                top_topics[d], top_gains[d],
            )
            _exclude_listed(linked, excluded, False)
            _exclude_listed(accepted_topics[d], excluded, False)
            evaluations[d] += 1
    return accepted_topics, accepted_gains, evaluations, topic_evaluations


@nb.njit(**_PARALLEL)
def independent_links(
    doc_indptr, doc_words, doc_counts,
    row_constants, constants_desc, col_indptr, col_topics, col_values,
    row_indptr, row_words, row_values, topics_per_document, min_gain, null_score, n_chunks,
):
    """Greedy for each document on its own (spec §3, out-of-sample inference): link its best topic,
    then further topics while the gain reaches ``min_gain``, up to ``topics_per_document``. A
    document reads only its own words and the frozen candidates, so its result cannot depend on
    any other document."""
    n_docs = len(doc_indptr) - 1
    out_topics = np.full((n_docs, topics_per_document), -1, dtype=np.int64)
    out_gains = np.full((n_docs, topics_per_document), -np.inf, dtype=np.float64)
    best = np.full(len(doc_words), null_score)
    n_chunks = min(n_chunks, max(n_docs, 1))
    longest = longest_document(doc_indptr, 0, n_docs)
    for chunk in nb.prange(n_chunks):
        scratch = evaluation_scratch(row_constants, longest)
        top_t = np.empty(1, dtype=np.int64)
        top_g = np.empty(1, dtype=np.float64)
        for d in range(chunk, n_docs, n_chunks):
            for j in range(topics_per_document):
                _exclude_listed(out_topics[d, :j], scratch.excluded, True)
                document_top_topics(
                    d, doc_indptr, doc_words, doc_counts, best,
                    row_constants, constants_desc, col_indptr, col_topics, col_values, scratch, top_t, top_g,
                )
                _exclude_listed(out_topics[d, :j], scratch.excluded, False)
                t, g = top_t[0], top_g[0]
                if t < 0 or (j > 0 and g < min_gain):
                    break
                link_topic(d, t, doc_indptr, doc_words, best, row_constants, row_indptr, row_words, row_values)
                out_topics[d, j] = t
                out_gains[d, j] = g
    return out_topics, out_gains


# ----------------------------------------------------------------------------------------------
# Outputs: each row's largest entries (a topic's top words).
# ----------------------------------------------------------------------------------------------


@nb.njit(**_PARALLEL)
def rows_top_entries(indptr, columns, values, constants, width, n_chunks):
    """Each row's up to ``width`` stored entries above its constant, largest first (ties: lower
    column first): (columns padded with -1, count per row). A row keeps a sorted buffer of its
    best ``width`` so far; most entries lose to the buffer's last and cost one comparison."""
    n_rows = len(indptr) - 1
    tops = np.full((n_rows, width), -1, dtype=np.int64)
    counts = np.zeros(n_rows, dtype=np.int64)
    n_chunks = min(n_chunks, max(n_rows, 1))
    for chunk in nb.prange(n_chunks):
        kept = np.empty(max(width, 1), dtype=values.dtype)
        for r in range(chunk, n_rows, n_chunks):
            k = 0
            for e in range(indptr[r], indptr[r + 1]):
                v = values[e]
                c = np.int64(columns[e])
                if not v > constants[r] or width == 0:
                    continue
                if k == width:
                    if v < kept[k - 1] or (v == kept[k - 1] and c > tops[r, k - 1]):
                        continue
                    k -= 1  # the last one drops out
                i = k
                while i > 0 and (kept[i - 1] < v or (kept[i - 1] == v and tops[r, i - 1] > c)):
                    kept[i] = kept[i - 1]
                    tops[r, i] = tops[r, i - 1]
                    i -= 1
                kept[i] = v
                tops[r, i] = c
                k += 1
            counts[r] = k
    return tops, counts


# a cached kernel loads without numba's compiler start-up (0.3-0.5 s a process): see _kernel_cache
load_cached_kernels_directly(globals())
