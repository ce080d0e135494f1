"""FASTopic (Wu et al. 2024) on torch (CUDA when available), with the local all-MiniLM-L6-v2
document embeddings.

Written here rather than wrapping the ``fastopic`` package (1.0.1): it requires ``topmost``,
which requires ``torchvision``, so installing it pulls torchvision beside torch 2.13.0 (not
allowed in this project); ``fastopic`` itself also builds its own vocabulary with topmost's
preprocessing, where this suite needs the corpus's vocabulary. The model is the package's
(``fastopic/_fastopic.py`` and ``_ETP.py``), its loss and gradients equal to the package's at
equal parameters (``tests/baselines/test_fastopic_fidelity.py`` runs both):

- documents (their sentence embeddings), topics and words live in one embedding space;
- Embedding Transport Plans (entropic optimal transport, the package's log-domain Sinkhorn)
  link documents to topics (``DT``: document marginals uniform, topic marginals
  softmax(w_t)) and topics to words (``TW``: topic marginals uniform, word marginals
  softmax(w_v)), with cost the squared Euclidean distances;
- θ = D · π_DT and β = K · π_TW; the loss is the Dual Semantic-relation Reconstruction
  −mean_d Σ_w x_dw log (θ_d · β_w + ε) plus both transport costs ⟨π, M⟩;
- full-batch Adam, 200 epochs, learning rate 0.002; topic embeddings, word embeddings and both
  marginal weights are learned; document embeddings are fixed. Initialisation as the package's
  (``trunc_normal_`` then row-normalised embeddings, topic embeddings drawn first; weights 1/K
  and 1/V), so that one seed gives the package's initial parameters.

Two pieces are computed differently from the package, with the same result:

- the reconstruction reads θ_d · β_w at the stored (document, word) entries only (a sampled
  product, ``torch.sparse.sampled_addmm``, whose backward pass is two sparse products), where
  the package forms the dense D x V product θ β and the dense count matrix: the zero counts
  add nothing to the loss or its gradient. On reuters (10,727 x 24,035) the dense matrices are
  1 GB each and were most of the package's epoch;
- the Sinkhorn iterations between two absorptions run as matrix-vector products with the
  absorbed kernel (the same iterates as the package's log-sum-exp updates: after absorbing, the
  scalings start at 1 and stay moderate), and the gradient through all the iterations is
  written out (:class:`~topicbench.baselines._fastopic_network.Sinkhorn`) rather than taped op by op: the package's autograd
  graph keeps two n x m tensors per iteration. The first step (raw kernel exp(−αM), whose
  entries may underflow) and any window whose plain-domain products stop being finite run in
  the log domain exactly as the package does.

References
----------
X. Wu, T. Nguyen, D. C. Zhang, W. Y. Wang, A. T. Luu, "FASTopic: Pretrained Transformer is a
Fast, Adaptive, Stable, and Transferable Topic Model", NeurIPS 2024 (§3: DSR and ETP, eq. 3-7).
"""

from __future__ import annotations

import logging

import numpy as np

from topicbench.core.constants import OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus
from topicbench.core.output import TopicModelOutput

from . import _neural
from .base import (
    ModelError, TopicModel, normalize_rows, require_integers, require_positive, top_words_of, training_record,
)
from .bounds import MAX_ITERATIONS, MAX_LEARNING_RATE, MAX_SCALE, MAX_THREADS, MAX_TOP_WORDS

logger = logging.getLogger(__name__)

#: The most words ``vocab_size`` may keep (more than any vocabulary: a larger value keeps them all).
MAX_VOCAB_SIZE = 10_000_000



class FASTopic(TopicModel):
    """FASTopic.

    Settings
    --------
    epochs : int
        Full-batch training epochs (package default 200; at most 100,000).
    learning_rate : float
        Adam's step size (0.002; at most 10).
    dt_alpha, tw_alpha : float
        Sinkhorn entropic-regularisation strengths (inverse temperatures) of the
        document-topic and topic-word transport plans (3 and 2; at most 10^6).
    theta_temperature : float
        Temperature of the distance softmax giving document proportions (1; at most 10^6).
    sinkhorn_max_iterations : int
        Sinkhorn steps at most per transport plan (5000; at most 100,000).
    sinkhorn_tolerance : float
        Stop when the larger of the two marginals' L1 errors is at most this (0.005; at most 2,
        the largest L1 distance of two distributions).
    embedding_model : str or None
        A local sentence-transformers folder (``None``: the bundled all-MiniLM-L6-v2).
    vocab_size : int or None
        Train on the ``vocab_size`` words of highest document frequency only, as topmost's
        ``Preprocess(vocab_size=N)``, which the package's README passes to FASTopic (``None``, the
        package's default: every corpus word). The document embeddings, the documents and the
        output's columns (the corpus vocabulary; words left out have probability 0) are unchanged.
        At most :data:`MAX_VOCAB_SIZE` (10^7).
    threads : int
        torch CPU threads during the fit (at most 1024).
    top_words : int
        Words per topic in the output's topic lists (at most 1000).

    Notes
    -----
    Topic-word rows are the package's ``get_beta`` (β = K · π_TW) normalised to sum to 1 (π_TW's
    row sums are close to, not exactly, 1/K after a finite number of Sinkhorn steps). Document
    proportions are the package's ``transform`` (``get_theta``) for the training documents:
    exp(−‖e_d − t_k‖² / τ) divided by its sum over training documents, then normalised per
    document. ``extra["training_loss"]`` is the training loss of each epoch (the package's
    ``loss``: reconstruction plus both transport costs).
    """

    name = "fastopic"
    family = "embedding (optimal transport)"
    setup_phase = "embedding documents"  # the sentence model over the corpus, unless cached
    convergence_family = "neural"
    defaults = {
        "epochs": 200,
        "learning_rate": 0.002,
        "dt_alpha": 3.0,
        "tw_alpha": 2.0,
        "theta_temperature": 1.0,
        "sinkhorn_max_iterations": 5000,
        "sinkhorn_tolerance": 0.005,
        "embedding_model": None,
        "vocab_size": None,
        "threads": 1,
        "top_words": OUTPUT_TOP_WORDS,
    }
    setting_maxima = {
        "epochs": MAX_ITERATIONS, "learning_rate": MAX_LEARNING_RATE, "dt_alpha": MAX_SCALE, "tw_alpha": MAX_SCALE,
        "theta_temperature": MAX_SCALE, "sinkhorn_max_iterations": MAX_ITERATIONS, "sinkhorn_tolerance": 2.0,
        "vocab_size": MAX_VOCAB_SIZE, "threads": MAX_THREADS, "top_words": MAX_TOP_WORDS,
    }
    supports_transform = True
    uses_document_embeddings = True

    def _check_settings(self, settings: dict) -> None:
        require_integers(self.name, settings, {"epochs": 1, "sinkhorn_max_iterations": 1, "threads": 1, "top_words": 1})
        require_positive(
            self.name, settings, ["learning_rate", "dt_alpha", "tw_alpha", "theta_temperature", "sinkhorn_tolerance"]
        )
        if settings["vocab_size"] is not None:
            require_integers(self.name, settings, {"vocab_size": 2})

    def _setup(self, corpus: Corpus) -> None:
        """Import torch and load the corpus's (cached) document embeddings before the timed fit."""
        from .embeddings import document_embeddings

        _neural.load_torch(self.name)
        document_embeddings(corpus, model_path=self.settings["embedding_model"])

    def _fit(self, corpus: Corpus) -> tuple[TopicModelOutput, dict]:
        torch = _neural.load_torch(self.name)
        from ._fastopic_network import WordCounts
        from .embeddings import document_embeddings

        num_topics = self._require_num_topics(self.num_topics)
        settings, seed = self.settings, self.random_state
        embeddings = document_embeddings(corpus, model_path=settings["embedding_model"])
        device = _neural.torch_device()
        columns = trained_words(corpus, settings["vocab_size"])
        with _neural.seeded(seed, settings["threads"]):
            entries = WordCounts(corpus.doc_term[:, columns], device)  # the full batch
            network = build_network(num_topics, len(columns), embeddings.shape[1], settings).to(device)
            document_vectors = torch.as_tensor(embeddings, dtype=torch.float32).to(device)
            optimizer = _neural.adam(network.parameters(), lr=float(settings["learning_rate"]))
            trace = []
            epochs = int(settings["epochs"])
            for epoch in range(1, epochs + 1):
                loss = network.loss(document_vectors, entries)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                trace.append(float(loss.detach()))
                if not np.isfinite(trace[-1]):
                    raise ModelError(f"{self.name}: the training loss became {trace[-1]} at epoch {epoch}")
                self._progress(epoch, epochs, trace[-1])
                if epoch == 1 or epoch % 20 == 0 or epoch == epochs:
                    logger.info(
                        "fastopic: epoch %d/%d, loss %.4f (Sinkhorn steps: DT %d, TW %d)", epoch, epochs,
                        trace[-1], network.sinkhorn["DT"]["steps"], network.sinkhorn["TW"]["steps"],
                    )
            with torch.no_grad():
                topic_word = np.zeros((num_topics, corpus.n_words))
                topic_word[:, columns] = normalize_rows(network.get_beta().double().cpu().numpy())
                theta = network.get_theta(document_vectors, document_vectors).double().cpu().numpy()
        self.network_ = network
        self.train_document_vectors_ = document_vectors
        output = TopicModelOutput(
            model=self.name,
            vocabulary=tuple(corpus.vocabulary),
            topics=top_words_of(topic_word, corpus.vocabulary, int(settings["top_words"])),
            topic_word_matrix=topic_word,
            topic_document_matrix=normalize_rows(theta).T.copy(),
            extra=training_record(trace, kind="DSR reconstruction + both transport costs (full batch)"),
        )
        resolved = {"num_topics_": num_topics, "embedding_size_": int(embeddings.shape[1]), "device_": device}
        return output, {**resolved, "trained_vocabulary_size_": len(columns)}

    def _transform(self, corpus: Corpus) -> np.ndarray:
        import torch

        from .embeddings import document_embeddings

        embeddings = document_embeddings(corpus, model_path=self.settings["embedding_model"])
        vectors = torch.as_tensor(embeddings, dtype=torch.float32).to(self.train_document_vectors_.device)
        with _neural.seeded(0, self.settings["threads"]), torch.no_grad():
            theta = self.network_.get_theta(vectors, self.train_document_vectors_).double().cpu().numpy()
        return normalize_rows(theta).T.copy()


def trained_words(corpus: Corpus, vocab_size: int | None) -> np.ndarray:
    """Word ids FASTopic trains on, ascending: all, or the ``vocab_size`` of highest document
    frequency (ties: lower id, as the corpus orders them; topmost ranks by document count too)."""
    if vocab_size is None or vocab_size >= corpus.n_words:
        return np.arange(corpus.n_words)
    document_frequency = np.bincount(corpus.doc_term.indices, minlength=corpus.n_words)
    return np.sort(np.argsort(-document_frequency, kind="stable")[:vocab_size])


def build_network(num_topics: int, vocabulary_size: int, embedding_size: int, settings: dict):
    """The :class:`~topicbench.baselines._fastopic_network.FASTopicNetwork` of ``settings``
    (imports torch; build it inside a seeded block)."""
    from ._fastopic_network import FASTopicNetwork

    return FASTopicNetwork(
        num_topics, vocabulary_size, embedding_size, dt_alpha=settings["dt_alpha"], tw_alpha=settings["tw_alpha"],
        theta_temperature=settings["theta_temperature"], sinkhorn_max_iterations=settings["sinkhorn_max_iterations"],
        sinkhorn_tolerance=settings["sinkhorn_tolerance"],
    )
