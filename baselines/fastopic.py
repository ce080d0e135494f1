"""FASTopic (Wu et al. 2024) on CPU torch, with the local all-MiniLM-L6-v2 document embeddings.

Written here rather than wrapping the ``fastopic`` package (1.0.1): it requires ``topmost``,
which requires ``torchvision``, so installing it pulls torchvision beside torch 2.13.0 (not
allowed in this project); ``fastopic`` itself also builds its own vocabulary with topmost's
preprocessing, where this suite needs the corpus's vocabulary. The algorithm is the package's:

- documents (their sentence embeddings), topics and words live in one embedding space;
- Embedding Transport Plans (entropic optimal transport, the package's Sinkhorn-Knopp loop) link
  documents to topics (``DT``, document marginals uniform, topic marginals softmax(w_t)) and
  topics to words (``TW``, topic marginals uniform, word marginals softmax(w_v));
- θ = D · π_DT and β = K · π_TW; the loss is the Dual Semantic-relation Reconstruction
  −mean_d Σ_w x_dw log (θ_d · β_w + ε) plus both transport costs ⟨π, M⟩;
- full-batch Adam, 200 epochs, learning rate 0.002; topic embeddings, word embeddings and both
  marginal weights are learned; document embeddings are fixed.

References
----------
X. Wu, T. Nguyen, D. C. Zhang, W. Y. Wang, A. T. Luu, "FASTopic: Pretrained Transformer is a
Fast, Adaptive, Stable, and Transferable Topic Model", NeurIPS 2024 (§3: DSR and ETP, eq. 3-7).
"""

from __future__ import annotations

import logging

import numpy as np

from topicbench.core.config import OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus
from topicbench.core.output import TopicModelOutput

from . import _neural
from .base import ModelError, TopicModel, normalize_rows, require_integers, require_positive, top_words_of

logger = logging.getLogger(__name__)

#: Added inside log(θ_d · β_w) of the reconstruction (the package's constant).
DSR_EPSILON = 1e-12
#: Check Sinkhorn's convergence every this many steps (the package's interval).
SINKHORN_CHECK_INTERVAL = 50
#: Added to each Sinkhorn denominator (the package's constant).
SINKHORN_EPSILON = 1e-16


class FASTopic(TopicModel):
    """FASTopic.

    Settings
    --------
    epochs : int
        Full-batch training epochs (package default 200).
    learning_rate : float
        Adam's step size (0.002).
    dt_alpha, tw_alpha : float
        Sinkhorn entropic-regularisation strengths (inverse temperatures) of the
        document-topic and topic-word transport plans (3 and 2).
    theta_temperature : float
        Temperature of the distance softmax giving document proportions (1).
    sinkhorn_max_iterations : int
        Sinkhorn steps at most per transport plan (5000).
    sinkhorn_tolerance : float
        Stop when both marginals are within this L1 error (0.005).
    embedding_model : str or None
        A local sentence-transformers folder (``None``: the bundled all-MiniLM-L6-v2).
    threads : int
        torch CPU threads during the fit.
    top_words : int
        Words per topic in the output's topic lists.

    Notes
    -----
    Topic-word rows are β = K · π_TW normalised to sum to 1 (π_TW's row sums are close to, not
    exactly, 1/K after a finite number of Sinkhorn steps). Document proportions are the
    package's ``transform`` for the training documents: exp(−‖e_d − t_k‖² / τ) divided by its
    sum over training documents, then normalised per document.
    """

    name = "fastopic"
    defaults = {
        "epochs": 200,
        "learning_rate": 0.002,
        "dt_alpha": 3.0,
        "tw_alpha": 2.0,
        "theta_temperature": 1.0,
        "sinkhorn_max_iterations": 5000,
        "sinkhorn_tolerance": 0.005,
        "embedding_model": None,
        "threads": 1,
        "top_words": OUTPUT_TOP_WORDS,
    }
    supports_transform = True
    uses_document_embeddings = True

    def _check_settings(self, settings: dict) -> None:
        require_integers(self.name, settings, {"epochs": 1, "sinkhorn_max_iterations": 1, "threads": 1, "top_words": 1})
        require_positive(
            self.name, settings, ["learning_rate", "dt_alpha", "tw_alpha", "theta_temperature", "sinkhorn_tolerance"]
        )

    def _fit(self, corpus: Corpus, num_topics: int | None, seed: int) -> TopicModelOutput:
        torch = _neural.load_torch(self.name)
        from .embeddings import document_embeddings

        num_topics = self._require_num_topics(num_topics)
        settings = self.settings
        embeddings = document_embeddings(corpus, model_path=settings["embedding_model"])
        bag = _neural.BagOfWords(corpus.doc_term, np.arange(corpus.n_documents))  # full batch
        with _neural.seeded(seed, settings["threads"]):
            network = _build_network(torch, num_topics, corpus.n_words, embeddings.shape[1], settings)
            document_vectors = torch.as_tensor(embeddings, dtype=torch.float32)
            optimizer = _neural.adam(network.parameters(), lr=float(settings["learning_rate"]))
            trace = []
            epochs = int(settings["epochs"])
            for epoch in range(1, epochs + 1):
                loss = network.loss(document_vectors, bag)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                trace.append(float(loss.detach()))
                if not np.isfinite(trace[-1]):
                    raise ModelError(f"{self.name}: the training loss became {trace[-1]} at epoch {epoch}")
                if epoch == 1 or epoch % 20 == 0 or epoch == epochs:
                    logger.info("fastopic: epoch %d/%d, loss %.4f", epoch, epochs, trace[-1])
            with torch.no_grad():
                topic_word = normalize_rows(network.topic_word().double().numpy())
                theta = network.theta(document_vectors, document_vectors).double().numpy()
        self.network_ = network
        self.train_document_vectors_ = document_vectors
        return TopicModelOutput(
            model=self.name,
            vocabulary=tuple(corpus.vocabulary),
            topics=top_words_of(topic_word, corpus.vocabulary, int(settings["top_words"])),
            topic_word_matrix=topic_word,
            topic_document_matrix=normalize_rows(theta).T.copy(),
            settings={**settings, "num_topics_": num_topics, "embedding_size_": int(embeddings.shape[1])},
            seed=seed,
            extra={"loss": trace},
        )

    def _transform(self, corpus: Corpus) -> np.ndarray:
        import torch

        from .embeddings import document_embeddings

        vectors = torch.as_tensor(document_embeddings(corpus, model_path=self.settings["embedding_model"]), dtype=torch.float32)
        with _neural.seeded(0, self.settings["threads"]), torch.no_grad():
            theta = self.network_.theta(vectors, self.train_document_vectors_).double().numpy()
        return normalize_rows(theta).T.copy()


def _squared_distances(x, y):
    """‖x_i − y_j‖² for all pairs (the package's pairwise_euclidean_distance)."""
    return (x**2).sum(dim=1, keepdim=True) + (y**2).sum(dim=1) - 2 * x @ y.T


def _transport_plan(torch, cost, log_a, log_b, alpha: float, max_iterations: int, tolerance: float):
    """Entropic optimal transport between marginals a (rows) and b (columns) for ``cost``.

    The package's Sinkhorn-Knopp loop: a fixed kernel K = exp(-alpha M) and two matrix-vector
    products per step (u = a / K v, v = b / K^T u, SINKHORN_EPSILON in each denominator), the
    column-marginal error checked every :data:`SINKHORN_CHECK_INTERVAL` steps. Differentiable:
    gradients flow through the iterations. Returns the plan diag(u) K diag(v).
    """
    a, b = log_a.exp(), log_b.exp()
    kernel = torch.exp(-alpha * cost)
    u = torch.ones_like(a) / a.shape[0]
    v = torch.ones_like(b) / b.shape[0]
    error, step = float("inf"), 0
    while error > tolerance and step < max_iterations:
        v = b / (kernel.T @ u + SINKHORN_EPSILON)
        u = a / (kernel @ v + SINKHORN_EPSILON)
        step += 1
        if step % SINKHORN_CHECK_INTERVAL == 1:
            with torch.no_grad():
                error = float((v * (kernel.T @ u) - b).abs().sum())
    return u * (kernel * v.T)


def _build_network(torch, num_topics, vocabulary_size, embedding_size, settings):
    """FASTopic's parameters and loss as a module (built inside a seeded block)."""
    from torch import nn
    from torch.nn import functional

    class Network(nn.Module):
        def __init__(self):
            super().__init__()
            self.topic_embeddings = nn.Parameter(
                functional.normalize(nn.init.trunc_normal_(torch.empty(num_topics, embedding_size)))
            )
            self.word_embeddings = nn.Parameter(
                functional.normalize(nn.init.trunc_normal_(torch.empty(vocabulary_size, embedding_size)))
            )
            self.topic_weights = nn.Parameter(torch.full((num_topics, 1), 1.0 / num_topics))
            self.word_weights = nn.Parameter(torch.full((vocabulary_size, 1), 1.0 / vocabulary_size))

        def _plan(self, x, y, log_a, log_b, alpha):
            cost = _squared_distances(x, y)
            plan = _transport_plan(
                torch, cost, log_a, log_b, alpha,
                int(settings["sinkhorn_max_iterations"]), float(settings["sinkhorn_tolerance"]),
            )
            return plan, (plan * cost).sum()

        def _topic_word_plan(self):
            log_a = torch.full((num_topics, 1), -float(np.log(num_topics)))
            log_b = functional.log_softmax(self.word_weights, dim=0)
            return self._plan(self.topic_embeddings, self.word_embeddings, log_a, log_b, float(settings["tw_alpha"]))

        def topic_word(self):
            plan, _ = self._topic_word_plan()
            return plan * num_topics

        def theta(self, document_vectors, train_document_vectors):
            temperature = float(settings["theta_temperature"])
            weights = torch.exp(-_squared_distances(document_vectors, self.topic_embeddings) / temperature)
            train_weights = torch.exp(-_squared_distances(train_document_vectors, self.topic_embeddings) / temperature)
            theta = weights / train_weights.sum(dim=0)
            return theta / theta.sum(dim=1, keepdim=True)

        def loss(self, document_vectors, bag):
            n_documents = bag.size
            log_a = torch.full((n_documents, 1), -float(np.log(n_documents)))
            log_b = functional.log_softmax(self.topic_weights, dim=0)
            plan_dt, cost_dt = self._plan(document_vectors, self.topic_embeddings, log_a, log_b, float(settings["dt_alpha"]))
            plan_tw, cost_tw = self._topic_word_plan()
            theta = plan_dt * n_documents
            beta = plan_tw * num_topics
            # −(1/D) Σ_d Σ_w x_dw log(θ_d · β_w + ε), over the non-zero counts only
            dsr = -bag.weighted_log_sum(bag.mixture_at_entries(theta, beta), DSR_EPSILON).sum() / n_documents
            return dsr + cost_dt + cost_tw

    return Network()
