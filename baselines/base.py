"""The interface every topic model implements, and the timing/memory helpers they share."""

from __future__ import annotations

import abc
import threading
import time
from contextlib import contextmanager

import psutil

from topicbench.core.corpus import Corpus
from topicbench.core.output import TopicModelOutput
from topicbench.core.validation import InputError


class ModelError(RuntimeError):
    """A model could not fit: the message names the model and the reason."""


class TopicModel(abc.ABC):
    """A topic model: settings at construction (stored untouched), ``fit`` returns the shared output.

    Subclasses set ``name`` (its registry name), list their settings with defaults in
    ``defaults``, and implement ``_fit``.
    """

    name: str = ""
    defaults: dict = {}

    def __init__(self, **settings):
        unknown = sorted(set(settings) - set(self.defaults))
        if unknown:
            raise InputError(
                f"{self.name}: unknown settings {unknown}; known: {sorted(self.defaults)}"
            )
        self.settings = {**self.defaults, **settings}

    def get_params(self) -> dict:
        return dict(self.settings)

    def fit(self, corpus: Corpus, num_topics: int | None, seed: int = 0) -> TopicModelOutput:
        """Fit on ``corpus`` and return the checked output, with fit time and peak memory."""
        if corpus.n_documents == 0 or corpus.n_tokens == 0:
            raise InputError(f"{self.name}: the corpus {corpus.name!r} is empty")
        with measure() as usage:
            output = self._fit(corpus, num_topics, seed)
        output = _with_usage(output, usage)
        return output.check(corpus.n_documents, corpus.n_tokens)

    @abc.abstractmethod
    def _fit(self, corpus: Corpus, num_topics: int | None, seed: int) -> TopicModelOutput:
        """Fit and build the output (``fit_seconds``/``peak_memory_mb`` are filled in by ``fit``)."""


def _with_usage(output: TopicModelOutput, usage: dict) -> TopicModelOutput:
    from dataclasses import replace

    return replace(output, fit_seconds=usage["seconds"], peak_memory_mb=usage["peak_memory_mb"])


@contextmanager
def measure(interval: float = 0.05):
    """Wall time and peak resident memory (MB) of the process while the block runs."""
    process = psutil.Process()
    usage = {"seconds": 0.0, "peak_memory_mb": process.memory_info().rss / 2**20}
    done = threading.Event()

    def sample():
        while not done.wait(interval):
            usage["peak_memory_mb"] = max(usage["peak_memory_mb"], process.memory_info().rss / 2**20)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    try:
        yield usage
    finally:
        usage["seconds"] = time.perf_counter() - started
        done.set()
        sampler.join()
        usage["peak_memory_mb"] = max(usage["peak_memory_mb"], process.memory_info().rss / 2**20)
