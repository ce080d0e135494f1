"""numba kernels of the E-LDA core. Private: arrays in, arrays out; callers validate.

Candidate topics are stored as ``L[t, v] = row_constant[t]`` except at stored entries
(``L[t, v] > row_constant[t]``), kept twice: row-major (word ids sorted, for look-ups) and
column-major with each column sorted by value, high to low (for pruned gain scans). A gain scan
of word v stops at the first entry whose value does not beat the token's current best score,
so after a document's first link almost nothing is read (spec §2-3).
"""

from __future__ import annotations

import numba as nb
import numpy as np

_PARALLEL = dict(parallel=True, cache=True, nogil=True)

#: Work items per parallel loop over words, dealt cyclically: words come most frequent first,
#: so contiguous blocks would leave one thread with all the long rows.
CYCLIC_CHUNKS = 64
_SERIAL = dict(cache=True, nogil=True)


# ----------------------------------------------------------------------------------------------
# Document co-occurrence counts C = B^T B (B: binary document-word matrix), one row per word.
# ----------------------------------------------------------------------------------------------


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
    indptr = np.zeros(n_words + 1, dtype=np.int64)
    for u in range(n_words):
        indptr[u + 1] = indptr[u] + lengths[u]
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
    out_indptr = np.zeros(n_topics + 1, dtype=np.int64)
    for t in range(n_topics):
        u = kept_words[t]
        out_indptr[t + 1] = out_indptr[t] + indptr[u + 1] - indptr[u]
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
def keyword_columns(indptr, indices, counts, topic_of_word, log_norm, generator, epsilon):
    """Column store of keyword topics, read off C's rows (C is symmetric): column v holds
    (topic of keyword u, L[u, v]) for each kept keyword u co-occurring with v, by value high to
    low (ties: lower topic id)."""
    scores = count_scores(counts.max() if len(counts) else 0, generator, epsilon)
    n_words = len(indptr) - 1
    col_indptr = np.zeros(n_words + 1, dtype=np.int64)
    for v in range(n_words):
        kept = 0
        for p in range(indptr[v], indptr[v + 1]):
            if topic_of_word[indices[p]] >= 0:
                kept += 1
        col_indptr[v + 1] = col_indptr[v] + kept
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
            start, stop = col_indptr[v], col_indptr[v + 1]
            if stop - start > 1:
                order = np.argsort(-col_values[start:stop], kind="mergesort")
                col_topics[start:stop] = col_topics[start:stop][order]
                col_values[start:stop] = col_values[start:stop][order]
    return col_indptr, col_topics, col_values


@nb.njit(**_PARALLEL)
def sort_columns_by_value(col_indptr, col_topics, col_values):
    """Sort each column's entries by value, high to low; ties keep topic order (stable)."""
    n_cols = len(col_indptr) - 1
    for v in nb.prange(n_cols):
        start, stop = col_indptr[v], col_indptr[v + 1]
        if stop - start < 2:
            continue
        order = np.argsort(-col_values[start:stop], kind="mergesort")
        topics = col_topics[start:stop][order]
        values = col_values[start:stop][order]
        col_topics[start:stop] = topics
        col_values[start:stop] = values


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
def base_gains(d, doc_indptr, doc_counts, best, row_constants, constants_desc, gains):
    """Fill ``gains[t]`` with base(row_constant[t]), base(c) = sum_j n_j max(0, c - b_j): every
    word of document d scored at the topic's row constant."""
    start, stop = doc_indptr[d], doc_indptr[d + 1]
    m = stop - start
    gains[:] = 0.0
    # Topics whose constant beats the lowest best score, c high to low:
    # base(c) = c * N(c) - S(c), N and S summing n_j and n_j b_j over b_j < c.
    order = np.argsort(best[start:stop])
    lowest = best[start + order[0]]
    total_n = 0.0
    total_nb = 0.0
    for j in range(m):
        total_n += doc_counts[start + j]
        total_nb += doc_counts[start + j] * best[start + j]
    pointer = m - 1  # words with b below c are order[0..pointer]
    n_below = total_n
    nb_below = total_nb
    for r in range(len(constants_desc)):
        t = constants_desc[r]
        c = row_constants[t]
        if c <= lowest:
            break
        while pointer >= 0 and best[start + order[pointer]] >= c:
            j = start + order[pointer]
            n_below -= doc_counts[j]
            nb_below -= doc_counts[j] * best[j]
            pointer -= 1
        gains[t] = c * n_below - nb_below


@nb.njit(**_SERIAL)
def column_corrections(
    d, doc_indptr, doc_words, doc_counts, best, row_constants,
    col_indptr, col_topics, col_values, skip_word, gains,
):
    """Add, for each stored entry that beats b_j, n_j ((L - b_j) - max(0, c_t - b_j)) to
    ``gains``; words with ``skip_word[v]`` (if that array is not empty) are left out. Each column
    scan stops at the first entry <= b_j. Returns the entries read."""
    entries = 0
    skipping = len(skip_word) > 0
    for j in range(doc_indptr[d], doc_indptr[d + 1]):
        v = doc_words[j]
        if skipping and skip_word[v]:
            continue
        b = best[j]
        n = doc_counts[j]
        for p in range(col_indptr[v], col_indptr[v + 1]):
            value = col_values[p]
            if value <= b:
                break
            t = col_topics[p]
            c = row_constants[t]
            if c > b:
                gains[t] += n * (value - c)
            else:
                gains[t] += n * (value - b)
            entries += 1
    return entries


@nb.njit(**_SERIAL)
def document_gains(
    d, doc_indptr, doc_words, doc_counts, best,
    row_constants, constants_desc, col_indptr, col_topics, col_values, gains,
):
    """Fill ``gains[t]`` with the gain of every topic t on document d; return entries read.

    gain(t) = base(row_constant[t]) + corrections: base covers every word at the row constant,
    and each stored entry that beats the word's best score corrects it (spec §1).
    """
    base_gains(d, doc_indptr, doc_counts, best, row_constants, constants_desc, gains)
    no_skip = np.zeros(0, dtype=np.bool_)
    return column_corrections(
        d, doc_indptr, doc_words, doc_counts, best, row_constants,
        col_indptr, col_topics, col_values, no_skip, gains,
    )


@nb.njit(**_SERIAL)
def best_unlinked(gains, d, doc_head, link_topic, link_next):
    """Topic with the largest gain among those not linked to d (ties: lowest topic id)."""
    p = doc_head[d]
    while p >= 0:
        gains[link_topic[p]] = -np.inf
        p = link_next[p]
    return argmax_lowest(gains)


@nb.njit(**_SERIAL)
def argmax_lowest(gains):
    """(index, value) of the largest entry; ties: lowest index; (-1, -inf) if all are -inf."""
    best_t = -1
    best_g = -np.inf
    for t in range(len(gains)):
        if gains[t] > best_g:
            best_g = gains[t]
            best_t = t
    return best_t, best_g


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


@nb.njit(**_PARALLEL)
def best_topic_per_document(
    documents, doc_indptr, doc_words, doc_counts, best, n_topics,
    row_constants, constants_desc, col_indptr, col_topics, col_values,
    doc_head, link_topics, link_next, n_chunks,
):
    """Best unlinked topic and its gain for each listed document, in parallel (one round)."""
    n = len(documents)
    topics = np.empty(n, dtype=np.int64)
    gains_out = np.empty(n, dtype=np.float64)
    entries = np.zeros(n, dtype=np.int64)
    n_chunks = min(n_chunks, max(n, 1))
    for chunk in nb.prange(n_chunks):
        gains = np.empty(n_topics, dtype=np.float64)
        for i in range(chunk, n, n_chunks):
            d = documents[i]
            entries[i] = document_gains(
                d, doc_indptr, doc_words, doc_counts, best,
                row_constants, constants_desc, col_indptr, col_topics, col_values, gains,
            )
            t, g = best_unlinked(gains, d, doc_head, link_topics, link_next)
            topics[i] = t
            gains_out[i] = g
    return topics, gains_out, entries


@nb.njit(**_PARALLEL)
def dense_first_round_scores(col_indptr, col_topics, col_values, row_constants, dense_words, null_score):
    """Matrix (topics x dense words) of what each stored entry adds to a first-round gain
    (every best score at the null score), so frequent words can go through a BLAS product."""
    n_topics = len(row_constants)
    scores = np.zeros((n_topics, len(dense_words)), dtype=np.float64)
    for h in nb.prange(len(dense_words)):
        v = dense_words[h]
        for p in range(col_indptr[v], col_indptr[v + 1]):
            value = col_values[p]
            if value <= null_score:
                break
            t = col_topics[p]
            c = row_constants[t]
            scores[t, h] = value - c if c > null_score else value - null_score
    return scores


@nb.njit(**_PARALLEL)
def first_round_best_topics(
    d0, dense_gains, is_dense_word, doc_indptr, doc_words, doc_counts, best, n_topics,
    row_constants, constants_desc, col_indptr, col_topics, col_values, n_chunks,
):
    """FastInitialize's first round for documents d0 .. d0 + len(dense_gains) - 1: base gains,
    plus the dense words' part (``dense_gains``, one row per document, from a BLAS product),
    plus column scans of the other words; then each document's best topic (ties: lowest id)."""
    n = dense_gains.shape[0]
    topics = np.empty(n, dtype=np.int64)
    gains_out = np.empty(n, dtype=np.float64)
    entries = np.zeros(n, dtype=np.int64)
    n_chunks = min(n_chunks, max(n, 1))
    for chunk in nb.prange(n_chunks):
        gains = np.empty(n_topics, dtype=np.float64)
        for i in range(chunk, n, n_chunks):
            d = d0 + i
            base_gains(d, doc_indptr, doc_counts, best, row_constants, constants_desc, gains)
            for t in range(n_topics):
                gains[t] += dense_gains[i, t]
            entries[i] = column_corrections(
                d, doc_indptr, doc_words, doc_counts, best, row_constants,
                col_indptr, col_topics, col_values, is_dense_word, gains,
            )
            t, g = argmax_lowest(gains)
            topics[i] = t
            gains_out[i] = g
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
def greedy_steps(
    n_steps, heap_gain, heap_doc, heap_topic, heap_size,
    doc_indptr, doc_words, doc_counts, best, n_topics,
    row_constants, constants_desc, col_indptr, col_topics, col_values,
    row_indptr, row_words, row_values,
    doc_head, link_topics, link_next, link_doc, link_gain, n_links,
):
    """FastGreedy (spec §3): pop the best (gain, document, topic), link it, re-evaluate only that
    document and push it back. Runs ``n_steps`` iterations and returns (links made, entries read).
    """
    gains = np.empty(n_topics, dtype=np.float64)
    entries = 0
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
        entries += document_gains(
            d, doc_indptr, doc_words, doc_counts, best,
            row_constants, constants_desc, col_indptr, col_topics, col_values, gains,
        )
        new_t, new_g = best_unlinked(gains, d, doc_head, link_topics, link_next)
        heap_gain[0] = new_g
        heap_topic[0] = new_t
        heap_sift_down(heap_gain, heap_doc, heap_topic, heap_size, 0)
    return made, entries


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


@nb.njit(**_SERIAL)
def _top_of(gains, top_topics, top_gains, row):
    """Write the largest entries of ``gains`` (ties: lowest topic id) into row ``row``."""
    m = top_topics.shape[1]
    top_topics[row, :] = -1
    top_gains[row, :] = -np.inf
    for t in range(len(gains)):
        g = gains[t]
        if g <= top_gains[row, m - 1]:
            continue
        i = m - 1
        while i > 0 and top_gains[row, i - 1] < g:
            top_gains[row, i] = top_gains[row, i - 1]
            top_topics[row, i] = top_topics[row, i - 1]
            i -= 1
        top_gains[row, i] = g
        top_topics[row, i] = t


@nb.njit(**_PARALLEL)
def top_gains_per_document(
    doc_indptr, doc_words, doc_counts, best, n_topics,
    row_constants, constants_desc, col_indptr, col_topics, col_values,
    doc_link_indptr, doc_link_topics, top_size, n_chunks,
):
    """Each document's ``top_size`` best unlinked topics and their gains at its current links."""
    n_docs = len(doc_indptr) - 1
    top_topics = np.empty((n_docs, top_size), dtype=np.int64)
    top_gains = np.empty((n_docs, top_size), dtype=np.float64)
    n_chunks = min(n_chunks, max(n_docs, 1))
    for chunk in nb.prange(n_chunks):
        gains = np.empty(n_topics, dtype=np.float64)
        for d in range(chunk, n_docs, n_chunks):
            document_gains(
                d, doc_indptr, doc_words, doc_counts, best,
                row_constants, constants_desc, col_indptr, col_topics, col_values, gains,
            )
            for p in range(doc_link_indptr[d], doc_link_indptr[d + 1]):
                gains[doc_link_topics[p]] = -np.inf
            _top_of(gains, top_topics, top_gains, d)
    return top_topics, top_gains


@nb.njit(**_PARALLEL)
def threshold_round(
    threshold, max_accept, doc_indptr, doc_words, doc_counts, best, n_topics,
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
    -1 / -inf) and the full evaluations made per document.
    """
    n_docs = len(doc_indptr) - 1
    top_size = top_topics.shape[1]
    accepted_topics = np.full((n_docs, max_accept), -1, dtype=np.int64)
    accepted_gains = np.full((n_docs, max_accept), -np.inf, dtype=np.float64)
    evaluations = np.zeros(n_docs, dtype=np.int64)
    n_chunks = min(n_chunks, max(n_docs, 1))
    for chunk in nb.prange(n_chunks):
        gains = np.empty(n_topics, dtype=np.float64)
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
                    condition = gains[sequence[j]]
                if not condition >= threshold:
                    break
                t = sequence[j]
                link_topic(d, t, doc_indptr, doc_words, best, row_constants, row_indptr, row_words, row_values)
                accepted_topics[d, j] = t
                accepted_gains[d, j] = condition
                document_gains(
                    d, doc_indptr, doc_words, doc_counts, best,
                    row_constants, constants_desc, col_indptr, col_topics, col_values, gains,
                )
                evaluations[d] += 1
                for p in range(doc_link_indptr[d], doc_link_indptr[d + 1]):
                    gains[doc_link_topics[p]] = -np.inf
                for i in range(j + 1):
                    gains[accepted_topics[d, i]] = -np.inf
            _top_of(gains, top_topics, top_gains, d)
    return accepted_topics, accepted_gains, evaluations


@nb.njit(**_PARALLEL)
def independent_links(
    doc_indptr, doc_words, doc_counts, n_topics,
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
    for chunk in nb.prange(n_chunks):
        gains = np.empty(n_topics, dtype=np.float64)
        for d in range(chunk, n_docs, n_chunks):
            for j in range(topics_per_document):
                document_gains(
                    d, doc_indptr, doc_words, doc_counts, best,
                    row_constants, constants_desc, col_indptr, col_topics, col_values, gains,
                )
                for i in range(j):
                    gains[out_topics[d, i]] = -np.inf
                t, g = argmax_lowest(gains)
                if t < 0 or (j > 0 and g < min_gain):
                    break
                link_topic(d, t, doc_indptr, doc_words, best, row_constants, row_indptr, row_words, row_values)
                out_topics[d, j] = t
                out_gains[d, j] = g
    return out_topics, out_gains
