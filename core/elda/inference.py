"""Independence-preserving (out-of-sample) inference and effect estimation (the E-LDA paper's algorithms, last part).

To study topics as treatments, each document must get its topics on its own (no interference
between units, SUTVA): topics are frozen on a training split, then every held-out document runs
greedy alone, with a per-document budget or a gain threshold. Greedy is then within 1 - 1/e for
each document, and a document's topics depend only on its own words and the frozen topics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp
from scipy import stats

from topicbench.core.elda.kernels.document_rounds import independent_links
from topicbench.core.constants import NULL_TOPIC_LOG_SCORE
from topicbench.core.corpus import Corpus
from topicbench.core.elda.generators import Candidates
from topicbench.core.elda.solution import DocumentArrays, Solution, solution_from_links
from topicbench.core.validation import InputError, check_candidates_match_corpus


def freeze_topics(solution: Solution) -> Candidates:
    """The candidates a solution used (most documents first), as a fixed topic set."""
    return select_topics(solution.candidates, solution.topics_used)


def select_topics(candidates: Candidates, topics) -> Candidates:
    """A subset of candidate topics, in the given order (labels and keywords kept)."""
    topics = np.asarray(topics, dtype=np.int64)
    if len(topics) == 0:
        raise InputError("no topics to freeze: the selection is empty")
    rows = sp.csr_matrix(
        (candidates.values, candidates.indices, candidates.indptr),
        shape=(candidates.n_topics, candidates.n_words),
    )[topics]
    rows.sort_indices()
    return Candidates(
        row_constants=candidates.row_constants[topics].copy(),
        indptr=rows.indptr.astype(np.int64),
        indices=rows.indices.astype(np.int32),
        values=rows.data.astype(np.float64),
        n_words=candidates.n_words,
        labels=tuple(candidates.labels[t] for t in topics),
        keywords=tuple(candidates.keywords[t] for t in topics) if candidates.keywords is not None else None,
        generator=candidates.generator,
        settings={**candidates.settings, "frozen_topics": int(len(topics))},
    )


def infer_topics(
    corpus: Corpus,
    candidates: Candidates,
    *,
    topics_per_document: int | None = None,
    min_gain: float | None = None,
) -> Solution:
    """Assign frozen topics to each document independently.

    Every document gets its best topic, then more while a topic's gain is at least ``min_gain``
    (default: no threshold), up to ``topics_per_document`` (default: no cap; at least one of the
    two must be given). Returns a :class:`Solution` whose links are grouped by document.
    """
    if topics_per_document is None and min_gain is None:
        raise InputError("give topics_per_document, min_gain, or both")
    if topics_per_document is not None and topics_per_document < 1:
        raise InputError(f"topics_per_document must be >= 1, got {topics_per_document}")
    if min_gain is not None and not (math.isfinite(min_gain) and min_gain >= 0):
        raise InputError(f"min_gain must be a finite number >= 0, got {min_gain!r}")
    check_candidates_match_corpus(
        candidates, corpus, name="the frozen topics", fix="held-out documents must use the training vocabulary"
    )
    cap = min(topics_per_document or candidates.n_topics, candidates.n_topics)
    docs = DocumentArrays.from_corpus(corpus)
    topics, gains = independent_links(
        docs.record, candidates.rows, candidates.columns, cap, float(min_gain if min_gain is not None else -np.inf), NULL_TOPIC_LOG_SCORE,
        numba.get_num_threads(),
    )
    documents, positions = np.nonzero(topics >= 0)
    links = np.column_stack([documents, topics[documents, positions]])
    return solution_from_links(
        corpus, candidates, links, gains[documents, positions],
        kappa=max(1.0, len(links) / corpus.n_documents),
        stats={"algorithm": "independent", "topics_per_document": topics_per_document, "min_gain": min_gain},
    )


def topic_indicator(solution: Solution, topic: int) -> np.ndarray:
    """1.0 for documents linked to ``topic``, else 0.0."""
    treated = np.zeros(solution.corpus.n_documents)
    treated[solution.links[solution.links[:, 1] == topic, 0]] = 1.0
    return treated


@dataclass(frozen=True)
class Effect:
    """An OLS coefficient with its heteroskedasticity-robust (HC1) standard error."""

    estimate: float
    standard_error: float
    ci_low: float
    ci_high: float
    n: int
    level: float


def estimate_effect(outcome, treatment, covariates=None, *, level: float = 0.95) -> Effect:
    """Effect of a binary treatment by OLS of ``outcome`` on [1, treatment, covariates], with an
    HC1 robust standard error and a normal-approximation confidence interval."""
    y = np.asarray(outcome, dtype=np.float64)
    t = np.asarray(treatment, dtype=np.float64)
    columns = [np.ones_like(y), t]
    if covariates is not None:
        covariates = np.asarray(covariates, dtype=np.float64)
        columns += list(covariates.T if covariates.ndim == 2 else [covariates])
    x = np.column_stack(columns)
    n, p = x.shape
    if n <= p:
        raise InputError(f"{n} observations are too few for {p} coefficients")
    if t.min() == t.max():
        raise InputError("the treatment does not vary: every document is treated, or none is")
    xtx_inv = np.linalg.inv(x.T @ x)
    beta = xtx_inv @ x.T @ y
    residual = y - x @ beta
    meat = (x * residual[:, None] ** 2).T @ x
    covariance = xtx_inv @ meat @ xtx_inv * n / (n - p)
    se = float(math.sqrt(covariance[1, 1]))
    z = float(stats.norm.ppf(0.5 + level / 2))
    return Effect(float(beta[1]), se, float(beta[1] - z * se), float(beta[1] + z * se), n, level)
