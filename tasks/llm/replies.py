"""What an OpenAI-compatible chat endpoint's reply may be, checked as data before anything uses it.

A reply is untrusted input. :func:`read_completion` checks every field the judge reads (the JSON
itself, the shape of ``choices[0].message.content``, the first token's ``top_logprobs`` and the
``usage`` counts) and turns a reply that breaks any of them into a :class:`Completion` with an
``error`` and no text: a non-answer, never an ``AttributeError``, a ``TypeError`` or a failed fit.
Everything it keeps is redacted (:func:`topicbench.core.redaction.redact_data`).

Token counts are the server's where they are plausible, and never less than what was sent and
received: a count that is missing, negative or not an integer is replaced by an estimate from the
text (:data:`CHARS_PER_TOKEN_AT_MOST`), and one beyond what the request could have used is cut to
that, so neither a server's silence nor its nonsense defeats the token budget.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from topicbench.core.redaction import redact_data

#: Most bytes of a reply's body read: a judge's reply (at most 15 tokens, 5 log-probabilities
#: each) is a few kilobytes; anything past this is refused, not stored.
MAX_REPLY_BYTES = 1 << 20
#: Most characters one token may carry; a reply's text longer than ``max_tokens`` times this
#: ignored the request's ``max_tokens`` (the longest tokens of common vocabularies are runs of
#: spaces or punctuation of 64 to 128 characters).
MAX_CHARS_PER_TOKEN = 128
#: Most ``top_logprobs`` entries kept per token (OpenAI's maximum; vLLM adds the chosen token to
#: the top 5 asked).
MAX_TOP_LOGPROBS = 20
#: A log-probability above 0 is a probability above 1; this much is allowed for rounding.
LOGPROB_ROUNDING = 1e-4
#: The first token's top probabilities add up to at most 1; this much more is allowed for rounding.
PROBABILITY_ROUNDING = 0.01
#: An estimate that stays below a true count: English text averages about 4 characters a token
#: (OpenAI's rule of thumb) and rarely reaches 6.
CHARS_PER_TOKEN_AT_MOST = 6
#: Tokens a server may count that the text does not show: a chat template's, a gateway's own
#: system prompt, a reasoning model's hidden thoughts.
UNSEEN_TOKENS = 4096


@dataclass(frozen=True)
class Completion:
    """A checked reply: its text, the first token's top log-probabilities as ``((token,
    logprob), ...)``, the tokens counted, and ``error`` (why it is malformed; then no text)."""

    text: str | None
    top_logprobs: tuple | None
    prompt_tokens: int
    completion_tokens: int
    error: str | None = None


class MalformedReply(ValueError):
    """A reply that breaks the shape of a chat completion (the message says how)."""


def read_completion(content: bytes, request) -> Completion:
    """The :class:`Completion` of a 200 reply's body ``content`` to ``request`` (a
    :class:`~topicbench.core.metrics.llm_judging.JudgeRequest`); a malformed one has ``error``."""
    try:
        data = redact_data(json.loads(content.decode("utf-8")))
        text, top = _first_choice(data, request.max_tokens)
        usage = data.get("usage")
        if usage is not None and not isinstance(usage, dict):
            raise MalformedReply(f"usage is {_kind(usage)}, not an object")
    except (ValueError, RecursionError) as error:  # not UTF-8, not JSON, nested too deep, or MalformedReply
        reason = str(error) if isinstance(error, MalformedReply) else _unreadable(error)
        return malformed(request, reason)
    usage = usage or {}
    prompt = counted_tokens(usage.get("prompt_tokens"), _prompt_at_least(request), _prompt_at_most(request))
    completion = counted_tokens(usage.get("completion_tokens"), _tokens_at_least(text or ""),
                                request.max_tokens + UNSEEN_TOKENS)
    return Completion(text, top, prompt, completion)


def malformed(request, reason: str) -> Completion:
    """A non-answer to ``request`` for ``reason``, counting what it may have cost: the prompt's
    estimate and every reply token it allowed."""
    return Completion(None, None, _prompt_at_least(request), request.max_tokens, error=reason)


def counted_tokens(reported, at_least: int, at_most: int) -> int:
    """The server's count where it is an integer in [``at_least``, ``at_most``]; ``at_least``
    for one missing, negative, smaller or not an integer; ``at_most`` for one larger."""
    if isinstance(reported, float) and math.isfinite(reported) and reported.is_integer():
        reported = int(reported)
    if not isinstance(reported, int) or isinstance(reported, bool) or reported < at_least:
        return at_least
    return min(reported, at_most)


def cached_reply(data) -> tuple | None:
    """(text, top log-probabilities) of a reply the cache kept, or None when it is not one (a
    cache written by an older topicbench, or by hand): it is then asked again."""
    if not isinstance(data, dict) or not isinstance(data.get("text"), (str, type(None))):
        return None
    try:
        return data["text"], _top_logprobs(data.get("top_logprobs"), pairs=True)
    except MalformedReply:
        return None


def _first_choice(data, max_tokens: int) -> tuple:
    if not isinstance(data, dict):
        raise MalformedReply(f"the reply is {_kind(data)}, not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedReply("the reply has no choices" if choices in (None, []) else f"choices is {_kind(choices)}, not a list")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise MalformedReply(f"choices[0] is {_kind(choice)}, not an object")
    message = choice.get("message")
    if not isinstance(message, dict):
        raise MalformedReply(f"choices[0].message is {_kind(message)}, not an object")
    text = message.get("content")
    if not isinstance(text, (str, type(None))):
        raise MalformedReply(f"choices[0].message.content is {_kind(text)}, not text")
    if text is not None and len(text) > max_tokens * MAX_CHARS_PER_TOKEN:
        raise MalformedReply(f"a reply of {len(text):,} characters to a request of at most {max_tokens} tokens")
    logprobs = choice.get("logprobs")
    if logprobs is None:
        return text, None
    if not isinstance(logprobs, dict):
        raise MalformedReply(f"choices[0].logprobs is {_kind(logprobs)}, not an object")
    tokens = logprobs.get("content")
    if tokens is None or tokens == []:
        return text, None
    if not isinstance(tokens, list) or not isinstance(tokens[0], dict):
        raise MalformedReply("choices[0].logprobs.content is not a list of objects")
    return text, _top_logprobs(tokens[0].get("top_logprobs"), pairs=False)


def _top_logprobs(entries, *, pairs: bool) -> tuple | None:
    """((token, logprob), ...) of a token's top log-probabilities, each checked: a token is text
    of at most MAX_CHARS_PER_TOKEN characters, a log-probability a finite number at most 0, and
    their probabilities add up to at most 1. ``pairs``: given as [token, logprob] (the cache),
    else as {"token": ..., "logprob": ...} (the endpoint)."""
    if entries is None or entries == []:
        return None
    if not isinstance(entries, list) or len(entries) > MAX_TOP_LOGPROBS:
        raise MalformedReply(f"top_logprobs is not a list of at most {MAX_TOP_LOGPROBS} entries")
    checked = []
    for entry in entries:
        if pairs and isinstance(entry, list) and len(entry) == 2:
            token, logprob = entry
        elif not pairs and isinstance(entry, dict):
            token, logprob = entry.get("token"), entry.get("logprob")
        else:
            raise MalformedReply(f"a top_logprobs entry is {_kind(entry)}")
        if not isinstance(token, str) or len(token) > MAX_CHARS_PER_TOKEN:
            raise MalformedReply(f"a top_logprobs token is {_kind(token)}, not text of at most {MAX_CHARS_PER_TOKEN} characters")
        if not isinstance(logprob, (int, float)) or isinstance(logprob, bool) or not math.isfinite(logprob):
            raise MalformedReply(f"the log-probability of {token!r} is {logprob!r}, not a finite number")
        if logprob > LOGPROB_ROUNDING:
            raise MalformedReply(f"the log-probability of {token!r} is {logprob:g}, above 0 (a probability above 1)")
        checked.append((token, min(float(logprob), 0.0)))
    total = sum(math.exp(logprob) for _, logprob in checked)
    if total > 1 + PROBABILITY_ROUNDING:
        raise MalformedReply(f"the top log-probabilities add up to a probability of {total:.3g}, above 1")
    return tuple(checked)


def _prompt_at_least(request) -> int:
    return _tokens_at_least("".join(content for _, content in request.messages))


def _prompt_at_most(request) -> int:
    return len(json.dumps(request.as_messages(), ensure_ascii=False).encode()) + UNSEEN_TOKENS


def _tokens_at_least(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN_AT_MOST)


def _kind(value) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _unreadable(error: BaseException) -> str:
    if isinstance(error, UnicodeDecodeError):
        return "the reply is not UTF-8 text"
    if isinstance(error, RecursionError):
        return "the reply's JSON is nested too deeply"
    return f"the reply is not JSON ({str(error)[:80]})"
