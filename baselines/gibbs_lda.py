"""Collapsed Gibbs LDA with tomotopy, exposing its own final token assignments.

The paper's baselines (the paper's Experiment Set 1) are MALLET's collapsed Gibbs sampler with
K = 100, β = 0.01 and 1000 iterations, in three settings; tomotopy runs the same sampler:

==============  ==================================================
paper name      settings here
==============  ==================================================
Gibbs           ``alpha=1.0`` (per topic, fixed)
Gibbs-Sparse    ``alpha=0.1`` (per topic, fixed)
Gibbs-Bayes     ``alpha=0.1, optimize_alpha=True`` (α optimised)
==============  ==================================================
"""

from __future__ import annotations

import logging

import numpy as np

from topicbench.core.constants import OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus
from topicbench.core.output import TopicModelOutput
from topicbench.core.validation import InputError

from .base import ModelError, TopicModel, import_optional, require_integers, require_positive, top_words_of, training_record
from .bounds import MAX_CONCENTRATION, MAX_ITERATIONS, MAX_THREADS, MAX_TOP_WORDS

logger = logging.getLogger(__name__)

#: The paper's three Gibbs settings (the E-LDA paper's experiments) as settings of :class:`GibbsLDA`.
PAPER_SETTINGS = {
    "gibbs": {"alpha": 1.0, "optimize_alpha": False},
    "gibbs_sparse": {"alpha": 0.1, "optimize_alpha": False},
    "gibbs_bayes": {"alpha": 0.1, "optimize_alpha": True},
}

#: Iterations between two points of the recorded log-likelihood curve, and between two progress
#: log lines.
CURVE_INTERVAL = 10
LOG_INTERVAL = 100


class GibbsLDA(TopicModel):
    """Collapsed Gibbs sampling for LDA (tomotopy ``LDAModel``).

    Settings
    --------
    alpha : float
        Document-topic prior per topic (fixed, or the starting value when optimised); it and
        ``eta`` are at most 10,000 (:data:`~topicbench.baselines.bounds.MAX_CONCENTRATION`).
    optimize_alpha : bool
        Optimise an asymmetric α during sampling (Gibbs-Bayes). tomotopy optimises by default
        (``optim_interval=10``); fixed α sets ``optim_interval=0``.
    optim_interval, burn_in : int
        With ``optimize_alpha``: iterations between two α updates, and iterations before the first.
    eta : float
        Topic-word prior β (0.01 in the paper).
    iterations : int
        Gibbs sweeps over the corpus (1000 in the paper).
    workers : int
        Sampling threads (at most 1024). 1 (the default) runs tomotopy's serial scheme, which
        makes a seed give identical results; more threads are faster but not reproducible.
    infer_iterations : int
        Gibbs sweeps per held-out document in :meth:`transform`. It, ``iterations``,
        ``optim_interval`` and ``burn_in`` are at most 100,000
        (:data:`~topicbench.baselines.bounds.MAX_ITERATIONS`).
    top_words : int
        Words per topic in the output's topic lists (at most 1000).

    Notes
    -----
    ``token_topics`` are the sampler's final assignments z, in the corpus's token order.
    From them: p(w | k) = (n_kw + β) / (n_k + Vβ) over the corpus vocabulary and
    p(k | d) = (n_dk + α_k) / (n_d + Σα), with the final (resolved) α in ``alpha_``. tomotopy
    returns to Python after every sweep, where the fit can stop (``fit(stop_requested=...)``): a
    sweep is one call into C++ that holds the interpreter; the samples are those of one call.
    """

    name = "gibbs_lda"
    family = "probabilistic (LDA, Gibbs sampling)"
    convergence_family = "gibbs"
    assigns_token_topics = True
    defaults = {
        "alpha": 1.0,
        "optimize_alpha": False,
        "optim_interval": 10,
        "burn_in": 0,
        "eta": 0.01,
        "iterations": 1000,
        "workers": 1,
        "infer_iterations": 100,
        "top_words": OUTPUT_TOP_WORDS,
    }
    setting_maxima = {
        "alpha": MAX_CONCENTRATION, "eta": MAX_CONCENTRATION, "optim_interval": MAX_ITERATIONS,
        "burn_in": MAX_ITERATIONS, "iterations": MAX_ITERATIONS, "workers": MAX_THREADS,
        "infer_iterations": MAX_ITERATIONS, "top_words": MAX_TOP_WORDS,
    }
    supports_transform = True

    def _check_settings(self, settings: dict) -> None:
        require_positive(self.name, settings, ["alpha", "eta"])
        if not isinstance(settings["optimize_alpha"], bool):
            raise InputError(f"{self.name}: optimize_alpha must be True or False, got {settings['optimize_alpha']!r}")
        require_integers(
            self.name, settings,
            {"iterations": 1, "workers": 1, "optim_interval": 1, "burn_in": 0, "infer_iterations": 1, "top_words": 1},
        )

    def _fit(self, corpus: Corpus) -> tuple[TopicModelOutput, dict]:
        tomotopy = import_optional("tomotopy", model=self.name)
        num_topics = self._require_num_topics(self.num_topics)
        settings = self.settings
        optim_interval = int(settings["optim_interval"]) if settings["optimize_alpha"] else 0
        model, curve = self._train(tomotopy, corpus, num_topics, optim_interval)
        self.model_ = model
        token_topics = _token_topics(model, corpus)
        alpha = np.asarray(model.alpha, dtype=np.float64).reshape(-1)
        if alpha.size == 1:
            alpha = np.full(num_topics, alpha[0])
        eta = float(model.eta)
        topic_word = _topic_word(token_topics, corpus, num_topics, eta)
        output = TopicModelOutput(
            model=self.name,
            vocabulary=tuple(corpus.vocabulary),
            topics=top_words_of(topic_word, corpus.vocabulary, int(settings["top_words"])),
            topic_word_matrix=topic_word,
            topic_document_matrix=_topic_document(token_topics, corpus, alpha),
            token_topics=token_topics,
            extra={
                "log_likelihood_per_word": float(model.ll_per_word),
                **training_record(
                    [-value for value in curve.values()], steps=list(curve),
                    kind="negative log-likelihood per word (every 10 Gibbs sweeps)",
                ),
            },
        )
        resolved = {
            "num_topics_": num_topics,
            "alpha_": alpha.tolist(),
            "eta_": eta,
            "optim_interval_": optim_interval,
            "parallel_": self._parallel_scheme(tomotopy).name,
        }
        return output, resolved

    def _train(self, tomotopy, corpus: Corpus, num_topics: int, optim_interval: int):
        """tomotopy's sampler on ``corpus``, trained; and its log-likelihood per word every
        :data:`CURVE_INTERVAL` sweeps ({iteration: value}, iteration 0 the random start)."""
        settings = self.settings
        model = tomotopy.LDAModel(
            k=num_topics,
            alpha=float(settings["alpha"]),
            eta=float(settings["eta"]),
            min_cf=0,
            min_df=0,
            rm_top=0,
            seed=int(self.random_state),
        )
        model.optim_interval = optim_interval
        model.burn_in = int(settings["burn_in"])
        vocabulary = corpus.vocabulary
        for d in range(corpus.n_documents):
            model.add_doc([vocabulary[t] for t in corpus.document(d)])
        logger.info(
            "gibbs_lda: K=%d, alpha=%s%s, %d iterations on %s",
            num_topics, settings["alpha"], " (optimised)" if optim_interval else "", settings["iterations"], corpus.name,
        )
        curve = {}
        model.train(
            int(settings["iterations"]),
            workers=int(settings["workers"]),
            parallel=self._parallel_scheme(tomotopy),
            callback_interval=1,  # back in Python after every sweep, where the fit can stop
            callback=lambda model, iteration, total: self._after_sweep(curve, model, iteration, total),
        )
        return model, curve

    def _after_sweep(self, curve: dict, model, iteration: int, total: int) -> bool:
        """tomotopy's callback after every sweep: stop if the caller asked; every
        :data:`CURVE_INTERVAL` sweeps (and at the last) record the curve's point."""
        self._stop_if_requested(iteration, total)
        if iteration % CURVE_INTERVAL == 0 or iteration == total:
            _record_progress(curve, model, iteration, total, self._progress)
        return True

    def _parallel_scheme(self, tomotopy):
        return tomotopy.ParallelScheme.NONE if int(self.settings["workers"]) == 1 else tomotopy.ParallelScheme.DEFAULT

    def _transform(self, corpus: Corpus) -> np.ndarray:
        import tomotopy

        model = self.model_
        vocabulary = corpus.vocabulary
        documents = [model.make_doc([vocabulary[t] for t in corpus.document(d)]) for d in range(corpus.n_documents)]
        topic_dists, _ = model.infer(
            documents,
            iterations=int(self.settings["infer_iterations"]),
            workers=int(self.settings["workers"]),
            parallel=self._parallel_scheme(tomotopy),
        )
        theta = np.asarray([np.asarray(dist, dtype=np.float64) for dist in topic_dists])
        return (theta / theta.sum(axis=1, keepdims=True)).T.copy()


def _record_progress(curve: dict, model, iteration: int, total: int, on_progress) -> bool:
    """tomotopy's callback: record the curve's point, report it (``on_progress(iteration, total,
    negative log-likelihood per word)``), and go on sampling."""
    curve[iteration] = float(model.ll_per_word)
    on_progress(iteration, total, -curve[iteration])
    if iteration % LOG_INTERVAL == 0 or iteration == total:
        logger.info("gibbs_lda: iteration %d/%d, log-likelihood per word %.4f", iteration, total, curve[iteration])
    return True


def _token_topics(model, corpus: Corpus, name: str = "gibbs_lda") -> np.ndarray:
    """The sampler's final topic of every token, in the corpus's token order (``name``: the
    model, for the messages; tomotopy's HDP keeps its documents the same way).

    tomotopy keeps each document's words in the order they were added; the check below makes
    sure (a different order would silently misalign assignments and tokens).
    """
    word_ids = np.array([corpus.word_index[word] for word in model.vocabs], dtype=np.int64)
    token_topics = np.empty(corpus.n_tokens, dtype=np.int64)
    if len(model.docs) != corpus.n_documents:
        raise ModelError(f"{name}: tomotopy kept {len(model.docs)} of {corpus.n_documents} documents")
    for d, document in enumerate(model.docs):
        start, stop = corpus.doc_offsets[d], corpus.doc_offsets[d + 1]
        words = word_ids[np.asarray(document.words, dtype=np.int64)]
        if not np.array_equal(words, corpus.token_ids[start:stop]):
            raise ModelError(f"{name}: tomotopy's document {d} does not hold the corpus's tokens in order")
        token_topics[start:stop] = np.asarray(document.topics, dtype=np.int64)
    return token_topics


def _topic_word(token_topics: np.ndarray, corpus: Corpus, num_topics: int, eta: float) -> np.ndarray:
    """p(w | k) = (n_kw + β) / (n_k + Vβ) from the assignments."""
    counts = np.zeros((num_topics, corpus.n_words))
    np.add.at(counts, (token_topics, corpus.token_ids), 1.0)
    counts += eta
    return counts / counts.sum(axis=1, keepdims=True)


def _topic_document(token_topics: np.ndarray, corpus: Corpus, alpha: np.ndarray) -> np.ndarray:
    """p(k | d) = (n_dk + α_k) / (n_d + Σα), shape (K, D)."""
    token_doc = corpus.token_documents
    counts = np.zeros((len(alpha), corpus.n_documents))
    np.add.at(counts, (token_topics, token_doc), 1.0)
    counts += alpha[:, None]
    return counts / counts.sum(axis=0, keepdims=True)
