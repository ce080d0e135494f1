"""Shared pieces of the neural topic models (ProdLDA, CTM, ETM, FASTopic) on torch (CUDA when
available, see :func:`torch_device`).

- :func:`seeded`: every random draw of a fit (initialisation, mini-batch order, dropout,
  reparameterisation noise) comes from one seed, without touching the caller's global RNG.
- :func:`minibatches`: a seeded shuffled split of the documents that never leaves a batch of
  one document (BatchNorm cannot normalise a single row in training mode).
- :class:`ProdLDANetwork`: the AVITM/ProdLDA variational autoencoder (Srivastava & Sutton 2017),
  whose encoder reads the bag of words, a contextual document embedding, or both (the
  Contextualized Topic Models of Bianchi et al. 2021 are this network with an embedding input).
- :func:`train_variational`: the training loop those models share, with progress logged.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp

from .base import import_optional, normalize_rows, top_words_of, training_record

logger = logging.getLogger(__name__)

#: Added inside log p(w | d) of the reconstruction term (the AVITM/CTM code's constant).
LOG_EPSILON = 1e-10


def load_torch(model: str):
    """torch, or a :class:`ModelError` naming ``model`` when it is missing."""
    return import_optional("torch", model=model)


@contextmanager
def seeded(seed: int, threads: int = 1):
    """Run a block with torch's CPU RNG seeded and ``threads`` intra-op threads, restoring the
    caller's RNG state and thread count afterwards.

    One thread is the default: with several, torch's CPU BatchNorm slows down by two orders of
    magnitude on a busy 2-core machine, and a fixed thread count keeps float reductions, hence
    results, identical from run to run.
    """
    import torch

    previous_threads = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            yield
    finally:
        torch.set_num_threads(previous_threads)


def adam(parameters, **settings):
    """``torch.optim.Adam`` with its fused implementation: one pass per parameter tensor per
    step instead of ten, the same update. The per-tensor loop took half of an ETM epoch on a
    24,000-word vocabulary (its encoder's first layer and word embeddings are V-sized)."""
    import torch

    return torch.optim.Adam(parameters, fused=True, **settings)


def minibatches(n_documents: int, batch_size: int, generator, *, drop_last: bool = False) -> list:
    """A shuffled partition of ``range(n_documents)`` into batches of ``batch_size``.

    ``drop_last`` leaves out the last, short batch, as a ``DataLoader(drop_last=True)`` does
    (CTM's package trains so), unless it is the only batch. Otherwise the last batch is made
    larger rather than a single document (BatchNorm cannot normalise one row in training mode).
    """
    import torch

    order = torch.randperm(n_documents, generator=generator)
    batches = list(torch.split(order, batch_size))
    if drop_last and len(batches) > 1 and len(batches[-1]) < batch_size:
        batches.pop()
    elif len(batches) > 1 and len(batches[-1]) == 1:
        single = batches.pop()
        batches[-1] = torch.cat([batches[-1], single])
    return batches


def torch_device() -> str:
    """Where the neural models train: ``"cuda"`` when torch sees a GPU, else ``"cpu"`` (recorded
    on every run as the resolved setting ``device_``)."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class BagOfWords:
    """A mini-batch of bag-of-words rows kept sparse: only the (document, word, count) entries.

    The encoders' first layer reads it with :class:`SparseLinear` and the reconstruction term
    reads log p(w | d) at these entries only, so no B x V dense count matrix is built: on a
    24,000-word vocabulary that matrix, and the dense products over it, were most of an epoch.
    """

    def __init__(self, doc_term: sp.csr_matrix, rows, device: str = "cpu"):
        import torch

        batch = doc_term[np.asarray(rows)]
        batch.sort_indices()
        self.size = batch.shape[0]
        lengths = np.diff(batch.indptr)
        self.offsets = torch.from_numpy(batch.indptr[:-1].astype(np.int64)).to(device)
        self.documents = torch.from_numpy(np.repeat(np.arange(self.size, dtype=np.int64), lengths)).to(device)
        self.words = torch.from_numpy(batch.indices.astype(np.int64)).to(device)
        self.counts = torch.from_numpy(batch.data.astype(np.float32)).to(device)
        self.lengths = torch.zeros(self.size, device=device).index_add_(0, self.documents, self.counts)

    def weighted_log_sum(self, probabilities_at_entries, epsilon: float):
        """Per document, the sum over its words of count x log(p + epsilon), from p at each entry."""
        import torch

        terms = self.counts * (probabilities_at_entries + epsilon).log()
        return torch.zeros(self.size, dtype=terms.dtype, device=terms.device).index_add_(0, self.documents, terms)

    def mixture_at_entries(self, theta, topic_word):
        """p(w | d) = θ_d · β_w at each stored entry, from θ (B x K) and β (K x V), without
        forming the B x V product (ETM's and FASTopic's reconstruction)."""
        return (theta[self.documents] * topic_word[:, self.words].T).sum(dim=1)


def build_sparse_linear(in_features: int, out_features: int, *, fan_in: int | None = None):
    """A linear layer y = x W + b whose input is a :class:`BagOfWords`.

    ``forward(bag, scale=None)`` multiplies only the stored entries (``torch`` ``embedding_bag``
    in sum mode, weighted by the counts, times ``scale`` per document if given), so its cost is
    the number of entries times ``out_features``, not B x V x ``out_features``. It initialises
    like ``nn.Linear(fan_in, out_features)`` (``fan_in`` defaults to ``in_features``; a layer
    that is one block of a wider input passes the full width).
    """
    import torch
    from torch import nn
    from torch.nn import functional

    class SparseLinear(nn.Module):
        def __init__(self):
            super().__init__()
            self.in_features, self.out_features = in_features, out_features
            bound = 1.0 / float(fan_in or in_features) ** 0.5
            # (in, out): embedding_bag reads one row per word
            self.weight = nn.Parameter(torch.empty(in_features, out_features).uniform_(-bound, bound))
            self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))

        def forward(self, bag: BagOfWords, scale=None):
            weights = bag.counts if scale is None else bag.counts * scale[bag.documents]
            out = functional.embedding_bag(bag.words, self.weight, bag.offsets, mode="sum", per_sample_weights=weights)
            return out + self.bias

    return SparseLinear()


def build_prodlda_network(
    *, vocabulary_size: int, num_topics: int, embedding_size: int, inputs: str,
    hidden_sizes=(100, 100), dropout: float = 0.2, learn_priors: bool = False, prior_alpha: float = 1.0,
):
    """The ProdLDA variational autoencoder.

    With ``inputs="combined"`` or ``"contextual"`` and ``learn_priors=True`` it is the
    ``DecoderNetwork`` of the CTM authors' package (``contextualized-topic-models`` 2.6.1): the
    same layers, initialisation (a seed gives the same initial weights), random draws, loss and
    gradients, checked by ``tests/baselines/test_ctm_fidelity.py``.

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
    import torch
    from torch import nn
    from torch.nn import functional

    class ProdLDANetwork(nn.Module):
        """Encoder q(z | d) = N(μ, diag σ²), θ = softmax(z), p(w | d) = softmax(BN(θ β))."""

        def __init__(self):
            super().__init__()
            self.inputs = inputs
            self.num_topics = num_topics
            first = hidden_sizes[0]
            if inputs == "bow":
                self.bow_layer = build_sparse_linear(vocabulary_size, first)
            elif inputs == "combined":
                # CTM's CombinedInferenceNetwork: adapt_bert = Linear(E, V), then one input layer
                # Linear(2V, H) over [bag of words, adapted embedding]. That layer is the sum of one
                # block per part, and the bag of words' block reads only its stored entries
                # (SparseLinear). The layers are drawn in the package's order and shapes, and the
                # input layer then split, so that a seed gives the package's initial weights.
                self.adapt_embedding = nn.Linear(embedding_size, vocabulary_size)
                input_layer = nn.Linear(2 * vocabulary_size, first)
                with torch.random.fork_rng(devices=[]):  # the blocks' own draws are overwritten
                    self.bow_layer = build_sparse_linear(vocabulary_size, first)
                    self.embedding_layer = nn.Linear(vocabulary_size, first, bias=False)
                with torch.no_grad():
                    self.bow_layer.weight.copy_(input_layer.weight[:, :vocabulary_size].T)
                    self.bow_layer.bias.copy_(input_layer.bias)
                    self.embedding_layer.weight.copy_(input_layer.weight[:, vocabulary_size:])
            else:
                # CTM's ContextualInferenceNetwork (ZeroShotTM): the embedding straight to the
                # first hidden layer, no map to V dimensions
                self.embedding_layer = nn.Linear(embedding_size, first)
            layers, input_size = [nn.Softplus()], first
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
            # Laplace approximation of Dirichlet(alpha) in the softmax basis (AVITM, eq. 3)
            alpha = torch.full((num_topics,), float(prior_alpha))
            prior_mean = alpha.log() - alpha.log().mean()
            prior_variance = (1.0 / alpha) * (1.0 - 2.0 / num_topics) + (1.0 / alpha).sum() / num_topics**2
            if learn_priors:
                self.prior_mean = nn.Parameter(prior_mean)
                self.prior_variance = nn.Parameter(prior_variance)
            else:
                self.register_buffer("prior_mean", prior_mean)
                self.register_buffer("prior_variance", prior_variance)

        def encode(self, bow: BagOfWords, embedding):
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
            it is (eval mode in :func:`infer_theta`): OCTIS AVITM's ``get_thetas`` (10 draws) and
            the CTM package's ``get_doc_topic_distribution`` (20 draws)."""
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
            variance = log_variance.exp()
            # σ = exp(log σ² / 2), as the package computes it; the dropout masks and this noise are
            # drawn in the package's order: encoder dropout, noise, θ dropout
            z = mean + (0.5 * log_variance).exp() * torch.randn_like(mean)
            theta = self.theta_dropout(functional.softmax(z, dim=1))
            word_probabilities = functional.softmax(self.beta_norm(theta @ self.beta), dim=1)
            reconstruction = -bow.weighted_log_sum(word_probabilities[bow.documents, bow.words], LOG_EPSILON)
            prior_variance = self.prior_variance
            kl = 0.5 * (
                (variance / prior_variance).sum(dim=1)
                + ((self.prior_mean - mean) ** 2 / prior_variance).sum(dim=1)
                - self.num_topics
                + prior_variance.log().sum()
                - log_variance.sum(dim=1)
            )
            return (reconstruction + kl).sum()

    return ProdLDANetwork()


def train_variational(
    network, doc_term: sp.csr_matrix, embeddings, *, epochs: int, batch_size: int, optimizer,
    seed: int, model: str, drop_last: bool = False, device: str = "cpu",
) -> list[float]:
    """Mini-batch training of a network with ``loss(bow, embedding)``, ``bow`` a
    :class:`BagOfWords`; returns the mean loss per training document of each epoch (the
    authors' packages report it so). The batch order comes from a generator seeded with
    ``seed``; ``drop_last`` as in :func:`minibatches`."""
    import torch

    generator = torch.Generator().manual_seed(int(seed))
    embeddings = None if embeddings is None else torch.as_tensor(embeddings, dtype=torch.float32).to(device)
    n_documents = doc_term.shape[0]
    trace = []
    network.train()
    for epoch in range(1, epochs + 1):
        total, seen = 0.0, 0
        for rows in minibatches(n_documents, batch_size, generator, drop_last=drop_last):
            loss = network.loss(BagOfWords(doc_term, rows, device), None if embeddings is None else embeddings[rows.to(device)])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
            seen += len(rows)
        trace.append(total / seen)
        if epoch == 1 or epoch % 10 == 0 or epoch == epochs:
            logger.info("%s: epoch %d/%d, loss per document %.4f", model, epoch, epochs, trace[-1])
        if not np.isfinite(trace[-1]):
            from .base import ModelError

            raise ModelError(f"{model}: the training loss became {trace[-1]} at epoch {epoch}; lower the learning rate")
    network.eval()
    return trace


def infer_theta(network, doc_term: sp.csr_matrix, embeddings, *, batch_size: int = 2048, samples: int = 0) -> np.ndarray:
    """The encoder's topic proportions of every document, shape (D, K), float64 rows summing to
    1, computed on the device the network is on: softmax(μ), or with ``samples`` > 0 the mean of
    that many posterior draws (``network.sampled_theta``; the caller seeds torch)."""
    import torch

    device = next(network.parameters()).device.type
    embeddings = None if embeddings is None else torch.as_tensor(embeddings, dtype=torch.float32).to(device)
    network.eval()
    parts = []
    with torch.no_grad():
        for start in range(0, doc_term.shape[0], batch_size):
            rows = np.arange(start, min(start + batch_size, doc_term.shape[0]))
            batch_embeddings = None if embeddings is None else embeddings[torch.from_numpy(rows).to(device)]
            bag = BagOfWords(doc_term, rows, device)
            theta = network.sampled_theta(bag, batch_embeddings, samples) if samples else network.theta(bag, batch_embeddings)
            parts.append(theta.double().cpu().numpy())
    theta = np.vstack(parts)
    return theta / theta.sum(axis=1, keepdims=True)


def fit_and_output(model, network, optimizer, corpus, embeddings, settings: dict, seed: int, resolved: dict,
                   *, drop_last: bool = False, theta_samples: int = 0):
    """Train a variational network (:func:`train_variational`, on the device its parameters are
    on), then read its document proportions and row-normalised topic-word matrix into the shared
    output; ``resolved`` adds the model's resolved settings (``num_topics_`` and the like)."""
    import torch

    from topicbench.core.output import TopicModelOutput

    device = next(network.parameters()).device.type
    trace = train_variational(
        network, corpus.doc_term, embeddings, epochs=int(settings["epochs"]),
        batch_size=int(settings["batch_size"]), optimizer=optimizer, seed=seed, model=model,
        drop_last=drop_last, device=device,
    )
    theta = infer_theta(network, corpus.doc_term, embeddings, samples=theta_samples)
    with torch.no_grad():
        topic_word = normalize_rows(network.topic_word().double().cpu().numpy())
    return TopicModelOutput(
        model=model,
        vocabulary=tuple(corpus.vocabulary),
        topics=top_words_of(topic_word, corpus.vocabulary, int(settings["top_words"])),
        topic_word_matrix=topic_word,
        topic_document_matrix=theta.T.copy(),
        settings={**settings, **resolved, "device_": device},
        seed=seed,
        extra=training_record(trace, kind="negative ELBO per training document"),
    )
