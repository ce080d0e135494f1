"""Topic diversity and inverted RBO: hand-computed values and OCTIS's formulas on random topics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topicbench.core.metrics.diversity import inverted_rbo, topic_diversity
from topicbench.core.validation import InputError


def octis_rbo_ext(first, second, p):
    """OCTIS's ``rbo_ext`` (evaluation_metrics/rbo.py), restated literally: the naive twin."""
    def overlap(s, t, d):
        return len(set(s[:d]) & set(t[:d]))

    longer, shorter = (first, second) if len(first) > len(second) else (second, first)
    l, s = len(longer), len(shorter)
    xl, xs = overlap(longer, shorter, l), overlap(longer, shorter, s)
    sum1 = sum(overlap(longer, shorter, d) / d * p**d for d in range(1, l + 1))
    sum2 = sum(xs * (d - s) / (s * d) * p**d for d in range(s + 1, l + 1))
    return (1 - p) / p * (sum1 + sum2) + ((xl - xs) / l + xs / s) * p**l


def octis_inverted_rbo(topics, topk, p):
    values = [octis_rbo_ext(a[:topk], b[:topk], p) for i, a in enumerate(topics) for b in topics[i + 1:]]
    return 1 - float(np.mean(values))


def test_topic_diversity_by_hand():
    topics = [["a", "b", "c"], ["a", "d", "e"], ["f", "b", "a"]]
    scores = topic_diversity(topics, top_n=(1, 2, 3))
    # N = 1: {a, f} of 3 words; N = 2: a b | a d | f b -> {a, b, d, f} of 6; N = 3: 6 of 9
    assert scores.as_dict() == {"topic_diversity@1": 2 / 3, "topic_diversity@2": 4 / 6, "topic_diversity@3": 6 / 9}


def test_inverted_rbo_by_hand():
    # S = a b c, T = b a d, p = 0.9: X_1 = 0, X_2 = 2, X_3 = 2
    # RBO = (1-p)/p (0 + (2/2) p^2 + (2/3) p^3) + (2/3) p^3 = (0.81 + 0.486) / 9 + 0.486 = 0.63
    scores = inverted_rbo([["a", "b", "c"], ["b", "a", "d"]], top_n=3, persistence=0.9)
    assert scores.mean[3] == pytest.approx(1 - 0.63, abs=1e-12)
    assert scores.as_dict().keys() == {"inverted_rbo@3"}
    # identical topics overlap fully (RBO = 1), disjoint ones not at all
    assert inverted_rbo([["a", "b", "c"], ["a", "b", "c"]], 3).mean[3] == pytest.approx(0.0, abs=1e-12)
    assert inverted_rbo([["a", "b", "c"], ["d", "e", "f"]], 3).mean[3] == 1.0
    # three topics: the mean over the three pairs
    three = inverted_rbo([["a", "b", "c"], ["b", "a", "d"], ["x", "y", "z"]], 3, persistence=0.9)
    assert three.mean[3] == pytest.approx(1 - (0.63 + 0 + 0) / 3, abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_inverted_rbo_matches_octis_on_random_topics(seed):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(int(rng.integers(12, 40)))]
    topics = [list(rng.choice(words, 12, replace=False)) for _ in range(int(rng.integers(2, 9)))]
    p = float(rng.uniform(0.5, 0.99))
    for n in (1, 5, 10, 12):
        assert inverted_rbo(topics, n, persistence=p).mean[n] == pytest.approx(
            octis_inverted_rbo(topics, n, p), abs=1e-12
        )
    unique = len({w for t in topics for w in t[:10]})
    assert topic_diversity(topics, 10).mean[10] == pytest.approx(unique / (10 * len(topics)))


def test_diversity_errors():
    with pytest.raises(InputError, match="the topic list is empty"):
        topic_diversity([], 5)
    with pytest.raises(InputError, match="top-N = 4 is larger than topic 1's word list"):
        topic_diversity([["a", "b", "c", "d"], ["a", "b"]], 4)
    with pytest.raises(InputError, match="at least two topics"):
        inverted_rbo([["a", "b"]], 2)
    with pytest.raises(InputError, match="persistence p must lie in"):
        inverted_rbo([["a", "b"], ["c", "d"]], 2, persistence=1.0)
    with pytest.raises(InputError, match="lists the word 'a' twice"):
        inverted_rbo([["a", "a"], ["c", "d"]], 2)
    assert math.isclose(topic_diversity([["a"], ["a"]], 1).mean[1], 0.5)
