"""Latent semantic indexing with gensim's ``LsiModel`` (a truncated SVD), on TF-IDF by default.

gensim's tutorial ("Topics and Transformations") fits LSI to the TF-IDF weights of the bag of
words (``TfidfModel`` at its defaults); ``features="counts"`` fits the counts. The SVD is
gensim's one-pass stochastic algorithm (Halko et al.) at its defaults: not iterative, so no
training-loss curve is logged.
"""

from __future__ import annotations

import logging

import numpy as np

from topicbench.core.constants import OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus
from topicbench.core.output import TopicModelOutput

from .base import TopicModel, normalize_rows, require_choice, require_integers, require_positive, top_words_of
from .bounds import MAX_BATCH_DOCUMENTS, MAX_TOP_WORDS
from .gensim_lda import _bow

logger = logging.getLogger(__name__)

FEATURES = ("tfidf", "counts")
#: The most power iterations of the stochastic SVD (gensim's default 2; each is a pass over the corpus).
MAX_POWER_ITERS = 100
#: The most oversampling columns: the SVD keeps vocabulary x (K + extra_samples) numbers.
MAX_EXTRA_SAMPLES = 10_000


class LSI(TopicModel):
    """Latent semantic indexing (gensim ``LsiModel``): the K leading singular vectors of the
    term-document matrix, with their signed weights made distributions by absolute value.

    Settings
    --------
    features : {"tfidf", "counts"}
        What the SVD factorises: gensim's ``TfidfModel`` weights of the counts (its tutorial,
        the default) or the counts.
    chunksize : int
        Documents per update (20000; at most 1,000,000).
    decay : float
        Weight of the existing decomposition against each new chunk (1.0; at most 1).
    onepass : bool
        gensim's one-pass stochastic SVD (True) or the multi-pass algorithm.
    power_iters, extra_samples : int
        Power iterations (2; at most :data:`MAX_POWER_ITERS`, 100) and oversampling (100; at most
        :data:`MAX_EXTRA_SAMPLES`, 10,000) of the stochastic SVD.
    top_words : int
        Words per topic in the output's topic lists (at most 1000).

    Notes
    -----
    LSI's topics are signed: a singular vector's words with large negative weights are as much
    part of it as those with large positive ones, and the vector's sign is arbitrary. The
    metrics need distributions, so a topic's word distribution is the absolute values of its
    weights (gensim's ``get_topics``, unit rows) normalised to sum to 1 — the ranking by which
    gensim's own ``show_topic`` lists a topic's words — and a document's topic proportions are
    the absolute values of its LSI coordinates (gensim's ``lsi[document]``) normalised to sum
    to 1. K may come out smaller than asked when the matrix's rank is lower (gensim keeps only
    the non-zero singular values): ``num_topics_`` is the K asked, the run's topics used the K
    found. The singular values are kept in ``extra["singular_values"]``. :meth:`transform` folds
    new documents into the fitted space (``lsi[document]``), with the training documents' idf.
    """

    name = "lsi"
    family = "matrix factorisation"
    not_a_probability_model = (
        "LSI's topics are signed singular vectors of the term-document matrix (their absolute values, "
        "normalised, only rank words), not word probabilities"
    )
    defaults = {
        "features": "tfidf",
        "chunksize": 20000,
        "decay": 1.0,
        "onepass": True,
        "power_iters": 2,
        "extra_samples": 100,
        "top_words": OUTPUT_TOP_WORDS,
    }
    setting_maxima = {
        "chunksize": MAX_BATCH_DOCUMENTS, "decay": 1.0, "power_iters": MAX_POWER_ITERS,
        "extra_samples": MAX_EXTRA_SAMPLES, "top_words": MAX_TOP_WORDS,
    }
    supports_transform = True

    def _check_settings(self, settings: dict) -> None:
        require_choice(self.name, "features", settings["features"], FEATURES)
        require_integers(self.name, settings, {"chunksize": 1, "power_iters": 0, "extra_samples": 0, "top_words": 1})
        require_positive(self.name, settings, ["decay"])
        require_choice(self.name, "onepass", settings["onepass"], (True, False))

    def _setup(self, corpus: Corpus) -> None:
        """Import gensim's models before the timed fit (one-time work: several seconds)."""
        import gensim.matutils  # noqa: F401
        import gensim.models  # noqa: F401

    def estimator(self, bow, corpus: Corpus, num_topics: int):
        """gensim's ``LsiModel`` of these settings and seed, fitted on ``bow``."""
        from gensim.models import LsiModel

        settings = self.settings
        return LsiModel(
            corpus=bow, num_topics=num_topics, id2word=dict(enumerate(corpus.vocabulary)),
            chunksize=int(settings["chunksize"]), decay=float(settings["decay"]), distributed=False,
            onepass=bool(settings["onepass"]), power_iters=int(settings["power_iters"]),
            extra_samples=int(settings["extra_samples"]), dtype=np.float64, random_seed=self.random_state,
        )

    def _features(self, corpus: Corpus, *, fit: bool) -> list:
        """gensim's bag of words of ``corpus``, TF-IDF weighted (idf of the training corpus) or counts."""
        bow = _bow(corpus)
        if self.settings["features"] == "counts":
            return bow
        if fit:
            from gensim.models import TfidfModel

            self.tfidf_ = TfidfModel(bow, id2word=dict(enumerate(corpus.vocabulary)))
        return list(self.tfidf_[bow])

    def _fit(self, corpus: Corpus) -> tuple[TopicModelOutput, dict]:
        num_topics = self._require_num_topics(self.num_topics)
        features = self._features(corpus, fit=True)
        logger.info("lsi: K=%d on %s of %s", num_topics, self.settings["features"], corpus.name)
        model = self.estimator(features, corpus, num_topics)
        self.model_ = model
        topic_word = normalize_rows(np.abs(model.get_topics()))
        output = TopicModelOutput(
            model=self.name,
            vocabulary=tuple(corpus.vocabulary),
            topics=top_words_of(topic_word, corpus.vocabulary, int(self.settings["top_words"])),
            topic_word_matrix=topic_word,
            topic_document_matrix=self._topic_document(features),
            extra={"singular_values": [float(value) for value in model.projection.s]},
        )
        return output, {"num_topics_": num_topics}

    def _topic_document(self, features: list) -> np.ndarray:
        """|LSI coordinates| of each document, normalised per document (K x D)."""
        from gensim.matutils import corpus2dense

        coordinates = corpus2dense(self.model_[features], num_terms=len(self.model_.projection.s), num_docs=len(features))
        return normalize_rows(np.abs(coordinates).T).T.copy()

    def _transform(self, corpus: Corpus) -> np.ndarray:
        return self._topic_document(self._features(corpus, fit=False))
