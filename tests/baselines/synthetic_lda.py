"""Fixtures and helpers of the baseline tests: the built-in corpus and synthetic corpora drawn
from a known LDA.

Not a ``conftest.py``: the suite's modules import ``tests/conftest.py`` as ``conftest``, which a
second conftest on ``sys.path`` would shadow. Test modules import the fixtures they use from here.

A synthetic corpus is sampled from LDA's generative process with known topics φ (K x V) and
token topics z, over real English words (taken from the built-in corpus's vocabulary) so that
the embedding models (BERTopic, CTM, FASTopic) see text their sentence encoder can read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from topicbench.core.corpus import Corpus
from topicbench.core.preprocess import corpus_from_token_lists
from topicbench.core.io import load_corpus


@dataclass(frozen=True)
class SyntheticLDA:
    """A corpus sampled from LDA, with the truth it was drawn from."""

    corpus: Corpus
    topic_word: np.ndarray  # φ, shape (K, V), columns in the corpus vocabulary's order
    token_topics: np.ndarray  # z of every token, in the corpus's token order


def sample_lda_corpus(
    words, *, n_documents: int, n_topics: int, mean_length: int = 80, alpha: float = 0.1,
    eta: float = 0.05, seed: int = 0, name: str = "synthetic_lda",
) -> SyntheticLDA:
    """Draw φ_k ~ Dir(η), θ_d ~ Dir(α), z ~ θ_d and w ~ φ_z for every token (length ~ 1 + Poisson)."""
    rng = np.random.default_rng(seed)
    words = list(words)
    topic_word = rng.dirichlet(np.full(len(words), eta), size=n_topics)
    cumulative = np.cumsum(topic_word, axis=1)
    documents, topics = [], []
    for _ in range(n_documents):
        theta = rng.dirichlet(np.full(n_topics, alpha))
        z = rng.choice(n_topics, size=1 + rng.poisson(mean_length), p=theta)
        word_ids = np.minimum((cumulative[z] < rng.random(len(z))[:, None]).sum(axis=1), len(words) - 1)
        documents.append([words[w] for w in word_ids])
        topics.append(z)
    corpus = corpus_from_token_lists(documents, vocabulary=words, name=name)
    assert corpus.n_documents == n_documents  # no document is empty
    return SyntheticLDA(corpus, topic_word, np.concatenate(topics).astype(np.int64))


def matched_topic_similarity(true_topic_word: np.ndarray, fitted_topic_word: np.ndarray):
    """Cosine similarity of every true topic with its partner under the best one-to-one matching
    (Hungarian, scipy's linear_sum_assignment). Returns (similarities per true topic, partner of
    each true topic)."""
    true = true_topic_word / np.linalg.norm(true_topic_word, axis=1, keepdims=True)
    fitted = fitted_topic_word / np.linalg.norm(fitted_topic_word, axis=1, keepdims=True)
    similarity = true @ fitted.T
    rows, columns = linear_sum_assignment(-similarity)
    partner = np.full(len(true), -1)
    partner[rows] = columns
    return similarity[rows, columns], partner


def matched_top_word_overlap(true_topic_word: np.ndarray, fitted_topic_word: np.ndarray, top_n: int = 10) -> float:
    """Mean share of a true topic's top-N words among its matched fitted topic's top-N words."""
    true_top = np.argsort(-true_topic_word, axis=1)[:, :top_n]
    fitted_top = np.argsort(-fitted_topic_word, axis=1)[:, :top_n]
    overlap = np.array([[len(set(a) & set(b)) / top_n for b in fitted_top] for a in true_top])
    rows, columns = linear_sum_assignment(-overlap)
    return float(overlap[rows, columns].mean())


@pytest.fixture(scope="session")
def lee_corpus() -> Corpus:
    """The built-in corpus (gensim's Lee news, 300 documents)."""
    return load_corpus()


@pytest.fixture(scope="session")
def synthetic_words(lee_corpus) -> list[str]:
    """500 real words: the built-in corpus's vocabulary ranks 100-599 (frequent, not the most)."""
    return list(lee_corpus.vocabulary[100:600])


@pytest.fixture(scope="session")
def small_synthetic(synthetic_words) -> SyntheticLDA:
    """300 documents from a 5-topic LDA (the contract test's second corpus)."""
    return sample_lda_corpus(synthetic_words, n_documents=300, n_topics=5, seed=11, name="small_synthetic")


@pytest.fixture(scope="session")
def recovery_synthetic(synthetic_words) -> SyntheticLDA:
    """2,000 documents from a 10-topic LDA (the recovery tests)."""
    return sample_lda_corpus(synthetic_words, n_documents=2000, n_topics=10, seed=7, name="recovery_synthetic")
