"""The LLM endpoint through the command line, against fake endpoints that misbehave
(tests/llm_endpoints.py): one that lists its models and dies on its first completion, or drips
one byte a second, ends ``topicbench run`` before any fit with one line; and a benchmark against
one that echoes its key back in every reply and error writes that key nowhere: not in the store,
the artifacts, the traces, the cache, the spool, Prefect's database or home, the report, or the
console.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import pytest

from llm_endpoints import MODEL, Reply, chats, completion, fake_endpoint
from topicbench.flows.cli.main import main

KEY = "sk-kept-secret-7f3a9c2e41d8b605"


def _config(tmp_path: Path, corpus: Path, **llm) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps({
        "experiment": "judged-with-a-key",
        "corpora": [{"name": "tiny", "source": str(corpus), "preprocessing": {"preprocessed": True}}],
        # the same model twice: one rated (answered), one asked for intruders (refused by the endpoint)
        "models": [{"model": "elda", "label": "rated", "metrics": ["llm_rating"], "settings": {"top_words": 12}},
                   {"model": "elda", "label": "refused", "metrics": ["llm_intrusion"], "settings": {"top_words": 12}}],
        "metrics": ["llm_rating", "llm_intrusion"], "top_n": [5, 10],
        "llm": {"max_topics": 3, "rating_samples": 1, "intrusion_draws": 1, "retries_on_non_answers": 1, "retries": 2,
                "timeout": 10, "concurrency": 2, **llm},
    }))
    return str(path)


def _run(tmp_path: Path, config: str, url: str, *extra: str) -> int:
    return main(["run", config, "--llm-base-url", url, "--llm-model", MODEL, "--tracking-uri",
                 f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}", "--out", str(tmp_path / "report"), *extra])


def test_an_endpoint_that_lists_models_but_dies_on_a_completion_ends_the_run_before_any_fit(tiny_octis, tmp_path, capsys,
                                                                                            monkeypatch):
    """llama.cpp built for another CPU: /models answers, the first chat completion kills it (SIGILL)."""
    monkeypatch.setenv("TOPICBENCH_LLM_CACHE", str(tmp_path / "cache.sqlite"))
    with fake_endpoint(chat=lambda body, headers: Reply(drop=True)) as dying:
        started = time.monotonic()
        code = _run(tmp_path, _config(tmp_path, tiny_octis), dying.url)
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and time.monotonic() - started < 30
    assert last.startswith(f"topicbench: error: the LLM endpoint at {dying.url} did not answer a chat request"), last
    assert not (tmp_path / "store").exists() and not (tmp_path / "cache.sqlite").exists()


def test_an_endpoint_dripping_one_byte_a_second_ends_the_run_within_llm_timeout(tiny_octis, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TOPICBENCH_LLM_CACHE", str(tmp_path / "cache.sqlite"))
    with fake_endpoint(chat=lambda body, headers: Reply(body=completion(), drip=1.0)) as dripping:
        started = time.monotonic()
        code = _run(tmp_path, _config(tmp_path, tiny_octis, timeout=3), dripping.url)
        seconds = time.monotonic() - started
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and "did not answer a chat request (no complete reply within" in last, last
    assert seconds < 3 + 10  # the check's 3 s, and the command's own start
    assert not (tmp_path / "store").exists()


def test_a_key_in_the_base_url_is_refused_and_shown_nowhere_even_verbose(tiny_octis, tmp_path, capsys):
    code = main(["-v", "run", _config(tmp_path, tiny_octis), "--llm-base-url", f"http://me:{KEY}@127.0.0.1:9/v1",
                 "--llm-model", MODEL, "--tracking-uri", f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"])
    captured = capsys.readouterr()
    assert code == 2 and "holds a user name or key before the host" in captured.err.strip().splitlines()[-1]
    assert KEY not in captured.out + captured.err


@pytest.mark.parametrize("query", [f"?api_key={KEY}", f"?key={KEY}", f"?x=1&token={KEY}", f"?access_token={KEY}",
                                   f"?sig={KEY}", f"#{KEY}", f"?api-version=2024&{KEY}"])
@pytest.mark.parametrize("command", ["run", "judge"])
def test_a_key_in_the_base_urls_query_is_refused_before_any_work_and_written_nowhere(
        query, command, tiny_octis, tmp_path, capsys, monkeypatch):
    """Issue 46: a query string (or fragment) in the endpoint URL is refused with one line that
    shows no part of it; nothing is written, and no file under the working folder holds the key."""
    monkeypatch.chdir(tmp_path)
    url = f"http://127.0.0.1:9/v1{query}"
    store = ["--tracking-uri", f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"]
    argv = (["-v", "run", _config(tmp_path, tiny_octis), "--llm-base-url", url, "--llm-model", MODEL, *store]
            if command == "run" else ["-v", "judge", "calibrate", "--llm-base-url", url, "--llm-model", MODEL, *store])
    code = main(argv)
    captured = capsys.readouterr()
    last = captured.err.strip().splitlines()[-1]
    assert code == 2 and "has a query string or fragment (not shown" in last, last
    assert KEY not in captured.out + captured.err
    assert not (tmp_path / "store").exists()
    for path in tmp_path.rglob("*"):
        assert not path.is_file() or KEY.encode() not in path.read_bytes(), path


def test_the_redaction_rule_takes_keys_out_of_query_strings_and_leaves_other_parameters():
    from topicbench.core.redaction import redact

    text = f"GET http://h/v1?api_key={KEY}&model=m https://a/b?x=1&token={KEY}#top ?keyboard=1 &sig={KEY}"
    assert redact(text) == ("GET http://h/v1?api_key=[redacted]&model=m https://a/b?x=1&token=[redacted]#top "
                            "?keyboard=1 &sig=[redacted]")


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_server")
def test_a_key_the_endpoint_echoes_is_in_no_file_a_run_writes(tiny_octis, tmp_path, capsys, monkeypatch):
    """A real benchmark against an endpoint that echoes the Authorization header in its model
    list, in every reply (text and log-probability tokens), in the 503s it sends every other time
    and in the 422 that fails one fit; every byte the run writes is then searched for the key."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGE_KEY", KEY)
    monkeypatch.setenv("TOPICBENCH_LLM_CACHE", str(tmp_path / "cache" / "llm.sqlite"))
    monkeypatch.setenv("TOPICBENCH_SPOOL", str(tmp_path / "spool"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    asked = []

    def models(headers):
        if headers.get("Authorization") != f"Bearer {KEY}":
            return Reply(status=401, body={"error": f"bad key {headers.get('Authorization')}"})
        return Reply(body={"object": "list", "data": [{"id": MODEL}], "note": f"hello {headers['Authorization']}"})

    def chat(body, headers):
        echo = headers.get("Authorization", "")
        asked.append(body)
        if "least related" in body["messages"][0]["content"]:  # intrusion: refused, quoting the key
            return Reply(status=422, body={"error": {"message": f"intrusion is not allowed for {echo}"}})
        if len(asked) % 2 == 0:  # every other request: overloaded, quoting the key (retried)
            return Reply(status=503, body=f"overloaded; your key {echo} is fine".encode())
        return Reply(body=completion(f"3 ({echo})", top=((KEY, -4.0), ("3", -0.1))))

    with fake_endpoint(chat=chat, models=models) as server:
        code = _run(tmp_path, _config(tmp_path, tiny_octis), server.url, "--llm-api-key-env", "JUDGE_KEY")
    captured = capsys.readouterr()
    last = captured.err.strip().splitlines()[-1]
    assert code == 1 and "1 of 2 runs failed" in last and "answered HTTP 422" in last, captured.err
    assert any(body["max_tokens"] == 1 for body in chats(server))  # the check's probe
    assert sum("very related" in body["messages"][0]["content"] for body in asked) >= 3  # the rated fit was judged

    from prefect.settings import PREFECT_SERVER_DATABASE_CONNECTION_URL

    prefect_database = Path(PREFECT_SERVER_DATABASE_CONNECTION_URL.value().split(":///", 1)[1])
    roots = [tmp_path, Path(os.environ["PREFECT_HOME"]), prefect_database.parent]
    files = [path for root in roots for path in root.rglob("*") if path.is_file()]
    assert any(path.suffix == ".jsonl" for path in files) and (tmp_path / "cache" / "llm.sqlite").is_file()
    holding = [str(path) for path in files if KEY.encode() in path.read_bytes()]
    holding += [stream for stream in ("stdout", "stderr") if KEY in getattr(captured, stream[3:])]
    assert holding == [], f"the key was written to {holding}"
    assert "[redacted]" in last  # the echo is shown as redacted, not dropped
