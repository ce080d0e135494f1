"""Prefect task: load and preprocess a corpus."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NONE

from topicbench.core.corpus import Corpus
from topicbench.core.io import load_corpus as read_corpus
from topicbench.core.validation import check_num_topics_fit


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
