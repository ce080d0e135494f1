r"""Posterior quality with the topics held fixed (spec §4, Experiment Set 1).

For a model with topic-word matrix φ (K × V) and a topic z_i for every token w_i of the corpus,

    L(z) = Σ_i log φ_{z_i}[w_i]

(the LDA log posterior in the flat-prior limit that E-LDA maximises, spec §1; a token without a
topic, z_i = −1, scores the null topic β = log 1e-100). Three assignments are compared:

- **own**: the model's own token assignment;
- **RandK**: the own assignment with topic labels shifted cyclically, z_i → (z_i + r) mod K, for a
  random offset r ∈ {1, …, K−1} (r = 0 would be the own assignment), averaged over 30 draws;
- **E-LDA**: greedy E-LDA on the model's topics (candidates ``log φ``) with budget
  k = D · κ, κ = mean number of distinct topics per document in the own assignment; its
  objective F is L of E-LDA's assignment.

The paper reports RandK far below own, and E-LDA above own in every run.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from topicbench.core.constants import NULL_TOPIC_LOG_SCORE, PROBABILITY_FLOOR, RANDK_DRAWS
from ..corpus import Corpus
from ..topic_word import ConstantPlusSparse
from ..validation import InputError, check_topic_matrix

if TYPE_CHECKING:
    from topicbench.core.elda.solution import Solution

logger = logging.getLogger(__name__)


def log_topic_word(topic_word_matrix):
    """log φ with probabilities floored at ``PROBABILITY_FLOOR`` (so log φ >= β, spec §1); a
    :class:`ConstantPlusSparse` φ gives a log φ of the same form (no dense matrix is made)."""
    if isinstance(topic_word_matrix, ConstantPlusSparse):
        if not topic_word_matrix.all_finite() or topic_word_matrix.min() < 0:
            raise InputError("the topic-word matrix holds negative, NaN or infinite values")
        return topic_word_matrix.map(lambda p: np.log(np.maximum(p, PROBABILITY_FLOOR)))
    phi = np.asarray(topic_word_matrix, dtype=np.float64)
    if phi.ndim != 2:
        raise InputError(f"the topic-word matrix must be 2-d (topics x words), got shape {phi.shape}")
    if not np.all(np.isfinite(phi)) or (phi < 0).any():
        raise InputError("the topic-word matrix holds negative, NaN or infinite values")
    return np.log(np.maximum(phi, PROBABILITY_FLOOR))


def _check_log_phi(log_phi, n_words: int):
    """A dense log φ through :func:`check_topic_matrix`; a constant-plus-sparse one by the same rules."""
    if not isinstance(log_phi, ConstantPlusSparse):
        return check_topic_matrix(log_phi, n_words, name="log_phi")
    if log_phi.shape[0] == 0:
        raise InputError("log_phi has no topics (0 rows)")
    if log_phi.shape[1] != n_words:
        raise InputError(
            f"log_phi has {log_phi.shape[1]} columns but the corpus vocabulary has {n_words} words: "
            "the topic matrix must use the corpus vocabulary, in its order"
        )
    if not log_phi.all_finite():
        raise InputError("log_phi has NaN or infinite values; give log-probabilities with a finite floor")
    return log_phi


def check_token_topics(corpus: Corpus, log_phi, token_topics) -> tuple:
    """Check (log φ, z) against the corpus: K × V with V = the corpus vocabulary, one z per token."""
    log_phi = _check_log_phi(log_phi, corpus.n_words)
    if token_topics is None:
        raise InputError("this metric needs token assignments: the model output has no token_topics")
    token_topics = np.asarray(token_topics)
    if token_topics.ndim != 1 or len(token_topics) != corpus.n_tokens:
        raise InputError(
            f"{len(token_topics)} token topics for a corpus of {corpus.n_tokens} tokens: the "
            "assignment must give one topic per token of the corpus, in corpus order"
        )
    if not np.issubdtype(token_topics.dtype, np.integer):
        raise InputError(f"token topics must be integers, got {token_topics.dtype}")
    token_topics = token_topics.astype(np.int64)
    n_topics = log_phi.shape[0]
    if len(token_topics) and (token_topics.min() < -1 or token_topics.max() >= n_topics):
        raise InputError(f"token topics must lie in [-1, {n_topics - 1}] (-1: no topic)")
    return log_phi, token_topics


def assignment_log_likelihood(corpus: Corpus, log_phi, token_topics) -> float:
    """L(z) = Σ_i log φ_{z_i}[w_i]; tokens with z_i = −1 score β = log 1e-100."""
    log_phi, token_topics = check_token_topics(corpus, log_phi, token_topics)
    return _assignment_log_likelihood(log_phi, corpus.token_ids, token_topics)


def _assignment_log_likelihood(log_phi, words, topics) -> float:
    assigned = topics >= 0
    scores = np.full(len(words), NULL_TOPIC_LOG_SCORE)
    if isinstance(log_phi, ConstantPlusSparse):
        scores[assigned] = log_phi.entries(topics[assigned], words[assigned])
    else:
        scores[assigned] = log_phi[topics[assigned], words[assigned]]
    return float(scores.sum())


@dataclass(frozen=True)
class RandK:
    """RandK draws: each draw's offset r and L of the shifted assignment; ``mean`` over draws."""

    offsets: np.ndarray
    log_likelihoods: np.ndarray

    @property
    def mean(self) -> float:
        return float(self.log_likelihoods.mean())


def randk_log_likelihood(corpus: Corpus, log_phi, token_topics, rng: np.random.Generator, *,
                         draws: int = RANDK_DRAWS) -> RandK:
    """L of the own assignment with labels shifted cyclically by random offsets (spec §4).

    Parameters
    ----------
    corpus : Corpus
    log_phi : ndarray (K, V)
    token_topics : ndarray of int (n_tokens,)
        The own assignment (−1 entries stay −1).
    rng : numpy.random.Generator
        Source of the offsets r ~ Uniform{1, …, K−1}, one per draw.
    draws : int
        Number of draws (spec: 30).
    """
    log_phi, token_topics = check_token_topics(corpus, log_phi, token_topics)
    n_topics = log_phi.shape[0]
    if n_topics < 2:
        raise InputError("RandK shifts topic labels: it needs at least two topics")
    if not isinstance(rng, np.random.Generator):
        raise InputError("rng must be a numpy.random.Generator (np.random.default_rng(seed))")
    if draws < 1:
        raise InputError(f"draws must be >= 1, got {draws}")
    offsets = rng.integers(1, n_topics, size=draws)
    assigned = token_topics >= 0
    words = corpus.token_ids
    values = np.empty(draws)
    for i, offset in enumerate(offsets):
        shifted = np.where(assigned, (token_topics + offset) % n_topics, -1)
        values[i] = _assignment_log_likelihood(log_phi, words, shifted)
    return RandK(offsets=offsets.astype(np.int64), log_likelihoods=values)


def mean_distinct_topics(corpus: Corpus, token_topics) -> float:
    """κ = (1/D) Σ_d |{z_i : i ∈ d, z_i ≥ 0}|: mean number of distinct topics per document."""
    token_topics = np.asarray(token_topics, dtype=np.int64)
    doc_of_token = corpus.token_documents
    assigned = token_topics >= 0
    n_topics = int(token_topics.max()) + 1 if assigned.any() else 1
    pairs = np.unique(doc_of_token[assigned] * n_topics + token_topics[assigned])
    return len(pairs) / corpus.n_documents


def matched_budget_elda(corpus: Corpus, log_phi, token_topics, labels=None) -> Solution:
    """E-LDA on a model's own topics with the budget matched to its assignment (spec §4, Set 1).

    κ = :func:`mean_distinct_topics` of the own assignment, so the budget k = D · κ equals the
    number of distinct (document, topic) pairs the model used.
    """
    # E-LDA's numba kernels imported when E-LDA runs, not with the metrics' registry, which a
    # config's check imports (numba's import is 0.3-1 s of CPU before a benchmark's first fit)
    from topicbench.core.elda.generators import constant_plus_sparse_candidates, topic_matrix_candidates
    from topicbench.core.elda.greedy import fast_greedy

    log_phi, token_topics = check_token_topics(corpus, log_phi, token_topics)
    kappa = mean_distinct_topics(corpus, token_topics)
    if isinstance(log_phi, ConstantPlusSparse):
        candidates = constant_plus_sparse_candidates(log_phi, labels)
    else:
        candidates = topic_matrix_candidates(log_phi, labels, vocabulary=corpus.vocabulary)
    return fast_greedy(corpus, candidates, kappa)


@dataclass(frozen=True)
class PosteriorQuality:
    """Experiment Set 1 for one model: L of the own, RandK and E-LDA assignments.

    Attributes
    ----------
    own, randk, elda : float
        L(z) of the own assignment, the RandK mean, and E-LDA's F.
    randk_draws : RandK
    kappa : float
        Mean distinct topics per document of the own assignment (E-LDA's κ).
    budget : int
        E-LDA's k = D · κ.
    elda_seconds : float
    """

    own: float
    randk: float
    elda: float
    randk_draws: RandK
    kappa: float
    budget: int
    elda_seconds: float
    settings: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "log_likelihood_own": self.own,
            "log_likelihood_randk": self.randk,
            "log_likelihood_elda": self.elda,
        }


def posterior_quality(corpus: Corpus, log_phi, token_topics, rng: np.random.Generator, *,
                      draws: int = RANDK_DRAWS, labels=None) -> PosteriorQuality:
    """Own assignment vs RandK vs matched-budget E-LDA on the same topics (spec §4, Set 1)."""
    log_phi, token_topics = check_token_topics(corpus, log_phi, token_topics)
    own = _assignment_log_likelihood(log_phi, corpus.token_ids, token_topics)
    randk = randk_log_likelihood(corpus, log_phi, token_topics, rng, draws=draws)
    started = time.perf_counter()
    solution = matched_budget_elda(corpus, log_phi, token_topics, labels)
    seconds = time.perf_counter() - started
    logger.info(
        "posterior quality: own %.6g, RandK %.6g, E-LDA %.6g (kappa %.4g, %.2f s)",
        own, randk.mean, solution.log_posterior, solution.kappa, seconds,
    )
    return PosteriorQuality(
        own=own, randk=randk.mean, elda=float(solution.log_posterior), randk_draws=randk,
        kappa=float(solution.kappa), budget=int(solution.budget), elda_seconds=seconds,
        settings={"draws": draws, "null_topic_log_score": NULL_TOPIC_LOG_SCORE},
    )
