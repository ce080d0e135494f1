"""Exact greedy's steps (the E-LDA paper's algorithms): FastInitialize's second round, FastGreedy's heap, and the
parallel chain rounds that make exactly the heap's links.

A document's new best topic is found lazily: gains only fall as links are added, so the gains its
last full evaluation cached bound its topics' gains now (:func:`_next_best`). Kernels read the
corpus as a :class:`.records.Documents`, the candidates as :class:`.records.Rows` and
:class:`.records.Columns`, and change a :class:`.records.GreedyState` (best scores, links, gain
caches). Private.
"""

from __future__ import annotations

from collections import namedtuple

import numba as nb
import numpy as np

from topicbench.core.kernel_cache import load_cached_kernels_directly
from topicbench.core.elda.kernels.gains import (
    document_base,
    document_top_topics,
    evaluation_scratch,
    exclude_linked,
    exclude_listed,
    link_topic,
    ranks_before,
    topic_gain,
)
from topicbench.core.elda.kernels.records import GreedyState
from topicbench.core.elda.kernels.segments import PARALLEL, SERIAL, longest_document

#: A thread's work arrays for evaluating documents: an evaluation's ``scratch``
#: (:func:`.gains.evaluation_scratch`), the best topics found (``top_t``, ``top_g``: the cache's
#: size + 1) and the work counted (entries read, full evaluations, single-topic evaluations).
Workspace = namedtuple("Workspace", "scratch top_t top_g work")

# A numba parallel loop reads records of arrays that are the kernel's own arguments, but neither a
# record that holds records ("scalar type ... given for non scalar argument") nor one read off
# another record: so the parallel kernels take a GreedyState's three parts as arguments and build
# the record inside the loop (once a thread) for the serial kernels they call.


@nb.njit(**SERIAL)
def _heap_before(gain_a, doc_a, gain_b, doc_b):
    """FastGreedy's max-heap order: larger gain first, ties: lower document id."""
    return gain_a > gain_b or (gain_a == gain_b and doc_a < doc_b)


@nb.njit(**SERIAL)
def heap_sift_down(heap, size, i):
    """Move entry i of a :class:`.records.Heap` of ``size`` entries down to its place."""
    heap_gain, heap_doc, heap_topic = heap.gain, heap.doc, heap.topic
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


@nb.njit(**SERIAL)
def heapify(heap, size):
    """Order the first ``size`` entries of a :class:`.records.Heap` as a max-heap."""
    for i in range(size // 2 - 1, -1, -1):
        heap_sift_down(heap, size, i)


@nb.njit(**SERIAL)
def _refill_cache(d, docs, rows, cols, state, pending, space):
    """A full evaluation of document d at its links (those in the linked list, and ``pending``:
    topics linked to d that the list does not hold yet): its len(top_t) - 1 best topics go to its
    cache; the next one's gain bounds every topic left out. Returns entries read."""
    scratch, top_t, top_g = space.scratch, space.top_t, space.top_g
    cache = state.cache
    cache_topics, cache_bounds, cache_size, rest_bound = cache.topics, cache.bounds, cache.size, cache.rest_bound
    excluded = scratch.excluded
    exclude_linked(d, excluded, True, state.links)
    exclude_listed(pending, excluded, True)
    entries = document_top_topics(d, docs, state.best, rows, cols, scratch, top_t, top_g)
    exclude_linked(d, excluded, False, state.links)
    exclude_listed(pending, excluded, False)
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


@nb.njit(**PARALLEL)
def second_topics(docs, rows, cols, best, links, cache, n_chunks):
    """FastInitialize's second round: each document's best unlinked topic and gain, in parallel,
    with its cache of next-best topics filled (see :func:`greedy_steps`). ``best``, ``links`` and
    ``cache``: the parts of a :class:`.records.GreedyState`."""
    doc_indptr, row_constants, cache_topics = docs.indptr, rows.constants, cache.topics
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
        space = Workspace(scratch, top_t, top_g, np.zeros(3, dtype=np.int64))
        state = GreedyState(best, links, cache)
        for d in range(chunk, n, n_chunks):
            entries[d] = _refill_cache(d, docs, rows, cols, state, top_t[:0], space)
            topics[d] = top_t[0]
            gains_out[d] = top_g[0]
    return topics, gains_out, entries


@nb.njit(**SERIAL)
def _sort_cache(d, cache_topics, cache_bounds, size):
    """Insertion sort of document d's cache by bound, high to low (ties: lower topic id)."""
    for i in range(1, size):
        t = cache_topics[d, i]
        g = cache_bounds[d, i]
        k = i
        while k > 0 and ranks_before(g, t, cache_bounds[d, k - 1], cache_topics[d, k - 1]):
            cache_topics[d, k] = cache_topics[d, k - 1]
            cache_bounds[d, k] = cache_bounds[d, k - 1]
            k -= 1
        cache_topics[d, k] = t
        cache_bounds[d, k] = g


@nb.njit(**SERIAL)
def _next_best(d, t, docs, rows, cols, state, pending, space):
    """Document d's best topic and gain just after topic t was linked to it (its best scores
    already raised), found lazily: gains only fall as links are added (submodularity), so the
    gains its cache holds from its last full evaluation bound its topics' gains now, and
    ``rest_bound`` bounds every other topic. Cached topics are re-evaluated one at a time, best
    bound first, until no bound can beat the best gain found; if that gain does not beat
    ``rest_bound``, the document is evaluated in full again and its cache refilled. ``pending``:
    as for :func:`_refill_cache`. Adds (entries read, full evaluations, single-topic
    evaluations) to ``space.work``."""
    scratch, top_t, top_g, work = space.scratch, space.top_t, space.top_g, space.work
    best = state.best
    cache = state.cache
    cache_topics, cache_bounds, cache_size, rest_bound = cache.topics, cache.bounds, cache.size, cache.rest_bound
    kept = 0
    for i in range(cache_size[d]):
        if cache_topics[d, i] != t:
            cache_topics[d, kept] = cache_topics[d, i]
            cache_bounds[d, kept] = cache_bounds[d, i]
            kept += 1
    m = document_base(d, docs, best, scratch)
    new_t = -1
    new_g = -np.inf
    for i in range(kept):
        topic = cache_topics[d, i]
        if new_t >= 0 and not ranks_before(cache_bounds[d, i], topic, new_g, new_t):
            break  # bounds only fall further down the cache
        gain = topic_gain(d, topic, m, docs, best, rows, scratch)
        work[2] += 1
        cache_bounds[d, i] = gain
        if new_t < 0 or ranks_before(gain, topic, new_g, new_t):
            new_t = topic
            new_g = gain
    _sort_cache(d, cache_topics, cache_bounds, kept)
    cache_size[d] = kept
    if new_t < 0 or not new_g > rest_bound[d]:
        work[0] += _refill_cache(d, docs, rows, cols, state, pending, space)
        work[1] += 1
        new_t = top_t[0]
        new_g = top_g[0]
    return new_t, new_g


@nb.njit(**SERIAL)
def greedy_steps(n_steps, heap, heap_size, docs, rows, cols, state, n_links):
    """FastGreedy (the E-LDA paper's algorithms): pop the best (gain, document, topic) off ``heap`` (a
    :class:`.records.Heap`), link it (after the ``n_links`` links made), find that document's new
    best topic (:func:`_next_best`) and push it back. Runs ``n_steps`` iterations; returns (links
    made, entries read, full evaluations, single-topic evaluations)."""
    heap_gain, heap_doc, heap_topic = heap.gain, heap.doc, heap.topic
    best = state.best
    links = state.links
    doc_head, link_doc, link_topics, link_next, link_gain = links.head, links.doc, links.topic, links.next, links.gain
    size = state.cache.topics.shape[1]
    longest = longest_document(docs.indptr, 0, len(docs.indptr) - 1)
    scratch = evaluation_scratch(rows.constants, longest)
    top_t = np.empty(size + 1, dtype=np.int64)
    top_g = np.empty(size + 1, dtype=np.float64)
    work = np.zeros(3, dtype=np.int64)
    space = Workspace(scratch, top_t, top_g, work)
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
        link_topic(d, t, docs, best, rows)
        new_t, new_g = _next_best(d, t, docs, rows, cols, state, top_t[:0], space)
        heap_gain[0] = new_g
        heap_topic[0] = new_t
        heap_sift_down(heap, heap_size, 0)
    return made, work[0], work[1], work[2]


@nb.njit(**PARALLEL)
def extend_chains(chains, docs, rows, cols, best, links, cache, n_chunks):
    """Exact FastGreedy's links of the ``chains.active`` documents down to ``chains.threshold``, in parallel.

    Documents never interact, so each document's own sequence of greedy choices (its chain: link
    its best topic, find the next best, ...) does not depend on the others; FastGreedy's heap
    only interleaves the chains. Each active document links its head (``chains.topic/gain``) and
    moves on while the chain's running minimum gain (``chains.floor``, its key in that
    interleaving) stays at or above ``chains.threshold``, for at most ``chains.cap`` links. ``best``,
    ``links`` and ``cache``: the parts of a :class:`.records.GreedyState`. Returns the links
    made, per active document: topics and raw gains (``cap`` columns, -1 / NaN padded), keys, and
    (entries read, full evaluations, single-topic evaluations). The links are not in the
    linked list yet (:func:`append_links` puts them there); heads and floors are updated.
    """
    threshold, cap = chains.threshold, chains.cap
    active, head_topic, head_gain, chain_floor = chains.active, chains.topic, chains.gain, chains.floor
    doc_indptr, row_constants = docs.indptr, rows.constants
    n = len(active)
    size = cache.topics.shape[1]
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
        state = GreedyState(best, links, cache)
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
                link_topic(d, t, docs, best, rows)
                space = Workspace(scratch, top_t, top_g, work[i])
                t, g = _next_best(d, t, docs, rows, cols, state, out_topics[i, :made], space)
                key = min(g, chain_floor[d])
            head_topic[d] = t
            head_gain[d] = g
    return out_topics, out_gains, out_keys, work


@nb.njit(**SERIAL)
def append_links(documents, topics, gains, links, n_links):
    """Append links (in this order) after the first ``n_links`` of ``links`` (a
    :class:`.records.Links`), and to each document's list."""
    doc_head, link_doc, link_topics, link_next, link_gain = links.head, links.doc, links.topic, links.next, links.gain
    for i in range(len(documents)):
        k = n_links + i
        d = documents[i]
        link_doc[k] = d
        link_topics[k] = topics[i]
        link_gain[k] = gains[i]
        link_next[k] = doc_head[d]
        doc_head[d] = k


# a cached kernel loads without numba's compiler start-up (0.3-0.5 s a process): see _kernel_cache
load_cached_kernels_directly(globals())
