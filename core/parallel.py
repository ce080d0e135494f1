"""Low-adaptivity parallel E-LDA: adaptive sequencing over descending thresholds (spec §3).

The algorithm is in the family of FAST (Breuer, Balkanski & Singer, "The FAST Algorithm for
Submodular Maximization", ICML 2020). Which of FAST's steps each part implements:

- **Threshold** (FAST: ``t = (1 - eps)(v - f(S)) / k`` with guesses v of OPT): here the threshold
  descends geometrically from the largest gain, ``t <- (1 - eps) * max gain`` whenever no element
  reaches the current t (the descending-threshold form of adaptive sequencing; it needs no OPT
  guesses, and every added element is within 1 - eps of the best gain at its time, which gives
  1 - 1/e - eps like greedy with (1 - eps)-approximate steps).
- **Filter** X = {a : f_S(a) >= t}: every document's cached top gains (exact at its current
  links) say which of its topics are in X.
- **Sequence** a_1, a_2, ...: FAST draws a random sequence of X. Documents never interact (the
  objective is a sum over documents), so the round's sequence is the union of per-document
  sequences, each its X-elements best first (at most ``max_sequence``).
- **Prefix** i* (FAST: the longest prefix after which most of X stays above t, found by binary
  search, one round per probe): the gains of every sequence element given the prefix before it
  are fixed queries, so all are evaluated in one round; each document keeps the longest prefix
  whose conditional gains all reach t. Every element added has marginal gain >= t when added.
- **Budget**: when a round's prefixes exceed what is left of k = floor(kappa D), the elements
  kept are those whose prefix gains are highest, prefix-closed per document; ties at the cut are
  broken by the seeded random generator (FAST: the random sequence is cut at k - |S|).

Rounds and gain evaluations are counted: FastInitialize is 2 rounds (first topics; second-topic
gains), then one round per threshold step. A gain evaluation is one (document, topic) gain.

Execution is by document shards through an executor (``run(function, *args)`` on every shard,
with shard state kept where the shard lives): :class:`LocalShards` in this process, or
:class:`topicbench.core.distributed.DaskShards` on a Dask cluster. The driver keeps the ledger of
links; a shard's state is a function of its links, so a lost shard is rebuilt from the ledger.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numba
import numpy as np

from . import _kernels
from .config import NULL_TOPIC_LOG_SCORE
from .corpus import Corpus
from .elda import DocumentArrays, Solution, first_round, solution_from_links
from .generators import Candidates
from .validation import InputError, check_budget, check_epsilon

logger = logging.getLogger(__name__)

#: Default accuracy parameter (spec §3; the issue's round target is stated at eps = 0.1).
DEFAULT_EPSILON = 0.1
#: Longest per-document sequence in one round (also the size of each document's top-gain cache).
DEFAULT_MAX_SEQUENCE = 32


class ShardStateLost(RuntimeError):
    """A shard's state is not where its executor kept it (its worker was lost): rebuild from the ledger."""


@dataclass
class Shard:
    """Some of the corpus's documents (global ids ``documents``), as the kernels read them."""

    documents: np.ndarray
    docs: DocumentArrays


@dataclass
class ShardState:
    """What a shard knows between rounds: best scores, links and each document's top gains."""

    best: np.ndarray
    link_indptr: np.ndarray
    link_topics: np.ndarray
    top_topics: np.ndarray
    top_gains: np.ndarray
    evaluations: int = 0


@dataclass
class RoundSummary:
    """What a shard reports after a round (small: sent back to the driver)."""

    documents: np.ndarray  # global ids of accepted links, in per-document sequence order
    topics: np.ndarray
    gains: np.ndarray  # conditional gain of each accepted link
    prefix_gains: np.ndarray  # running minimum of the gains along each document's prefix
    max_gain: float  # largest cached gain left in the shard
    evaluations: int  # full document evaluations made in this round
    seconds: float = 0.0


def _threads() -> int:
    return numba.get_num_threads()


def _merge_links(state: ShardState, local_docs: np.ndarray, topics: np.ndarray) -> None:
    """Append links (local doc ids, topics) to the state's per-document CSR of links."""
    n_docs = len(state.link_indptr) - 1
    old_counts = np.diff(state.link_indptr)
    old_docs = np.repeat(np.arange(n_docs), old_counts)
    all_docs = np.concatenate([old_docs, local_docs])
    all_topics = np.concatenate([state.link_topics, topics])
    order = np.argsort(all_docs, kind="stable")
    state.link_topics = all_topics[order].astype(np.int64)
    state.link_indptr = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(np.bincount(all_docs, minlength=n_docs), out=state.link_indptr[1:])


def _state_from_links(candidates: Candidates, shard: Shard, local_docs, topics, top_size: int) -> ShardState:
    """A shard state rebuilt from its links alone (used to start and to recover a lost shard)."""
    docs = shard.docs
    n_docs = docs.n_documents
    state = ShardState(
        best=np.full(len(docs.words), NULL_TOPIC_LOG_SCORE),
        link_indptr=np.zeros(n_docs + 1, dtype=np.int64),
        link_topics=np.zeros(0, dtype=np.int64),
        top_topics=np.empty((n_docs, top_size), dtype=np.int64),
        top_gains=np.empty((n_docs, top_size)),
    )
    _merge_links(state, np.asarray(local_docs, dtype=np.int64), np.asarray(topics, dtype=np.int64))
    rows = (candidates.row_constants, candidates.indptr, candidates.indices, candidates.values)
    doc_of_link = np.repeat(np.arange(n_docs), np.diff(state.link_indptr))
    _kernels.link_per_document(doc_of_link, state.link_topics, docs.indptr, docs.words, state.best, *rows)
    state.top_topics, state.top_gains = _kernels.top_gains_per_document(
        docs.indptr, docs.words, docs.counts, state.best, candidates.n_topics,
        candidates.row_constants, candidates.constants_descending, *candidates.columns,
        state.link_indptr, state.link_topics, top_size, _threads(),
    )
    state.evaluations = n_docs
    return state


def initialize_shard(candidates: Candidates, shard: Shard, state, top_size: int):
    """FastInitialize on a shard (2 rounds): link each document's best topic, cache its top gains."""
    started = time.perf_counter()
    docs = shard.docs
    best = np.full(len(docs.words), NULL_TOPIC_LOG_SCORE)
    topics, gains, _ = first_round(docs, candidates, best)
    local = np.arange(docs.n_documents, dtype=np.int64)
    state = _state_from_links(candidates, shard, local, topics, top_size)
    state.evaluations += docs.n_documents
    summary = RoundSummary(
        documents=shard.documents[local],
        topics=topics,
        gains=gains,
        prefix_gains=gains,
        max_gain=float(state.top_gains[:, 0].max()) if docs.n_documents else -math.inf,
        evaluations=2 * docs.n_documents,
        seconds=time.perf_counter() - started,
    )
    return state, summary


def threshold_shard(candidates: Candidates, shard: Shard, state: ShardState, threshold: float, max_sequence: int):
    """One adaptive round on a shard at ``threshold`` (see :func:`_kernels.threshold_round`)."""
    started = time.perf_counter()
    docs = shard.docs
    accepted_topics, accepted_gains, evaluations = _kernels.threshold_round(
        threshold, max_sequence, docs.indptr, docs.words, docs.counts, state.best, candidates.n_topics,
        candidates.row_constants, candidates.constants_descending, *candidates.columns,
        candidates.indptr, candidates.indices, candidates.values,
        state.link_indptr, state.link_topics, state.top_topics, state.top_gains, _threads(),
    )
    local_docs, positions = np.nonzero(accepted_topics >= 0)  # row-major: per document, in order
    topics = accepted_topics[local_docs, positions]
    gains = accepted_gains[local_docs, positions]
    prefix = np.minimum.accumulate(np.where(accepted_topics >= 0, accepted_gains, np.inf), axis=1)
    _merge_links(state, local_docs, topics)
    state.evaluations += int(evaluations.sum())
    summary = RoundSummary(
        documents=shard.documents[local_docs],
        topics=topics,
        gains=gains,
        prefix_gains=prefix[local_docs, positions],
        max_gain=float(state.top_gains[:, 0].max()) if docs.n_documents else -math.inf,
        evaluations=int(evaluations.sum()),
        seconds=time.perf_counter() - started,
    )
    return state, summary


def rebuild_shard(candidates: Candidates, shard: Shard, state, local_docs, topics, top_size: int):
    """Recover a lost shard state from the driver's ledger of its links."""
    return _state_from_links(candidates, shard, local_docs, topics, top_size), None


class LocalShards:
    """Runs shard functions in this process (numba threads inside each call)."""

    n_workers = 1

    def start(self, candidates: Candidates, shards: list) -> None:
        self.candidates = candidates
        self.shards = shards
        self.states = [None] * len(shards)

    def run(self, function, *args, per_shard_args=None) -> list:
        summaries = []
        for i, shard in enumerate(self.shards):
            extra = per_shard_args[i] if per_shard_args is not None else ()
            self.states[i], summary = function(self.candidates, shard, self.states[i], *args, *extra)
            summaries.append(summary)
        return summaries

    def close(self) -> None:
        self.states = []


class Borrowed:
    """Lends an executor to several runs: ``parallel_elda`` closes what it is given when done, so
    wrap a cluster-backed executor in this to keep the cluster for the next run."""

    def __init__(self, executor):
        self.executor = executor
        self.n_workers = getattr(executor, "n_workers", 1)

    def start(self, *args):
        self.executor.start(*args)

    def run(self, *args, **kwargs):
        return self.executor.run(*args, **kwargs)

    def close(self):
        pass


def split_shards(docs: DocumentArrays, n_shards: int) -> list[Shard]:
    """Documents dealt round-robin into ``n_shards`` shards.

    Corpora are often ordered (by class, source or date), so contiguous ranges can differ a lot in
    work; dealing documents out spreads every round's active documents evenly. The result does not
    depend on the split: each round's links are ordered by prefix gain, then document id.
    """
    n_shards = max(1, min(n_shards, docs.n_documents))
    shards = []
    for i in range(n_shards):
        documents = np.arange(i, docs.n_documents, n_shards, dtype=np.int64)
        shards.append(Shard(documents=documents, docs=docs.take(documents)))
    return shards


@dataclass
class ParallelRun:
    """Counts of a parallel run (recorded with the solution)."""

    adaptive_rounds: int = 0
    document_evaluations: int = 0
    thresholds: list = field(default_factory=list)
    links_per_round: list = field(default_factory=list)
    recovered_shards: int = 0


def parallel_elda(
    corpus: Corpus,
    candidates: Candidates,
    kappa: float = 2.0,
    *,
    epsilon: float = DEFAULT_EPSILON,
    seed: int = 0,
    executor=None,
    n_shards: int | None = None,
    max_sequence: int = DEFAULT_MAX_SEQUENCE,
    max_recoveries: int = 2,
    on_progress=None,
) -> Solution:
    """Low-adaptivity E-LDA under the global budget k = floor(kappa D).

    Parameters
    ----------
    corpus, candidates, kappa
        As for :func:`topicbench.core.elda.fast_greedy`.
    epsilon : float
        Accuracy parameter in (0, 1): thresholds descend by 1 - epsilon; the guarantee is
        1 - 1/e - O(epsilon) and the number of rounds grows like log(gain range) / epsilon.
    seed : int
        Seeds the tie-breaking when a round's prefixes are cut to the budget.
    executor : LocalShards or DaskShards, optional
        Where shard work runs (default: this process). Its ``start``/``close`` are called here.
    n_shards : int, optional
        Number of document shards (default: the executor's worker count, at least 1).
    on_progress : callable, optional
        ``on_progress(links_made, budget, log_posterior)`` after every round.
    """
    check_epsilon(epsilon)
    if max_sequence < 1:
        raise InputError(f"max_sequence must be >= 1, got {max_sequence!r}")
    if candidates.n_words != corpus.n_words:
        raise InputError(
            f"the candidates cover {candidates.n_words} words but the corpus vocabulary has {corpus.n_words}"
        )
    n_docs = corpus.n_documents
    budget = check_budget(kappa, n_docs, candidates.n_topics)
    rng = np.random.default_rng(seed)
    executor = executor or LocalShards()
    started = time.perf_counter()
    docs = DocumentArrays.from_corpus(corpus)
    shards = split_shards(docs, n_shards or getattr(executor, "n_workers", 1))
    shard_of_doc = np.empty(n_docs, dtype=np.int64)
    local_of_doc = np.empty(n_docs, dtype=np.int64)
    for i, shard in enumerate(shards):
        shard_of_doc[shard.documents] = i
        local_of_doc[shard.documents] = np.arange(len(shard.documents))
    run = ParallelRun()
    ledger_docs, ledger_topics, ledger_gains = [], [], []
    null_f = NULL_TOPIC_LOG_SCORE * corpus.n_tokens

    def ledger_for_shards():
        all_docs = np.concatenate(ledger_docs) if ledger_docs else np.zeros(0, dtype=np.int64)
        all_topics = np.concatenate(ledger_topics) if ledger_topics else np.zeros(0, dtype=np.int64)
        return [
            (local_of_doc[all_docs[shard_of_doc[all_docs] == i]], all_topics[shard_of_doc[all_docs] == i], max_sequence)
            for i in range(len(shards))
        ]

    def run_round(function, *args):
        for attempt in range(max_recoveries + 1):
            try:
                return executor.run(function, *args)
            except Exception as error:  # a lost worker or shard: rebuild from the ledger
                if not _is_recoverable(error) or attempt == max_recoveries:
                    raise RuntimeError(
                        f"parallel E-LDA failed in round {run.adaptive_rounds + 1}: {type(error).__name__}: "
                        f"{error} (after {attempt} recoveries); no partial result is returned"
                    ) from error
                logger.warning("round %d: %s; rebuilding shard states from the ledger", run.adaptive_rounds + 1, error)
                run.recovered_shards += len(shards)
                executor.start(candidates, shards)
                executor.run(rebuild_shard, per_shard_args=ledger_for_shards())

    executor.start(candidates, shards)
    try:
        summaries = run_round(initialize_shard, max_sequence)
        run.adaptive_rounds += 2
        _record(summaries, ledger_docs, ledger_topics, ledger_gains, run, None)
        made = n_docs
        max_gain = max(s.max_gain for s in summaries)
        threshold = (1 - epsilon) * max_gain
        while made < budget:
            if on_progress is not None:
                on_progress(made, budget, null_f + float(sum(g.sum() for g in ledger_gains)))
            if max_gain == -math.inf:
                raise InputError("every candidate topic is linked to every document: lower kappa")
            summaries = run_round(threshold_shard, threshold, max_sequence)
            run.adaptive_rounds += 1
            run.thresholds.append(float(threshold))
            made += _record(summaries, ledger_docs, ledger_topics, ledger_gains, run, (budget - made, rng))
            max_gain = max(s.max_gain for s in summaries)
            if max_gain < threshold:  # no element reaches t any more: the next threshold level
                threshold = (1 - epsilon) * max_gain
            logger.info("parallel E-LDA round %d: %d of %d links, threshold %.4g", run.adaptive_rounds, made, budget, threshold)
    finally:
        executor.close()

    links = np.column_stack([np.concatenate(ledger_docs), np.concatenate(ledger_topics)])
    gains = np.concatenate(ledger_gains)
    solution = solution_from_links(
        corpus, candidates, links, gains, kappa=kappa,
        stats={
            "algorithm": "parallel",
            "epsilon": float(epsilon),
            "seed": int(seed),
            "max_sequence": int(max_sequence),
            "shards": len(shards),
            "workers": int(getattr(executor, "n_workers", 1)),
            "adaptive_rounds": run.adaptive_rounds,
            "document_evaluations": run.document_evaluations,
            "gain_evaluations": run.document_evaluations * candidates.n_topics,
            "recovered_shards": run.recovered_shards,
            "optimise_seconds": time.perf_counter() - started,
        },
    )
    solution.stats["thresholds"] = run.thresholds
    solution.stats["links_per_round"] = run.links_per_round
    if on_progress is not None:
        on_progress(len(links), budget, solution.log_posterior)
    return solution


def _record(summaries, ledger_docs, ledger_topics, ledger_gains, run: ParallelRun, cut) -> int:
    """Append a round's accepted links to the ledger (cut to the budget left); return how many."""
    docs = np.concatenate([s.documents for s in summaries]).astype(np.int64)
    topics = np.concatenate([s.topics for s in summaries]).astype(np.int64)
    gains = np.concatenate([s.gains for s in summaries]).astype(np.float64)
    prefix = np.concatenate([s.prefix_gains for s in summaries]).astype(np.float64)
    run.document_evaluations += sum(s.evaluations for s in summaries)
    if cut is not None:
        left, rng = cut
        if len(docs) > left:
            # Keep the `left` highest prefix gains. A document's prefix gains fall along its
            # sequence, and ties are broken by one seeded random key per document (then by
            # position), so the kept set is prefix-closed per document and exactly `left` long.
            # This is the last round: shard states may hold the dropped links, unused from here.
            document_key = rng.random(int(docs.max()) + 1)[docs]
            position = np.arange(len(docs))
            order = np.lexsort((position, document_key, -prefix))[:left]
            order.sort()
            docs, topics, gains, prefix = docs[order], topics[order], gains[order], prefix[order]
        order = np.lexsort((docs, -prefix))  # within a round: by prefix gain, then document
        docs, topics, gains = docs[order], topics[order], gains[order]
    ledger_docs.append(docs)
    ledger_topics.append(topics)
    ledger_gains.append(gains)
    run.links_per_round.append(int(len(docs)))
    return int(len(docs))


def _is_recoverable(error: Exception) -> bool:
    """Lost workers, cancelled futures and closed connections; not errors raised by our code."""
    if isinstance(error, ShardStateLost):
        return True
    if isinstance(error, (InputError, numba.core.errors.NumbaError)):
        return False
    module = type(error).__module__ or ""
    return module.startswith(("distributed", "asyncio", "concurrent", "tornado")) or isinstance(
        error, (OSError, TimeoutError)
    )
