"""Exact greedy E-LDA: FastInitialize + FastGreedy with a per-document heap (spec §3).

``fast_greedy(corpus, candidates, kappa)`` validates, runs the numba kernels of
:mod:`._kernels` step by step (first round, second-topic heap, greedy steps) and packs a
:class:`.solution.Solution`. ``first_round`` is shared with the parallel algorithm.
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

#: FastInitialize's first round reads every stored entry of every document's words. A word goes
#: through a dense BLAS product instead when df(w) * entries(w) * DENSE_ADVANTAGE >= topics x
#: documents. Measured on congress (2 cores): 8 -> 75 dense words, 1.8 s; 32 -> 368, 1.2 s;
#: 128 -> 988, 1.3 s; 512 -> 1824, 4 s (BLAS then does mostly zeros).
DENSE_ADVANTAGE = 64
MAX_DENSE_WORDS = 2048
#: Size of one block of dense first-round gains (documents x topics, float64).
DENSE_BLOCK_BYTES = 64 * 2**20


def first_round(docs: DocumentArrays, candidates: Candidates, best: np.ndarray):
    """FastInitialize's first round: every document's best topic on the empty solution.

    Returns (topics, gains, entries read). ``best`` holds every token at the null score.
    """
    col_indptr, col_topics, col_values = candidates.columns
    n_topics, n_docs = candidates.n_topics, docs.n_documents
    dense_words, is_dense_word = _dense_words(docs, candidates)
    if len(dense_words):
        dense_scores = _kernels.dense_first_round_scores(
            col_indptr, col_topics, col_values, candidates.row_constants, dense_words, NULL_TOPIC_LOG_SCORE
        )
        dense_column = np.full(candidates.n_words, -1, dtype=np.int64)
        dense_column[dense_words] = np.arange(len(dense_words))
    block = max(1, DENSE_BLOCK_BYTES // (8 * n_topics))
    topics, gains, entries = [], [], 0
    for d0 in range(0, n_docs, block):
        d1 = min(n_docs, d0 + block)
        if len(dense_words):
            dense_gains = _dense_counts(docs, d0, d1, dense_column, len(dense_words)) @ dense_scores.T
        else:
            dense_gains = np.zeros((d1 - d0, n_topics))
        block_topics, block_gains, block_entries = _kernels.first_round_best_topics(
            d0, dense_gains, is_dense_word, docs.indptr, docs.words, docs.counts, best, n_topics,
            candidates.row_constants, candidates.constants_descending, col_indptr, col_topics,
            col_values, numba.get_num_threads(),
        )
        topics.append(block_topics)
        gains.append(block_gains)
        entries += int(block_entries.sum())
    logger.debug("first round: %d of %d words through BLAS", len(dense_words), candidates.n_words)
    return np.concatenate(topics), np.concatenate(gains), entries


def _dense_counts(docs: DocumentArrays, d0: int, d1: int, dense_column: np.ndarray, n_dense: int) -> np.ndarray:
    """Counts of documents d0 .. d1 - 1 (rows) over the ``n_dense`` dense words (column
    ``dense_column[word]``; -1: not dense), as a dense matrix for the BLAS product."""
    slots = slice(docs.indptr[d0], docs.indptr[d1])
    columns = dense_column[docs.words[slots]]
    rows = np.repeat(np.arange(d1 - d0), np.diff(docs.indptr[d0 : d1 + 1]))
    kept = columns >= 0
    block = np.zeros((d1 - d0, n_dense))
    block[rows[kept], columns[kept]] = docs.counts[slots][kept]  # one slot per (document, word)
    return block


def _dense_words(docs: DocumentArrays, candidates: Candidates):
    """The words whose first-round gains are cheaper as a dense product (most costly first), and
    a mask of them over the vocabulary."""
    col_indptr = candidates.columns[0]
    n_words = candidates.n_words
    cost = np.bincount(docs.words, minlength=n_words) * np.diff(col_indptr)
    dense_words = np.nonzero(cost * DENSE_ADVANTAGE >= candidates.n_topics * docs.n_documents)[0]
    dense_words = dense_words[np.argsort(-cost[dense_words], kind="stable")][:MAX_DENSE_WORDS]
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
    made: int = 0
    evaluations: int = 0  # full document evaluations
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
        )

    @property
    def rows(self) -> tuple:
        c = self.candidates
        return c.row_constants, c.indptr, c.indices, c.values

    @property
    def scan(self) -> tuple:
        c = self.candidates
        return (c.row_constants, c.constants_descending, *c.columns)


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
    (gain, document, topic)."""
    docs = run.docs
    all_docs = np.arange(docs.n_documents, dtype=np.int64)
    second, second_gain, entries = _kernels.best_topic_per_document(
        all_docs, docs.indptr, docs.words, docs.counts, run.best, run.candidates.n_topics, *run.scan,
        run.doc_head, run.link_topic, run.link_next, numba.get_num_threads(),
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
        done, entries = _kernels.greedy_steps(
            steps, *heap, docs.n_documents,
            docs.indptr, docs.words, docs.counts, run.best, candidates.n_topics, *run.scan, *run.rows[1:],
            run.doc_head, run.link_topic, run.link_next, run.link_doc, run.link_gain, run.made,
        )
        run.made += done
        run.entries_read += int(entries)
        run.evaluations += done
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
            "gain_evaluations": int(run.evaluations) * int(candidates.n_topics),
            "document_evaluations": int(run.evaluations),
            "entries_read": run.entries_read,
            "adaptive_rounds": 2 + max(budget - n_docs, 0),
        },
    )
