"""Models recover the topics of corpora drawn from a known LDA (published behaviour).

Similarity is measured after the best one-to-one matching of true and fitted topics (Hungarian
algorithm on cosine similarity of the topic-word rows). LDA fitted by Gibbs sampling or
variational Bayes should find the generating topics almost exactly; ETM too. ProdLDA and CTM
spread probability over the whole vocabulary (their topic-word rows are softmax(β) of a decoder
followed by BatchNorm), so for them the test compares the top words instead. FASTopic and CTM
read sentence embeddings of bags of random words, which carry little meaning; they are held to
the same top-word bar on the small synthetic corpus whose embeddings the contract test computes.
"""

from __future__ import annotations

import numpy as np
import pytest

from topicbench.baselines.registry import MODELS
from synthetic_lda import matched_top_word_overlap, matched_topic_similarity
from synthetic_lda import lee_corpus, recovery_synthetic, small_synthetic, synthetic_words  # noqa: F401 (fixtures used by name)

SEED = 1


def token_agreement(truth, fitted_token_topics: np.ndarray, partner: np.ndarray) -> float:
    """Share of tokens whose fitted topic is the matched partner of their true topic."""
    return float(np.mean(partner[truth.token_topics] == fitted_token_topics))


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, settings",
    [("gibbs_lda", {"iterations": 200}), ("gensim_lda", {"passes": 5})],
)
def test_lda_recovers_the_true_topics_and_token_topics(name, settings, recovery_synthetic):
    truth = recovery_synthetic
    output = MODELS.get(name)(10, random_state=SEED, **settings).fit(truth.corpus).output_
    similarities, partner = matched_topic_similarity(truth.topic_word, output.topic_word_matrix)
    assert similarities.mean() >= 0.8, similarities
    # the token assignments line up with the corpus's tokens: most tokens get their true topic
    # (chance is about 0.1; overlapping topics keep even the truth's posterior below 1)
    assert token_agreement(truth, output.token_topics, partner) >= 0.75


@pytest.mark.slow
def test_gibbs_sampler_is_near_exact_on_a_synthetic_corpus(recovery_synthetic):
    output = MODELS.get("gibbs_lda")(10, random_state=SEED, iterations=200).fit(recovery_synthetic.corpus).output_
    similarities, _ = matched_topic_similarity(recovery_synthetic.topic_word, output.topic_word_matrix)
    assert similarities.min() >= 0.95


@pytest.mark.slow
def test_etm_recovers_the_true_topics(recovery_synthetic):
    # at its defaults (OCTIS's: 100 epochs of 128, encoder dropout 0.5); random topics score < 0.2
    output = MODELS.get("etm")(10, random_state=SEED).fit(recovery_synthetic.corpus).output_
    similarities, _ = matched_topic_similarity(recovery_synthetic.topic_word, output.topic_word_matrix)
    assert similarities.mean() >= 0.75, similarities


@pytest.mark.slow
def test_prodlda_recovers_the_true_top_words(recovery_synthetic):
    output = MODELS.get("prodlda")(10, random_state=SEED).fit(recovery_synthetic.corpus).output_  # at its defaults
    assert matched_top_word_overlap(recovery_synthetic.topic_word, output.topic_word_matrix) >= 0.6


@pytest.mark.slow
@pytest.mark.parametrize("name, settings", [("ctm", {"epochs": 50}), ("fastopic", {"epochs": 200})])
def test_embedding_models_recover_the_true_top_words(name, settings, small_synthetic):
    output = MODELS.get(name)(5, random_state=SEED, **settings).fit(small_synthetic.corpus).output_
    assert matched_top_word_overlap(small_synthetic.topic_word, output.topic_word_matrix) >= 0.5


def test_matching_scores_random_topics_low(recovery_synthetic):
    """The yardsticks above are far from what unrelated topics score."""
    rng = np.random.default_rng(0)
    random_topics = rng.dirichlet(np.full(recovery_synthetic.corpus.n_words, 0.05), size=10)
    similarities, _ = matched_topic_similarity(recovery_synthetic.topic_word, random_topics)
    assert similarities.mean() < 0.2
    assert matched_top_word_overlap(recovery_synthetic.topic_word, random_topics) < 0.2
