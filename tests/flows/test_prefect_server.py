"""``topicbench server``: a Prefect server kept running, found by later commands through a state
file in PREFECT_HOME; a stale state file (its process gone) is ignored with a line saying so; the
server listens on 127.0.0.1 only."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from topicbench.flows import prefect_server, runtime
from topicbench.flows.cli.main import main


class _Health(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200 if self.path == "/api/health" else 404)
        self.end_headers()
        self.wfile.write(b"true")

    def log_message(self, *args):
        pass


@pytest.fixture()
def answering_api():
    """An HTTP server on 127.0.0.1 answering ``/api/health`` as Prefect's does; its API URL."""
    server = HTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/api"
    server.shutdown()
    server.server_close()


@pytest.fixture()
def home(tmp_path, monkeypatch):
    """A PREFECT_HOME of the test's and no PREFECT_API_URL, as for a user without a server."""
    from prefect.settings import PREFECT_API_URL, PREFECT_HOME, temporary_settings

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with temporary_settings(updates={PREFECT_HOME: str(tmp_path)}, restore_defaults={PREFECT_API_URL}):
        yield tmp_path


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_later_command_uses_the_kept_server_instead_of_starting_one(home, answering_api, monkeypatch):
    (home / prefect_server.STATE_FILE_NAME).write_text(json.dumps({"api_url": answering_api, "pid": os.getpid()}))

    def refuse(timeout):
        raise AssertionError("a temporary server was started although a kept one runs")

    monkeypatch.setattr(runtime, "start_prefect_server", refuse)
    prepared = []
    with runtime.shared_prefect_server(True, meanwhile=lambda: prepared.append(True)) as api_url:
        from prefect.settings import PREFECT_API_URL

        assert api_url == answering_api
        assert PREFECT_API_URL.value() == answering_api  # this process's flows
        assert os.environ["PREFECT_API_URL"] == answering_api  # its worker processes
    assert prepared == [True]
    assert "PREFECT_API_URL" not in os.environ


def test_a_stale_state_file_is_ignored_with_a_line_and_removed(home, answering_api, caplog):
    state = home / prefect_server.STATE_FILE_NAME
    pid = _dead_pid()
    state.write_text(json.dumps({"api_url": answering_api, "pid": pid}))
    with caplog.at_level(logging.WARNING, logger=prefect_server.__name__):
        assert prefect_server.running_server() is None
    assert f"stale Prefect server state file {state}: its server (pid {pid}) is gone" in caplog.text
    assert not state.exists()


def test_a_kept_server_that_does_not_answer_is_not_used(home, caplog):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    (home / prefect_server.STATE_FILE_NAME).write_text(
        json.dumps({"api_url": f"http://127.0.0.1:{port}/api", "pid": os.getpid()}))
    with caplog.at_level(logging.WARNING, logger=prefect_server.__name__):
        assert prefect_server.running_server(timeout=0.5) is None
    assert "does not answer" in caplog.text


def test_a_malformed_state_file_is_named_and_ignored(home, caplog):
    (home / prefect_server.STATE_FILE_NAME).write_text("{not json")
    with caplog.at_level(logging.WARNING, logger=prefect_server.__name__):
        assert prefect_server.running_server() is None
    assert "unreadable Prefect server state file" in caplog.text


def test_the_server_command_binds_127_0_0_1_only():
    command = prefect_server.server_command(4321)
    assert command[command.index("--host") + 1] == "127.0.0.1"
    assert command[command.index("--port") + 1] == "4321"
    assert command[1:5] == ["-m", "prefect", "server", "start"]


_FAKE_SERVER = """
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"true")
    def log_message(self, *a): pass
HTTPServer((sys.argv[sys.argv.index("--host") + 1], int(sys.argv[sys.argv.index("--port") + 1])), H).serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_start_status_and_stop_through_the_command(home, monkeypatch, tmp_path, capsys):
    """The command's plumbing, with a stand-in for Prefect's server (its start takes a minute on a
    busy machine) that binds the host and port it is given."""
    script = tmp_path / "fake_server.py"
    script.write_text(_FAKE_SERVER)
    monkeypatch.setattr(prefect_server, "server_command",
                        lambda port: [sys.executable, str(script), "--host", prefect_server.SERVER_HOST,
                                      "--port", str(port)])
    port = _free_port()
    assert main(["server", "start", "--port", str(port)]) == 0
    state = json.loads((home / prefect_server.STATE_FILE_NAME).read_text())
    assert state["api_url"] == f"http://127.0.0.1:{port}/api"
    assert f"started at http://127.0.0.1:{port}/api" in capsys.readouterr().out
    # listening on the loopback address it was given, and on no other interface
    listening = Path(f"/proc/{state['pid']}/net/tcp").read_text() if sys.platform.startswith("linux") else ""
    if listening:
        local = [line.split()[1] for line in listening.splitlines()[1:] if line.split()[3] == "0A"]
        assert f"0100007F:{port:04X}" in local and f"00000000:{port:04X}" not in local
    try:
        assert main(["server", "start", "--port", str(port)]) == 0  # a second start finds the first
        assert "already running" in capsys.readouterr().out
        assert main(["server", "status"]) == 0
        assert f"running at http://127.0.0.1:{port}/api" in capsys.readouterr().out
    finally:
        assert main(["server", "stop"]) == 0
    assert "stopped the Prefect server" in capsys.readouterr().out
    assert not prefect_server.process_alive(state["pid"])
    assert not (home / prefect_server.STATE_FILE_NAME).exists()
    assert main(["server", "status"]) == 1
    assert "no Prefect server" in capsys.readouterr().out


def test_a_server_that_exits_at_once_is_an_error_naming_its_log(home, monkeypatch):
    monkeypatch.setattr(prefect_server, "server_command", lambda port: [sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(prefect_server.ServerStartError, match=r"exited with status 3 .*topicbench-server\.log"):
        prefect_server.start_server(_free_port(), home=home)
    assert not (home / prefect_server.STATE_FILE_NAME).exists()


def test_stop_waits_for_the_whole_process_group_not_only_its_leader(home):
    """A child still exiting after its leader holds the server's port: stop returns once the
    group is gone, so a `server start` right after it finds the port free."""
    import subprocess
    import sys

    from topicbench.flows import prefect_server

    child = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
             "time.sleep(3)")
    leader = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', {child!r}], "
                               "stdout=subprocess.PIPE); print(c.pid, c.stdout.readline().strip().decode(), flush=True); "
                               "time.sleep(60)"],
        stdout=subprocess.PIPE, start_new_session=True)
    child_pid, ready = leader.stdout.readline().split()
    assert ready == b"ready"
    prefect_server._stop_process(leader.pid)
    assert not prefect_server.process_alive(int(child_pid))
    assert leader.poll() is not None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="TIME_WAIT and SO_REUSEADDR as Linux has them")
def test_a_port_left_in_time_wait_by_a_stopped_server_is_free_and_a_listening_one_is_not():
    """`server stop` then `server start` on one port: the stopped server's closed connections
    (TIME_WAIT) do not make the port look taken; a server listening there does."""
    from topicbench.core.validation import InputError
    from topicbench.flows.checks import check_port_free

    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    with pytest.raises(InputError, match=f"port {port} on 127.0.0.1 is in use"):
        check_port_free(port)
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = listener.accept()
    accepted.close()  # the server's side closes first: its end of the connection waits in TIME_WAIT
    client.recv(1)
    client.close()
    listener.close()
    check_port_free(port)
