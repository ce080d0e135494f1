"""The temporary Prefect server starts while the command prepares the tracking store (both take
seconds; they overlap), from a thread that lives as long as the server: the die-with-parent
signal follows the thread that started a process, so a thread that ended would take the server
down with it."""

from __future__ import annotations

import threading

import pytest

from topicbench.flows import runtime


class _Server:
    api_url = "http://127.0.0.1:9/api"

    def __init__(self):
        self.stopped = threading.Event()

    def stop(self):
        self.stopped.set()


@pytest.fixture()
def fake_start(monkeypatch):
    """start_prefect_server replaced: it begins only after ``preparing`` is set (so the store's
    preparation must run while it starts), records its thread and returns ``server``."""
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    state = {"server": _Server(), "preparing": threading.Event(), "started": threading.Event(), "thread": None}

    def start(timeout):
        state["thread"] = threading.current_thread()
        assert state["preparing"].wait(30), "the server's start waited for the store's preparation"
        state["started"].set()
        return state["server"]

    monkeypatch.setattr(runtime, "start_prefect_server", start)
    # no API configured, as for a user without a server (a session's flow tests run under a harness
    # that sets PREFECT_API_URL in Prefect's settings, not in the environment)
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        yield state


def test_the_server_starts_while_the_store_is_prepared_and_its_thread_lives_with_it(fake_start):
    with runtime.shared_prefect_server(False, meanwhile=fake_start["preparing"].set) as api_url:
        assert api_url == fake_start["server"].api_url
        assert fake_start["thread"] is not threading.current_thread()
        assert fake_start["thread"].is_alive()  # the server's process would get SIGTERM were it gone
        assert not fake_start["server"].stopped.is_set()
    assert fake_start["server"].stopped.is_set()
    fake_start["thread"].join(10)
    assert not fake_start["thread"].is_alive()


def test_a_failed_preparation_stops_the_server_once_started(fake_start):
    def fail():
        fake_start["preparing"].set()
        raise RuntimeError("the store is gone")

    with pytest.raises(RuntimeError, match="the store is gone"):
        with runtime.shared_prefect_server(False, meanwhile=fail):
            pytest.fail("the block ran")
    assert fake_start["server"].stopped.wait(30)
