"""Wall time of ``topicbench report``, and of ``topicbench run``'s overhead before its first fit.

In a fresh folder (a new sqlite store; the report folders under it), with ``PREFECT_API_URL``
unset, as a new user runs them:

1. ``topicbench run --no-report`` on the default experiment (the Lee corpus; E-LDA, gensim LDA
   and Gibbs LDA, seed 0; 3 runs). Its overhead before the first fit is the time from the
   command's start to the first fit's claim in the store (a fit is claimed just before it starts);
2. ``topicbench report`` of that experiment (3 runs);
3. ``topicbench report`` of a store of ``--runs`` fit runs (default 117: the 3 runs copied, with
   their metrics, tags and artifacts, as seeds 0, 1, ..., under one benchmark parent whose config
   names those seeds), into an experiment of its own in the same store;
4. ``topicbench ui --no-browser`` on that store: when it printed its URL, when ``/health``
   answered, and its last line once stopped with SIGINT (as Ctrl-C does).

Each figure is printed with the machine's 1-minute load average at its start and end: on a busy
machine, compare figures taken in the same conditions (run the old and the new checkout back to
back, e.g. ``git stash``-free by pointing ``--checkout`` at a second worktree).

    nice .venv/bin/python benchmarks/bench_report.py
    nice .venv/bin/python benchmarks/bench_report.py --runs 117 --repeat 3 --keep /tmp/bench-report
    .venv/bin/python benchmarks/bench_report.py --checkout /tmp/old-topicbench   # the same figures for another tree
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # copy_runs downloads quietly
BIN = Path(sys.executable).parent
DEFAULT_EXPERIMENT = "lee-default"
#: The ``topicbench`` command, importing the package from ``PYTHONPATH`` first: the editable
#: install's finder would otherwise map it to this checkout whatever ``--checkout`` says.
ENTRY_POINT = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in str(f)]; "
               "from topicbench.flows.cli.main import main; sys.exit(main())")


def command_environment(checkout: Path) -> dict:
    """The user's environment without a Prefect server of theirs, importing ``checkout``'s topicbench."""
    env = {name: value for name, value in os.environ.items() if name != "PREFECT_API_URL"}
    env["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    # the tree's package first (the installed one is this checkout, in editable mode: ENTRY_POINT drops it)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_package_parent(checkout)), env.get("PYTHONPATH")]))
    return env


def _package_parent(checkout: Path) -> Path:
    """A folder whose ``topicbench`` package is ``checkout``'s (its four folders linked as the
    sub-packages, as the editable install maps them), for ``PYTHONPATH``."""
    import atexit

    parent = Path(tempfile.mkdtemp(prefix="bench-report-path-"))
    atexit.register(shutil.rmtree, parent, True)  # the links only; the tree stays
    package = parent / "topicbench"
    package.mkdir()
    (package / "__init__.py").symlink_to(checkout / "topicbench" / "__init__.py")
    for name in ("core", "baselines", "tasks", "flows"):
        (package / name).symlink_to(checkout / name)
    return parent


def timed(command: list, folder: Path, env: dict, log: Path) -> tuple:
    """Run ``command`` in ``folder``; its (start as epoch seconds, wall seconds, load before, load
    after, a note: empty, or the exit status and last line of a command that failed)."""
    load_before = os.getloadavg()[0]
    started_epoch, started = time.time(), time.perf_counter()
    with open(log, "a") as out:
        code = subprocess.call(command, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - started
    note = ""
    if code != 0:  # timed all the same: a command that fails late is part of what is measured
        last = log.read_text(errors="replace").strip().splitlines()[-1:]
        note = f"; FAILED, exit {code}: {last[0][:160] if last else ''}"
    return started_epoch, seconds, load_before, os.getloadavg()[0], note


def time_ui(topicbench: list, uri: str, folder: Path, env: dict, log: Path, port: int) -> str:
    """``topicbench ui --no-browser`` on ``uri``: seconds until it printed its URL and until
    ``/health`` answered, then its last line once stopped with SIGINT (as Ctrl-C)."""
    import signal
    import threading
    import urllib.request

    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    ui = subprocess.Popen([*topicbench, "ui", "--tracking-uri", uri, "--port", str(port), "--no-browser"], cwd=folder,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          # SIGINT as a terminal leaves it (a background job's is ignored, and inherited)
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines, printed = [], []

    def read():
        for line in ui.stdout:
            lines.append(line.rstrip())
            if "http://" in line and not printed:
                printed.append(time.perf_counter() - started)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    answered = None
    while answered is None and ui.poll() is None and time.perf_counter() - started < 300:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                answered = time.perf_counter() - started if answer.status == 200 else None
        except OSError:
            time.sleep(0.2)
    ui.send_signal(signal.SIGINT)
    try:
        ui.wait(timeout=60)
    except subprocess.TimeoutExpired:
        ui.kill()
    reader.join(5)
    with open(log, "a") as out:
        out.write("\n".join(lines) + "\n")
    url = f"{printed[0]:.1f} s" if printed else "never"
    health = f"{answered:.1f} s" if answered is not None else "never"
    return (f"ui: URL printed after {url}, /health answered after {health} (load {load_before:.2f} -> "
            f"{os.getloadavg()[0]:.2f}); on Ctrl-C: {lines[-1] if lines else ''!r}")


def time_overhead(topicbench: list, folder: Path, env: dict, log: Path) -> str:
    """``topicbench run --no-report`` on a new store in ``folder``, stopped (SIGTERM) once its
    first fit is claimed: the seconds from the command's start to that claim."""
    import signal

    uri = f"sqlite:///{folder / 'mlflow.db'}"
    load_before = os.getloadavg()[0]
    started_epoch = time.time()
    with open(log, "a") as out:
        run = subprocess.Popen([*topicbench, "run", "--no-report", "--tracking-uri", uri], cwd=folder, env=env,
                               stdout=out, stderr=subprocess.STDOUT)
    claimed = None
    while claimed is None and run.poll() is None and time.time() - started_epoch < 600:
        time.sleep(0.5)
        claimed = first_claim_read_only(folder / "mlflow.db")
    run.send_signal(signal.SIGTERM)
    run.wait(timeout=120)
    if claimed is None:
        return f"run: no fit claimed (exit {run.returncode}; see {log})"
    return (f"run: first fit claimed {claimed - started_epoch:.1f} s after the command started "
            f"(load {load_before:.2f} -> {os.getloadavg()[0]:.2f})")


def first_claim_read_only(database: Path, since: float = 0.0) -> float | None:
    """When the first fit run created after ``since`` (epoch seconds) was claimed, read from the
    sqlite file itself, read only (an MLflow client would create the tables the command is
    creating); None before."""
    import sqlite3

    if not database.exists():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True, timeout=1)) as connection:
            first = connection.execute(
                "SELECT MIN(runs.start_time) FROM runs JOIN tags ON tags.run_uuid = runs.run_uuid "
                "WHERE tags.key = 'topicbench.role' AND tags.value = 'fit' AND runs.start_time >= ?",
                (int(since * 1000),)).fetchone()[0]
    except sqlite3.Error:  # the tables not created yet, or locked for a moment
        return None
    return first / 1000 if first is not None else None


def first_claim_epoch(tracking_uri: str, experiment: str) -> float:
    """When the experiment's first fit run was claimed (epoch seconds)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    runs = client.search_runs([found.experiment_id], "tags.`topicbench.role` = 'fit'")
    if not runs:
        raise LookupError(f"no fit claimed yet in {experiment!r}")
    return min(run.info.start_time for run in runs) / 1000


def copy_runs(tracking_uri: str, source: str, target: str, total: int, folder: Path) -> None:
    """``target``: ``total`` finished fit runs copied from ``source``'s (seeds 0, 1, ...), with their
    metrics, tags and artifacts, under one parent run holding the config with those seeds."""
    from mlflow.entities import Metric, RunTag
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(source)
    fits = client.search_runs([found.experiment_id], "tags.`topicbench.role` = 'fit'")
    parent = client.search_runs([found.experiment_id], "tags.`topicbench.role` = 'benchmark'")[0]
    experiment_id = client.create_experiment(target, artifact_location=(folder / "artifacts" / target).as_uri())
    seeds = list(range(-(-total // len(fits))))
    config = json.loads(Path(client.download_artifacts(parent.info.run_id, "config.json", str(folder))).read_text())
    config.update(seeds=seeds, experiment=target)
    new_parent = client.create_run(experiment_id, tags={**_own_tags(parent.data.tags), "mlflow.runName": "benchmark"})
    client.log_dict(new_parent.info.run_id, config, "config.json")
    client.set_terminated(new_parent.info.run_id)
    downloads = {}
    for number in range(total):
        fit = fits[number % len(fits)]
        seed = seeds[number // len(fits)]
        if fit.info.run_id not in downloads:
            downloads[fit.info.run_id] = client.download_artifacts(fit.info.run_id, "", str(folder / fit.info.run_id))
        tags = {**_own_tags(fit.data.tags), "seed": str(seed), "mlflow.parentRunId": new_parent.info.run_id,
                "topicbench.run_key": f"{fit.data.tags.get('topicbench.run_key')}-{seed}"}
        run = client.create_run(experiment_id, tags=tags)
        now = int(time.time() * 1000)
        metrics = [Metric(name, value, now, 0) for name, value in fit.data.metrics.items() if name != "training_loss"]
        if "training_loss" in fit.data.metrics:
            metrics += client.get_metric_history(fit.info.run_id, "training_loss")
        client.log_batch(run.info.run_id, metrics=metrics,
                         tags=[RunTag("seed", str(seed))])
        client.log_artifacts(run.info.run_id, downloads[fit.info.run_id])
        client.set_terminated(run.info.run_id)


def _own_tags(tags: dict) -> dict:
    """A run's tags without those MLflow sets for the run itself."""
    return {name: value for name, value in tags.items() if name not in ("mlflow.parentRunId", "mlflow.runName")}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=117, help="fit runs of the large store's experiment")
    parser.add_argument("--repeat", type=int, default=1, help="reports timed per store (the median is printed too)")
    parser.add_argument("--keep", help="work in this folder and keep it (default: a temporary one, removed)")
    parser.add_argument("--checkout", default=str(CHECKOUT), help="the topicbench tree to time (default: this one)")
    parser.add_argument("--ui-port", type=int, default=5077, help="the port the timed `topicbench ui` listens on")
    parser.add_argument("--overhead-only", type=int, metavar="N", default=0,
                        help="only time N times `run`'s overhead before its first fit (each on a new store, "
                        "stopped once its first fit is claimed)")
    parser.add_argument("--reports-only", action="store_true",
                        help="time only the reports, of the stores already in --keep (from an earlier call)")
    args = parser.parse_args(argv)

    folder = Path(args.keep or tempfile.mkdtemp(prefix="bench-report-")).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    env = command_environment(Path(args.checkout).resolve())
    topicbench = [sys.executable, "-c", ENTRY_POINT]
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    log = folder / "commands.log"
    print(f"checkout {args.checkout}; store {uri}; {os.cpu_count()} CPUs; log {log}")
    try:
        for attempt in range(args.overhead_only):
            store = folder / f"overhead-{attempt}-{os.getpid()}"
            store.mkdir()
            print(time_overhead(topicbench, store, env, log), flush=True)
        if args.overhead_only:
            return
        large = f"{DEFAULT_EXPERIMENT}-{args.runs}"
        if not args.reports_only:
            started, seconds, before, after, note = timed([*topicbench, "run", "--no-report", "--tracking-uri", uri],
                                                          folder, env, log)
            overhead = first_claim_epoch(uri, DEFAULT_EXPERIMENT) - started
            print(f"run (3 fits): {seconds:.1f} s wall, {overhead:.1f} s before the first fit's claim "
                  f"(load {before:.2f} -> {after:.2f}){note}")
            copy_runs(uri, DEFAULT_EXPERIMENT, large, args.runs, folder)
        for experiment, runs in ((DEFAULT_EXPERIMENT, 3), (large, args.runs)):
            walls = []
            for attempt in range(args.repeat):
                command = [*topicbench, "report", "--experiment", experiment, "--tracking-uri", uri,
                           "--out", str(folder / "results" / experiment)]
                _, seconds, before, after, note = timed(command, folder, env, log)
                walls.append(seconds)
                print(f"report ({runs} runs) #{attempt + 1}: {seconds:.1f} s wall (load {before:.2f} -> {after:.2f}){note}")
            print(f"report ({runs} runs): median {statistics.median(walls):.1f} s over {len(walls)}")
        print(time_ui(topicbench, uri, folder, env, log, args.ui_port))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
