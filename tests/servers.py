"""Real servers for the tests, started as a team runs them: MLflow's tracking server, Prefect's API
server, and a Dask scheduler with its workers.

Each is a real process on 127.0.0.1 and a free port, started in a session of its own so that it
and every process it starts (uvicorn and gunicorn workers, Dask nannies) form one process group,
and stopped by that process id: SIGTERM to the group, then SIGKILL to what is left. Test modules
import the fixtures they use (``from servers import mlflow_server``); ``tests/`` is on
``sys.path`` (see ``conftest.py``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

#: Seconds a server may take to answer after its start: generous, for a loaded 2-core machine
#: (a fresh MLflow database is migrated first, ~30 s there; Prefect's likewise).
START_SECONDS = 300.0
#: Seconds between SIGTERM to a server's process group and SIGKILL to what is left of it.
STOP_GRACE_SECONDS = 20.0


def command_of(name: str) -> str:
    """The console script ``name`` of the virtualenv running the tests (mlflow, prefect, dask)."""
    return str(Path(sys.executable).with_name(name))


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Server:
    """A running server process (the leader of its own process group) and where it logs."""

    process: subprocess.Popen
    log: Path
    url: str = ""
    extra: dict = field(default_factory=dict)

    def log_tail(self, characters: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-characters:]
        except OSError:
            return "(no log)"

    def group_pids(self) -> list:
        """The pids of the server's process group still running (the leader included)."""
        import psutil

        pids = []
        for process in psutil.process_iter(["pid"]):
            # A process may exit between the listing and the look-up: gone, so not in the group.
            with contextlib.suppress(psutil.Error, ProcessLookupError):
                if os.getpgid(process.pid) == self.process.pid and process.status() != psutil.STATUS_ZOMBIE:
                    pids.append(process.pid)
        return pids


def start_server(command: list, log: Path, env: dict | None = None, cwd: Path | None = None) -> Server:
    """Start ``command`` in a session (and process group) of its own, its output into ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=cwd,
            start_new_session=True,
        )
    return Server(process, log)


def stop_server(server: Server, grace_seconds: float = STOP_GRACE_SECONDS) -> None:
    """SIGTERM the server's process group; SIGKILL the group if anything is left after the grace.

    Afterwards no process of the group runs (asserted, with the log, if one survived SIGKILL)."""
    pgid = server.process.pid
    for signal_number in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal_number)
        deadline = time.monotonic() + grace_seconds
        while time.monotonic() < deadline:
            server.process.poll()
            if not server.group_pids():
                return
            time.sleep(0.2)
    assert not server.group_pids(), f"{server.process.args[:3]} outlived SIGKILL:\n{server.log_tail()}"


def wait_until(ready, server: Server, what: str, seconds: float = START_SECONDS) -> None:
    """Poll ``ready()`` until it is true; fail naming ``what`` (with the server's log) if the
    server exits first or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while not ready():
        if server.process.poll() is not None:
            raise AssertionError(f"{what} exited with {server.process.returncode}:\n{server.log_tail()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not answer within {seconds:.0f} s:\n{server.log_tail()}")
        time.sleep(0.5)


def answers(url: str) -> bool:
    """Whether GET ``url`` answers 200."""
    import requests

    try:
        return requests.get(url, timeout=5).status_code == 200
    except requests.RequestException:
        return False


# -- the servers ------------------------------------------------------------------------------


@contextlib.contextmanager
def running_mlflow_server(folder: Path):
    """``mlflow server`` on a sqlite database and an artifact folder in ``folder``; yields the
    Server, ``url`` its tracking URI and ``extra["artifacts"]`` the artifact folder."""
    port = free_port()
    artifacts = folder / "artifacts"
    command = [
        command_of("mlflow"), "server", "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
        "--artifacts-destination", str(artifacts), "--host", "127.0.0.1", "--port", str(port), "--workers", "2",
    ]
    server = start_server(command, folder / "mlflow-server.log", cwd=folder)
    try:
        server.url, server.extra["artifacts"] = f"http://127.0.0.1:{port}", artifacts
        wait_until(lambda: answers(server.url + "/health"), server, "mlflow server")
        yield server
    finally:
        stop_server(server)


def prefect_server_env(home: Path) -> dict:
    """The environment of a Prefect server with its own PREFECT_HOME (no other PREFECT_ setting)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_UI_ENABLED="false")
    return env


@contextlib.contextmanager
def running_prefect_server(folder: Path):
    """``prefect server start`` with its own PREFECT_HOME in ``folder``; yields the Server, whose
    ``url`` is its API URL (``http://127.0.0.1:PORT/api``, for PREFECT_API_URL)."""
    port = free_port()
    command = [command_of("prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    server = start_server(command, folder / "prefect-server.log", env=prefect_server_env(folder / "home"), cwd=folder)
    try:
        server.url = f"http://127.0.0.1:{port}/api"
        wait_until(lambda: answers(server.url + "/health"), server, "prefect server")
        yield server
    finally:
        stop_server(server)


@contextlib.contextmanager
def running_dask_cluster(folder: Path, env: dict, n_workers: int = 2):
    """``dask scheduler`` and ``n_workers`` ``dask worker`` processes (one thread each), every one
    with ``env``; yields the scheduler's Server, whose ``url`` is its address and
    ``extra["workers"]`` the workers' Servers, once every worker has joined."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    scheduler = start_server(
        [command_of("dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        folder / "dask-scheduler.log", env=env, cwd=folder,
    )
    scheduler.url, workers = address, []
    scheduler.extra["workers"] = workers
    try:
        wait_until(lambda: _accepts(port), scheduler, "dask scheduler")
        for index in range(n_workers):
            workers.append(start_server(
                [command_of("dask"), "worker", address, "--nthreads", "1", "--nworkers", "1", "--no-dashboard",
                 "--host", "127.0.0.1", "--local-directory", str(folder / f"worker{index}")],
                folder / f"dask-worker{index}.log", env=env, cwd=folder,
            ))
        wait_until(lambda: _worker_count(address) >= n_workers, scheduler, f"{n_workers} dask workers joining")
        yield scheduler
    finally:
        for worker in workers:
            stop_server(worker)
        stop_server(scheduler)


def _accepts(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _worker_count(address: str) -> int:
    from distributed import Client

    with Client(address, timeout="10s") as client:
        return len(client.scheduler_info(n_workers=-1)["workers"])


def worker_addresses(address: str) -> set:
    """The addresses of the workers of the scheduler at ``address``."""
    from distributed import Client

    with Client(address, timeout="10s") as client:
        return set(client.scheduler_info(n_workers=-1)["workers"])


# -- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    """A real MLflow tracking server for the module's tests (see :func:`running_mlflow_server`)."""
    with running_mlflow_server(tmp_path_factory.mktemp("mlflow-server")) as server:
        yield server


@pytest.fixture(scope="module")
def prefect_api(tmp_path_factory):
    """A real Prefect API server for the module's tests (see :func:`running_prefect_server`)."""
    with running_prefect_server(tmp_path_factory.mktemp("prefect-server")) as server:
        yield server


@pytest.fixture
def dask_cluster(tmp_path, prefect_api):
    """A real Dask scheduler and two workers whose PREFECT_API_URL is :func:`prefect_api`'s (a
    worker process would otherwise start a temporary Prefect server of its own)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_API_URL=prefect_api.url, PREFECT_HOME=str(tmp_path / "worker-prefect"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    with running_dask_cluster(tmp_path / "dask", env) as scheduler:
        yield scheduler
