"""TopicGPT end to end against a real OpenAI-compatible endpoint: llama.cpp's server
(llama-cpp-python) with SmolLM2-135M on 127.0.0.1 (skipped, saying why, where it is not
installed), through the judges' client and cache, on a handful of the Lee corpus's documents.
SmolLM2 is weak: the test asserts the protocol's structure (which requests, in which order, the
output's invariants, or the error naming the fix where it proposes no topic in the authors'
format), not the topics' quality; and a refit over the same cache asks nothing."""

from __future__ import annotations

import pytest

from servers import llm_server  # noqa: F401 (a fixture)
from test_baselines_contract import check_output
from topicbench.baselines.base import ModelError
from topicbench.baselines.topicgpt import TopicGPT
from topicbench.core.io import load_corpus
from topicbench.tasks.llm.judge import EndpointJudge, LLMEndpoint

pytestmark = pytest.mark.slow

SETTINGS = {"sample_size": 3, "max_document_words": 40, "max_reply_tokens": 60, "refine": False}


def test_topicgpt_asks_a_real_endpoint_and_a_refit_asks_nothing(llm_server, tmp_path):  # noqa: F811
    corpus = load_corpus().subset(range(6))  # the Lee corpus read from text: its raw texts are shown
    endpoint = LLMEndpoint(llm_server.url, "smollm2", cache=str(tmp_path / "cache.sqlite"), timeout=120, concurrency=2)

    def fitted():
        judge = EndpointJudge(endpoint)
        model = TopicGPT(random_state=0, **SETTINGS).ask_with(judge)
        try:
            model.fit(corpus)
        except ModelError as error:  # SmolLM2 may never answer in the authors' format: the error says so
            assert "proposed no topic in the format" in str(error) or "assigned none of the" in str(error)
            return None, judge.take_records()
        return model, judge.take_records()

    model, records = fitted()
    tasks = [record["task"] for record in records]
    assert tasks[:3] == ["topicgpt_generation"] * 3  # one per sampled document, in turn
    assert all(record["error"] is None for record in records)  # every reply was well-formed
    if model is not None:
        check_output(model.output_, model, corpus, 0)
        assert tasks[3:9] == ["topicgpt_assignment"] * 6 and set(tasks[9:]) <= {"topicgpt_correction"}
        assert model.output_.topic_labels and len(model.output_.topic_labels) == model.num_topics_
    again, records_again = fitted()
    answered = {record["key"] for record in records if record["reply"]}
    assert not {record["key"] for record in records_again if not record["cached"]} & answered
    if model is not None:
        assert again.output_.topic_labels == model.output_.topic_labels
