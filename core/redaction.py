"""Secrets kept out of everything topicbench writes or prints: the one redaction rule.

A secret reaches topicbench in three ways: an API key read from the environment variable a config
names (``llm.api_key_env``), which is sent only in an ``Authorization`` header, a password or key
inside a URL's user-info (``http://user:KEY@host/v1``), and a key in a URL's query string
(``/v1?api_key=KEY``). An endpoint URL with either is refused before any work (the key would be
written wherever the URL is); the rule here redacts both wherever else they appear. Text that comes back from a
server may echo the key (an error body that quotes the request's headers), so every such text
is redacted where it is read, before it can reach an error, a log, a cache, a run record, a
trace or a report; a value shown in an error is redacted too.

The keys are registered with :func:`keep_secret` by the code that reads them, in the process
that reads them (a Dask worker reads its own), so :func:`redact` knows every key this process
has sent.
"""

from __future__ import annotations

import re
import threading

#: What a secret is replaced with.
REDACTED = "[redacted]"

# the user-info of a URL: "scheme://" then anything up to "@" that is not "/", "?", "#" or space
_URL_USER_INFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#\s@]+@")

# a query parameter whose name says it carries a secret (``?api_key=KEY``, ``&sig=...``)
_SECRET_QUERY = re.compile(
    r"(?i)([?&;](?:api[_-]?key|apikey|key|token|access[_-]?token|auth|authorization|sig|signature|secret"
    r"|password|passwd|pwd|client[_-]?secret|code)=)[^&#;\s]+")

_kept: set = set()
_kept_lock = threading.Lock()


def keep_secret(value: str | None) -> None:
    """Register ``value`` (a key this process sends) so that :func:`redact` removes it."""
    if value:
        with _kept_lock:
            _kept.add(value)


def redact(text: str) -> str:
    """``text`` without any registered secret, without the user-info of any URL in it
    (``http://user:KEY@host`` becomes ``http://[redacted]@host``) and without the value of any
    query parameter named like a secret (``?api_key=KEY`` becomes ``?api_key=[redacted]``)."""
    with _kept_lock:
        secrets = sorted(_kept, key=len, reverse=True)  # a key that contains another goes first
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    text = _URL_USER_INFO.sub(rf"\1{REDACTED}@", text)
    return _SECRET_QUERY.sub(rf"\1{REDACTED}", text)


def redact_data(value):
    """``value`` (parsed JSON: dicts, lists, strings, numbers) with every string, key or
    value, redacted (:func:`redact`); a key JSON escaped as ``\\u0073k-...`` is caught here,
    once it is decoded."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_data(key): redact_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_data(item) for item in value]
    return value


def without_query(url: str) -> str:
    """``url`` without its query string and fragment: what may be shown of a URL that has one."""
    return re.split(r"[?#]", url.strip(), maxsplit=1)[0]


def has_user_info(url: str) -> bool:
    """Whether ``url`` carries a user name, password or key before its host (``user:KEY@``)."""
    return bool(_URL_USER_INFO.match(url.strip()))
