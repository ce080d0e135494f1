"""Talking to an OpenAI-compatible chat endpoint: one chat completion with retries, back-off and
deadlines (:func:`post_chat`), and the check before any work (:func:`check_endpoint`).

Every exchange ends by a wall-clock deadline and reads at most
:data:`~topicbench.tasks.llm.replies.MAX_REPLY_BYTES` (:mod:`topicbench.tasks.llm.http`); every
reply is checked as data (:mod:`topicbench.tasks.llm.replies`); every body the endpoint sends is
redacted before a message, a log or a cache can hold it (:mod:`topicbench.core.redaction`).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import threading
import time

from topicbench.core.metrics.llm_judging import JudgeRequest
from topicbench.core.redaction import redact, redact_data

from topicbench.tasks.llm.endpoint import TOP_LOGPROBS, LLMEndpoint, LLMError
from topicbench.tasks.llm.replies import MAX_REPLY_BYTES, Completion, malformed, read_completion

#: HTTP statuses worth another try: rate limits and server errors.
TRANSIENT_STATUSES = (408, 409, 425, 429, 500, 502, 503, 504)
#: How long a chat request that this process saw answered stands for the endpoint's check: a
#: script (or `paper`) that checks one endpoint for each of its commands asks it once, while a
#: server replaced since (a new build, a restart) is probed again by the next process or after
#: this long; a probe costs one token, so nothing is kept on disk.
PROBE_KEPT_SECONDS = 300.0


_probed: dict = {}  # (base_url, model, key digest) -> time.monotonic() of a chat request answered
_probed_lock = threading.Lock()


def check_endpoint(endpoint: LLMEndpoint, timeout: float | None = None) -> None:
    """One line, before any fit, when the endpoint cannot serve: the key's variable unset,
    unreachable, its key refused, the model unknown to it (``GET /models``), or no well-formed
    answer to one tiny chat request, asked as the judge asks (log-probabilities included): a
    server that lists its models and dies on its first completion (a build for another CPU)
    fails here, not after the fits. All of it within ``timeout`` seconds (default: the
    endpoint's ``timeout``). A chat request answered in this process within
    :data:`PROBE_KEPT_SECONDS` stands for the probe."""
    import requests

    from topicbench.tasks.llm.http import DeadlinePassed, ReplyTooLarge, exchange, new_session

    if endpoint.api_key_env and not os.environ.get(endpoint.api_key_env):
        raise LLMError(f"llm.api_key_env names ${endpoint.api_key_env}, which is not set: export the key there")
    seconds = endpoint.timeout if timeout is None else timeout
    deadline = time.monotonic() + seconds
    probe_key = (endpoint.base_url, endpoint.model, hashlib.sha256((endpoint.api_key() or "").encode()).hexdigest())
    with _probed_lock:
        answered = _probed.get(probe_key)
    if answered is not None and time.monotonic() - answered < PROBE_KEPT_SECONDS:
        return
    session = new_session()
    url = endpoint.base_url.rstrip("/") + "/models"
    try:
        status, content = exchange(session, "GET", url, headers=endpoint.headers(), deadline=deadline, limit=MAX_REPLY_BYTES)
    except DeadlinePassed:
        raise LLMError(f"the LLM endpoint at {endpoint.base_url} did not answer GET /models within {seconds:g} s; "
                       "check that it is the API root (…/v1) and that the server is well, or raise llm.timeout") from None
    except ReplyTooLarge:
        status, content = None, b""  # a list too long to read: the chat request below checks the model
    except requests.RequestException as error:
        raise LLMError(f"the LLM endpoint at {endpoint.base_url} is unreachable ({type(error).__name__}); start it or "
                       f"give another --llm-base-url") from None
    _refuse_key(endpoint, status)
    if status == 200:
        served = _served_models(content)
        if served and endpoint.model not in served:
            raise LLMError(f"the LLM endpoint at {endpoint.base_url} has no model {endpoint.model!r}; it serves: "
                           f"{', '.join(served[:20])}")
    _probe(endpoint, deadline, session)
    with _probed_lock:
        _probed[probe_key] = time.monotonic()


def _probe(endpoint: LLMEndpoint, deadline: float, session) -> None:
    """One chat request of one token; a well-formed reply of any text passes."""
    probe = JudgeRequest("check", (("user", "Reply with 1."),), max_tokens=1)
    try:
        completion = post_chat(endpoint, probe, deadline=deadline, session=session, retry_lost_connections=False)
    except EndpointUnavailable as error:
        raise LLMError(f"the LLM endpoint at {endpoint.base_url} did not answer a chat request ({error.failure} "
                       f"{_tries(error.tries)}): check the server's log (a server that lists its models may still fail "
                       "on every completion), or give another --llm-base-url") from None
    if completion.error is not None:
        raise LLMError(f"the LLM endpoint at {endpoint.base_url} answered a chat request with a malformed reply "
                       f"({completion.error}): it is not an OpenAI-compatible chat endpoint for {endpoint.model!r}")


def _served_models(content: bytes) -> list:
    """The model ids a ``GET /models`` reply lists (none where it is not the expected JSON: the
    chat request then checks the model)."""
    try:
        data = redact_data(json.loads(content.decode("utf-8")))
    except (ValueError, RecursionError):
        return []
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return []
    return [item["id"] for item in items if isinstance(item, dict) and isinstance(item.get("id"), str)]


def _refuse_key(endpoint: LLMEndpoint, status: int | None) -> None:
    if status in (401, 403):
        where = f"${endpoint.api_key_env}" if endpoint.api_key_env else "no key (set llm.api_key_env)"
        raise LLMError(f"the LLM endpoint at {endpoint.base_url} refused the key (HTTP {status}) read from {where}")


def _tries(count: int) -> str:
    return f"after {count} {'try' if count == 1 else 'tries'}"


class EndpointUnavailable(LLMError):
    """The endpoint stopped answering (after the retries, or at the question's deadline): what
    was asked so far is cached. ``failure`` is the last try's, ``tries`` how many were made."""

    def __init__(self, message: str, failure: str = "", tries: int = 0):
        super().__init__(message)
        self.failure, self.tries = failure, tries

    def __reduce__(self):  # raised in a Dask worker, it is pickled to the flow's process
        return type(self), (str(self), self.failure, self.tries)

    @classmethod
    def of(cls, endpoint: LLMEndpoint, failure: str, tries: int) -> "EndpointUnavailable":
        return cls(f"the LLM endpoint at {endpoint.base_url} stopped answering ({failure} {_tries(tries)}); the "
                   "replies so far are cached: the same command asks only the rest", failure, tries)


def post_chat(endpoint: LLMEndpoint, request: JudgeRequest, *, deadline: float, session,
              retry_lost_connections: bool = True) -> Completion:
    """One chat completion, checked (:func:`~topicbench.tasks.llm.replies.read_completion`; a
    malformed or oversized reply is a :class:`~topicbench.tasks.llm.replies.Completion` with
    ``error``), retried on transient
    failures with back-off. Each try ends within ``endpoint.timeout`` seconds and all of them
    by ``deadline`` (``time.monotonic()``); a try that fails to connect or loses its connection
    is tried again only with ``retry_lost_connections``. Raises
    :class:`~topicbench.tasks.llm.endpoint.LLMError` for an answer
    that is final (a refused key, an unknown model, another 4xx) and
    :class:`EndpointUnavailable` when no try succeeded."""
    import requests

    from topicbench.tasks.llm.http import DeadlinePassed, ReplyTooLarge, exchange

    body = {"model": endpoint.model, "messages": request.as_messages(), "temperature": request.temperature,
            "max_tokens": request.max_tokens, "logprobs": True, "top_logprobs": TOP_LOGPROBS}
    tries = 0
    while True:
        tries += 1
        started = time.monotonic()
        try_deadline = min(started + endpoint.timeout, deadline)
        try:
            status, content = exchange(session, "POST", endpoint.chat_url, headers=endpoint.headers(), body=body,
                                       deadline=try_deadline, limit=MAX_REPLY_BYTES)
        except ReplyTooLarge:
            return malformed(request, f"a reply over {MAX_REPLY_BYTES:,} bytes")
        except DeadlinePassed:
            # the try's own budget: llm.timeout, or less where the question's (or the check's) deadline came first
            failure = f"no complete reply within {round(max(try_deadline - started, 0.0), 1):g} s"
        except requests.RequestException as error:
            failure = type(error).__name__
            if not retry_lost_connections:
                raise EndpointUnavailable.of(endpoint, failure, tries) from None
        else:
            _refuse_key(endpoint, status)
            if status == 200:
                return read_completion(content, request)
            if status not in TRANSIENT_STATUSES:
                shown = _redacted_text(content)
                if status == 404 or (status == 400 and endpoint.model in shown):
                    raise LLMError(f"the LLM endpoint at {endpoint.base_url} does not serve the model {endpoint.model!r} "
                                   f"(HTTP {status}: {shown[:200]})")
                raise LLMError(f"the LLM endpoint at {endpoint.base_url} answered HTTP {status}: {shown[:200]}")
            failure = f"HTTP {status}"
        pause = min(2.0 ** (tries - 1), 30.0) * (0.5 + random.random())  # jittered back-off
        if tries > endpoint.retries or time.monotonic() + pause >= deadline:
            raise EndpointUnavailable.of(endpoint, failure, tries)
        time.sleep(pause)


#: Where servers keep a tokenizer beside their API root: llama.cpp's and vLLM's server, then
#: llama-cpp-python's. OpenAI's API has none.
TOKENIZE_PATHS = ("/tokenize", "/extras/tokenize")


def tokenizer_count(endpoint: LLMEndpoint, text: str, path: str, *, session, deadline: float) -> int | None:
    """The tokens of ``text`` by the tokenizer at ``path`` beside the endpoint's API root (the
    root without ``/v1``; one of :data:`TOKENIZE_PATHS`), or None where there is none or it
    answers anything but a list of tokens. One try, by ``deadline``: a count is a convenience,
    and its absence means an estimate."""
    import requests

    from topicbench.tasks.llm.http import DeadlinePassed, ReplyTooLarge, exchange

    root = endpoint.base_url.rstrip("/")
    root = root[: -len("/v1")] if root.endswith("/v1") else root
    # llama.cpp reads content, vLLM prompt, llama-cpp-python input; each ignores the others
    body = {"content": text, "prompt": text, "input": text, "model": endpoint.model}
    try:
        status, content = exchange(session, "POST", root + path, headers=endpoint.headers(), body=body,
                                   deadline=deadline, limit=MAX_REPLY_BYTES)
        tokens = json.loads(content.decode("utf-8")).get("tokens") if status == 200 else None
    except (DeadlinePassed, ReplyTooLarge, requests.RequestException, ValueError, AttributeError):
        return None
    return len(tokens) if isinstance(tokens, list) else None


def _redacted_text(content: bytes) -> str:
    """An error body as a message shows it, on one line, redacted whole before a message cuts
    it (a key it echoes is gone, not half of it); JSON is redacted once decoded."""
    text = content.decode("utf-8", errors="replace")
    try:
        text = json.dumps(redact_data(json.loads(text)), ensure_ascii=False)
    except (ValueError, RecursionError):
        text = redact(text)
    return " ".join(text.split())
