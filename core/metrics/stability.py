r"""Topic stability across seeds: do two runs of a model find the same topics?

The topics of run A and run B are compared all against all on a stated similarity, matched one to
one by the Hungarian algorithm (Kuhn 1955; ``scipy.optimize.linear_sum_assignment``, maximising the
total similarity), and the matched pairs are summarised (the protocol of Greene, O'Callaghan &
Cunningham 2014, who match topics of runs by the Hungarian algorithm on the average Jaccard of
their top words; here with these similarities, computed by :func:`.topic_similarity.topic_similarity`,
whose module gives their formulas):

- ``"jensen_shannon"``: 1 − the Jensen-Shannon distance of the topic-word distributions (in bits);
- ``"top_words"``: extrapolated rank-biased overlap of the two topics' top-N word lists.

Summaries, over the matched pairs (min(K_A, K_B) of them) of runs with K_A and K_B topics:

- mean matched similarity = Σ matched s / max(K_A, K_B): a topic of the larger run left without
  a partner did not reappear, so it counts 0 (dividing by min(K) would call a 50-topic run
  perfectly stable against a 100-topic run whose other 50 topics are new);
- share reappearing = #{matched pairs with s ≥ threshold} / max(K_A, K_B), with the threshold
  0.5 for both measures (:data:`REAPPEARANCE_THRESHOLD`): JS similarity 0.5 is JSD₂ = 0.25 bit, what
  two topics sharing three quarters of their mass (the rest disjoint) have; RBO 0.5 (p = 0.9,
  N = 10) lies between lists agreeing on their top 3 words (0.57) or holding the same 10 words in
  reverse order (0.51) and lists agreeing on their top 2 only (0.44).

Across seeds, every pair of runs is scored and the pairs' mean and sample sd reported (the pairs
share runs, so the sd describes their spread, not a standard error). Runs that are one and the same
fit (:func:`identical_fits`: a deterministic model, which ignores its seed) are not scored: their
stability of 1 measures the model's determinism, not whether its topics are reproducible, and is
"not applicable" (:data:`NOT_APPLICABLE`). :func:`chance_stability`
scores run A against run B with each of B's topics' words shuffled, the level unrelated topics of
the same shapes reach: read a stability against it (flat topics are close to every other flat
topic; random Dirichlet(1) topics over 400 words reach a JS similarity of 0.5 by chance).
:mod:`.stability_chance` makes that level a permutation distribution and tests a stability against it.

>>> a = np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
>>> score = stability(a, a[::-1], "jensen_shannon")
>>> score.mean_matched_similarity, score.share_reappearing
(1.0, 1.0)

References
----------
Greene, O'Callaghan & Cunningham (2014), How many topics? Stability analysis for topic models, ECML PKDD.
Lin (1991), Divergence measures based on the Shannon entropy, IEEE Trans. Inf. Theory 37(1).
Endres & Schindelin (2003), A new metric for probability distributions, IEEE Trans. Inf. Theory 49(7).
Webber, Moffat & Zobel (2010), A similarity measure for indefinite rankings, ACM TOIS 28(4).
Kuhn (1955), The Hungarian method for the assignment problem, Naval Research Logistics Quarterly 2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from topicbench.core.constants import RBO_PERSISTENCE, RBO_TOP_N
from ..output import TopicModelOutput
from ..topic_word import ConstantPlusSparse
from ..validation import InputError
from .topic_similarity import (
    MEASURES, check_pair, check_settings, check_topic_word, prepare, similarity_of, topic_similarity,
)

__all__ = [
    "MEASURES", "REAPPEARANCE_THRESHOLD", "CHANCE_DRAWS", "StabilityScore", "StabilitySummary", "topic_similarity",
    "match_topics", "stability", "seed_stability", "chance_stability", "shuffled_words", "warm_up_kernels",
    "identical_fits", "NOT_APPLICABLE", "compacted", "prepared", "checked_runs",
]

#: A matched pair of topics at or above this similarity counts as a topic that reappears (see the
#: module docstring for why 0.5 on each scale).
REAPPEARANCE_THRESHOLD = {"jensen_shannon": 0.5, "top_words": 0.5}

#: Shuffles of run B's words averaged by :func:`chance_stability`.
CHANCE_DRAWS = 10

#: A dense row is compacted (:func:`compacted`) where at least this share of it is one value.
COMPACT_SHARE = 0.5

#: What stability is for a model whose seeds all give the same fit (:func:`identical_fits`).
NOT_APPLICABLE = "not applicable: deterministic, one fit"


@dataclass(frozen=True, eq=False)
class StabilityScore:
    """How well the topics of two runs match (see the module docstring for the formulas).

    Attributes
    ----------
    measure : str
    threshold : float
        Similarity at or above which a matched pair counts as reappearing.
    mean_matched_similarity : float
        Σ of the matched pairs' similarities / max(n_topics_a, n_topics_b).
    share_reappearing : float
        Matched pairs at or above ``threshold`` / max(n_topics_a, n_topics_b).
    n_pairs : int
        Matched pairs: min(n_topics_a, n_topics_b).
    n_topics_a, n_topics_b : int
    rows, columns : ndarray of int64, shape (n_pairs,)
        Topic ``rows[i]`` of run A is matched with topic ``columns[i]`` of run B.
    matched_similarities : ndarray of float64, shape (n_pairs,)
    """

    measure: str
    threshold: float
    mean_matched_similarity: float
    share_reappearing: float
    n_pairs: int
    n_topics_a: int
    n_topics_b: int
    rows: np.ndarray
    columns: np.ndarray
    matched_similarities: np.ndarray

    def as_dict(self) -> dict:
        return {"mean_matched_similarity": self.mean_matched_similarity,
                "share_reappearing": self.share_reappearing, "n_pairs": self.n_pairs}


@dataclass(frozen=True, eq=False)
class StabilitySummary:
    """Stability over several pairs of runs (pairs of seeds, or draws of a chance level).

    Attributes
    ----------
    measure : str
    threshold : float
    mean_similarity, sd_similarity : float
        Mean and sample sd (NaN for one pair) of the pairs' mean matched similarities.
    mean_share, sd_share : float
        The same of the pairs' shares of reappearing topics.
    n_pairs : int
        Pairs of runs compared.
    labels : tuple of (label, label)
        Which two runs each pair compares (seeds where known, else run positions; draw numbers
        for a chance level).
    scores : tuple of StabilityScore
    deterministic : bool
        Every run is the same fit (:func:`identical_fits`): nothing was scored, the similarities
        are NaN and stability is :data:`NOT_APPLICABLE`, never 1.
    """

    measure: str
    threshold: float
    mean_similarity: float
    sd_similarity: float
    mean_share: float
    sd_share: float
    n_pairs: int
    labels: tuple
    scores: tuple
    deterministic: bool = False

    def as_dict(self) -> dict:
        return {"mean_similarity": self.mean_similarity, "sd_similarity": self.sd_similarity,
                "mean_share": self.mean_share, "sd_share": self.sd_share, "n_pairs": self.n_pairs,
                "deterministic": self.deterministic}


# ------------------------------------------------------------------------------------------------
# Public functions
# ------------------------------------------------------------------------------------------------


def match_topics(similarity) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-to-one matching of topics that maximises the total similarity (Hungarian algorithm).

    Parameters
    ----------
    similarity : array, shape (K_A, K_B)
        Finite similarities; rectangular allowed.

    Returns
    -------
    rows, columns : ndarray of int64, shape (min(K_A, K_B),)
        Topic ``rows[i]`` of A is matched with topic ``columns[i]`` of B (rows ascending).
    matched : ndarray of float64, shape (min(K_A, K_B),)
        ``similarity[rows, columns]``.
    """
    from scipy.optimize import linear_sum_assignment

    similarity = np.asarray(similarity, dtype=np.float64)
    if similarity.ndim != 2 or 0 in similarity.shape:
        raise InputError(
            f"similarity must be a non-empty 2-d array (topics of A x topics of B), got shape {similarity.shape}"
        )
    if not np.all(np.isfinite(similarity)):
        raise InputError("similarity holds NaN or infinite values: match only finite similarities")
    rows, columns = linear_sum_assignment(similarity, maximize=True)
    return rows.astype(np.int64), columns.astype(np.int64), similarity[rows, columns]


def stability(topic_word_a, topic_word_b, measure: str = "jensen_shannon", *, threshold: float | None = None,
              top_n: int = RBO_TOP_N, persistence: float = RBO_PERSISTENCE) -> StabilityScore:
    """Match the topics of two runs and summarise the matched pairs (see the module docstring).

    Parameters are those of :func:`.topic_similarity.topic_similarity`, and ``threshold`` (default
    :data:`REAPPEARANCE_THRESHOLD` of the measure).
    """
    measure, top_n, persistence = check_settings(measure, top_n, persistence)
    threshold = _check_threshold(threshold, measure)
    similarity = topic_similarity(topic_word_a, topic_word_b, measure, top_n=top_n, persistence=persistence)
    return _score(similarity, measure, threshold)


def seed_stability(runs, measure: str = "jensen_shannon", *, vocabularies=None, labels=None,
                   threshold: float | None = None, top_n: int = RBO_TOP_N,
                   persistence: float = RBO_PERSISTENCE) -> StabilitySummary:
    """Stability of one model across seeds: every pair of runs scored, then mean and sd over pairs.

    Parameters
    ----------
    runs : sequence of TopicModelOutput, or of topic-word matrices
        Two or more runs of one model on one corpus (differing in seed).
    measure, threshold, top_n, persistence
        As in :func:`stability`.
    vocabularies : sequence of sequences of str, optional
        Each matrix's vocabulary, when ``runs`` are matrices (outputs carry their own). All runs
        must share one vocabulary, in one order.
    labels : sequence, optional
        A label per run (default: each output's seed, else the run's position).

    Returns
    -------
    StabilitySummary
        With ``deterministic`` set, and nothing scored, when every run is the same fit.
    """
    measure, top_n, persistence = check_settings(measure, top_n, persistence)
    threshold = _check_threshold(threshold, measure)
    matrices, labels = _runs(runs, vocabularies, labels)
    pair_labels = [(labels[i], labels[j]) for i in range(len(matrices)) for j in range(i + 1, len(matrices))]
    if identical_fits(matrices):
        nan = float("nan")
        return StabilitySummary(measure, threshold, nan, nan, nan, nan, len(pair_labels), tuple(pair_labels), (),
                                deterministic=True)
    prepared_runs = [prepared(matrix, measure, top_n, persistence) for matrix in matrices]  # once per run
    pairs = [(i, j) for i in range(len(matrices)) for j in range(i + 1, len(matrices))]
    scores = [_score(similarity_of(prepared_runs[i], prepared_runs[j]), measure, threshold) for i, j in pairs]
    return _summarise(scores, [(labels[i], labels[j]) for i, j in pairs], measure, threshold)


def chance_stability(topic_word_a, topic_word_b, measure: str = "jensen_shannon", *, rng,
                     draws: int = CHANCE_DRAWS, threshold: float | None = None, top_n: int = RBO_TOP_N,
                     persistence: float = RBO_PERSISTENCE) -> StabilitySummary:
    """The stability unrelated topics reach: run A against run B with the words of each of B's topics
    shuffled (each topic keeps its probabilities, on random words), over ``draws`` shuffles.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the shuffles (``np.random.default_rng(seed)``).
    draws : int, default 10
    Others as in :func:`stability`.

    Returns
    -------
    StabilitySummary
        One "pair" per draw, labelled ``("a", draw)``.
    """
    measure, top_n, persistence = check_settings(measure, top_n, persistence)
    threshold = _check_threshold(threshold, measure)
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 1:
        raise InputError(f"draws must be a positive integer, got {draws!r}")
    if not isinstance(rng, np.random.Generator):
        raise InputError(f"rng must be a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    a, b = check_pair(topic_word_a, topic_word_b)
    prepared_a = prepared(a, measure, top_n, persistence)
    scores = []
    for _ in range(int(draws)):
        shuffled = prepared(shuffled_words(b, rng), measure, top_n, persistence)
        scores.append(_score(similarity_of(prepared_a, shuffled), measure, threshold))
    return _summarise(scores, [("a", d) for d in range(int(draws))], measure, threshold)


def prepared(matrix, measure: str, top_n: int = RBO_TOP_N, persistence: float = RBO_PERSISTENCE):
    """A checked matrix's topics in the form ``measure`` reads (:func:`.topic_similarity.prepare`),
    a dense one compacted first for Jensen-Shannon (:func:`compacted`); top words read the matrix
    as given, so that ties among equal entries break as ever."""
    return prepare(compacted(matrix) if measure == "jensen_shannon" else matrix, measure, top_n, persistence)


def compacted(matrix):
    """A dense topic-word matrix whose rows are mostly their smallest value -- a Gibbs sampler's
    smoothing (β over the words a topic never drew), BERTopic's zeros -- as constant-plus-sparse
    rows: that value as the row's constant, the others stored. The same numbers, so the same
    Jensen-Shannon similarities (to rounding); the kernel then passes over the stored words, not
    the whole vocabulary (the paper's Gibbs topics store 2% of 24,000 words: 50 times fewer). Any
    other matrix (a neural model's softmax rows, no two entries alike) comes back as it is."""
    if isinstance(matrix, ConstantPlusSparse) or not isinstance(matrix, np.ndarray) or matrix.ndim != 2:
        return matrix
    smallest = matrix.min(axis=1, keepdims=True)
    stored = matrix != smallest
    if stored.sum(axis=1).max() > (1 - COMPACT_SHARE) * matrix.shape[1]:
        return matrix
    rows, columns = np.nonzero(stored)  # row-major: each row's columns ascending
    indptr = np.concatenate([[0], np.cumsum(stored.sum(axis=1))]).astype(np.int64)
    return ConstantPlusSparse(smallest[:, 0].astype(np.float64), indptr, columns.astype(np.int64),
                              matrix[rows, columns].astype(np.float64), matrix.shape[1])


def identical_fits(runs) -> bool:
    """Whether every run is the same fit: equal topic-word matrices (in the same form, shape and
    values, bit for bit), as a model that ignores its seed gives (E-LDA's exact greedy, NMF).

    ``runs``: two or more TopicModelOutputs or topic-word matrices (dense or ConstantPlusSparse).
    Its stability across seeds is then :data:`NOT_APPLICABLE`: there is one fit, not several."""
    matrices = [run.topic_word_matrix if isinstance(run, TopicModelOutput) else run for run in runs]
    if len(matrices) < 2:
        raise InputError(f"identical_fits compares two or more runs, got {len(matrices)}")
    return all(_same_matrix(matrices[0], other) for other in matrices[1:])


def _same_matrix(first, second) -> bool:
    if isinstance(first, ConstantPlusSparse) or isinstance(second, ConstantPlusSparse):
        if not (isinstance(first, ConstantPlusSparse) and isinstance(second, ConstantPlusSparse)):
            return False
        parts = ("row_constants", "indptr", "indices", "values")
        return first.shape == second.shape and all(
            np.array_equal(getattr(first, part), getattr(second, part)) for part in parts)
    first, second = np.asarray(first), np.asarray(second)
    return first.shape == second.shape and np.array_equal(first, second)


def shuffled_words(topic_word, rng: np.random.Generator):
    """The matrix with each row's entries moved to a random permutation of the words (in its form:
    a constant-plus-sparse row keeps its constant and puts its stored values on random words)."""
    if not isinstance(topic_word, ConstantPlusSparse):
        return rng.permuted(np.asarray(topic_word, dtype=np.float64), axis=1)
    lengths = np.diff(topic_word.indptr)
    columns = np.concatenate(
        [rng.choice(topic_word.n_columns, size=int(length), replace=False) for length in lengths]
    ).astype(np.int64) if len(lengths) else np.zeros(0, dtype=np.int64)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    order = np.lexsort((columns, rows))  # stored columns ascending within each row
    return ConstantPlusSparse(topic_word.row_constants.astype(np.float64), topic_word.indptr.astype(np.int64),
                              columns[order], topic_word.values[order].astype(np.float64), topic_word.n_columns)


def warm_up_kernels() -> None:
    """Call every Jensen-Shannon kernel once on a tiny instance (dense, constant-plus-sparse and
    mixed rows), for ``topicbench compile``: the arguments are normalised in :func:`.topic_similarity.prepare`, so
    these are the types of every real call."""
    sparse = ConstantPlusSparse(np.array([0.25, 0.0]), np.array([0, 2, 4]), np.array([0, 1, 1, 2]),
                                np.array([0.375, 0.375, 0.5, 0.5]), 3)
    dense = sparse.toarray()
    for first, second in ((sparse, sparse), (sparse, dense), (dense, dense)):
        topic_similarity(first, second, "jensen_shannon")


# ------------------------------------------------------------------------------------------------
# Checks at the door, and the pairs' scores
# ------------------------------------------------------------------------------------------------


def _check_threshold(threshold, measure: str) -> float:
    if threshold is None:
        return REAPPEARANCE_THRESHOLD[measure]
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.floating)) or not 0 <= threshold <= 1:
        raise InputError(f"threshold must be a similarity in [0, 1], got {threshold!r}")
    return float(threshold)


def checked_runs(runs, vocabularies=None, labels=None) -> tuple[list, list]:
    """(checked matrices, labels) of one model's runs, as :func:`seed_stability` reads them: an
    :class:`InputError` unless they are two or more over one vocabulary."""
    return _runs(runs, vocabularies, labels)


def _runs(runs, vocabularies, labels) -> tuple[list, list]:
    """The runs' checked matrices and labels; an error unless they share one vocabulary."""
    runs = list(runs)
    if len(runs) < 2:
        raise InputError(f"stability across seeds needs two or more runs, got {len(runs)}")
    outputs = [isinstance(run, TopicModelOutput) for run in runs]
    if any(outputs) and not all(outputs):
        raise InputError("give runs as all TopicModelOutputs or all topic-word matrices, not a mix")
    if all(outputs):
        vocabularies = [run.vocabulary for run in runs]
        if labels is None:
            labels = [run.seed if run.seed is not None else i for i, run in enumerate(runs)]
    labels = list(range(len(runs))) if labels is None else list(labels)
    if len(labels) != len(runs):
        raise InputError(f"{len(labels)} labels for {len(runs)} runs: give one label per run")
    matrices = [check_topic_word(run.topic_word_matrix if out else run, f"run {labels[i]}")
                for i, (run, out) in enumerate(zip(runs, outputs))]
    _check_vocabularies(vocabularies, matrices, labels)
    return matrices, labels


def _check_vocabularies(vocabularies, matrices, labels) -> None:
    if vocabularies is not None:
        vocabularies = [tuple(vocabulary) for vocabulary in vocabularies]
        if len(vocabularies) != len(matrices):
            raise InputError(f"{len(vocabularies)} vocabularies for {len(matrices)} runs: give one per run")
        for label, vocabulary, matrix in zip(labels, vocabularies, matrices):
            if len(vocabulary) != matrix.shape[1]:
                raise InputError(
                    f"run {label}: {len(vocabulary)} vocabulary words for {matrix.shape[1]} matrix columns"
                )
    for i in range(1, len(matrices)):
        if matrices[i].shape[1] != matrices[0].shape[1]:
            raise InputError(
                f"run {labels[i]} has {matrices[i].shape[1]} words and run {labels[0]} {matrices[0].shape[1]}: "
                "fit every seed on the same preprocessed corpus"
            )
        if vocabularies is not None and vocabularies[i] != vocabularies[0]:
            at = next(k for k, (x, y) in enumerate(zip(vocabularies[0], vocabularies[i])) if x != y)
            raise InputError(
                f"run {labels[i]}'s vocabulary differs from run {labels[0]}'s at word {at} ({vocabularies[i][at]!r} vs "
                f"{vocabularies[0][at]!r}): fit every seed on the same preprocessed corpus"
            )


def _score(similarity: np.ndarray, measure: str, threshold: float) -> StabilityScore:
    rows, columns, matched = match_topics(similarity)
    larger = max(similarity.shape)
    return StabilityScore(
        measure=measure, threshold=threshold,
        mean_matched_similarity=float(matched.sum() / larger),
        share_reappearing=float(np.count_nonzero(matched >= threshold) / larger),
        n_pairs=len(rows), n_topics_a=similarity.shape[0], n_topics_b=similarity.shape[1],
        rows=rows, columns=columns, matched_similarities=matched,
    )


def _summarise(scores: list, labels: list, measure: str, threshold: float) -> StabilitySummary:
    similarity = np.array([score.mean_matched_similarity for score in scores])
    share = np.array([score.share_reappearing for score in scores])

    def sd(values):
        return float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")

    return StabilitySummary(
        measure=measure, threshold=threshold, mean_similarity=float(similarity.mean()), sd_similarity=sd(similarity),
        mean_share=float(share.mean()), sd_share=sd(share), n_pairs=len(scores), labels=tuple(labels),
        scores=tuple(scores),
    )
