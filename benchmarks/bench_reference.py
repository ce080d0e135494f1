"""`topicbench elda` against the authors' E-LDA code, end to end, in one run (docs/performance.md).

Both run as a user would run them, each in a fresh child process whose wall time and peak memory
(max RSS, from ``wait4``) are its own:

* topicbench: the ``topicbench elda`` command on the shared corpus (``--preprocessed``), exact
  greedy; its ``--json`` output gives F and the time spent loading, generating candidates and
  optimising. The rest of the wall time is start-up (imports, loading the compiled kernels) and
  output. The first run only warms numba's on-disk cache and is not counted; the fastest of the
  timed runs is shown, with their median beside it, and the speed-up is given against both. Its
  runs are made before the reference and again after it, so that they bracket the reference's
  minutes on a machine whose load drifts.
* the reference: the authors' public repository (BreuerLabs/E-LDA), copied from a local clone into a
  temporary folder (never into this repository), with a small driver that runs their serial
  E-LDA (``src/exemplar_LDA.py``) on their candidates (``src/topic_generators.py``) and their
  preprocessed data, as their ``RUN_EXEMPLAR_LDA.py`` does. It needs numpy and scipy only.

    .venv/bin/python benchmarks/bench_reference.py                  # congress, raw_umass, kappa 2
    .venv/bin/python benchmarks/bench_reference.py --reference ~/src/E-LDA --before c5175b9

``--before REV`` also times ``topicbench elda`` as it was at git revision REV of this repository
(written to a temporary folder by ``revisions.revision_pythonpath``; its numba cache is compiled by an uncounted
first run), its runs alternating with this repository's. No network access: the reference must already be cloned (the error says how).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from revisions import REPOSITORY, extract_revision, revision_pythonpath  # noqa: E402

SHARED_DATA = REPOSITORY.parent / "shared" / "data"
DEFAULT_REFERENCE = Path("/work/.mirror/BreuerLabs+E-LDA/repo")
REFERENCE_URL = "https://github.com/BreuerLabs/E-LDA"
#: Our corpus name -> the reference's data folder and file prefix.
REFERENCE_DATASETS = {"congress": "CONGRESS", "reuters": "REUTERS", "20ng_politics": "20NEWSGROUPSPOL"}
#: Our generator names -> the reference's (the E-LDA paper's keyword generators: Raw-UMass is their LOG_DOTPROD).
REFERENCE_GENERATORS = {"raw_umass": "LOG_DOTPROD", "cooccurrence": "FREQSCALE_DOTPROD"}
#: The authors' serial code on this kind of machine (raw_umass, kappa 2).
SPEC_FIGURES = {"congress": "optimise 192-210 s, peak 3.5 GB", "reuters": "optimise 236 s, peak 11.1 GB",
                "20ng_politics": "optimise 285 s, peak 6.7 GB"}

# The driver run in the reference's temporary folder. It loads the data as their
# load_preprocessed_documents() does, without importing that module (which also needs nltk,
# gensim, scikit-learn and pandas for preprocessing that E-LDA does not use).
REFERENCE_DRIVER = r'''
import contextlib, io, json, sys, time
import numpy as np
from scipy import sparse
from src.topic_generators import generate_DOTPROD_topic2word_matrix_nonlogged
from src.exemplar_LDA import exemplar_LDA

folder, prefix, generator, kappa = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
started = time.perf_counter()
with open(f"{folder}/{prefix}_D2Windexform.txt") as infile:
    D2Windexform = np.asarray([[int(x) for x in item.split(" ")] for item in infile.read().splitlines()], dtype="object")
with open(f"{folder}/{prefix}_D2Wsparse.txt") as infile:
    triples = np.asarray([[int(x) for x in row.split(" ")] for row in infile.read().splitlines()])
D2W = sparse.coo_matrix((triples[:, 2], (triples[:, 0], triples[:, 1])),
                        shape=(triples[:, 0].max() + 1, triples[:, 1].max() + 1)).tocsr()
loaded = time.perf_counter()
# as RUN_EXEMPLAR_LDA.py: LOG_DOTPROD (Raw-UMass) is logged, FREQSCALE_DOTPROD (Co-Occurrence) is not
T2W = generate_DOTPROD_topic2word_matrix_nonlogged(D2W, normalize_to_proper_topics=generator == "LOG_DOTPROD")
if generator == "LOG_DOTPROD":
    T2W = np.log(T2W)
T2W = T2W.astype(np.float64)
generated = time.perf_counter()
k = int(len(D2Windexform) * kappa)
with contextlib.redirect_stdout(io.StringIO()):  # it prints every 1000 links
    solution, objective = exemplar_LDA(D2Windexform, T2W, k)
optimised = time.perf_counter()
# F recomputed from the links alone: each token at its best linked topic (null topic: log 1e-100)
solution = solution.astype(np.int64)
F = 0.0
for d in range(len(D2Windexform)):
    topics = solution[solution[:, 0] == d, 1]
    F += float(np.maximum(T2W[np.ix_(topics, D2Windexform[d])].max(axis=0), np.log(1e-100)).sum())
print(json.dumps({"log_posterior": F, "objective_returned": float(objective), "links": int(len(solution)),
                  "topics_used": int(len(np.unique(solution[:, 1]))), "documents": int(len(D2Windexform)),
                  "load_seconds": loaded - started, "generate_seconds": generated - loaded,
                  "optimise_seconds": optimised - generated}))
'''


def run_measured(command, *, cwd=None, env=None) -> dict:
    """Run ``command`` in a child process; its wall seconds, peak RSS (GB, from ``wait4``) and output."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, command))} failed ({process.returncode}):\n{stderr[-3000:]}")
    return {"wall_seconds": wall, "peak_gb": usage.ru_maxrss / 2**20, "stdout": stdout, "stderr": stderr}


def writing_bytecode(env: dict | None) -> dict:
    """``env`` (None: this process's environment) with Python allowed to write bytecode."""
    env = dict(os.environ if env is None else env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def topicbench_command(corpus: Path, generator: str, kappa: float, json_out: Path) -> list[str]:
    """``topicbench elda`` as a user runs it (the console script beside this interpreter)."""
    script = Path(sys.executable).with_name("topicbench")
    launcher = [str(script)] if script.is_file() else [sys.executable, "-m", "topicbench.flows.cli.main"]
    return [*launcher, "elda", "--corpus", str(corpus), "--preprocessed", "--generator", generator,
            "--kappa", str(kappa), "--json", str(json_out)]


def time_topicbench(corpus: Path, generator: str, kappa: float, repeats: int, envs: dict) -> dict:
    """{label: its ``repeats`` timed runs} for each environment in ``envs`` (label ->
    environment: this repository, or an earlier revision on PYTHONPATH). Each first has one
    uncounted run, as a user's first run: it warms numba's cache and writes the bytecode of the
    modules that have none (even where PYTHONDONTWRITEBYTECODE is set, as on this machine, where
    every run would otherwise compile this project's modules again: 0.1 s). Then the timed runs
    alternate between them, in turned order every repeat, so that the machine's drift (tens of
    percent over minutes on shared cores) falls on all alike."""
    runs = {label: [] for label in envs}
    with tempfile.TemporaryDirectory(prefix="bench-reference-") as folder:
        json_out = Path(folder) / "elda.json"
        command = topicbench_command(corpus, generator, kappa, json_out)
        for env in envs.values():
            run_measured(command, env=writing_bytecode(env))
        labels = list(envs)
        for repeat in range(repeats):
            for label in (labels if repeat % 2 == 0 else labels[::-1]):
                run = run_measured(command, env=envs[label])
                summary = json.loads(json_out.read_text(encoding="utf-8"))
                stats = summary["stats"]
                run.update(log_posterior=summary["log_posterior"], topics_used=summary["num_topics_used"],
                           links=summary["num_links"], load_seconds=stats["load_seconds"],
                           generate_seconds=stats["generate_seconds"], optimise_seconds=stats["optimise_seconds"])
                run["startup_seconds"] = run["wall_seconds"] - run["load_seconds"] - run["generate_seconds"] - run["optimise_seconds"]
                runs[label].append(run)
    return runs


def fastest_with_median(runs: list[dict]) -> dict:
    """The fastest of ``runs``, with the median of their wall times beside it (on shared cores
    the fastest is the least disturbed run; the median says how typical it was)."""
    fastest = dict(min(runs, key=lambda run: run["wall_seconds"]))
    fastest["median_wall_seconds"] = statistics.median(run["wall_seconds"] for run in runs)
    fastest["repeats"] = len(runs)
    return fastest


def check_reference(path: Path) -> None:
    """The reference clone must exist and be a git repository (bare or not)."""
    probe = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, check=False) \
        if path.is_dir() else None
    if probe is None or probe.returncode != 0:
        raise SystemExit(
            f"bench_reference: no git clone of the authors' code at {path}; clone it first with "
            f"`git clone --mirror {REFERENCE_URL} {path}` (or give another clone with --reference PATH)"
        )


def time_reference(reference: Path, dataset: str, generator: str, kappa: float) -> dict:
    """The authors' serial E-LDA, run from a temporary copy of their repository."""
    prefix = REFERENCE_DATASETS[dataset]
    with tempfile.TemporaryDirectory(prefix="elda-reference-") as folder:
        extract_revision(reference, "HEAD", Path(folder), ["src", f"preprocessed_data/{prefix}"])
        (Path(folder) / "bench_driver.py").write_text(REFERENCE_DRIVER, encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": folder}
        command = [sys.executable, "bench_driver.py", f"preprocessed_data/{prefix}", prefix,
                   REFERENCE_GENERATORS[generator], str(kappa)]
        run = run_measured(command, cwd=folder, env=env)
    run.update(json.loads(run["stdout"].strip().splitlines()[-1]))
    return run


def describe(name: str, run: dict) -> str:
    median = (f" (median of {run['repeats']}: {run['median_wall_seconds']:.2f} s)"
              if "median_wall_seconds" in run else "")
    parts = [f"{name:22s} wall {run['wall_seconds']:7.2f} s{median}  peak {run['peak_gb']:5.2f} GB  "
             f"F = {run['log_posterior']:.6f}"]
    parts.append(f"{'':22s} load {run['load_seconds']:.2f} s, generate {run['generate_seconds']:.2f} s, "
                 f"optimise {run['optimise_seconds']:.2f} s"
                 + (f", start-up and output {run['startup_seconds']:.2f} s" if "startup_seconds" in run else ""))
    return "\n".join(parts)


def compare(ours: dict, reference: dict) -> str:
    rel = abs(ours["log_posterior"] - reference["log_posterior"]) / abs(reference["log_posterior"])
    return (f"speed-up {reference['wall_seconds'] / ours['wall_seconds']:.1f}x end to end, "
            f"memory {ours['peak_gb'] / reference['peak_gb']:.3f} of the reference's peak "
            f"({reference['peak_gb'] / ours['peak_gb']:.1f}x less); F relative difference {rel:.1e}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", type=Path, default=DEFAULT_REFERENCE, help="a git clone (bare or not) of BreuerLabs/E-LDA")
    parser.add_argument("--corpus", choices=sorted(REFERENCE_DATASETS), default="congress")
    parser.add_argument("--data", type=Path, default=SHARED_DATA, help="folder holding the shared corpora")
    parser.add_argument("--generator", choices=sorted(REFERENCE_GENERATORS), default="raw_umass")
    parser.add_argument("--kappa", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3, help="timed topicbench runs of each revision (the fastest is shown)")
    parser.add_argument("--before", metavar="REV", help="also time topicbench at this git revision")
    parser.add_argument("--no-reference", action="store_true", help="time topicbench only")
    args = parser.parse_args(argv)
    corpus = args.data / args.corpus
    if not corpus.is_dir():
        raise SystemExit(f"bench_reference: corpus folder {corpus} not found (give --data)")
    if not args.no_reference:
        check_reference(args.reference)
    print(f"{args.corpus}, {args.generator}, kappa {args.kappa:g}; {os.cpu_count()} cores, "
          f"load average at start {os.getloadavg()[0]:.1f}", flush=True)
    with contextlib.ExitStack() as stack:
        envs = {"topicbench elda": None}
        if args.before:
            folder = stack.enter_context(revision_pythonpath(args.before))
            envs[f"topicbench @ {args.before}"] = {**os.environ, "PYTHONPATH": str(folder)}
        runs = time_topicbench(corpus, args.generator, args.kappa, args.repeats, envs)
    for label, found in reversed(runs.items()):
        print(describe(label, fastest_with_median(found)), flush=True)
    if args.no_reference:
        return 0
    reference = time_reference(args.reference, args.corpus, args.generator, args.kappa)
    print(describe("authors' code", reference))
    if args.corpus in SPEC_FIGURES and args.generator == "raw_umass" and args.kappa == 2.0:
        print(f"{'':22s} (the authors' code on an idle machine of this kind: {SPEC_FIGURES[args.corpus]})")
    # The load drifts over the reference's minutes (12 to 7 in one run): timing this repository
    # again after it brackets the reference, so that neither side alone meets the busy minutes.
    print(f"load average after the authors' code {os.getloadavg()[0]:.1f}", flush=True)
    after = time_topicbench(corpus, args.generator, args.kappa, args.repeats, {"topicbench elda": None})
    ours = fastest_with_median(runs["topicbench elda"] + after["topicbench elda"])
    print(describe("topicbench, both sides", ours))
    print(compare(ours, reference))
    print(f"median speed-up {reference['wall_seconds'] / ours['median_wall_seconds']:.1f}x "
          f"(the authors' one run against the median of this repository's {ours['repeats']})")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
