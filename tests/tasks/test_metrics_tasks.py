"""tasks/run/metric_context.py through ``.fn``: the task builds the context once per corpus and calls
core's ``score``, nothing more."""

from __future__ import annotations

import numpy as np

from topicbench.core.metrics.scoring import Scores, score
from topicbench.core.output import TopicModelOutput
from topicbench.core.preprocess import corpus_from_token_lists
from topicbench.tasks.run import metric_context as metric_tasks


def _corpus():
    documents = [["tax", "budget", "war", "army"], ["budget", "tax", "jobs"], ["war", "army", "troops", "tax"]] * 4
    return corpus_from_token_lists(documents, name="small")


def _output(corpus, model):
    topics = [["tax", "budget", "jobs"], ["war", "army", "troops"]]
    return TopicModelOutput(
        model=model, vocabulary=corpus.vocabulary, topics=topics,
        topic_word_matrix=np.full((2, corpus.n_words), 1 / corpus.n_words),
        topic_document_matrix=np.full((2, corpus.n_documents), 0.5),
    )


def test_word_vectors_are_embedded_once_per_context_and_only_when_needed(monkeypatch):
    corpus = _corpus()
    embedded = []

    def fake_embed(vocabulary):
        embedded.append(tuple(vocabulary))
        return np.random.default_rng(0).normal(size=(len(vocabulary), 8))

    monkeypatch.setattr(metric_tasks, "_embed_words", fake_embed)
    names = ["embedding_pairwise", "embedding_centroid", "npmi"]
    context = metric_tasks.build_metric_context(corpus, names, (2, 3))
    assert embedded == []  # built on first use, not with the context
    first = score(_output(corpus, "a"), context, names, seed=0)
    second = score(_output(corpus, "b"), context, names, seed=1)
    assert embedded == [tuple(corpus.vocabulary)]
    assert isinstance(first, Scores) and set(first.values) == set(second.values) == {
        f"{name}@{n}" for name in names for n in (2, 3)
    }
    without = metric_tasks.build_metric_context(corpus, ["npmi"], (2, 3))
    assert score(_output(corpus, "a"), without, ["embedding_pairwise"], seed=0).skipped == {
        "embedding_pairwise": "no word vectors"
    }
    assert len(embedded) == 1
