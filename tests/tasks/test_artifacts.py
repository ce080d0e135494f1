"""What a fit logs for a reader to judge its topics (``topic_documents.json``): each topic's share,
the documents it is the main topic of, by label, and example documents as short excerpts; the
same from a dense and a sparse topic-document matrix, checked against counts made by hand."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from topicbench.core.preprocess import PreprocessConfig, preprocess
from topicbench.tasks.store.artifacts import excerpt, topic_documents

TEXTS = ["tax vote bill senate", "game team win", "tax law vote", "team coach game season", "song band album"]
LABELS = ["politics", "sport", "politics", "sport", "music"]
#: p(topic | document): topic 1 (sport and music) is the most prevalent, topic 2 is nobody's main topic.
THETA = np.array([[0.8, 0.1, 0.6, 0.0, 0.2],
                  [0.1, 0.9, 0.3, 0.7, 0.5],
                  [0.1, 0.0, 0.1, 0.3, 0.3]])


@pytest.fixture()
def corpus():
    return preprocess(TEXTS, PreprocessConfig(preprocessed=True), labels=LABELS)


@pytest.mark.parametrize("form", [np.asarray, sp.csr_matrix], ids=["dense", "sparse"])
def test_each_topic_has_its_share_main_documents_labels_and_heaviest_documents(corpus, form):
    facts = topic_documents(form(THETA), corpus, example_topics=2, examples=2)
    assert facts["documents"] == 5 and facts["labels"] == ["music", "politics", "sport"]
    topics = facts["topics"]
    assert [record["topic"] for record in topics] == [1, 0, 2]  # by share: 2.5/5, 1.7/5, 0.8/5
    assert [record["share"] for record in topics] == pytest.approx([0.5, 0.34, 0.16])
    assert [record["documents"] for record in topics] == [3, 2, 0]
    assert topics[0]["by_label"] == {"music": 1, "sport": 2} and topics[1]["by_label"] == {"politics": 2}
    assert "by_label" not in topics[2] and "examples" not in topics[2]  # beyond example_topics
    assert topics[0]["examples"] == [{"document": 1, "weight": pytest.approx(0.9), "excerpt": "game team win"},
                                     {"document": 3, "weight": pytest.approx(0.7), "excerpt": "team coach game season"}]
    assert [e["document"] for e in topics[1]["examples"]] == [0, 2]


def test_a_corpus_without_labels_has_no_label_counts(corpus):
    unlabelled = preprocess(TEXTS, PreprocessConfig(preprocessed=True))
    facts = topic_documents(THETA, unlabelled)
    assert facts["labels"] is None and not any("by_label" in record for record in facts["topics"])
    assert all(len(record["examples"]) == 3 for record in facts["topics"])
    every = topic_documents(THETA, unlabelled, examples=5)["topics"]
    assert [e["document"] for e in every[2]["examples"]] == [3, 4, 0, 2]  # a weight of 0 is no example


def test_an_excerpt_is_the_documents_words_cut_at_a_word_within_the_limit():
    long = preprocess(["alpha beta gamma delta " * 20, "x" * 300], PreprocessConfig(preprocessed=True))
    text = excerpt(long, 0, 30)
    assert text == "alpha beta gamma delta alpha…" and len(text) <= 30
    assert excerpt(long, 1, 30) == "x" * 29 + "…"  # one word longer than the limit is cut inside it
    assert excerpt(long, 0, 1000) == " ".join(["alpha beta gamma delta"] * 20)


def test_a_matrix_over_other_documents_is_refused(corpus):
    with pytest.raises(ValueError, match="5"):
        topic_documents(THETA[:, :4], corpus)
