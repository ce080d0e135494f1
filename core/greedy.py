"""Exact greedy E-LDA: FastInitialize + FastGreedy with a per-document heap (spec §3).

``fast_greedy(corpus, candidates, kappa)`` validates, runs the numba kernels of
:mod:`._kernels` step by step (first round, second-topic heap, greedy steps) and packs a
:class:`.solution.Solution`. ``first_round`` is shared with the parallel algorithm.

FastGreedy re-evaluates one document per step. Its new best topic is found lazily: gains only
fall as links are added, so the gains a document's last full evaluation cached bound its topics'
gains now; the cached topics are re-scored one at a time (best bound first) and a full
evaluation runs only when none of them provably beats every topic left out of the cache.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numba
import numpy as np

from . import _kernels
from .config import NULL_TOPIC_LOG_SCORE
from .corpus import Corpus
from .generators import Candidates
from .solution import DocumentArrays, Solution, solution_from_links
from .validation import InputError, check_budget, check_candidates_match_corpus, check_kappa

logger = logging.getLogger(__name__)

#: Greedy iterations between two progress reports.
PROGRESS_EVERY = 2000

#: FastInitialize's first round reads every stored entry of every document's words. The most
#: costly words (documents x column entries) can go through a float32 BLAS product instead,
#: which costs, in column entries read: PRODUCT_OUTPUT_COST per product entry (documents x
#: topics, written and read back) plus PRODUCT_MULTIPLY_ADD_COST per multiply-add. Words are
#: taken most costly first, as many as save the most (none if nothing is saved). Measured on
#: this machine (2 cores): congress takes about 1,400 words and its first round halves; the
#: synthetic |V| = 10^5 corpus takes none (its product would be 10^5 topics wide for 49 words).
PRODUCT_MULTIPLY_ADD_COST = 1 / 256
PRODUCT_OUTPUT_COST = 1 / 4
MAX_DENSE_WORDS = 2048
#: Size of one block of dense first-round gains (documents x topics, float32).
DENSE_BLOCK_BYTES = 32 * 2**20
#: Topics each document keeps in its cache of next-best gains (FastGreedy's lazy re-evaluation).
CACHED_TOPICS = 8


def first_round(docs: DocumentArrays, candidates: Candidates, best: np.ndarray):
    """FastInitialize's first round: every document's best topic on the empty solution.

    Returns (topics, gains, entries read). ``best`` holds every token at the null score.
    """
    col_indptr, col_topics, col_values = candidates.columns
    n_topics, n_docs = candidates.n_topics, docs.n_documents
    dense_words, is_dense_word = _dense_words(docs, candidates)
    if not len(dense_words):
        no_dense = np.zeros((n_docs, 0), dtype=np.float32)
        topics, gains, entries = _kernels.first_round_best_topics(
            0, n_docs, no_dense, np.zeros(n_docs), is_dense_word, docs.indptr, docs.words, docs.counts, best,
            candidates.row_constants, col_indptr, col_topics, col_values,
            candidates.indptr, candidates.indices, candidates.values, numba.get_num_threads(),
        )
        return topics, gains, int(entries.sum())
    dense_scores, largest = _kernels.dense_first_round_scores(
        col_indptr, col_topics, col_values, candidates.row_constants, dense_words, NULL_TOPIC_LOG_SCORE
    )
    dense_column = np.full(candidates.n_words, -1, dtype=np.int64)
    dense_column[dense_words] = np.arange(len(dense_words))
    block = max(1, DENSE_BLOCK_BYTES // (4 * n_topics))
    topics, gains, entries = [], [], 0
    for d0 in range(0, n_docs, block):
        d1 = min(n_docs, d0 + block)
        counts = _dense_counts(docs, d0, d1, dense_column, len(dense_words))
        dense_gains = counts @ dense_scores.T
        dense_error = _product_error_bound(counts, largest)
        block_topics, block_gains, block_entries = _kernels.first_round_best_topics(
            d0, d1 - d0, dense_gains, dense_error, is_dense_word, docs.indptr, docs.words, docs.counts, best,
            candidates.row_constants, col_indptr, col_topics, col_values,
            candidates.indptr, candidates.indices, candidates.values, numba.get_num_threads(),
        )
        topics.append(block_topics)
        gains.append(block_gains)
        entries += int(block_entries.sum())
    logger.debug("first round: %d of %d words through BLAS", len(dense_words), candidates.n_words)
    return np.concatenate(topics), np.concatenate(gains), entries


def _dense_counts(docs: DocumentArrays, d0: int, d1: int, dense_column: np.ndarray, n_dense: int) -> np.ndarray:
    """Counts of documents d0 .. d1 - 1 (rows) over the ``n_dense`` dense words (column
    ``dense_column[word]``; -1: not dense), as a dense float32 matrix for the BLAS product
    (counts below 2^24 are exact in float32)."""
    slots = slice(docs.indptr[d0], docs.indptr[d1])
    columns = dense_column[docs.words[slots]]
    rows = np.repeat(np.arange(d1 - d0), np.diff(docs.indptr[d0 : d1 + 1]))
    kept = columns >= 0
    block = np.zeros((d1 - d0, n_dense), dtype=np.float32)
    block[rows[kept], columns[kept]] = docs.counts[slots][kept]  # one slot per (document, word)
    return block


def _product_error_bound(counts: np.ndarray, largest: np.ndarray) -> np.ndarray:
    """Per row, a bound on the rounding error of ``counts @ scores`` in float32 (any summation
    order) when every score of column h is at most ``largest[h]``: (terms + 2) u sum |n s|, with
    u = 2^-24 (the scores' own rounding to float32, the products', the sum's; Higham, Accuracy
    and Stability of Numerical Algorithms, §3.1), with a margin."""
    terms = np.count_nonzero(counts, axis=1)
    magnitude = counts.astype(np.float64) @ largest
    return 1.01 * (terms + 2) * 2.0**-24 * magnitude


def _dense_words(docs: DocumentArrays, candidates: Candidates):
    """The words whose first-round gains go through the dense product (most costly first), and
    a mask of them over the vocabulary (see :data:`PRODUCT_OUTPUT_COST`)."""
    col_indptr = candidates.columns[0]
    n_words = candidates.n_words
    cost = np.bincount(docs.words, minlength=n_words) * np.diff(col_indptr)
    ranked = np.argsort(-cost, kind="stable")[:MAX_DENSE_WORDS]
    outputs = float(candidates.n_topics) * docs.n_documents
    saved = np.cumsum(cost[ranked], dtype=np.float64) - outputs * (
        PRODUCT_OUTPUT_COST + PRODUCT_MULTIPLY_ADD_COST * np.arange(1, len(ranked) + 1)
    )
    taken = int(np.argmax(saved)) + 1 if len(saved) and saved.max() > 0 else 0
    dense_words = np.sort(ranked[:taken]) if taken else np.zeros(0, dtype=np.int64)
    is_dense_word = np.zeros(n_words, dtype=np.bool_)
    is_dense_word[dense_words] = True
    return dense_words, is_dense_word


@dataclass
class _GreedyRun:
    """The state of one exact greedy run: the links made (a per-document linked list over them),
    each token's best score, and the work counted."""

    docs: DocumentArrays
    candidates: Candidates
    budget: int
    best: np.ndarray  # best score of each (document, distinct word) slot
    doc_head: np.ndarray  # each document's latest link (-1: none)
    link_doc: np.ndarray
    link_topic: np.ndarray
    link_next: np.ndarray  # the document's previous link (-1: none)
    link_gain: np.ndarray
    cache_topics: np.ndarray  # each document's next-best topics at its last full evaluation
    cache_bounds: np.ndarray  # upper bounds of their gains (exact just after that evaluation)
    cache_size: np.ndarray
    rest_bound: np.ndarray  # bounds the gain of every topic not in the cache
    made: int = 0
    evaluations: int = 0  # full document evaluations
    topic_evaluations: int = 0  # gains of one topic on one document
    entries_read: int = 0

    @classmethod
    def empty(cls, docs: DocumentArrays, candidates: Candidates, budget: int) -> "_GreedyRun":
        return cls(
            docs=docs, candidates=candidates, budget=budget,
            best=np.full(len(docs.words), NULL_TOPIC_LOG_SCORE),
            doc_head=np.full(docs.n_documents, -1, dtype=np.int64),
            link_doc=np.empty(budget, dtype=np.int64),
            link_topic=np.empty(budget, dtype=np.int64),
            link_next=np.full(budget, -1, dtype=np.int64),
            link_gain=np.empty(budget, dtype=np.float64),
            cache_topics=np.empty((docs.n_documents, CACHED_TOPICS), dtype=np.int64),
            cache_bounds=np.empty((docs.n_documents, CACHED_TOPICS), dtype=np.float64),
            cache_size=np.zeros(docs.n_documents, dtype=np.int64),
            rest_bound=np.full(docs.n_documents, -np.inf),
        )

    @property
    def rows(self) -> tuple:
        c = self.candidates
        return c.row_constants, c.indptr, c.indices, c.values

    @property
    def scan(self) -> tuple:
        c = self.candidates
        return (c.row_constants, c.constants_descending, *c.columns)

    @property
    def cache(self) -> tuple:
        return self.cache_topics, self.cache_bounds, self.cache_size, self.rest_bound


def _link_first_topics(run: _GreedyRun) -> None:
    """FastInitialize, round 1: every document's best topic on the empty solution, linked."""
    docs = run.docs
    all_docs = np.arange(docs.n_documents, dtype=np.int64)
    first, first_gain, entries = first_round(docs, run.candidates, run.best)
    _kernels.link_per_document(all_docs, first, docs.indptr, docs.words, run.best, *run.rows)
    n_docs = docs.n_documents
    run.link_doc[:n_docs], run.link_topic[:n_docs], run.link_gain[:n_docs] = all_docs, first, first_gain
    run.doc_head[:] = all_docs
    run.made = run.evaluations = n_docs
    run.entries_read = int(entries)


def _second_topic_heap(run: _GreedyRun) -> tuple:
    """FastInitialize, round 2: every document's best second topic, as a max-heap of
    (gain, document, topic), and each document's cache of next-best topics."""
    docs = run.docs
    all_docs = np.arange(docs.n_documents, dtype=np.int64)
    second, second_gain, entries = _kernels.second_topics(
        docs.indptr, docs.words, docs.counts, run.best, run.candidates.n_topics, *run.scan,
        run.doc_head, run.link_topic, run.link_next, *run.cache, numba.get_num_threads(),
    )
    run.entries_read += int(entries.sum())
    run.evaluations += docs.n_documents
    heap = (second_gain.copy(), all_docs.copy(), second.copy())
    _kernels.heapify(*heap, docs.n_documents)
    return heap


def _greedy_steps(run: _GreedyRun, heap: tuple, report) -> None:
    """FastGreedy: pop the best (document, topic), re-evaluate its document, until the budget is met."""
    docs, candidates = run.docs, run.candidates
    while run.made < run.budget:
        steps = min(PROGRESS_EVERY, run.budget - run.made)
        done, entries, full, single = _kernels.greedy_steps(
            steps, *heap, docs.n_documents,
            docs.indptr, docs.words, docs.counts, run.best, candidates.n_topics, *run.scan, *run.rows[1:],
            run.doc_head, run.link_topic, run.link_next, run.link_doc, run.link_gain, run.made, *run.cache,
        )
        run.made += done
        run.entries_read += int(entries)
        run.evaluations += full
        run.topic_evaluations += single
        if done < steps:
            raise InputError("every candidate topic is linked to every document: lower kappa")
        report()
        logger.info("E-LDA greedy: %d of %d links", run.made, run.budget)


def fast_greedy(
    corpus: Corpus, candidates: Candidates, kappa: float = 2.0, *, on_progress=None
) -> Solution:
    """Exact greedy E-LDA: FastInitialize, then FastGreedy until |E| = floor(kappa D) (spec §3).

    Parameters
    ----------
    corpus : Corpus
    candidates : Candidates
        Candidate topics over the corpus vocabulary (a generator's or a fitted model's).
    kappa : float
        Mean number of topics per document, kappa >= 1 (the budget is k = floor(kappa D)).
    on_progress : callable, optional
        ``on_progress(links_made, budget, log_posterior)`` after each batch of greedy steps.

    Returns
    -------
    Solution
        The links in the order greedy chose them, with ``stats`` counting the work.
    """
    check_candidates_match_corpus(candidates, corpus)
    n_docs = corpus.n_documents
    budget = check_budget(kappa, n_docs, candidates.n_topics)
    started = time.perf_counter()
    run = _GreedyRun.empty(DocumentArrays.from_corpus(corpus), candidates, budget)
    null_f = NULL_TOPIC_LOG_SCORE * corpus.n_tokens

    def report():
        if on_progress is not None:
            on_progress(run.made, budget, null_f + float(run.link_gain[: run.made].sum()))

    _link_first_topics(run)
    report()
    if budget > n_docs:
        _greedy_steps(run, _second_topic_heap(run), report)
    links = np.column_stack([run.link_doc, run.link_topic])
    return solution_from_links(
        corpus, candidates, links, run.link_gain, kappa=check_kappa(kappa),
        stats={
            "algorithm": "greedy",
            "optimise_seconds": time.perf_counter() - started,
            "gain_evaluations": int(run.evaluations) * int(candidates.n_topics) + run.topic_evaluations,
            "document_evaluations": int(run.evaluations),
            "topic_evaluations": run.topic_evaluations,
            "entries_read": run.entries_read,
            "adaptive_rounds": 2 + max(budget - n_docs, 0),
        },
    )
