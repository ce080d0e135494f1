"""A topicbench model plugin: scikit-learn's NMF of the document-term counts."""

import numpy as np
from sklearn.decomposition import NMF

from topicbench.baselines.base import TopicModel, normalize_rows, require_integers, top_words_of
from topicbench.core.output import TopicModelOutput


class SklearnNMF(TopicModel):
    """Non-negative matrix factorisation, counts ~ W H, with K topics (rows of H).

    Settings: ``max_iter`` (solver iterations, scikit-learn's default 200) and ``top_words``.
    """

    name = "sklearn_nmf"  # the entry point's name
    defaults = {"max_iter": 200, "top_words": 10}

    def _check_settings(self, settings):
        require_integers(self.name, settings, {"max_iter": 1, "top_words": 1})

    def _fit(self, corpus):
        k = self._require_num_topics(self.num_topics)
        nmf = NMF(k, init="nndsvda", max_iter=self.settings["max_iter"], random_state=self.random_state)
        doc_topic = nmf.fit_transform(corpus.doc_term.astype(np.float64))  # documents x K
        topic_word = normalize_rows(nmf.components_)  # p(word | topic)
        output = TopicModelOutput(
            model=self.name, vocabulary=tuple(corpus.vocabulary),
            topics=top_words_of(topic_word, corpus.vocabulary, self.settings["top_words"]),
            topic_word_matrix=topic_word, topic_document_matrix=normalize_rows(doc_topic).T,
        )
        return output, {"n_iter_": int(nmf.n_iter_), "reconstruction_error_": float(nmf.reconstruction_err_)}
