"""gensim's ``LdaModel`` (online variational Bayes, Hoffman et al. 2010) behind the shared interface.

Never ``LdaMulticore``: it forks worker processes, which Dask workers cannot do (house style 20).
"""

from __future__ import annotations

import logging

import numpy as np
from scipy.special import digamma

from topicbench.core.constants import OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus
from topicbench.core.output import TopicModelOutput
from topicbench.core.validation import InputError

from .base import TopicModel, normalize_rows, require_integers, require_positive, top_words_of, training_record
from .bounds import MAX_BATCH_DOCUMENTS, MAX_CONCENTRATION, MAX_ITERATIONS, MAX_SCALE, MAX_TOP_WORDS

logger = logging.getLogger(__name__)

#: Tokens scored at once when assigning each token its most likely topic (bounds memory to
#: this many x K floats).
TOKEN_CHUNK = 65_536


class GensimLDA(TopicModel):
    """Variational LDA with gensim's ``LdaModel`` (one process).

    Settings
    --------
    alpha : float or "auto"
        Document-topic prior: a symmetric value per topic (the paper's 1 or 0.1), or ``"auto"``
        (gensim learns an asymmetric prior). Resolved per-topic values: ``alpha_``.
    eta : float
        Topic-word prior β (0.01, as the paper's Gibbs runs).
    passes, iterations : int
        Passes over the corpus; variational iterations per document and pass (each at most
        100,000, :data:`~topicbench.baselines.bounds.MAX_ITERATIONS`).
    chunksize, decay, offset, gamma_threshold : as in gensim
        Online-update batch size (at most 1,000,000 documents) and learning-rate schedule (decay
        at most 1, gensim's (0.5, 1]; offset at most 10^6), E-step convergence threshold (at
        most 1). alpha (a number) and eta are at most 10,000.
    top_words : int
        Words per topic in the output's topic lists (at most 1000).

    Notes
    -----
    Token assignments: a token of word w in document d takes
    ``argmax_k E[log θ_dk] + E[log β_kw]`` under the final variational posterior (what gensim's
    ``per_word_topics`` reports; every occurrence of w in d gets the same topic). The
    topic-document matrix is the normalised γ of that final E-step.
    """

    name = "gensim_lda"
    family = "probabilistic (LDA, variational)"
    convergence_family = "variational"
    assigns_token_topics = True
    defaults = {
        "alpha": 0.1,
        "eta": 0.01,
        "passes": 10,
        "iterations": 100,
        "chunksize": 2000,
        "decay": 0.5,
        "offset": 1.0,
        "gamma_threshold": 0.001,
        "top_words": OUTPUT_TOP_WORDS,
    }
    supports_transform = True

    setting_alternatives = {"alpha": ("auto",)}
    setting_maxima = {
        "alpha": MAX_CONCENTRATION, "eta": MAX_CONCENTRATION, "passes": MAX_ITERATIONS, "iterations": MAX_ITERATIONS,
        "chunksize": MAX_BATCH_DOCUMENTS, "decay": 1.0, "offset": MAX_SCALE, "gamma_threshold": 1.0,
        "top_words": MAX_TOP_WORDS,
    }

    def _check_settings(self, settings: dict) -> None:
        if settings["alpha"] != "auto":
            try:
                require_positive(self.name, settings, ["alpha"])
            except InputError:
                raise InputError(
                    f"{self.name}: alpha must be a positive number (per topic) or 'auto', got {settings['alpha']!r}"
                ) from None
        require_positive(self.name, settings, ["eta", "decay", "offset", "gamma_threshold"])
        require_integers(self.name, settings, {"passes": 1, "iterations": 1, "chunksize": 1, "top_words": 1})

    def _fit(self, corpus: Corpus) -> tuple[TopicModelOutput, dict]:
        from gensim.models import LdaModel

        num_topics = self._require_num_topics(self.num_topics)
        settings = self.settings
        alpha = settings["alpha"] if settings["alpha"] == "auto" else float(settings["alpha"])
        logger.info("gensim_lda: K=%d, alpha=%s, %d passes on %s", num_topics, alpha, settings["passes"], corpus.name)
        bow = _bow(corpus)
        # the variational bound after every pass: the loss curve that shows convergence
        bound_per_pass = _bound_per_pass_metric()(bow, int(settings["passes"]), self._progress)
        model = LdaModel(
            corpus=bow,
            num_topics=num_topics,
            id2word=dict(enumerate(corpus.vocabulary)),
            distributed=False,
            chunksize=int(settings["chunksize"]),
            passes=int(settings["passes"]),
            iterations=int(settings["iterations"]),
            alpha=alpha,
            eta=float(settings["eta"]),
            decay=float(settings["decay"]),
            offset=float(settings["offset"]),
            gamma_threshold=float(settings["gamma_threshold"]),
            eval_every=None,
            random_state=self.random_state,
            dtype=np.float64,
            callbacks=[bound_per_pass],
        )
        self.model_ = model
        gamma = self._gamma(corpus)
        expected_log_beta = model.state.get_Elogbeta()
        token_topics = _most_likely_token_topics(corpus, gamma, expected_log_beta)
        topic_word = normalize_rows(model.get_topics())
        output = TopicModelOutput(
            model=self.name,
            vocabulary=tuple(corpus.vocabulary),
            topics=top_words_of(topic_word, corpus.vocabulary, int(settings["top_words"])),
            topic_word_matrix=topic_word,
            topic_document_matrix=normalize_rows(gamma).T.copy(),
            token_topics=token_topics,
            # gensim reports 2 ** (-bound per word) as "perplexity" (the bound in nats)
            extra=training_record(
                np.log2(model.metrics[str(bound_per_pass)]), kind="negative variational bound per word (every pass)"
            ),
        )
        resolved = {"num_topics_": num_topics, "alpha_": [float(a) for a in model.alpha], "eta_": float(np.mean(model.eta))}
        return output, resolved

    def _gamma(self, corpus: Corpus) -> np.ndarray:
        """Variational Dirichlet parameters γ of every document (D x K) under the fitted topics."""
        bow = _bow(corpus)
        chunk = int(self.settings["chunksize"])
        parts = [self.model_.inference(bow[start : start + chunk])[0] for start in range(0, len(bow), chunk)]
        return np.vstack(parts).astype(np.float64)

    def _transform(self, corpus: Corpus) -> np.ndarray:
        return normalize_rows(self._gamma(corpus)).T.copy()


def _bound_per_pass_metric():
    """gensim's ``PerplexityMetric`` that also reports each pass as progress (made on first use:
    importing gensim's callbacks is slow)."""
    from gensim.models.callbacks import PerplexityMetric

    class BoundPerPassMetric(PerplexityMetric):
        """2 ** (-bound per word) after every pass, as ``PerplexityMetric``; then
        ``on_progress(pass, passes, -bound per word in bits)``."""

        def __init__(self, bow, passes: int, on_progress):
            super().__init__(corpus=bow, logger=None)
            self.passes, self.on_progress, self.passes_done = passes, on_progress, 0

        def get_value(self, **kwargs):
            value = super().get_value(**kwargs)
            self.passes_done += 1
            self.on_progress(self.passes_done, self.passes, float(np.log2(value)))
            return value

    return BoundPerPassMetric


def _bow(corpus: Corpus) -> list[list[tuple[int, int]]]:
    """gensim's bag-of-words form of every document: [(word id, count), ...]."""
    doc_term = corpus.doc_term
    return [
        list(zip(doc_term.indices[start:end].tolist(), doc_term.data[start:end].tolist()))
        for start, end in zip(doc_term.indptr[:-1], doc_term.indptr[1:])
    ]


def _most_likely_token_topics(corpus: Corpus, gamma: np.ndarray, expected_log_beta: np.ndarray) -> np.ndarray:
    """Each token's ``argmax_k E[log θ_dk] + E[log β_kw]`` (ties: the lowest topic)."""
    expected_log_theta = digamma(gamma) - digamma(gamma.sum(axis=1, keepdims=True))
    token_doc = corpus.token_documents
    token_topics = np.empty(corpus.n_tokens, dtype=np.int64)
    for start in range(0, corpus.n_tokens, TOKEN_CHUNK):
        stop = min(start + TOKEN_CHUNK, corpus.n_tokens)
        scores = expected_log_theta[token_doc[start:stop]] + expected_log_beta[:, corpus.token_ids[start:stop]].T
        token_topics[start:stop] = np.argmax(scores, axis=1)
    return token_topics
