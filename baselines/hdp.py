"""The hierarchical Dirichlet process (Teh et al. 2006) with tomotopy's ``HDPModel``.

tomotopy rather than gensim's ``HdpModel``: tomotopy's is the collapsed Gibbs sampler of the
Chinese restaurant franchise, whose number of topics is a count the sampler reaches (the topics
that hold words, ``live_k``), where gensim's online variational HDP keeps every one of its
truncation's 150 topics with some weight, so that "the K it found" would need a threshold of
ours. tomotopy also gives each token its topic (the posterior metrics read them), infers
held-out documents, runs in C++ (the suite's Gibbs LDA uses it already), and one seed gives one
result with its serial scheme.
"""

from __future__ import annotations

import logging

import numpy as np

from topicbench.core.constants import OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus
from topicbench.core.output import TopicModelOutput

from .base import (
    ModelError, TopicModel, import_optional, normalize_rows, require_integers, require_positive, top_words_of,
    training_record,
)
from .bounds import MAX_CONCENTRATION, MAX_ITERATIONS, MAX_TOP_WORDS, require_at_most
from .gibbs_lda import CURVE_INTERVAL, LOG_INTERVAL, _token_topics

logger = logging.getLogger(__name__)

#: The most topics the sampler may start from. tomotopy allocates its counts for every one of
#: them and each sweep costs in proportion (1000 topics on 40,000 tokens: about 0.3 s a sweep);
#: 10^9 took 3.2 GB and hours. Topics holding no word die at the first sweep, so a start beyond
#: a few hundred only costs time.
MAX_INITIAL_K = 1_000


class HDP(TopicModel):
    """Hierarchical Dirichlet process topic model (tomotopy ``HDPModel``, collapsed Gibbs
    sampling); it finds its number of topics.

    Settings
    --------
    initial_k : int
        Topics the sampler starts from (tomotopy's default 2); the number grows or shrinks. At
        most :data:`MAX_INITIAL_K` (1000) and at most the corpus's tokens (checked when the fit
        starts): a topic holds a token or dies.
    alpha : float
        Concentration of the document-level Dirichlet process (document → tables; 0.1).
    gamma : float
        Concentration of the corpus-level Dirichlet process (tables → topics; 0.1).
    eta : float
        Topic-word Dirichlet prior (0.01). alpha, gamma and eta are at most 10,000
        (:data:`~topicbench.baselines.bounds.MAX_CONCENTRATION`).
    optim_interval : int
        Iterations between two estimates of alpha and gamma (tomotopy's default 10; 0 keeps
        them fixed). The final values are ``alpha_`` and ``gamma_``.
    iterations : int
        Gibbs sweeps over the corpus (1000, as the suite's Gibbs LDA; tomotopy's examples train
        1000).
    infer_iterations : int
        Gibbs sweeps per held-out document in :meth:`transform`. It, ``iterations`` and
        ``optim_interval`` are at most 100,000 (:data:`~topicbench.baselines.bounds.MAX_ITERATIONS`).
    top_words : int
        Words per topic in the output's topic lists (at most 1000).

    Notes
    -----
    The output's topics are the live topics (those holding a word at the end), in tomotopy's
    order: their number is ``num_topics_`` and the run's ``num_topics_used``. Topic-word rows
    are (n_kw + η) / (n_k + Vη) over the corpus's vocabulary (tomotopy's ``get_topic_word_dist``, extended
    to the words its documents do not use); a document's proportions are
    its ``get_topic_dist`` over the live topics (renormalised; dead topics hold nothing);
    ``token_topics`` are the sampler's final assignments. ``extra["training_loss"]`` is the
    negative log-likelihood per word every 10 sweeps, as for Gibbs LDA. A K given is ignored.
    tomotopy returns to Python after every sweep (its callback), where the fit can stop
    (``fit(stop_requested=...)``): a sweep is one call into C++ that holds the interpreter, so
    an interrupted flow beside it waits at most a sweep; the samples are the same as in one call.
    """

    name = "hdp"
    family = "probabilistic (Bayesian nonparametric)"
    convergence_family = "gibbs"
    assigns_token_topics = True
    topics_decided_by = "initial_k, alpha and gamma (the Dirichlet processes' start and concentrations)"
    defaults = {
        "initial_k": 2,
        "alpha": 0.1,
        "gamma": 0.1,
        "eta": 0.01,
        "optim_interval": 10,
        "iterations": 1000,
        "infer_iterations": 100,
        "top_words": OUTPUT_TOP_WORDS,
    }
    setting_maxima = {
        "initial_k": MAX_INITIAL_K, "alpha": MAX_CONCENTRATION, "gamma": MAX_CONCENTRATION,
        "eta": MAX_CONCENTRATION, "optim_interval": MAX_ITERATIONS, "iterations": MAX_ITERATIONS,
        "infer_iterations": MAX_ITERATIONS, "top_words": MAX_TOP_WORDS,
    }
    supports_transform = True

    def check_corpus(self, corpus: Corpus) -> None:
        require_at_most(self.name, "initial_k", self.settings["initial_k"], corpus.n_tokens,
                        f"the tokens of corpus {corpus.name!r} (a topic holds a token or dies)")

    def check_num_topics(self, num_topics) -> None:
        """The process finds its number of topics: a K, if given, is ignored but must be sane."""
        if num_topics is not None:
            self._require_num_topics(num_topics)

    def _check_settings(self, settings: dict) -> None:
        require_positive(self.name, settings, ["alpha", "gamma", "eta"])
        require_integers(
            self.name, settings,
            {"initial_k": 2, "optim_interval": 0, "iterations": 1, "infer_iterations": 1, "top_words": 1},
        )

    def _fit(self, corpus: Corpus) -> tuple[TopicModelOutput, dict]:
        tomotopy = import_optional("tomotopy", model=self.name)
        model, curve = self._train(tomotopy, corpus)
        self.model_ = model
        live = np.array([k for k in range(model.k) if model.is_live_topic(k)], dtype=np.int64)
        if live.size == 0:
            raise ModelError(f"{self.name}: no topic holds a word after {self.settings['iterations']} iterations")
        self.live_topics_ = live
        topic_word = self._topic_word(model, corpus, live)
        index_of_topic = np.full(model.k, -1, dtype=np.int64)
        index_of_topic[live] = np.arange(live.size)
        token_topics = index_of_topic[_token_topics(model, corpus, self.name)]
        output = TopicModelOutput(
            model=self.name,
            vocabulary=tuple(corpus.vocabulary),
            topics=top_words_of(topic_word, corpus.vocabulary, int(self.settings["top_words"])),
            topic_word_matrix=topic_word,
            topic_document_matrix=self._live_proportions([document.get_topic_dist() for document in model.docs]),
            token_topics=token_topics,
            extra={
                "log_likelihood_per_word": float(model.ll_per_word),
                **training_record(
                    [-value for value in curve.values()], steps=list(curve),
                    kind="negative log-likelihood per word (every 10 Gibbs sweeps)",
                ),
            },
        )
        resolved = {"num_topics_": int(live.size), "alpha_": float(model.alpha), "gamma_": float(model.gamma)}
        return output, resolved

    def estimator(self, tomotopy):
        """tomotopy's ``HDPModel`` of these settings and seed (no documents yet)."""
        settings = self.settings
        model = tomotopy.HDPModel(
            initial_k=int(settings["initial_k"]), alpha=float(settings["alpha"]), eta=float(settings["eta"]),
            gamma=float(settings["gamma"]), min_cf=0, min_df=0, rm_top=0, seed=int(self.random_state),
        )
        model.optim_interval = int(settings["optim_interval"])
        return model

    def _train(self, tomotopy, corpus: Corpus):
        """The sampler on ``corpus``, trained serially; its log-likelihood per word every
        :data:`CURVE_INTERVAL` sweeps ({iteration: value})."""
        model = self.estimator(tomotopy)
        vocabulary = corpus.vocabulary
        for d in range(corpus.n_documents):
            model.add_doc([vocabulary[t] for t in corpus.document(d)])
        iterations = int(self.settings["iterations"])
        logger.info("hdp: initial K=%d, %d iterations on %s", self.settings["initial_k"], iterations, corpus.name)
        curve = {}

        def after_sweep(model, iteration: int, total: int) -> bool:
            self._stop_if_requested(iteration, total)
            if iteration % CURVE_INTERVAL and iteration != total:
                return True
            curve[iteration] = float(model.ll_per_word)
            self._progress(iteration, total, -curve[iteration])
            if iteration % LOG_INTERVAL == 0 or iteration == total:
                logger.info("hdp: iteration %d/%d, %d live topics, log-likelihood per word %.4f",
                            iteration, total, model.live_k, curve[iteration])
            return True

        # back in Python after every sweep (see Notes); the curve keeps every CURVE_INTERVAL-th
        model.train(iterations, workers=1, parallel=tomotopy.ParallelScheme.NONE, callback_interval=1,
                    callback=after_sweep)
        return model, curve

    @staticmethod
    def _topic_word(model, corpus: Corpus, live: np.ndarray) -> np.ndarray:
        """p(w | k) = (n_kw + η) / (n_k + Vη) of each live topic over the corpus's whole vocabulary.

        tomotopy's ``get_topic_word_dist`` is (n_kw + η) / (n_k + V'η) over the V' words its
        documents use; a word of the vocabulary they never use (a word of other partitions) had
        p = 0 there, and a held-out document holding it a likelihood of 0. Under the prior η it has
        η / (n_k + V'η) before the rows are renormalised over all V words.
        """
        columns = np.array([corpus.word_index[word] for word in model.used_vocabs], dtype=np.int64)
        eta, topic_tokens = float(model.eta), np.asarray(model.get_count_by_topics(), dtype=np.float64)
        topic_word = np.empty((live.size, corpus.n_words))
        for row, k in enumerate(live):
            topic_word[row] = eta / (topic_tokens[k] + len(columns) * eta)
            topic_word[row, columns] = np.asarray(model.get_topic_word_dist(int(k)), dtype=np.float64)
        return topic_word / topic_word.sum(axis=1, keepdims=True)

    def _live_proportions(self, topic_dists) -> np.ndarray:
        """Each document's distribution over the live topics, renormalised (K_live x D)."""
        theta = np.asarray([np.asarray(dist, dtype=np.float64) for dist in topic_dists])[:, self.live_topics_]
        return normalize_rows(theta).T.copy()

    def _transform(self, corpus: Corpus) -> np.ndarray:
        import tomotopy

        model, vocabulary = self.model_, corpus.vocabulary
        documents = [model.make_doc([vocabulary[t] for t in corpus.document(d)]) for d in range(corpus.n_documents)]
        topic_dists, _ = model.infer(documents, iterations=int(self.settings["infer_iterations"]), workers=1,
                                     parallel=tomotopy.ParallelScheme.NONE)
        return self._live_proportions(topic_dists)
