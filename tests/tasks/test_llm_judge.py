"""Asking an OpenAI-compatible endpoint (``tasks/llm/judge.py``) against a scripted HTTP server on
127.0.0.1: retries with back-off on 429 and 5xx, one-line errors for a refused key, an unknown model
or an endpoint that is gone, the cache (nothing asked twice, only answers kept), the token budget,
deadlines against an endpoint that drips, the check's chat request, and the key never written
anywhere, even when the endpoint echoes it. Misbehaving endpoints come from tests/llm_endpoints.py;
the real endpoint (llama.cpp's server) is in tests/flows/test_llm_judge_server.py."""

from __future__ import annotations

import http.server
import json
import sqlite3
import threading
import time

import pytest

from llm_endpoints import MODEL, Reply, chats, completion, fake_endpoint
from topicbench.core.metrics.llm_judging import JudgeRequest
from topicbench.tasks.llm.judge import (
    EndpointJudge,
    EndpointUnavailable,
    LLMEndpoint,
    LLMError,
    ReplyCache,
    check_endpoint,
    check_reply_cache,
    request_key,
    usage_of,
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
    import topicbench.tasks.llm.judge as module

    slept = []
    monkeypatch.setattr(module.time, "sleep", slept.append)
    server.statuses[:] = [429, 503]
    [reply] = EndpointJudge(endpoint).ask([_rating(0)])
    assert reply.text == "3" and len(server.requests) == 3
    assert len(slept) == 2 and 0.5 <= slept[0] <= 1.5 and 1.0 <= slept[1] <= 3.0


def test_an_endpoint_that_keeps_failing_stops_asking_with_one_line(server, endpoint, monkeypatch):
    import topicbench.tasks.llm.judge as module

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


def test_the_cache_key_is_the_endpoint_the_model_the_prompt_and_the_settings():
    a = LLMEndpoint("http://one/v1", "m")
    # issue 46: another server naming its model alike may serve other weights: its own answers
    assert request_key(a, _rating(0)) != request_key(LLMEndpoint("http://two/v1", "m"), _rating(0))
    assert request_key(a, _rating(0)) == request_key(LLMEndpoint("http://one/v1/", "m"), _rating(0))
    assert request_key(a, _rating(0)) != request_key(LLMEndpoint("http://one/v1", "other"), _rating(0))
    assert request_key(a, _rating(0)) != request_key(a, _rating(1))
    resampled = JudgeRequest("rating", _rating(0).messages, max_tokens=5, sample=1)
    assert request_key(a, _rating(0)) != request_key(a, resampled)


# -- issue 37: replies as data, only answers cached, deadlines, the probe, secrets ----------------


def _judge_against(server, tmp_path, **settings) -> EndpointJudge:
    return EndpointJudge(LLMEndpoint(server.url, MODEL, cache=str(tmp_path / "cache.sqlite"), **settings))


def _cached_rows(tmp_path) -> int:
    with sqlite3.connect(tmp_path / "cache.sqlite") as connection:
        return connection.execute("SELECT COUNT(*) FROM replies").fetchone()[0]


@pytest.mark.parametrize("bad", [
    Reply(body=b"not json at all"), Reply(body={"choices": "3"}), Reply(body=completion(3, top=None)),
    Reply(body=completion("7", top=None)),  # a rating outside the scale: well formed, not an answer
    Reply(body=completion("3", top=(("3", 3.0),))),  # a log-probability of +3
    Reply(body={**completion("3"), "padding": "x" * 10_000_000}),  # 10 MB for a 5-token question
], ids=["not JSON", "choices a string", "content a number", "rating 7", "logprob +3", "10 MB"])
def test_a_bad_reply_is_no_answer_and_is_not_cached_so_a_good_endpoint_is_asked_later(bad, tmp_path):
    with fake_endpoint(chat=lambda body, headers: bad) as server:
        [reply] = _judge_against(server, tmp_path).ask([_rating(0)])
    assert reply.text in (None, "7") and _cached_rows(tmp_path) == 0
    with fake_endpoint() as good:  # the same cache: the question is asked again, and its answer kept
        [reply] = _judge_against(good, tmp_path).ask([_rating(0)])
        assert reply.text == "3" and len(chats(good)) == 1 and _cached_rows(tmp_path) == 1


def test_a_non_answer_an_older_cache_kept_is_asked_again(server, endpoint):
    key = request_key(endpoint, _rating(0))
    ReplyCache(endpoint.cache_path()).put(key, "toy-model", "rating", {"text": "7", "top_logprobs": None}, 40, 2, 0.1)
    [reply] = EndpointJudge(endpoint).ask([_rating(0)])
    assert reply.text == "3" and len(server.requests) == 1


def test_the_token_budget_counts_what_was_sent_when_the_server_says_less(tmp_path):
    lying = lambda body, headers: Reply(body=completion("3", usage={"prompt_tokens": -1000, "completion_tokens": -10}))
    with fake_endpoint(chat=lying) as server:
        judge = EndpointJudge(LLMEndpoint(server.url, MODEL, cache=str(tmp_path / "c.sqlite"), token_budget=2), budget="b")
        judge.ask([_rating(0)])
        with pytest.raises(LLMError, match="token budget of 2 is spent"):
            judge.ask([_rating(1)])
    [record] = judge.take_records()
    assert record["prompt_tokens"] >= 1 and record["completion_tokens"] >= 1


def test_a_drip_endpoint_ends_at_the_question_deadline_not_per_read(tmp_path, monkeypatch):
    """Two bytes a second with ``timeout: 1``: requests' per-read timeout never trips; the
    question's tries and back-off together end within (retries + 1) x timeout."""
    with fake_endpoint(chat=lambda body, headers: Reply(body=completion(), drip=0.5)) as server:
        started = time.monotonic()
        with pytest.raises(EndpointUnavailable, match=r"no complete reply within (1|0\.\d) s after \d tr"):
            _judge_against(server, tmp_path, timeout=1, retries=2).ask([_rating(0)])
        assert time.monotonic() - started < 3 * 1 + 1.5


def test_the_check_ends_within_the_timeout_against_a_drip(tmp_path):
    with fake_endpoint(models=lambda headers: Reply(body={"data": []}, drip=0.5)) as server:
        started = time.monotonic()
        with pytest.raises(LLMError, match=r"did not answer GET /models within 2 s"):
            check_endpoint(LLMEndpoint(server.url, MODEL, timeout=2))
        assert time.monotonic() - started < 3.5


def test_the_check_asks_a_chat_request_once_per_process(tmp_path):
    with fake_endpoint(chat=lambda body, headers: Reply(drop=True)) as dying:  # lists models, dies on a completion
        started = time.monotonic()
        with pytest.raises(LLMError, match=f"the LLM endpoint at {dying.url} did not answer a chat request"):
            check_endpoint(LLMEndpoint(dying.url, MODEL, retries=4))
        assert time.monotonic() - started < 5 and len(chats(dying)) == 1  # a lost connection is not retried here
    with fake_endpoint(chat=lambda body, headers: Reply(body={"choices": [{"message": "3"}]})) as odd:
        with pytest.raises(LLMError, match="answered a chat request with a malformed reply"):
            check_endpoint(LLMEndpoint(odd.url, MODEL))
    with fake_endpoint() as well:
        for _ in range(3):
            check_endpoint(LLMEndpoint(well.url, MODEL))
        [probe] = chats(well)
        assert probe["max_tokens"] == 1 and probe["logprobs"] is True  # asked as the judge asks


def test_a_key_the_endpoint_echoes_never_reaches_a_message_a_cache_or_a_record(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", KEY)

    def echo(body, headers):
        if body["messages"][-1]["content"] == "words 1":  # the key 187 characters in: a cut at 200 would halve it
            return Reply(status=422, body=b"x" * 180 + headers["Authorization"].encode())
        return Reply(body=completion(f"3 {headers['Authorization']}", top=((KEY, -4.0), ("3", -0.1))))

    with fake_endpoint(chat=echo) as server:
        judge = _judge_against(server, tmp_path, api_key_env="JUDGE_KEY")
        [reply] = judge.ask([_rating(0)])
        with pytest.raises(LLMError) as raised:
            judge.ask([_rating(1)])
    assert server.log[-1][2]["Authorization"] == f"Bearer {KEY}"  # sent, in the header only
    assert reply.text == "3 Bearer [redacted]" and "[redacted]" in str(raised.value)
    written = str(raised.value) + json.dumps(judge.take_records()) + (tmp_path / "cache.sqlite").read_bytes().decode("latin-1")
    assert KEY[:8] not in written


def test_a_base_url_with_a_key_in_it_is_refused_without_showing_it():
    with pytest.raises(LLMError, match=r"llm.base_url http://\[redacted\]@127.0.0.1:9/v1 holds a user name or key") as raised:
        LLMEndpoint(f"http://user:{KEY}@127.0.0.1:9/v1", MODEL)
    assert KEY not in str(raised.value)
    with pytest.raises(LLMError, match=r"llm.timeout must be a number in \[0.1, 3600\], got nan"):
        LLMEndpoint("http://127.0.0.1:9/v1", MODEL, timeout=float("nan"))


def test_the_cache_is_checked_before_any_work_and_never_another_programs_database(tmp_path):
    store = tmp_path / "mlflow.db"
    with sqlite3.connect(store) as connection:
        connection.execute("CREATE TABLE experiments (id INTEGER)")
    before = store.read_bytes()
    on_store = LLMEndpoint("http://127.0.0.1:9/v1", MODEL, cache=str(store))
    with pytest.raises(LLMError, match="the tracking store's database"):
        check_reply_cache(on_store, f"sqlite:///{store}")
    with pytest.raises(LLMError, match=r"another program's database \(it holds the tables experiments\)"):
        check_reply_cache(on_store, "http://127.0.0.1:5000")  # the store elsewhere: its tables tell it apart
    with pytest.raises(LLMError, match="another program's database"):
        ReplyCache(store)  # where a worker opens it: refused before anything is changed
    assert store.read_bytes() == before and not (tmp_path / "mlflow.db-wal").exists()
    fresh = LLMEndpoint("http://127.0.0.1:9/v1", MODEL, cache=str(tmp_path / "new" / "cache.sqlite"))
    assert check_reply_cache(fresh, f"sqlite:///{store}") == tmp_path / "new" / "cache.sqlite"
    assert not (tmp_path / "new").exists()  # checked, not created


def test_excerpt_tokens_are_counted_by_the_endpoints_tokenizer_where_it_has_one(tmp_path):
    def tokenize(body, headers):  # llama.cpp's POST /tokenize: {"content": text} -> {"tokens": [...]}
        return Reply(body={"tokens": list(range(len(body["content"].split())))})

    with fake_endpoint(chat=tokenize) as server:
        judge = EndpointJudge(LLMEndpoint(server.url, MODEL, cache=str(tmp_path / "cache.sqlite"), timeout=5))
        assert judge.count_tokens("one two three four") == 4
        assert [path for method, path, _, _ in server.log] == ["/tokenize"]  # beside /v1, not under it
    def extras_only(body, headers):  # llama-cpp-python's server: POST /extras/tokenize {"input": text}
        return Reply(body={"tokens": [0] * len(body["input"])}) if server.log[-1][1] == "/extras/tokenize" else Reply(
            status=404, body={"detail": "Not Found"})

    with fake_endpoint(chat=extras_only) as server:
        judge = EndpointJudge(LLMEndpoint(server.url, MODEL, cache=str(tmp_path / "cache.sqlite"), timeout=5))
        assert judge.count_tokens("abc") == 3 and judge.count_tokens("abcde") == 5
        assert [path for _, path, _, _ in server.log] == ["/tokenize", "/extras/tokenize", "/extras/tokenize"]
    with fake_endpoint(chat=lambda body, headers: Reply(status=404, body={"error": "not found"})) as server:
        judge = EndpointJudge(LLMEndpoint(server.url, MODEL, cache=str(tmp_path / "cache.sqlite"), timeout=5))
        assert judge.count_tokens("x" * 10) == 3  # none: the stated estimate, ceil(10 / 4)
        assert judge.count_tokens("x" * 12) == 3
        assert len(server.log) == 2  # each path asked once, then known to have none


def test_the_document_settings_come_from_the_llm_block_and_a_too_small_context_is_refused():
    from topicbench.core.validation import InputError
    from topicbench.tasks.llm.judge import llm_settings

    block = {"base_url": "http://127.0.0.1:1/v1", "model": MODEL, "document_topics": 3, "evaluation_documents": 4}
    _, judge = llm_settings(block)
    assert (judge.document_topics, judge.evaluation_documents, judge.exemplar_documents) == (3, 4, 7)
    with pytest.raises(InputError, match="llm.context_tokens 300 leaves"):
        llm_settings({**block, "context_tokens": 300})
