"""The LLM metrics against a real OpenAI-compatible endpoint: llama.cpp's server with SmolLM2-135M,
started on 127.0.0.1 by the tests (skipped, saying why, where it is not installed).

A benchmark tracks both metrics for every model with a trace per request; a second benchmark of
the same fits asks nothing (the cache answers); a server killed mid-run ends the run with a clear
error, keeps what was finished and asked, and the resumed run asks only the rest; a wrong model
or key is one line before any fit; ``judge calibrate`` reports ρ against people and says when the
judge is weak (SmolLM2 is).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time

import pytest
from mlflow.tracking import MlflowClient

from servers import llm_server, running_llm_server, stop_server  # noqa: F401 (a fixture)
from topicbench.flows.cli.main import main

pytestmark = [pytest.mark.usefixtures("prefect_server"), pytest.mark.slow]

JUDGE = {"max_topics": 3, "rating_samples": 1, "intrusion_draws": 1, "retries_on_non_answers": 3, "retries": 1,
         "timeout": 30, "concurrency": 2}


def _config(tmp_path, experiment: str, **llm) -> str:
    path = tmp_path / f"{experiment}.yaml"
    path.write_text(json.dumps({
        "experiment": experiment,
        "models": [{"model": "elda", "settings": {"top_words": 12}},
                   {"model": "gensim_lda", "num_topics": 5, "settings": {"passes": 1, "iterations": 10, "top_words": 12}}],
        "metrics": ["topic_diversity", "llm_rating", "llm_intrusion"], "top_n": [5, 10],
        "llm": {**JUDGE, **llm},
    }))
    return str(path)


def _fit_runs(uri: str, experiment: str) -> list:
    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    return client.search_runs([found.experiment_id], "tags.`topicbench.role` = 'fit'") if found else []


@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "llm-cache.sqlite"
    monkeypatch.setenv("TOPICBENCH_LLM_CACHE", str(path))
    return path


def test_a_benchmark_tracks_both_metrics_with_traces_and_a_second_asks_nothing(llm_server, tmp_path, cache, capsys):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    flags = ["--llm-base-url", llm_server.url, "--llm-model", "smollm2", "--tracking-uri", uri, "--no-report"]
    assert main(["run", _config(tmp_path, "judged"), *flags]) == 0, capsys.readouterr().err
    runs = _fit_runs(uri, "judged")
    assert {run.data.tags["model"] for run in runs} == {"elda", "gensim_lda"}
    client = MlflowClient(uri)
    for run in runs:
        metrics, params = run.data.metrics, run.data.params
        assert 1.0 <= metrics["llm_rating"] <= 3.0 and 0.0 <= metrics["llm_intrusion"] <= 1.0
        assert metrics["llm_requests"] >= 6 and metrics["llm_prompt_tokens"] > 0
        assert params["llm.model"] == "smollm2" and params["llm.base_url"] == llm_server.url
        assert params["llm.judge.max_topics"] == "3"
        traces = client.search_traces(locations=[run.info.experiment_id], run_id=run.info.run_id, max_results=500)
        assert len(traces) == metrics["llm_requests"] == float(run.data.tags["topicbench.llm_traces"])
        assert traces[0].info.token_usage["total_tokens"] > 0
        requests = client.download_artifacts(run.info.run_id, "llm/requests.jsonl", str(tmp_path / run.info.run_id))
        lines = [json.loads(line) for line in open(requests, encoding="utf-8")]
        assert len(lines) == metrics["llm_requests"] and all(line["model"] == "smollm2" for line in lines)
    # the same fits in another experiment: every answer comes from the cache; only what the first
    # run left unanswered (a reply naming no word shown: never cached) is asked again
    assert main(["run", _config(tmp_path, "judged-again"), *flags]) == 0
    for run in _fit_runs(uri, "judged-again"):
        same = next(r for r in runs if r.data.tags["model"] == run.data.tags["model"])
        assert run.data.metrics["llm_cached_replies"] >= 3  # the ratings (from log-probabilities: answers)
        assert run.data.metrics["llm_requests"] < same.data.metrics["llm_requests"]
        assert run.data.metrics["llm_rating"] == same.data.metrics["llm_rating"]


def test_a_wrong_model_or_key_is_one_line_before_any_fit(llm_server, tmp_path, cache, capsys, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    code = main(["run", _config(tmp_path, "wrong"), "--llm-base-url", llm_server.url, "--llm-model", "gpt-9",
                 "--tracking-uri", uri, "--no-report"])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"topicbench: error: the LLM endpoint at {llm_server.url} has no model 'gpt-9'; it serves: smollm2")
    assert not (tmp_path / "store").exists() and not cache.exists()
    with running_llm_server(tmp_path, api_key="right-key") as keyed:
        monkeypatch.setenv("JUDGE_KEY", "wrong-key")
        code = main(["run", _config(tmp_path, "keyed"), "--llm-base-url", keyed.url, "--llm-model", "smollm2",
                     "--llm-api-key-env", "JUDGE_KEY", "--tracking-uri", uri, "--no-report"])
        err = capsys.readouterr().err
        assert code == 2 and "refused the key (HTTP 401) read from $JUDGE_KEY" in err.strip().splitlines()[-1]
        assert "wrong-key" not in err
    assert not (tmp_path / "store").exists()


def test_a_server_killed_mid_run_keeps_what_was_done_and_the_resume_asks_only_the_rest(tmp_path, cache, capsys):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = _config(tmp_path, "killed")
    with running_llm_server(tmp_path) as server:
        killer = threading.Thread(target=_kill_after_the_first_run_and_two_more_replies, args=(server, tmp_path / "mlflow.db", cache),
                                  daemon=True)
        killer.start()
        started = time.monotonic()
        code = main(["run", config, "--llm-base-url", server.url, "--llm-model", "smollm2", "--tracking-uri", uri,
                     "--no-report"])
        seconds = time.monotonic() - started
        killer.join(timeout=60)
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert code == 1 and seconds < 300, err
    assert "1 of 2 runs failed" in last and f"the LLM endpoint at {server.url} stopped answering" in last
    finished = [run for run in _fit_runs(uri, "killed") if run.info.status == "FINISHED"]
    assert len(finished) == 1
    asked_before = _cached_replies(cache)
    port = int(server.url.rsplit(":", 1)[1].split("/")[0])
    # the same address again: the cache is by endpoint (address and model) and question (issue 46)
    with running_llm_server(tmp_path, port=port) as restarted:
        assert main(["run", config, "--llm-base-url", restarted.url, "--llm-model", "smollm2", "--tracking-uri", uri,
                     "--no-report"]) == 0
    runs = [run for run in _fit_runs(uri, "killed") if run.info.status == "FINISHED"]
    assert len(runs) == 2  # the finished one was not fitted again
    resumed = next(run for run in runs if run.info.run_id != finished[0].info.run_id)
    assert resumed.data.metrics["llm_cached_replies"] >= 2 and resumed.data.metrics["llm_requests"] >= 1
    assert asked_before < _cached_replies(cache) <= asked_before + resumed.data.metrics["llm_requests"]  # answers only


def _cached_replies(path) -> int:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT COUNT(*) FROM replies").fetchone()[0]


def _finished_runs(database) -> int:
    """FINISHED runs in the store, read with sqlite alone: an MLflow client here would create and
    migrate the database while the benchmark does."""
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
            return connection.execute("SELECT COUNT(*) FROM runs WHERE status = 'FINISHED'").fetchone()[0]
    except sqlite3.Error:
        return 0


def _kill_after_the_first_run_and_two_more_replies(server, database, cache) -> None:
    deadline = time.monotonic() + 240
    baseline = None
    while time.monotonic() < deadline:
        if baseline is None and _finished_runs(database) >= 1:
            baseline = _cached_replies(cache)
        if baseline is not None and _cached_replies(cache) >= baseline + 2:
            stop_server(server)
            return
        time.sleep(0.1)


def test_judge_calibrate_reports_rho_against_people_and_says_when_it_is_weak(llm_server, tmp_path, cache, capsys):
    words = {"mallet": [["river", "lake", "water", "creek", "dam", "flood", "bank", "stream", "fish", "boat"],
                        ["piano", "tax", "cloud", "horse", "ink", "moon", "sock", "vote", "cheese", "radio"],
                        ["election", "vote", "party", "senate", "campaign", "ballot", "poll", "candidate", "voter", "seat"]],
             "etm": [["film", "movie", "actor", "director", "scene", "cinema", "role", "studio", "screen", "cast"],
                     ["apple", "bridge", "jazz", "salt", "tiger", "glove", "paint", "rail", "wheat", "coin"],
                     ["game", "team", "season", "coach", "player", "league", "score", "win", "match", "goal"]]}
    ratings = {"mallet": [2.9, 1.1, 2.8], "etm": [2.7, 1.2, 2.9]}
    judgments = {"wikitext": {model: {"topics": topics, "metrics": {
        "ratings_scores_avg": ratings[model], "intrusion_scores_avg": [r / 3 for r in ratings[model]],
        "c_npmi_10_full": [0.2, -0.1, 0.18]}} for model, topics in words.items()}}
    path = tmp_path / "all_data.json"
    path.write_text(json.dumps(judgments))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    code = main(["judge", "calibrate", "--llm-base-url", llm_server.url, "--llm-model", "smollm2", "--judgments",
                 str(path), "--tracking-uri", uri, "--bootstrap", "200"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "calibration of smollm2" in out and "on 6 human-judged topics" in out
    rows = {line.split()[0] for line in out.splitlines() if line.startswith(("llm_", "npmi"))}
    assert rows == {"llm_rating", "llm_intrusion", "npmi"}
    assert "weak:" in out or "agree with people" in out  # six topics: whatever it is, it is said
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("judge-calibration")
    [run] = client.search_runs([experiment.experiment_id])
    assert run.data.tags["topicbench.llm_model"] == "smollm2" and "llm_rating.rating.rho" in run.data.metrics
    assert len(client.search_traces(locations=[experiment.experiment_id], max_results=500)) == run.data.metrics["llm_requests"]
