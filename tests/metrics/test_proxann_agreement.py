"""ProxAnn's agreement scoring: hand-built answers, the draws of its bootstrap, and the oracle
(the authors' released answers reproduce their published figures)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from proxann_release import proxann_fixture

from scipy.stats import kendalltau

from topicbench.core.metrics.bootstrap import BOOTSTRAP_RESAMPLES
from topicbench.core.metrics.proxann_agreement import (PROXANN_PAIRING, AgreementInputError, calibration_table,
                                                       judge_topic_agreement, people_means,
                                                       people_ranking_tau, people_topic_agreement,
                                                       proxann_replay, seed_means, topic_ranking_tau)
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


def test_the_topic_ranking_tau_is_the_point_estimate_with_a_bootstrap_interval_that_covers_it():
    rng = np.random.default_rng(5)
    judge = rng.normal(size=24)
    people = judge + rng.normal(scale=1.5, size=24)
    found = topic_ranking_tau(judge, people)
    assert found.tau == pytest.approx(kendalltau(judge, people).statistic)  # the data as given, not a resample mean
    interval = found.interval
    assert interval.resamples == BOOTSTRAP_RESAMPLES >= 2000 and interval.undefined == 0
    assert interval.low < found.tau < interval.high and interval.se > 0
    assert interval.method == "percentile bootstrap, 2,000 resamples of 24 topics" and found.n_topics == 24
    assert topic_ranking_tau(judge, people, seed=1).tau == found.tau  # the seed moves the interval only
    assert topic_ranking_tau(judge, people, seed=1).interval.low != interval.low


def test_topic_ranking_tau_of_equal_and_reversed_rankings():
    scores = np.linspace(-1, 1, 12)
    same = topic_ranking_tau(scores, scores)
    assert (same.tau, same.interval.low, same.interval.high) == (pytest.approx(1.0),) * 3
    assert topic_ranking_tau(-scores, scores).interval.high == pytest.approx(-1.0)


def test_proxann_replay_is_the_mean_of_50_resamples_at_seed_42_and_breaks_the_pairing_on_request():
    scores = np.linspace(-1, 1, 12)
    replay = proxann_replay(scores, scores)
    assert (replay.mean, replay.se, replay.resamples, replay.seed) == (pytest.approx(1.0), pytest.approx(0.0), 50, 42)
    assert replay.as_text() == "ProxAnn's protocol: mean of 50 resamples at seed 42"
    # ProxAnn's NPMI pairing: the reference is not resampled with the topics, so equal scores lose their pairing.
    shuffled = np.random.default_rng(0).permutation(scores)  # topic order unrelated to the scores
    assert proxann_replay(shuffled, shuffled, resample_judge=False).mean < 0.5
    assert topic_ranking_tau(shuffled, shuffled).tau == pytest.approx(1.0)


def test_topic_ranking_tau_leaves_out_undefined_topics_and_refuses_mismatched_lengths():
    scores = np.array([0.1, np.nan, 0.3, 0.5, 0.7])
    found = topic_ranking_tau(scores, np.array([1.0, 5.0, 2.0, 3.0, 4.0]))
    assert found.tau == pytest.approx(1.0) and found.n_topics == 4
    # 4 topics: a resample of one topic copied has no order, so no τ: counted, left out of the percentiles
    assert 0 < found.interval.undefined < found.interval.resamples
    assert f"({found.interval.undefined} undefined, left out)" in found.interval.method
    with pytest.raises(AgreementInputError, match="same length"):
        topic_ranking_tau([0.1, 0.2], [0.1, 0.2, 0.3])


def test_peoples_draws_with_an_undefined_tau_are_counted_as_dropped():
    # topic a: person 0 answers all 3s (no τ against θ when left out alone), persons 1 and 2 follow θ
    people = _people({"a": [[3, 3, 3, 3, 3], [5, 4, 3, 2, 1], [5, 3, 4, 1, 2]], "b": [[5, 4, 3, 2, 1], [4, 5, 3, 1, 2]],
                      "c": [[1, 2, 3, 4, 5], [2, 1, 3, 5, 4]]})
    found = people_ranking_tau(people, _documents(("a", "b", "c")), n_resamples=40, seed=1)["fit"]
    assert found.draws == 40 and 0 < found.dropped < 40  # the draws leaving person 0 out of topic a
    assert found.dropped_text() == f"{found.dropped} of 40 draws had an undefined τ and were dropped"


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
    theirs = people_topic_agreement(people, documents)
    for name, answers in judges.items():
        ours = judge_topic_agreement(answers, people, documents).merge(theirs, on="topic", suffixes=("", "_p"))
        for answer, (published, se) in zip(("fit", "rank"), PUBLISHED_TAU[name]):
            found = table.loc[(name, answer)]
            # ProxAnn's protocol, replayed draw for draw, gives the published figure ...
            assert abs(found["proxann_tau"] - published) <= PRINTED, (name, answer, found["proxann_tau"])
            assert found["proxann_se"] == pytest.approx(se, abs=PRINTED), (name, answer, found["proxann_se"])
            # ... but the headline is τ on the 24 topics, with a 2,000-resample interval around it
            assert found["tau"] == pytest.approx(kendalltau(ours[f"{answer}_tau"], ours[f"{answer}_tau_p"]).statistic)
            assert found["resamples"] == 2000 and found["n_topics"] == 24
            assert found["low"] < found["tau"] < found["high"]
    # Llama-3.1-8B's published 0.16 is seed 42's draw: τ on the topics is 0.12, and other seeds' draws scatter
    assert table.loc[("llama-3.1-8b", "fit"), "tau"] == pytest.approx(0.12, abs=0.005)
    llama = judge_topic_agreement(judges["llama-3.1-8b"], people, documents).merge(theirs, on="topic",
                                                                                    suffixes=("", "_p"))
    draws = [proxann_replay(llama["fit_tau"], llama["fit_tau_p"], seed=seed).mean for seed in range(20)]
    assert min(draws) == pytest.approx(0.075, abs=0.005) and max(draws) == pytest.approx(0.143, abs=0.005)


def test_oracle_npmi_tau_as_published_and_paired(bills):
    documents, people, _, coherences = bills
    agreement = people_topic_agreement(people, documents).merge(coherences, on="topic")
    table = calibration_table({}, people, documents, coherences).set_index(["scorer", "answer"])
    for answer, (published, se) in zip(("fit", "rank"), PUBLISHED_TAU["npmi"]):
        as_published = table.loc[("npmi" + PROXANN_PAIRING, answer)]  # the replay of their pairing, labelled
        assert as_published["proxann_tau"] == pytest.approx(published, abs=PRINTED)
        assert as_published["proxann_se"] == pytest.approx(se, abs=PRINTED)
        assert np.isnan(as_published["tau"])  # their pairing has no point estimate of its own
        # The npmi row is paired topic by topic: τ on the data, and NPMI does not rank topics as people do
        paired = table.loc[("npmi", answer)]
        assert paired["tau"] == pytest.approx(kendalltau(agreement["npmi"], agreement[f"{answer}_tau"]).statistic)
        assert paired["low"] < 0 < paired["high"]


def test_oracle_people_agree_with_each_other_as_published(bills):
    documents, people, _, _ = bills
    found = people_ranking_tau(people, documents, seed=0)
    # ProxAnn drew the left-out people unseeded: the figure is reproduced within its spread.
    for answer, (published, se) in zip(("fit", "rank"), PUBLISHED_TAU["people"]):
        assert abs(found[answer].mean - published) <= se, (answer, found[answer])
    # a third of fit's draws leave out someone whose fits are constant on a topic: dropped, and counted
    assert found["fit"].draws == 100 and 30 <= found["fit"].dropped <= 50 and found["rank"].dropped == 0


def test_oracle_alternative_annotator_test_as_published(bills):
    _, people, judges, _ = bills
    for name, published in PUBLISHED_ADVANTAGE.items():
        cases = [("document", "fit"), ("document", "rank"), ("topic", "fit"), ("topic", "rank")]
        for (level, answer), expected in zip(cases, published):
            found = alternative_annotator_test(judges[name], people, answer=answer, level=level)
            # Their answers file ("camera_ready_llm_out") and deals (Wiki drawn first) differ from
            # the release's: within 0.02.
            assert found.advantage_probability == pytest.approx(expected, abs=0.02), (name, level, answer)
