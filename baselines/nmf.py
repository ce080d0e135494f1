"""Non-negative matrix factorisation with scikit-learn's ``NMF``, on TF-IDF features by default.

The input is scikit-learn's topic-extraction example's ("Topic extraction with Non-negative
Matrix Factorization and Latent Dirichlet Allocation"): NMF with the Frobenius loss on TF-IDF
features. Here the TF-IDF weights are ``TfidfTransformer()``'s defaults (smooth idf, l2-normalised
rows) applied to the corpus's own counts: the vocabulary is the corpus's, fixed by its
preprocessing, where the example lets ``TfidfVectorizer`` choose one. ``features="counts"`` fits
the raw counts instead. The estimator keeps scikit-learn's own defaults (coordinate descent,
``init=None``: NNDSVDa when K <= min(D, V), ``tol=1e-4``, ``max_iter=200``, no regularisation).
"""

from __future__ import annotations

import logging

import numpy as np

from topicbench.core.constants import OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus
from topicbench.core.output import TopicModelOutput
from topicbench.core.validation import InputError

from .base import TopicModel, normalize_rows, require_choice, require_integers, require_positive, top_words_of
from .bounds import MAX_ITERATIONS, MAX_SCALE, MAX_TOP_WORDS, require_at_most

logger = logging.getLogger(__name__)

FEATURES = ("tfidf", "counts")
INITS = ("random", "nndsvd", "nndsvda", "nndsvdar")
SOLVERS = ("cd", "mu")
BETA_LOSSES = ("frobenius", "kullback-leibler", "itakura-saito")


class NMF(TopicModel):
    """Non-negative matrix factorisation X ≈ W H (scikit-learn), K topics as the rows of H.

    Settings
    --------
    features : {"tfidf", "counts"}
        What X is: TF-IDF weights of the corpus's counts (scikit-learn's example, the default) or
        the counts themselves.
    init : None or {"random", "nndsvd", "nndsvda", "nndsvdar"}
        Initialisation (None: scikit-learn's choice, resolved in ``init_``).
    solver : {"cd", "mu"}
        Coordinate descent (default) or multiplicative updates.
    beta_loss : {"frobenius", "kullback-leibler", "itakura-saito"}
        The divergence minimised; the last two need ``solver="mu"``.
    tol, max_iter :
        Stopping tolerance (1e-4; at most 1) and most iterations (200; at most 100,000),
        scikit-learn's.
    alpha_W, l1_ratio : float
        Regularisation of W (and of H, scikit-learn's ``alpha_H="same"``): strength (0; at most
        10^6) and L1 share in [0, 1] (0).
    top_words : int
        Words per topic in the output's topic lists (at most 1000).

    Notes
    -----
    Topic-word rows are H's rows normalised to sum to 1; document proportions are W's rows with
    H's row sums moved into them, normalised (:func:`document_topics`; a document W maps to all
    zeros gets the uniform distribution), so a topic's share of a document does not depend on how
    the solver split the scale between W and H. scikit-learn keeps no loss per iteration, so no training-loss curve is logged: ``extra["converged"]`` is
    scikit-learn's own stopping rule (the fit stopped before ``max_iter``), beside
    ``extra["iterations"]`` and the final ``extra["reconstruction_error"]`` (the loss at the
    end, the β-divergence of X and W H). :meth:`transform` solves for W with H fixed
    (scikit-learn's ``transform``), on TF-IDF weights with the training documents' idf. An
    ``init`` of the NNDSVD family needs K at most min(documents, vocabulary), checked when the
    fit starts (scikit-learn would find out in its fit).
    """

    name = "nmf"
    family = "matrix factorisation"
    not_a_probability_model = (
        "NMF factorises TF-IDF weights (or counts) by a squared or beta divergence; its normalised loadings are "
        "not word probabilities of a model of the documents, and they hold exact zeros"
    )
    defaults = {
        "features": "tfidf",
        "init": None,
        "solver": "cd",
        "beta_loss": "frobenius",
        "tol": 1e-4,
        "max_iter": 200,
        "alpha_W": 0.0,
        "l1_ratio": 0.0,
        "top_words": OUTPUT_TOP_WORDS,
    }
    setting_maxima = {"tol": 1.0, "max_iter": MAX_ITERATIONS, "alpha_W": MAX_SCALE, "l1_ratio": 1.0,
                      "top_words": MAX_TOP_WORDS}
    supports_transform = True

    def _check_settings(self, settings: dict) -> None:
        require_choice(self.name, "features", settings["features"], FEATURES)
        if settings["init"] is not None:
            require_choice(self.name, "init", settings["init"], INITS)
        require_choice(self.name, "solver", settings["solver"], SOLVERS)
        require_choice(self.name, "beta_loss", settings["beta_loss"], BETA_LOSSES)
        if settings["beta_loss"] != "frobenius" and settings["solver"] != "mu":
            raise InputError(
                f"{self.name}: beta_loss {settings['beta_loss']!r} needs solver 'mu' (coordinate descent "
                "minimises the Frobenius loss only); set solver: mu"
            )
        require_positive(self.name, settings, ["tol"])
        require_integers(self.name, settings, {"max_iter": 1, "top_words": 1})
        for key, high in (("alpha_W", MAX_SCALE), ("l1_ratio", 1.0)):
            value = settings[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= high:
                raise InputError(f"{self.name}: {key} must be a number in [0, {high}], got {value!r}")

    def check_corpus(self, corpus: Corpus) -> None:
        if self.settings["init"] in ("nndsvd", "nndsvda", "nndsvdar"):  # an SVD of rank K
            require_at_most(self.name, f"num_topics with init {self.settings['init']!r}", self.num_topics,
                            min(corpus.n_documents, corpus.n_words),
                            f"the smaller of corpus {corpus.name!r}'s documents ({corpus.n_documents}) and "
                            f"words ({corpus.n_words})")

    def _setup(self, corpus: Corpus) -> None:
        """Import scikit-learn's NMF and TF-IDF before the timed fit (one-time work)."""
        import sklearn.decomposition  # noqa: F401
        import sklearn.feature_extraction.text  # noqa: F401

    def estimator(self, num_topics: int):
        """scikit-learn's ``NMF`` of these settings and seed (unfitted)."""
        from sklearn.decomposition import NMF as SklearnNMF

        settings = self.settings
        return SklearnNMF(
            num_topics, init=settings["init"], solver=settings["solver"], beta_loss=settings["beta_loss"],
            tol=float(settings["tol"]), max_iter=int(settings["max_iter"]), random_state=self.random_state,
            alpha_W=float(settings["alpha_W"]), l1_ratio=float(settings["l1_ratio"]),
        )

    def _features(self, corpus: Corpus, *, fit: bool):
        """X of ``corpus``: TF-IDF (fitting the idf on the training corpus) or the counts, float64."""
        counts = corpus.doc_term.astype(np.float64)
        if self.settings["features"] == "counts":
            return counts
        if fit:
            from sklearn.feature_extraction.text import TfidfTransformer

            self.tfidf_ = TfidfTransformer().fit(counts)
        return self.tfidf_.transform(counts)

    def _fit(self, corpus: Corpus) -> tuple[TopicModelOutput, dict]:
        num_topics = self._require_num_topics(self.num_topics)
        features = self._features(corpus, fit=True)
        model = self.estimator(num_topics)
        logger.info("nmf: K=%d on %s of %s (%d x %d)", num_topics, self.settings["features"], corpus.name, *features.shape)
        doc_topic = model.fit_transform(features)
        self.model_ = model
        topic_word = normalize_rows(model.components_)
        iterations = int(model.n_iter_)
        output = TopicModelOutput(
            model=self.name,
            vocabulary=tuple(corpus.vocabulary),
            topics=top_words_of(topic_word, corpus.vocabulary, int(self.settings["top_words"])),
            topic_word_matrix=topic_word,
            topic_document_matrix=document_topics(doc_topic, model.components_),
            extra={
                "iterations": iterations,
                "reconstruction_error": float(model.reconstruction_err_),
                "converged": iterations < int(self.settings["max_iter"]),
                "training_loss_kind": "no curve: scikit-learn's stopping rule (tol reached before max_iter)",
            },
        )
        resolved = {"num_topics_": num_topics, "init_": resolved_init(self.settings["init"], num_topics, features.shape)}
        return output, resolved

    def _transform(self, corpus: Corpus) -> np.ndarray:
        return document_topics(self.model_.transform(self._features(corpus, fit=False)), self.model_.components_)


def document_topics(doc_topic: np.ndarray, components: np.ndarray) -> np.ndarray:
    """The topic-document matrix (K x D) of NMF's X ≈ W H: W's rows with H's row scale moved in,
    normalised. With s the row sums of H, W H = (W diag s)(diag(1/s) H): the topic-word rows are
    H's normalised, and W diag s holds each topic's mass in each document. W alone weighs a topic
    by 1/s (NMF fixes neither factor's scale), so a topic's share of the corpus would depend on how
    the solver split the scale between W and H, not on how much of the documents it explains.

    >>> document_topics(np.array([[1.0, 1.0]]), np.array([[3.0, 1.0], [0.5, 0.5]])).ravel().tolist()
    [0.8, 0.2]
    """
    return normalize_rows(doc_topic * components.sum(axis=1)).T.copy()


def resolved_init(init: str | None, num_topics: int, shape: tuple[int, int]) -> str:
    """The initialisation scikit-learn's ``NMF`` uses for ``init`` (its ``_initialize_nmf``
    rule: None is NNDSVDa when K <= min(D, V), else random)."""
    if init is not None:
        return init
    return "nndsvda" if num_topics <= min(shape) else "random"
