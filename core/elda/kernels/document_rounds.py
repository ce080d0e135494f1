"""Kernels that evaluate documents each on its own, in parallel: the low-adaptivity rounds
(:mod:`topicbench.core.elda.parallel`) and out-of-sample links (:mod:`topicbench.core.elda.inference`).

Links already made are given per document as a :class:`.records.DocLinks`; in the rounds each
document's state (a :class:`.records.ShardRecord`) is its best scores and a cache of its top gains
at its current links, sorted high to low. Private.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from topicbench.core.kernel_cache import load_cached_kernels_directly
from topicbench.core.elda.kernels.gains import (
    document_base,
    document_top_topics,
    evaluation_scratch,
    exclude_listed,
    link_topic,
    topic_gain,
)
from topicbench.core.elda.kernels.segments import PARALLEL, longest_document


@nb.njit(**PARALLEL)
def top_gains_per_document(docs, best, rows, cols, doc_links, top_size, n_chunks):
    """Each document's ``top_size`` best unlinked topics and their gains at its current links,
    and the entries read per document."""
    doc_indptr, row_constants = docs.indptr, rows.constants
    doc_link_indptr, doc_link_topics = doc_links.indptr, doc_links.topics
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
            exclude_listed(linked, scratch.excluded, True)
            entries[d] = document_top_topics(d, docs, best, rows, cols, scratch, top_topics[d], top_gains[d])
            exclude_listed(linked, scratch.excluded, False)
    return top_topics, top_gains, entries


@nb.njit(**PARALLEL)
def threshold_round(threshold, max_accept, docs, rows, cols, shard, n_chunks):
    """One adaptive round at a threshold (adaptive sequencing, the E-LDA paper's algorithms).

    Every document whose cached best gain reaches the threshold takes as its sequence its cached
    topics with gain >= threshold (best first, at most ``max_accept``). The queries "gain of the
    j-th topic given the document's links plus topics 1..j-1" are fixed by the sequence before the
    round, so they are one round of parallel evaluations; the document accepts the longest prefix
    whose every conditional gain reaches the threshold. Documents never interact, so no topic of
    one document changes another's gain. ``best`` and the top-gain cache are updated in place for
    the accepted prefixes; returns the accepted topics, their conditional gains (rows padded with
    -1 / -inf), and per document the full evaluations (the one that refills its cache) and the
    single-topic gains evaluated. ``shard``: a :class:`.records.ShardRecord`.
    """
    doc_indptr, row_constants = docs.indptr, rows.constants
    best, top_topics, top_gains = shard.best, shard.top_topics, shard.top_gains
    doc_link_indptr, doc_link_topics = shard.links.indptr, shard.links.topics
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
                    m = document_base(d, docs, best, scratch)
                    condition = topic_gain(d, sequence[j], m, docs, best, rows, scratch)
                    topic_evaluations[d] += 1
                if not condition >= threshold:
                    break
                t = sequence[j]
                link_topic(d, t, docs, best, rows)
                accepted_topics[d, j] = t
                accepted_gains[d, j] = condition
            excluded = scratch.excluded
            linked = doc_link_topics[doc_link_indptr[d] : doc_link_indptr[d + 1]]
            exclude_listed(linked, excluded, True)
            exclude_listed(accepted_topics[d], excluded, True)
            document_top_topics(d, docs, best, rows, cols, scratch, top_topics[d], top_gains[d])
            exclude_listed(linked, excluded, False)
            exclude_listed(accepted_topics[d], excluded, False)
            evaluations[d] += 1
    return accepted_topics, accepted_gains, evaluations, topic_evaluations


@nb.njit(**PARALLEL)
def independent_links(docs, rows, cols, topics_per_document, min_gain, null_score, n_chunks):
    """Greedy for each document on its own (the E-LDA paper's algorithms, out-of-sample inference): link its best topic,
    then further topics while the gain reaches ``min_gain``, up to ``topics_per_document``. A
    document reads only its own words and the frozen candidates, so its result cannot depend on
    any other document."""
    doc_indptr, row_constants = docs.indptr, rows.constants
    n_docs = len(doc_indptr) - 1
    out_topics = np.full((n_docs, topics_per_document), -1, dtype=np.int64)
    out_gains = np.full((n_docs, topics_per_document), -np.inf, dtype=np.float64)
    best = np.full(len(docs.words), null_score)
    n_chunks = min(n_chunks, max(n_docs, 1))
    longest = longest_document(doc_indptr, 0, n_docs)
    for chunk in nb.prange(n_chunks):
        scratch = evaluation_scratch(row_constants, longest)
        top_t = np.empty(1, dtype=np.int64)
        top_g = np.empty(1, dtype=np.float64)
        for d in range(chunk, n_docs, n_chunks):
            for j in range(topics_per_document):
                exclude_listed(out_topics[d, :j], scratch.excluded, True)
                document_top_topics(d, docs, best, rows, cols, scratch, top_t, top_g)
                exclude_listed(out_topics[d, :j], scratch.excluded, False)
                t, g = top_t[0], top_g[0]
                if t < 0 or (j > 0 and g < min_gain):
                    break
                link_topic(d, t, docs, best, rows)
                out_topics[d, j] = t
                out_gains[d, j] = g
    return out_topics, out_gains


# a cached kernel loads without numba's compiler start-up (0.3-0.5 s a process): see _kernel_cache
load_cached_kernels_directly(globals())
