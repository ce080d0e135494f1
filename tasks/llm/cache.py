"""The LLM judge's answers on disk (:class:`ReplyCache`), and the check of its file before any
work (:func:`check_reply_cache`): a file of its own, never another program's database."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

from topicbench.tasks.llm.endpoint import CACHE_VARIABLE, LLMEndpoint, LLMError

#: The cache's own tables; a database holding others is another program's (the tracking store's).
CACHE_TABLES = frozenset({"replies", "spending"})


class ReplyCache:
    """Answers on disk, by :func:`~topicbench.tasks.llm.endpoint.request_key` (sqlite in WAL mode: Dask workers and the flow
    process share one file), and the tokens each budget has spent. A database holding other
    tables (another program's: the tracking store's) is refused before anything is changed in it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as connection:
                _refuse_other_tables(self.path, connection, "the LLM reply cache")
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
        try:
            reply = json.loads(row[0])
        except (TypeError, ValueError):  # not written by this class: asked again, and replaced
            return None
        return {"reply": reply, "prompt_tokens": row[1], "completion_tokens": row[2], "seconds": row[3]}

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


def check_reply_cache(endpoint: LLMEndpoint, tracking_uri: str | None = None) -> Path:
    """The endpoint's reply cache file, checked before any work without creating or changing
    it: a file that can be written where it is (the rule of every path topicbench writes,
    :func:`~topicbench.core.io.check_output_path`), not the tracking store's database (the cache
    would add its tables to it and switch it to WAL), and, where it exists, a reply cache (an
    sqlite database of no other tables). Returns the path."""
    from topicbench.core.io import check_output_path

    from topicbench.core.io import sqlite_path

    setting = endpoint.cache_setting()
    path = check_output_path(endpoint.cache_path(), setting)
    store = sqlite_path(tracking_uri) if tracking_uri else None
    if store is not None and Path(os.path.realpath(store.expanduser())) == path:
        raise LLMError(f"{setting} is {path}, the tracking store's database: the reply cache would add its tables to "
                       f"it; give the cache a file of its own (llm.cache or ${CACHE_VARIABLE})")
    if path.is_file() and path.stat().st_size > 0:
        with open(path, "rb") as file:
            if file.read(16) != b"SQLite format 3\x00":
                raise LLMError(f"{setting} {path} is not a reply cache (not an sqlite database); give the cache a file "
                               f"of its own (llm.cache or ${CACHE_VARIABLE})")
        try:  # read-only and immutable: nothing is written, not even a journal
            with sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True) as connection:
                _refuse_other_tables(path, connection, setting)
        except sqlite3.Error as error:
            raise LLMError(f"{setting} {path} cannot be read as a reply cache ({error}); give the cache a file of its "
                           f"own (llm.cache or ${CACHE_VARIABLE})") from None
    return path


def _refuse_other_tables(path: Path, connection, setting: str) -> None:
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    others = sorted(tables - CACHE_TABLES)
    if others:
        raise LLMError(f"{setting} {path} is another program's database (it holds the tables {', '.join(others[:5])}"
                       f"{', ...' if len(others) > 5 else ''}); give the cache a file of its own (llm.cache or "
                       f"${CACHE_VARIABLE})")
