"""E-LDA as one more model of the registry (wraps the estimator :class:`topicbench.core.elda.model.ELDA`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from topicbench.core.constants import DEFAULT_EPSILON, DEFAULT_GENERATOR, GENERATORS, OUTPUT_TOP_WORDS
from topicbench.core.validation import InputError, check_epsilon, check_kappa

# The estimator and its numba kernels are imported where the model fits: a config's check imports
# this class for its settings, before any fit (numba's import is 0.3-1 s of CPU).
if TYPE_CHECKING:
    from topicbench.core.corpus import Corpus
    from topicbench.core.output import TopicModelOutput

from .base import TopicModel, require_choice, require_integers
from .bounds import MAX_TOP_WORDS

#: The most topics per document on average: E-LDA makes its floor(kappa x documents) links one
#: at a time, and the paper's studies use 1 to 5.
MAX_KAPPA = 1_000.0

#: The algorithms of the ``algorithm`` setting: exact FastGreedy, or the low-adaptivity
#: parallel algorithm in this process (:class:`~topicbench.core.elda.parallel.LocalShards`).
ALGORITHMS = ("exact", "parallel")

#: (generator, algorithm) pairs whose numba kernels this process has compiled (or loaded from
#: numba's cache).
_WARM: set = set()

#: A corpus just big enough to run every kernel of a fit once (candidates, first round, greedy).
_WARM_UP_DOCUMENTS = (("tax", "cut", "tax", "budget"), ("budget", "deficit", "cut"), ("war", "troops", "tax"))


class ELDAModel(TopicModel):
    """E-LDA with keyword topics, exact or parallel.

    ``num_topics`` is ignored (E-LDA chooses how many topics it uses; the budget is ``kappa``),
    but a K given must be an integer >= 1. ``random_state`` seeds the parallel algorithm's
    tie-breaking at the budget (exact greedy is deterministic).

    Settings
    --------
    kappa : float
        Mean number of topics per document, κ in the paper (the E-LDA paper's objective); budget k = floor(κ D). At
        most :data:`MAX_KAPPA` (1000).
    generator : {"raw_umass", "exp_umass", "cooccurrence"}
        Keyword topic generator (the E-LDA paper's keyword generators); default :data:`~topicbench.core.constants.DEFAULT_GENERATOR`,
        the paper's best, the estimator's and the CLI's default too.
    top_words : int
        Words per topic in the output's topic lists (at most 1000).
    algorithm : {"exact", "parallel"}
        Exact FastGreedy (1 - 1/e), or the low-adaptivity parallel algorithm (the E-LDA paper's algorithms,
        1 - 1/e - O(ε)) run in this process on numba's threads (as many as the process allows:
        a benchmark's Dask worker holds them to its thread count).
    epsilon : float
        Accuracy parameter of the parallel algorithm, in (0, 1) (default
        :data:`~topicbench.core.constants.DEFAULT_EPSILON`). It applies to ``algorithm="parallel"``
        only: changing it with the exact algorithm is an error rather than ignored.

    Resolved values: ``budget_`` (k), ``num_candidates_`` (keyword topics generated) and, for the
    parallel algorithm, ``threads_`` (numba threads it ran on).
    """

    name = "elda"
    family = "exemplar (submodular selection of keyword topics)"
    setup_phase = "compiling kernels"  # numba's kernels, once per worker process
    assigns_token_topics = True
    topics_decided_by = ("kappa (topics per document: the budget is floor(kappa x documents)) and generator "
                         "(which keyword topics are candidates)")
    defaults = {
        "kappa": 2.0,
        "generator": DEFAULT_GENERATOR,
        "top_words": OUTPUT_TOP_WORDS,
        "algorithm": "exact",
        "epsilon": DEFAULT_EPSILON,
    }
    setting_maxima = {"kappa": MAX_KAPPA, "top_words": MAX_TOP_WORDS, "epsilon": 1.0}

    def _check_settings(self, settings: dict) -> None:
        try:
            check_kappa(settings["kappa"])
            check_epsilon(settings["epsilon"])
        except InputError as error:
            raise InputError(f"{self.name}: {error}") from None
        require_choice(self.name, "generator", settings["generator"], GENERATORS)
        require_choice(self.name, "algorithm", settings["algorithm"], ALGORITHMS)
        require_integers(self.name, settings, {"top_words": 1})
        if settings["algorithm"] == "exact" and settings["epsilon"] != self.defaults["epsilon"]:
            raise InputError(
                f"{self.name}: epsilon applies to algorithm 'parallel' only (exact greedy has none); "
                f"set algorithm: parallel or leave epsilon out"
            )

    def check_num_topics(self, num_topics) -> None:
        """E-LDA chooses how many topics it uses: a K, if given, is ignored but must be sane."""
        if num_topics is not None:
            self._require_num_topics(num_topics)

    def _setup(self, corpus: Corpus) -> None:
        """Compile (or load from numba's on-disk cache) the kernels once per process, on a
        three-document corpus, so that a fit's time is the fit's: a fresh Dask worker otherwise
        spends about 25 s compiling inside the first timed fit."""
        from topicbench.core.preprocess import corpus_from_token_lists

        key = (self.settings["generator"], self.settings["algorithm"])
        if key not in _WARM:
            self._solve(corpus_from_token_lists(_WARM_UP_DOCUMENTS, name="warm-up"))
            _WARM.add(key)

    def _fit(self, corpus: Corpus) -> tuple[TopicModelOutput, dict]:
        solution, resolved = self._solve(
            corpus, on_progress=lambda made, budget, log_posterior: self._progress(made, budget, -log_posterior)
        )
        return solution.to_output(model=self.name, top_n=self.settings["top_words"]), resolved

    def _solve(self, corpus: Corpus, on_progress=None):
        """The E-LDA solution on ``corpus`` with the configured algorithm, and the resolved values
        (``on_progress(links_made, budget, log_posterior)`` as the links are made)."""
        import numba

        from topicbench.core.elda.model import ELDA
        from topicbench.core.elda.parallel import LocalShards

        settings = self.settings
        parallel = settings["algorithm"] == "parallel"
        model = ELDA(
            settings["kappa"], generator=settings["generator"], executor=LocalShards() if parallel else None,
            epsilon=settings["epsilon"], seed=self.random_state,
        ).fit(corpus, on_progress=on_progress)
        solution = model.solution_
        resolved = {"budget_": solution.budget, "num_candidates_": model.candidates_.n_topics}
        if parallel:
            resolved["threads_"] = numba.get_num_threads()
        return solution, resolved
