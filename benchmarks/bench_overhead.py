"""The time around the fits, each figure against its budget (issue 49): start-up, report, ui, export.

Parts (``--parts``, default all but the paper store's):

* ``startup``: ``topicbench run --no-report`` on a new store, stopped once its first fit is claimed
  (a fit's run is created in the store just before it starts). Wall seconds from the command's
  start to that claim, and the CPU seconds its whole process tree (the command, a Prefect server
  it started, Dask workers) had used by then. Budget: 3 s CPU, 5 s wall on an idle machine.
* ``report``: ``topicbench report`` at 3 runs (the default experiment), 15 runs (5 models x 3
  seeds on the Lee corpus) and 117 runs (``--paper-store``), into a new folder each time (a cold
  plot cache). CPU seconds are the command's and its children's (``RUSAGE_CHILDREN``). Budgets:
  2 s CPU, 4 s CPU, 10 s wall.
* ``ui``: ``topicbench ui --no-browser`` until ``/health`` answers. Budget: 8 s idle, 15 s at load.
* ``export``: ``topicbench export`` of the 15-run store into a new folder (no budget of its own
  for a store whose stability is scored: the issue's 60 s is for the paper's runs, unscored).

The 3- and 15-run stores are built once into ``--cache`` (minutes: real fits) and reused. The
117-run figure needs a store holding the paper's runs: ``$TOPICBENCH_BENCH_PAPER_STORE`` (a
tracking URI, its experiment named by ``--paper-experiment``), or ``--parts paper-import`` once,
which imports the committed bundle ``results/paper/bundle`` into the cache (it holds about 92 fit
runs, not 117: the figure says how many it read).

Every line carries the machine's 1-minute load average before and after: budgets are for an idle
machine; at load, compare figures taken back to back.

    nice .venv/bin/python benchmarks/bench_overhead.py --parts startup ui
    .venv/bin/python benchmarks/bench_overhead.py --cache ~/.cache/topicbench-bench --repeat 3
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_report import ENTRY_POINT, command_environment, first_claim_read_only  # noqa: E402

CHECKOUT = Path(__file__).resolve().parents[1]
PARTS = ("startup", "report", "ui", "export", "paper-import")
DEFAULT_PARTS = ("startup", "report", "ui", "export")
#: The 15-run store: five quick models, three seeds, the built-in corpus.
SMALL_CONFIG = """experiment: overhead-15
corpora: [{name: lee, source: lee}]
models:
  - {model: elda}
  - {model: gensim_lda, num_topics: 20}
  - {model: gibbs_lda, num_topics: 20}
  - {model: nmf, num_topics: 20}
  - {model: lsi, num_topics: 20}
seeds: [0, 1, 2]
"""
BUDGETS = {"startup_cpu": 3.0, "startup_wall": 5.0, "report_3_cpu": 2.0, "report_15_cpu": 4.0,
           "report_117_wall": 10.0, "ui_idle": 8.0, "ui_load": 15.0, "export_paper": 60.0}


def load() -> float:
    return os.getloadavg()[0]


def against(seconds: float | None, budget: float) -> str:
    if seconds is None:
        return f"never (budget {budget:g} s)"
    return f"{seconds:.1f} s (budget {budget:g} s: {'within' if seconds <= budget else 'OVER'})"


def tree_cpu_seconds(process) -> float:
    """CPU seconds (user + system) of ``process`` and its live descendants, and of the children
    they have already waited for."""
    import psutil

    total = 0.0
    for member in [process, *process.children(recursive=True)]:
        try:
            times = member.cpu_times()
        except psutil.Error:  # ended between the listing and the read
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def time_startup(topicbench: list, folder: Path, env: dict, log: Path, extra: tuple = ()) -> tuple:
    """``topicbench run --no-report [extra]`` on the store in ``folder`` (a new one when there is
    none) until its first fit's claim: (wall seconds, CPU seconds of its process tree), both None
    when no fit was claimed."""
    import psutil

    started = time.time()
    with open(log, "a") as out:
        run = psutil.Popen([*topicbench, "run", "--no-report", "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}",
                            *extra], cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    wall = cpu = None
    while run.poll() is None and time.time() - started < 600:
        cpu_now = tree_cpu_seconds(run)  # read before the claim check: the CPU spent up to it
        claimed = first_claim_read_only(folder / "mlflow.db", started)
        if claimed is not None:
            wall, cpu = claimed - started, cpu_now
            break
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(run.pid, signal.SIGTERM)
    try:
        run.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
    return wall, cpu


def timed_command(command: list, folder: Path, env: dict, log: Path) -> tuple:
    """(wall seconds, CPU seconds of the command and its children, a note on failure)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with open(log, "a") as out:
        code = subprocess.call(command, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    note = "" if code == 0 else f"; FAILED, exit {code} (see {log})"
    return wall, cpu, note


def ensure_store(topicbench: list, cache: Path, env: dict, log: Path, name: str, config: str | None) -> str:
    """The tracking URI of a cached store holding a finished benchmark (``config``'s; None: the
    default experiment's), built on first use."""
    store = cache / name
    done = store / "built"
    if not done.exists():
        shutil.rmtree(store, ignore_errors=True)
        store.mkdir(parents=True)
        command = [*topicbench, "run", "--no-report", "--tracking-uri", f"sqlite:///{store / 'mlflow.db'}"]
        if config is not None:
            (store / "config.yaml").write_text(config)
            command.append(str(store / "config.yaml"))
        print(f"building the {name} store (real fits, once) ...", flush=True)
        wall, _, note = timed_command(command, store, env, log)
        if note:
            raise SystemExit(f"building the {name} store failed{note}")
        done.write_text(f"{wall:.1f} s\n")
    return f"sqlite:///{store / 'mlflow.db'}"


def start_kept_server(topicbench: list, cache: Path, env: dict, log: Path) -> bool:
    """``topicbench server start`` in the bench's PREFECT_HOME; whether this call started it."""
    wall, cpu, note = timed_command([*topicbench, "server", "start", "--port", "4277"], cache, env, log)
    if note:
        raise SystemExit(f"`topicbench server start` failed{note}")
    print(f"server start (once): {wall:.1f} s wall, {cpu:.1f} s CPU", flush=True)
    return True


def fit_runs(uri: str, experiment: str) -> int:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise SystemExit(f"no experiment {experiment!r} in {uri}")
    return len(client.search_runs([found.experiment_id], "tags.`topicbench.role` = 'fit'", max_results=5000))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(DEFAULT_PARTS), help="what to time")
    parser.add_argument("--stores", nargs="+", choices=("3", "15", "117"), default=["3", "15", "117"],
                        help="the stores whose report (and export) is timed (117: when a paper store is there)")
    parser.add_argument("--repeat", type=int, default=1, help="times each figure is taken (median printed)")
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "topicbench-bench-overhead"),
                        help="folder of the stores built once and reused")
    parser.add_argument("--checkout", default=str(CHECKOUT), help="the topicbench tree to time (default: this one)")
    parser.add_argument("--paper-experiment", default="paper", help="the paper store's experiment")
    parser.add_argument("--profile", metavar="DIR",
                        help="write each report's cProfile statistics to DIR/report-SIZE-N.prof "
                        "(`topicbench --profile`; its figures then include the profiler's overhead)")
    parser.add_argument("--ui-port", type=int, default=5078)
    parser.add_argument("--existing-store", action="store_true",
                        help="time the start-up on a copy of the 3-run store (a new seed to fit), not on a new store "
                        "(whose database a run creates first)")
    parser.add_argument("--kept-server", action="store_true",
                        help="time the start-up with a `topicbench server` running (started here, stopped after)")
    args = parser.parse_args(argv)

    from bench_report import time_ui

    cache = Path(args.cache).resolve()
    cache.mkdir(parents=True, exist_ok=True)
    env = command_environment(Path(args.checkout).resolve())
    # a PREFECT_HOME of its own: its kept server is no other process's, its database migrated once
    env["PREFECT_HOME"] = str(cache / "prefect-home")
    topicbench = [sys.executable, "-c", ENTRY_POINT]
    log = cache / "commands.log"
    scratch = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    loads = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"checkout {args.checkout}; {os.cpu_count()} CPUs; load average {loads}; "
          f"cache {cache}; log {log}", flush=True)
    try:
        if "paper-import" in args.parts:
            store = cache / "paper"
            store.mkdir(exist_ok=True)
            wall, cpu, note = timed_command([*topicbench, "import", str(CHECKOUT / "results" / "paper" / "bundle"),
                                             "--tracking-uri", f"sqlite:///{store / 'mlflow.db'}"], store, env, log)
            print(f"paper-import: {wall:.1f} s wall, {cpu:.1f} s CPU{note}", flush=True)
        stores = []  # built before the start-up is timed: their first fit migrates PREFECT_HOME's database
        if {"report", "export", "ui"} & set(args.parts) or args.existing_store:
            stores.append(("3", ensure_store(topicbench, cache, env, log, "default-3", None), "lee-default"))
        if {"report", "export"} & set(args.parts):
            if "15" in args.stores:
                small = ensure_store(topicbench, cache, env, log, "small-15", SMALL_CONFIG)
                stores.append(("15", small, "overhead-15"))
            paper = os.environ.get("TOPICBENCH_BENCH_PAPER_STORE") or (
                f"sqlite:///{cache / 'paper' / 'mlflow.db'}" if (cache / "paper" / "mlflow.db").exists() else None)
            if paper and "117" in args.stores:
                stores.append(("117", paper, args.paper_experiment))
        if "startup" in args.parts:
            kept = start_kept_server(topicbench, cache, env, log) if args.kept_server else False
            walls, cpus = [], []
            for attempt in range(args.repeat):
                folder = scratch / f"startup-{attempt}"
                folder.mkdir()
                extra = ()
                if args.existing_store:  # the default store copied, and a seed it has not fitted
                    shutil.copy(Path(stores[0][1].removeprefix("sqlite:///")), folder / "mlflow.db")
                    extra = ("--seeds", str(1000 + attempt))
                before = load()
                wall, cpu = time_startup(topicbench, folder, env, log, extra)
                kind = ", ".join(filter(None, ["kept server" if args.kept_server else "",
                                               "existing store" if args.existing_store else "new store"]))
                print(f"startup ({kind}) #{attempt + 1}: wall "
                      f"{against(wall, BUDGETS['startup_wall'])}, CPU {against(cpu, BUDGETS['startup_cpu'])} "
                      f"(load {before:.2f} -> {load():.2f})", flush=True)
                if wall is not None:
                    walls.append(wall)
                    cpus.append(cpu)
            if len(walls) > 1:
                print(f"startup: median wall {statistics.median(walls):.1f} s, CPU {statistics.median(cpus):.1f} s")
            if kept:
                timed_command([*topicbench, "server", "stop"], cache, env, log)
        if "report" in args.parts:
            for size, uri, experiment in stores:
                runs = fit_runs(uri, experiment)
                for attempt in range(args.repeat):
                    before = load()
                    profiled = []
                    if args.profile:
                        Path(args.profile).mkdir(parents=True, exist_ok=True)
                        profiled = ["--profile", str(Path(args.profile).resolve() / f"report-{size}-{attempt + 1}.prof")]
                    wall, cpu, note = timed_command([*topicbench, *profiled, "report", "--experiment", experiment,
                                                     "--tracking-uri",
                                                     uri, "--out", str(scratch / f"report-{size}-{attempt}")],
                                                    scratch, env, log)
                    budget = (f"wall {against(wall, BUDGETS['report_117_wall'])}, CPU {cpu:.1f} s" if size == "117"
                              else f"wall {wall:.1f} s, CPU {against(cpu, BUDGETS[f'report_{size}_cpu'])}")
                    print(f"report {size} ({runs} fit runs) #{attempt + 1}: {budget} (load {before:.2f} -> "
                          f"{load():.2f}){note}", flush=True)
        if "ui" in args.parts:
            uri = stores[0][1]
            for attempt in range(args.repeat):
                before = load()
                line = time_ui(topicbench, uri, scratch, env, log, args.ui_port + attempt)  # a port not just closed
                budget = BUDGETS["ui_idle"] if before < (os.cpu_count() or 1) else BUDGETS["ui_load"]
                print(f"{line}; budget {budget:g} s at load {before:.2f}", flush=True)
        if "export" in args.parts:
            for size, uri, experiment in stores[1:]:
                before = load()
                wall, cpu, note = timed_command([*topicbench, "export", "--experiment", experiment, "--tracking-uri",
                                                 uri, "--out", str(scratch / f"bundle-{size}")], scratch, env, log)
                limit = f" {against(wall, BUDGETS['export_paper'])}" if size == "117" else f" {wall:.1f} s"
                print(f"export {size}: wall{limit}, CPU {cpu:.1f} s (load {before:.2f} -> {load():.2f}){note}",
                      flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
