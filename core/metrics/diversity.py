r"""Topic diversity and inverted rank-biased overlap (as OCTIS computes them).

- Topic diversity (Dieng, Ruiz & Blei 2020; OCTIS ``TopicDiversity``): the share of unique words
  among all topics' top-N words,

      TD@N = |∪_k top_N(t_k)| / (K · N)      (1: no word repeats; 1/K: all topics equal).

- Inverted RBO (Bianchi et al. 2021; OCTIS ``InvertedRBO``): one minus the mean rank-biased overlap
  (Webber, Moffat & Zobel 2010, extrapolated RBO, their Eq. 32) over all pairs of topics. For two
  lists S, T of N words, with X_d = |S_{:d} ∩ T_{:d}| the overlap at depth d and persistence p,

      RBO_ext(S, T) = (1 − p)/p · Σ_{d=1..N} (X_d / d) · p^d + (X_N / N) · p^N,
      IRBO@N = 1 − 2 / (K(K−1)) · Σ_{a<b} RBO_ext(t_a, t_b).

  (OCTIS evaluates this through ``rbo(...)[2]`` with equal-length lists.) Higher is more diverse.

>>> topic_diversity([["a", "b"], ["a", "c"]], top_n=2).mean[2]
0.75
"""

from __future__ import annotations

import numpy as np

from topicbench.core.constants import DIVERSITY_TOP_N, RBO_PERSISTENCE, RBO_TOP_N
from ..validation import InputError
from ._topics import TopicScores, check_top_n, check_topics, too_short


def _topic_word_ids(topics, max_n: int) -> np.ndarray:
    """(n_topics, max_n) ids of the topics' first max_n words over their own word list."""
    index: dict = {}
    rows = []
    for k, words in enumerate(topics):
        if len(words) < max_n:
            raise InputError(too_short(k, len(words), max_n))
        rows.append([index.setdefault(word, len(index)) for word in words[:max_n]])
    return np.asarray(rows, dtype=np.int64)


def topic_diversity(topics, top_n=DIVERSITY_TOP_N) -> TopicScores:
    """TD@N for every N of ``top_n`` (a model-level value: ``per_topic`` holds it once)."""
    topics = check_topics(topics)
    grid = check_top_n(top_n)
    ids = _topic_word_ids(topics, grid[-1])
    values = {n: np.array([len(np.unique(ids[:, :n])) / (n * len(topics))]) for n in grid}
    return TopicScores(metric="topic_diversity", top_n=grid, per_topic=values,
                       dropped_words=np.zeros(len(topics), dtype=np.int64), settings={})


def rbo_sums(ids: np.ndarray, n: int, persistence: float) -> float:
    """Σ_{a<b} RBO_ext(t_a, t_b) of the rows of ``ids`` (distinct word ids per row) at depth n.

    RBO_ext(S, T) = Σ_d w_d X_d with w_d = (1 − p)/p · p^d/d (+ p^n/n at d = n), and a shared word
    counts in X_d from depth max(rank_S, rank_T) on. So each pair of topics sharing a word adds
    W(max rank), with W(r) = Σ_{d=r..n} w_d. For one word held by topics at ranks
    r_(1) <= ... <= r_(c), the i-th rank is the larger one in i − 1 pairs: the word adds
    Σ_i (i − 1) W(r_(i)). The sum over all pairs takes O(K n log(K n)), never K² pairs.
    """
    p = persistence
    depths = np.arange(1, n + 1)
    weights = (1 - p) / p * p**depths / depths
    weights[-1] += p**n / n
    suffix = np.cumsum(weights[::-1])[::-1]  # suffix[r - 1] = W(r)
    words = ids[:, :n].ravel()
    ranks = np.tile(depths, ids.shape[0])
    order = np.lexsort((ranks, words))
    words, ranks = words[order], ranks[order]
    group_start = np.flatnonzero(np.r_[True, words[1:] != words[:-1]])
    position = np.arange(len(words)) - np.repeat(group_start, np.diff(np.r_[group_start, len(words)]))
    return float(np.dot(position, suffix[ranks - 1]))


def inverted_rbo(topics, top_n=RBO_TOP_N, *, persistence: float = RBO_PERSISTENCE) -> TopicScores:
    """IRBO@N = 1 − mean pairwise RBO_ext for every N of ``top_n`` (needs two or more topics)."""
    topics = check_topics(topics)
    grid = check_top_n(top_n)
    if len(topics) < 2:
        raise InputError("inverted RBO compares pairs of topics: give at least two topics")
    if not 0 < persistence < 1:
        raise InputError(f"persistence p must lie in (0, 1), got {persistence}")
    ids = _topic_word_ids(topics, grid[-1])
    n_pairs = len(topics) * (len(topics) - 1) / 2
    values = {n: np.array([1.0 - rbo_sums(ids, n, persistence) / n_pairs]) for n in grid}
    return TopicScores(metric="inverted_rbo", top_n=grid, per_topic=values,
                       dropped_words=np.zeros(len(topics), dtype=np.int64),
                       settings={"persistence": persistence})
