"""BERTopic (Grootendorst 2022) with the local all-MiniLM-L6-v2 embeddings and seeded UMAP/HDBSCAN.

The package ``bertopic`` is optional: it is imported when the model is fitted, and a missing
package gives a :class:`~topicbench.baselines.base.ModelError` naming the model.

References
----------
M. Grootendorst, "BERTopic: Neural topic modeling with a class-based TF-IDF procedure",
arXiv:2203.05794 (2022), §3 (embeddings, UMAP + HDBSCAN clustering, c-TF-IDF).
"""

from __future__ import annotations

import logging

import numpy as np

from topicbench.core.constants import OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus
from topicbench.core.output import TopicModelOutput
from topicbench.core.validation import InputError

from .base import ModelError, TopicModel, import_optional, normalize_rows, require_integers
from .bounds import MAX_BATCH_DOCUMENTS, MAX_TOP_WORDS, MAX_TOPICS, require_at_most

logger = logging.getLogger(__name__)

#: BERTopic's label for documents HDBSCAN leaves unclustered.
OUTLIER_TOPIC = -1
#: The most neighbours of UMAP's graph (its default 15; memory grows with documents x neighbours).
MAX_UMAP_NEIGHBORS = 10_000
#: The most dimensions UMAP reduces to (default 5; the embeddings have 384).
MAX_UMAP_COMPONENTS = 1_000


class BERTopicModel(TopicModel):
    """BERTopic: sentence embeddings -> UMAP -> HDBSCAN clusters -> c-TF-IDF topic words.

    The number of topics is HDBSCAN's unless ``reduce_to_num_topics`` (then BERTopic merges
    topics down to ``num_topics``) or ``nr_topics`` says otherwise; the paper runs it without K.

    Settings
    --------
    min_topic_size : int
        HDBSCAN's ``min_cluster_size`` (BERTopic default 10; at most 1,000,000).
    umap_neighbors, umap_components : int
        UMAP's ``n_neighbors`` and ``n_components`` (15 and 5; at most
        :data:`MAX_UMAP_NEIGHBORS`, 10,000, and :data:`MAX_UMAP_COMPONENTS`, 1000); ``min_dist=0``,
        cosine metric.
    nr_topics : None, "auto" or int
        BERTopic's topic reduction after clustering (``None``: none); a number is at most
        100,000 and at most the corpus's documents.
    reduce_to_num_topics : bool
        Reduce to the model's ``num_topics`` (overrides ``nr_topics``).
    calculate_probabilities : bool
        Document-topic proportions from HDBSCAN's soft membership vectors; otherwise each
        document's column is one-hot on its topic (uniform for an outlier document).
    embedding_model : str or None
        A local sentence-transformers folder (``None``: the bundled all-MiniLM-L6-v2).
    top_words : int
        Words per topic in the output's topic lists (BERTopic's ``top_n_words``; at most 1000).

    Notes
    -----
    Topics are BERTopic's clusters without the outlier topic −1, in BERTopic's order (by size).
    Their word lists are BERTopic's representation with its padding (empty words for topics with
    fewer than ``top_words`` scored words) removed, so a short topic stays short. Topic-word
    rows are the c-TF-IDF rows scaled to sum to 1 (c-TF-IDF is a weight, not a probability).
    BERTopic assigns no topics to tokens. What the corpus must hold (documents enough for UMAP's
    neighbours and two clusters; no more topics to reduce to than documents) is checked when the
    fit starts, before the embeddings load.
    """

    name = "bertopic"
    family = "embedding clustering (UMAP + HDBSCAN, c-TF-IDF words)"
    setup_phase = "embedding documents"  # the sentence model over the corpus, unless cached
    not_a_probability_model = (
        "BERTopic clusters document embeddings; its topic words are c-TF-IDF weights of the clusters, "
        "not word probabilities"
    )
    defaults = {
        "min_topic_size": 10,
        "umap_neighbors": 15,
        "umap_components": 5,
        "nr_topics": None,
        "reduce_to_num_topics": False,
        "calculate_probabilities": True,
        "embedding_model": None,
        "top_words": OUTPUT_TOP_WORDS,
    }
    setting_maxima = {
        "min_topic_size": MAX_BATCH_DOCUMENTS, "umap_neighbors": MAX_UMAP_NEIGHBORS,
        "umap_components": MAX_UMAP_COMPONENTS, "nr_topics": MAX_TOPICS, "top_words": MAX_TOP_WORDS,
    }
    supports_transform = True
    uses_document_embeddings = True

    def check_num_topics(self, num_topics) -> None:
        """K is needed only to reduce the topics to it; HDBSCAN chooses the number otherwise."""
        if num_topics is not None or self.settings["reduce_to_num_topics"]:
            self._require_num_topics(num_topics)

    def _check_settings(self, settings: dict) -> None:
        require_integers(self.name, settings, {"min_topic_size": 2, "umap_neighbors": 2, "umap_components": 1, "top_words": 1})
        nr_topics = settings["nr_topics"]
        if not (nr_topics is None or nr_topics == "auto" or (isinstance(nr_topics, (int, np.integer)) and nr_topics >= 2)):
            raise InputError(f"{self.name}: nr_topics must be None, 'auto' or an integer >= 2, got {nr_topics!r}")

    def check_corpus(self, corpus: Corpus) -> None:
        settings = self.settings
        minimum = max(settings["umap_neighbors"] + 1, 2 * settings["min_topic_size"])
        if corpus.n_documents < minimum:
            raise ModelError(
                f"{self.name}: too few documents for its clustering: {corpus.n_documents} documents, "
                f"UMAP with {settings['umap_neighbors']} neighbours and two HDBSCAN clusters of at "
                f"least {settings['min_topic_size']} need {minimum} or more"
            )
        reduced_to = self.num_topics if settings["reduce_to_num_topics"] else settings["nr_topics"]
        if isinstance(reduced_to, (int, np.integer)):  # not None or "auto"
            require_at_most(self.name, "the topics to reduce to", reduced_to, corpus.n_documents,
                            f"the documents of corpus {corpus.name!r} (a topic is a cluster of documents)")

    def _setup(self, corpus: Corpus) -> None:
        """Import BERTopic's stack (UMAP compiles numba code on import), load the sentence model
        and the corpus's (cached) document embeddings, outside the timed fit."""
        from .embeddings import document_embeddings, load_sentence_model

        for module, package in (("bertopic", None), ("umap", "umap-learn"), ("hdbscan", None)):
            import_optional(module, model=self.name, package=package)
        load_sentence_model(self.settings["embedding_model"])
        document_embeddings(corpus, model_path=self.settings["embedding_model"])

    def _fit(self, corpus: Corpus) -> tuple[TopicModelOutput, dict]:
        from .embeddings import corpus_texts, document_embeddings

        settings = self.settings
        nr_topics = settings["nr_topics"]
        if settings["reduce_to_num_topics"]:
            nr_topics = self._require_num_topics(self.num_topics)
        model = self._build(corpus, nr_topics)
        logger.info("bertopic: clustering %d documents of %s", corpus.n_documents, corpus.name)
        embeddings = document_embeddings(corpus, model_path=settings["embedding_model"])
        with np.errstate(divide="ignore"):  # c-TF-IDF's idf of vocabulary words no document uses
            assignments, probabilities = model.fit_transform(corpus_texts(corpus), embeddings=embeddings)
        topic_ids = sorted(t for t in set(int(t) for t in model.topics_) if t != OUTLIER_TOPIC)
        if len(topic_ids) < 2:
            raise ModelError(
                f"{self.name}: HDBSCAN found {len(topic_ids)} topic(s) besides outliers in "
                f"{corpus.n_documents} documents of {corpus.name!r}: too few documents (or too "
                f"little structure) for its clustering; use a larger corpus or a smaller min_topic_size"
            )
        if topic_ids != list(range(len(topic_ids))):
            raise ModelError(f"{self.name}: unexpected topic ids {topic_ids[:5]}... (expected 0..n-1)")
        self.model_ = model
        c_tf_idf = model.c_tf_idf_.toarray()
        offset = int(getattr(model, "_outliers", 0))
        outliers = int(np.sum(np.asarray(assignments) == OUTLIER_TOPIC))
        output = TopicModelOutput(
            model=self.name,
            vocabulary=tuple(corpus.vocabulary),
            topics=[[word for word, _ in model.get_topic(t) if word] for t in topic_ids],
            topic_word_matrix=normalize_rows(c_tf_idf[offset : offset + len(topic_ids)]),
            topic_document_matrix=self._topic_document(assignments, probabilities, len(topic_ids)),
            topic_labels=[str(model.topic_labels_.get(t, t)) for t in topic_ids],
            extra={"topic_sizes": [int(model.topic_sizes_.get(t, 0)) for t in topic_ids], "outlier_documents": outliers},
        )
        return output, {"num_topics_": len(topic_ids), "nr_topics_": nr_topics, "outlier_documents_": outliers}

    def _build(self, corpus: Corpus, nr_topics):
        """An unfitted ``BERTopic`` with seeded UMAP, HDBSCAN and a vectorizer over the corpus vocabulary."""
        bertopic = import_optional("bertopic", model=self.name)
        umap = import_optional("umap", model=self.name, package="umap-learn")
        hdbscan = import_optional("hdbscan", model=self.name)
        from sklearn.feature_extraction.text import CountVectorizer

        from .embeddings import load_sentence_model

        settings = self.settings
        return bertopic.BERTopic(
            embedding_model=load_sentence_model(settings["embedding_model"]),
            umap_model=umap.UMAP(
                n_neighbors=int(settings["umap_neighbors"]),
                n_components=int(settings["umap_components"]),
                min_dist=0.0,
                metric="cosine",
                low_memory=False,
                random_state=int(self.random_state),
                n_jobs=1,  # what a random_state forces anyway (UMAP is reproducible only serially)
            ),
            hdbscan_model=hdbscan.HDBSCAN(
                min_cluster_size=int(settings["min_topic_size"]),
                metric="euclidean",
                cluster_selection_method="eom",
                prediction_data=True,
            ),
            vectorizer_model=CountVectorizer(
                vocabulary=list(corpus.vocabulary), tokenizer=str.split, lowercase=False, token_pattern=None
            ),
            top_n_words=int(settings["top_words"]),
            nr_topics=nr_topics,
            calculate_probabilities=bool(settings["calculate_probabilities"]),
        )

    def _topic_document(self, assignments, probabilities, n_topics: int) -> np.ndarray:
        """p(topic | document), shape (n_topics, n_documents)."""
        assignments = np.asarray(assignments)
        if self.settings["calculate_probabilities"] and probabilities is not None and np.ndim(probabilities) == 2:
            return normalize_rows(np.asarray(probabilities)[:, :n_topics]).T.copy()
        one_hot = np.zeros((len(assignments), n_topics))
        clustered = assignments != OUTLIER_TOPIC
        one_hot[np.flatnonzero(clustered), assignments[clustered]] = 1.0
        return normalize_rows(one_hot).T.copy()

    def _transform(self, corpus: Corpus) -> np.ndarray:
        from .embeddings import corpus_texts, document_embeddings

        embeddings = document_embeddings(corpus, model_path=self.settings["embedding_model"])
        with np.errstate(divide="ignore"):
            assignments, probabilities = self.model_.transform(corpus_texts(corpus), embeddings=embeddings)
        n_topics = len([t for t in set(self.model_.topics_) if t != OUTLIER_TOPIC])
        return self._topic_document(assignments, probabilities, n_topics)
