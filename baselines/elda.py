"""E-LDA as one more model of the registry (wraps :mod:`topicbench.core.elda`)."""

from __future__ import annotations

from topicbench.core.config import OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus
from topicbench.core.elda import ELDA
from topicbench.core.output import TopicModelOutput

from .base import TopicModel


class ELDAModel(TopicModel):
    """E-LDA with keyword topics. ``num_topics`` is ignored (E-LDA chooses how many topics it
    uses; the budget is ``kappa``); the seed is recorded (exact greedy is deterministic)."""

    name = "elda"
    defaults = {"kappa": 2.0, "generator": "cooccurrence", "top_words": OUTPUT_TOP_WORDS}

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
