"""Input checks: kappa and the budget (spec §1: k = floor(kappa D), kappa >= 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topicbench.core.elda.model import ELDA
from topicbench.core.elda.generators import keyword_candidates, topic_matrix_candidates
from topicbench.core.elda.greedy import fast_greedy
from topicbench.core.validation import InputError, check_budget, check_kappa


@pytest.mark.parametrize("kappa", [0.999, 0, -1, 0.5])
def test_kappa_below_one(kappa):
    with pytest.raises(InputError, match=rf"kappa must be >= 1 \(every document gets at least one topic\), got {kappa!r}"):
        check_kappa(kappa)


@pytest.mark.parametrize("kappa", [math.nan, math.inf, -math.inf, np.nan])
def test_kappa_not_finite(kappa):
    with pytest.raises(InputError, match="kappa must be >= 1"):
        check_kappa(kappa)


@pytest.mark.parametrize("kappa", ["two", None, [2]])
def test_kappa_not_a_number(kappa):
    with pytest.raises(InputError, match="kappa must be a number >= 1, got"):
        check_kappa(kappa)


def test_kappa_accepted_values():
    assert check_kappa(1) == 1.0
    assert check_kappa("2.5") == 2.5
    assert check_kappa(np.float32(1.5)) == 1.5


def test_budget_is_floor_kappa_d():
    assert check_budget(1, 7, 3) == 7
    assert check_budget(1.5, 7, 3) == 10
    assert check_budget(2.99, 100, 3) == 299
    assert check_budget(3, 7, 3) == 21  # every link: allowed


def test_budget_larger_than_documents_times_topics():
    with pytest.raises(
        InputError,
        match=r"budget k = floor\(kappa \* D\) = 22 is larger than documents x topics = 7 x 3 = 21: lower kappa to at most 3",
    ):
        check_budget(3.2, 7, 3)


def test_budget_needs_documents_and_topics():
    with pytest.raises(InputError, match="the corpus has no documents"):
        check_budget(1, 0, 3)
    with pytest.raises(InputError, match="there are no candidate topics"):
        check_budget(1, 5, 0)


def test_fast_greedy_and_elda_check_kappa(tiny_corpus):
    candidates = keyword_candidates(tiny_corpus, "raw_umass")
    for kappa in (0.5, math.nan):
        with pytest.raises(InputError, match="kappa must be >= 1"):
            fast_greedy(tiny_corpus, candidates, kappa)
        with pytest.raises(InputError, match="kappa must be >= 1"):
            ELDA(kappa=kappa).fit(tiny_corpus)
    with pytest.raises(InputError, match="kappa must be a number"):
        ELDA(kappa="many").fit(tiny_corpus)


def test_fast_greedy_and_elda_check_the_budget(tiny_corpus):
    # 3 documents, 2 candidate topics: at most 6 links, kappa = 2.5 asks for 7
    log_phi = np.log(np.array([[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]]))
    candidates = topic_matrix_candidates(log_phi, vocabulary=tiny_corpus.vocabulary)
    message = r"budget k = floor\(kappa \* D\) = 7 is larger than documents x topics = 3 x 2 = 6"
    with pytest.raises(InputError, match=message):
        fast_greedy(tiny_corpus, candidates, 2.5)
    with pytest.raises(InputError, match=message):
        ELDA(kappa=2.5).fit(tiny_corpus, candidates)
    # the keyword generators give 3 topics here: kappa = 4 asks for 12 > 9
    with pytest.raises(InputError, match=r"= 12 is larger than documents x topics = 3 x 3 = 9"):
        ELDA(kappa=4, generator="cooccurrence").fit(tiny_corpus)
    # exactly D x topics is allowed: every document gets every topic
    solution = fast_greedy(tiny_corpus, candidates, 2)
    assert sorted(map(tuple, solution.links.tolist())) == [(d, t) for d in range(3) for t in range(2)]


def test_prefix_checks_kappa(tiny_corpus):
    solution = fast_greedy(tiny_corpus, keyword_candidates(tiny_corpus, "raw_umass"), 2)
    with pytest.raises(InputError, match=r"kappa' = 2.5 is larger than the solution's kappa = 2.0"):
        solution.prefix(2.5)
    with pytest.raises(InputError, match="kappa must be >= 1"):
        solution.prefix(0.5)


def test_candidates_over_another_vocabulary_are_refused_by_every_optimiser(tiny_corpus):
    from topicbench.core.elda.inference import infer_topics
    from topicbench.core.elda.parallel import parallel_elda
    from topicbench.core.validation import check_candidates_match_corpus

    other = topic_matrix_candidates(np.zeros((2, 4)))
    message = "cover 4 words but the corpus vocabulary has 3"
    with pytest.raises(InputError, match=f"the candidates {message}: build candidates over the corpus vocabulary"):
        fast_greedy(tiny_corpus, other, 1)
    with pytest.raises(InputError, match=f"the candidates {message}"):
        parallel_elda(tiny_corpus, other, 1)
    with pytest.raises(InputError, match=f"the frozen topics {message}: held-out documents must use the training"):
        infer_topics(tiny_corpus, other, topics_per_document=1)
    with pytest.raises(InputError, match="the candidates cover 4 words"):
        ELDA(1).fit(tiny_corpus, other)
    check_candidates_match_corpus(keyword_candidates(tiny_corpus, "raw_umass"), tiny_corpus)  # passes


def test_every_elda_entry_point_shares_the_defaults_in_config():
    import inspect

    from topicbench.core.constants import DEFAULT_EPSILON, DEFAULT_GENERATOR, GENERATORS
    from topicbench.core.elda.parallel import parallel_elda

    model = ELDA()
    assert model.generator == DEFAULT_GENERATOR in GENERATORS
    assert model.epsilon == DEFAULT_EPSILON
    assert inspect.signature(parallel_elda).parameters["epsilon"].default == DEFAULT_EPSILON
