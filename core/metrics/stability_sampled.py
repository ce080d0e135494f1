r"""Jensen-Shannon stability of dense many-word runs from a sample of their words, its error stated.

The Jensen-Shannon similarity of two topics costs a logarithm per word (:mod:`.stability_kernels`):
K_A × K_B × V of them per pair of seeds. Rows that are mostly one value are compacted at no loss
(:func:`~topicbench.core.metrics.stability.compacted`: Gibbs samplers, BERTopic); a neural model's
softmax rows, no two entries alike, are not. Where a model's seeds would cost more than
:data:`WORD_BUDGET` topic-pair × word cells, the divergence sum

    JSD(p, q) = 1/2 Σ_v f(p_v, q_v)

is estimated from n of the V words (n = V × budget / cells, at least :data:`MIN_SAMPLED_WORDS`),
stratified: the n/2 words of the largest p(word | topic) in any topic of any seed are scored
exactly (a census: most of the divergence lies there), and n/2 drawn at random from the others
stand for the rest, weighted by (words left) / (words drawn) -- the Horvitz-Thompson estimate, unbiased
for the sum. The draws are split in :data:`GROUPS` groups; leaving one group out at a time gives
the jackknife standard error and bias of every number the stability reports (the mean matched
similarity over the pairs of seeds, the share reappearing), and the stated sampling error is
2 standard errors plus the bias: the similarity from every word lies within ``mean ± error``.
The permutation test's draws (:mod:`.stability_chance`) read the same words with the same weights,
so the observed similarity and its chance level are estimated alike. Deterministic given the
generator: the same seed draws the same words.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import stability_kernels as kernels
from .stability import _score, _summarise, compacted

__all__ = ["WORD_BUDGET", "MIN_SAMPLED_WORDS", "GROUPS", "WordSample", "word_sample", "sampled_seed_stability"]

#: Topic-pair × word cells of a model's pairs of seeds scored on every word: 1.5e8 is half of the
#: paper's 100-topic neural runs over 14,000-24,000 words (3 pairs of seeds), a second or two of
#: the dense kernel on one core.
WORD_BUDGET = 1.5e8
#: Fewest words a sample holds: below it the census would miss the words topics are made of.
MIN_SAMPLED_WORDS = 2000
#: Groups the drawn words are split in for the jackknife.
GROUPS = 8


@dataclass(frozen=True, eq=False)
class WordSample:
    """The words a sampled Jensen-Shannon stability reads (module docstring).

    Attributes
    ----------
    census : ndarray of int64
        Words scored exactly (weight 1).
    groups : tuple of ndarray of int64
        The drawn words, in :data:`GROUPS` groups.
    rest : int
        Words outside the census, which the drawn ones stand for.
    """

    census: np.ndarray
    groups: tuple
    rest: int

    @property
    def size(self) -> int:
        return len(self.census) + sum(len(group) for group in self.groups)

    def columns(self) -> tuple[np.ndarray, np.ndarray]:
        """(the words read, each one's weight): what a dense run is cut to, its columns scaled (f is
        homogeneous, f(w x, w y) = w f(x, y), so a scaled column adds its weighted term)."""
        drawn = np.concatenate(self.groups)
        weights = np.concatenate([np.ones(len(self.census)), np.full(len(drawn), self.rest / len(drawn))])
        order = np.argsort(np.concatenate([self.census, drawn]), kind="stable")
        return np.concatenate([self.census, drawn])[order], weights[order]


def word_sample(matrices, rng: np.random.Generator, budget: float | None = None) -> WordSample | None:
    """The words to read of these runs (checked matrices of one model's seeds), or None where every
    word is read: a run that is not dense after compaction, or pairs within ``budget`` cells
    (default :data:`WORD_BUDGET`)."""
    budget = WORD_BUDGET if budget is None else budget
    if not all(isinstance(compacted(matrix), np.ndarray) for matrix in matrices):
        return None
    n_words = matrices[0].shape[1]
    cells = n_words * sum(matrices[i].shape[0] * matrices[j].shape[0]
                          for i in range(len(matrices)) for j in range(i + 1, len(matrices)))
    size = max(MIN_SAMPLED_WORDS, int(n_words * budget / cells)) if cells > budget else n_words
    if size >= n_words // 2:  # half the words or more: not worth an error
        return None
    weight = np.max([matrix.max(axis=0) for matrix in matrices], axis=0)
    census = np.sort(np.argsort(-weight, kind="stable")[:size // 2]).astype(np.int64)
    others = np.setdiff1d(np.arange(n_words), census)
    drawn = rng.choice(others, size=size - len(census), replace=False).astype(np.int64)
    return WordSample(census, tuple(np.sort(group) for group in np.array_split(drawn, GROUPS)), len(others))


def _half_sums(a: np.ndarray, b: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """1/2 Σ f(a_v, b_v) over ``columns`` for every pair of rows (the kernel's JSD of the cut rows)."""
    a, b = np.ascontiguousarray(a[:, columns]), np.ascontiguousarray(b[:, columns])
    return kernels.js_dense_dense(a, kernels.x_log2_x(a.ravel()).reshape(a.shape),
                                  b, kernels.x_log2_x(b.ravel()).reshape(b.shape))


def sampled_seed_stability(matrices, labels, sample: WordSample, threshold: float) -> tuple:
    """(:class:`~topicbench.core.metrics.stability.StabilitySummary` of the Jensen-Shannon
    stability of every pair of ``matrices`` read on ``sample``'s words, {"error", "share_error"}:
    the jackknife's 2 standard errors plus its bias for the mean similarity and the share)."""
    pairs = [(i, j) for i in range(len(matrices)) for j in range(i + 1, len(matrices))]
    sizes = np.array([len(group) for group in sample.groups], dtype=np.float64)
    census, groups = [], []
    for i, j in pairs:
        census.append(_half_sums(matrices[i], matrices[j], sample.census))
        groups.append([_half_sums(matrices[i], matrices[j], group) for group in sample.groups])

    def summary(kept):
        scores = []
        for exact, parts in zip(census, groups):
            tail = sum(parts[g] for g in kept) * (sample.rest / sizes[kept].sum())
            divergence = np.clip(exact + tail, 0.0, 1.0)
            scores.append(_score(1.0 - np.sqrt(divergence), "jensen_shannon", threshold))
        return _summarise(scores, [(labels[i], labels[j]) for i, j in pairs], "jensen_shannon", threshold)

    every = np.arange(len(sample.groups))
    whole = summary(every)
    left_out = [summary(np.delete(every, g)) for g in every]
    return whole, {"error": _jackknife_error(whole.mean_similarity, [s.mean_similarity for s in left_out]),
                   "share_error": _jackknife_error(whole.mean_share, [s.mean_share for s in left_out])}


def _jackknife_error(estimate: float, left_out: list) -> float:
    """2 jackknife standard errors plus the jackknife's bias estimate, of ``estimate``."""
    values = np.asarray(left_out)
    n = len(values)
    se = float(np.sqrt((n - 1) / n * np.sum((values - values.mean()) ** 2)))
    bias = float((n - 1) * (values.mean() - estimate))
    return 2 * se + abs(bias)
