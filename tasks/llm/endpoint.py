"""Where and how the LLM metrics ask: an OpenAI-compatible chat endpoint as a config's ``llm:``
block gives it (:data:`LLM_SCHEMA`, and :func:`check_llm_block` for what a schema cannot say),
the judge's settings beside it, and the cache key of a question.

The key is never in the block, only the name of the environment variable holding it
(``api_key_env``); :meth:`LLMEndpoint.api_key` reads it and registers it for redaction
(:mod:`topicbench.core.redaction`) before anything is sent with it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from topicbench.core.metrics.llm_judging import JudgeRequest
from topicbench.core.redaction import has_user_info, keep_secret, redact, without_query
from topicbench.core.validation import InputError

#: Where replies are cached unless the config or TOPICBENCH_LLM_CACHE says otherwise.
CACHE_VARIABLE = "TOPICBENCH_LLM_CACHE"
#: Log-probabilities asked for the first token of a reply (the rating's expected value).
TOP_LOGPROBS = 5


class LLMError(InputError):
    """The endpoint cannot be used (unreachable, a refused key, an unknown model, the token budget
    spent): the message names the endpoint and the fix."""


@dataclass(frozen=True)
class LLMEndpoint:
    """Where and how the LLM metrics ask.

    Parameters
    ----------
    base_url : str
        The API root, e.g. ``http://127.0.0.1:8080/v1`` or ``https://api.openai.com/v1``.
    model : str
        The model's name at that endpoint.
    api_key_env : str, optional
        The environment variable holding the key (the key itself is never in a config or a log).
    concurrency : int
        Requests in flight at once.
    timeout : float
        Seconds for one request, wall clock: connecting, sending and receiving the whole reply.
        A question's tries and back-off together take at most ``(retries + 1) * timeout``
        (:attr:`LLMEndpoint.question_seconds`), and the check before any work at most ``timeout``.
    retries : int
        Further tries of a request after a rate limit (429), a server error (5xx), a lost
        connection or no reply in time, with exponential back-off (1, 2, 4, ... s, jittered).
    token_budget : int, optional
        Most tokens (prompt and reply) one benchmark may spend: no request starts once it is
        spent (those already in flight, at most ``concurrency``, may pass it), and the scoring
        stops with an error.
    cache : str, optional
        The cache file (default: ``$TOPICBENCH_LLM_CACHE``, else the user's cache folder).
    input_price, output_price : float, optional
        Price per million prompt / reply tokens, to record the cost.
    """

    base_url: str
    model: str
    api_key_env: str | None = None
    concurrency: int = 4
    timeout: float = 60.0
    retries: int = 4
    token_budget: int | None = None
    cache: str | None = None
    input_price: float | None = None
    output_price: float | None = None

    def __post_init__(self):
        check_llm_block(asdict(self))

    @property
    def chat_url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    @property
    def question_seconds(self) -> float:
        """The most one question may take, all its tries and back-off together."""
        return self.timeout * (self.retries + 1)

    def api_key(self) -> str | None:
        """The key in ``$api_key_env`` (None without one), registered for redaction
        (:func:`~topicbench.core.redaction.keep_secret`) before anything is sent with it."""
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        keep_secret(key)
        return key or None

    def headers(self) -> dict:
        key = self.api_key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def cache_setting(self) -> str:
        """Where :meth:`cache_path` comes from, as a message names it."""
        if self.cache:
            return "llm.cache"
        return f"${CACHE_VARIABLE}" if os.environ.get(CACHE_VARIABLE) else "the LLM reply cache"

    def cache_path(self) -> Path:
        if self.cache:
            return Path(self.cache).expanduser()
        if os.environ.get(CACHE_VARIABLE):
            return Path(os.environ[CACHE_VARIABLE]).expanduser()
        try:
            import platformdirs

            folder = Path(platformdirs.user_cache_dir("topicbench"))
        except ImportError:
            folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "topicbench"
        return folder / "llm-judge-cache.sqlite"

    def record(self) -> dict:
        """What a run records of the endpoint (never the key, only where it was read from)."""
        return {key: value for key, value in asdict(self).items() if value is not None}


#: The config's ``llm:`` block (JSON Schema): where to ask, and how the questions are asked.
LLM_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "description": "an OpenAI-compatible chat endpoint for the LLM metrics (llm_rating, llm_intrusion, llm_fit, "
                   "llm_rank; base_url and model, "
                   "here or from --llm-base-url and --llm-model), and how the questions are asked",
    "properties": {
        "base_url": {"type": "string", "pattern": "^https?://", "description": "the API root, e.g. http://127.0.0.1:8080/v1"},
        "model": {"type": "string", "minLength": 1},
        "api_key_env": {"type": ["string", "null"], "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
                        "description": "the environment variable holding the key (never the key itself)"},
        "concurrency": {"type": "integer", "minimum": 1, "maximum": 256},
        "timeout": {"type": "number", "minimum": 0.1, "maximum": 3600,
                    "description": "seconds for one request, wall clock (the whole reply)"},
        "retries": {"type": "integer", "minimum": 0, "maximum": 20},
        "token_budget": {"type": ["integer", "null"], "minimum": 1},
        "cache": {"type": ["string", "null"], "minLength": 1},
        "input_price": {"type": ["number", "null"], "minimum": 0, "description": "per million prompt tokens"},
        "output_price": {"type": ["number", "null"], "minimum": 0, "description": "per million reply tokens"},
        "temperature": {"type": "number", "minimum": 0, "maximum": 2},
        "rating_samples": {"type": "integer", "minimum": 1, "maximum": 50},
        "intrusion_draws": {"type": "integer", "minimum": 1, "maximum": 50},
        "max_topics": {"type": "integer", "minimum": 1},
        "retries_on_non_answers": {"type": "integer", "minimum": 0, "maximum": 10},
        "document_topics": {"type": "integer", "minimum": 1,
                            "description": "topics judged by llm_fit and llm_rank (the most prevalent)"},
        "exemplar_documents": {"type": "integer", "minimum": 1, "maximum": 50,
                               "description": "highest-theta documents shown when the judge names a topic's category"},
        "evaluation_documents": {"type": "integer", "minimum": 2, "maximum": 50,
                                 "description": "documents drawn across theta that the judge fits and ranks"},
        "excerpt_words": {"type": "integer", "minimum": 5, "description": "words of a document shown"},
        "context_tokens": {"type": "integer", "minimum": 256, "description": "the endpoint's context, in tokens"},
    },
}
_JUDGE_FIELDS = {"temperature": "temperature", "rating_samples": "rating_samples", "intrusion_draws": "intrusion_draws",
                 "max_topics": "max_topics", "retries_on_non_answers": "retries",
                 **{name: name for name in ("document_topics", "exemplar_documents", "evaluation_documents",
                                            "excerpt_words", "context_tokens")}}


def check_llm_block(block: dict) -> None:
    """What :data:`LLM_SCHEMA` cannot say about an ``llm:`` block, checked before any work: its
    numbers are finite (a YAML ``.nan`` passes every range), and its base URL holds no user name
    or key before the host, which would be written wherever the URL is (run params, logs)."""
    from topicbench.core.schema import expected

    for name, schema in LLM_SCHEMA["properties"].items():
        value = block.get(name)
        if isinstance(value, float) and not math.isfinite(value):
            raise LLMError(f"llm.{name} must be {expected(schema)}, got {value!r}")
    url = block.get("base_url")
    if isinstance(url, str) and re.search(r"[?#]", url):
        raise LLMError(f"llm.base_url {without_query(url)} has a query string or fragment (not shown: it may hold a "
                       "key, and it would be written wherever the URL is); give the API root alone, e.g. "
                       "http://127.0.0.1:8080/v1, and any key in an environment variable named by llm.api_key_env "
                       "(--llm-api-key-env)")
    if isinstance(url, str) and has_user_info(url):
        raise LLMError(f"llm.base_url {redact(url)} holds a user name or key before the host: it would be written "
                       "wherever the URL is; give the URL without it, and the key in an environment variable named "
                       "by llm.api_key_env (--llm-api-key-env)")


def llm_settings(block: dict) -> tuple:
    """(:class:`LLMEndpoint`, :class:`~topicbench.core.metrics.llm_judging.JudgeSettings`) of a
    config's ``llm:`` block (checked against :data:`LLM_SCHEMA` beforehand); a context too small
    for the document excerpts is refused here, before any work."""
    from topicbench.core.metrics.llm_documents import excerpt_token_limit, token_counter
    from topicbench.core.metrics.llm_judging import JudgeSettings

    endpoint = LLMEndpoint(**{key: value for key, value in block.items() if key not in _JUDGE_FIELDS})
    judge = JudgeSettings(**{_JUDGE_FIELDS[key]: value for key, value in block.items() if key in _JUDGE_FIELDS})
    excerpt_token_limit(judge, token_counter(None))
    return endpoint, judge


def judge_record(judge) -> dict:
    """The judge settings as recorded (and as part of a run's key)."""
    return asdict(judge)


def request_key(endpoint: LLMEndpoint, request: JudgeRequest) -> str:
    """The cache key of a question: the endpoint (its address and model: two servers that name
    one model alike may serve different weights or quantisations), the messages and every setting
    of the reply (temperature, token limit, which ask it is)."""
    payload = {"base_url": endpoint.base_url.rstrip("/"), "model": endpoint.model, "messages": request.as_messages(),
               "temperature": request.temperature, "max_tokens": request.max_tokens, "sample": request.sample,
               "top_logprobs": TOP_LOGPROBS}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
