"""An endpoint's reply checked as data (``tasks/llm/replies.py``): every malformed reply is a
non-answer that says why, never an exception; token counts are never below what was sent and
received nor absurd; a key the reply echoes is gone."""

from __future__ import annotations

import json
import math

import pytest

from llm_endpoints import completion
from topicbench.core.metrics.llm_judging import JudgeRequest
from topicbench.core.redaction import keep_secret
from topicbench.tasks.llm.replies import (
    CHARS_PER_TOKEN_AT_MOST,
    UNSEEN_TOKENS,
    cached_reply,
    counted_tokens,
    read_completion,
)

RATING = JudgeRequest("rating", (("system", "rate these words from 1 to 3"), ("user", "tax, budget, cut")), max_tokens=5)
PROMPT_ESTIMATE = math.ceil(len("rate these words from 1 to 3tax, budget, cut") / CHARS_PER_TOKEN_AT_MOST)


def _read(data) -> object:
    return read_completion(data if isinstance(data, bytes) else json.dumps(data).encode(), RATING)


def test_a_well_formed_reply_keeps_its_text_log_probabilities_and_counts():
    reply = _read(completion("3", top=(("3", -0.2), ("2", -1.8))))
    assert (reply.text, reply.top_logprobs, reply.error) == ("3", (("3", -0.2), ("2", -1.8)), None)
    assert (reply.prompt_tokens, reply.completion_tokens) == (40, 2)


MALFORMED = {
    "not JSON": (b"<html>502 Bad Gateway</html>", "not JSON"),
    "not UTF-8": (b"\xff\xfe{}", "not UTF-8"),
    "nested 100,000 deep": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "a JSON list": ([1, 2], "a list, not a JSON object"),
    "no choices": ({"choices": []}, "no choices"),
    "choices a string": ({"choices": "3"}, "choices is text"),
    "message missing": ({"choices": [{"text": "3"}]}, "message is null"),
    "content a number": (completion(3, top=None), "content is a number"),
    "content an object": (completion({"rating": 3}, top=None), "content is an object"),
    "text far beyond max_tokens": (completion("3" * 10_000, top=None), "10,000 characters to a request of at most 5 tokens"),
    "logprob +3": (completion("3", top=(("3", 3.0),)), "above 0"),
    "logprob NaN": (b'{"choices": [{"message": {"content": "3"}, "logprobs": {"content": [{"top_logprobs": '
                    b'[{"token": "3", "logprob": NaN}]}]}}]}', "not a finite number"),
    "logprob a string": (completion("3", top=(("3", "-0.1"),)), "not a finite number"),
    "probabilities adding up past 1": (completion("3", top=(("3", -0.1), ("2", -0.2))), "above 1"),
    "a token not text": (completion("3", top=((3, -0.1),)), "token is a number"),
    "usage a list": (completion("3", usage=[40, 2]), "usage is a list"),
}


@pytest.mark.parametrize("body, reason", MALFORMED.values(), ids=list(MALFORMED))
def test_a_malformed_reply_is_a_non_answer_that_says_why(body, reason):
    reply = _read(body)
    assert reply.text is None and reply.top_logprobs is None and reason in reply.error
    # it cost at least its prompt and every token it was allowed
    assert (reply.prompt_tokens, reply.completion_tokens) == (PROMPT_ESTIMATE, RATING.max_tokens)


@pytest.mark.parametrize("usage, prompt, reply_tokens", [
    ({"omit": True}, PROMPT_ESTIMATE, 1),  # no usage: what was sent and received, estimated
    ({"prompt_tokens": -40, "completion_tokens": -2}, PROMPT_ESTIMATE, 1),  # negative
    ({"prompt_tokens": 0, "completion_tokens": 0}, PROMPT_ESTIMATE, 1),  # less than was sent
    ({"prompt_tokens": "40", "completion_tokens": None}, PROMPT_ESTIMATE, 1),  # not numbers
    ({"prompt_tokens": True, "completion_tokens": 2.5}, PROMPT_ESTIMATE, 1),  # not counts
    ({"prompt_tokens": 40.0, "completion_tokens": 2.0}, 40, 2),  # integral floats are counts
    ({"prompt_tokens": 10 ** 30, "completion_tokens": 10 ** 30}, None, 5 + UNSEEN_TOKENS),  # absurd: cut
])
def test_token_counts_are_never_below_what_was_sent_nor_absurd(usage, prompt, reply_tokens):
    reply = _read(completion("3", usage=usage))
    assert reply.error is None and reply.completion_tokens == reply_tokens
    if prompt is None:  # the most the prompt could be: its bytes, and the tokens no text shows
        assert UNSEEN_TOKENS < reply.prompt_tokens < UNSEEN_TOKENS + 200
    else:
        assert reply.prompt_tokens == prompt


def test_counted_tokens_takes_the_servers_count_only_within_bounds():
    assert counted_tokens(7, 3, 10) == 7
    assert [counted_tokens(value, 3, 10) for value in (2, -1, None, "7", True, math.inf, math.nan)] == [3] * 7
    assert counted_tokens(11, 3, 10) == 10


def test_a_key_echoed_in_a_reply_is_gone_before_anything_keeps_it():
    key = "sk-echoed-0123456789abcdef"
    keep_secret(key)
    reply = _read(completion(f"3, with Bearer {key}", top=((key, -3.0), ("3", -0.1))))
    assert key not in repr(reply) and "[redacted]" in reply.text and reply.top_logprobs[0][0] == "[redacted]"
    # escaped in JSON, it is decoded first, then redacted
    escaped = json.dumps(completion(f"3 {key}", top=None)).replace(key, "".join(f"\\u{ord(c):04x}" for c in key)).encode()
    assert key not in repr(_read(escaped))


def test_a_cached_reply_is_checked_as_well():
    assert cached_reply({"text": "3", "top_logprobs": [["3", -0.1]]}) == ("3", (("3", -0.1),))
    assert cached_reply({"text": None, "top_logprobs": None}) == (None, None)
    for garbage in (None, [], {"text": 3}, {"text": "3", "top_logprobs": [["3", 2.0]]}, {"text": "3", "top_logprobs": "x"}):
        assert cached_reply(garbage) is None
