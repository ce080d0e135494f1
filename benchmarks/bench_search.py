"""A search's wall time on one worker against two, in one invocation, and its shared-work counts.

Each side runs ``topicbench search CONFIG`` in a fresh folder (a new sqlite store and study
storage, so each side fits every trial) and times the whole command:

- ``1``: one Dask worker process (``--workers 1`` runs fits in the flow's process; this side
  uses a real ``dask scheduler`` with one ``dask worker`` so that both sides pay the same
  scheduling and serialisation);
- ``2``: the same scheduler with two ``dask worker`` processes (one thread each).

Both sides run against a real scheduler on 127.0.0.1, started here and stopped afterwards, with
``PREFECT_API_URL`` pointing at one Prefect server started here too (worker processes would
otherwise each start a temporary one). Printed per side: wall seconds of the command, the trials
told, fits run, and how many fits built the corpus's metric context; then the speed-up. The
chosen settings of both sides must agree (same seeds, same fits).

    nice .venv/bin/python benchmarks/bench_search.py                          # examples/search-speed.yaml
    nice .venv/bin/python benchmarks/bench_search.py --config my-study.yaml --sides 2
    nice .venv/bin/python benchmarks/bench_search.py --config my-study.yaml --sides 2 --kill-after 1200   # resume
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.5)
    raise SystemExit(f"nothing listens on 127.0.0.1:{port} after {seconds:.0f} s")


@contextlib.contextmanager
def started(command: list, env: dict, log: Path):
    """A background process for the block, stopped (then killed) after it."""
    with open(log, "w") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def prefect_server(scratch: Path, env: dict):
    port = free_port()
    server = started([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                     env, scratch / "prefect-server.log")
    return port, server


def run_side(workers: int, args, scratch: Path, env: dict) -> dict:
    """``topicbench search`` on a real scheduler with ``workers`` worker processes; its figures."""
    folder = scratch / f"workers-{workers}"
    folder.mkdir()
    port = free_port()
    scheduler = [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"]
    with started(scheduler, env, folder / "scheduler.log"):
        wait_for_port(port)
        workers_started = [
            started([str(BIN / "dask"), "worker", f"tcp://127.0.0.1:{port}", "--host", "127.0.0.1", "--nthreads", "1",
                     "--no-dashboard", "--name", f"w{i}"], env, folder / f"worker-{i}.log")
            for i in range(workers)
        ]
        with contextlib.ExitStack() as stack:
            for worker in workers_started:
                stack.enter_context(worker)
            time.sleep(5)  # the workers register
            command = [str(BIN / "topicbench"), "search", str(args.config), "--scheduler", f"tcp://127.0.0.1:{port}",
                       "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}", "--out", str(folder / "report")]
            begun = time.perf_counter()
            killed = kill_after(command, folder, env, args.kill_after) if args.kill_after else None
            done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=args.timeout)
            seconds = time.perf_counter() - begun
    if done.returncode != 0:
        raise SystemExit(f"{workers} workers: the search failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    summary = re.search(r"(\d+) trials told, (\d+) fits run", done.stdout)
    report = (folder / "report" / "search.md").read_text()
    builds = re.search(r"of (\d+) scored fits, (\d+) built", report)
    choices = sorted(line.strip().split(" (")[0] for line in done.stdout.splitlines() if " on " in line and line.startswith("  "))
    return {"workers": workers, "seconds": seconds, "trials": int(summary.group(1)), "fits": int(summary.group(2)),
            "scored": int(builds.group(1)), "context_builds": int(builds.group(2)), "choices": choices,
            "killed": killed, "finished": finished_fits(folder / "mlflow.db")}


def finished_fits(database: Path) -> tuple[int, int]:
    """(FINISHED fit runs in the store, distinct run keys among them): equal when no
    (corpus, model, point, seed) was fitted twice."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{database}")
    ids = [e.experiment_id for e in client.search_experiments()]
    runs = client.search_runs(ids, "tags.`topicbench.role` = 'fit' and attributes.status = 'FINISHED'",
                              max_results=50000)
    return len(runs), len({run.data.tags["topicbench.run_key"] for run in runs})


def kill_after(command: list, folder: Path, env: dict, seconds: float) -> dict:
    """Run the search for ``seconds``, then SIGKILL it and its children (the workers live on, as a
    cluster would): what the store holds then. The caller's next run resumes it."""
    with open(folder / "killed-run.log", "w") as out:
        process = subprocess.Popen(command, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    try:
        process.wait(timeout=seconds)
        raise SystemExit(f"the search ended before it was killed ({seconds:.0f} s): give a smaller --kill-after")
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    finished, distinct = finished_fits(folder / "mlflow.db")
    return {"after": seconds, "finished": finished, "distinct": distinct}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=CHECKOUT / "examples" / "search-speed.yaml")
    parser.add_argument("--sides", type=int, nargs="+", default=[1, 2], help="worker counts to time")
    parser.add_argument("--timeout", type=float, default=7200)
    parser.add_argument("--kill-after", type=float, metavar="SECONDS",
                        help="SIGKILL each side's search after SECONDS, then resume it with the same command "
                             "(its wall time then covers both parts)")
    parser.add_argument("--keep", type=Path, metavar="FOLDER",
                        help="work in FOLDER (new) and keep it: each side's store, logs and search report")
    args = parser.parse_args()
    args.config = args.config.resolve()
    with contextlib.ExitStack() as cleanup:
        if args.keep:  # the stores, logs and each side's report stay for reading afterwards
            scratch = args.keep.resolve()
            scratch.mkdir(parents=True)
        else:
            scratch = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="bench-search-")))
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        env.update(PREFECT_HOME=str(scratch / "prefect"), PREFECT_SERVER_ANALYTICS_ENABLED="false")
        port, server = prefect_server(scratch, env)
        with server:
            wait_for_port(port, 300)
            env["PREFECT_API_URL"] = f"http://127.0.0.1:{port}/api"
            sides = [run_side(workers, args, scratch, env) for workers in args.sides]
    for side in sides:
        print(f"{side['workers']} worker(s): {side['seconds']:.1f} s; {side['trials']} trials, {side['fits']} fits; "
              f"metric context built by {side['context_builds']} of {side['scored']} fits")
        print("   chosen: " + "; ".join(side["choices"]))
        if side["killed"]:
            killed = side["killed"]
            print(f"   killed after {killed['after']:.0f} s with {killed['finished']} fits finished; the resumed run "
                  f"fitted {side['fits']}")
        finished, distinct = side["finished"]
        print(f"   the store holds {finished} finished fits, {distinct} distinct (corpus, model, point, seed)"
              + ("" if finished == distinct else ": SOME FITTED TWICE"))
    if len(sides) == 2:
        print(f"speed-up {sides[0]['workers']} -> {sides[1]['workers']} workers: {sides[0]['seconds'] / sides[1]['seconds']:.2f}x")
        if sides[0]["choices"] != sides[1]["choices"]:
            print("the chosen settings differ between the sides", file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()
