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

#: FastInitialize's first round reads every stored entry of every document's words, each an
#: update of a scattered topic. A word whose column holds more than DENSE_ROW_FRACTION of the
#: topics instead adds a dense float32 row over all topics, a vectorised pass that costs less
#: per topic (measured on congress: one row pass ~ 1/10 of a scan of the same length). Rows are
#: taken by the work they save, most first, within DENSE_ROWS_BYTES.
DENSE_ROW_FRACTION = 1 / 8
DENSE_ROWS_BYTES = 64 * 2**20
#: Topics each document keeps in its cache of next-best gains (FastGreedy's lazy re-evaluation).
CACHED_TOPICS = 8


def first_round(docs: DocumentArrays, candidates: Candidates, best: np.ndarray):
    """FastInitialize's first round: every document's best topic on the empty solution.

    Returns (topics, gains, entries read). ``best`` holds every token at the null score.
    """
    col_indptr, col_topics, col_values = candidates.columns
    dense_words = _dense_words(docs, candidates)
    dense_rows, largest = _kernels.dense_first_round_rows(
        col_indptr, col_topics, col_values, candidates.row_constants, dense_words, NULL_TOPIC_LOG_SCORE
    )
    dense_row_of_word = np.full(candidates.n_words, -1, dtype=np.int64)
    dense_row_of_word[dense_words] = np.arange(len(dense_words))
    topics, gains, entries = _kernels.first_round_best_topics(
        dense_rows, largest, dense_row_of_word, docs.indptr, docs.words, docs.counts, best,
        candidates.row_constants, col_indptr, col_topics, col_values,
        candidates.indptr, candidates.indices, candidates.values, numba.get_num_threads(),
    )
    logger.debug("first round: %d of %d words as dense rows", len(dense_words), candidates.n_words)
    return topics, gains, int(entries.sum())


def _dense_words(docs: DocumentArrays, candidates: Candidates) -> np.ndarray:
    """The words whose first-round gains come from dense rows (see :data:`DENSE_ROW_FRACTION`):
    by the scan work they save, most first, as many as DENSE_ROWS_BYTES holds; ascending ids."""
    n_topics = candidates.n_topics
    column_lengths = np.diff(candidates.columns[0])
    saved = np.bincount(docs.words, minlength=candidates.n_words) * (column_lengths - DENSE_ROW_FRACTION * n_topics)
    ranked = np.argsort(-saved, kind="stable")[: max(0, DENSE_ROWS_BYTES // (4 * max(n_topics, 1)))]
    return np.sort(ranked[saved[ranked] > 0]).astype(np.int64)


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
        docs.indptr, docs.words, docs.counts, run.best, *run.scan,
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
            docs.indptr, docs.words, docs.counts, run.best, *run.scan, *run.rows[1:],
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
