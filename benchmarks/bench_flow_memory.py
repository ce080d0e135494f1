"""The paper benchmark's E-LDA slice through the real flow: the flow process's peak memory and the
time it spends scoring, before and after scoring moved to the workers, in one invocation.

Each side runs the benchmark flow (``topicbench.flows.benchmark.run_benchmark``) in a fresh
subprocess, on the paper's Set 2 config restricted to E-LDA (κ = 2, the named generators, the
paper's Set 2 metrics), one corpus, the given seeds, a local Dask cluster of ``--workers``
processes and a temporary sqlite store. "before" is the code of ``--git-ref`` (default c5175b9,
written to a temporary folder by ``revisions.revision_pythonpath``, never into the checkout); "after" is this
checkout's code. Each side prints:

- the flow process's peak resident memory (``ru_maxrss`` of that process, and its VmHWM; the Dask
  workers and the Prefect server are other processes and are not counted),
- the seconds the flow process spent inside ``score()`` (the serial scoring of every output),
- the flow's wall time,

then the two sides' logged scores and solutions (F, budget, topics used) are compared: they must
agree (timings and the algorithm's work counters may differ).

    nice .venv/bin/python benchmarks/bench_flow_memory.py                       # reuters, raw_umass + cooccurrence
    nice .venv/bin/python benchmarks/bench_flow_memory.py --sides after --corpus congress --generators cooccurrence
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from revisions import REPOSITORY as CHECKOUT, package_folder, revision_pythonpath  # noqa: E402
#: The paper's E-LDA generators and metrics (flows/paper.py); read there too, this is the default.
DEFAULT_GENERATORS = ("raw_umass", "cooccurrence")


def run_side(side: str, pythonpath: Path, args, scratch: Path) -> dict:
    """Run the flow for one side in a fresh process; its JSON report."""
    folder = scratch / side
    folder.mkdir()
    settings = {"data": str(args.data.resolve()), "corpus": args.corpus, "generators": args.generators, "seeds": args.seeds,
                "workers": args.workers, "store": f"sqlite:///{folder / 'mlflow.db'}", "metrics": args.metrics}
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "PREFECT_HOME": str(folder / "prefect"),
           "TOPICBENCH_STALE_RUN_SECONDS": "600"}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(settings)],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=args.timeout)
    if done.returncode != 0:
        raise SystemExit(f"{side}: the flow failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    report["process_seconds"] = time.perf_counter() - started
    return report


def child(settings: dict) -> None:
    """In the subprocess: run the flow, print one JSON line of what this process measured."""
    import logging

    logging.disable(logging.WARNING)
    spent = time_scoring_calls()
    from mlflow.tracking import MlflowClient

    from topicbench.flows.benchmark import run_benchmark
    from topicbench.flows.paper import SET2_METRICS, set2_config

    config = set2_config(settings["data"], seeds=tuple(settings["seeds"]), corpora=(settings["corpus"],), baselines=(),
                         tracking_uri=settings["store"], workers=settings["workers"], experiment="flow-memory")
    labels = {f"elda_{g}" for g in settings["generators"]}
    metrics = list(settings["metrics"] or SET2_METRICS)
    models = [m for m in config.to_dict()["models"] if m.get("label") in labels]
    for model in models:
        model["metrics"] = metrics
    config = type(config).from_dict({**config.to_dict(), "models": models, "metrics": metrics}, where="bench")
    started = time.perf_counter()
    state = run_benchmark(config)
    wall = time.perf_counter() - started
    client = MlflowClient(settings["store"])
    experiment = client.get_experiment_by_name("flow-memory").experiment_id
    runs = client.search_runs([experiment], "tags.`topicbench.role` = 'fit'", max_results=1000)
    print(json.dumps({
        "completed": state.is_completed(), "message": state.message or "",
        "flow_ru_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "flow_vmhwm_mb": peak_resident_mb(), "flow_scoring_seconds": spent[0], "flow_wall_seconds": wall,
        "scores": {f"{r.data.tags['model']}/{r.info.run_name}": r.data.metrics for r in runs},
    }))


def time_scoring_calls() -> list:
    """Wrap ``score`` wherever this process's code calls it; the returned list's item 0 sums the
    seconds spent inside it (in this process only: Dask workers are other processes)."""
    import importlib

    from topicbench.core.metrics import scoring

    original, spent = scoring.score, [0.0]

    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    for name in ("topicbench.core.metrics.scoring", "topicbench.tasks.run.metric_context", "topicbench.tasks.run.fit"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if getattr(module, "score", None) is original:
            module.score = timed
    return spent


def peak_resident_mb() -> float:
    """This process's peak resident memory from /proc (VmHWM), in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


#: What both sides must agree on besides the metric scores: the solution itself.
SOLUTION_KEYS = ("log_posterior", "null_log_posterior", "budget", "kappa", "num_candidates", "num_topics_used")


def compared_key(key: str) -> bool:
    """Whether a logged value must be the same on both sides: a metric's score or the solution
    (F, budget, topics). Timings, memory and the algorithm's work counters (entries read,
    evaluations) change with the code and are not compared."""
    from topicbench.core.metrics.registry import metric_for_key
    from topicbench.core.validation import InputError
    from topicbench.tasks.store.fit_record import score_key

    if key in SOLUTION_KEYS:
        return True
    try:
        metric_for_key(score_key(key))
    except InputError:
        return False
    return True


def compare_scores(before: dict, after: dict) -> str:
    """One line: the largest relative difference between the two sides' common scores and solutions."""
    worst, where, compared = 0.0, "", 0
    for run, values in after.items():
        for key, value in values.items():
            if not compared_key(key) or key not in before.get(run, {}):
                continue
            compared += 1
            other = before[run][key]
            difference = abs(value - other) / max(abs(value), abs(other), 1e-300)
            if difference > worst:
                worst, where = difference, f"{run} {key}"
    return (f"scores and solutions compared: {compared}; largest relative difference {worst:.2e}"
            + (f" ({where})" if where else ""))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="reuters")
    parser.add_argument("--data", type=Path, default=CHECKOUT.parent / "shared" / "data",
                        help="folder holding the corpus (default: ../shared/data)")
    parser.add_argument("--generators", nargs="+", default=list(DEFAULT_GENERATORS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--metrics", nargs="+", default=None, help="default: the paper's Set 2 metrics")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--git-ref", default="c5175b9", help="the code measured as 'before'")
    parser.add_argument("--sides", nargs="+", choices=("before", "after"), default=["before", "after"])
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per side")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.child:
        child(json.loads(args.child))
        return
    if not (args.data / args.corpus / "corpus.tsv").is_file():
        raise SystemExit(f"corpus not found: {args.data / args.corpus / 'corpus.tsv'} (give --data PATH)")
    print(f"E-LDA slice of the paper benchmark: {args.corpus}, generators {', '.join(args.generators)}, "
          f"seeds {args.seeds}, {args.workers} Dask workers; before = {args.git_ref}, after = {CHECKOUT}", flush=True)
    reports = {}
    with tempfile.TemporaryDirectory(prefix="bench-flow-memory-") as scratch, contextlib.ExitStack() as stack:
        scratch = Path(scratch)
        for side in args.sides:
            if side == "before":
                pythonpath = stack.enter_context(revision_pythonpath(args.git_ref))
            else:
                pythonpath = package_folder(CHECKOUT, scratch / "after-pkg")
            report = reports[side] = run_side(side, pythonpath, args, scratch)
            print(f"{side:6s}: flow process peak {report['flow_ru_maxrss_mb']:8.0f} MB (ru_maxrss; VmHWM "
                  f"{report['flow_vmhwm_mb']:.0f} MB), scoring in the flow process {report['flow_scoring_seconds']:7.1f} s, "
                  f"flow wall {report['flow_wall_seconds']:7.1f} s, runs {len(report['scores'])}"
                  + ("" if report["completed"] else f", NOT completed: {report['message']}"), flush=True)
    if len(reports) == 2:
        before, after = reports["before"], reports["after"]
        print(f"peak memory of the flow process: {before['flow_ru_maxrss_mb'] / after['flow_ru_maxrss_mb']:.1f}x lower; "
              f"serial scoring in the flow process: {before['flow_scoring_seconds']:.1f} s -> "
              f"{after['flow_scoring_seconds']:.1f} s; wall {before['flow_wall_seconds']:.1f} s -> "
              f"{after['flow_wall_seconds']:.1f} s")
        print(compare_scores(before["scores"], after["scores"]))


if __name__ == "__main__":
    main()
