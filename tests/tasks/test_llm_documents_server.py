"""The document-level LLM metrics (``llm_fit``, ``llm_rank``) end to end against a real
OpenAI-compatible endpoint: llama.cpp's server (llama-cpp-python) with SmolLM2-135M, started on
127.0.0.1 (skipped, saying why, where it is not installed). On one topic of E-LDA's sparse θ over
the Lee corpus's raw texts: each kind of question is asked and read, the excerpts' tokens are
counted by the server's tokenizer, and a second scoring over the same cache asks nothing it had an
answer to (only answers are cached: SmolLM2 is weak and often replies with no score)."""

from __future__ import annotations

import math

import pytest

from servers import llm_server  # noqa: F401 (a fixture)
from topicbench.core.elda.model import ELDA
from topicbench.core.io import load_corpus
from topicbench.core.metrics.context import MetricContext, MetricInputs
from topicbench.core.metrics.llm_judging import JudgeSettings
from topicbench.core.metrics.scoring import score
from topicbench.tasks.llm.judge import EndpointJudge, LLMEndpoint

pytestmark = pytest.mark.slow

SETTINGS = JudgeSettings(document_topics=1, exemplar_documents=3, evaluation_documents=3, excerpt_words=30,
                         rating_samples=1, retries=1)


def test_the_document_metrics_ask_a_real_endpoint_and_a_second_run_asks_nothing(llm_server, tmp_path):  # noqa: F811
    corpus = load_corpus()  # the Lee corpus, read from text: its raw texts are shown
    output = ELDA(kappa=1.5, generator="raw_umass").fit(corpus).solution_.to_output(seed=0)
    endpoint = LLMEndpoint(llm_server.url, "smollm2", cache=str(tmp_path / "cache.sqlite"), timeout=60, concurrency=2)

    def scored():
        judge = EndpointJudge(endpoint)
        context = MetricContext(MetricInputs(corpus=corpus), judge=judge, judge_settings=SETTINGS)
        return score(output, context, ["llm_fit", "llm_rank"], seed=0), judge

    first, judge = scored()
    records = judge.take_records()
    assert set(first.values) == {"llm_fit", "llm_fit_answered", "llm_rank", "llm_rank_answered"}, first.skipped
    for name in ("llm_fit", "llm_rank"):
        answered = first.values[f"{name}_answered"]
        assert answered in (0.0, 1.0)  # one topic judged
        assert math.isnan(first.values[name]) == (answered == 0.0)
        assert answered == 0.0 or -1.0 <= first.values[name] <= 1.0
    asked = [r for r in records if not r["cached"]]
    # a category (the second metric's from the cache), 3 fits, 3 pairs in both orders (and asks again of non-answers)
    assert sorted({r["task"] for r in asked}) == ["fit", "label", "rank"]
    assert sum(r["task"] == "fit" for r in asked) >= 3 and sum(r["task"] == "rank" for r in asked) >= 6
    assert all(r["top_logprobs"] for r in asked if r["task"] == "fit")  # the server gives log-probabilities
    assert judge._tokenize_path == "/extras/tokenize"  # llama-cpp-python's tokenizer counted the excerpts
    answered_keys = {r["key"] for r in asked if judge.cache.get(r["key"]) is not None}
    assert any(r["task"] == "label" and r["key"] in answered_keys for r in asked)

    again, judge = scored()
    assert not {r["key"] for r in judge.take_records() if not r["cached"]} & answered_keys
    assert again.values == pytest.approx(first.values, nan_ok=True)
