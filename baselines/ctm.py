"""Contextualized Topic Models (Bianchi et al. 2021): ProdLDA whose encoder reads a sentence
embedding of the document, on torch (CUDA when available).

The network is the authors' package's (``contextualized-topic-models`` 2.6.1,
``DecoderNetwork``): CombinedTM's encoder reads the bag of words concatenated with a linear map
of the embedding to V dimensions; ZeroShotTM's reads the embedding alone; the logistic-normal
prior (mean 0, variance 1 - 1/K at the start) is learned; Adam with lr 2e-3 and
β = (0.99, 0.99), batches of 64 (the last, short one dropped), 100 epochs; a document's θ is the
mean of 20 posterior draws, as the package's ``get_doc_topic_distribution``.
``tests/baselines/test_ctm_fidelity.py`` proves it equal to the package: the same initial weights
from a seed, and the same loss and gradients at the same parameters and batch. It is written here, on
:func:`~topicbench.baselines._neural.build_prodlda_network`, because it reads the bag of words
sparsely (only each document's stored counts), where the package builds the dense B x V batch:
the same numbers, much faster on a large vocabulary. Embeddings come from the local
all-MiniLM-L6-v2 (:mod:`topicbench.baselines.embeddings`); nothing is downloaded.

References
----------
F. Bianchi, S. Terragni, D. Hovy, "Pre-training is a Hot Topic: Contextualized Document
Embeddings Improve Topic Coherence", ACL 2021 (CombinedTM); F. Bianchi et al., "Cross-lingual
Contextualized Topic Models with Zero-shot Learning", EACL 2021 (ZeroShotTM).
"""

from __future__ import annotations

from topicbench.core.corpus import Corpus

from .base import require_choice
from .prodlda import ProdLDA


class CTM(ProdLDA):
    """Contextualized Topic Model (CombinedTM by default).

    Settings
    --------
    variant : {"combined", "zeroshot"}
        CombinedTM (bag of words + embedding) or ZeroShotTM (embedding only).
    embedding_model : str or None
        A local sentence-transformers folder; ``None`` is the bundled all-MiniLM-L6-v2.
    epochs, batch_size, learning_rate, momentum, hidden_sizes, dropout, prior_alpha, threads, top_words
        As for :class:`~topicbench.baselines.prodlda.ProdLDA`, with CTM's defaults; the
        learned prior starts from the Laplace approximation of Dirichlet(``prior_alpha``).
    """

    name = "ctm"
    family = "neural (VAE with document embeddings)"
    defaults = {
        **ProdLDA.defaults,
        "variant": "combined",
        "embedding_model": None,
        "batch_size": 64,  # CTM's package default (AVITM's is 200)
    }
    learn_priors = True
    uses_document_embeddings = True
    adam_second_moment_decay = 0.99
    drop_last_batch = True  # the package's DataLoader(shuffle=True, drop_last=True)
    theta_samples = 20  # the package's get_doc_topic_distribution(n_samples=20)

    def _check_settings(self, settings: dict) -> None:
        super()._check_settings(settings)
        require_choice(self.name, "variant", settings["variant"], ("combined", "zeroshot"))

    @property
    def encoder_inputs(self) -> str:
        return "combined" if self.settings["variant"] == "combined" else "contextual"

    def _embeddings(self, corpus: Corpus):
        from .embeddings import document_embeddings

        return document_embeddings(corpus, model_path=self.settings["embedding_model"])

    def _resolved(self, network, embeddings) -> dict:
        return {
            "encoder_inputs_": self.encoder_inputs,
            "embedding_size_": int(embeddings.shape[1]),
        }
