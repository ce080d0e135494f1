"""Pieces of the neural topic models checked by hand: priors, transport plans, embeddings, RNG."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from topicbench.baselines import _neural
from topicbench.baselines.fastopic import _transport_plan
from topicbench.baselines.registry import MODELS
from synthetic_lda import lee_corpus, small_synthetic, synthetic_words  # noqa: F401 (fixtures used by name)


def test_prodlda_prior_is_the_laplace_approximation_of_a_symmetric_dirichlet():
    # AVITM eq. 3 with alpha = 1 and K = 4: mean 0, variance (1 - 2/K) + K/K^2 = 0.75
    network = _neural.build_prodlda_network(vocabulary_size=7, num_topics=4, embedding_size=0, inputs="bow")
    np.testing.assert_allclose(network.prior_mean.numpy(), 0.0, atol=1e-7)
    np.testing.assert_allclose(network.prior_variance.numpy(), 0.75, rtol=1e-6)
    assert not isinstance(network.prior_variance, torch.nn.Parameter)
    learned = _neural.build_prodlda_network(vocabulary_size=7, num_topics=4, embedding_size=3, inputs="combined", learn_priors=True)
    assert isinstance(learned.prior_variance, torch.nn.Parameter)
    assert learned.adapt_embedding.in_features == 3 and learned.hidden[0].in_features == 14


def test_seeded_restores_the_callers_rng_and_threads():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    threads = torch.get_num_threads()
    with _neural.seeded(7, threads=1):
        inside = torch.rand(3)
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == threads
    assert torch.equal(torch.rand(3), expected)
    with _neural.seeded(7, threads=1):
        assert torch.equal(torch.rand(3), inside)


def test_minibatches_partition_the_documents_without_a_single_document_batch():
    batches = _neural.minibatches(11, 5, torch.Generator().manual_seed(0))
    assert [len(b) for b in batches] == [5, 6]
    assert sorted(torch.cat(batches).tolist()) == list(range(11))


def test_transport_plan_meets_both_marginals_and_favours_cheap_pairs():
    cost = torch.tensor([[0.0, 4.0, 4.0], [4.0, 0.0, 4.0]])
    log_a = torch.log(torch.tensor([[0.5], [0.5]]))
    log_b = torch.log(torch.tensor([[0.4], [0.4], [0.2]]))
    plan = _transport_plan(torch, cost, log_a, log_b, alpha=3.0, max_iterations=5000, tolerance=1e-6)
    np.testing.assert_allclose(plan.sum(dim=1).numpy(), [0.5, 0.5], atol=1e-5)
    np.testing.assert_allclose(plan.sum(dim=0).numpy(), [0.4, 0.4, 0.2], atol=1e-5)
    assert plan[0, 0] > 0.39 and plan[1, 1] > 0.39  # mass goes where it is cheap
    # the entropic optimum is diag(u) exp(-alpha C) diag(v): its log is additive in rows and columns
    log_plan = plan.log() + 3.0 * cost
    assert torch.allclose(log_plan - log_plan[:, :1] - log_plan[:1, :] + log_plan[0, 0], torch.zeros(2, 3), atol=1e-4)


@pytest.mark.slow
def test_etm_with_sentence_transformer_vectors_keeps_them_fixed(small_synthetic):
    from topicbench.baselines.embeddings import word_vectors

    model = MODELS.get("etm")(word_embeddings="sentence_transformer", epochs=2, hidden_size=50)
    output = model.fit(small_synthetic.corpus, 4, seed=0)
    assert output.settings["embedding_size_"] == 384 and output.settings["trains_word_embeddings_"] is False
    expected = word_vectors(small_synthetic.corpus.vocabulary)
    np.testing.assert_array_equal(model.network_.word_embeddings.numpy(), expected)
    assert "word_embeddings" not in dict(model.network_.named_parameters())


@pytest.mark.slow
def test_ctm_zeroshot_reads_only_the_embedding(small_synthetic):
    model = MODELS.get("ctm")(variant="zeroshot", epochs=2)
    output = model.fit(small_synthetic.corpus, 4, seed=0)
    assert output.settings["encoder_inputs_"] == "contextual"
    # the encoder ignores the bag of words: zeroing it changes nothing
    corpus = small_synthetic.corpus.subset(range(5))
    theta = model.transform(corpus)
    from topicbench.baselines.embeddings import document_embeddings

    with torch.no_grad():
        embeddings = torch.as_tensor(document_embeddings(corpus))
        zero_bow = torch.zeros(5, corpus.n_words)
        np.testing.assert_allclose(model.network_.theta(zero_bow, embeddings).double().numpy().T, theta, rtol=1e-5)
