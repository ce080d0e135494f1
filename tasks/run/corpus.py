"""Prefect task: load and preprocess a corpus; the reference corpus its coherence counts in."""

from __future__ import annotations

import json
from functools import lru_cache

from prefect import task
from prefect.cache_policies import NONE

from topicbench.core.corpus import Corpus
from topicbench.core.io import load_corpus as read_corpus
from topicbench.core.preprocess import PreprocessConfig
from topicbench.core.validation import InputError, check_num_topics_fit


@task(name="load_corpus", cache_policy=NONE)
def load_corpus(spec) -> Corpus:
    """Read and preprocess one corpus of a benchmark config (a :class:`CorpusSpec`)."""
    return read_corpus(spec.resolved_source(), spec.preprocess_config(), name=spec.name)


def check_topics_fit(splits: dict, num_topics) -> None:
    """Each K of ``num_topics`` ((where, K) pairs; K None: the model chooses) fits every corpus of
    ``splits`` (name -> (fitting corpus, held-out corpus)), once the corpora are read and before
    any fit (:func:`~topicbench.core.validation.check_num_topics_fit`)."""
    for name, (corpus, _) in splits.items():
        for where, k in num_topics:
            if k is not None:
                check_num_topics_fit(k, corpus.n_documents, len(corpus.vocabulary), where=where, corpus=name)


def corpus_splits(corpus: Corpus):
    """(fitting corpus, held-out corpus or None): OCTIS 'test' documents are held out when present."""
    if corpus.partitions is not None and "test" in corpus.partitions and "train" in corpus.partitions:
        return corpus.split("train"), corpus.split("test")
    return corpus, None


def coherence_reference(reference, spec, fitting: Corpus, heldout: Corpus | None) -> Corpus | None:
    """The corpus a config's coherence counts co-occurrences in, for its corpus ``spec`` (None: the
    fitting corpus, the default). ``reference`` is the config's ``coherence.reference``:
    ``"train"`` (the documents each model is fitted on), ``"test"`` (the held-out ones), ``"all"``
    (every document, read again with the corpus's preprocessing) or an external corpus's spec
    (a :class:`~topicbench.flows.config.model.CorpusSpec`: ``name``, ``resolved_source()``,
    ``preprocess_config()``). A reference read from a file is read once per process (cached)."""
    if reference in (None, "train"):
        return None
    if reference == "test":
        if heldout is None:
            raise InputError(f"corpus {spec.name!r}: coherence.reference is 'test', and the corpus has no test partition "
                             "(documents marked 'test' beside 'train' in corpus.tsv); use 'train' or 'all'")
        return heldout
    if reference == "all":
        return _read_reference(f"{spec.name}[all]", spec.resolved_source(), _as_key(spec.preprocess_config()))
    if isinstance(reference, str):
        raise InputError(f"coherence.reference must be 'train', 'test', 'all' or an external corpus, got {reference!r}")
    return _read_reference(reference.name, reference.resolved_source(), _as_key(reference.preprocess_config()))


def coherence_references(config, splits: dict) -> dict:
    """Corpus name -> the corpus its coherence counts in (None: the fitting corpus), for a
    benchmark ``config`` (its ``coherence_reference()``) and its ``splits`` (name -> (fitting,
    held-out)); raises :class:`InputError` for a reference a corpus cannot give. Called once the
    corpora are read, before any fit, and again where fits are sent (the reads are cached)."""
    reference = config.coherence_reference()
    specs = {spec.name: spec for spec in config.corpora}
    return {name: coherence_reference(reference, specs[name], *split) for name, split in splits.items()}


def _as_key(config: PreprocessConfig) -> str:
    return json.dumps(config.to_dict(), sort_keys=True)


@lru_cache(maxsize=4)
def _read_reference(name: str, source: str, preprocessing: str) -> Corpus:
    return read_corpus(source, PreprocessConfig.from_dict(json.loads(preprocessing)), name=name)
