"""Every exchange with an LLM endpoint ends by its deadline and reads a bounded body
(``tasks/llm/http.py``), against fake endpoints that drip one byte a second or send 10 MB."""

from __future__ import annotations

import time

import pytest

from llm_endpoints import Reply, completion, fake_endpoint
from topicbench.tasks.llm.http import DeadlinePassed, ReplyTooLarge, exchange, new_session


def _post(server, seconds: float, limit: int = 1 << 20):
    return exchange(new_session(), "POST", server.url + "/chat/completions", headers={}, body={"model": "m"},
                    deadline=time.monotonic() + seconds, limit=limit)


@pytest.mark.parametrize("where", ["status line", "body"])
def test_a_server_dripping_one_byte_a_second_is_cut_at_the_deadline(where):
    """requests' own timeout (per read) never trips here: a byte arrives every second."""
    def drip(body, headers):
        return Reply(body=completion(), drip=1.0, drip_body_only=where == "body")

    with fake_endpoint(chat=drip) as server:
        started = time.monotonic()
        with pytest.raises(DeadlinePassed):
            _post(server, 1.5)
        assert time.monotonic() - started < 2.5


@pytest.mark.parametrize("sized", [True, False], ids=["with a Content-Length", "without one"])
def test_a_reply_over_the_cap_is_refused(sized):
    big = {"choices": [{"message": {"content": "3"}}], "padding": "x" * 10_000_000}
    with fake_endpoint(chat=lambda body, headers: Reply(body=big, sized=sized)) as server:
        with pytest.raises(ReplyTooLarge):
            _post(server, 10)
        assert _post(server, 10, limit=20_000_000)[0] == 200  # under a larger cap it is read whole


def test_an_exchange_in_time_returns_status_and_body():
    with fake_endpoint() as server:
        status, content = _post(server, 5)
    assert status == 200 and b'"choices"' in content
