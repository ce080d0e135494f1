"""topicbench ui: MLflow's UI on 127.0.0.1, opened on the runs of an experiment.

MLflow 3's UI lands on its GenAI overview (traces, latency, token cost), where a benchmark's runs
do not show; the runs view of an experiment, with ``workflowType=machine_learning`` in the URL,
opens straight on the runs table (an experiment tag alone does not change the landing view). The
command prints that URL once the server answers it, and opens it in a browser where a graphical
one is available.

The server is MLflow's with one worker process and no job runner (``mlflow server`` starts four
workers and a job runner by default, each importing MLflow: on a 2-core machine the URL answered
about a minute after the command started, for one reader of a local store).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time

from topicbench.core.validation import InputError
from topicbench.flows.checks import check_port_free, experiment_name, port_number
from topicbench.flows.cli.common import require_existing_store, require_experiment, tracking_uri
from topicbench.flows.config.model import DEFAULT_TRACKING_URI

logger = logging.getLogger("topicbench")

#: The only address the UI listens on: it shows every tracked run and has no login.
UI_HOST = "127.0.0.1"
DEFAULT_UI_PORT = 5000
#: How long the server may take to answer before the command prints the URL with a warning instead.
UI_START_SECONDS = 60.0
#: The one worker process serving the UI, and no MLflow job runner (jobs are GenAI evaluations).
UI_SERVER_OPTIONS = ("--workers", "1")
UI_SERVER_ENVIRONMENT = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
#: Runs a topicbench command made (benchmark, fit, search, calibration): each carries this tag.
TOPICBENCH_RUNS_FILTER = "tags.`topicbench.role` LIKE '%'"


def add_ui_command(commands) -> None:
    """The ``ui`` sub-command and its options."""
    ui = commands.add_parser(
        "ui", help="open the MLflow UI on 127.0.0.1, on the runs of an experiment",
        description="Start MLflow's UI on the tracking store, on 127.0.0.1 only, and print the URL of an experiment's "
        "runs view (MLflow 3 otherwise lands on its GenAI overview, where the runs do not show); open it in a "
        "browser where a graphical one is available. Ctrl-C stops the server.",
    )
    ui.add_argument("--tracking-uri", help=f"MLflow tracking URI (default: {DEFAULT_TRACKING_URI})")
    ui.add_argument("--experiment", type=experiment_name, metavar="NAME",
                    help="the experiment whose runs the URL opens on (default: the most recently created experiment "
                    "holding topicbench runs; none: the list of experiments)")
    ui.add_argument("--port", type=port_number, default=DEFAULT_UI_PORT, help="the port on 127.0.0.1 the UI listens on")
    ui.add_argument("--no-browser", dest="browser", action="store_false",
                    help="only print the URL; do not open a browser (none is opened without a display anyway)")
    ui.set_defaults(handler=run_ui_command)


def run_ui_command(args) -> int:
    uri = tracking_uri(args.tracking_uri)
    require_existing_store(uri)
    check_port_free(args.port, UI_HOST)
    # started first: its start (MLflow imported twice, by its command and its worker) is most of
    # the wait, and overlaps this process's own import of MLflow, its choice of experiment and view
    server = start_ui_server(uri, args.port)
    try:
        experiment = ui_experiment(uri, args.experiment)
        view = shared_runs_view(uri, experiment) if experiment is not None else None
        url = runs_view_url(args.port, experiment.experiment_id if experiment is not None else None, view)
        answering = wait_until_answering(server, args.port)
        if not answering and server.poll() is not None:
            raise UIServerError(f"MLflow's UI server exited with status {server.returncode} before answering on "
                                f"{UI_HOST}:{args.port}; its messages are above")
        print(ui_ready_line(uri, experiment, url, answering))
        if answering and args.browser and browser_available():
            open_in_browser(url)
        return server.wait()
    except KeyboardInterrupt:  # Ctrl-C (or SIGTERM): the ordinary way to stop the UI, not a failure
        pass
    finally:
        stop_process_group(server)
    print(f"stopped the MLflow UI on {UI_HOST}:{args.port}", file=sys.stderr)
    return 0


class UIServerError(InputError):
    """MLflow's UI server ended before it answered (e.g. a store it cannot open)."""


def ui_ready_line(uri: str, experiment, url: str, answering: bool) -> str:
    """The line that gives the URL: printed once the server answers it (else with a warning)."""
    where = (f"the runs of experiment {experiment.name!r} at {url}" if experiment is not None
             else f"{url}: no experiment holds topicbench runs yet")
    late = "" if answering else f" (not answering after {UI_START_SECONDS:.0f} s: it may still be starting)"
    return f"MLflow UI for {uri}: {where}{late} (Ctrl-C stops it)"


def runs_view_url(port: int, experiment_id: str | None, view: str | None = None, host: str = UI_HOST) -> str:
    """The URL of the MLflow UI's runs view of experiment ``experiment_id`` (the list of
    experiments when None), opening on the shared table view ``view`` where one is given."""
    experiments = f"http://{host}:{port}/#/experiments"
    if experiment_id is None:
        return experiments
    shared = f"&viewStateShareKey={view}" if view else ""
    return f"{experiments}/{experiment_id}/runs?workflowType=machine_learning{shared}"


def shared_runs_view(uri: str, experiment) -> str | None:
    """Write the experiment's runs view, with the scores its benchmark's config asked for and the
    key metrics as columns
    (:func:`~topicbench.tasks.store.runs_view.share_runs_view`); its key, or None where the store does
    not take it (the plain runs view then, with a warning)."""
    from mlflow.tracking import MlflowClient

    from topicbench.tasks.results.store import collect_config
    from topicbench.tasks.store.runs_view import share_runs_view
    from topicbench.tasks.store.claims import FIT_ROLE, ROLE_TAG
    from topicbench.tasks.store.filters import runs_filter

    try:
        requested = (collect_config(uri, experiment.name) or {}).get("metrics") or ()
        return share_runs_view(MlflowClient(uri), experiment.experiment_id,
                               fit_filter=runs_filter({ROLE_TAG: FIT_ROLE}), requested=requested)
    except Exception as error:  # noqa: BLE001 - the runs view opens without it
        logger.warning("the runs view with the key metrics as columns was not saved (%s); the UI opens on its default "
                       "columns", error)
        return None


def ui_experiment(uri: str, name: str | None):
    """The experiment the UI opens on: ``name``'s (an error when the store has none of that
    name), else the most recently created one holding topicbench runs, else None."""
    if name:
        return require_experiment(uri, name)
    from mlflow.tracking import MlflowClient

    return latest_topicbench_experiment(MlflowClient(uri))


def latest_topicbench_experiment(client):
    """The most recently created active experiment holding a run that topicbench made, or None."""
    for experiment in client.search_experiments(order_by=["creation_time DESC"]):
        if client.search_runs([experiment.experiment_id], TOPICBENCH_RUNS_FILTER, max_results=1):
            return experiment
    return None


def start_ui_server(uri: str, port: int) -> subprocess.Popen:
    """``mlflow ui`` on ``uri``, listening on 127.0.0.1:``port``, in a session of its own: the
    server and its workers form one process group, taken down together (:func:`stop_process_group`)."""
    # `mlflow ui` whose web server runs in its own process, not in a second one that imports MLflow again
    return subprocess.Popen(
        [sys.executable, "-m", "topicbench.flows.ui_server", "--backend-store-uri", uri, "--host", UI_HOST,
         "--port", str(port), *UI_SERVER_OPTIONS],
        env={**os.environ, **UI_SERVER_ENVIRONMENT}, start_new_session=True,
    )


def browser_available() -> bool:
    """Whether a graphical browser can be opened. Without a display (an SSH session, a container)
    Python's ``webbrowser`` falls back on a text-mode browser (lynx, w3m), which would take over
    the terminal the server logs to; so does a display whose only browser is one of those."""
    import webbrowser

    if sys.platform not in ("darwin", "win32") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return False
    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return False
    return type(browser) is not webbrowser.GenericBrowser  # GenericBrowser: a console one, run in the foreground


def wait_until_answering(server: subprocess.Popen, port: int, timeout: float = UI_START_SECONDS) -> bool:
    """Whether the server answers ``/health`` on 127.0.0.1:``port`` within ``timeout`` seconds
    (False at once when it has exited). A port that listens is not enough: a URL followed before
    the app has loaded shows an error page."""
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while server.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://{UI_HOST}:{port}/health", timeout=2.0) as answer:
                if answer.status == 200:
                    return True
        except (urllib.error.URLError, OSError):  # not listening yet, or not ready
            pass
        time.sleep(0.25)
    return False


def open_in_browser(url: str) -> None:
    """Open ``url`` in the user's browser; a browser that fails is logged, never the command's failure."""
    import webbrowser

    try:
        webbrowser.open(url)
    except Exception as error:  # noqa: BLE001 - the URL is printed already
        logger.warning("could not open a browser (%s: %s); open %s", type(error).__name__, error, url)


def stop_process_group(process, grace_seconds: float = 10.0) -> None:
    """SIGTERM the process's group, then SIGKILL what is left after ``grace_seconds``."""
    import signal

    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, signum)
        except (ProcessLookupError, PermissionError):
            return
        try:
            process.wait(timeout=grace_seconds)
        except subprocess.TimeoutExpired:
            continue
        # the leader is gone; its workers may not be yet
        deadline = time.monotonic() + grace_seconds
        while time.monotonic() < deadline:
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
