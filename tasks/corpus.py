"""Prefect task: load and preprocess a corpus."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NONE

from topicbench.core.corpus import Corpus
from topicbench.core.io import load_corpus as read_corpus


@task(name="load_corpus", cache_policy=NONE)
def load_corpus(spec) -> Corpus:
    """Read and preprocess one corpus of a benchmark config (a :class:`CorpusSpec`)."""
    return read_corpus(spec.resolved_source(), spec.preprocess_config(), name=spec.name)
