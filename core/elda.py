"""Exact E-LDA: FastInitialize + FastGreedy with a per-document heap (spec §3).

``fast_greedy(corpus, candidates, kappa)`` validates, runs the numba kernels and packs a
:class:`Solution`; :class:`ELDA` is the estimator users call.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numba
import numpy as np

from . import _kernels
from .config import DEFAULT_TOP_WORDS, GENERATORS, NULL_TOPIC_LOG_SCORE, OUTPUT_TOP_WORDS
from .corpus import Corpus
from .generators import Candidates, keyword_candidates
from .output import TopicModelOutput, topic_document_from_token_topics
from .validation import InputError, check_budget, check_epsilon, check_kappa

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



@dataclass(frozen=True, eq=False)
class DocumentArrays:
    """A corpus as the kernels read it: distinct words per document with their counts."""

    indptr: np.ndarray
    words: np.ndarray
    counts: np.ndarray

    @property
    def n_documents(self) -> int:
        return len(self.indptr) - 1

    def doc_term(self, n_words: int):
        """The document-term count matrix (float64 CSR)."""
        import scipy.sparse as sp

        return sp.csr_matrix((self.counts, self.words, self.indptr), shape=(self.n_documents, n_words))

    def take(self, documents: np.ndarray) -> "DocumentArrays":
        """The given documents, in the given order."""
        lengths = np.diff(self.indptr)[documents]
        indptr = np.zeros(len(documents) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        positions = np.repeat(self.indptr[documents] - indptr[:-1], lengths) + np.arange(indptr[-1])
        return DocumentArrays(indptr=indptr, words=self.words[positions], counts=self.counts[positions])

    @classmethod
    def from_corpus(cls, corpus: Corpus) -> "DocumentArrays":
        doc_term = corpus.doc_term
        return cls(
            indptr=doc_term.indptr.astype(np.int64),
            words=doc_term.indices.astype(np.int64),
            counts=doc_term.data.astype(np.float64),
        )


@dataclass(frozen=True, eq=False)
class Solution:
    """An E-LDA solution: document-topic links in the order they were chosen.

    Attributes
    ----------
    links : ndarray of int64, shape (k, 2)
        (document, topic) pairs in selection order. The first floor(kappa' D) links are the
        greedy solution for every kappa' <= kappa (spec §3).
    link_gains : ndarray, shape (k,)
        Gain of each link when it was made.
    objective_trace : ndarray, shape (k,)
        F after each link.
    log_posterior : float
        F of the final solution, recomputed from the links alone.
    null_log_posterior : float
        F of the empty solution (every token at the null topic).
    word_topics : ndarray of int64, shape (n (document, distinct word) pairs,)
        Best linked topic of each distinct word of each document (CSR order of the corpus).
    token_topics : ndarray of int64, shape (n_tokens,)
        Each token's topic: argmax over its document's links of L[topic, word], ties lowest id.
    """

    corpus: Corpus
    candidates: Candidates
    kappa: float
    budget: int
    links: np.ndarray
    link_gains: np.ndarray
    objective_trace: np.ndarray
    log_posterior: float
    null_log_posterior: float
    word_topics: np.ndarray
    stats: dict = field(default_factory=dict)

    @property
    def n_links(self) -> int:
        return len(self.links)

    @cached_property
    def doc_topics(self) -> list:
        """Topics of each document, in the order they were linked."""
        order = np.argsort(self.links[:, 0], kind="stable")
        bounds = np.searchsorted(self.links[order, 0], np.arange(self.corpus.n_documents + 1))
        topics = self.links[order, 1]
        return [topics[bounds[d] : bounds[d + 1]] for d in range(self.corpus.n_documents)]

    @cached_property
    def token_topics(self) -> np.ndarray:
        corpus = self.corpus
        doc_term = corpus.doc_term
        n_words = np.int64(corpus.n_words)
        slot_doc = np.repeat(np.arange(corpus.n_documents, dtype=np.int64), np.diff(doc_term.indptr))
        slot_keys = slot_doc * n_words + doc_term.indices
        token_doc = np.repeat(np.arange(corpus.n_documents, dtype=np.int64), np.diff(corpus.doc_offsets))
        token_keys = token_doc * n_words + corpus.token_ids
        return self.word_topics[np.searchsorted(slot_keys, token_keys)]

    @cached_property
    def topics_used(self) -> np.ndarray:
        """Distinct topics with at least one link, by number of documents (most first)."""
        topics, documents = np.unique(self.links[:, 1], return_counts=True)
        return topics[np.lexsort((topics, -documents))]

    def topic_table(self, top_n: int = DEFAULT_TOP_WORDS) -> list[dict]:
        """One record per topic used: label, keywords, top words, documents and tokens."""
        documents = np.bincount(self.links[:, 1], minlength=self.candidates.n_topics)
        tokens = np.bincount(self.token_topics[self.token_topics >= 0], minlength=self.candidates.n_topics)
        vocabulary = self.corpus.vocabulary
        keywords = self.candidates.keywords
        return [
            {
                "topic": int(t),
                "label": self.candidates.labels[t],
                "keywords": [vocabulary[w] for w in keywords[t]] if keywords is not None else [],
                "top_words": self.candidates.top_words(int(t), top_n, vocabulary),
                "documents": int(documents[t]),
                "tokens": int(tokens[t]),
            }
            for t in self.topics_used
        ]

    def prefix(self, kappa: float) -> "Solution":
        """The greedy solution for a smaller budget kappa' <= kappa: the first floor(kappa' D) links."""
        kappa = check_kappa(kappa)
        if kappa > self.kappa:
            raise InputError(f"kappa' = {kappa} is larger than the solution's kappa = {self.kappa}")
        budget = min(check_budget(kappa, self.corpus.n_documents, self.candidates.n_topics), self.n_links)
        return solution_from_links(
            self.corpus, self.candidates, self.links[:budget], self.link_gains[:budget],
            kappa=kappa, stats={**self.stats, "prefix_of_kappa": self.kappa},
        )

    def summary(self, top_n: int = DEFAULT_TOP_WORDS) -> dict:
        """The JSON summary the CLI writes (``--json``)."""
        return {
            "algorithm": self.stats.get("algorithm", "greedy"),
            "adaptive_rounds": int(self.stats.get("adaptive_rounds", 0)),
            "gain_evaluations": int(self.stats.get("gain_evaluations", 0)),
            "log_posterior": float(self.log_posterior),
            "null_log_posterior": float(self.null_log_posterior),
            "num_links": int(self.n_links),
            "num_documents": int(self.corpus.n_documents),
            "num_tokens": int(self.corpus.n_tokens),
            "num_candidates": int(self.candidates.n_topics),
            "num_topics_used": int(len(self.topics_used)),
            "kappa": float(self.kappa),
            "budget": int(self.budget),
            "generator": self.candidates.generator,
            "corpus": self.corpus.summary(),
            "preprocessing": self.corpus.preprocessing,
            "candidate_settings": self.candidates.settings,
            "stats": self.stats,
            "topics": self.topic_table(top_n),
        }

    def to_json(self, path, *, top_n: int = DEFAULT_TOP_WORDS, include_links: bool = True) -> Path:
        """Write the summary (and, by default, the ordered links with gains and the trace)."""
        data = self.summary(top_n)
        if include_links:
            data["links"] = self.links.tolist()
            data["link_gains"] = self.link_gains.tolist()
            data["objective_trace"] = self.objective_trace.tolist()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return path

    def to_output(
        self, *, model: str = "elda", top_n: int = OUTPUT_TOP_WORDS, settings: dict | None = None,
        seed: int | None = None, fit_seconds: float = 0.0, peak_memory_mb: float | None = None,
    ) -> TopicModelOutput:
        """The shared model output: the topics used (most documents first) as rows.

        topic-word rows are softmax(L) of the selected candidates; a document's topic shares are
        the shares of its tokens assigned to each topic.
        """
        used = self.topics_used
        remap = np.full(self.candidates.n_topics + 1, -1, dtype=np.int64)  # last slot: token at -1
        remap[used] = np.arange(len(used))
        token_topics = remap[self.token_topics]
        vocabulary = self.corpus.vocabulary
        return TopicModelOutput(
            model=model,
            vocabulary=tuple(vocabulary),
            topics=[self.candidates.top_words(int(t), top_n, vocabulary) for t in used],
            topic_word_matrix=self.candidates.probabilities(used),
            topic_document_matrix=topic_document_from_token_topics(
                token_topics, self.corpus.doc_offsets, len(used)
            ),
            token_topics=token_topics,
            topic_labels=[self.candidates.labels[t] for t in used],
            settings=dict(settings or {}),
            seed=seed,
            fit_seconds=fit_seconds,
            peak_memory_mb=peak_memory_mb,
            extra={
                "log_posterior": float(self.log_posterior),
                "null_log_posterior": float(self.null_log_posterior),
                "budget": int(self.budget),
                "kappa": float(self.kappa),
                "num_candidates": int(self.candidates.n_topics),
                **{k: v for k, v in self.stats.items() if isinstance(v, (int, float, str))},
            },
        )

    def to_parquet(self, folder) -> Path:
        """Write ``links.parquet``, ``token_topics.parquet`` and ``topics.parquet`` to a folder."""
        import pandas as pd

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        labels = np.asarray(self.candidates.labels, dtype=object)
        pd.DataFrame(
            {
                "order": np.arange(self.n_links),
                "document": self.links[:, 0],
                "topic": self.links[:, 1],
                "label": labels[self.links[:, 1]],
                "gain": self.link_gains,
                "log_posterior": self.objective_trace,
            }
        ).to_parquet(folder / "links.parquet", index=False)
        token_doc = np.repeat(np.arange(self.corpus.n_documents), np.diff(self.corpus.doc_offsets))
        pd.DataFrame(
            {"document": token_doc, "word": self.corpus.token_ids, "topic": self.token_topics}
        ).to_parquet(folder / "token_topics.parquet", index=False)
        table = pd.DataFrame(self.topic_table())
        table.to_parquet(folder / "topics.parquet", index=False)
        return folder


def read_links(folder) -> tuple[np.ndarray, np.ndarray]:
    """Read back (links, gains) written by :meth:`Solution.to_parquet`."""
    import pandas as pd

    frame = pd.read_parquet(Path(folder) / "links.parquet").sort_values("order")
    return frame[["document", "topic"]].to_numpy(dtype=np.int64), frame["gain"].to_numpy()


def solution_from_links(
    corpus: Corpus, candidates: Candidates, links, link_gains, *, kappa: float, stats=None,
) -> Solution:
    """Pack ordered links into a :class:`Solution`, recomputing F and token topics from them."""
    links = np.asarray(links, dtype=np.int64).reshape(-1, 2)
    link_gains = np.asarray(link_gains, dtype=np.float64)
    docs = DocumentArrays.from_corpus(corpus)
    order = np.argsort(links[:, 0], kind="stable")
    doc_link_indptr = np.searchsorted(links[order, 0], np.arange(corpus.n_documents + 1)).astype(np.int64)
    word_topics, word_scores = _kernels.assign_words(
        docs.indptr, docs.words, doc_link_indptr, links[order, 1].copy(),
        candidates.row_constants, candidates.indptr, candidates.indices, candidates.values,
        NULL_TOPIC_LOG_SCORE,
    )
    null_log_posterior = NULL_TOPIC_LOG_SCORE * corpus.n_tokens
    return Solution(
        corpus=corpus,
        candidates=candidates,
        kappa=float(kappa),
        budget=len(links),
        links=links,
        link_gains=link_gains,
        objective_trace=null_log_posterior + np.cumsum(link_gains),
        log_posterior=float(np.dot(docs.counts, word_scores)),
        null_log_posterior=float(null_log_posterior),
        word_topics=word_topics,
        stats=dict(stats or {}),
    )


def first_round(docs: DocumentArrays, candidates: Candidates, best: np.ndarray):
    """FastInitialize's first round: every document's best topic on the empty solution.

    Returns (topics, gains, entries read). ``best`` holds every token at the null score.
    """
    col_indptr, col_topics, col_values = candidates.columns
    n_topics, n_docs, n_words = candidates.n_topics, docs.n_documents, candidates.n_words
    doc_frequency = np.bincount(docs.words, minlength=n_words)
    cost = doc_frequency * np.diff(col_indptr)
    dense_words = np.nonzero(cost * DENSE_ADVANTAGE >= n_topics * n_docs)[0]
    dense_words = dense_words[np.argsort(-cost[dense_words], kind="stable")][:MAX_DENSE_WORDS]
    is_dense_word = np.zeros(n_words, dtype=np.bool_)
    is_dense_word[dense_words] = True
    if len(dense_words):
        dense_scores = _kernels.dense_first_round_scores(
            col_indptr, col_topics, col_values, candidates.row_constants, dense_words, NULL_TOPIC_LOG_SCORE
        )
        dense_counts = docs.doc_term(n_words)[:, dense_words].tocsr()
    block = max(1, DENSE_BLOCK_BYTES // (8 * n_topics))
    topics, gains, entries = [], [], 0
    for d0 in range(0, n_docs, block):
        d1 = min(n_docs, d0 + block)
        if len(dense_words):
            dense_gains = np.ascontiguousarray(dense_counts[d0:d1].toarray() @ dense_scores.T)
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
    logger.debug("first round: %d of %d words through BLAS", len(dense_words), n_words)
    return np.concatenate(topics), np.concatenate(gains), entries


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
    """
    if candidates.n_words != corpus.n_words:
        raise InputError(
            f"the candidates cover {candidates.n_words} words but the corpus vocabulary has "
            f"{corpus.n_words}: build candidates over the corpus vocabulary"
        )
    if corpus.n_tokens == 0:
        raise InputError(f"corpus {corpus.name!r} has no tokens")
    n_docs = corpus.n_documents
    budget = check_budget(kappa, n_docs, candidates.n_topics)
    started = time.perf_counter()
    docs = DocumentArrays.from_corpus(corpus)
    col_indptr, col_topics, col_values = candidates.columns
    constants_desc = candidates.constants_descending
    rows = (candidates.row_constants, candidates.indptr, candidates.indices, candidates.values)
    scan = (candidates.row_constants, constants_desc, col_indptr, col_topics, col_values)

    best = np.full(len(docs.words), NULL_TOPIC_LOG_SCORE)
    doc_head = np.full(n_docs, -1, dtype=np.int64)
    link_doc = np.empty(budget, dtype=np.int64)
    link_topic = np.empty(budget, dtype=np.int64)
    link_next = np.full(budget, -1, dtype=np.int64)
    link_gain = np.empty(budget, dtype=np.float64)
    all_docs = np.arange(n_docs, dtype=np.int64)

    # FastInitialize, round 1: every document's best topic on the empty solution, linked.
    first, first_gain, entries = first_round(docs, candidates, best)
    _kernels.link_per_document(all_docs, first, docs.indptr, docs.words, best, *rows)
    link_doc[:n_docs], link_topic[:n_docs], link_gain[:n_docs] = all_docs, first, first_gain
    doc_head[:] = all_docs
    entries_read = int(entries)
    evaluations = n_docs
    made = n_docs
    null_f = NULL_TOPIC_LOG_SCORE * corpus.n_tokens
    if on_progress is not None:
        on_progress(made, budget, null_f + float(first_gain.sum()))

    if budget > n_docs:
        # FastInitialize, round 2: every document's best second topic seeds the heap.
        second, second_gain, entries = _kernels.best_topic_per_document(
            all_docs, docs.indptr, docs.words, docs.counts, best, candidates.n_topics, *scan,
            doc_head, link_topic, link_next, numba.get_num_threads(),
        )
        entries_read += int(entries.sum())
        evaluations += n_docs
        heap_gain, heap_doc, heap_topic = second_gain.copy(), all_docs.copy(), second.copy()
        _kernels.heapify(heap_gain, heap_doc, heap_topic, n_docs)
        while made < budget:
            steps = min(PROGRESS_EVERY, budget - made)
            done, entries = _kernels.greedy_steps(
                steps, heap_gain, heap_doc, heap_topic, n_docs,
                docs.indptr, docs.words, docs.counts, best, candidates.n_topics, *scan, *rows[1:],
                doc_head, link_topic, link_next, link_doc, link_gain, made,
            )
            made += done
            entries_read += int(entries)
            evaluations += done
            if done < steps:
                raise InputError("every candidate topic is linked to every document: lower kappa")
            if on_progress is not None:
                on_progress(made, budget, null_f + float(link_gain[:made].sum()))
            logger.info("E-LDA greedy: %d of %d links", made, budget)

    optimise_seconds = time.perf_counter() - started
    links = np.column_stack([link_doc, link_topic])
    return solution_from_links(
        corpus, candidates, links, link_gain, kappa=check_kappa(kappa),
        stats={
            "algorithm": "greedy",
            "optimise_seconds": optimise_seconds,
            "gain_evaluations": int(evaluations) * int(candidates.n_topics),
            "document_evaluations": int(evaluations),
            "entries_read": entries_read,
            "adaptive_rounds": 2 + max(budget - n_docs, 0),
        },
    )


ALGORITHMS = ("greedy", "parallel")


class ELDA:
    """E-LDA as an estimator (scikit-learn style): keyword-anchored topics with a 1 - 1/e guarantee.

    Parameters
    ----------
    kappa : float, default 2.0
        Mean number of topics per document, kappa in the paper (spec §1); budget k = floor(kappa D).
    generator : {"raw_umass", "exp_umass", "cooccurrence"}, default "raw_umass"
        Keyword topic generator (spec §2), used when ``fit`` gets no candidates.
    top_words : int, default 10
        Words reported per topic.
    algorithm : {"greedy", "parallel"}, default "greedy"
        Exact FastGreedy, or the low-adaptivity parallel algorithm (:mod:`.parallel`) on Dask.
    epsilon : float, default 0.1
        Accuracy parameter of the parallel algorithm.
    seed : int, default 0
        Seed of the parallel algorithm (greedy is deterministic).
    workers : int or None
        Workers of the local Dask cluster started for the parallel algorithm (default: cores).
    scheduler : str or None
        Address of an existing Dask scheduler to run on instead of a local cluster.

    Attributes
    ----------
    candidates_ : Candidates
    solution_ : Solution
    links_ : ndarray (k, 2)
    log_posterior_ : float
    objective_trace_ : ndarray (k,)
    doc_topics_ : list of ndarray
    token_topics_ : ndarray (n_tokens,)
    budget_ : int
        The resolved budget k.
    """

    def __init__(
        self, kappa: float = 2.0, *, generator: str = "raw_umass", top_words: int = DEFAULT_TOP_WORDS,
        algorithm: str = "greedy", epsilon: float = 0.1, seed: int = 0,
        workers: int | None = None, scheduler: str | None = None,
    ):
        self.kappa = kappa
        self.generator = generator
        self.top_words = top_words
        self.algorithm = algorithm
        self.epsilon = epsilon
        self.seed = seed
        self.workers = workers
        self.scheduler = scheduler

    def get_params(self, deep: bool = True) -> dict:
        return {
            "kappa": self.kappa, "generator": self.generator, "top_words": self.top_words,
            "algorithm": self.algorithm, "epsilon": self.epsilon, "seed": self.seed,
            "workers": self.workers, "scheduler": self.scheduler,
        }

    def set_params(self, **params) -> "ELDA":
        for name, value in params.items():
            if name not in self.get_params():
                raise InputError(f"ELDA has no parameter {name!r}; parameters: {sorted(self.get_params())}")
            setattr(self, name, value)
        return self

    def fit(self, corpus: Corpus, candidates: Candidates | None = None, *, on_progress=None) -> "ELDA":
        check_kappa(self.kappa)
        if self.algorithm not in ALGORITHMS:
            raise InputError(f"unknown algorithm {self.algorithm!r}; available: {', '.join(ALGORITHMS)}")
        if self.algorithm == "parallel":  # checked before a cluster starts or candidates are built
            check_epsilon(self.epsilon)
            if self.workers is not None and (isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1):
                raise InputError(f"workers must be an integer >= 1, got {self.workers!r}")
        if candidates is None:
            if self.generator not in GENERATORS:
                raise InputError(f"unknown generator {self.generator!r}; available: {', '.join(GENERATORS)}")
            started = time.perf_counter()
            candidates = keyword_candidates(corpus, self.generator)
            generate_seconds = time.perf_counter() - started
        else:
            generate_seconds = 0.0
        if self.algorithm == "greedy":
            solution = fast_greedy(corpus, candidates, self.kappa, on_progress=on_progress)
        else:
            from .distributed import DaskShards
            from .parallel import parallel_elda

            executor = DaskShards(self.scheduler, n_workers=self.workers)
            solution = parallel_elda(
                corpus, candidates, self.kappa, epsilon=self.epsilon, seed=self.seed,
                executor=executor, on_progress=on_progress,
            )
        solution.stats["generate_seconds"] = generate_seconds
        self.candidates_ = candidates
        self.solution_ = solution
        self.links_ = solution.links
        self.log_posterior_ = solution.log_posterior
        self.objective_trace_ = solution.objective_trace
        self.doc_topics_ = solution.doc_topics
        self.token_topics_ = solution.token_topics
        self.budget_ = solution.budget
        return self
