"""Fake OpenAI-compatible chat endpoints on 127.0.0.1 that misbehave on purpose, for the tests of
the LLM judge's client (``tasks/llm/judge.py``, ``tasks/llm/http.py``, ``tasks/llm/replies.py``)
and of the command line that checks it.

:func:`fake_endpoint` starts one in a thread; its ``chat`` attribute decides each chat reply
(a function of the request's JSON body returning a :class:`Reply`), its ``models`` the answer to
``GET /models``. A :class:`Reply` may drip its bytes (one every ``drip`` seconds, status line
first) or drop the connection without a word (a server that dies on its first completion).
Tests import it as ``from llm_endpoints import ...`` (``tests/`` is on ``sys.path``).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import time
from dataclasses import dataclass, field

#: The model the fake endpoints serve.
MODEL = "toy-model"


@dataclass
class Reply:
    """One HTTP reply: ``status`` and ``body`` (a dict is sent as JSON, bytes as they are);
    ``drip``: seconds between its bytes (0: at once), from the status line on, or from the body
    on with ``drip_body_only``; ``sized``: with a Content-Length (else the end of the connection
    ends the body); ``drop``: close the connection instead."""

    status: int = 200
    body: object = None
    drip: float = 0.0
    drip_body_only: bool = False
    sized: bool = True
    drop: bool = False
    headers: dict = field(default_factory=dict)


def completion(text="3", top=(("3", -0.1),), usage=None) -> dict:
    """A chat completion's JSON: ``text``, the first token's ``top`` log-probabilities
    (None: none) and ``usage`` (default: 40 prompt and 2 reply tokens; None in a dict: left out)."""
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    if top is not None:
        choice["logprobs"] = {"content": [{"token": str(text)[:1], "logprob": -0.1,
                                           "top_logprobs": [{"token": t, "logprob": p} for t, p in top]}]}
    data = {"object": "chat.completion", "model": MODEL, "choices": [choice]}
    usage = {"prompt_tokens": 40, "completion_tokens": 2, "total_tokens": 42} if usage is None else usage
    if usage != {"omit": True}:
        data["usage"] = usage
    return data


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        server = self.server
        server.log.append(("GET", self.path, dict(self.headers), None))
        self._answer(server.models(dict(self.headers)))

    def do_POST(self):
        server = self.server
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
        server.log.append(("POST", self.path, dict(self.headers), body))
        self._answer(server.chat(body, dict(self.headers)))

    def _answer(self, reply: Reply) -> None:
        if reply.drop:
            self.close_connection = True
            self.connection.shutdown(2)
            return
        body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body, allow_nan=True).encode()
        phrase = self.responses.get(reply.status, ("Whatever",))[0]
        length = f"Content-Length: {len(body)}\r\n" if reply.sized else ""
        head = (f"HTTP/1.1 {reply.status} {phrase}\r\nContent-Type: application/json\r\n{length}"
                + "".join(f"{k}: {v}\r\n" for k, v in reply.headers.items()) + "Connection: close\r\n\r\n").encode()
        self.close_connection = True
        data = head + body
        try:
            if reply.drip <= 0:
                self.wfile.write(data)
                return
            if reply.drip_body_only:
                self.wfile.write(head)
                self.wfile.flush()
                data = body
            for i in range(len(data)):  # one byte at a time, until the client gives up (or 60 s)
                if self.server.stopping.is_set() or i * reply.drip > 60:
                    return
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                time.sleep(reply.drip)
        except OSError:  # the client cut the connection: what the tests expect of it
            return


def listing(headers=None) -> Reply:
    """``GET /models`` of a well endpoint."""
    return Reply(body={"object": "list", "data": [{"id": MODEL, "object": "model"}]})


@contextlib.contextmanager
def fake_endpoint(chat=None, models=listing):
    """A fake endpoint running for the block: ``.url`` (its API root, ``.../v1``), ``.log``
    (each request as (method, path, headers, JSON body)), ``.chat`` and ``.models`` (replaceable)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.log = []
    server.stopping = threading.Event()
    server.chat = chat or (lambda body, headers: Reply(body=completion()))
    server.models = models
    server.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()


def chats(server) -> list:
    """The JSON bodies of the chat requests ``server`` received."""
    return [body for method, path, _, body in server.log if method == "POST"]

