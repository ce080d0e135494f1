"""Gains of candidate topics on documents (the E-LDA paper's objective), and the evaluation of a document's best topics.

gain(t, d) = sum_i max(0, L[t, w_i] - best_d[i]). Tokens of one word in one document share their
best score, so state is kept per (document, distinct word) with the word's count as weight.

Sparse document evaluation. A topic that no stored entry of the document's words lifts above
the words' best scores gains exactly base(row constant), and base grows with the constant; so
a document's best topics are among the topics its column scans reach plus the first few others
by row constant. An evaluation reads the entries that beat the best scores, never all topics.
Gains are summed in the same order as base_gains + column_corrections, so they are the same
floats, and so are the choices and their ties (largest gain, then lowest topic id).

Kernels read the corpus as a :class:`.records.Documents` (``docs``), the candidates as
:class:`.records.Rows` (``rows``) and :class:`.records.Columns` (``cols``). Private.
"""

from __future__ import annotations

from collections import namedtuple

import numba as nb
import numpy as np

from topicbench.core.kernel_cache import load_cached_kernels_directly
from topicbench.core.elda.kernels.segments import SERIAL


@nb.njit(**SERIAL)
def topic_value(t, v, rows):
    """L[t, v] by binary search in row t."""
    row_words, row_values = rows.words, rows.values
    lo = rows.indptr[t]
    hi = rows.indptr[t + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        w = row_words[mid]
        if w < v:
            lo = mid + 1
        elif w > v:
            hi = mid
        else:
            return row_values[mid]
    return rows.constants[t]


@nb.njit(**SERIAL)
def column_corrections(d, docs, best, rows, cols, gains):
    """Add, for each stored entry that beats b_j, n_j (L - max(c_t, b_j)) to ``gains``: what the
    entry adds to the topic's base. Each column scan stops at the first entry <= b_j. Returns the
    entries read."""
    doc_indptr, doc_words, doc_counts = docs.indptr, docs.words, docs.counts
    row_constants = rows.constants
    col_indptr, col_topics, col_values = cols.indptr, cols.topics, cols.values
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


@nb.njit(**SERIAL)
def link_topic(d, t, docs, best, rows):
    """Raise document d's best scores to topic t's where t does better."""
    doc_words = docs.words
    for j in range(docs.indptr[d], docs.indptr[d + 1]):
        value = topic_value(t, doc_words[j], rows)
        if value > best[j]:
            best[j] = value


#: Per-thread work arrays of an evaluation. ``reached``: per topic (row constant, gain so far),
#: NaN gain while not reached (a sparse scan jumps between topics, so both share a cache line);
#: ``reached_list`` the topics reached, to read and reset; ``excluded`` topics left out of the
#: result; ``sorted_b``, ``below_n``, ``below_nb`` a document's base (:func:`document_base`).
EvaluationScratch = namedtuple(
    "EvaluationScratch", "gains reached reached_list excluded sorted_b below_n below_nb"
)


@nb.njit(**SERIAL)
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


@nb.njit(**SERIAL)
def document_base(d, docs, best, scratch):
    """Make base(c) = sum_j n_j max(0, c - b_j) of document d readable for any c (:func:`base_gain`):
    its best scores sorted, and for each k the count and weighted sum of the words below the k-th.
    The sums remove words from the totals highest first. Returns m."""
    doc_counts = docs.counts
    sorted_b, below_n, below_nb = scratch.sorted_b, scratch.below_n, scratch.below_nb
    start, stop = docs.indptr[d], docs.indptr[d + 1]
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


@nb.njit(**SERIAL)
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


@nb.njit(**SERIAL)
def base_gains(d, docs, best, rows, scratch, gains):
    """Fill ``gains[t]`` with base(row_constant[t]) for every topic: :func:`base_gain`'s values,
    in one walk down the constants (high to low) instead of a search per topic. Returns m."""
    row_constants, constants_desc = rows.constants, rows.by_constant
    m = document_base(d, docs, best, scratch)
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


@nb.njit(**SERIAL)
def topic_gain(d, t, m, docs, best, rows, scratch):
    """The gain of one topic on document d (prepared by :func:`document_base`), by row look-ups."""
    doc_words, doc_counts = docs.words, docs.counts
    c = rows.constants[t]
    g = base_gain(c, m, scratch)
    for j in range(docs.indptr[d], docs.indptr[d + 1]):
        value = topic_value(t, doc_words[j], rows)
        b = best[j]
        if value > b and value > c:  # a stored entry that beats the word's best score
            g += doc_counts[j] * (value - max(c, b))
    return g


@nb.njit(**SERIAL)
def ranks_before(g, t, top_g, top_t):
    """Does (gain g, topic t) rank before the entry (top_g, top_t)? An empty slot (-1) ranks last."""
    return top_t < 0 or g > top_g or (g == top_g and t < top_t)


@nb.njit(**SERIAL)
def offer(t, g, top_t, top_g):
    """Put (t, g) into the list sorted by gain, high to low (ties: lower topic id), if it ranks."""
    i = len(top_t) - 1
    if not ranks_before(g, t, top_g[i], top_t[i]):
        return
    while i > 0 and ranks_before(g, t, top_g[i - 1], top_t[i - 1]):
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


@nb.njit(**SERIAL)
def document_top_topics(d, docs, best, rows, cols, scratch, top_t, top_g):
    """The len(top_t) best topics of document d and their gains (high to low, ties: lowest id),
    leaving out topics flagged in ``scratch``'s excluded array; -1 / -inf pad. Returns entries read."""
    doc_words, col_indptr = docs.words, cols.indptr
    reach = 0
    for j in range(docs.indptr[d], docs.indptr[d + 1]):
        reach += col_indptr[doc_words[j] + 1] - col_indptr[doc_words[j]]
    if reach * SPARSE_ADVANTAGE < len(rows.constants):
        return sparse_top_topics(d, docs, best, rows, cols, scratch, top_t, top_g)
    return dense_top_topics(d, docs, best, rows, cols, scratch, top_t, top_g)


@nb.njit(**SERIAL)
def dense_top_topics(d, docs, best, rows, cols, scratch, top_t, top_g):
    """:func:`document_top_topics` by filling in every topic's gain."""
    top_t[:] = -1
    top_g[:] = -np.inf
    gains, excluded = scratch.gains, scratch.excluded
    base_gains(d, docs, best, rows, scratch, gains)
    entries = column_corrections(d, docs, best, rows, cols, gains)
    last = len(top_t) - 1
    for t in range(len(gains)):
        if not excluded[t] and (top_t[last] < 0 or gains[t] > top_g[last]):
            offer(t, gains[t], top_t, top_g)
    return entries


@nb.njit(**SERIAL)
def sparse_top_topics(d, docs, best, rows, cols, scratch, top_t, top_g):
    """:func:`document_top_topics` without touching every topic. Three kinds of topic: those the
    column scans reach (base + corrections), those they miss with a row constant above the
    document's lowest best score (base > 0, highest constant first), and the rest, which gain
    exactly 0 (lowest ids first)."""
    doc_indptr, doc_words, doc_counts = docs.indptr, docs.words, docs.counts
    row_constants, constants_desc = rows.constants, rows.by_constant
    col_indptr, col_topics, col_values = cols.indptr, cols.topics, cols.values
    top_t[:] = -1
    top_g[:] = -np.inf
    reached, reached_list, excluded = scratch.reached, scratch.reached_list, scratch.excluded
    m = document_base(d, docs, best, scratch)
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


@nb.njit(**SERIAL)
def exclude_linked(d, excluded, flag, links):
    """Flag (or unflag) the topics linked to d, read from the per-document list of ``links``
    (a :class:`.records.Links`)."""
    p = links.head[d]
    while p >= 0:
        excluded[links.topic[p]] = flag
        p = links.next[p]


@nb.njit(**SERIAL)
def exclude_listed(topics, excluded, flag):
    """Flag (or unflag) the listed topics; -1 entries (padding) are skipped."""
    for t in topics:
        if t >= 0:
            excluded[t] = flag


# a cached kernel loads without numba's compiler start-up (0.3-0.5 s a process): see _kernel_cache
load_cached_kernels_directly(globals())
