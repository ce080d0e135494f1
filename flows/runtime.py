"""Where flows run: Prefect without a server of the user's, and Dask task runners.

Prefect 3 runs flows without a server by starting a temporary one (its in-process "ephemeral"
mode of Prefect 2 is gone: ``get_client`` starts a uvicorn subprocess). A server that
``topicbench server start`` keeps running (:mod:`.prefect_server`) is used when there is one: no
start to wait for. Dask worker *processes* would each start their own unless ``PREFECT_API_URL``
points at a real one, so unless the user set ``PREFECT_API_URL`` or keeps a server we start one
API server for the whole benchmark (on 127.0.0.1) and hand its URL to the flow and to every worker
through the environment. We start it ourselves, rather than
letting Prefect start its ephemeral one, to wait for it patiently, retry a failed start once, and
tie its life to ours: on Linux it dies with this process even on SIGKILL (``PR_SET_PDEATHSIG``).
Dask's local worker processes already exit when their parent dies. The server starts in a
background thread while the command does work that needs no Prefect API (a new tracking store's
migrations): both take seconds, and they overlap.

``python -m topicbench.flows.runtime --die-with-parent PID -- COMMAND...`` is the guard that
starts the server: it asks the kernel to SIGTERM it when its parent dies, then execs COMMAND.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
import threading
from collections.abc import Callable

from topicbench.core.dask_cluster import local_cluster_options

from .console import CONSOLE
from .prefect_server import running_server

logger = logging.getLogger(__name__)

#: Seconds to wait for the temporary Prefect server unless
#: PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS says otherwise (Prefect's default, 20 s, is
#: too short on a busy machine with a fresh PREFECT_HOME, whose database is migrated first).
SERVER_STARTUP_SECONDS = 120
STARTUP_TIMEOUT_SETTING = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
_PR_SET_PDEATHSIG = 1


class PrefectServerStartError(RuntimeError):
    """The temporary Prefect API server did not start, twice."""


def prefect_defaults() -> None:
    """Quiet, local defaults unless the user set them: no analytics, a patient server start, and
    run logs kept off a temporary server's API."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault(STARTUP_TIMEOUT_SETTING, str(SERVER_STARTUP_SECONDS))
    if not os.environ.get("PREFECT_API_URL"):
        # run logs go to a server of the user's (a lab reads them there, e.g. a served
        # deployment's); a temporary server's would be lost with it
        os.environ.setdefault("PREFECT_LOGGING_TO_API_ENABLED", "false")


@contextlib.contextmanager
def shared_prefect_server(workers_need_it: bool, meanwhile: Callable[[], object] | None = None):
    """The Prefect API the flow (and its Dask worker processes) talk to, for the block.

    The user's ``PREFECT_API_URL`` when set (exported to the environment for worker processes
    when ``workers_need_it``); otherwise a temporary server of ours, stopped when the block ends
    however it ends. Yields the API URL.

    Parameters
    ----------
    workers_need_it : bool
    meanwhile : callable, optional
        Work that needs no Prefect API (preparing the tracking store), done in this thread before
        the block, while a temporary server starts in another.

    Raises
    ------
    PrefectServerStartError
        The temporary server did not answer within PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
        in two tries.
    """
    from prefect.settings import PREFECT_API_URL

    configured = os.environ.get("PREFECT_API_URL") or PREFECT_API_URL.value()
    if configured:
        if meanwhile is not None:
            meanwhile()
        with _environment("PREFECT_API_URL", configured if workers_need_it else os.environ.get("PREFECT_API_URL")):
            yield configured
        return
    kept = running_server()
    if kept is not None:  # `topicbench server start`'s: no temporary server to wait for
        logger.info("using the Prefect server at %s (`topicbench server`)", kept, extra=CONSOLE)
        if meanwhile is not None:
            meanwhile()
        with _pointed_at(kept):
            yield kept
        return
    owner = _start_while(meanwhile or (lambda: None))
    try:
        server = owner.server()
        with _serving(server):
            try:
                yield server.api_url
            finally:
                _drain_prefect_workers()
    finally:
        owner.release()


def start_prefect_server(timeout: float):
    """Start a temporary Prefect API server, waiting up to ``timeout`` s for it; once more on failure.

    Starts are serialised between processes by a lock file in PREFECT_HOME: the first start on a
    fresh PREFECT_HOME migrates its database, which two servers must not do at once.
    """
    from filelock import FileLock
    from prefect.settings import PREFECT_HOME

    home = PREFECT_HOME.value()
    home.mkdir(parents=True, exist_ok=True)
    errors = []
    # on the console: the start takes a while (seconds to minutes on a fresh PREFECT_HOME)
    logger.info("starting a temporary Prefect API server (`topicbench server start` keeps one running for later "
                "commands; to use your own, set PREFECT_API_URL)", extra=CONSOLE)
    for attempt in (1, 2):
        server = _guarded_server_class()()
        try:
            with FileLock(str(home / "topicbench-server-start.lock"), timeout=4 * timeout):
                server.start(timeout=int(timeout))
            logger.info("Prefect API server at %s (pid %s)", server.api_url, server.server_process.pid)
            return server
        except Exception as error:  # noqa: BLE001 (a timeout, a port taken, a lock held): retry once
            server.stop()
            errors.append(f"{type(error).__name__}: {str(error)[:500]}")
            logger.warning("the temporary Prefect server did not start (try %d of 2): %s", attempt, errors[-1])
    raise PrefectServerStartError(
        f"the temporary Prefect API server did not start within {timeout:.0f} s, twice ({errors[-1]}); "
        f"raise {STARTUP_TIMEOUT_SETTING} (now {timeout:.0f}) on a busy machine, or point PREFECT_API_URL "
        f"at a running server (`prefect server start`)"
    )


class _ServerOwner:
    """A temporary server (:func:`start_prefect_server`) started by a thread of its own while the
    caller goes on. The thread stays until :meth:`release` (then stops the server): the kernel's
    die-with-parent signal follows the *thread* that started a process, so a thread that ended
    after the start would take the server down with it."""

    def __init__(self):
        from concurrent.futures import Future

        self._started, self._released = Future(), threading.Event()
        # a daemon: should this process end without release, the server dies with the thread
        self._thread = threading.Thread(target=self._own, name="prefect-server", daemon=True)
        self._thread.start()

    def _own(self) -> None:
        try:
            server = start_prefect_server(_startup_seconds())
        except BaseException as error:  # noqa: BLE001 - handed to the caller by server()
            self._started.set_exception(error)
            return
        self._started.set_result(server)
        self._released.wait()
        server.stop()

    def server(self):
        """The started server (waits for the start); raises what the start raised."""
        return self._started.result()

    def release(self, wait: bool = True) -> None:
        """Stop the server once its start ends (at once when it has), waiting for that if ``wait``."""
        self._released.set()
        if wait:
            self._thread.join()


def _start_while(meanwhile: Callable[[], object]) -> _ServerOwner:
    """A temporary server starting in the background while ``meanwhile()`` runs here, then
    waited for. When ``meanwhile`` fails or is interrupted, the server is stopped as soon as its
    start ends, not waited for (Ctrl-C ends the command at once)."""
    # Prefect's server module imported here first: imported in the thread while ``meanwhile``
    # opens an MLflow store, SQLAlchemy's configure_mappers (global, run by MLflow) would meet
    # Prefect's half-imported ORM models ("expression 'Deployment' failed to locate a name")
    _guarded_server_class()
    owner = _ServerOwner()
    try:
        meanwhile()
        owner.server()
    except BaseException:
        owner.release(wait=False)
        raise
    return owner


def _startup_seconds() -> float:
    try:
        return float(os.environ.get(STARTUP_TIMEOUT_SETTING, SERVER_STARTUP_SECONDS))
    except ValueError:
        return float(SERVER_STARTUP_SECONDS)


@functools.lru_cache(maxsize=1)
def _guarded_server_class():
    """The class of :func:`start_prefect_server`'s servers, made on first use (importing Prefect's
    server is slow): Prefect's temporary server, started through the die-with-parent guard."""
    from prefect.server.api.server import SubprocessASGIServer

    class GuardedPrefectServer(SubprocessASGIServer):
        _instances: dict = {}  # its own registry: apart from the server Prefect would start itself

        def _run_uvicorn_command(self):
            import subprocess

            import prefect
            from prefect.settings import get_current_settings

            # As prefect.server.api.server.SubprocessASGIServer._run_uvicorn_command (Prefect 3.9),
            # prefixed by the guard.
            command = [
                sys.executable, "-m", "uvicorn", "--app-dir", str(prefect.__module_path__.parent),
                "--factory", "prefect.server.api.server:create_app", "--host", "127.0.0.1",
                "--port", str(self.port), "--log-level", "error", "--lifespan", "on",
            ]
            return subprocess.Popen(
                die_with_parent(command),
                env={
                    **os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
                    "PREFECT__SERVER_FINAL": "1",
                    **get_current_settings().to_environment_variables(exclude_unset=True),
                },
                # Out of the terminal's process group: Ctrl-C would stop the server at once, and the
                # flow could then not record its own end (a minute of retries, then ConnectError).
                # This process stops it when the block ends; the guard, when this process dies.
                start_new_session=True,
            )

    return GuardedPrefectServer


def _drain_prefect_workers(seconds: float = 10.0) -> None:
    """Send Prefect's queued events and logs while its server still runs: after an interrupt they
    would otherwise be retried at exit against the stopped server, printing connection errors
    after the command's last line."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (EventsWorker, APILogWorker):
        try:
            worker.drain_all(timeout=seconds)
        except Exception as error:  # noqa: BLE001 (best effort: nothing depends on these)
            logger.debug("draining Prefect's %s failed: %s", worker.__name__, error)


@contextlib.contextmanager
def _serving(server):
    """Point this process's Prefect settings, its environment (for worker processes) and Prefect's
    own default-server slot at ``server`` for the block, so nothing starts a second server."""
    from prefect.server.api.server import SubprocessASGIServer

    previous_default = SubprocessASGIServer._instances.get(None)
    SubprocessASGIServer._instances[None] = server
    try:
        with _pointed_at(server.api_url):
            yield
    finally:
        if previous_default is None:
            SubprocessASGIServer._instances.pop(None, None)
        else:
            SubprocessASGIServer._instances[None] = previous_default


@contextlib.contextmanager
def _pointed_at(api_url: str):
    """This process's Prefect settings and its environment (for worker processes) pointed at
    ``api_url`` for the block."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with _environment("PREFECT_API_URL", api_url), temporary_settings(updates={PREFECT_API_URL: api_url}):
        yield


@contextlib.contextmanager
def _environment(name: str, value: str | None):
    """``os.environ[name] = value`` for the block (unchanged when ``value`` is None)."""
    previous = os.environ.get(name)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


def die_with_parent(command: list) -> list:
    """``command`` run through the guard that ends it when this process dies (Linux; elsewhere
    ``command`` itself)."""
    if not sys.platform.startswith("linux"):
        return list(command)
    return [sys.executable, "-m", "topicbench.flows.runtime", "--die-with-parent", str(os.getpid()), "--", *command]


def _exec_dying_with_parent(parent_pid: int, command: list) -> None:
    """Ask the kernel for SIGTERM when our parent dies (inherited across exec), then exec ``command``."""
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        logger.warning("prctl(PR_SET_PDEATHSIG) failed (errno %d): the server may outlive its parent", ctypes.get_errno())
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        sys.exit(1)
    os.execvp(command[0], command)


def task_runner(workers: int, scheduler: str | None):
    """Dask on an existing scheduler, a local Dask cluster of worker processes, or in-process."""
    if scheduler:
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(address=scheduler)
    if workers > 1:
        from prefect_dask import DaskTaskRunner

        options = local_cluster_options(workers)
        options["preload"] = [*options["preload"], __name__]  # dask_teardown, below, in each worker
        return _patient_local_dask_runner()(cluster_kwargs=options)
    return _interruptible_thread_runner()(max_workers=1)


#: Seconds a local cluster's worker process may take to exit once asked before it is killed.
#: Dask's own close gives it 4 s (its nannies' default), less than a worker process that has
#: imported Prefect, torch and numba takes to finalise on a busy machine: every run then ended with
#: two "distributed.nanny: Worker process still alive after 4.0 seconds, killing".
WORKER_EXIT_SECONDS = 30.0


@functools.lru_cache(maxsize=1)
def _patient_local_dask_runner():
    """prefect-dask's DaskTaskRunner that, before closing the local cluster it started, asks every
    worker process to close and waits up to :data:`WORKER_EXIT_SECONDS` for each to exit (all at
    once), so none is killed; then closes its client and the cluster as before (with no process
    left to stop). A copy of the runner on a worker (Prefect sends it along) holds no cluster:
    there it closes as prefect-dask's does."""
    from prefect_dask import DaskTaskRunner

    class PatientLocalDaskTaskRunner(DaskTaskRunner):
        def __exit__(self, *args):
            cluster = self._cluster if self._client is not None else None
            if cluster is not None and getattr(cluster, "workers", None):
                try:
                    cluster.sync(close_worker_processes, list(cluster.workers.values()), WORKER_EXIT_SECONDS)
                except Exception as error:  # noqa: BLE001 (Dask's own close below still stops them)
                    logger.debug("closing the local workers first failed: %s", error)
            super().__exit__(*args)

    return PatientLocalDaskTaskRunner


async def dask_teardown(worker) -> None:
    """Dask's preload hook, run in each local worker process as it closes: send the events and
    logs Prefect still queues there while the API server runs, off the worker's event loop (where
    Prefect's drain would only return a coroutine); otherwise Prefect sends them at exit and says
    "EventsWorker: Still processing items" on the console after the command's last line. That
    line, which the drain itself logs while it waits, is kept off the console here."""
    import asyncio

    logging.getLogger("EventsWorker").setLevel(logging.ERROR)  # the process is closing: nothing else sends
    await asyncio.get_running_loop().run_in_executor(None, _drain_prefect_workers, 5.0)


async def close_worker_processes(nannies, seconds: float) -> None:
    """Close each of a local cluster's ``nannies`` (its worker process), all at once, giving each
    process ``seconds`` to exit (a nanny waits 80% of its timeout before killing)."""
    import asyncio

    await asyncio.gather(*(nanny.close(timeout=seconds / 0.8, reason="benchmark-done") for nanny in nannies))


@functools.lru_cache(maxsize=1)
def _interruptible_thread_runner():
    """Prefect's ThreadPoolTaskRunner that, when the flow is interrupted, does not wait for the fit
    running in its thread (a thread cannot be stopped; waiting would hold up SIGINT for as long
    as the fit takes). The thread still holds the interpreter's exit: the CLI exits with
    ``os._exit`` after an interrupt, once everything is closed."""
    from prefect.task_runners import ThreadPoolTaskRunner

    class InterruptibleThreadPoolTaskRunner(ThreadPoolTaskRunner):
        def __exit__(self, exc_type, exc_value, traceback):
            if exc_type is not None and not issubclass(exc_type, Exception) and self._executor is not None:
                for event in self._cancel_events.values():
                    event.set()
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = None
            super().__exit__(exc_type, exc_value, traceback)

    return InterruptibleThreadPoolTaskRunner


def uses_worker_processes(workers: int, scheduler: str | None) -> bool:
    return bool(scheduler) or workers > 1


if __name__ == "__main__":
    # python -m topicbench.flows.runtime --die-with-parent PID -- COMMAND...
    if len(sys.argv) < 5 or sys.argv[1] != "--die-with-parent" or sys.argv[3] != "--":
        sys.exit("usage: python -m topicbench.flows.runtime --die-with-parent PID -- COMMAND...")
    _exec_dying_with_parent(int(sys.argv[2]), sys.argv[4:])
