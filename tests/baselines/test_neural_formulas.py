"""ProdLDA's and ETM's losses against their published formulas, on cases small enough to follow
by hand: K = 2 topics, V = 3 words, 3 documents, the encoder's outputs (μ, log σ²), the noise ε,
the topic-word logits β (ProdLDA) and the word and topic embeddings ρ, α (ETM) all fixed.

The negative ELBO is computed again here with numpy, from the papers' formulas alone:

- ProdLDA (Srivastava & Sutton 2017): θ = softmax(μ + σε); p(w | d) = softmax(BN(θ β)), BN in
  training mode over the batch, (x − batch mean) / sqrt(biased batch variance + 1e-5); the
  reconstruction −Σ_w x_w log(p_w + 1e-10); KL(N(μ, diag σ²) ‖ N(μ₁, diag Σ₁)) with the Laplace
  approximation of Dirichlet(a): μ₁ₖ = log aₖ − mean log a, Σ₁ₖₖ = (1/aₖ)(1 − 2/K) + Σᵢ (1/aᵢ) / K².
- ETM (Dieng et al. 2020, eq. 6-7): β = softmax over words of ρ αᵀ; θ = softmax(μ + σε); the
  reconstruction −Σ_w x_w log(θ · β_w + 1e-6); KL to N(0, I) = −½ Σ (1 + log σ² − μ² − σ²); the
  authors minimise its mean over the batch.

Two cases are worked out by hand to the number. The inputs are hard-coded; nothing needs OCTIS.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from topicbench.baselines import _neural
from topicbench.baselines.etm import ETM, _build_network
from topicbench.baselines.prodlda import ProdLDA
from topicbench.core.preprocess import corpus_from_token_lists

K, V = 2, 3
#: word counts of 3 documents (lengths 3, 4, 2)
COUNTS = np.array([[2.0, 0.0, 1.0], [0.0, 3.0, 1.0], [1.0, 1.0, 0.0]])
#: the encoder's outputs: posterior means and log variances
MU = np.array([[0.5, -0.2], [-1.0, 0.3], [0.1, 0.8]])
LOG_VARIANCE = np.array([[-0.4, 0.2], [0.1, -1.2], [0.0, 0.5]])
#: the reparameterisation noise
EPSILON = np.array([[0.3, -1.1], [0.7, 0.2], [-0.5, 1.4]])
#: ProdLDA's topic-word logits (K x V)
BETA = np.array([[1.0, -0.5, 0.2], [-0.3, 0.8, 0.0]])
#: ETM's word embeddings ρ (V x 2) and topic embeddings α (K x 2)
RHO = np.array([[0.4, -0.7], [1.1, 0.2], [-0.6, 0.5]])
ALPHA = np.array([[0.9, 0.3], [-0.4, 1.2]])


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def laplace_prior(a):
    """μ₁, diag Σ₁ of the Laplace approximation of Dirichlet(a) in the softmax basis (AVITM eq. 3)."""
    a = np.asarray(a, dtype=np.float64)
    k = a.size
    return np.log(a) - np.log(a).mean(), (1.0 / a) * (1.0 - 2.0 / k) + (1.0 / a).sum() / k**2


def prodlda_negative_elbo(counts, mu, log_variance, epsilon, beta, prior_mean, prior_variance):
    """Σ_d of the ProdLDA negative ELBO, from the paper's formulas (float64)."""
    theta = softmax(mu + np.exp(0.5 * log_variance) * epsilon, axis=1)
    logits = theta @ beta
    normalised = (logits - logits.mean(axis=0)) / np.sqrt(logits.var(axis=0) + 1e-5)  # biased variance
    p = softmax(normalised, axis=1)
    reconstruction = -(counts * np.log(p + 1e-10)).sum(axis=1)
    variance = np.exp(log_variance)
    kl = 0.5 * (
        (variance / prior_variance).sum(axis=1)
        + ((prior_mean - mu) ** 2 / prior_variance).sum(axis=1)
        - mu.shape[1]
        + np.log(prior_variance).sum()
        - log_variance.sum(axis=1)
    )
    return (reconstruction + kl).sum()


def etm_negative_elbo_per_document(counts, mu, log_variance, epsilon, rho, alpha):
    """The ETM negative ELBO of each document, from the paper's formulas (float64)."""
    beta = softmax(rho @ alpha.T, axis=0).T  # K x V, each topic a distribution over the words
    theta = softmax(mu + np.exp(0.5 * log_variance) * epsilon, axis=1)
    reconstruction = -(counts * np.log(theta @ beta + 1e-6)).sum(axis=1)
    kl = -0.5 * (1 + log_variance - mu**2 - np.exp(log_variance)).sum(axis=1)
    return reconstruction + kl


def value(loss) -> float:
    return float(loss.detach())


def bag_of_words(counts=COUNTS):
    return _neural.BagOfWords(sp.csr_matrix(counts), np.arange(counts.shape[0]))


def fix_encoder(network, mu=MU, log_variance=LOG_VARIANCE):
    """Make the network's encoder return the given (μ, log σ²)."""
    outputs = (torch.tensor(mu, dtype=torch.float32), torch.tensor(log_variance, dtype=torch.float32))
    network.encode = lambda *inputs: outputs


@pytest.fixture
def fixed_noise(monkeypatch):
    """torch.randn_like returns the given draws in turn (the last one again when they run out)."""
    draws: list = [EPSILON]

    def randn_like(tensor):
        value = draws.pop(0) if len(draws) > 1 else draws[0]
        assert value.shape == tuple(tensor.shape)
        return torch.tensor(value, dtype=tensor.dtype)

    monkeypatch.setattr(torch, "randn_like", randn_like)
    return draws


def prodlda_network(*, prior_alpha=1.0, learn_priors=False, beta=BETA):
    network = _neural.build_prodlda_network(
        vocabulary_size=V, num_topics=K, embedding_size=0, inputs="bow", dropout=0.0,
        learn_priors=learn_priors, prior_alpha=prior_alpha,
    )
    with torch.no_grad():
        network.beta.copy_(torch.tensor(beta, dtype=torch.float32))
    fix_encoder(network)
    network.train()  # BatchNorm normalises with the batch's statistics
    return network


def etm_network(*, rho=RHO, alpha=ALPHA):
    network = _build_network(
        vocabulary_size=V, num_topics=K, embedding_size=rho.shape[1], fixed_vectors=None,
        hidden_size=4, activation="relu", dropout=0.0,
    )
    with torch.no_grad():
        network.word_embeddings.copy_(torch.tensor(rho, dtype=torch.float32))
        network.topic_embeddings.weight.copy_(torch.tensor(alpha, dtype=torch.float32))
    fix_encoder(network)
    network.train()
    return network


# ------------------------------------------------------------------------------------------------
# ProdLDA
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("prior_alpha", [1.0, 0.3, 2.5])
def test_prodlda_prior_starts_at_the_laplace_approximation(prior_alpha):
    network = _neural.build_prodlda_network(vocabulary_size=V, num_topics=3, embedding_size=0, inputs="bow",
                                            prior_alpha=prior_alpha)
    mean, variance = laplace_prior([prior_alpha] * 3)
    np.testing.assert_allclose(network.prior_mean.numpy(), mean, atol=1e-7)
    np.testing.assert_allclose(network.prior_variance.numpy(), variance, rtol=1e-6)


@pytest.mark.parametrize("prior_alpha", [1.0, 0.3])
def test_prodlda_loss_is_the_negative_elbo(fixed_noise, prior_alpha):
    network = prodlda_network(prior_alpha=prior_alpha)
    expected = prodlda_negative_elbo(COUNTS, MU, LOG_VARIANCE, EPSILON, BETA, *laplace_prior([prior_alpha] * K))
    np.testing.assert_allclose(value(network.loss(bag_of_words(), None)), expected, rtol=1e-6)


def test_prodlda_loss_with_an_asymmetric_prior_is_the_negative_elbo(fixed_noise):
    # a learned prior can move anywhere: set it to the Laplace approximation of Dirichlet(0.5, 2)
    mean, variance = laplace_prior([0.5, 2.0])
    np.testing.assert_allclose(mean, [-np.log(2), np.log(2)])  # log a - mean log a
    np.testing.assert_allclose(variance, [0.625, 0.625])  # (1/a)(1 - 2/K) = 0 at K = 2; (2 + 0.5) / 4
    network = prodlda_network(learn_priors=True)
    with torch.no_grad():
        network.prior_mean.copy_(torch.tensor(mean, dtype=torch.float32))
        network.prior_variance.copy_(torch.tensor(variance, dtype=torch.float32))
    expected = prodlda_negative_elbo(COUNTS, MU, LOG_VARIANCE, EPSILON, BETA, mean, variance)
    np.testing.assert_allclose(value(network.loss(bag_of_words(), None)), expected, rtol=1e-6)


def test_prodlda_loss_by_hand(fixed_noise):
    # β = 0: θβ = 0, BatchNorm gives 0, p(w | d) = 1/3, so the reconstruction is N_d log 3 for any θ.
    # μ = 0, log σ² = 0 against Dirichlet(1), K = 2 (prior mean 0, variance 1 - 1/K = 1/2):
    # KL = ½ (2·(1 / ½) + 0 − 2 + 2 log ½ − 0) = 1 − log 2 per document.
    # 3 documents of 3, 4 and 2 words: 9 log 3 + 3 (1 − log 2) = 10.808069...
    network = prodlda_network(beta=np.zeros((K, V)))
    fix_encoder(network, np.zeros((3, K)), np.zeros((3, K)))
    assert value(network.loss(bag_of_words(), None)) == pytest.approx(10.808069, rel=1e-6)
    assert 9 * np.log(3) + 3 * (1 - np.log(2)) == pytest.approx(10.808069, abs=1e-6)


def test_prodlda_theta_is_the_mean_of_sampled_softmaxes(fixed_noise):
    # OCTIS AVITM's get_thetas: the mean over num_samples draws of softmax(μ + σε)
    network = prodlda_network()
    draws = [EPSILON, -EPSILON, np.zeros_like(EPSILON)]
    fixed_noise[:] = list(draws)
    theta = network.sampled_theta(bag_of_words(), None, 3).detach().numpy()
    sigma = np.exp(0.5 * LOG_VARIANCE)
    expected = np.mean([softmax(MU + sigma * eps, axis=1) for eps in draws], axis=0)
    np.testing.assert_allclose(theta, expected, rtol=1e-6)


def test_prodlda_trains_with_octis_avitm_optimizer_and_defaults(monkeypatch):
    # octis/models/pytorchavitm/AVITM.py and avitm/avitm_model.py: Adam(lr=2e-3,
    # betas=(momentum=0.99, 0.99)), batches of 64, 100 epochs, two softplus layers of 100,
    # dropout 0.2, a learned prior, theta from 10 samples
    assert {key: ProdLDA.defaults[key] for key in ("epochs", "batch_size", "learning_rate", "momentum",
                                                   "hidden_sizes", "dropout", "prior_alpha")} == {
        "epochs": 100, "batch_size": 64, "learning_rate": 0.002, "momentum": 0.99,
        "hidden_sizes": (100, 100), "dropout": 0.2, "prior_alpha": 1.0}
    assert ProdLDA.learn_priors and ProdLDA.theta_samples == 10
    optimizers = recorded_optimizers(monkeypatch)
    model = ProdLDA(2, random_state=0, epochs=1, hidden_sizes=(4,))
    output = model.fit(tiny_corpus()).output_
    assert optimizers == [{"lr": 0.002, "betas": (0.99, 0.99)}]
    assert isinstance(model.network_.prior_variance, torch.nn.Parameter)
    assert output.settings["theta_samples_"] == 10


# ------------------------------------------------------------------------------------------------
# ETM
# ------------------------------------------------------------------------------------------------


def test_etm_loss_is_the_negative_elbo_summed_over_the_batch(fixed_noise):
    network = etm_network()
    expected = etm_negative_elbo_per_document(COUNTS, MU, LOG_VARIANCE, EPSILON, RHO, ALPHA).sum()
    np.testing.assert_allclose(value(network.loss(bag_of_words(), None)), expected, rtol=1e-6)


def test_etm_loss_by_hand(fixed_noise):
    # ρ = 0: every topic is uniform, p(w | d) = 1/3; μ = 0, log σ² = 0: KL = 0.
    # 9 words: −9 log(1/3 + 1e-6) = 9.8874836...
    network = etm_network(rho=np.zeros((V, 2)))
    fix_encoder(network, np.zeros((3, K)), np.zeros((3, K)))
    assert value(network.loss(bag_of_words(), None)) == pytest.approx(9.887484, rel=1e-6)
    assert -9 * np.log(1 / 3 + 1e-6) == pytest.approx(9.887484, abs=1e-6)


def test_etm_gradient_is_that_of_the_batch_mean(fixed_noise):
    # the authors minimise recon_loss.mean() + kld_theta (a batch mean): finite differences of
    # the mean of the formula above, in float64, give the gradient
    network = etm_network()
    network.loss(bag_of_words(), None).backward()

    def mean_loss(rho, alpha):
        return etm_negative_elbo_per_document(COUNTS, MU, LOG_VARIANCE, EPSILON, rho, alpha).mean()

    def numeric_gradient(array, loss_of):
        gradient = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            step = np.zeros_like(array)
            step[index] = 1e-6
            gradient[index] = (loss_of(array + step) - loss_of(array - step)) / 2e-6
        return gradient

    np.testing.assert_allclose(network.topic_embeddings.weight.grad.numpy(),
                               numeric_gradient(ALPHA, lambda alpha: mean_loss(RHO, alpha)), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(network.word_embeddings.grad.numpy(),
                               numeric_gradient(RHO, lambda rho: mean_loss(rho, ALPHA)), rtol=1e-4, atol=1e-6)


def test_etm_word_embeddings_start_as_the_authors_linear_layer():
    # the authors' rho = nn.Linear(rho_size, V, bias=False): drawn first, so a seed gives its weight
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(5)
        expected = torch.nn.Linear(300, 50, bias=False).weight.detach()
        torch.manual_seed(5)
        network = _build_network(vocabulary_size=50, num_topics=4, embedding_size=300, fixed_vectors=None,
                                 hidden_size=8, activation="relu", dropout=0.5)
    torch.testing.assert_close(network.word_embeddings.detach(), expected)
    assert float(network.word_embeddings.detach().abs().max()) <= 300**-0.5


def test_etm_trains_with_octis_optimizer_and_defaults(monkeypatch):
    # octis/models/ETM.py: num_epochs=100, t_hidden_size=800, rho_size=embedding_size=300,
    # activation relu, dropout 0.5, Adam lr 0.005, wdecay 1.2e-6, batch_size 128
    assert {key: ETM.defaults[key] for key in ("epochs", "batch_size", "hidden_size", "embedding_size",
                                               "activation", "dropout", "learning_rate", "weight_decay",
                                               "word_embeddings")} == {
        "epochs": 100, "batch_size": 128, "hidden_size": 800, "embedding_size": 300, "activation": "relu",
        "dropout": 0.5, "learning_rate": 0.005, "weight_decay": 1.2e-6, "word_embeddings": "trained"}
    optimizers = recorded_optimizers(monkeypatch)
    ETM(2, random_state=0, epochs=1, hidden_size=4, embedding_size=3).fit(tiny_corpus())
    assert optimizers == [{"lr": 0.005, "weight_decay": 1.2e-6}]


# ------------------------------------------------------------------------------------------------


def tiny_corpus():
    words = ["apple", "pear", "plum", "fig", "kiwi", "lime"]
    rng = np.random.default_rng(0)
    return corpus_from_token_lists([list(rng.choice(words, size=8)) for _ in range(12)])


def recorded_optimizers(monkeypatch) -> list:
    """Record the settings of each Adam the neural models build."""
    recorded = []
    adam = _neural.adam

    def recording_adam(parameters, **settings):
        recorded.append(settings)
        return adam(parameters, **settings)

    monkeypatch.setattr(_neural, "adam", recording_adam)
    return recorded
