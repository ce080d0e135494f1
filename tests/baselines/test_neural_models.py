"""Pieces of the neural topic models checked by hand: priors, transport plans, embeddings, RNG."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from topicbench.baselines import _neural
from topicbench.baselines._fastopic_network import transport_plan
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
    # CombinedTM's first layer reads [bag of words, adapted embedding]: one block of V = 7 each,
    # initialised as one layer of 14 inputs
    assert learned.adapt_embedding.in_features == 3 and learned.adapt_embedding.out_features == 7
    assert learned.bow_layer.in_features == 7 and learned.embedding_layer.in_features == 7
    assert float(learned.bow_layer.weight.abs().max()) <= 14**-0.5
    assert float(learned.embedding_layer.weight.abs().max()) <= 14**-0.5


def _count_rows():
    import scipy.sparse as sp

    counts = sp.random(6, 9, density=0.4, format="csr", random_state=1)
    counts.data = np.ceil(counts.data * 5)
    rows = [4, 0, 2, 5]
    return counts, rows, torch.from_numpy(counts[rows].toarray().astype(np.float32))


def test_sparse_bag_of_words_layer_equals_the_dense_product():
    counts, rows, dense = _count_rows()
    bag = _neural.BagOfWords(counts, rows)
    layer = _neural.build_sparse_linear(9, 3)
    torch.testing.assert_close(layer(bag), dense @ layer.weight + layer.bias)
    scale = torch.tensor([0.5, 1.0, 2.0, 3.0])
    torch.testing.assert_close(layer(bag, scale), (dense * scale[:, None]) @ layer.weight + layer.bias)
    torch.testing.assert_close(bag.lengths, dense.sum(dim=1))
    # gradients reach the weight rows of the batch's words only
    layer(bag).sum().backward()
    unused = np.flatnonzero(dense.sum(dim=0).numpy() == 0)
    assert torch.all(layer.weight.grad[unused] == 0) and torch.any(layer.weight.grad != 0)


def test_reconstruction_at_stored_entries_equals_the_dense_sum():
    counts, rows, dense = _count_rows()
    bag = _neural.BagOfWords(counts, rows)
    probabilities = torch.softmax(torch.randn(4, 9, generator=torch.Generator().manual_seed(0)), dim=1)
    expected = (dense * (probabilities + 1e-10).log()).sum(dim=1)
    torch.testing.assert_close(bag.weighted_log_sum(probabilities[bag.documents, bag.words], 1e-10), expected)


def test_etm_and_prodlda_losses_match_their_dense_formulas():
    from topicbench.baselines.etm import ETM_LOG_EPSILON, _build_network

    counts, rows, dense = _count_rows()
    bag = _neural.BagOfWords(counts, rows)
    etm = _build_network(vocabulary_size=9, num_topics=3, embedding_size=5, fixed_vectors=None,
                         hidden_size=4, activation="relu", dropout=0.0)
    normalised = dense / dense.sum(dim=1, keepdim=True)
    hidden = etm.encoder(normalised @ etm.bow_layer.weight + etm.bow_layer.bias)
    torch.testing.assert_close(etm.theta(bag, None), torch.softmax(etm.mean(hidden), dim=1))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        loss = etm.loss(bag, None)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        mean, log_variance = etm.mean(hidden), etm.log_variance(hidden)
        theta = torch.softmax(mean + (0.5 * log_variance).exp() * torch.randn_like(mean), dim=1)
        reconstruction = -(dense * (theta @ etm.topic_word() + ETM_LOG_EPSILON).log()).sum(dim=1)
        kl = -0.5 * (1 + log_variance - mean**2 - log_variance.exp()).sum(dim=1)
    torch.testing.assert_close(loss, (reconstruction + kl).sum())
    prodlda = _neural.build_prodlda_network(vocabulary_size=9, num_topics=3, embedding_size=0, inputs="bow", dropout=0.0)
    prodlda.eval()
    first = dense @ prodlda.bow_layer.weight + prodlda.bow_layer.bias
    mean = prodlda.mean_norm(prodlda.mean(prodlda.hidden(first)))
    torch.testing.assert_close(prodlda.theta(bag, None), torch.softmax(mean, dim=1))


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
    a = torch.tensor([[0.5], [0.5]])
    b = torch.tensor([[0.4], [0.4], [0.2]])
    plan = transport_plan(cost, a, b, alpha=3.0, max_iterations=5000, tolerance=1e-6)
    np.testing.assert_allclose(plan.sum(dim=1).numpy(), [0.5, 0.5], atol=1e-5)
    np.testing.assert_allclose(plan.sum(dim=0).numpy(), [0.4, 0.4, 0.2], atol=1e-5)
    assert plan[0, 0] > 0.39 and plan[1, 1] > 0.39  # mass goes where it is cheap
    # the entropic optimum is diag(u) exp(-alpha C) diag(v): its log is additive in rows and columns
    log_plan = plan.log() + 3.0 * cost
    assert torch.allclose(log_plan - log_plan[:, :1] - log_plan[:1, :] + log_plan[0, 0], torch.zeros(2, 3), atol=1e-4)


@pytest.mark.slow
def test_etm_with_sentence_transformer_vectors_keeps_them_fixed(small_synthetic):
    from topicbench.baselines.embeddings import word_vectors

    model = MODELS.get("etm")(4, random_state=0, word_embeddings="sentence_transformer", epochs=2, hidden_size=50)
    output = model.fit(small_synthetic.corpus).output_
    assert output.settings["embedding_size_"] == 384 and output.settings["trains_word_embeddings_"] is False
    expected = word_vectors(small_synthetic.corpus.vocabulary)
    np.testing.assert_array_equal(model.network_.word_embeddings.numpy(), expected)
    assert "word_embeddings" not in dict(model.network_.named_parameters())


@pytest.mark.slow
def test_ctm_zeroshot_reads_only_the_embedding(small_synthetic):
    model = MODELS.get("ctm")(4, random_state=0, variant="zeroshot", epochs=2)
    output = model.fit(small_synthetic.corpus).output_
    assert output.settings["encoder_inputs_"] == "contextual"
    # the encoder ignores the bag of words: zeroing it changes nothing
    corpus = small_synthetic.corpus.subset(range(5))
    theta = model.transform(corpus)
    from topicbench.baselines.embeddings import document_embeddings

    # (transform averages the package's 20 posterior draws, seeded with 0: the same draws here)
    with torch.no_grad(), _neural.seeded(0):
        embeddings = torch.as_tensor(document_embeddings(corpus))
        zero_bow = torch.zeros(5, corpus.n_words)
        sampled = model.network_.sampled_theta(zero_bow, embeddings, model.theta_samples)
        np.testing.assert_allclose(sampled.double().numpy().T, theta, rtol=1e-5)


def test_fastopic_vocab_size_trains_on_the_most_frequent_words_and_keeps_the_corpus_columns(small_synthetic):
    from topicbench.baselines.fastopic import trained_words

    corpus = small_synthetic.corpus
    document_frequency = np.asarray((corpus.doc_term > 0).sum(axis=0)).ravel()
    kept = trained_words(corpus, 20)
    assert len(kept) == 20 and np.all(np.diff(kept) > 0)
    # no word left out is in more documents than a word kept
    left_out = np.setdiff1d(np.arange(corpus.n_words), kept)
    assert document_frequency[left_out].max() <= document_frequency[kept].min()
    np.testing.assert_array_equal(trained_words(corpus, None), np.arange(corpus.n_words))

    output = MODELS.get("fastopic")(4, random_state=0, epochs=3, vocab_size=20).fit(corpus).output_
    assert output.topic_word_matrix.shape == (4, corpus.n_words) and output.vocabulary == tuple(corpus.vocabulary)
    assert np.all(output.topic_word_matrix[:, left_out] == 0)
    np.testing.assert_allclose(output.topic_word_matrix.sum(axis=1), 1.0)
    assert {word for topic in output.topics for word in topic} <= {corpus.vocabulary[i] for i in kept}
    assert output.settings["trained_vocabulary_size_"] == 20


@pytest.mark.parametrize("value", [1, True, 2.5, "all"])
def test_fastopic_vocab_size_must_be_an_integer_of_at_least_two(value):
    from topicbench.core.validation import InputError

    with pytest.raises(InputError, match="vocab_size must be an integer >= 2"):
        MODELS.get("fastopic")(4, random_state=0, vocab_size=value)
