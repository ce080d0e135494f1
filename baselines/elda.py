"""E-LDA as one more model of the registry (wraps :mod:`topicbench.core.elda`)."""

from __future__ import annotations

from topicbench.core.config import GENERATORS, OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus, corpus_from_token_lists
from topicbench.core.elda import ELDA
from topicbench.core.output import TopicModelOutput
from topicbench.core.validation import InputError, check_kappa

from .base import TopicModel, require_choice, require_integers

#: Generators whose numba kernels this process has compiled (or loaded from numba's cache).
_WARM_GENERATORS: set = set()

#: A corpus just big enough to run every kernel of a fit once (candidates, first round, greedy).
_WARM_UP_DOCUMENTS = (("tax", "cut", "tax", "budget"), ("budget", "deficit", "cut"), ("war", "troops", "tax"))


class ELDAModel(TopicModel):
    """E-LDA with keyword topics. ``num_topics`` is ignored (E-LDA chooses how many topics it
    uses; the budget is ``kappa``); the seed is recorded (exact greedy is deterministic)."""

    name = "elda"
    defaults = {"kappa": 2.0, "generator": "cooccurrence", "top_words": OUTPUT_TOP_WORDS}

    def _check_settings(self, settings: dict) -> None:
        try:
            check_kappa(settings["kappa"])
        except InputError as error:
            raise InputError(f"{self.name}: {error}") from None
        require_choice(self.name, "generator", settings["generator"], GENERATORS)
        require_integers(self.name, settings, {"top_words": 1})

    def check_num_topics(self, num_topics) -> None:
        """E-LDA chooses how many topics it uses: a K, if given, is ignored but must be sane."""
        if num_topics is not None:
            self._require_num_topics(num_topics)

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
