"""The LLM metrics' judge: it asks an OpenAI-compatible chat endpoint their questions,
concurrently, under a token budget, with a cache on disk so nothing is asked twice, and keeps a
record of every question (prompt, reply, tokens, timing, whether the cache answered) for the
tracking store.

Any server that speaks OpenAI's ``/v1/chat/completions`` works: OpenAI, vLLM, Ollama, llama.cpp's
server, a lab's gateway. The pieces, each in its own module: where and how to ask
(:mod:`~topicbench.tasks.llm.endpoint`: :class:`~topicbench.tasks.llm.endpoint.LLMEndpoint`,
the ``llm:`` block's schema), the cache (:mod:`~topicbench.tasks.llm.cache`), talking to the
endpoint with deadlines and retries and the check before any fit
(:mod:`~topicbench.tasks.llm.client`), a reply checked as data (:mod:`~topicbench.tasks.llm.replies`)
and the HTTP exchange itself (:mod:`~topicbench.tasks.llm.http`). Their public names are
importable from here too.

Only answers are cached. The key is read from the environment variable the config names, sent
only in the Authorization header, and redacted from everything the endpoint sends back
(:mod:`topicbench.core.redaction`), so it is never logged, recorded, cached or shown; a base URL
with a user name or key in it is refused.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from topicbench.core.metrics.llm_judging import JudgeReply, JudgeRequest, is_answer

# the names callers import from here
from topicbench.tasks.llm.cache import ReplyCache, check_reply_cache  # noqa: F401
from topicbench.tasks.llm.client import (
    TOKENIZE_PATHS,
    EndpointUnavailable,
    check_endpoint,
    post_chat,
    tokenizer_count,
)
from topicbench.tasks.llm.endpoint import (
    CACHE_VARIABLE,
    LLM_SCHEMA,
    TOP_LOGPROBS,
    LLMEndpoint,
    LLMError,
    check_llm_block,
    judge_record,
    llm_settings,
    request_key,
)
from topicbench.tasks.llm.replies import cached_reply

logger = logging.getLogger(__name__)


class EndpointJudge:
    """The LLM metrics' judge: answers from the cache, asks the rest concurrently, keeps only
    answers (:func:`~topicbench.core.metrics.llm_judging.is_answer`) in the cache, and records
    every question.

    Parameters
    ----------
    endpoint : LLMEndpoint
    budget : str, optional
        What the token budget is counted against (a benchmark's id); no budget when None.
    """

    def __init__(self, endpoint: LLMEndpoint, *, budget: str | None = None):
        self.endpoint = endpoint
        self.budget = budget
        self.cache = ReplyCache(endpoint.cache_path())
        self._records: list = []
        self._lock = threading.Lock()
        self._sessions = threading.local()
        self._gone: EndpointUnavailable | None = None
        self._warned = False
        self._tokenize_path: str | None = None  # None: not asked yet; "": the endpoint has none

    def ask(self, requests_: list) -> list:
        """The replies to ``requests_``, in order: cached ones first, the others asked with up to
        ``concurrency`` in flight. Raises :class:`~topicbench.tasks.llm.endpoint.LLMError` when the
        endpoint cannot serve (the replies received so far stay cached)."""
        keys = [request_key(self.endpoint, request) for request in requests_]
        replies = [None] * len(requests_)
        missing = []
        for i, (key, request) in enumerate(zip(keys, requests_)):
            cached = self.cache.get(key)
            kept = cached_reply(cached["reply"]) if cached is not None else None
            reply = JudgeReply(*kept) if kept is not None else None
            if reply is None or not is_answer(request, reply):  # a non-answer an older cache kept is asked again
                missing.append(i)
                continue
            replies[i] = reply
            self._record(request, key, reply, cached["prompt_tokens"], cached["completion_tokens"], cached=True)
        if missing:
            with ThreadPoolExecutor(max_workers=max(1, self.endpoint.concurrency), thread_name_prefix="llm") as pool:
                for i, reply in zip(missing, pool.map(lambda i: self._ask_one(requests_[i], keys[i]), missing)):
                    replies[i] = reply
        return replies

    def _ask_one(self, request: JudgeRequest, key: str) -> JudgeReply:
        if self._gone is not None:  # one request found it gone: the others do not wait for it again
            raise self._gone
        self._check_budget()
        started = time.time_ns()
        try:
            completion = post_chat(self.endpoint, request, deadline=time.monotonic() + self.endpoint.question_seconds,
                                   session=self._session())
        except EndpointUnavailable as error:
            self._gone = error
            raise
        ended = time.time_ns()
        reply = JudgeReply(completion.text, completion.top_logprobs, completion.error)
        if is_answer(request, reply):
            self.cache.put(key, self.endpoint.model, request.task, {"text": reply.text, "top_logprobs": reply.top_logprobs},
                           completion.prompt_tokens, completion.completion_tokens, (ended - started) / 1e9)
        elif completion.error is not None and not self._warned:
            self._warned = True
            logger.warning("the LLM endpoint at %s sent a malformed reply (%s): counted as no answer, not cached",
                           self.endpoint.base_url, completion.error)
        if self.budget is not None:  # every request costs, answered or not
            self.cache.spend(self.budget, completion.prompt_tokens + completion.completion_tokens)
        self._record(request, key, reply, completion.prompt_tokens, completion.completion_tokens, cached=False,
                     started_ns=started, ended_ns=ended)
        return reply

    def count_tokens(self, text: str) -> int:
        """The tokens of ``text`` by the endpoint's tokenizer
        (:func:`~topicbench.tasks.llm.client.tokenizer_count`, at the first of
        :data:`~topicbench.tasks.llm.client.TOKENIZE_PATHS` that answers), or, where it has none
        (known after the first text), the estimate the document-level metrics state
        (:func:`~topicbench.core.metrics.llm_documents.token_counter`)."""
        from topicbench.core.metrics.llm_documents import token_counter

        if self._tokenize_path is None:
            paths = TOKENIZE_PATHS
        else:
            paths = (self._tokenize_path,) if self._tokenize_path else ()
        for path in paths:
            counted = tokenizer_count(self.endpoint, text, path, session=self._session(),
                                      deadline=time.monotonic() + self.endpoint.timeout)
            if counted is not None:
                self._tokenize_path = path
                return counted
        if self._tokenize_path is None:
            logger.info("the LLM endpoint at %s has no tokenizer to ask (%s): document excerpts' tokens are estimated",
                        self.endpoint.base_url, ", ".join(TOKENIZE_PATHS))
        self._tokenize_path = ""  # none, or it stopped answering: estimates from now on
        return token_counter(None)(text)

    def _check_budget(self) -> None:
        limit = self.endpoint.token_budget
        if limit is not None and self.budget is not None:
            spent = self.cache.spent(self.budget)
            if spent >= limit:
                raise LLMError(f"the LLM token budget of {limit:,} is spent ({spent:,} tokens asked of "
                               f"{self.endpoint.model}); raise llm.token_budget to ask the rest (cached replies cost nothing)")

    def _session(self):
        from topicbench.tasks.llm.http import new_session

        if not hasattr(self._sessions, "session"):
            self._sessions.session = new_session()
        return self._sessions.session

    def _record(self, request: JudgeRequest, key: str, reply: JudgeReply, prompt_tokens: int, completion_tokens: int, *,
                cached: bool, started_ns: int | None = None, ended_ns: int | None = None) -> None:
        with self._lock:
            self._records.append({
                "key": key, "task": request.task, "sample": request.sample, "messages": request.as_messages(),
                "reply": reply.text, "top_logprobs": reply.top_logprobs, "error": reply.error,
                "model": self.endpoint.model, "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                "cached": cached, "started_ns": started_ns, "ended_ns": ended_ns,
            })

    def take_records(self) -> list:
        """The questions asked since the last call (each a dict), and forget them."""
        with self._lock:
            records, self._records = self._records, []
        return records


def usage_of(records: list, endpoint: LLMEndpoint) -> dict:
    """What a run's questions cost: requests made and answered from the cache, tokens, and the
    price where the endpoint states one (per million tokens)."""
    asked = [r for r in records if not r["cached"]]
    usage = {
        "llm_requests": float(len(asked)), "llm_cached_replies": float(len(records) - len(asked)),
        "llm_prompt_tokens": float(sum(r["prompt_tokens"] for r in asked)),
        "llm_completion_tokens": float(sum(r["completion_tokens"] for r in asked)),
    }
    if endpoint.input_price is not None or endpoint.output_price is not None:
        usage["llm_cost"] = (usage["llm_prompt_tokens"] * (endpoint.input_price or 0.0)
                             + usage["llm_completion_tokens"] * (endpoint.output_price or 0.0)) / 1e6
    return usage
