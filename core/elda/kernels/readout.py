"""Reading results back: each token's topic and score from a solution's links, and each row's
largest entries (a topic's top words). Private."""

from __future__ import annotations

import numba as nb
import numpy as np

from topicbench.core.kernel_cache import load_cached_kernels_directly
from topicbench.core.elda.kernels.gains import topic_value
from topicbench.core.elda.kernels.segments import PARALLEL


@nb.njit(**PARALLEL)
def assign_words(docs, doc_links, rows, null_score):
    """For each (document, distinct word) of ``docs``: the best topic linked to the document in
    ``doc_links`` (a :class:`.records.DocLinks`; ties: lowest topic id) and the word's score
    max(null_score, L[topic, word])."""
    doc_indptr, doc_words = docs.indptr, docs.words
    doc_link_indptr, doc_link_topics = doc_links.indptr, doc_links.topics
    n_docs = len(doc_indptr) - 1
    word_topic = np.full(len(doc_words), -1, dtype=np.int64)
    word_score = np.full(len(doc_words), null_score, dtype=np.float64)
    for d in nb.prange(n_docs):
        for j in range(doc_indptr[d], doc_indptr[d + 1]):
            best_value = -np.inf
            best_t = -1
            for p in range(doc_link_indptr[d], doc_link_indptr[d + 1]):
                t = doc_link_topics[p]
                value = topic_value(t, doc_words[j], rows)
                if value > best_value or (value == best_value and t < best_t):
                    best_value = value
                    best_t = t
            word_topic[j] = best_t
            if best_value > null_score:
                word_score[j] = best_value
    return word_topic, word_score


@nb.njit(**PARALLEL)
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
