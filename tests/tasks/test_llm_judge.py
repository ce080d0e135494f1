"""Asking an OpenAI-compatible endpoint (``tasks/llm_judge.py``) against a scripted HTTP server on
127.0.0.1: retries with back-off on 429 and 5xx, one-line errors for a refused key, an unknown model
or an endpoint that is gone, the cache (nothing asked twice), the token budget, and the key never
written anywhere. The real endpoint (llama.cpp's server) is in tests/flows/test_llm_judge_server.py."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from topicbench.core.metrics.llm_judging import JudgeRequest
from topicbench.tasks.llm_judge import (
    EndpointJudge, EndpointUnavailable, LLMEndpoint, LLMError, check_endpoint, request_key, usage_of,
)

KEY = "sk-test-secret-0123456789"


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        server = self.server
        if server.key and self.headers.get("Authorization") != f"Bearer {server.key}":
            return self._send(401, {"error": "bad key"})
        self._send(200, {"object": "list", "data": [{"id": "toy-model"}]})

    def do_POST(self):
        server = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server.requests.append({"body": body, "headers": dict(self.headers)})
        if server.key and self.headers.get("Authorization") != f"Bearer {server.key}":
            return self._send(401, {"error": "bad key"})
        status = server.statuses.pop(0) if server.statuses else 200
        if status != 200:
            return self._send(status, {"error": "scripted"})
        text = server.reply(body)
        self._send(200, {
            "choices": [{"message": {"role": "assistant", "content": text},
                         "logprobs": {"content": [{"token": text[:1], "logprob": -0.1,
                                                   "top_logprobs": [{"token": "3", "logprob": -0.1}]}]}}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 2, "total_tokens": 42},
        })


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.requests, httpd.statuses, httpd.key = [], [], None
    httpd.reply = lambda body: "3"
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def endpoint(server, tmp_path):
    return LLMEndpoint(server.url, "toy-model", retries=3, timeout=5, cache=str(tmp_path / "cache.sqlite"))


def _rating(i: int) -> JudgeRequest:
    return JudgeRequest("rating", (("system", "rate"), ("user", f"words {i}")), max_tokens=5)


def test_replies_are_asked_once_then_read_from_the_cache(server, endpoint):
    judge = EndpointJudge(endpoint)
    replies = judge.ask([_rating(i) for i in range(6)])
    assert [r.text for r in replies] == ["3"] * 6 and replies[0].top_logprobs == (("3", -0.1),)
    assert len(server.requests) == 6
    body = server.requests[0]["body"]
    assert body["model"] == "toy-model" and body["logprobs"] is True and body["max_tokens"] == 5
    again = EndpointJudge(endpoint).ask([_rating(i) for i in range(6)])  # another process, the same cache file
    assert [r.text for r in again] == ["3"] * 6 and len(server.requests) == 6
    records = judge.take_records()
    assert usage_of(records, endpoint) == {"llm_requests": 6.0, "llm_cached_replies": 0.0,
                                           "llm_prompt_tokens": 240.0, "llm_completion_tokens": 12.0}


def test_rate_limits_and_server_errors_are_retried_with_back_off(server, endpoint, monkeypatch):
    import topicbench.tasks.llm_judge as module

    slept = []
    monkeypatch.setattr(module.time, "sleep", slept.append)
    server.statuses[:] = [429, 503]
    [reply] = EndpointJudge(endpoint).ask([_rating(0)])
    assert reply.text == "3" and len(server.requests) == 3
    assert len(slept) == 2 and 0.5 <= slept[0] <= 1.5 and 1.0 <= slept[1] <= 3.0


def test_an_endpoint_that_keeps_failing_stops_asking_with_one_line(server, endpoint, monkeypatch):
    import topicbench.tasks.llm_judge as module

    monkeypatch.setattr(module.time, "sleep", lambda seconds: None)
    server.statuses[:] = [500] * 100
    with pytest.raises(EndpointUnavailable, match=r"stopped answering \(HTTP 500 after 4 tries\); the replies so far are cached"):
        EndpointJudge(endpoint).ask([_rating(i) for i in range(8)])
    assert len(server.requests) < 8 * 4  # once one request found it gone, the others stopped


def test_a_refused_key_and_an_unknown_model_are_one_line_before_any_work(server, endpoint, monkeypatch):
    server.key = KEY
    with pytest.raises(LLMError, match="refused the key .*no key"):
        check_endpoint(endpoint)
    monkeypatch.setenv("JUDGE_KEY", "wrong")
    keyed = LLMEndpoint(server.url, "toy-model", api_key_env="JUDGE_KEY", cache=endpoint.cache)
    with pytest.raises(LLMError, match=r"refused the key \(HTTP 401\) read from \$JUDGE_KEY"):
        check_endpoint(keyed)
    monkeypatch.setenv("JUDGE_KEY", KEY)
    check_endpoint(keyed)
    with pytest.raises(LLMError, match="has no model 'gpt-x'; it serves: toy-model"):
        check_endpoint(LLMEndpoint(server.url, "gpt-x", api_key_env="JUDGE_KEY"))
    monkeypatch.delenv("JUDGE_KEY")
    with pytest.raises(LLMError, match=r"names \$JUDGE_KEY, which is not set"):
        check_endpoint(keyed)


def test_an_unreachable_endpoint_is_one_line():
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(LLMError, match=f"the LLM endpoint at http://127.0.0.1:{port}/v1 is unreachable"):
        check_endpoint(LLMEndpoint(f"http://127.0.0.1:{port}/v1", "m"), timeout=2)


def test_the_key_is_sent_and_never_written(server, tmp_path, monkeypatch):
    server.key = KEY
    monkeypatch.setenv("JUDGE_KEY", KEY)
    endpoint = LLMEndpoint(server.url, "toy-model", api_key_env="JUDGE_KEY", cache=str(tmp_path / "cache.sqlite"))
    judge = EndpointJudge(endpoint)
    judge.ask([_rating(0)])
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"
    written = (tmp_path / "cache.sqlite").read_bytes() + json.dumps(judge.take_records()).encode()
    written += json.dumps(endpoint.record()).encode()
    assert KEY.encode() not in written and b"JUDGE_KEY" in json.dumps(endpoint.record()).encode()


def test_the_token_budget_stops_asking_but_not_the_cache(server, endpoint):
    limited = LLMEndpoint(**{**endpoint.__dict__, "token_budget": 100})
    judge = EndpointJudge(limited, budget="benchmark-1")
    judge.ask([_rating(0), _rating(1)])  # 84 tokens
    judge.ask([_rating(2)])  # 126: a request in flight may pass the budget, the next one may not start
    with pytest.raises(LLMError, match=r"token budget of 100 is spent \(126 tokens asked of toy-model\)"):
        judge.ask([_rating(3)])
    asked = len(server.requests)
    assert [r.text for r in judge.ask([_rating(0)])] == ["3"] and len(server.requests) == asked  # cached: free
    assert EndpointJudge(limited, budget="benchmark-2").ask([_rating(9)])[0].text == "3"  # a new benchmark's budget


def test_the_cache_key_is_the_model_the_prompt_and_the_settings():
    a = LLMEndpoint("http://one/v1", "m")
    assert request_key(a, _rating(0)) == request_key(LLMEndpoint("http://two/v1", "m"), _rating(0))
    assert request_key(a, _rating(0)) != request_key(LLMEndpoint("http://one/v1", "other"), _rating(0))
    assert request_key(a, _rating(0)) != request_key(a, _rating(1))
    resampled = JudgeRequest("rating", _rating(0).messages, max_tokens=5, sample=1)
    assert request_key(a, _rating(0)) != request_key(a, resampled)
