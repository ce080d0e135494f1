"""The E-LDA estimator: keyword-anchored topics with a 1 - 1/e guarantee (the E-LDA paper).

``ELDA(kappa, generator=..., executor=...).fit(corpus)`` builds keyword candidates
(:mod:`.generators`) and runs exact greedy in this process (:mod:`.greedy`) or, given a shard
executor, the low-adaptivity parallel algorithm on it (:mod:`.parallel`; a Dask cluster through
:func:`topicbench.core.elda.dask_shards.dask_executor`). The result is a :class:`.solution.Solution`.
"""

from __future__ import annotations

import time

from topicbench.core.constants import DEFAULT_EPSILON, DEFAULT_GENERATOR, DEFAULT_TOP_WORDS
from topicbench.core.corpus import Corpus
from topicbench.core.elda.generators import Candidates, check_generator, keyword_candidates
from topicbench.core.elda.greedy import fast_greedy
from topicbench.core.elda.parallel import Borrowed, ShardExecutor, parallel_elda
from topicbench.core.elda.solution import Solution
from topicbench.core.validation import InputError, check_epsilon, check_kappa


class ELDA:
    """E-LDA as an estimator (scikit-learn style): keyword-anchored topics with a 1 - 1/e guarantee.

    Parameters
    ----------
    kappa : float, default 2.0
        Mean number of topics per document, kappa in the paper (the E-LDA paper's objective); budget k = floor(kappa D).
    generator : {"raw_umass", "exp_umass", "cooccurrence"}, default "cooccurrence"
        Keyword topic generator (the E-LDA paper's keyword generators; :data:`topicbench.core.elda.generators.GENERATORS`), used when
        ``fit`` gets no candidates. The default is :data:`topicbench.core.constants.DEFAULT_GENERATOR`,
        shared by every E-LDA entry point.
    top_words : int, default 10
        Words reported per topic.
    executor : ShardExecutor or None, default None
        None: exact FastGreedy in this process. A shard executor (:class:`.parallel.LocalShards`,
        or a Dask cluster from :func:`topicbench.core.elda.dask_shards.dask_executor`): the
        low-adaptivity parallel algorithm on it. The estimator borrows it (its owner closes it),
        so one executor serves several fits.
    epsilon : float, default 0.1
        Accuracy parameter of the parallel algorithm (with an executor only).
    seed : int, default 0
        Seed of the parallel algorithm (exact greedy is deterministic).

    Attributes
    ----------
    candidates_ : Candidates
    solution_ : Solution
    links_ : ndarray (k, 2)
    log_posterior_ : float
    objective_trace_ : ndarray (k,)
    doc_topics_ : list of ndarray
    token_topics_ : ndarray (n_tokens,)
    budget_ : int
        The resolved budget k.
    """

    def __init__(
        self, kappa: float = 2.0, *, generator: str = DEFAULT_GENERATOR, top_words: int = DEFAULT_TOP_WORDS,
        executor: ShardExecutor | None = None, epsilon: float = DEFAULT_EPSILON, seed: int = 0,
    ):
        self.kappa = kappa
        self.generator = generator
        self.top_words = top_words
        self.executor = executor
        self.epsilon = epsilon
        self.seed = seed

    def get_params(self, deep: bool = True) -> dict:
        """The constructor's arguments, as given."""
        return {
            "kappa": self.kappa, "generator": self.generator, "top_words": self.top_words,
            "executor": self.executor, "epsilon": self.epsilon, "seed": self.seed,
        }

    def set_params(self, **params) -> "ELDA":
        for name, value in params.items():
            if name not in self.get_params():
                raise InputError(f"ELDA has no parameter {name!r}; parameters: {sorted(self.get_params())}")
            setattr(self, name, value)
        return self

    def _check_params(self, *, needs_generator: bool) -> None:
        """Every parameter, before candidates are built or a round runs."""
        check_kappa(self.kappa)
        if self.executor is not None:
            check_epsilon(self.epsilon)
        if needs_generator:
            check_generator(self.generator)

    def _optimise(self, corpus: Corpus, candidates: Candidates, on_progress) -> Solution:
        if self.executor is None:
            return fast_greedy(corpus, candidates, self.kappa, on_progress=on_progress)
        return parallel_elda(
            corpus, candidates, self.kappa, epsilon=self.epsilon, seed=self.seed,
            executor=Borrowed(self.executor), on_progress=on_progress,
        )

    def fit(self, corpus: Corpus, candidates: Candidates | None = None, *, on_progress=None) -> "ELDA":
        """Choose each document's topics under the budget floor(kappa D).

        Parameters
        ----------
        corpus : Corpus
        candidates : Candidates, optional
            Candidate topics over the corpus vocabulary (default: the ``generator``'s keyword topics).
        on_progress : callable, optional
            ``on_progress(links_made, budget, log_posterior)`` as the links are made.

        Returns
        -------
        ELDA
            This estimator, fitted.
        """
        self._check_params(needs_generator=candidates is None)
        generate_seconds = 0.0
        if candidates is None:
            started = time.perf_counter()
            candidates = keyword_candidates(corpus, self.generator)
            generate_seconds = time.perf_counter() - started
        solution = self._optimise(corpus, candidates, on_progress)
        solution.stats["generate_seconds"] = generate_seconds
        self.candidates_ = candidates
        self.solution_ = solution
        self.links_ = solution.links
        self.log_posterior_ = solution.log_posterior
        self.objective_trace_ = solution.objective_trace
        self.doc_topics_ = solution.doc_topics
        self.token_topics_ = solution.token_topics
        self.budget_ = solution.budget
        return self
