"""Embedding coherence from given word vectors: by hand, out-of-vocabulary words, real vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topicbench.core.metrics.embedding import embedding_coherence
from topicbench.core.validation import InputError

VOCABULARY = ["a", "b", "c", "d"]
#: a = (1, 0), b = (1, 1) (45° from a), c = (0, 2) (90° from a), d has no vector (all zeros)
VECTORS = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0], [0.0, 0.0]])


def test_pairwise_and_centroid_by_hand():
    pairwise = embedding_coherence([["a", "b", "c"]], VECTORS, VOCABULARY, top_n=(2, 3))
    assert pairwise.mean[2] == pytest.approx(math.sqrt(0.5))
    assert pairwise.mean[3] == pytest.approx((math.sqrt(0.5) + 0 + math.sqrt(0.5)) / 3)
    # unit vectors a, b, c; their centroid points along (1, 1): cosines 1/√2, 1, 1/√2
    centroid = embedding_coherence([["a", "b", "c"]], VECTORS, VOCABULARY, top_n=(1, 3), kind="centroid")
    assert centroid.mean[3] == pytest.approx((1 + math.sqrt(2)) / 3)
    assert centroid.mean[1] == pytest.approx(1.0)
    assert set(centroid.as_dict()) == {"embedding_centroid@1", "embedding_centroid@3"}


def test_words_without_vectors_are_an_explicit_choice():
    with pytest.raises(InputError, match="the word 'd' does not occur in the word vectors"):
        embedding_coherence([["a", "d", "b"]], VECTORS, VOCABULARY, top_n=2)
    with pytest.raises(InputError, match="'zz' does not occur"):
        embedding_coherence([["zz", "a", "b"]], VECTORS, VOCABULARY, top_n=2)
    dropped = embedding_coherence([["a", "d", "b"], ["c", "b", "a"]], VECTORS, VOCABULARY, top_n=2, oov="drop")
    assert dropped.dropped_words.tolist() == [1, 0]
    assert dropped.per_topic[2][0] == pytest.approx(math.sqrt(0.5))


def test_embedding_errors():
    with pytest.raises(InputError, match="4 word vectors for a vocabulary of 3 words"):
        embedding_coherence([["a", "b"]], VECTORS, VOCABULARY[:3], top_n=2)
    with pytest.raises(InputError, match="kind must be one of"):
        embedding_coherence([["a", "b"]], VECTORS, VOCABULARY, top_n=2, kind="mean")
    with pytest.raises(InputError, match="top-N must be >= 2"):
        embedding_coherence([["a", "b"]], VECTORS, VOCABULARY, top_n=1)
    with pytest.raises(InputError, match="shares no words"):
        embedding_coherence([["x", "y"]], VECTORS, VOCABULARY, top_n=2)


@pytest.mark.slow
def test_real_sentence_transformer_vectors_rank_a_coherent_topic_higher(tmp_path):
    from topicbench.baselines.embeddings import word_vectors

    coherent = ["dog", "cat", "puppy", "kitten", "pet"]
    mixed = ["dog", "tax", "violin", "glacier", "senate"]
    vocabulary = sorted(set(coherent + mixed))
    vectors = word_vectors(vocabulary, cache_dir=tmp_path)
    for kind in ("pairwise", "centroid"):
        scores = embedding_coherence([coherent, mixed], vectors, vocabulary, top_n=5, kind=kind)
        assert scores.per_topic[5][0] > scores.per_topic[5][1] + 0.1, kind
        assert np.all(np.abs(scores.per_topic[5]) <= 1 + 1e-9)


def test_every_n_of_the_grid_matches_a_direct_computation():
    """The pairwise scores come from one Gram matrix at the largest N; check each N directly."""
    rng = np.random.default_rng(3)
    vocabulary = [f"w{i}" for i in range(40)]
    vectors = rng.normal(size=(40, 7))
    topics = [list(rng.permutation(vocabulary)[:12]) for _ in range(6)]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    index = {w: i for i, w in enumerate(vocabulary)}
    grid = (2, 5, 12)
    pairwise = embedding_coherence(topics, vectors, vocabulary, top_n=grid)
    centroid = embedding_coherence(topics, vectors, vocabulary, top_n=grid, kind="centroid")
    for t, topic in enumerate(topics):
        for n in grid:
            u = unit[[index[w] for w in topic[:n]]]
            pairs = [u[i] @ u[j] for i in range(n) for j in range(i + 1, n)]
            assert pairwise.per_topic[n][t] == pytest.approx(np.mean(pairs), abs=1e-12)
            c = u.mean(axis=0)
            assert centroid.per_topic[n][t] == pytest.approx(np.mean(u @ c) / np.linalg.norm(c), abs=1e-12)
