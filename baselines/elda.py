"""E-LDA as one more model of the registry (wraps :mod:`topicbench.core.elda`)."""

from __future__ import annotations

from topicbench.core.config import OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus, corpus_from_token_lists
from topicbench.core.elda import ELDA
from topicbench.core.output import TopicModelOutput

from .base import TopicModel

#: Generators whose numba kernels this process has compiled (or loaded from numba's cache).
_WARM_GENERATORS: set = set()

#: A corpus just big enough to run every kernel of a fit once (candidates, first round, greedy).
_WARM_UP_DOCUMENTS = (("tax", "cut", "tax", "budget"), ("budget", "deficit", "cut"), ("war", "troops", "tax"))


class ELDAModel(TopicModel):
    """E-LDA with keyword topics. ``num_topics`` is ignored (E-LDA chooses how many topics it
    uses; the budget is ``kappa``); the seed is recorded (exact greedy is deterministic)."""

    name = "elda"
    defaults = {"kappa": 2.0, "generator": "cooccurrence", "top_words": OUTPUT_TOP_WORDS}

    def _setup(self, corpus: Corpus) -> None:
        """Compile (or load from numba's on-disk cache) the kernels once per process, on a
        three-document corpus, so that a fit's time is the fit's: a fresh Dask worker otherwise
        spends about 25 s compiling inside the first timed fit."""
        generator = self.settings["generator"]
        if generator not in _WARM_GENERATORS:
            ELDA(self.settings["kappa"], generator=generator).fit(corpus_from_token_lists(_WARM_UP_DOCUMENTS, name="warm-up"))
            _WARM_GENERATORS.add(generator)

    def _fit(self, corpus: Corpus, num_topics: int | None, seed: int) -> TopicModelOutput:
        settings = self.settings
        model = ELDA(settings["kappa"], generator=settings["generator"]).fit(corpus)
        solution = model.solution_
        return solution.to_output(
            model=self.name,
            top_n=settings["top_words"],
            settings={**settings, "budget_": solution.budget, "num_candidates_": model.candidates_.n_topics},
            seed=seed,
        )
