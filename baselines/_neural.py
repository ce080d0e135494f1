"""Shared pieces of the neural topic models (ProdLDA, CTM, ETM, FASTopic) on torch (CUDA when
available, see :func:`torch_device`).

- :func:`seeded`: every random draw of a fit (initialisation, mini-batch order, dropout,
  reparameterisation noise) comes from one seed, without touching the caller's global RNG.
- :func:`minibatches`: a seeded shuffled split of the documents that never leaves a batch of
  one document (BatchNorm cannot normalise a single row in training mode).
- :func:`build_prodlda_network`: the AVITM/ProdLDA variational autoencoder (Srivastava & Sutton
  2017, :class:`~topicbench.baselines._networks.ProdLDANetwork`), whose encoder reads the bag of
  words, a contextual document embedding, or both (the Contextualized Topic Models of Bianchi et
  al. 2021 are this network with an embedding input).
- :func:`train_variational`: the training loop those models share, with progress logged.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp

from topicbench.core.corpus import segment_ids

from .base import import_optional, normalize_rows, top_words_of, training_record

logger = logging.getLogger(__name__)

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
        self.offsets = torch.from_numpy(batch.indptr[:-1].astype(np.int64)).to(device)
        self.documents = torch.from_numpy(segment_ids(batch.indptr)).to(device)
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
    """A :class:`~topicbench.baselines._networks.SparseLinear` layer (imports torch)."""
    from ._networks import SparseLinear

    return SparseLinear(in_features, out_features, fan_in=fan_in)


def build_prodlda_network(**settings):
    """The ProdLDA variational autoencoder, a
    :class:`~topicbench.baselines._networks.ProdLDANetwork` (imports torch; ``settings`` are its
    keyword arguments)."""
    from ._networks import ProdLDANetwork

    return ProdLDANetwork(**settings)


def train_variational(
    network, doc_term: sp.csr_matrix, embeddings, *, epochs: int, batch_size: int, optimizer,
    seed: int, model: str, drop_last: bool = False, device: str = "cpu", on_progress=None,
) -> list[float]:
    """Mini-batch training of a network with ``loss(bow, embedding)``, ``bow`` a
    :class:`BagOfWords`; returns the mean loss per training document of each epoch (the
    authors' packages report it so). The batch order comes from a generator seeded with
    ``seed``; ``drop_last`` as in :func:`minibatches`; ``on_progress(epoch, epochs, loss)``
    after every epoch."""
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
        if on_progress is not None:
            on_progress(epoch, epochs, trace[-1])
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
                   *, drop_last: bool = False, theta_samples: int = 0, on_progress=None):
    """Train a variational network (:func:`train_variational`, on the device its parameters are
    on), then read its document proportions and row-normalised topic-word matrix into the shared
    output (``on_progress(epoch, epochs, loss)`` after every epoch). Returns the output and ``resolved`` (the model's resolved values, ``num_topics_`` and
    the like) with the device it trained on, ``device_``."""
    import torch

    from topicbench.core.output import TopicModelOutput

    device = next(network.parameters()).device.type
    trace = train_variational(
        network, corpus.doc_term, embeddings, epochs=int(settings["epochs"]),
        batch_size=int(settings["batch_size"]), optimizer=optimizer, seed=seed, model=model,
        drop_last=drop_last, device=device, on_progress=on_progress,
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
        extra=training_record(trace, kind="negative ELBO per training document"),
    ), {**resolved, "device_": device}
