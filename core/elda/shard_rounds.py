"""What parallel E-LDA runs on each document shard (the E-LDA paper's algorithms): its state, and the three shard
functions an executor calls, :func:`initialize_shard`, :func:`threshold_shard` and :func:`rebuild_shard`.

A shard's state is a function of its links (:func:`rebuild_shard` rebuilds it from the driver's
ledger), and every function here is the same under :class:`.parallel.LocalShards` and on a Dask
worker (:mod:`.dask_shards`). :func:`warm_up_kernels` loads every kernel they call, once per process.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numba
import numpy as np

from topicbench.core.elda.kernels.document_rounds import threshold_round, top_gains_per_document
from topicbench.core.elda.kernels.first_round import link_per_document
from topicbench.core.elda.kernels.records import DocLinks, ShardRecord
from topicbench.core.constants import NULL_TOPIC_LOG_SCORE
from topicbench.core.corpus import Corpus, segment_ids
from topicbench.core.elda.generators import Candidates, topic_matrix_candidates
from topicbench.core.elda.greedy import first_round
from topicbench.core.elda.solution import DocumentArrays

#: Longest per-document sequence in one round (also the size of each document's top-gain cache).
DEFAULT_MAX_SEQUENCE = 32


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

    @property
    def links(self) -> DocLinks:
        return DocLinks(self.link_indptr, self.link_topics)

    @property
    def record(self) -> ShardRecord:
        """The state as the round kernels take it (rebuilt on each call: a round replaces the links)."""
        return ShardRecord(self.best, self.links, self.top_topics, self.top_gains)


@dataclass
class RoundSummary:
    """What a shard reports after a round (small: sent back to the driver)."""

    documents: np.ndarray  # global ids of accepted links, in per-document sequence order
    topics: np.ndarray
    gains: np.ndarray  # conditional gain of each accepted link
    prefix_gains: np.ndarray  # running minimum of the gains along each document's prefix
    max_gain: float  # largest cached gain left in the shard
    evaluations: int  # full document evaluations made in this round
    topic_evaluations: int = 0  # gains of one topic on one document (the sequences' conditional gains)
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # CPU time of the shard's process in the round (wall time less waiting for a core)


def _threads() -> int:
    return numba.get_num_threads()


def _merge_links(state: ShardState, local_docs: np.ndarray, topics: np.ndarray) -> None:
    """Append links (local doc ids, topics) to the state's per-document CSR of links."""
    n_docs = len(state.link_indptr) - 1
    all_docs = np.concatenate([segment_ids(state.link_indptr), local_docs])
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
    link_per_document(segment_ids(state.link_indptr), state.link_topics, docs.record, state.best, candidates.rows)
    state.top_topics, state.top_gains, _ = top_gains_per_document(
        docs.record, state.best, candidates.rows, candidates.columns, state.links, top_size, _threads()
    )
    state.evaluations = n_docs
    return state


def initialize_shard(candidates: Candidates, shard: Shard, state, top_size: int):
    """FastInitialize on a shard (2 rounds): link each document's best topic, cache its top gains."""
    started, cpu_started = time.perf_counter(), time.process_time()
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
        cpu_seconds=time.process_time() - cpu_started,
    )
    return state, summary


def threshold_shard(candidates: Candidates, shard: Shard, state: ShardState, threshold: float, max_sequence: int):
    """One adaptive round on a shard at ``threshold`` (see :func:`._kernels.document_rounds.threshold_round`)."""
    started, cpu_started = time.perf_counter(), time.process_time()
    docs = shard.docs
    accepted_topics, accepted_gains, evaluations, topic_evaluations = threshold_round(
        threshold, max_sequence, docs.record, candidates.rows, candidates.columns, state.record, _threads()
    )
    local_docs, positions = np.nonzero(accepted_topics >= 0)  # row-major: per document, in order
    topics = accepted_topics[local_docs, positions]
    gains = accepted_gains[local_docs, positions]
    prefix = np.minimum.accumulate(np.where(accepted_topics >= 0, accepted_gains, np.inf), axis=1)
    _merge_links(state, local_docs, topics)
    state.evaluations += int(evaluations.sum()) + int(topic_evaluations.sum())
    summary = RoundSummary(
        documents=shard.documents[local_docs],
        topics=topics,
        gains=gains,
        prefix_gains=prefix[local_docs, positions],
        max_gain=float(state.top_gains[:, 0].max()) if docs.n_documents else -math.inf,
        evaluations=int(evaluations.sum()),
        topic_evaluations=int(topic_evaluations.sum()),
        seconds=time.perf_counter() - started,
        cpu_seconds=time.process_time() - cpu_started,
    )
    return state, summary


def rebuild_shard(candidates: Candidates, shard: Shard, state, local_docs, topics, top_size: int):
    """Recover a lost shard state from the driver's ledger of its links."""
    return _state_from_links(candidates, shard, local_docs, topics, top_size), None


#: How many times this process has warmed its kernels up (at most once; read by tests).
_KERNEL_WARM_UPS = 0


def warm_up_kernels(top_size: int = DEFAULT_MAX_SEQUENCE) -> float:
    """Load every kernel a shard round calls, once per process; return the seconds it took.

    Runs each shard function on a built-in three-document instance whose arrays have the dtypes
    and layouts of real shards, so numba loads each kernel from its on-disk cache (compiling and
    caching it if absent) and starts its thread pool here instead of inside the first timed
    round. Later calls return 0 at once. Run it on every worker in parallel, before the rounds
    (:class:`topicbench.core.elda.dask_shards.DaskShards` does, as soon as its cluster is up).
    """
    global _KERNEL_WARM_UPS
    if _KERNEL_WARM_UPS:
        return 0.0
    started = time.perf_counter()
    tokens = np.array([0, 1, 2, 3, 1, 2, 3, 0, 3, 3, 0, 1, 2], dtype=np.int32)
    corpus = Corpus(vocabulary=("a", "b", "c", "d"), token_ids=tokens, doc_offsets=np.array([0, 4, 8, 13]))
    log_phi = np.log(np.array([[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.4, 0.1]]))
    candidates = topic_matrix_candidates(log_phi, vocabulary=corpus.vocabulary)
    shard = split_shards(DocumentArrays.from_corpus(corpus), 1)[0]
    state, summary = initialize_shard(candidates, shard, None, top_size)
    threshold_shard(candidates, shard, state, summary.max_gain, top_size)
    rebuild_shard(candidates, shard, None, summary.documents, summary.topics, top_size)
    _KERNEL_WARM_UPS += 1
    return time.perf_counter() - started


def split_shards(docs: DocumentArrays, n_shards: int) -> list[Shard]:
    """Documents dealt into ``n_shards`` shards, longest first, in snake order (0, 1, .., n-1,
    n-1, .., 0, 0, ..), each shard keeping its documents in id order.

    Corpora are often ordered (by class, source or date), so contiguous ranges can differ a lot in
    work; dealing documents out spreads every round's active documents evenly, and dealing them by
    length gives each shard the same mix of long and short ones (a document's evaluation costs in
    proportion to its words). The result does not depend on the split: each round's links are
    ordered by prefix gain, then document id.
    """
    n_shards = max(1, min(n_shards, docs.n_documents))
    by_length = np.lexsort((np.arange(docs.n_documents), -np.diff(docs.indptr)))
    lane = np.arange(docs.n_documents) % (2 * n_shards)
    lane = np.where(lane < n_shards, lane, 2 * n_shards - 1 - lane)
    shards = []
    for i in range(n_shards):
        documents = np.sort(by_length[lane == i]).astype(np.int64)
        shards.append(Shard(documents=documents, docs=docs.take(documents)))
    return shards
