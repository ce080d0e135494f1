"""The LDA baselines' settings: α fixed or optimised, resolved values recorded, token order kept."""

from __future__ import annotations

import numpy as np
import pytest

from topicbench.baselines.base import normalize_rows, top_words_of
from topicbench.baselines.gibbs_lda import PAPER_SETTINGS
from topicbench.baselines.registry import MODELS
from topicbench.core.preprocess import corpus_from_token_lists
from synthetic_lda import lee_corpus, small_synthetic, synthetic_words  # noqa: F401 (fixtures used by name)


@pytest.mark.parametrize("alpha", [1.0, 0.1])
def test_gibbs_fixed_alpha_stays_fixed(alpha, small_synthetic):
    output = MODELS.get("gibbs_lda")(4, random_state=0, alpha=alpha, iterations=30).fit(small_synthetic.corpus).output_
    assert output.settings["alpha"] == alpha
    assert output.settings["alpha_"] == pytest.approx([alpha] * 4, rel=1e-6)
    assert output.settings["optim_interval_"] == 0
    # p(k | d) = (n_dk + alpha) / (n_d + K alpha), from the sampler's own token topics
    corpus = small_synthetic.corpus
    first = output.token_topics[: corpus.doc_offsets[1]]
    expected = (np.bincount(first, minlength=4) + alpha) / (len(first) + 4 * alpha)
    np.testing.assert_allclose(output.topic_document_matrix[:, 0], expected)


def test_gibbs_bayes_optimises_alpha(small_synthetic):
    settings = {**PAPER_SETTINGS["gibbs_bayes"], "iterations": 60}
    output = MODELS.get("gibbs_lda")(4, random_state=0, **settings).fit(small_synthetic.corpus).output_
    assert output.settings["optim_interval_"] == 10
    alpha = np.array(output.settings["alpha_"])
    assert alpha.shape == (4,) and not np.allclose(alpha, 0.1)
    assert output.settings["alpha"] == 0.1  # the setting as asked stays untouched


def test_paper_gibbs_settings():
    assert PAPER_SETTINGS == {
        "gibbs": {"alpha": 1.0, "optimize_alpha": False},
        "gibbs_sparse": {"alpha": 0.1, "optimize_alpha": False},
        "gibbs_bayes": {"alpha": 0.1, "optimize_alpha": True},
    }
    defaults = MODELS.get("gibbs_lda").defaults
    assert (defaults["eta"], defaults["iterations"], defaults["alpha"]) == (0.01, 1000, 1.0)


def test_gibbs_token_topics_follow_the_corpus_token_order():
    """Two words that never share a document, in a vocabulary order tomotopy does not use
    (it numbers words as it first meets them): each token's topic must be its word's topic."""
    documents = [["beta", "alpha"] * 3 + ["gamma"]] * 10 + [["delta", "epsilon"] * 4] * 10
    corpus = corpus_from_token_lists(documents, vocabulary=["epsilon", "delta", "gamma", "beta", "alpha"])
    output = MODELS.get("gibbs_lda")(2, random_state=4, alpha=0.01, eta=0.01, iterations=200).fit(corpus).output_
    tokens = corpus.token_ids
    words = np.array(corpus.vocabulary)[tokens]
    first_group = np.isin(words, ["alpha", "beta", "gamma"])
    topics = output.token_topics
    assert len(set(topics[first_group])) == 1 and len(set(topics[~first_group])) == 1
    assert topics[first_group][0] != topics[~first_group][0]
    counts = np.zeros((2, corpus.n_words))
    np.add.at(counts, (topics, tokens), 1)
    np.testing.assert_allclose(output.topic_word_matrix, (counts + 0.01) / (counts + 0.01).sum(axis=1, keepdims=True), rtol=1e-6)


def test_gensim_auto_alpha_is_learned_and_recorded(small_synthetic):
    output = MODELS.get("gensim_lda")(4, random_state=0, alpha="auto", passes=2).fit(small_synthetic.corpus).output_
    assert output.settings["alpha"] == "auto"
    assert len(output.settings["alpha_"]) == 4 and len(set(output.settings["alpha_"])) > 1


def test_gensim_token_topics_are_the_most_likely_topic_of_each_word_in_its_document(small_synthetic):
    corpus = small_synthetic.corpus
    model = MODELS.get("gensim_lda")(4, random_state=0, passes=2)
    output = model.fit(corpus).output_
    bow = [(int(w), int(c)) for w, c in zip(*np.unique(corpus.document(0), return_counts=True))]
    _, word_topics, _ = model.model_.get_document_topics(bow, per_word_topics=True, minimum_probability=0, minimum_phi_value=0)
    expected = {word: topics[0] for word, topics in word_topics}
    got = output.token_topics[: corpus.doc_offsets[1]]
    assert [expected[w] for w in corpus.document(0)] == got.tolist()


def test_top_words_of_skips_zero_probability_words_and_breaks_ties_by_word_id():
    matrix = np.array([[0.5, 0.0, 0.5, 0.0], [0.1, 0.2, 0.3, 0.4]])
    assert top_words_of(matrix, ["a", "b", "c", "d"], 3) == [["a", "c"], ["d", "c", "b"]]


def test_normalize_rows_makes_zero_rows_uniform():
    np.testing.assert_allclose(normalize_rows(np.array([[2.0, 2.0], [0.0, 0.0]])), [[0.5, 0.5], [0.5, 0.5]])
