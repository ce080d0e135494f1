r"""Is a stability across seeds above chance? A permutation test against shuffled topics.

The chance level of :mod:`topicbench.core.metrics.stability` is what a pair of runs reaches with
the words of each of one run's topics shuffled (each topic keeps its probabilities, on random
words): topics of the same shapes, unrelated to the other run's. Here it is a distribution: each permutation draw takes a
pair of seeds in turn (draw d the pair d mod #pairs, so every pair of seeds is used), shuffles the
words of the topics of the run with fewer topics, B, and scores it against the other, A, by the
same matching. The observed statistic is the mean matched similarity over every pair of seeds;
its one-sided permutation p is

    p = (1 + #{draws ≥ observed}) / (1 + draws),

and the stability is above chance when p ≤ α (:data:`topicbench.core.metrics.stats.ALPHA`); else
it is "near chance".
With :data:`PERMUTATIONS` = 19 draws the smallest p is 0.05: the test rejects only when the
observed stability beats every draw, which under the null happens with probability 1/20.

Many topics: a draw shuffles and scores m of B's topics drawn at random, matched one to one among
all of A's topics (Hungarian algorithm on the K_A × m block); all of them (exact) where B has no
more than m. By default m = K_B × #pairs / draws, so that the null costs about what scoring the
pairs of seeds costs, and at least :data:`MIN_SAMPLED_TOPICS`, at most :data:`MAX_SAMPLED_TOPICS`.
Each sampled topic competes for a partner with fewer others than in the full
K_A × K_B matching, so it matches at least as well on average: the sampled level is an upper
estimate of the exact one, and the test against it is conservative (a stability is never called
above chance because of the sampling). A lower estimate comes free from the same draw: the
sampled topics matched among a proportional sample of A's topics (fewer candidates, the same
competition). The stated sampling error is their gap plus two standard errors of the draws' mean:
the exact chance level lies within ``chance ± error``. The cost of a draw is m × K_A topic pairs
instead of K_B × K_A: seconds, not minutes, for 2,500-topic runs (benchmarks/bench_stability.py).

>>> rng = np.random.default_rng(0)
>>> runs = [rng.dirichlet(np.ones(50), size=8) for _ in range(3)]
>>> test = chance_test(runs, "jensen_shannon", rng=np.random.default_rng(1))
>>> test.above_chance, test.permutations, test.pairs
(False, 19, 3)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from topicbench.core.constants import RBO_PERSISTENCE, RBO_TOP_N
from ..topic_word import ConstantPlusSparse
from ..validation import InputError
from .stability import match_topics, prepared, seed_stability, shuffled_words
from .stats import ALPHA
from .topic_similarity import check_settings, check_topic_word, similarity_of

__all__ = ["PERMUTATIONS", "MIN_SAMPLED_TOPICS", "MAX_SAMPLED_TOPICS", "ChanceTest", "chance_test"]

#: Permutation draws of the null: 19 puts the smallest p at 1/20 = α, the fewest a test at α needs.
PERMUTATIONS = 19
#: Bounds of the topics of the shuffled run scored per draw where they are sampled (see the module
#: docstring): fewer than 5 would leave the sampled topics almost no competition for partners; 50 a
#: draw keeps a 2,500-topic run's 19 draws within seconds.
MIN_SAMPLED_TOPICS, MAX_SAMPLED_TOPICS = 5, 50


@dataclass(frozen=True, eq=False)
class ChanceTest:
    """A stability across seeds against its permutation null (see the module docstring).

    Attributes
    ----------
    measure : str
    observed : float
        Mean matched similarity over the pairs of seeds (:func:`topicbench.core.metrics.stability.seed_stability`).
    null : ndarray of float64, shape (permutations,)
        Each draw's matched similarity of a pair with one run's topics shuffled.
    chance, chance_sd : float
        The null's mean and sample sd: the chance level and its spread.
    chance_error : float
        Sampling error of ``chance``: 0 when every topic was shuffled, else the exact chance level
        lies within ``chance ± chance_error``.
    p_value : float
        One-sided permutation p of ``observed`` against ``null``.
    permutations, pairs : int
        Draws of the null; pairs of seeds they took in turn.
    sampled_topics : int or None
        Topics of the shuffled run scored per draw where it was sampled (the most of any pair);
        None where every draw shuffled all of them.
    """

    measure: str
    observed: float
    null: np.ndarray
    chance: float
    chance_sd: float
    chance_error: float
    p_value: float
    permutations: int
    pairs: int
    sampled_topics: int | None

    @property
    def above_chance(self) -> bool:
        """Significantly above the chance level at α (one-sided)."""
        return self.p_value <= ALPHA

    def as_dict(self) -> dict:
        return {"observed": self.observed, "chance": self.chance, "chance_sd": self.chance_sd,
                "chance_error": self.chance_error, "p_value": self.p_value, "permutations": self.permutations,
                "pairs": self.pairs, "sampled_topics": self.sampled_topics, "above_chance": self.above_chance}


def chance_test(topic_words, measure: str = "jensen_shannon", *, rng, observed: float | None = None,
                permutations: int = PERMUTATIONS, sampled_topics: int | None = None, top_n: int = RBO_TOP_N,
                persistence: float = RBO_PERSISTENCE, words=None) -> ChanceTest:
    """Test one model's stability across seeds against shuffled topics of its own runs.

    Parameters
    ----------
    topic_words : sequence of ndarray or ConstantPlusSparse
        Two or more runs' p(word | topic) over one vocabulary, not all the same fit (a
        deterministic model's stability is not applicable: :func:`topicbench.core.metrics.stability.identical_fits`).
    measure, top_n, persistence
        As in :func:`topicbench.core.metrics.stability.stability`.
    rng : numpy.random.Generator
        Source of the pairs' samples and shuffles.
    observed : float, optional
        The runs' mean matched similarity over every pair, when already scored (else scored here).
    permutations : int, default :data:`PERMUTATIONS`
    sampled_topics : int, optional
        Topics of the shuffled run per draw; a run with more is sampled (default: the cost-matched
        m of the module docstring).
    words : :class:`~topicbench.core.metrics.stability_sampled.WordSample`, optional
        For Jensen-Shannon on dense runs: the words the observed similarity was read on; each
        draw reads the same words with the same weights (the shuffle still moves a topic's words
        over the whole vocabulary).
    """
    measure, top_n, persistence = check_settings(measure, top_n, persistence)
    _check_count(permutations, "permutations")
    if sampled_topics is not None:
        _check_count(sampled_topics, "sampled_topics")
    if not isinstance(rng, np.random.Generator):
        raise InputError(f"rng must be a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    matrices = _checked_runs(topic_words)
    if observed is None:
        summary = seed_stability(matrices, measure, top_n=top_n, persistence=persistence)
        if summary.deterministic:
            raise InputError("every run is the same fit: stability is not applicable, there is no chance level to test")
        observed = summary.mean_similarity
    pairs = [(i, j) for i in range(len(matrices)) for j in range(i + 1, len(matrices))]
    prepared_runs, sizes = {}, []
    cut = _cutter(words)
    upper, lower = np.empty(permutations), np.empty(permutations)
    for draw in range(permutations):
        i, j = pairs[draw % len(pairs)]
        a, b = (i, j) if matrices[i].shape[0] >= matrices[j].shape[0] else (j, i)  # B: the fewer topics
        if a not in prepared_runs:
            prepared_runs[a] = prepared(cut(matrices[a]), measure, top_n, persistence)
        n_b = matrices[b].shape[0]
        size = sampled_topics if sampled_topics is not None else _cost_matched(n_b, len(pairs), permutations)
        if size < n_b:
            sizes.append(size)
        upper[draw], lower[draw] = _draw((prepared_runs[a], matrices[a].shape[0]), matrices[b], measure, top_n,
                                         persistence, size, rng, cut)
    sampled = bool(sizes)
    return ChanceTest(
        measure=measure, observed=float(observed), null=upper, chance=float(upper.mean()),
        chance_sd=float(upper.std(ddof=1)) if permutations > 1 else float("nan"),
        chance_error=_sampling_error(upper, lower) if sampled else 0.0,
        p_value=float((1 + np.count_nonzero(upper >= observed)) / (1 + permutations)),
        permutations=int(permutations), pairs=len(pairs), sampled_topics=int(max(sizes)) if sampled else None,
    )


def _cutter(words):
    """The matrix as the draws read it: cut to ``words``' columns, each scaled by its weight."""
    if words is None:
        return lambda matrix: matrix
    columns, weights = words.columns()
    return lambda matrix: np.asarray(matrix)[:, columns] * weights


def _draw(run_a, b, measure, top_n, persistence, sampled_topics, rng, cut) -> tuple[float, float]:
    """(upper, lower) estimates of one draw's matched similarity of A (``run_a``: prepared, and its
    number of topics) against B with B's words shuffled: equal, and exact, when B has no more than
    ``sampled_topics`` topics."""
    prepared_a, n_a = run_a
    n_b = b.shape[0]
    larger = max(n_a, n_b)
    if n_b <= sampled_topics:
        similarity = similarity_of(prepared_a, prepared(cut(shuffled_words(b, rng)), measure, top_n, persistence))
        exact = float(match_topics(similarity)[2].sum() / larger)
        return exact, exact
    rows = np.sort(rng.choice(n_b, size=sampled_topics, replace=False))
    subset = b.take(rows) if isinstance(b, ConstantPlusSparse) else b[rows]
    # shuffled dense, then compacted: the same draws of the generator as ever, the sparse kernel's cost
    similarity = similarity_of(prepared_a, prepared(cut(shuffled_words(subset, rng)), measure, top_n, persistence))
    # the full statistic is the sum over B's n_b matched topics / max(K): per topic mean x n_b / larger
    scale = n_b / larger
    upper = float(match_topics(similarity)[2].mean() * scale)
    candidates = np.sort(rng.choice(n_a, size=max(sampled_topics, round(sampled_topics * n_a / n_b)), replace=False))
    lower = float(match_topics(similarity[candidates])[2].mean() * scale)
    return upper, lower


def _checked_runs(topic_words) -> list:
    """The runs' checked matrices: two or more, over one number of words."""
    matrices = [check_topic_word(matrix, f"run {i}") for i, matrix in enumerate(topic_words)]
    if len(matrices) < 2:
        raise InputError(f"a chance level needs two or more runs, got {len(matrices)}")
    widths = sorted({matrix.shape[1] for matrix in matrices})
    if len(widths) > 1:
        raise InputError(f"the runs have {widths} words: fit every seed on the same preprocessed corpus")
    return matrices


def _cost_matched(n_topics: int, n_pairs: int, permutations: int) -> int:
    """Topics a draw shuffles so that the draws cost about what scoring the pairs does."""
    return int(min(MAX_SAMPLED_TOPICS, max(MIN_SAMPLED_TOPICS, np.ceil(n_topics * n_pairs / permutations))))


def _sampling_error(upper: np.ndarray, lower: np.ndarray) -> float:
    """Gap between the upper and lower estimates plus two standard errors of the upper's mean."""
    se = float(upper.std(ddof=1) / np.sqrt(upper.size)) if upper.size > 1 else 0.0
    return float(max(upper.mean() - lower.mean(), 0.0) + 2 * se)


def _check_count(value, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"{name} must be a positive integer, got {value!r}")
