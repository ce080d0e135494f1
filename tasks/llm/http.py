"""HTTP exchanges with an LLM endpoint that end on time and stay small, whatever the server does.

``requests``' ``timeout`` bounds each socket operation, not the exchange: a server that sends one
byte a second never trips it, and held a check meant to take seconds for minutes. Here each
exchange has a wall-clock deadline: a watchdog shuts the connection's socket down when it
passes, which ends a blocked read at once (the status line, the headers or the body), and the
body is read in chunks up to a size cap, so a 10 MB reply to a 5-token question is refused after
its first megabyte. Every body is redacted as it is read (:func:`topicbench.core.redaction.redact`
runs on it in :mod:`topicbench.tasks.llm.replies` and :mod:`topicbench.tasks.llm.judge`).

The socket is found through connection classes of our own: each connection that starts a
request while an exchange runs registers itself with that exchange (a thread-local list), and
its socket once the request is sent (a connection that will close hands its socket to the
response and forgets it); the watchdog shuts down those sockets when the deadline passes. A TLS
handshake, before urllib3 hands the connection its socket, stays bounded per read only.
"""

from __future__ import annotations

import socket
import threading
import time

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

#: Bytes of a body read at a time (each read is checked against the size cap).
CHUNK_BYTES = 1 << 16


class DeadlinePassed(Exception):
    """No complete reply came before the exchange's deadline."""


class ReplyTooLarge(Exception):
    """The reply's body is larger than the cap (said by its Content-Length, or found reading it)."""


_exchange = threading.local()  # .connections: the connections of the exchange running in this thread


def _watch(connection_or_socket) -> None:
    watched = getattr(_exchange, "connections", None)
    if watched is not None and connection_or_socket is not None:
        watched.append(connection_or_socket)


class _Watched:
    """What the watched connections add to urllib3's: registering with the running exchange."""

    def connect(self) -> None:
        _watch(self)
        super().connect()

    def request(self, *args, **kwargs):  # a connection the pool kept is reused without connect()
        _watch(self)
        return super().request(*args, **kwargs)

    def getresponse(self, *args, **kwargs):
        _watch(self.sock)  # the response may keep it after the connection lets it go
        return super().getresponse(*args, **kwargs)


class _WatchedHTTPConnection(_Watched, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_Watched, HTTPSConnection):
    pass


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_WATCHED_POOLS = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class _WatchedAdapter(HTTPAdapter):
    """requests' adapter, with connections an exchange's watchdog can cut (proxies included,
    SOCKS proxies excepted: those keep their own connection classes)."""

    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _WATCHED_POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs):
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):
            manager.pool_classes_by_scheme = _WATCHED_POOLS
        return manager


def new_session() -> requests.Session:
    """A ``requests.Session`` whose exchanges :func:`exchange` can end at their deadline."""
    session = requests.Session()
    adapter = _WatchedAdapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def exchange(session: requests.Session, method: str, url: str, *, headers: dict, deadline: float, limit: int,
             body: dict | None = None) -> tuple:
    """(status, body bytes) of one HTTP request that ends by ``deadline`` whatever the server does.

    Parameters
    ----------
    session : requests.Session
        A session of :func:`new_session`.
    method, url : str
    headers : dict
    deadline : float
        When the whole exchange must be over (``time.monotonic()`` seconds): connecting, sending,
        and receiving the status line, the headers and the whole body.
    limit : int
        Most bytes of the body (decoded) read.
    body : dict, optional
        Sent as JSON.

    Raises
    ------
    DeadlinePassed
        The deadline passed first.
    ReplyTooLarge
        The body is over ``limit`` bytes.

    Notes
    -----
    An exchange that fails otherwise (refused, reset, a malformed response) raises requests' own
    ``RequestException``.
    """
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DeadlinePassed
    connections: list = []
    cut = threading.Event()
    watchdog = threading.Timer(remaining, _cut, (connections, cut))
    watchdog.daemon = True
    _exchange.connections = connections
    watchdog.start()
    try:
        try:
            response = session.request(method, url, headers=headers, json=body, timeout=(remaining, remaining),
                                       stream=True)
            with response:
                content = _read_capped(response, limit)
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as error:
            if cut.is_set() or time.monotonic() >= deadline:
                raise DeadlinePassed from None
            if isinstance(error, requests.RequestException):
                raise
            raise requests.ConnectionError(error) from None
        if cut.is_set():  # the socket was shut while a body without a length was read: it is cut short
            raise DeadlinePassed
        return response.status_code, content
    finally:
        watchdog.cancel()
        _exchange.connections = None


def _read_capped(response, limit: int) -> bytes:
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise ReplyTooLarge
    content = bytearray()
    for chunk in response.iter_content(CHUNK_BYTES):
        content += chunk
        if len(content) > limit:
            raise ReplyTooLarge
    return bytes(content)


def _cut(connections: list, cut: threading.Event) -> None:
    """The watchdog: shut down the sockets of the exchange (a blocked read returns)."""
    cut.set()
    for watched in list(connections):
        sock = watched if isinstance(watched, socket.socket) else getattr(watched, "sock", None)
        if sock is None:
            continue
        try:
            socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the plain socket's, on a TLS socket too
        except OSError:  # already closed
            pass
