"""Judges that try to pass cheaply (issue 46, item 7): a category that is no label ("I am not
sure.") is a non-answer, never cached; a judge whose answers are constant gets no agreement and
no advantage in either calibration (ProxAnn's documents, Hoyle et al.'s words), and the advantage
a constant answer would get is stated beside it, printed and tracked."""

from __future__ import annotations

import json
import re
import sqlite3
from types import SimpleNamespace

import numpy as np
import pytest
from llm_endpoints import Reply, completion, fake_endpoint
from mlflow.tracking import MlflowClient
from proxann_files import write_release

from topicbench.core.metrics.calibration import NOT_MEASURABLE, JudgedTopic, calibration_table, constant_answers
from topicbench.core.metrics.llm_document_prompts import label_request, parse_label
from topicbench.core.metrics.llm_judging import JudgeReply, JudgeSettings, is_answer
from topicbench.core.proxann_data import read_release
from topicbench.tasks.llm.endpoint import LLMEndpoint

SETTINGS = JudgeSettings(exemplar_documents=1, evaluation_documents=7, rating_samples=1)


# -- a category must be a label -------------------------------------------------------------------


@pytest.mark.parametrize("reply", ["I am not sure.", "I don't know", "Cannot determine", "N/A", "none", "Unknown.",
                                   "What do these share?", "Sure! Here is the category: farming", "sorry",
                                   "It is unclear what these documents share.", "4", "...",
                                   "The documents discuss many different and unrelated matters of state policy."])
def test_a_non_answer_is_not_a_category(reply):
    assert parse_label(reply) is None
    assert not is_answer(label_request(SimpleNamespace(words=("farm",)), ["a text"], SETTINGS), JudgeReply(reply))


@pytest.mark.parametrize("reply, label", [("CATEGORY: Farm subsidies", "Farm subsidies"), ("Farming.", "Farming."),
                                          ("Title I education funding", "Title I education funding"),
                                          ("U.S. foreign policy\nbecause ...", "U.S. foreign policy")])
def test_a_short_noun_phrase_is_a_category(reply, label):
    assert parse_label(reply) == label


def test_a_hedge_is_not_cached_and_a_label_is(tmp_path):
    from topicbench.tasks.llm.judge import EndpointJudge

    def cached() -> list:
        with sqlite3.connect(tmp_path / "cache.sqlite") as connection:
            return [json.loads(text)["text"] for (text,) in connection.execute("SELECT reply FROM replies")]

    request = label_request(SimpleNamespace(words=("farm", "crop")), ["corn prices fell."], SETTINGS)
    for text, kept in (("I am not sure.", []), ("Farm policy", ["Farm policy"])):
        with fake_endpoint(lambda body, headers: Reply(body=completion(text, top=None))) as server:
            [reply] = EndpointJudge(LLMEndpoint(server.url, "toy-model", cache=str(tmp_path / "cache.sqlite"))).ask(
                [request])
        assert reply.text == text and cached() == kept


# -- constant answers -----------------------------------------------------------------------------


def test_constant_answers_are_one_value_for_nine_in_ten_or_ties_within_each_topic():
    assert constant_answers([4.0] * 9 + [2.0]).share == 0.9 and constant_answers([4.02, 3.98, 4.0]).value == 4.0
    assert constant_answers([4.0] * 8 + [2.0, 3.0]) is None and constant_answers([np.nan, np.nan]) is None
    assert constant_answers([2.5] * 4 + [4.0] * 7, groups=[1] * 4 + [2] * 7).share == 1.0  # every topic tied
    assert constant_answers([1.0, 2.0, 3.0, 4.0] * 3, groups=[0] * 12) is None


def _always_four(body, headers):
    prompt = body["messages"][-1]["content"]
    if "DOCUMENT_A" in prompt:  # ranks follow the documents' order: not constant
        first, second = re.findall(r"Document (\d) on", prompt)[:2]
        return Reply(body=completion("A" if first < second else "B", top=None))
    if "integer score from 1 to 5" in prompt:
        return Reply(body=completion("4", top=None))
    return Reply(body=completion("Farm policy", top=None))


def test_a_judge_always_answering_four_is_not_measured_on_fit_in_proxann_calibration(tmp_path, monkeypatch):
    from topicbench.flows.judge_proxann import PROXANN_EXPERIMENT, calibrate_proxann, format_proxann_table

    monkeypatch.setenv("TOPICBENCH_LLM_CACHE", str(tmp_path / "llm-cache.sqlite"))
    release = read_release(write_release(tmp_path / "release"))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with fake_endpoint(_always_four) as server:
        endpoint = LLMEndpoint(base_url=server.url, model="toy-model", concurrency=2, timeout=10, retries=0)
        calibration = calibrate_proxann(endpoint, SETTINGS, release, tracking_uri=uri)
    assert calibration.constant["fit"].value == 4.0 and calibration.constant["fit"].share == 1.0
    own = calibration.table[calibration.table["scorer"] == "toy-model"].set_index("answer")
    assert np.isnan(own.loc["fit", ["tau", "document_tau"]].astype(float)).all()
    advantage = calibration.advantage.set_index("judge")
    assert np.isnan(advantage.loc["toy-model", ["document_fit", "topic_fit"]].astype(float)).all()
    floor = advantage.loc["constant answer (fit 4, ranks tied)"]  # scored by the same test
    assert 0 <= floor["document_fit"] <= 1
    text = format_proxann_table(calibration)
    assert "not measurable" in text.splitlines()[1] and "constant answer (fit 4, ranks tied)" in text
    assert f"toy-model: fit {NOT_MEASURABLE} (4 to 100% of 21 documents)" in text
    assert f"document fit {floor['document_fit']:.2f}" in text
    client = MlflowClient(uri)
    [run] = client.search_runs([client.get_experiment_by_name(PROXANN_EXPERIMENT).experiment_id])
    assert run.data.tags["topicbench.constant_answers.fit"].startswith(NOT_MEASURABLE)
    assert "topicbench.constant_answers.rank" not in run.data.tags
    assert not any(key.startswith("proxann.advantage.") and key.endswith("_fit") for key in run.data.metrics)
    assert "proxann.fit.tau" not in run.data.metrics and "proxann.rank.document_tau" in run.data.metrics
    assert run.data.metrics["proxann.constant_answer_advantage.document_fit"] == pytest.approx(floor["document_fit"])


def _topics() -> list:
    words = [tuple(f"w{t}{k}" for k in range(10)) for t in range(6)]
    return [JudgedTopic("wikitext", ("mallet", "etm")[t % 2], t // 2, words[t], 1.0 + 0.35 * t, 0.15 * t)
            for t in range(6)]


def test_a_constant_word_judge_is_not_measurable():
    rows = calibration_table(_topics(), {"llm_rating": [3.0] * 6, "llm_intrusion": [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]},
                             np.random.default_rng(0), draws=100)
    by_measure = {row["measure"]: row for row in rows}
    assert by_measure["llm_rating"]["constant"].share == 1.0 and np.isnan(by_measure["llm_rating"]["rating"].rho)
    assert by_measure["llm_intrusion"]["constant"] is None and by_measure["llm_intrusion"]["intrusion"].rho > 0.9


def _rating_three(body, headers):
    prompt = body["messages"][-1]["content"]
    shown = re.findall(r'"([^"]*)"', prompt)
    if shown:  # intrusion: the last word shown, which is not always the intruder
        return Reply(body=completion(shown[-1], top=None))
    return Reply(body=completion("3", top=(("3", -0.01), ("2", -5.0))))


def test_the_word_calibration_says_a_constant_judge_is_not_measurable_printed_and_tracked(tmp_path, monkeypatch):
    from topicbench.flows.judge import calibrate, format_table, verdict

    monkeypatch.setenv("TOPICBENCH_LLM_CACHE", str(tmp_path / "llm-cache.sqlite"))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with fake_endpoint(_rating_three) as server:
        endpoint = LLMEndpoint(base_url=server.url, model="toy-model", concurrency=2, timeout=10, retries=0)
        calibration = calibrate(endpoint, JudgeSettings(rating_samples=1), _topics(), tracking_uri=uri, draws=100)
    [rating] = [line for line in format_table(calibration).splitlines() if line.startswith("llm_rating")]
    assert rating.count(NOT_MEASURABLE) == 2
    assert verdict(calibration).startswith(f"{NOT_MEASURABLE}: llm_rating of toy-model gave 3 to 100% of 6 topics")
    client = MlflowClient(uri)
    [run] = client.search_runs([client.get_experiment_by_name("judge-calibration").experiment_id])
    assert run.data.tags["topicbench.constant_answers.llm_rating"].startswith(NOT_MEASURABLE)
    assert run.data.metrics["llm_rating.constant_share"] == 1.0 and "llm_rating.rating.rho" not in run.data.metrics
