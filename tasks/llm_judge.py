"""Asking an OpenAI-compatible chat endpoint the LLM metrics' questions: concurrently, with
timeouts, retries and back-off, a token budget, and a cache on disk so nothing is asked twice.

Any server that speaks OpenAI's ``/v1/chat/completions`` works: OpenAI, vLLM, Ollama, llama.cpp's
server, a lab's gateway. :class:`LLMEndpoint` says where and how; :func:`check_endpoint` checks it
before any fit (unreachable, a refused key, an unknown model: one line each);
:class:`EndpointJudge` is the judge the metrics of :mod:`topicbench.core.metrics.llm_judging`
ask, and keeps a record of every question (prompt, reply, tokens, timing, whether the cache
answered) for the tracking store. The key is read from the environment variable the config names
and is never logged, recorded or cached.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from topicbench.core.metrics.llm_judging import JudgeReply, JudgeRequest
from topicbench.core.validation import InputError

logger = logging.getLogger(__name__)

#: Where replies are cached unless the config or TOPICBENCH_LLM_CACHE says otherwise.
CACHE_VARIABLE = "TOPICBENCH_LLM_CACHE"
#: Log-probabilities asked for the first token of a reply (the rating's expected value).
TOP_LOGPROBS = 5
#: HTTP statuses worth another try: rate limits and server errors.
TRANSIENT_STATUSES = (408, 409, 425, 429, 500, 502, 503, 504)


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
        Seconds for one request.
    retries : int
        Further tries of a request after a rate limit (429), a server error (5xx) or a lost
        connection, with exponential back-off (1, 2, 4, ... s, jittered).
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

    @property
    def chat_url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    def headers(self) -> dict:
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return {"Authorization": f"Bearer {key}"} if key else {}

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
    "description": "an OpenAI-compatible chat endpoint for the llm_rating and llm_intrusion metrics (base_url and model, "
                   "here or from --llm-base-url and --llm-model), and how the questions are asked",
    "properties": {
        "base_url": {"type": "string", "pattern": "^https?://", "description": "the API root, e.g. http://127.0.0.1:8080/v1"},
        "model": {"type": "string", "minLength": 1},
        "api_key_env": {"type": ["string", "null"], "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
                        "description": "the environment variable holding the key (never the key itself)"},
        "concurrency": {"type": "integer", "minimum": 1, "maximum": 256},
        "timeout": {"type": "number", "exclusiveMinimum": 0},
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
    },
}
_JUDGE_FIELDS = {"temperature": "temperature", "rating_samples": "rating_samples", "intrusion_draws": "intrusion_draws",
                 "max_topics": "max_topics", "retries_on_non_answers": "retries"}


def llm_settings(block: dict) -> tuple:
    """(:class:`LLMEndpoint`, :class:`~topicbench.core.metrics.llm_judging.JudgeSettings`) of a
    config's ``llm:`` block (checked against :data:`LLM_SCHEMA` beforehand)."""
    from topicbench.core.metrics.llm_judging import JudgeSettings

    endpoint = LLMEndpoint(**{key: value for key, value in block.items() if key not in _JUDGE_FIELDS})
    judge = JudgeSettings(**{_JUDGE_FIELDS[key]: value for key, value in block.items() if key in _JUDGE_FIELDS})
    return endpoint, judge


def judge_record(judge) -> dict:
    """The judge settings as recorded (and as part of a run's key)."""
    return asdict(judge)


def request_key(endpoint: LLMEndpoint, request: JudgeRequest) -> str:
    """The cache key of a question: the model, the messages and every setting of the reply
    (temperature, token limit, which ask it is). The address is not part of it: the same model
    at another address answers from the same cache (give each endpoint its own ``cache`` to
    keep them apart)."""
    payload = {"model": endpoint.model, "messages": request.as_messages(), "temperature": request.temperature,
               "max_tokens": request.max_tokens, "sample": request.sample, "top_logprobs": TOP_LOGPROBS}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


# -- the cache ----------------------------------------------------------------------------------


class ReplyCache:
    """Replies on disk, by :func:`request_key` (sqlite in WAL mode: Dask workers and the flow
    process share one file), and the tokens each budget has spent."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as connection:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, model TEXT, task TEXT, "
                    "reply TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, seconds REAL, created REAL)"
                )
                connection.execute("CREATE TABLE IF NOT EXISTS spending (budget TEXT, tokens INTEGER, at REAL)")
        except (OSError, sqlite3.Error) as error:
            raise LLMError(f"the LLM reply cache {self.path} cannot be used: {error}; give another with "
                           f"llm.cache or ${CACHE_VARIABLE}") from None

    def _connect(self):
        return sqlite3.connect(self.path, timeout=60)

    def get(self, key: str) -> dict | None:
        with self._connect() as connection:
            row = connection.execute(
                "SELECT reply, prompt_tokens, completion_tokens, seconds FROM replies WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        return {"reply": json.loads(row[0]), "prompt_tokens": row[1], "completion_tokens": row[2], "seconds": row[3]}

    def put(self, key: str, model: str, task: str, reply: dict, prompt_tokens: int, completion_tokens: int,
            seconds: float) -> None:
        with self._connect() as connection:
            connection.execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (key, model, task, json.dumps(reply), prompt_tokens, completion_tokens, seconds, time.time()),
            )

    def spend(self, budget: str, tokens: int) -> None:
        with self._connect() as connection:
            connection.execute("INSERT INTO spending VALUES (?, ?, ?)", (budget, int(tokens), time.time()))

    def spent(self, budget: str) -> int:
        with self._connect() as connection:
            return int(connection.execute("SELECT COALESCE(SUM(tokens), 0) FROM spending WHERE budget = ?",
                                          (budget,)).fetchone()[0])


# -- checking the endpoint before any work -----------------------------------------------------


def check_endpoint(endpoint: LLMEndpoint, timeout: float = 10.0) -> None:
    """One line, before any fit, when the endpoint cannot serve: unreachable, its key refused,
    or the model unknown to it (``GET /models``; where a gateway has no such route, a one-token
    chat request checks the key and the model)."""
    import requests

    if endpoint.api_key_env and not os.environ.get(endpoint.api_key_env):
        raise LLMError(f"llm.api_key_env names ${endpoint.api_key_env}, which is not set: export the key there")
    url = endpoint.base_url.rstrip("/") + "/models"
    try:
        response = requests.get(url, headers=endpoint.headers(), timeout=timeout)
    except requests.RequestException as error:
        raise LLMError(f"the LLM endpoint at {endpoint.base_url} is unreachable ({type(error).__name__}); start it or "
                       f"give another --llm-base-url") from None
    _refuse_key(endpoint, response)
    if response.status_code == 200:
        served = [item.get("id") for item in response.json().get("data", []) if isinstance(item, dict)]
        if served and endpoint.model not in served:
            raise LLMError(f"the LLM endpoint at {endpoint.base_url} has no model {endpoint.model!r}; it serves: "
                           f"{', '.join(map(str, served[:20]))}")
        return
    probe = JudgeRequest("check", (("user", "Reply with 1."),), max_tokens=1)
    _post(endpoint, probe, timeout)


def _refuse_key(endpoint: LLMEndpoint, response) -> None:
    if response.status_code in (401, 403):
        where = f"${endpoint.api_key_env}" if endpoint.api_key_env else "no key (set llm.api_key_env)"
        raise LLMError(f"the LLM endpoint at {endpoint.base_url} refused the key (HTTP {response.status_code}) "
                       f"read from {where}")


# -- asking ------------------------------------------------------------------------------------


class EndpointUnavailable(LLMError):
    """The endpoint stopped answering (after the retries): what was asked so far is cached."""


def _post(endpoint: LLMEndpoint, request: JudgeRequest, timeout: float, session=None) -> dict:
    """One chat completion, retried on transient failures; the parsed reply with its usage."""
    import requests

    body = {"model": endpoint.model, "messages": request.as_messages(), "temperature": request.temperature,
            "max_tokens": request.max_tokens, "logprobs": True, "top_logprobs": TOP_LOGPROBS}
    poster = session or requests
    for attempt in range(endpoint.retries + 1):
        try:
            response = poster.post(endpoint.chat_url, json=body, headers=endpoint.headers(), timeout=timeout)
        except requests.RequestException as error:
            failure = f"{type(error).__name__}"
        else:
            _refuse_key(endpoint, response)
            if response.status_code == 404 or (response.status_code == 400 and endpoint.model in response.text):
                raise LLMError(f"the LLM endpoint at {endpoint.base_url} does not serve the model {endpoint.model!r} "
                               f"(HTTP {response.status_code}: {response.text[:200]})")
            if response.status_code not in TRANSIENT_STATUSES:
                if response.status_code != 200:
                    raise LLMError(f"the LLM endpoint at {endpoint.base_url} answered HTTP {response.status_code}: "
                                   f"{response.text[:200]}")
                return _read_completion(response.json())
            failure = f"HTTP {response.status_code}"
        if attempt < endpoint.retries:
            time.sleep(min(2.0 ** attempt, 30.0) * (0.5 + random.random()))  # jittered back-off
    raise EndpointUnavailable(
        f"the LLM endpoint at {endpoint.base_url} stopped answering ({failure} after {endpoint.retries + 1} tries); "
        "the replies so far are cached: the same command asks only the rest"
    )


def _read_completion(data: dict) -> dict:
    """The text, the first token's top log-probabilities and the token counts of a completion."""
    choice = (data.get("choices") or [{}])[0]
    text = (choice.get("message") or {}).get("content")
    top = None
    content = (choice.get("logprobs") or {}).get("content") or []
    if content and content[0].get("top_logprobs"):
        top = [[entry.get("token"), entry.get("logprob")] for entry in content[0]["top_logprobs"]]
    usage = data.get("usage") or {}
    return {"text": text, "top_logprobs": top, "prompt_tokens": int(usage.get("prompt_tokens") or 0),
            "completion_tokens": int(usage.get("completion_tokens") or 0)}


class EndpointJudge:
    """The LLM metrics' judge: answers from the cache, asks the rest concurrently, and records
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

    def ask(self, requests_: list) -> list:
        """The replies to ``requests_``, in order: cached ones first, the others asked with up to
        ``concurrency`` in flight. Raises :class:`LLMError` when the endpoint cannot serve (the
        replies received so far stay cached)."""
        keys = [request_key(self.endpoint, request) for request in requests_]
        replies = [None] * len(requests_)
        missing = []
        for i, (key, request) in enumerate(zip(keys, requests_)):
            cached = self.cache.get(key)
            if cached is None:
                missing.append(i)
                continue
            replies[i] = _as_reply(cached["reply"])
            self._record(request, key, cached["reply"], cached["prompt_tokens"], cached["completion_tokens"], cached=True)
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
            answer = _post(self.endpoint, request, self.endpoint.timeout, self._session())
        except EndpointUnavailable as error:
            self._gone = error
            raise
        ended = time.time_ns()
        reply = {"text": answer["text"], "top_logprobs": answer["top_logprobs"]}
        tokens = answer["prompt_tokens"] + answer["completion_tokens"]
        self.cache.put(key, self.endpoint.model, request.task, reply, answer["prompt_tokens"], answer["completion_tokens"],
                       (ended - started) / 1e9)
        if self.budget is not None:
            self.cache.spend(self.budget, tokens)
        self._record(request, key, reply, answer["prompt_tokens"], answer["completion_tokens"], cached=False,
                     started_ns=started, ended_ns=ended)
        return _as_reply(reply)

    def _check_budget(self) -> None:
        limit = self.endpoint.token_budget
        if limit is not None and self.budget is not None:
            spent = self.cache.spent(self.budget)
            if spent >= limit:
                raise LLMError(f"the LLM token budget of {limit:,} is spent ({spent:,} tokens asked of "
                               f"{self.endpoint.model}); raise llm.token_budget to ask the rest (cached replies cost nothing)")

    def _session(self):
        import requests

        if not hasattr(self._sessions, "session"):
            self._sessions.session = requests.Session()
        return self._sessions.session

    def _record(self, request: JudgeRequest, key: str, reply: dict, prompt_tokens: int, completion_tokens: int, *,
                cached: bool, started_ns: int | None = None, ended_ns: int | None = None) -> None:
        with self._lock:
            self._records.append({
                "key": key, "task": request.task, "sample": request.sample, "messages": request.as_messages(),
                "reply": reply.get("text"), "top_logprobs": reply.get("top_logprobs"), "model": self.endpoint.model,
                "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "cached": cached,
                "started_ns": started_ns, "ended_ns": ended_ns,
            })

    def take_records(self) -> list:
        """The questions asked since the last call (each a dict), and forget them."""
        with self._lock:
            records, self._records = self._records, []
        return records


def _as_reply(reply: dict) -> JudgeReply:
    top = reply.get("top_logprobs")
    return JudgeReply(reply.get("text"), tuple(tuple(entry) for entry in top) if top else None)


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
