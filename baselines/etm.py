"""The Embedded Topic Model (Dieng, Ruiz & Blei 2020) on torch (CUDA when available).

Written here: ETM has no maintained package on PyPI (the authors publish research code; OCTIS
vendors a copy and pins old torch). The model follows the authors' code as OCTIS ships it
(``octis/models/ETM_model/etm.py``, Dieng et al.'s ``etm.py``): topic-word distributions
β_k = softmax(ρ α_k) over word embeddings ρ and topic embeddings α_k, a logistic-normal encoder
q(δ_d) = N(μ_d, σ_d²) on the normalised bag of words, θ_d = softmax(δ_d), and the ELBO with a
standard normal prior, minimised per document on average over each mini-batch (the authors'
``recon_loss.mean() + kld_theta``). OCTIS does not ship the authors' ``main.py``, so the
defaults are those of OCTIS's wrapper ``octis/models/ETM.py`` (each one's source is listed
under Settings); its training loop is the authors' except that it does not reshuffle the
documents each epoch, which the authors' ``main.py`` does (``torch.randperm``) and this one does.
``benchmarks/bench_fidelity.py`` trains OCTIS's code beside this one and compares their topics.

Word embeddings ρ are either trained with the model (``word_embeddings="trained"``, the ETM
paper's "ETM" without pre-fitted embeddings) or taken, fixed, from the local
all-MiniLM-L6-v2 sentence-transformers model (``"sentence_transformer"``: each vocabulary word
embedded alone, cached by :func:`topicbench.baselines.embeddings.word_vectors`).

References
----------
A. B. Dieng, F. J. R. Ruiz, D. M. Blei, "Topic Modeling in Embedding Spaces", TACL 8 (2020),
§3 (the model, eq. 3), §4 (variational inference, eq. 6-7).
"""

from __future__ import annotations

import numpy as np

from topicbench.core.constants import OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus
from topicbench.core.output import TopicModelOutput
from topicbench.core.validation import InputError

from . import _neural
from .base import TopicModel, require_choice, require_integers, require_positive
from .bounds import MAX_BATCH_DOCUMENTS, MAX_ITERATIONS, MAX_LAYER_SIZE, MAX_LEARNING_RATE, MAX_THREADS, MAX_TOP_WORDS

#: Added inside log p(w | d) (the authors' constant).
ETM_LOG_EPSILON = 1e-6


class ETM(TopicModel):
    """The Embedded Topic Model.

    Settings
    --------
    word_embeddings : {"trained", "sentence_transformer"}
        Learn ρ with the model, or fix it to the local sentence-transformers word vectors.
    embedding_size : int
        Size of ρ and α_k when trained (OCTIS ``rho_size=300``, ``embedding_size=300``; ρ is
        trained, ``train_embeddings=True``); with fixed vectors, their size (384). At most 10,000.
    embedding_model : str or None
        A local sentence-transformers folder for ``"sentence_transformer"`` (``None``: the bundled
        all-MiniLM-L6-v2).
    hidden_size : int
        Width of the encoder's two layers (OCTIS ``t_hidden_size=800``, as the authors' script;
        at most 10,000).
    activation : {"relu", "softplus", "tanh"}
        Encoder activation (OCTIS ``activation="relu"``, as the authors' ``theta_act``).
    dropout : float
        Dropout on the encoder's hidden layer (OCTIS ``dropout=0.5``; the authors' script:
        ``enc_drop=0.0``).
    epochs, batch_size : int
        OCTIS ``num_epochs=100``, ``batch_size=128`` (the authors' script: batches of 1000, and
        "150 for 20ng 100 for others" epochs). At most 100,000 epochs and 1,000,000 documents a
        batch.
    learning_rate, weight_decay : float
        Adam (OCTIS ``optimizer="adam"``, ``lr=0.005``, ``wdecay=1.2e-6``, as the authors'
        script; no gradient clipping, ``clip=0.0``; the encoder reads counts / document length,
        ``bow_norm=1``). The step size is at most 10, the weight decay at most 1.
    threads : int
        torch CPU threads during the fit (at most 1024).
    top_words : int
        Words per topic in the output's topic lists (at most 1000).

    Notes
    -----
    Document proportions in the output are softmax(μ_d) (the encoder's posterior mean, no
    sampling: the authors' ``get_theta`` in evaluation mode, as OCTIS's ``get_info``); topic-word
    rows are β_k (``get_beta``). ETM assigns no topics to tokens.
    """

    name = "etm"
    family = "neural (VAE with word embeddings)"
    convergence_family = "neural"
    defaults = {
        "word_embeddings": "trained",
        "embedding_size": 300,
        "embedding_model": None,
        "hidden_size": 800,
        "activation": "relu",
        "dropout": 0.5,
        "epochs": 100,
        "batch_size": 128,
        "learning_rate": 0.005,
        "weight_decay": 1.2e-6,
        "threads": 1,
        "top_words": OUTPUT_TOP_WORDS,
    }
    setting_maxima = {
        "embedding_size": MAX_LAYER_SIZE, "hidden_size": MAX_LAYER_SIZE, "dropout": 1.0, "epochs": MAX_ITERATIONS,
        "batch_size": MAX_BATCH_DOCUMENTS, "learning_rate": MAX_LEARNING_RATE, "weight_decay": 1.0,
        "threads": MAX_THREADS, "top_words": MAX_TOP_WORDS,
    }
    supports_transform = True

    def _check_settings(self, settings: dict) -> None:
        require_choice(self.name, "word_embeddings", settings["word_embeddings"], ("trained", "sentence_transformer"))
        require_choice(self.name, "activation", settings["activation"], ("relu", "softplus", "tanh"))
        require_integers(
            self.name, settings,
            {"embedding_size": 1, "hidden_size": 1, "epochs": 1, "batch_size": 1, "threads": 1, "top_words": 1},
        )
        require_positive(self.name, settings, ["learning_rate"])
        if not 0 <= settings["weight_decay"] < np.inf or not 0 <= settings["dropout"] < 1:
            raise InputError(f"{self.name}: weight_decay must be >= 0 and dropout in [0, 1)")

    def _fit(self, corpus: Corpus) -> tuple[TopicModelOutput, dict]:
        _neural.load_torch(self.name)
        num_topics = self._require_num_topics(self.num_topics)
        settings, seed = self.settings, self.random_state
        fixed_vectors = None
        if settings["word_embeddings"] == "sentence_transformer":
            from .embeddings import word_vectors

            fixed_vectors = word_vectors(corpus.vocabulary, model_path=settings["embedding_model"])
        with _neural.seeded(seed, settings["threads"]):
            network = _build_network(
                vocabulary_size=corpus.n_words,
                num_topics=num_topics,
                embedding_size=int(settings["embedding_size"]) if fixed_vectors is None else fixed_vectors.shape[1],
                fixed_vectors=fixed_vectors,
                hidden_size=int(settings["hidden_size"]),
                activation=settings["activation"],
                dropout=float(settings["dropout"]),
            ).to(_neural.torch_device())
            optimizer = _neural.adam(
                network.parameters(), lr=float(settings["learning_rate"]), weight_decay=float(settings["weight_decay"])
            )
            fitted = _neural.fit_and_output(
                self.name, network, optimizer, corpus, None, settings, seed,
                {
                    "num_topics_": num_topics,
                    "embedding_size_": int(network.word_embeddings.shape[1]),
                    "trains_word_embeddings_": fixed_vectors is None,
                },
                on_progress=self._progress,
            )
        self.network_ = network
        return fitted

    def _transform(self, corpus: Corpus) -> np.ndarray:
        with _neural.seeded(0, self.settings["threads"]):
            return _neural.infer_theta(self.network_, corpus.doc_term, None).T.copy()


def _build_network(*, vocabulary_size, num_topics, embedding_size, fixed_vectors, hidden_size, activation, dropout):
    """ETM's encoder and decoder as one module with ``loss(bow, embedding)`` and ``theta``
    (:class:`~topicbench.baselines._networks.ETMNetwork`; imports torch)."""
    from ._networks import ETMNetwork

    return ETMNetwork(
        vocabulary_size=vocabulary_size, num_topics=num_topics, embedding_size=embedding_size,
        fixed_vectors=None if fixed_vectors is None else np.asarray(fixed_vectors), hidden_size=hidden_size,
        activation=activation, dropout=dropout, log_epsilon=ETM_LOG_EPSILON,
    )
