"""Low-adaptivity parallel E-LDA: adaptive sequencing over descending thresholds (the E-LDA paper's algorithms).

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
gains), then one round per threshold step. A gain evaluation is one (document, topic) gain: a full
evaluation of a document counts every topic, a sequence element's conditional gain one.

Execution is by document shards through an executor (``run(function, *args)`` on every shard,
with shard state kept where the shard lives; the shard functions are in :mod:`.shard_rounds`):
:class:`LocalShards` in this process, or :class:`topicbench.core.elda.dask_shards.DaskShards` on a
Dask cluster. The driver keeps the ledger of links; a shard's state is a function of its links,
so a lost shard is rebuilt from the ledger.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Protocol

import numba
import numpy as np

from topicbench.core.constants import DEFAULT_EPSILON, NULL_TOPIC_LOG_SCORE
from topicbench.core.corpus import Corpus
from topicbench.core.elda.generators import Candidates
from topicbench.core.elda.shard_rounds import (
    DEFAULT_MAX_SEQUENCE,
    initialize_shard,
    rebuild_shard,
    split_shards,
    threshold_shard,
)
from topicbench.core.elda.solution import DocumentArrays, Solution, solution_from_links
from topicbench.core.validation import InputError, check_budget, check_candidates_match_corpus, check_epsilon

logger = logging.getLogger(__name__)


class ShardStateLost(RuntimeError):
    """A shard's state is not where its executor kept it (its worker was lost): rebuild from the ledger."""


class WorkersUnavailable(ConnectionError):
    """The executor has no worker left to run on, and none came within its wait: the run stops
    here (no rebuild can help)."""


class ShardExecutor(Protocol):
    """Where :func:`parallel_elda` runs its shard functions.

    ``start`` places the candidates and the shards (each shard's state starts empty); ``run``
    calls ``function(candidates, shard, state, *args, *per_shard_args[i])`` on every shard ``i``,
    keeps the new state where the shard lives and returns the summaries in shard order; ``close``
    releases what ``start`` placed (and what the executor owns). ``n_workers`` is the default
    number of shards. ``run`` raises :class:`ShardStateLost` (or a connection error) when a shard's
    state is gone with its worker; ``start`` places the shards again on the workers there then, or
    raises :class:`WorkersUnavailable` when there are none. Implemented by :class:`LocalShards`
    (this process), :class:`topicbench.core.elda.dask_shards.DaskShards` (a Dask cluster) and
    :class:`Borrowed`.
    """

    n_workers: int

    def start(self, candidates: Candidates, shards: list) -> None: ...

    def run(self, function, *args, per_shard_args=None) -> list: ...

    def close(self) -> None: ...


class LocalShards:
    """Runs shard functions in this process (numba threads inside each call)."""

    n_workers = 1

    def __repr__(self) -> str:
        return "LocalShards()"

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

    def __repr__(self) -> str:
        return f"Borrowed({self.executor!r})"

    def start(self, *args):
        self.executor.start(*args)

    def run(self, *args, **kwargs):
        return self.executor.run(*args, **kwargs)

    def close(self):
        pass


@dataclass
class ParallelRun:
    """Counts of a parallel run (recorded with the solution)."""

    adaptive_rounds: int = 0
    document_evaluations: int = 0
    topic_evaluations: int = 0
    thresholds: list = field(default_factory=list)
    links_per_round: list = field(default_factory=list)
    recovered_shards: int = 0
    shard_seconds: float = 0.0  # the slowest shard's seconds, summed over rounds (the critical path)
    shard_cpu_seconds: float = 0.0  # the same in CPU time: what the critical path costs on idle cores


class Ledger:
    """The driver's record of every accepted link, round by round, in the solution's order.

    A shard's state is a function of its links, so the ledger is all that is needed to rebuild a
    shard that was lost with its worker (:meth:`per_shard`).
    """

    def __init__(self, shards: list, n_documents: int):
        self.n_shards = len(shards)
        self.shard_of_doc = np.empty(n_documents, dtype=np.int64)
        self.local_of_doc = np.empty(n_documents, dtype=np.int64)
        for i, shard in enumerate(shards):
            self.shard_of_doc[shard.documents] = i
            self.local_of_doc[shard.documents] = np.arange(len(shard.documents))
        self.documents, self.topics, self.gains = [], [], []

    def per_shard(self, top_size: int) -> list:
        """(local document ids, topics, top_size) of each shard's links: :func:`rebuild_shard`'s arguments."""
        documents = np.concatenate(self.documents) if self.documents else np.zeros(0, dtype=np.int64)
        topics = np.concatenate(self.topics) if self.topics else np.zeros(0, dtype=np.int64)
        shard = self.shard_of_doc[documents]
        return [
            (self.local_of_doc[documents[shard == i]], topics[shard == i], top_size) for i in range(self.n_shards)
        ]

    def total_gain(self) -> float:
        return float(sum(g.sum() for g in self.gains))

    def links(self) -> np.ndarray:
        return np.column_stack([np.concatenate(self.documents), np.concatenate(self.topics)])

    def record(self, summaries: list, run: ParallelRun, cut=None) -> int:
        """Append a round's accepted links (cut to ``cut = (links left, rng)``); return how many."""
        docs = np.concatenate([s.documents for s in summaries]).astype(np.int64)
        topics = np.concatenate([s.topics for s in summaries]).astype(np.int64)
        gains = np.concatenate([s.gains for s in summaries]).astype(np.float64)
        prefix = np.concatenate([s.prefix_gains for s in summaries]).astype(np.float64)
        run.document_evaluations += sum(s.evaluations for s in summaries)
        run.topic_evaluations += sum(s.topic_evaluations for s in summaries)
        run.shard_seconds += max(s.seconds for s in summaries)
        run.shard_cpu_seconds += max(s.cpu_seconds for s in summaries)
        if cut is not None:
            left, rng = cut
            if len(docs) > left:
                order = _budget_cut(docs, prefix, left, rng)
                docs, topics, gains, prefix = docs[order], topics[order], gains[order], prefix[order]
            order = np.lexsort((docs, -prefix))  # within a round: by prefix gain, then document
            docs, topics, gains = docs[order], topics[order], gains[order]
        self.documents.append(docs)
        self.topics.append(topics)
        self.gains.append(gains)
        run.links_per_round.append(int(len(docs)))
        return int(len(docs))


def _budget_cut(docs: np.ndarray, prefix: np.ndarray, left: int, rng) -> np.ndarray:
    """Positions of the ``left`` links kept when a round's prefixes exceed the budget, in order.

    Keeps the ``left`` highest prefix gains. A document's prefix gains fall along its sequence,
    and ties are broken by one seeded random key per document (then by position), so the kept set
    is prefix-closed per document and exactly ``left`` long. This is the last round: shard states
    may hold the dropped links, unused from here.
    """
    document_key = rng.random(int(docs.max()) + 1)[docs]
    position = np.arange(len(docs))
    order = np.lexsort((position, document_key, -prefix))[:left]
    order.sort()
    return order


class _Rounds:
    """Runs rounds on an executor, rebuilding every shard from the ledger when one is lost.

    A loss during a rebuild (another worker gone) counts as one more recovery of the same round.
    """

    def __init__(self, executor, candidates: Candidates, shards: list, ledger: Ledger, run: ParallelRun,
                 *, top_size: int, max_recoveries: int):
        self.executor, self.candidates, self.shards = executor, candidates, shards
        self.ledger, self.run, self.top_size, self.max_recoveries = ledger, run, top_size, max_recoveries

    def __call__(self, function, *args) -> list:
        for attempt in range(self.max_recoveries + 1):
            try:
                if attempt:
                    self._rebuild()
                return self.executor.run(function, *args)
            except WorkersUnavailable:
                raise  # already says what happened and what to do
            except Exception as error:  # a lost worker or shard: rebuild from the ledger
                round_number = self.run.adaptive_rounds + 1
                if not _is_recoverable(error) or attempt == self.max_recoveries:
                    raise RuntimeError(
                        f"parallel E-LDA failed in round {round_number}: {type(error).__name__}: "
                        f"{error} (after {attempt} recoveries); no partial result is returned"
                    ) from error
                logger.warning("round %d: %s; rebuilding shard states from the ledger", round_number, error)

    def _rebuild(self) -> None:
        """Place the shards again on the workers there now, with states rebuilt from the ledger."""
        self.run.recovered_shards += len(self.shards)
        self.executor.start(self.candidates, self.shards)
        self.executor.run(rebuild_shard, per_shard_args=self.ledger.per_shard(self.top_size))


def _threshold_rounds(rounds: _Rounds, n_documents: int, budget: int, *, epsilon: float, rng, report) -> None:
    """FastInitialize (2 rounds), then one round per threshold until the budget is met."""
    run, ledger = rounds.run, rounds.ledger
    summaries = rounds(initialize_shard, rounds.top_size)
    run.adaptive_rounds += 2
    ledger.record(summaries, run)
    made = n_documents
    max_gain = max(s.max_gain for s in summaries)
    threshold = (1 - epsilon) * max_gain
    while made < budget:
        report(made)
        if max_gain == -math.inf:
            raise InputError("every candidate topic is linked to every document: lower kappa")
        summaries = rounds(threshold_shard, threshold, rounds.top_size)
        run.adaptive_rounds += 1
        run.thresholds.append(float(threshold))
        made += ledger.record(summaries, run, (budget - made, rng))
        max_gain = max(s.max_gain for s in summaries)
        if max_gain < threshold:  # no element reaches t any more: the next threshold level
            threshold = (1 - epsilon) * max_gain
        logger.info("parallel E-LDA round %d: %d of %d links, threshold %.4g", run.adaptive_rounds, made, budget, threshold)


def parallel_elda(
    corpus: Corpus, candidates: Candidates, kappa: float = 2.0, *, epsilon: float = DEFAULT_EPSILON,
    seed: int = 0, executor: ShardExecutor | None = None, n_shards: int | None = None,
    max_sequence: int = DEFAULT_MAX_SEQUENCE, max_recoveries: int = 2, on_progress=None,
) -> Solution:
    """Low-adaptivity E-LDA under the global budget k = floor(kappa D).

    Parameters
    ----------
    corpus, candidates, kappa
        As for :func:`topicbench.core.elda.greedy.fast_greedy`.
    epsilon : float
        Accuracy parameter in (0, 1): thresholds descend by 1 - epsilon; the guarantee is
        1 - 1/e - O(epsilon) and the number of rounds grows like log(gain range) / epsilon.
    seed : int
        Seeds the tie-breaking when a round's prefixes are cut to the budget.
    executor : ShardExecutor, optional
        Where shard work runs (default: :class:`LocalShards`, this process). Its ``start``/``close``
        are called here: wrap an executor in :class:`Borrowed` to keep it open for another run.
    n_shards : int, optional
        Number of document shards (default: the executor's worker count, at least 1).
    max_sequence : int
        Longest per-document sequence in one round (and size of each document's top-gain cache).
    max_recoveries : int
        Rebuilds of lost shard states allowed per round before the run fails (every worker gone
        and none back within the executor's wait fails it at once: :class:`WorkersUnavailable`).
    on_progress : callable, optional
        ``on_progress(links_made, budget, log_posterior)`` after every round.
    """
    budget = _check_inputs(corpus, candidates, kappa, epsilon, max_sequence)
    executor = executor or LocalShards()
    started = time.perf_counter()
    shards = split_shards(DocumentArrays.from_corpus(corpus), n_shards or getattr(executor, "n_workers", 1))
    ledger, run = Ledger(shards, corpus.n_documents), ParallelRun()
    rounds = _Rounds(executor, candidates, shards, ledger, run, top_size=max_sequence, max_recoveries=max_recoveries)
    null_f = NULL_TOPIC_LOG_SCORE * corpus.n_tokens

    def report(made):
        if on_progress is not None:
            on_progress(made, budget, null_f + ledger.total_gain())

    placing = time.perf_counter()
    try:
        executor.start(candidates, shards)
        rounds_started = time.perf_counter()
        _threshold_rounds(
            rounds, corpus.n_documents, budget, epsilon=epsilon, rng=np.random.default_rng(seed), report=report,
        )
    finally:
        executor.close()
    stats = {
        "algorithm": "parallel", "epsilon": float(epsilon), "seed": int(seed), "max_sequence": int(max_sequence),
        "shards": len(shards), "workers": int(getattr(executor, "n_workers", 1)),
        "start_seconds": rounds_started - placing, "rounds_seconds": time.perf_counter() - rounds_started,
        "shard_seconds": run.shard_seconds, "shard_cpu_seconds": run.shard_cpu_seconds,
    }
    solution = _pack_solution(corpus, candidates, kappa, ledger, run, stats, started)
    if on_progress is not None:
        on_progress(solution.n_links, budget, solution.log_posterior)
    return solution


def _check_inputs(corpus, candidates, kappa, epsilon, max_sequence) -> int:
    """Check every input of :func:`parallel_elda` before a shard is placed; return the budget k."""
    check_epsilon(epsilon)
    if max_sequence < 1:
        raise InputError(f"max_sequence must be >= 1, got {max_sequence!r}")
    check_candidates_match_corpus(candidates, corpus)
    return check_budget(kappa, corpus.n_documents, candidates.n_topics)


def _pack_solution(corpus, candidates, kappa, ledger: Ledger, run: ParallelRun, stats: dict, started: float) -> Solution:
    """The ledger's links as a :class:`Solution`, with the run's counts in its stats."""
    stats = {
        **stats,
        "adaptive_rounds": run.adaptive_rounds, "document_evaluations": run.document_evaluations,
        "topic_evaluations": run.topic_evaluations,
        "gain_evaluations": run.document_evaluations * candidates.n_topics + run.topic_evaluations,
        "recovered_shards": run.recovered_shards, "optimise_seconds": time.perf_counter() - started,
    }
    solution = solution_from_links(
        corpus, candidates, ledger.links(), np.concatenate(ledger.gains), kappa=kappa, stats=stats
    )
    solution.stats["thresholds"] = run.thresholds
    solution.stats["links_per_round"] = run.links_per_round
    return solution


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
