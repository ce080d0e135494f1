"""Secrets kept out of everything topicbench writes or prints: the one redaction rule.

A secret reaches topicbench in two ways: an API key read from the environment variable a config
names (``llm.api_key_env``), which is sent only in an ``Authorization`` header, and a password
or key inside a URL's user-info (``http://user:KEY@host/v1``). Text that comes back from a
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

_kept: set = set()
_kept_lock = threading.Lock()


def keep_secret(value: str | None) -> None:
    """Register ``value`` (a key this process sends) so that :func:`redact` removes it."""
    if value:
        with _kept_lock:
            _kept.add(value)


def redact(text: str) -> str:
    """``text`` without any registered secret and without the user-info of any URL in it
    (``http://user:KEY@host`` becomes ``http://[redacted]@host``)."""
    with _kept_lock:
        secrets = sorted(_kept, key=len, reverse=True)  # a key that contains another goes first
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return _URL_USER_INFO.sub(rf"\1{REDACTED}@", text)


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


def has_user_info(url: str) -> bool:
    """Whether ``url`` carries a user name, password or key before its host (``user:KEY@``)."""
    return bool(_URL_USER_INFO.match(url.strip()))
