"""numba kernels of the co-occurrence counts (private; arrays in, arrays out).

Counting follows gensim 4.4's ``WordOccurrenceAccumulator`` exactly, so that coherence values agree
with ``CoherenceModel`` (see :mod:`topicbench.core.metrics.counts` for the rules). Instead of
enumerating every pair of words in every window, the kernels work with *runs*: the maximal spans of
consecutive windows in which a word counts as present. A pair's joint count is the total overlap of
the two words' runs, and each overlap is added once, when the later of the two runs starts.
"""

from __future__ import annotations

import numba
import numpy as np

from topicbench.core.kernel_cache import load_cached_kernels_directly


@numba.njit(cache=True)
def presence_runs(local_ids, doc_offsets, window, n_words):
    """Runs of presence of each counted word over the sliding windows of every document.

    Parameters
    ----------
    local_ids : int64 array (n_tokens,)
        Each token's counted-word id, or -1 for a token outside the counted word set.
    doc_offsets : int64 array (n_documents + 1,)
    window : int
        Window size; a document of at most ``window`` tokens is a single window (gensim's
        ``strided_windows`` / ``_iter_windows(ignore_below_size=False)``).
    n_words : int
        Number of counted words.

    Returns
    -------
    run_word, run_start, run_end : arrays (n_runs,)
        Word, first window and one-past-last window (global window numbers) of each run, ordered
        by start.
    n_windows : int
        Number of windows (gensim's ``num_docs`` of virtual documents).
    """
    n_tokens = local_ids.shape[0]
    run_word = np.empty(n_tokens, dtype=np.int64)
    run_start = np.empty(n_tokens, dtype=np.int64)
    run_end = np.empty(n_tokens, dtype=np.int64)
    present = np.zeros(n_words, dtype=np.bool_)
    current_run = np.zeros(n_words, dtype=np.int64)
    n_runs = 0
    first_window = 0
    for d in range(doc_offsets.shape[0] - 1):
        begin = doc_offsets[d]
        stop = doc_offsets[d + 1]
        length = stop - begin
        if length <= window:
            # one window holding the whole document (an empty document still counts as a window)
            for p in range(begin, stop):
                w = local_ids[p]
                if w >= 0 and not present[w]:
                    present[w] = True
                    run_word[n_runs] = w
                    run_start[n_runs] = first_window
                    run_end[n_runs] = first_window + 1
                    n_runs += 1
            for p in range(begin, stop):
                w = local_ids[p]
                if w >= 0:
                    present[w] = False
            first_window += 1
            continue
        n_doc_windows = length - window + 1
        # first window of the document: every word in it is present
        for p in range(begin, begin + window):
            w = local_ids[p]
            if w >= 0 and not present[w]:
                present[w] = True
                current_run[w] = n_runs
                run_word[n_runs] = w
                run_start[n_runs] = first_window
                n_runs += 1
        # each step: the token leaving at the left edge is marked absent (even when the word occurs
        # again inside the window: gensim's rule), then the token entering on the right is marked
        # present; a word leaving and entering in the same step stays present.
        for t in range(1, n_doc_windows):
            leaving = local_ids[begin + t - 1]
            entering = local_ids[begin + t + window - 1]
            if leaving >= 0 and present[leaving] and entering != leaving:
                present[leaving] = False
                run_end[current_run[leaving]] = first_window + t
            if entering >= 0 and not present[entering]:
                present[entering] = True
                current_run[entering] = n_runs
                run_word[n_runs] = entering
                run_start[n_runs] = first_window + t
                n_runs += 1
        for p in range(begin, stop):
            w = local_ids[p]
            if w >= 0 and present[w]:
                present[w] = False
                run_end[current_run[w]] = first_window + n_doc_windows
        first_window += n_doc_windows
    return run_word[:n_runs], run_start[:n_runs], run_end[:n_runs], first_window


@numba.njit(cache=True)
def all_pair_counts(run_word, run_start, run_end, n_words):
    """Joint window counts of every pair of counted words (dense, one triangle per pair).

    ``joint[u, v] + joint[v, u]`` is the number of windows where u and v are both present: each
    run, when it starts, adds its overlap with every run still active.
    """
    joint = np.zeros((n_words, n_words), dtype=np.int64)
    end_of = np.zeros(n_words, dtype=np.int64)
    active = np.empty(n_words, dtype=np.int64)
    n_active = 0
    for r in range(run_word.shape[0]):
        u = run_word[r]
        start = run_start[r]
        end = run_end[r]
        i = 0
        while i < n_active:
            v = active[i]
            v_end = end_of[v]
            if v_end <= start:  # run over: drop it (order in the active list does not matter)
                n_active -= 1
                active[i] = active[n_active]
            else:
                joint[u, v] += min(end, v_end) - start
                i += 1
        end_of[u] = end
        active[n_active] = u
        n_active += 1
    return joint


@numba.njit(cache=True)
def listed_pair_counts(run_word, run_start, run_end, n_words, partner_indptr, partners, partner_slots, n_slots):
    """Joint window counts of listed pairs only.

    ``partners[partner_indptr[u]:partner_indptr[u + 1]]`` are the words paired with u and
    ``partner_slots`` the pair's slot in the output (each pair listed under both of its words).
    """
    counts = np.zeros(n_slots, dtype=np.int64)
    end_of = np.zeros(n_words, dtype=np.int64)
    for r in range(run_word.shape[0]):
        u = run_word[r]
        start = run_start[r]
        end = run_end[r]
        for k in range(partner_indptr[u], partner_indptr[u + 1]):
            v_end = end_of[partners[k]]
            if v_end > start:  # the partner's latest run (started at or before this one) is active
                counts[partner_slots[k]] += min(end, v_end) - start
        end_of[u] = end
    return counts


# a cached kernel loads without numba's compiler start-up (0.3-0.5 s a process): see _kernel_cache
load_cached_kernels_directly(globals())
