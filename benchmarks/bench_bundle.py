"""Wall time and size of a result bundle: ``topicbench export``, ``topicbench import`` and
``topicbench report --bundle``, each run as a user runs it (a fresh process).

The store is ``--tracking-uri``/``--experiment`` (read only: the bundle, the store it is imported
into and the report are written under a temporary folder, or ``--keep``); without them, a small
one is generated first: the built-in Lee benchmark (E-LDA, gensim LDA and Gibbs LDA) with seeds 0
and 1, six fits. Printed: each step's seconds, the bundle's bytes (all, artifacts, tables and
each table) and the tables' bytes per fit, the figure the 15 MB target for 117 fits is about.
``--runs N`` measures a store of N fit runs instead: the experiment's fits copied, with their
metrics, tags and artifacts, under new seeds (``bench_report.py``'s copy; the paper has 117).

    nice .venv/bin/python benchmarks/bench_bundle.py
    nice .venv/bin/python benchmarks/bench_bundle.py --tracking-uri sqlite:////path/mlflow.db --experiment paper
    nice .venv/bin/python benchmarks/bench_bundle.py --runs 117   # the six fits copied to 117 runs
    .venv/bin/python benchmarks/bench_bundle.py --json   # one JSON object instead of lines
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from importlib import util
from pathlib import Path

TOPICBENCH = str(Path(sys.executable).parent / "topicbench")


def timed(command: list, env: dict) -> float:
    """Seconds ``command`` took; its output shown only if it failed (then this fails too)."""
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return seconds


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def measure(tracking_uri: str, experiment: str, work: Path, env: dict) -> dict:
    """Export, import and render times, and the bundle's sizes."""
    bundle, imported = work / "bundle", f"sqlite:///{work / 'imported' / 'mlflow.db'}"
    figures = {
        "export_s": timed([TOPICBENCH, "export", "--experiment", experiment, "--tracking-uri", tracking_uri,
                           "--out", str(bundle)], env),
        "import_s": timed([TOPICBENCH, "import", str(bundle), "--tracking-uri", imported], env),
        "render_s": timed([TOPICBENCH, "report", "--bundle", str(bundle), "--out", str(work / "report")], env),
    }
    manifest = json.loads((bundle / "manifest.json").read_text())
    tables = {path.stem: path.stat().st_size for path in sorted((bundle / "tables").glob("*.parquet"))}
    figures.update(fits=manifest["fits"], bundle_bytes=folder_bytes(bundle),
                   artifacts_bytes=folder_bytes(bundle / "artifacts"), tables_bytes=sum(tables.values()),
                   table_bytes=tables, tables_bytes_per_fit=round(sum(tables.values()) / max(manifest["fits"], 1)))
    return figures


def generated_store(work: Path, env: dict) -> tuple[str, str]:
    """A small store: the built-in Lee benchmark, seeds 0 and 1 (six fits)."""
    uri = f"sqlite:///{work / 'source' / 'mlflow.db'}"
    (work / "source").mkdir(parents=True)
    timed([TOPICBENCH, "run", "--no-report", "--seeds", "0", "1", "--tracking-uri", uri], env)
    return uri, "lee-default"


def copied_store(uri: str, experiment: str, runs: int, work: Path) -> str:
    """``experiment``'s fits copied to ``runs`` fit runs in a new experiment of the same store (its name)."""
    spec = util.spec_from_file_location("bench_report", Path(__file__).with_name("bench_report.py"))
    bench_report = util.module_from_spec(spec)
    spec.loader.exec_module(bench_report)
    target = f"{experiment}-{runs}"
    (work / "copies").mkdir(parents=True, exist_ok=True)
    bench_report.copy_runs(uri, experiment, target, runs, work / "copies")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", help="the store to export (default: a small generated one)")
    parser.add_argument("--experiment", help="its experiment (with --tracking-uri)")
    parser.add_argument("--keep", metavar="DIR", help="write everything here (an empty folder) and keep it")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--runs", type=int, metavar="N",
                        help="measure a store of N fit runs: the experiment's fits copied under new seeds")
    args = parser.parse_args()
    if (args.tracking_uri is None) != (args.experiment is None):
        parser.error("give --tracking-uri and --experiment together (or neither: a generated store)")
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false"}
    with tempfile.TemporaryDirectory(prefix="bench-bundle-") as scratch:
        work = Path(args.keep or scratch)
        work.mkdir(parents=True, exist_ok=True)
        uri, experiment = (args.tracking_uri, args.experiment) if args.tracking_uri else generated_store(work, env)
        if args.runs:
            if args.tracking_uri:
                parser.error("--runs copies runs within the store: give it without --tracking-uri (a generated store)")
            experiment = copied_store(uri, experiment, args.runs, work)
        figures = {"store": uri, "experiment": experiment, "load_1min": os.getloadavg()[0],
                   **measure(uri, experiment, work, env)}
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    for name, value in figures.items():
        print(f"{name:22} {value}")


if __name__ == "__main__":
    main()
