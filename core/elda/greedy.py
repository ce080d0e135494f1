"""Exact greedy E-LDA: FastInitialize + FastGreedy with a per-document heap (the E-LDA paper's algorithms).

``fast_greedy(corpus, candidates, kappa)`` validates, runs the numba kernels of
:mod:`._kernels` step by step (first round, the column heads the later scans read, second
topics, greedy steps) and packs a :class:`.solution.Solution`. ``first_round`` is shared with
the parallel algorithm.

FastGreedy re-evaluates one document per step. Its new best topic is found lazily: gains only
fall as links are added, so the gains a document's last full evaluation cached bound its topics'
gains now; the cached topics are re-scored one at a time (best bound first) and a full
evaluation runs only when none of them provably beats every topic left out of the cache. The
steps run in parallel chain rounds (:func:`_chain_rounds`) that make exactly the heap's links,
then through the heap for the last few.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

import numba
import numpy as np

from topicbench.core.elda.kernels.column_sort import column_heads
from topicbench.core.elda.kernels.first_round import (
    dense_first_round_rows,
    first_round_best_topics,
    link_per_document,
)
from topicbench.core.elda.kernels.lazy_greedy import (
    append_links,
    extend_chains,
    greedy_steps,
    heapify,
    second_topics,
)
from topicbench.core.elda.kernels.records import (
    Chains,
    Columns,
    DenseRows,
    GainCache,
    GreedyState,
    Heap,
    Links,
)
from topicbench.core.constants import NULL_TOPIC_LOG_SCORE
from topicbench.core.corpus import Corpus
from topicbench.core.elda.generators import Candidates
from topicbench.core.elda.solution import DocumentArrays, Solution, solution_from_links
from topicbench.core.validation import InputError, check_budget, check_candidates_match_corpus, check_kappa

logger = logging.getLogger(__name__)

#: Greedy iterations between two progress reports.
PROGRESS_EVERY = 2000

#: FastInitialize's first round reads every stored entry of every document's words, each an
#: update of a scattered topic. A word whose column holds more than DENSE_ROW_FRACTION of the
#: topics instead adds a dense row over all topics (int16 multiples of a quantum:
#: :func:`._kernels.first_round.dense_first_round_rows`), a vectorised pass that costs less per topic
#: (measured on congress: one row pass ~ 1/10 of a scan of the same length). Rows are taken by
#: the work they save, most first, within DENSE_ROWS_BYTES.
DENSE_ROW_FRACTION = 1 / 8
DENSE_ROWS_BYTES = 64 * 2**20
#: Topics each document keeps in its cache of next-best gains (FastGreedy's lazy re-evaluation).
CACHED_TOPICS = 8
#: FastGreedy's steps run as parallel chain rounds (see _chain_rounds) while at least this many
#: links are left; the last ones go through the heap one at a time.
CHAIN_ROUNDS_MIN_LINKS = 64
#: A chain round's threshold is the gain of the head ranked (links left x this fraction): every
#: head above it is linked, so each round makes at least that many links. Lower: fewer links made
#: past the budget in the last round (wasted evaluations), more rounds. On congress a quarter
#: makes no evaluation the heap would not, in 12 rounds (reuters: 17, 20ng_politics: 4).
CHAIN_ROUND_FRACTION = 1 / 4
#: Most links one document makes in one pass of a chain round (the width of its output).
CHAIN_CAP = 16


def first_round(docs: DocumentArrays, candidates: Candidates, best: np.ndarray):
    """FastInitialize's first round: every document's best topic on the empty solution.

    Returns (topics, gains, entries read). ``best`` holds every token at the null score. Every
    column is read whole, so its entries need not be sorted yet (:attr:`Candidates.column_entries`).
    """
    columns = candidates.column_entries
    dense_words = _dense_words(docs, candidates)
    dense_rows, quantum = dense_first_round_rows(columns, candidates.row_constants, dense_words, NULL_TOPIC_LOG_SCORE)
    dense_row_of_word = np.full(candidates.n_words, -1, dtype=np.int64)
    dense_row_of_word[dense_words] = np.arange(len(dense_words))
    topics, gains, entries = first_round_best_topics(
        DenseRows(dense_rows, quantum, dense_row_of_word), docs.record, best, candidates.rows, columns,
        numba.get_num_threads(),
    )
    logger.debug("first round: %d of %d words as dense rows", len(dense_words), candidates.n_words)
    return topics, gains, int(entries.sum())


def _dense_words(docs: DocumentArrays, candidates: Candidates) -> np.ndarray:
    """The words whose first-round gains come from dense rows (see :data:`DENSE_ROW_FRACTION`):
    by the scan work they save, most first, as many as DENSE_ROWS_BYTES holds; ascending ids."""
    n_topics = candidates.n_topics
    column_lengths = np.diff(candidates.column_entries.indptr)
    saved = np.bincount(docs.words, minlength=candidates.n_words) * (column_lengths - DENSE_ROW_FRACTION * n_topics)
    row_bytes = np.dtype(np.int16).itemsize * max(n_topics, 1)
    ranked = np.argsort(-saved, kind="stable")[: max(0, DENSE_ROWS_BYTES // row_bytes)]
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
    columns: Columns | None = None  # the column store the scans read after the first round (see _scan_columns)
    made: int = 0
    evaluations: int = 0  # full document evaluations
    topic_evaluations: int = 0  # gains of one topic on one document
    entries_read: int = 0
    chain_rounds: int = 0  # parallel rounds of FastGreedy's steps (_chain_rounds)

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
    def links(self) -> Links:
        """The link arrays as the kernels take them (rebuilt on each call: :meth:`reserve` replaces them)."""
        return Links(self.doc_head, self.link_doc, self.link_topic, self.link_next, self.link_gain)

    @property
    def cache(self) -> GainCache:
        return GainCache(self.cache_topics, self.cache_bounds, self.cache_size, self.rest_bound)

    @property
    def state(self) -> GreedyState:
        """What the greedy kernels change: best scores, links and gain caches."""
        return GreedyState(self.best, self.links, self.cache)

    def reserve(self, n_links: int) -> None:
        """Room for ``n_links`` links (a chain round may make some past the budget)."""
        if n_links > len(self.link_doc):
            grow = max(n_links, 2 * len(self.link_doc)) - len(self.link_doc)
            self.link_doc = np.concatenate([self.link_doc, np.empty(grow, dtype=np.int64)])
            self.link_topic = np.concatenate([self.link_topic, np.empty(grow, dtype=np.int64)])
            self.link_next = np.concatenate([self.link_next, np.full(grow, -1, dtype=np.int64)])
            self.link_gain = np.concatenate([self.link_gain, np.empty(grow, dtype=np.float64)])

    def order_links(self, first: int, keys: np.ndarray) -> None:
        """Put links first .. made - 1 in greedy's order: key high to low, then document id, then
        as made (a document's chain order), and relink every document's list."""
        block = slice(first, self.made)
        order = first + np.lexsort((np.arange(len(keys)), self.link_doc[block], -keys))
        for links in (self.link_doc, self.link_topic, self.link_gain):
            links[block] = links[order]
        self.doc_head[:] = -1
        append_links(
            self.link_doc[: self.made], self.link_topic[: self.made], self.link_gain[: self.made], self.links, 0
        )


def _link_first_topics(run: _GreedyRun) -> None:
    """FastInitialize, round 1: every document's best topic on the empty solution, linked."""
    docs = run.docs
    all_docs = np.arange(docs.n_documents, dtype=np.int64)
    first, first_gain, entries = first_round(docs, run.candidates, run.best)
    link_per_document(all_docs, first, docs.record, run.best, run.candidates.rows)
    n_docs = docs.n_documents
    run.link_doc[:n_docs], run.link_topic[:n_docs], run.link_gain[:n_docs] = all_docs, first, first_gain
    run.doc_head[:] = all_docs
    run.made = run.evaluations = n_docs
    run.entries_read = int(entries)


def _scan_columns(run: _GreedyRun) -> Columns:
    """The sorted columns the later rounds' scans read: the candidates' own when already sorted,
    else only the heads a scan can still reach after the first links, sorted here (sorting every
    whole column costs about three times as much on the paper's corpora)."""
    candidates = run.candidates
    if candidates.has_sorted_columns:
        return candidates.columns
    return Columns(*column_heads(candidates.column_entries, run.docs.words, run.best))


def _second_topics(run: _GreedyRun) -> tuple:
    """FastInitialize, round 2: every document's best second topic and its gain (its head), and
    each document's cache of next-best topics."""
    docs = run.docs
    second, second_gain, entries = second_topics(
        docs.record, run.candidates.rows, run.columns, run.best, run.links, run.cache, numba.get_num_threads()
    )
    run.entries_read += int(entries.sum())
    run.evaluations += docs.n_documents
    return second, second_gain


def _chain_rounds(run: _GreedyRun, head_topic: np.ndarray, head_gain: np.ndarray, report) -> None:
    """FastGreedy's steps, made in parallel rounds while many links are left; exactly greedy's links.

    Documents never interact: each document's chain (its best topic, linked, then its next best,
    ...) is its own, and FastGreedy's heap only interleaves the chains, by gain (a chain's key is
    its running minimum gain, which is its gain as long as gains fall, as submodularity says they
    do), then document id, then chain order. So every link whose key is at least t comes before
    every link whose key is below t. A round picks t (see :data:`CHAIN_ROUND_FRACTION`), extends
    every chain whose head reaches it, in parallel (:func:`._kernels.lazy_greedy.extend_chains`), and puts the
    round's links in greedy's order; a round that passes the budget keeps greedy's first links.
    ``head_topic``/``head_gain`` are updated in place."""
    docs = run.docs
    chain_floor = np.full(docs.n_documents, np.inf)
    while run.budget - run.made >= CHAIN_ROUNDS_MIN_LINKS:
        left = run.budget - run.made
        heads = head_gain[head_topic >= 0]
        rank = math.ceil(left * CHAIN_ROUND_FRACTION)
        if len(heads) < rank:
            break
        threshold = float(np.partition(heads, len(heads) - rank)[len(heads) - rank])
        if not threshold > 0.0:  # ties at zero gain: the heap orders them one at a time
            break
        first = run.made
        keys = []
        while True:
            active = np.flatnonzero((head_topic >= 0) & (np.minimum(head_gain, chain_floor) >= threshold))
            if not len(active):
                break
            topics, gains, chain_keys, work = extend_chains(
                Chains(threshold, CHAIN_CAP, active, head_topic, head_gain, chain_floor),
                docs.record, run.candidates.rows, run.columns, run.best, run.links, run.cache, numba.get_num_threads(),
            )
            rows, positions = np.nonzero(topics >= 0)  # per document, in chain order
            run.reserve(run.made + len(rows))
            append_links(active[rows], topics[rows, positions], gains[rows, positions], run.links, run.made)
            run.made += len(rows)
            keys.append(chain_keys[rows, positions])
            entries, full, single = work.sum(axis=0).tolist()
            run.entries_read += entries
            run.evaluations += full
            run.topic_evaluations += single
        run.order_links(first, np.concatenate(keys))
        run.chain_rounds += 1
        if run.made >= run.budget:  # greedy's first links of this round fill the budget
            run.made = run.budget
            return
        report()
        logger.info("E-LDA greedy: %d of %d links (chain round at gain %.4g)", run.made, run.budget, threshold)


def _greedy_steps(run: _GreedyRun, heap: Heap, report) -> None:
    """FastGreedy: pop the best (document, topic), re-evaluate its document, until the budget is met."""
    docs = run.docs
    while run.made < run.budget:
        steps = min(PROGRESS_EVERY, run.budget - run.made)
        done, entries, full, single = greedy_steps(
            steps, heap, docs.n_documents, docs.record, run.candidates.rows, run.columns, run.state, run.made
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
    """Exact greedy E-LDA: FastInitialize, then FastGreedy until |E| = floor(kappa D) (the E-LDA paper's algorithms).

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
        run.columns = _scan_columns(run)
        head_topic, head_gain = _second_topics(run)
        _chain_rounds(run, head_topic, head_gain, report)
        heap = Heap(head_gain, np.arange(n_docs, dtype=np.int64), head_topic)
        heapify(heap, n_docs)
        _greedy_steps(run, heap, report)
    links = np.column_stack([run.link_doc[:budget], run.link_topic[:budget]])
    return solution_from_links(
        corpus, candidates, links, run.link_gain[:budget], kappa=check_kappa(kappa),
        stats={
            "algorithm": "greedy",
            "optimise_seconds": time.perf_counter() - started,
            "gain_evaluations": int(run.evaluations) * int(candidates.n_topics) + run.topic_evaluations,
            "document_evaluations": int(run.evaluations),
            "topic_evaluations": run.topic_evaluations,
            "entries_read": run.entries_read,
            "adaptive_rounds": 2 + max(budget - n_docs, 0),
            "chain_rounds": run.chain_rounds,
        },
    )
