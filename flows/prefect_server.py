"""A Prefect API server kept running between commands: ``topicbench server start|stop|status``.

Without a server of the user's, every command that runs a flow starts a temporary one, which costs
seconds of each command's start (most of ``topicbench run``'s time before its first fit). A server
started by ``topicbench server start`` outlives the command: it listens on 127.0.0.1 only (its API
and Prefect's UI have no login), and its URL and process id are kept in a state file in
``PREFECT_HOME``. Later commands read that file and use the server when its process is alive and
it answers; a state file whose process is gone is ignored, with a line saying so, and removed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from .checks import check_port_free
from .console import CONSOLE

logger = logging.getLogger(__name__)

#: The only address the kept server listens on.
SERVER_HOST = "127.0.0.1"
DEFAULT_SERVER_PORT = 4200
STATE_FILE_NAME = "topicbench-server.json"
LOG_FILE_NAME = "topicbench-server.log"
#: Seconds ``start`` waits for the new server to answer (a fresh PREFECT_HOME migrates its database).
START_SECONDS = 180.0
#: Seconds ``stop`` waits for the server to exit after SIGTERM before it is killed.
STOP_SECONDS = 30.0


class ServerStartError(RuntimeError):
    """The kept Prefect server exited or did not answer in time."""


def prefect_home() -> Path:
    from prefect.settings import PREFECT_HOME

    return Path(PREFECT_HOME.value())


def state_file(home: Path | None = None) -> Path:
    return (home or prefect_home()) / STATE_FILE_NAME


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive, but not our server
        return True
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
            return False
    return True


def answers(api_url: str, timeout: float = 2.0) -> bool:
    """Whether the Prefect API at ``api_url`` answers ``/health``."""
    try:
        with urllib.request.urlopen(api_url.rstrip("/") + "/health", timeout=timeout) as reply:
            return reply.status == 200
    except OSError:
        return False


def read_state(path: Path) -> dict | None:
    """The state file's ``{"api_url", "pid", "port"}``; None when there is none or it is unreadable."""
    try:
        state = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        logger.warning("ignoring the unreadable Prefect server state file %s (%s)", path, error, extra=CONSOLE)
        return None
    if not (isinstance(state, dict) and isinstance(state.get("pid"), int) and isinstance(state.get("api_url"), str)):
        logger.warning("ignoring the Prefect server state file %s: it names no pid and URL", path, extra=CONSOLE)
        return None
    return state


def running_server(home: Path | None = None, timeout: float = 2.0) -> str | None:
    """The API URL of the server ``topicbench server start`` left running, when its process is
    alive and it answers; else None. A state file whose process is gone is removed, with a line."""
    path = state_file(home)
    state = read_state(path)
    if state is None:
        return None
    if not process_alive(state["pid"]):
        logger.warning("ignoring a stale Prefect server state file %s: its server (pid %d) is gone",
                       path, state["pid"], extra=CONSOLE)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return None
    if not answers(state["api_url"], timeout):
        logger.warning("the Prefect server of %s (pid %d) does not answer at %s: not used", path, state["pid"],
                       state["api_url"], extra=CONSOLE)
        return None
    return state["api_url"]


def server_command(port: int) -> list:
    """Prefect's own server (its API, services and UI), on 127.0.0.1 only."""
    return [sys.executable, "-m", "prefect", "server", "start", "--host", SERVER_HOST, "--port", str(port)]


def start_server(port: int = DEFAULT_SERVER_PORT, home: Path | None = None, timeout: float = START_SECONDS) -> dict:
    """Start a Prefect server that outlives this process and record it in the state file; the
    running one when there is one. Returns its state (``api_url``, ``pid``, ``port``, ``log``,
    ``started``: False when it was already running)."""
    home = home or prefect_home()
    running = running_server(home)
    if running is not None:
        return {**read_state(state_file(home)), "started": False}
    check_port_free(port, SERVER_HOST)
    home.mkdir(parents=True, exist_ok=True)
    log = home / LOG_FILE_NAME
    environment = dict(os.environ)
    environment.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    environment.pop("PREFECT_API_URL", None)  # the server is the API: it must not look for another
    with open(log, "ab") as out:
        # a session of its own: Ctrl-C in this terminal later must not stop it
        process = subprocess.Popen(server_command(port), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=environment, start_new_session=True)
    api_url = f"http://{SERVER_HOST}:{port}/api"
    deadline = time.monotonic() + timeout
    while not answers(api_url, 1.0):
        if process.poll() is not None:
            raise ServerStartError(f"the Prefect server exited with status {process.returncode} before answering; "
                                   f"its log: {log}")
        if time.monotonic() > deadline:
            _stop_process(process.pid)
            raise ServerStartError(f"the Prefect server did not answer at {api_url} within {timeout:.0f} s; "
                                   f"its log: {log}")
        time.sleep(0.3)
    state = {"api_url": api_url, "pid": process.pid, "port": port, "log": str(log)}
    state_file(home).write_text(json.dumps(state) + "\n")
    return {**state, "started": True}


def stop_server(home: Path | None = None) -> dict | None:
    """Stop the server of the state file and remove the file; its state, None when none ran."""
    path = state_file(home)
    state = read_state(path)
    if state is None:
        return None
    if process_alive(state["pid"]):
        _stop_process(state["pid"])
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    return state


def _stop_process(pid: int) -> None:
    """SIGTERM to the server's process group (Prefect's server runs its services and uvicorn
    there), then SIGKILL after :data:`STOP_SECONDS`."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped when it is ours (the start that timed out)
        # the whole group gone, not only its leader: a child still exiting holds the port, and a
        # `server start` right after the stop found it in use
        if not process_alive(pid) and not _group_alive(pid):
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)



def _group_alive(group: int) -> bool:
    """Whether any process of the process group ``group`` is left (zombies aside: a zombie's
    parent reaps it, and it holds no port)."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    import psutil

    members = [p for p in psutil.process_iter(["status"]) if _group_of(p) == group]
    return any(p.info["status"] != psutil.STATUS_ZOMBIE for p in members)


def _group_of(process) -> int | None:
    try:
        return os.getpgid(process.pid)
    except OSError:
        return None
