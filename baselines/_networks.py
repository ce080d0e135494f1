"""torch modules of the neural topic models: :class:`SparseLinear` and the ProdLDA/CTM
variational autoencoder :class:`ProdLDANetwork`.

Imported only when a neural model is built (:func:`topicbench.baselines._neural.build_prodlda_network`),
so that torch stays optional for the rest of the package.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

#: Added inside log p(w | d) of the reconstruction term (the AVITM/CTM code's constant).
LOG_EPSILON = 1e-10

#: What a ProdLDA encoder can read (see :class:`ProdLDANetwork`).
ENCODER_INPUTS = ("bow", "combined", "contextual")


class SparseLinear(nn.Module):
    """A linear layer y = x W + b whose input is a :class:`~topicbench.baselines._neural.BagOfWords`.

    ``forward(bag, scale=None)`` multiplies only the stored entries (``torch`` ``embedding_bag``
    in sum mode, weighted by the counts, times ``scale`` per document if given), so its cost is
    the number of entries times ``out_features``, not B x V x ``out_features``. It initialises
    like ``nn.Linear(fan_in, out_features)`` (``fan_in`` defaults to ``in_features``; a layer
    that is one block of a wider input passes the full width).
    """

    def __init__(self, in_features: int, out_features: int, *, fan_in: int | None = None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / float(fan_in or in_features) ** 0.5
        # (in, out): embedding_bag reads one row per word
        self.weight = nn.Parameter(torch.empty(in_features, out_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))

    def forward(self, bag, scale=None):
        weights = bag.counts if scale is None else bag.counts * scale[bag.documents]
        out = functional.embedding_bag(bag.words, self.weight, bag.offsets, mode="sum", per_sample_weights=weights)
        return out + self.bias


class ProdLDANetwork(nn.Module):
    """Encoder q(z | d) = N(μ, diag σ²), θ = softmax(z), p(w | d) = softmax(BN(θ β)).

    With ``inputs="combined"`` or ``"contextual"`` and ``learn_priors=True`` it is the
    ``DecoderNetwork`` of the CTM authors' package (``contextualized-topic-models`` 2.6.1): the
    same layers, initialisation (a seed gives the same initial weights: the layers are drawn in
    the package's order and shapes), random draws, loss and gradients, checked by
    ``tests/baselines/test_ctm_fidelity.py``.

    Parameters
    ----------
    vocabulary_size, num_topics, embedding_size : int
        V, K, and the contextual embedding size (ignored for ``inputs="bow"``).
    inputs : {"bow", "combined", "contextual"}
        What the encoder reads: the bag of words (ProdLDA), the bag of words concatenated with a
        linear map of the document embedding to V dimensions (CombinedTM), or the embedding alone
        (ZeroShotTM).
    hidden_sizes : tuple of int
        Encoder layers (softplus).
    dropout : float
        Dropout on the encoder output and on θ.
    learn_priors : bool
        Learn the logistic-normal prior's mean and variance (CTM) instead of holding the Laplace
        approximation of a symmetric Dirichlet(``prior_alpha``) fixed (AVITM). Both start from
        that approximation; at ``prior_alpha=1`` it is mean 0, variance 1 - 1/K (CTM's start).
    """

    def __init__(
        self, *, vocabulary_size: int, num_topics: int, embedding_size: int, inputs: str,
        hidden_sizes=(100, 100), dropout: float = 0.2, learn_priors: bool = False, prior_alpha: float = 1.0,
    ):
        super().__init__()
        if inputs not in ENCODER_INPUTS:
            raise ValueError(f"inputs must be one of {ENCODER_INPUTS}, got {inputs!r}")
        self.inputs = inputs
        self.num_topics = num_topics
        self._build_input_layer(vocabulary_size, embedding_size, hidden_sizes[0])
        layers, input_size = [nn.Softplus()], hidden_sizes[0]
        for size in hidden_sizes[1:]:
            layers += [nn.Linear(input_size, size), nn.Softplus()]
            input_size = size
        self.hidden = nn.Sequential(*layers)
        self.encoder_dropout = nn.Dropout(dropout)
        self.mean = nn.Linear(input_size, num_topics)
        self.mean_norm = nn.BatchNorm1d(num_topics, affine=False)
        self.log_variance = nn.Linear(input_size, num_topics)
        self.log_variance_norm = nn.BatchNorm1d(num_topics, affine=False)
        self.theta_dropout = nn.Dropout(dropout)
        self.beta = nn.Parameter(nn.init.xavier_uniform_(torch.empty(num_topics, vocabulary_size)))
        self.beta_norm = nn.BatchNorm1d(vocabulary_size, affine=False)
        self._build_prior(float(prior_alpha), learn_priors)

    def _build_input_layer(self, vocabulary_size: int, embedding_size: int, first: int) -> None:
        """The encoder's first layer, over what it reads."""
        if self.inputs == "bow":
            self.bow_layer = SparseLinear(vocabulary_size, first)
        elif self.inputs == "combined":
            # CTM's CombinedInferenceNetwork: adapt_bert = Linear(E, V), then one input layer
            # Linear(2V, H) over [bag of words, adapted embedding]. That layer is the sum of one
            # block per part, and the bag of words' block reads only its stored entries
            # (SparseLinear). The layers are drawn in the package's order and shapes, and the
            # input layer then split, so that a seed gives the package's initial weights.
            self.adapt_embedding = nn.Linear(embedding_size, vocabulary_size)
            input_layer = nn.Linear(2 * vocabulary_size, first)
            with torch.random.fork_rng(devices=[]):  # the blocks' own draws are overwritten
                self.bow_layer = SparseLinear(vocabulary_size, first)
                self.embedding_layer = nn.Linear(vocabulary_size, first, bias=False)
            with torch.no_grad():
                self.bow_layer.weight.copy_(input_layer.weight[:, :vocabulary_size].T)
                self.bow_layer.bias.copy_(input_layer.bias)
                self.embedding_layer.weight.copy_(input_layer.weight[:, vocabulary_size:])
        else:
            # CTM's ContextualInferenceNetwork (ZeroShotTM): the embedding straight to the
            # first hidden layer, no map to V dimensions
            self.embedding_layer = nn.Linear(embedding_size, first)

    def _build_prior(self, prior_alpha: float, learn_priors: bool) -> None:
        """The Laplace approximation of Dirichlet(alpha) in the softmax basis (AVITM, eq. 3),
        learned (parameters) or held (buffers)."""
        num_topics = self.num_topics
        alpha = torch.full((num_topics,), prior_alpha)
        prior_mean = alpha.log() - alpha.log().mean()
        prior_variance = (1.0 / alpha) * (1.0 - 2.0 / num_topics) + (1.0 / alpha).sum() / num_topics**2
        if learn_priors:
            self.prior_mean = nn.Parameter(prior_mean)
            self.prior_variance = nn.Parameter(prior_variance)
        else:
            self.register_buffer("prior_mean", prior_mean)
            self.register_buffer("prior_variance", prior_variance)

    def encode(self, bow, embedding):
        """μ and log σ² of q(z | d), each batch-normalised, shape (B, K)."""
        if self.inputs == "bow":
            first = self.bow_layer(bow)
        elif self.inputs == "combined":
            first = self.bow_layer(bow) + self.embedding_layer(self.adapt_embedding(embedding))
        else:
            first = self.embedding_layer(embedding)
        hidden = self.encoder_dropout(self.hidden(first))
        return self.mean_norm(self.mean(hidden)), self.log_variance_norm(self.log_variance(hidden))

    def theta(self, bow, embedding):
        """Posterior-mean topic proportions softmax(μ) (eval mode: no dropout, no noise)."""
        mean, _ = self.encode(bow, embedding)
        return functional.softmax(mean, dim=1)

    def sampled_theta(self, bow, embedding, samples: int):
        """The mean of ``samples`` draws of softmax(μ + σε), ε ~ N(0, I), from the encoder as
        it is (eval mode in :func:`~topicbench.baselines._neural.infer_theta`): OCTIS AVITM's
        ``get_thetas`` (10 draws) and the CTM package's ``get_doc_topic_distribution`` (20 draws)."""
        mean, log_variance = self.encode(bow, embedding)
        sigma = torch.exp(0.5 * log_variance)
        total = torch.zeros_like(mean)
        for _ in range(samples):
            total += functional.softmax(mean + sigma * torch.randn_like(mean), dim=1)
        return total / samples

    def topic_word(self):
        """p(w | k) = softmax(β_k), shape (K, V)."""
        return functional.softmax(self.beta, dim=1)

    def loss(self, bow, embedding):
        """Negative ELBO summed over the batch: reconstruction + KL(q(z | d) || prior)."""
        mean, log_variance = self.encode(bow, embedding)
        # σ = exp(log σ² / 2), as the package computes it; the dropout masks and this noise are
        # drawn in the package's order: encoder dropout, noise, θ dropout
        z = mean + (0.5 * log_variance).exp() * torch.randn_like(mean)
        theta = self.theta_dropout(functional.softmax(z, dim=1))
        word_probabilities = functional.softmax(self.beta_norm(theta @ self.beta), dim=1)
        reconstruction = -bow.weighted_log_sum(word_probabilities[bow.documents, bow.words], LOG_EPSILON)
        return (reconstruction + self._kl(mean, log_variance)).sum()

    def _kl(self, mean, log_variance):
        """KL(N(μ, σ²) || N(prior mean, prior variance)) per document."""
        prior_variance = self.prior_variance
        return 0.5 * (
            (log_variance.exp() / prior_variance).sum(dim=1)
            + ((self.prior_mean - mean) ** 2 / prior_variance).sum(dim=1)
            - self.num_topics
            + prior_variance.log().sum()
            - log_variance.sum(dim=1)
        )


#: ETM's encoder activations by setting name.
ACTIVATIONS = {"relu": nn.ReLU, "softplus": nn.Softplus, "tanh": nn.Tanh}


class ETMNetwork(nn.Module):
    """ETM (Dieng, Ruiz & Blei 2020): q(δ | d) = N(μ, diag σ²) from the normalised bag of words;
    β = softmax over words of ρ αᵀ.

    ``fixed_vectors`` (V x E), when given, are word embeddings ρ held fixed (a buffer); otherwise
    ρ is trained. ``log_epsilon`` is added inside log p(w | d) (the authors' constant).
    """

    def __init__(
        self, *, vocabulary_size: int, num_topics: int, embedding_size: int, fixed_vectors, hidden_size: int,
        activation: str, dropout: float, log_epsilon: float,
    ):
        super().__init__()
        self.log_epsilon = log_epsilon
        if fixed_vectors is None:
            # the authors' rho = nn.Linear(rho_size, V, bias=False): its weight (V x rho_size)
            # starts uniform on ±1/sqrt(rho_size) (torch's default Linear initialisation)
            bound = 1.0 / embedding_size**0.5
            self.word_embeddings = nn.Parameter(torch.empty(vocabulary_size, embedding_size).uniform_(-bound, bound))
        else:
            self.register_buffer("word_embeddings", torch.as_tensor(fixed_vectors, dtype=torch.float32))
        self.topic_embeddings = nn.Linear(embedding_size, num_topics, bias=False)
        # the first layer reads only the bag of words' stored entries (see _neural.BagOfWords)
        self.bow_layer = SparseLinear(vocabulary_size, hidden_size)
        self.encoder = nn.Sequential(
            ACTIVATIONS[activation](),
            nn.Linear(hidden_size, hidden_size), ACTIVATIONS[activation](),
            nn.Dropout(dropout),
        )
        self.mean = nn.Linear(hidden_size, num_topics)
        self.log_variance = nn.Linear(hidden_size, num_topics)

    def topic_word(self):
        """β, shape (K, V): softmax over the vocabulary of ρ α_kᵀ."""
        return functional.softmax(self.topic_embeddings(self.word_embeddings), dim=0).T

    def encode(self, bow):
        # the encoder reads the normalised bag of words, counts / document length
        hidden = self.encoder(self.bow_layer(bow, scale=1.0 / bow.lengths.clamp_min(1.0)))
        return self.mean(hidden), self.log_variance(hidden)

    def theta(self, bow, embedding):
        mean, _ = self.encode(bow)
        return functional.softmax(mean, dim=1)

    def loss(self, bow, embedding):
        """Negative ELBO (eq. 6-7): its value is the sum over the batch (what the training
        loop reports per document), its gradient that of the mean over the batch, the
        objective the authors' code minimises (``recon_loss.mean() + kld_theta``, both batch
        means). The scale matters: Adam's weight decay is added to the gradient, so on the
        sum it would weigh batch-size times less."""
        mean, log_variance = self.encode(bow)
        delta = mean + (0.5 * log_variance).exp() * torch.randn_like(mean)
        theta = functional.softmax(delta, dim=1)
        # p(w | d) = θ_d · β_w, needed only at the document's own words
        reconstruction = -bow.weighted_log_sum(bow.mixture_at_entries(theta, self.topic_word()), self.log_epsilon)
        kl = -0.5 * (1 + log_variance - mean**2 - log_variance.exp()).sum(dim=1)
        per_document = reconstruction + kl
        batch_mean = per_document.mean()
        return batch_mean + (per_document.sum() - batch_mean).detach()
