"""Independence-preserving inference: per-document greedy with frozen topics, and effect estimates."""

from __future__ import annotations

import numpy as np
import pytest

import naive
from conftest import random_corpus
from topicbench.core.elda.model import ELDA
from topicbench.core.elda.inference import (
    estimate_effect,
    freeze_topics,
    infer_topics,
    select_topics,
    topic_indicator,
)
from topicbench.core.preprocess import corpus_from_token_lists
from topicbench.core.validation import InputError


@pytest.fixture
def frozen():
    rng = np.random.default_rng(11)
    corpus = random_corpus(rng, n_documents=(40, 40), n_words=(25, 25), doc_length=(3, 25))
    train = corpus.subset(range(20), name="train")
    held_out = corpus.subset(range(20, 40), name="held_out")
    solution = ELDA(2, generator="raw_umass").fit(train).solution_
    return freeze_topics(solution), held_out


def per_document(solution):
    return [list(map(int, t)) for t in solution.doc_topics]


def test_freeze_topics_keeps_the_used_topics_in_order(frozen):
    candidates, _ = frozen
    assert candidates.n_topics >= 1
    assert len(set(candidates.labels)) == candidates.n_topics


def test_a_documents_topics_do_not_depend_on_other_documents(frozen):
    candidates, held_out = frozen
    alone = [per_document(infer_topics(held_out.subset([d]), candidates, topics_per_document=3))[0]
             for d in range(held_out.n_documents)]
    together = per_document(infer_topics(held_out, candidates, topics_per_document=3))
    assert together == alone
    rng = np.random.default_rng(0)
    order = rng.permutation(held_out.n_documents)
    shuffled = per_document(infer_topics(held_out.subset(order), candidates, topics_per_document=3))
    assert shuffled == [together[d] for d in order]
    extra = held_out.subset(list(range(held_out.n_documents)) + [0, 1, 2])  # added documents
    assert per_document(infer_topics(extra, candidates, topics_per_document=3))[: held_out.n_documents] == together


def test_each_document_gets_its_own_greedy(frozen):
    candidates, held_out = frozen
    solution = infer_topics(held_out, candidates, topics_per_document=2)
    L = candidates.to_dense()
    for d in range(held_out.n_documents):
        doc = held_out.document(d)
        topics = []
        for _ in range(min(2, candidates.n_topics)):
            gains = naive.gains(L, doc, naive.best_scores(L, doc, topics))
            gains[topics] = -np.inf
            topics.append(int(np.argmax(gains)))
        assert list(solution.doc_topics[d]) == topics


def test_min_gain_stops_early_but_every_document_gets_a_topic(frozen):
    candidates, held_out = frozen
    capped = infer_topics(held_out, candidates, topics_per_document=5)
    threshold = float(np.median(capped.link_gains))
    thresholded = infer_topics(held_out, candidates, min_gain=threshold)
    assert all(len(t) >= 1 for t in thresholded.doc_topics)
    counts = np.bincount(thresholded.links[:, 0], minlength=held_out.n_documents)
    later = thresholded.link_gains[np.concatenate([[False], thresholded.links[1:, 0] == thresholded.links[:-1, 0]])]
    assert (later >= threshold).all()
    assert counts.sum() < capped.n_links


def test_bad_input(frozen):
    candidates, held_out = frozen
    with pytest.raises(InputError, match="topics_per_document, min_gain"):
        infer_topics(held_out, candidates)
    with pytest.raises(InputError, match="topics_per_document must be >= 1"):
        infer_topics(held_out, candidates, topics_per_document=0)
    other = corpus_from_token_lists([["x", "y"]])
    with pytest.raises(InputError, match="training vocabulary"):
        infer_topics(other, candidates, topics_per_document=1)
    with pytest.raises(InputError, match="selection is empty"):
        select_topics(candidates, [])


def test_estimate_effect_recovers_a_known_effect():
    rng = np.random.default_rng(3)
    n = 4000
    treated = (rng.random(n) < 0.3).astype(float)
    length = rng.normal(size=n)
    outcome = 1.0 + 0.5 * treated + 0.8 * length + rng.normal(size=n) * (1 + treated)
    effect = estimate_effect(outcome, treated, length)
    assert effect.ci_low < 0.5 < effect.ci_high
    assert abs(effect.estimate - 0.5) < 4 * effect.standard_error
    assert 0.02 < effect.standard_error < 0.1
    with pytest.raises(InputError, match="does not vary"):
        estimate_effect(outcome, np.ones(n))


def test_topic_indicator(frozen):
    candidates, held_out = frozen
    solution = infer_topics(held_out, candidates, topics_per_document=2)
    t = int(solution.links[0, 1])
    indicator = topic_indicator(solution, t)
    assert indicator.sum() == sum(t in topics for topics in solution.doc_topics)
