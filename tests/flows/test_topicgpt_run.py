"""TopicGPT in a real benchmark (``topicbench run``) against a fake OpenAI-compatible endpoint: the
config's ``llm:`` endpoint reaches the model through the fit task, its requests are a run's
artifact and its cost the run's metrics and the report's fit table, and the same config into
another store asks the endpoint nothing (the replies are cached)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_endpoints import MODEL, Reply, chats, completion, fake_endpoint
from topicbench.flows.cli.main import main

pytestmark = pytest.mark.slow

#: The fake LLM's topic for a document holding this word (the tiny corpus's four themes).
THEMES = {"tax": "Economy", "troops": "Defense", "school": "Education", "hospital": "Health"}


def reply_to(prompt: str) -> str:
    """Generation proposes, and assignment names, the theme of the document's first theme word."""
    if prompt.startswith("You will receive a list of topics"):
        return "None"
    if "[Document]" not in prompt:  # the endpoint's check before any work (this config has a model that asks)
        return "1"
    document = prompt.split("[Document]\n", 1)[1].split("\n\n", 1)[0].split()
    theme = next((THEMES[word] for word in document if word in THEMES), "Economy")
    return f"[1] {theme}: Mentions {theme.lower()}."


def _config(tmp_path: Path, corpus: Path) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps({
        "experiment": "topicgpt-run",
        "corpora": [{"name": "tiny", "source": str(corpus), "preprocessing": {"preprocessed": True}}],
        "models": [{"model": "topicgpt", "settings": {"sample_size": 8, "refine": False, "top_words": 5}}],
        "metrics": ["npmi", "topic_diversity"], "top_n": [5],
        "llm": {"concurrency": 2, "timeout": 30, "retries": 1},
    }))
    return str(path)


def test_a_topicgpt_run_records_its_cost_and_a_rerun_elsewhere_asks_nothing(tiny_octis, tmp_path, monkeypatch):
    from mlflow import MlflowClient

    monkeypatch.setenv("TOPICBENCH_LLM_CACHE", str(tmp_path / "cache" / "llm.sqlite"))
    config = _config(tmp_path, tiny_octis)

    def run(store: str) -> int:
        return main(["run", config, "--llm-base-url", server.url, "--llm-model", MODEL, "--tracking-uri",
                     f"sqlite:///{tmp_path / store / 'mlflow.db'}", "--out", str(tmp_path / store / "report")])

    def chat(body, headers):
        return Reply(body=completion(reply_to(body["messages"][-1]["content"]), top=None))

    with fake_endpoint(chat=chat) as server:
        assert run("first") == 0
        asked = [body for body in chats(server) if body["max_tokens"] > 1]  # not the endpoint check's probe
        assert run("second") == 0
        assert [body for body in chats(server) if body["max_tokens"] > 1] == asked
    assert len(asked) == 8 + 40  # 8 generations, 40 assignments, no correction

    client = MlflowClient(f"sqlite:///{tmp_path / 'first' / 'mlflow.db'}")
    (experiment,) = [e for e in client.search_experiments() if e.name == "topicgpt-run"]
    (fit,) = [r for r in client.search_runs([experiment.experiment_id]) if r.data.tags.get("model") == "topicgpt"]
    assert fit.data.metrics["fit_llm_requests"] == 48 and fit.data.metrics["fit_llm_prompt_tokens"] > 0
    assert fit.data.metrics["num_topics_used"] == 4 and any(key.startswith("npmi") for key in fit.data.metrics)
    records = Path(client.download_artifacts(fit.info.run_id, "llm/fit_requests.jsonl", str(tmp_path)))
    assert len(records.read_text(encoding="utf-8").splitlines()) == 48
    report = (tmp_path / "first" / "report" / "report.md").read_text(encoding="utf-8")
    assert "LLM requests of the fit" in report
