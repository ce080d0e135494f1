"""ProdLDA / AVITM (Srivastava & Sutton 2017) on CPU torch.

Written here: no maintained package installs beside torch 2.13.0 without torchvision (the
``contextualized-topic-models`` package, which carries a ProdLDA, requires torchvision). The
network and training follow the authors' AVITM code; see :mod:`topicbench.baselines._neural`.

References
----------
A. Srivastava, C. Sutton, "Autoencoding Variational Inference for Topic Models", ICLR 2017
(§3: Laplace approximation of the Dirichlet prior; §3.4 ProdLDA's product-of-experts decoder).
"""

from __future__ import annotations

import numpy as np

from topicbench.core.config import OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus
from topicbench.core.output import TopicModelOutput
from topicbench.core.validation import InputError

from . import _neural
from .base import TopicModel, require_integers, require_positive


class ProdLDA(TopicModel):
    """ProdLDA: a variational autoencoder whose decoder is a product of experts.

    Settings
    --------
    epochs, batch_size : int
        Training epochs and mini-batch size (AVITM: 100 epochs, batches of 200).
    learning_rate, momentum : float
        Adam's step size and first-moment decay β₁ (AVITM: 0.002 and 0.99).
    hidden_sizes : tuple of int
        Encoder layers (AVITM: two of 100, softplus).
    dropout : float
        Dropout on the encoder output and on θ (AVITM: 0.2).
    prior_alpha : float
        The symmetric Dirichlet prior whose Laplace approximation is the prior (AVITM: 1).
    threads : int
        torch CPU threads during the fit (see :func:`~topicbench.baselines._neural.seeded`).
    top_words : int
        Words per topic in the output's topic lists.

    Notes
    -----
    Topic-word rows are softmax(β_k); document proportions are softmax(μ_d) of the encoder's
    posterior mean (no sampling, so they are deterministic). ProdLDA assigns no topics to tokens.
    """

    name = "prodlda"
    defaults = {
        "epochs": 100,
        "batch_size": 200,
        "learning_rate": 0.002,
        "momentum": 0.99,
        "hidden_sizes": (100, 100),
        "dropout": 0.2,
        "prior_alpha": 1.0,
        "threads": 1,
        "top_words": OUTPUT_TOP_WORDS,
    }
    supports_transform = True
    #: What the encoder reads (see :func:`~topicbench.baselines._neural.build_prodlda_network`).
    encoder_inputs = "bow"
    #: Whether the logistic-normal prior is learned (CTM) or fixed (AVITM).
    learn_priors = False
    #: Adam's β₂ (AVITM: 0.999; CTM: 0.99).
    adam_second_moment_decay = 0.999

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

    def _embeddings(self, corpus: Corpus):
        """The contextual document embeddings the encoder reads (none for ProdLDA)."""
        return None

    def _fit(self, corpus: Corpus, num_topics: int | None, seed: int) -> TopicModelOutput:
        _neural.load_torch(self.name)
        num_topics = self._require_num_topics(num_topics)
        settings = self.settings
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
            )
            optimizer = _neural.adam(
                network.parameters(), lr=float(settings["learning_rate"]), betas=(float(settings["momentum"]), self.adam_second_moment_decay)
            )
            output = _neural.fit_and_output(
                self.name, network, optimizer, corpus, embeddings, settings, seed,
                {"num_topics_": num_topics, **self._resolved(network, embeddings)},
            )
        self.network_ = network
        return output

    def _resolved(self, network, embeddings) -> dict:
        return {"encoder_inputs_": self.encoder_inputs}

    def _transform(self, corpus: Corpus) -> np.ndarray:
        embeddings = self._embeddings(corpus)
        with _neural.seeded(0, self.settings["threads"]):
            return _neural.infer_theta(self.network_, corpus.doc_term, embeddings).T.copy()
