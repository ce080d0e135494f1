"""ProdLDA / AVITM (Srivastava & Sutton 2017) on torch (CUDA when available).

Written here: no maintained package installs beside torch 2.13.0 without torchvision (the
``contextualized-topic-models`` package, which carries a ProdLDA, requires torchvision). The
network, training and defaults follow the PyTorch AVITM that OCTIS ships
(``octis/models/pytorchavitm``: ``AVITM.py`` for the defaults, ``avitm/avitm_model.py`` for the
loss, optimiser and training loop, ``avitm/decoder_network.py`` and
``avitm/inference_network.py`` for the network); see :mod:`topicbench.baselines._neural`.
``benchmarks/bench_fidelity.py`` trains that code beside this one and compares their topics.

Where the authors' original TensorFlow script (``run.py`` of
akashgit/autoencoding_vi_for_topic_models) differs, OCTIS's port is followed: batches of 64 (TF:
200, drawn with replacement), a learned prior (TF: fixed), Adam β₂ = 0.99 (TF: 0.999), and θ of a
document the mean of 10 sampled softmax(μ + σε).

References
----------
A. Srivastava, C. Sutton, "Autoencoding Variational Inference for Topic Models", ICLR 2017
(§3: Laplace approximation of the Dirichlet prior; §3.4 ProdLDA's product-of-experts decoder).
"""

from __future__ import annotations

import numpy as np

from topicbench.core.constants import OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus
from topicbench.core.output import TopicModelOutput
from topicbench.core.validation import InputError

from . import _neural
from .base import TopicModel, require_integers, require_positive
from .bounds import (
    MAX_BATCH_DOCUMENTS, MAX_CONCENTRATION, MAX_ITERATIONS, MAX_LAYER_SIZE, MAX_LAYERS, MAX_LEARNING_RATE, MAX_THREADS,
    MAX_TOP_WORDS,
)


class ProdLDA(TopicModel):
    """ProdLDA: a variational autoencoder whose decoder is a product of experts.

    Settings
    --------
    epochs, batch_size : int
        Training epochs and mini-batch size (OCTIS ``AVITM``: ``num_epochs=100``,
        ``batch_size=64``; the batches are a fresh shuffle of the documents each epoch, the last
        one short, as its ``DataLoader(shuffle=True)``; a last batch of a single document joins
        the one before, where OCTIS's BatchNorm would fail on it). At most 100,000 epochs and
        1,000,000 documents a batch (:mod:`~topicbench.baselines.bounds`).
    learning_rate, momentum : float
        Adam's step size and first-moment decay β₁ (``lr=2e-3``, ``momentum=0.99``; β₂ is 0.99,
        ``avitm_model.py``'s ``betas=(momentum, 0.99)``; ``solver="adam"``, no
        ``reduce_on_plateau``). The step size is at most 10.
    hidden_sizes : tuple of int
        Encoder layers (``num_layers=2``, ``num_neurons=100``, ``activation="softplus"``): at most
        100 layers of at most 10,000 units.
    dropout : float
        Dropout on the encoder output and on θ (``dropout=0.2``).
    prior_alpha : float
        The symmetric Dirichlet whose Laplace approximation is the prior's start (1: mean 0,
        variance 1 - 1/K, OCTIS's ``prior_mean=0.0``, ``prior_variance=None``). The prior's mean
        and variance are then learned (``learn_priors=True``); at most 10,000.
    threads : int
        torch CPU threads during the fit (see :func:`~topicbench.baselines._neural.seeded`; at
        most 1024).
    top_words : int
        Words per topic in the output's topic lists (at most 1000).

    Notes
    -----
    Topic-word rows are softmax(β_k): OCTIS returns β itself as its topic-word matrix and ranks
    each topic's words by β_k, the same order. Document proportions are, as OCTIS's
    ``get_thetas``, the mean over :attr:`theta_samples` draws of softmax(μ_d + σ_d ε) with the
    encoder in evaluation mode (BatchNorm's running statistics, no dropout); the draws come from
    the fit's seed (``transform``: seed 0), so a seed still gives one output. ProdLDA assigns no
    topics to tokens.
    """

    name = "prodlda"
    family = "neural (VAE)"
    convergence_family = "neural"
    defaults = {
        "epochs": 100,
        "batch_size": 64,
        "learning_rate": 0.002,
        "momentum": 0.99,
        "hidden_sizes": (100, 100),
        "dropout": 0.2,
        "prior_alpha": 1.0,
        "threads": 1,
        "top_words": OUTPUT_TOP_WORDS,
    }
    setting_maxima = {
        "epochs": MAX_ITERATIONS, "batch_size": MAX_BATCH_DOCUMENTS, "learning_rate": MAX_LEARNING_RATE,
        "momentum": 1.0, "hidden_sizes": MAX_LAYER_SIZE, "dropout": 1.0, "prior_alpha": MAX_CONCENTRATION,
        "threads": MAX_THREADS, "top_words": MAX_TOP_WORDS,
    }
    supports_transform = True
    #: What the encoder reads (see :func:`~topicbench.baselines._neural.build_prodlda_network`).
    encoder_inputs = "bow"
    #: Whether the logistic-normal prior is learned (OCTIS's AVITM and CTM: ``learn_priors=True``)
    #: or held at its start.
    learn_priors = True
    #: Adam's β₂ (OCTIS's AVITM and CTM: 0.99; the original TensorFlow AVITM: 0.999).
    adam_second_moment_decay = 0.99
    #: θ of a document is the mean of this many draws softmax(μ + σε) (OCTIS AVITM's
    #: ``num_samples=10``; CTM's package: 20); 0 would read the posterior mean softmax(μ).
    theta_samples = 10
    #: Leave out each epoch's last, short mini-batch (CTM's DataLoader does; AVITM's does not).
    drop_last_batch = False

    def _check_settings(self, settings: dict) -> None:
        require_integers(self.name, settings, {"epochs": 1, "batch_size": 2, "threads": 1, "top_words": 1})
        require_positive(self.name, settings, ["learning_rate", "prior_alpha"])
        for key in ("dropout", "momentum"):
            value = settings[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
                raise InputError(f"{self.name}: {key} must lie in [0, 1), got {value!r}")
        sizes = settings["hidden_sizes"]
        if not isinstance(sizes, (tuple, list)) or not sizes or not all(isinstance(n, int) and n >= 1 for n in sizes):
            raise InputError(f"{self.name}: hidden_sizes must list positive layer sizes, got {sizes!r}")
        if len(sizes) > MAX_LAYERS:
            raise InputError(f"{self.name}: hidden_sizes lists {len(sizes)} layers; give at most {MAX_LAYERS}")

    def _embeddings(self, corpus: Corpus):
        """The contextual document embeddings the encoder reads (none for ProdLDA)."""
        return None

    def _setup(self, corpus: Corpus) -> None:
        """Import torch and load the (cached) document embeddings before the timed fit."""
        _neural.load_torch(self.name)
        self._embeddings(corpus)

    def _fit(self, corpus: Corpus) -> tuple[TopicModelOutput, dict]:
        _neural.load_torch(self.name)
        num_topics = self._require_num_topics(self.num_topics)
        settings, seed = self.settings, self.random_state
        embeddings = self._embeddings(corpus)
        with _neural.seeded(seed, settings["threads"]):
            network = _neural.build_prodlda_network(
                vocabulary_size=corpus.n_words,
                num_topics=num_topics,
                embedding_size=0 if embeddings is None else embeddings.shape[1],
                inputs=self.encoder_inputs,
                hidden_sizes=tuple(int(size) for size in settings["hidden_sizes"]),
                dropout=float(settings["dropout"]),
                learn_priors=self.learn_priors,
                prior_alpha=float(settings["prior_alpha"]),
            ).to(_neural.torch_device())
            optimizer = _neural.adam(
                network.parameters(), lr=float(settings["learning_rate"]), betas=(float(settings["momentum"]), self.adam_second_moment_decay)
            )
            fitted = _neural.fit_and_output(
                self.name, network, optimizer, corpus, embeddings, settings, seed,
                {"num_topics_": num_topics, "theta_samples_": self.theta_samples, **self._resolved(network, embeddings)},
                drop_last=self.drop_last_batch, theta_samples=self.theta_samples, on_progress=self._progress,
            )
        self.network_ = network
        return fitted

    def _resolved(self, network, embeddings) -> dict:
        return {"encoder_inputs_": self.encoder_inputs}

    def _transform(self, corpus: Corpus) -> np.ndarray:
        embeddings = self._embeddings(corpus)
        with _neural.seeded(0, self.settings["threads"]):
            return _neural.infer_theta(self.network_, corpus.doc_term, embeddings, samples=self.theta_samples).T.copy()

