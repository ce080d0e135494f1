"""Shared pieces of the neural topic models (ProdLDA, CTM, ETM, FASTopic) on CPU torch.

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

from .base import import_optional, normalize_rows, top_words_of

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


def minibatches(n_documents: int, batch_size: int, generator) -> list:
    """A shuffled partition of ``range(n_documents)`` into batches of ``batch_size`` (the last
    one larger rather than a single document)."""
    import torch

    order = torch.randperm(n_documents, generator=generator)
    batches = list(torch.split(order, batch_size))
    if len(batches) > 1 and len(batches[-1]) == 1:
        single = batches.pop()
        batches[-1] = torch.cat([batches[-1], single])
    return batches


def dense_rows(doc_term: sp.csr_matrix, rows) -> "torch.Tensor":
    """Rows of a sparse document-term matrix as a dense float32 tensor."""
    import torch

    return torch.from_numpy(doc_term[np.asarray(rows)].toarray().astype(np.float32))


def build_prodlda_network(
    *, vocabulary_size: int, num_topics: int, embedding_size: int, inputs: str,
    hidden_sizes=(100, 100), dropout: float = 0.2, learn_priors: bool = False, prior_alpha: float = 1.0,
):
    """The ProdLDA variational autoencoder.

    Parameters
    ----------
    vocabulary_size, num_topics, embedding_size : int
        V, K, and the contextual embedding size (ignored for ``inputs="bow"``).
    inputs : {"bow", "combined", "contextual"}
        What the encoder reads: the bag of words (ProdLDA), the bag of words concatenated with a
        linear map of the document embedding to V dimensions (CombinedTM), or that map alone
        (ZeroShotTM).
    hidden_sizes : tuple of int
        Encoder layers (softplus).
    dropout : float
        Dropout on the encoder output and on θ.
    learn_priors : bool
        Learn the logistic-normal prior's mean and variance (CTM) instead of holding the Laplace
        approximation of a symmetric Dirichlet(``prior_alpha``) fixed (AVITM).
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
            if inputs != "bow":
                self.adapt_embedding = nn.Linear(embedding_size, vocabulary_size)
            input_size = {"bow": vocabulary_size, "combined": 2 * vocabulary_size, "contextual": vocabulary_size}[inputs]
            layers = []
            for size in hidden_sizes:
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

        def encode(self, bow, embedding):
            if self.inputs == "bow":
                features = bow
            elif self.inputs == "combined":
                features = torch.cat([bow, self.adapt_embedding(embedding)], dim=1)
            else:
                features = self.adapt_embedding(embedding)
            hidden = self.encoder_dropout(self.hidden(features))
            return self.mean_norm(self.mean(hidden)), self.log_variance_norm(self.log_variance(hidden))

        def theta(self, bow, embedding):
            """Posterior-mean topic proportions softmax(μ) (eval mode: no dropout, no noise)."""
            mean, _ = self.encode(bow, embedding)
            return functional.softmax(mean, dim=1)

        def topic_word(self):
            """p(w | k) = softmax(β_k), shape (K, V)."""
            return functional.softmax(self.beta, dim=1)

        def loss(self, bow, embedding):
            """Negative ELBO summed over the batch: reconstruction + KL(q(z | d) || prior)."""
            mean, log_variance = self.encode(bow, embedding)
            variance = log_variance.exp()
            z = mean + variance.sqrt() * torch.randn_like(mean)
            theta = self.theta_dropout(functional.softmax(z, dim=1))
            word_probabilities = functional.softmax(self.beta_norm(theta @ self.beta), dim=1)
            reconstruction = -(bow * (word_probabilities + LOG_EPSILON).log()).sum(dim=1)
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
    seed: int, model: str, bow_transform=None,
) -> list[float]:
    """Mini-batch training of a network with ``loss(bow, embedding)``; returns the mean loss per
    document of each epoch. ``bow_transform`` maps the raw count batch to what ``loss`` reads
    (default: the counts). The batch order comes from a generator seeded with ``seed``."""
    import torch

    generator = torch.Generator().manual_seed(int(seed))
    embeddings = None if embeddings is None else torch.as_tensor(embeddings, dtype=torch.float32)
    n_documents = doc_term.shape[0]
    trace = []
    network.train()
    for epoch in range(1, epochs + 1):
        total = 0.0
        for rows in minibatches(n_documents, batch_size, generator):
            bow = dense_rows(doc_term, rows)
            if bow_transform is not None:
                bow = bow_transform(bow)
            loss = network.loss(bow, None if embeddings is None else embeddings[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
        trace.append(total / n_documents)
        if epoch == 1 or epoch % 10 == 0 or epoch == epochs:
            logger.info("%s: epoch %d/%d, loss per document %.4f", model, epoch, epochs, trace[-1])
        if not np.isfinite(trace[-1]):
            from .base import ModelError

            raise ModelError(f"{model}: the training loss became {trace[-1]} at epoch {epoch}; lower the learning rate")
    network.eval()
    return trace


def infer_theta(network, doc_term: sp.csr_matrix, embeddings, *, batch_size: int = 2048, bow_transform=None) -> np.ndarray:
    """The encoder's topic proportions of every document, shape (D, K), float64 rows summing to 1."""
    import torch

    embeddings = None if embeddings is None else torch.as_tensor(embeddings, dtype=torch.float32)
    network.eval()
    parts = []
    with torch.no_grad():
        for start in range(0, doc_term.shape[0], batch_size):
            rows = np.arange(start, min(start + batch_size, doc_term.shape[0]))
            bow = dense_rows(doc_term, rows)
            if bow_transform is not None:
                bow = bow_transform(bow)
            parts.append(network.theta(bow, None if embeddings is None else embeddings[rows]).double().numpy())
    theta = np.vstack(parts)
    return theta / theta.sum(axis=1, keepdims=True)


def fit_and_output(model, network, optimizer, corpus, embeddings, settings: dict, seed: int, resolved: dict):
    """Train a variational network (:func:`train_variational`), then read its document
    proportions and row-normalised topic-word matrix into the shared output; ``resolved`` adds
    the model's resolved settings (``num_topics_`` and the like)."""
    import torch

    from topicbench.core.output import TopicModelOutput

    trace = train_variational(
        network, corpus.doc_term, embeddings, epochs=int(settings["epochs"]),
        batch_size=int(settings["batch_size"]), optimizer=optimizer, seed=seed, model=model,
    )
    theta = infer_theta(network, corpus.doc_term, embeddings)
    with torch.no_grad():
        topic_word = normalize_rows(network.topic_word().double().numpy())
    return TopicModelOutput(
        model=model,
        vocabulary=tuple(corpus.vocabulary),
        topics=top_words_of(topic_word, corpus.vocabulary, int(settings["top_words"])),
        topic_word_matrix=topic_word,
        topic_document_matrix=theta.T.copy(),
        settings={**settings, **resolved},
        seed=seed,
        extra={"loss_per_document": trace},
    )
