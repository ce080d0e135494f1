"""FastGreedy's steps in parallel chain rounds (``greedy._chain_rounds``) against the heap's
steps one at a time: the same links, in the same order, with the same gains, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from test_elda import SOURCES, feasible_kappas, make_instance, tie_free_instance

import naive
from topicbench.core.elda import greedy
from topicbench.core.elda.generators import topic_matrix_candidates
from topicbench.core.elda.greedy import fast_greedy
from topicbench.core.preprocess import corpus_from_token_lists

#: (links left below which the heap takes over, the round's head rank fraction, links per pass)
FORCED = {
    "quarter": (1, 1 / 4, 16),
    "one_link_per_pass": (1, 1 / 4, 1),
    "every_round_past_the_budget": (1, 1.0, 2),
}


def heap_only(monkeypatch) -> None:
    monkeypatch.setattr(greedy, "CHAIN_ROUNDS_MIN_LINKS", 10**12)


def chains_forced(monkeypatch, setting: str) -> None:
    min_links, fraction, cap = FORCED[setting]
    monkeypatch.setattr(greedy, "CHAIN_ROUNDS_MIN_LINKS", min_links)
    monkeypatch.setattr(greedy, "CHAIN_ROUND_FRACTION", fraction)
    monkeypatch.setattr(greedy, "CHAIN_CAP", cap)


#: The heap's solutions of the instances below, by (seed, source, kappa): the same for every
#: setting of the chain rounds, so computed once for the three (a third of these tests' time).
_HEAP_SOLUTIONS: dict = {}


@pytest.mark.parametrize("setting", sorted(FORCED))
def test_chain_rounds_make_the_heaps_links(setting, monkeypatch):
    """Random instances of every candidate source (with the ties keyword topics and repeated
    documents bring), every feasible kappa: chain rounds and the heap agree exactly."""
    rounds_run = 0
    for seed in range(25):
        for source in SOURCES:
            corpus, candidates = make_instance(seed, source)
            for kappa in feasible_kappas(corpus, candidates):
                key = (seed, source, kappa)
                if key not in _HEAP_SOLUTIONS:
                    heap_only(monkeypatch)
                    _HEAP_SOLUTIONS[key] = fast_greedy(corpus, candidates, kappa)
                one_at_a_time = _HEAP_SOLUTIONS[key]
                chains_forced(monkeypatch, setting)
                in_rounds = fast_greedy(corpus, candidates, kappa)
                np.testing.assert_array_equal(in_rounds.links, one_at_a_time.links)
                np.testing.assert_array_equal(in_rounds.link_gains, one_at_a_time.link_gains)
                assert in_rounds.log_posterior == one_at_a_time.log_posterior
                assert one_at_a_time.stats["chain_rounds"] == 0
                rounds_run += in_rounds.stats["chain_rounds"]
    assert rounds_run > 100  # the rounds ran, not only the heap


@pytest.mark.parametrize("setting", sorted(FORCED))
def test_chain_rounds_link_identical_documents_in_document_order(setting, monkeypatch):
    """Documents with the same words have equal gains, so equal keys: lower document first."""
    chains_forced(monkeypatch, setting)
    docs = [["x", "y"], ["y", "z", "z"], ["x", "y"], ["z", "x"], ["y", "x"], ["x", "y"]] * 3
    corpus = corpus_from_token_lists(docs, vocabulary=["x", "y", "z"])
    log_phi = np.log(np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7]]))
    candidates = topic_matrix_candidates(log_phi, vocabulary=corpus.vocabulary)
    solution = fast_greedy(corpus, candidates, 1.5)
    assert solution.stats["chain_rounds"] > 0
    ref_links, _ = naive.naive_greedy(log_phi, corpus, 1.5)
    np.testing.assert_array_equal(solution.links, ref_links)
    position = {(int(d), int(t)): i for i, (d, t) in enumerate(solution.links)}
    same = [d for d, words in enumerate(docs) if sorted(words) == ["x", "y"]]
    for t in solution.doc_topics[same[0]]:
        linked = [position[(d, int(t))] for d in same if (d, int(t)) in position]
        assert linked == sorted(linked)


@pytest.mark.parametrize("seed", range(10))
def test_chain_rounds_match_the_naive_greedy_without_ties(seed, monkeypatch):
    """Continuous random topic matrices, no repeated documents: no two gains tie, so chain rounds
    must give the reference greedy's order exactly."""
    chains_forced(monkeypatch, "quarter")
    corpus, log_phi, candidates = tie_free_instance(np.random.default_rng([seed, 123]), min_documents=10)
    solution = fast_greedy(corpus, candidates, 3)
    assert solution.stats["chain_rounds"] > 0
    ref_links, _ = naive.naive_greedy(log_phi, corpus, 3)
    np.testing.assert_array_equal(solution.links, ref_links)
