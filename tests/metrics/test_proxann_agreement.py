"""ProxAnn's agreement scoring: hand-built answers, the draws of its bootstrap, and the oracle
(the authors' released answers reproduce their published figures)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from proxann_release import proxann_fixture

from topicbench.core.metrics.proxann_agreement import (AgreementInputError, calibration_table,
                                                       judge_topic_agreement, people_means,
                                                       people_ranking_tau, people_topic_agreement,
                                                       seed_means, topic_ranking_tau)
from topicbench.core.metrics.alternative_annotator import _benjamini_yekutieli, alternative_annotator_test
from topicbench.core.proxann_data import people_answers

THETA = (0.9, 0.7, 0.5, 0.3, 0.1)
#: The released LLMs whose figures ProxAnn's README prints, by the folder of their answers.
LLM_FOLDERS = {"gpt-4o": "gpt-4o-2024-08-06", "llama-3.1-8b": "Meta-Llama-3.1-8B-Instruct",
               "qwen-2.5-72b": "Qwen2.5-72B-Instruct-AWQ"}


def _documents(topics=("a", "b")) -> pd.DataFrame:
    return pd.DataFrame([{"topic": t, "position": p, "theta": theta, "assigned": int(theta > 0.4)}
                         for t in topics for p, theta in enumerate(THETA)])


def _people(fits_by_topic: dict) -> pd.DataFrame:
    """One response per list of fit answers; ranks follow the fits (best fit ranked 1)."""
    rows, response = [], 0
    for topic, responses in fits_by_topic.items():
        for fits in responses:
            ranks = pd.Series(fits).rank(ascending=False, method="first").astype(int)
            rows += [{"topic": topic, "response": response, "position": p, "fit": f, "rank": int(r)}
                     for p, (f, r) in enumerate(zip(fits, ranks))]
            response += 1
    return pd.DataFrame(rows)


def test_people_means_reverse_ranks_over_the_documents_and_the_distractor():
    people = _people({"a": [[5, 4, 3, 2, 1], [5, 3, 4, 2, 1]]})
    means = people_means(people)
    # 5 documents + the distractor: rank 1 scores 6 - 1 = 5 (ProxAnn's 8 - rank for 7 documents).
    assert means["rank"].tolist() == [5.0, 3.5, 3.5, 2.0, 1.0]
    assert means["fit"].tolist() == [5.0, 3.5, 3.5, 2.0, 1.0]
    assert means["n_people"].tolist() == [2] * 5


def test_topic_agreement_is_kendall_tau_of_the_mean_answers_against_theta():
    people = _people({"a": [[5, 4, 3, 2, 1]] * 2, "b": [[1, 2, 3, 4, 5]] * 3})
    agreement = people_topic_agreement(people, _documents())
    assert agreement["topic"].tolist() == ["a", "b"]
    assert agreement["fit_tau"].tolist() == pytest.approx([1.0, -1.0])
    assert agreement["rank_tau"].tolist() == pytest.approx([1.0, -1.0])
    assert agreement["n_people"].tolist() == [2, 3]


def test_judge_agreement_against_theta_and_against_people():
    people = _people({"a": [[5, 4, 3, 2, 1]] * 2, "b": [[1, 2, 3, 4, 5]] * 2})
    judge = pd.DataFrame([{"topic": t, "position": p, "fit": 5.0 - p, "rank": 5.0 - p}
                          for t in ("a", "b") for p in range(5)])
    agreement = judge_topic_agreement(judge, people, _documents())
    assert agreement["fit_tau"].tolist() == pytest.approx([1.0, 1.0])
    assert agreement["fit_tau_people"].tolist() == pytest.approx([1.0, -1.0])
    assert agreement["rank_tau_people"].tolist() == pytest.approx([1.0, -1.0])


def test_agreement_with_assignments_uses_the_main_topic_flag():
    people = _people({"a": [[5, 5, 5, 1, 1]] * 2})
    agreement = people_topic_agreement(people, _documents(("a",)), use_assignments=True)
    assert agreement["fit_tau"].iloc[0] == pytest.approx(1.0)


def test_topic_ranking_tau_draws_as_pandas_sample_with_proxann_seed():
    # ProxAnn resamples with DataFrame.sample(frac=1, replace=True, random_state=<RandomState(42)'s bit generator>).
    n = 24
    state = np.random.RandomState(42)
    table = pd.DataFrame({"row": np.arange(n)})
    expected = [np.sort(table.sample(frac=1, replace=True, random_state=state._bit_generator)["row"].to_numpy())
                for _ in range(3)]
    draws = np.random.RandomState(42)
    ours = [np.sort(draws.randint(0, n, size=n)) for _ in range(3)]
    for theirs, mine in zip(expected, ours):
        np.testing.assert_array_equal(theirs, mine)


def test_topic_ranking_tau_of_equal_and_reversed_rankings():
    scores = np.linspace(-1, 1, 12)
    same = topic_ranking_tau(scores, scores)
    assert (same.mean, same.se, same.point) == (pytest.approx(1.0), pytest.approx(0.0), pytest.approx(1.0))
    assert same.n_resamples == 50
    reversed_ = topic_ranking_tau(-scores, scores, n_resamples=20, seed=3)
    assert reversed_.mean == pytest.approx(-1.0) and reversed_.low == pytest.approx(-1.0)
    # ProxAnn's NPMI pairing: the reference is not resampled with the topics, so equal scores lose their pairing.
    shuffled = np.random.default_rng(0).permutation(scores)  # topic order unrelated to the scores
    unpaired = topic_ranking_tau(shuffled, shuffled, resample_judge=False)
    assert unpaired.point == pytest.approx(1.0) and unpaired.mean < 0.5


def test_topic_ranking_tau_leaves_out_undefined_topics_and_refuses_mismatched_lengths():
    scores = np.array([0.1, np.nan, 0.3, 0.5, 0.7])
    assert topic_ranking_tau(scores, np.array([1.0, 5.0, 2.0, 3.0, 4.0])).point == pytest.approx(1.0)
    with pytest.raises(AgreementInputError, match="same length"):
        topic_ranking_tau([0.1, 0.2], [0.1, 0.2, 0.3])


def test_missing_columns_are_named():
    with pytest.raises(AgreementInputError, match="no column 'rank'"):
        people_means(pd.DataFrame({"topic": ["a"], "response": [0], "position": [0], "fit": [3]}))


def test_alternative_annotator_test_judge_equal_to_people_always_wins():
    people = _people({t: [[5, 4, 3, 2, 1]] * 3 for t in ("a", "b", "c")})
    judge = people[people["response"].isin([0, 3, 6])][["topic", "position", "fit", "rank"]].copy()
    judge["rank"] = 5 - judge["rank"]  # answers as a judge gives them: higher fits better
    for level in ("document", "topic"):
        result = alternative_annotator_test(judge, people, answer="fit", level=level, n_resamples=3)
        assert result.advantage_probability == 1.0 and result.n_annotators == 3
    far = judge.assign(fit=judge["fit"] + 3)
    assert alternative_annotator_test(far, people, answer="fit", n_resamples=2).advantage_probability == 0.0


def test_benjamini_yekutieli_by_hand():
    # m = 3, H_3 = 11/6: thresholds q/H_3 * (1/3, 2/3, 1) = (0.00909, 0.01818, 0.02727) at q = 0.05.
    assert sorted(_benjamini_yekutieli([0.005, 0.5, 0.018], 0.05)) == [0, 2]
    assert _benjamini_yekutieli([0.02, 0.5, 0.9], 0.05) == []


def test_alternative_annotator_test_refuses_an_unknown_level():
    with pytest.raises(AgreementInputError, match="level must be one of document, topic"):
        alternative_annotator_test(pd.DataFrame(), pd.DataFrame(), level="corpus")


# ------------------------------------------------------------------------------------------------
# The oracle: ProxAnn's released Bills answers give their published figures.
# ------------------------------------------------------------------------------------------------

#: README of ahoho/proxann at 3583fa4, "Relationship between automated and human topic rankings",
#: Bills columns: Kendall's τ (SE) of topic rankings against people's, fit and rank.
PUBLISHED_TAU = {"gpt-4o": ((0.31, 0.13), (0.29, 0.11)), "llama-3.1-8b": ((0.16, 0.18), (0.15, 0.14)),
                 "qwen-2.5-72b": ((0.22, 0.17), (0.21, 0.15)), "npmi": ((0.01, 0.10), (-0.02, 0.12)),
                 "people": ((0.09, 0.14), (0.18, 0.12))}
#: The same README, "Alternative Annotator Test", Bills: advantage probabilities (document fit,
#: document rank, topic fit, topic rank).
PUBLISHED_ADVANTAGE = {"gpt-4o": (0.65, 0.71, 0.77, 0.75), "llama-3.1-8b": (0.30, 0.53, 0.14, 0.44),
                       "qwen-2.5-72b": (0.61, 0.71, 0.78, 0.65)}
#: Printed to two decimals: a reproduction is within half a unit of the last one (plus rounding).
PRINTED = 0.0051


@pytest.fixture(scope="module")
def bills():
    """The released Bills answers, from the fixture derived from them (tests/data/proxann; that it
    equals what the release gives is tests/metrics/test_proxann_release.py's)."""
    tables = proxann_fixture().read_fixture()
    answers = tables["llm_answers"]
    judges = {name: seed_means(answers[answers["llm"] == folder]) for name, folder in LLM_FOLDERS.items()}
    return tables["documents"], people_answers(tables["people"]), judges, tables["coherences"]


def test_oracle_released_llm_answers_give_the_published_topic_ranking_tau(bills):
    documents, people, judges, _ = bills
    assert people["topic"].nunique() == 24 and people["response"].nunique() == 101  # 121 answered, 20 removed
    table = calibration_table(judges, people, documents).set_index(["scorer", "answer"])
    for name in judges:
        for answer, (published, se) in zip(("fit", "rank"), PUBLISHED_TAU[name]):
            found = table.loc[(name, answer)]
            assert abs(found["tau"] - published) <= se, (name, answer, found["tau"])
            assert abs(found["tau"] - published) <= PRINTED, (name, answer, found["tau"])
            assert found["se"] == pytest.approx(se, abs=PRINTED), (name, answer, found["se"])
            assert found["low"] < found["tau"] < found["high"]


def test_oracle_npmi_tau_as_published_and_paired(bills):
    documents, people, _, coherences = bills
    agreement = people_topic_agreement(people, documents).merge(coherences, on="topic")
    for answer, (published, se) in zip(("fit", "rank"), PUBLISHED_TAU["npmi"]):
        as_published = topic_ranking_tau(agreement["npmi"], agreement[f"{answer}_tau"], resample_judge=False)
        assert as_published.mean == pytest.approx(published, abs=PRINTED)
        assert as_published.se == pytest.approx(se, abs=PRINTED)
        # Paired properly, NPMI still does not rank topics as people do: within the published SE of 0.
        paired = topic_ranking_tau(agreement["npmi"], agreement[f"{answer}_tau"])
        assert abs(paired.mean) <= se


def test_oracle_people_agree_with_each_other_as_published(bills):
    documents, people, _, _ = bills
    found = people_ranking_tau(people, documents, seed=0)
    # ProxAnn drew the left-out people unseeded: the figure is reproduced within its SE.
    for answer, (published, se) in zip(("fit", "rank"), PUBLISHED_TAU["people"]):
        assert abs(found[answer].mean - published) <= se, (answer, found[answer])


def test_oracle_alternative_annotator_test_as_published(bills):
    _, people, judges, _ = bills
    for name, published in PUBLISHED_ADVANTAGE.items():
        cases = [("document", "fit"), ("document", "rank"), ("topic", "fit"), ("topic", "rank")]
        for (level, answer), expected in zip(cases, published):
            found = alternative_annotator_test(judges[name], people, answer=answer, level=level)
            # Their answers file ("camera_ready_llm_out") and deals (Wiki drawn first) differ from
            # the release's: within 0.02.
            assert found.advantage_probability == pytest.approx(expected, abs=0.02), (name, level, answer)
