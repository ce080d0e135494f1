"""Benchmark low-adaptivity parallel E-LDA against exact greedy (issue 3's figures).

    .venv/bin/python benchmarks/bench_parallel.py quality     # 3 corpora x 2 generators: F, rounds
    .venv/bin/python benchmarks/bench_parallel.py rounds      # nested reuters subsets: a log D + b
    .venv/bin/python benchmarks/bench_parallel.py scaling     # reuters on 1 and 2 Dask workers, alternating, first run and repeats
    .venv/bin/python benchmarks/bench_parallel.py round-trip  # a round's Dask overhead: tasks vs Client.run, 1 and 2 workers
    .venv/bin/python benchmarks/bench_parallel.py synthetic   # 10^6 documents, |V| = 10^5, 2 workers
    .venv/bin/python benchmarks/bench_parallel.py synthetic --documents 10000 100000 --vocabulary 10000 100000 \
        --workers 1 2                                          # the README's grid of measured points

``synthetic`` writes each corpus once to the temporary folder (an OCTIS folder) and runs the
``topicbench elda`` command on it, as a user would.

All runs: kappa = 2, epsilon = 0.1 unless given.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_elda import SHARED_DATA  # noqa: E402

from topicbench.core.elda.generators import keyword_candidates  # noqa: E402
from topicbench.core.elda.greedy import fast_greedy  # noqa: E402
from topicbench.core.io import load_corpus, write_octis_folder  # noqa: E402
from topicbench.core.elda.parallel import Borrowed, parallel_elda  # noqa: E402
from topicbench.core.preprocess import PreprocessConfig  # noqa: E402
from topicbench.core.synthetic import synthetic_lda_corpus  # noqa: E402


def shared(data, name):
    return load_corpus(Path(data) / name, PreprocessConfig(preprocessed=True))


def quality(args):
    print(f"{'corpus':14s} {'generator':12s} {'greedy F':>18s} {'parallel F':>18s} {'improvement kept':>16s} "
          f"{'rounds':>6s} {'greedy steps':>12s} {'greedy s':>8s} {'parallel s':>10s}")
    for name in ("congress", "20ng_politics", "reuters"):
        corpus = shared(args.data, name)
        for generator in ("raw_umass", "cooccurrence"):
            candidates = keyword_candidates(corpus, generator)
            greedy = fast_greedy(corpus, candidates, args.kappa)
            parallel = parallel_elda(corpus, candidates, args.kappa, epsilon=args.epsilon, seed=args.seed)
            start = greedy.objective_trace[corpus.n_documents - 1]  # after FastInitialize (same in both)
            kept = (parallel.log_posterior - start) / (greedy.log_posterior - start)
            print(f"{name:14s} {generator:12s} {greedy.log_posterior:18.3f} {parallel.log_posterior:18.3f} "
                  f"{kept:16.4%} {parallel.stats['adaptive_rounds']:6d} {greedy.budget - corpus.n_documents:12d} "
                  f"{greedy.stats['optimise_seconds']:8.2f} {parallel.stats['optimise_seconds']:10.2f}", flush=True)


def rounds(args):
    corpus = shared(args.data, "reuters")
    order = np.random.default_rng(args.seed).permutation(corpus.n_documents)
    sizes, measured = [], []
    print(f"{'D':>7s} {'rounds':>6s} {'greedy sequential steps':>24s}")
    for fraction in (8, 4, 2, 1):
        subset = corpus.subset(np.sort(order[: corpus.n_documents // fraction]))
        for generator in ("raw_umass",):
            candidates = keyword_candidates(subset, generator)
            solution = parallel_elda(subset, candidates, args.kappa, epsilon=args.epsilon, seed=args.seed)
            sizes.append(subset.n_documents)
            measured.append(solution.stats["adaptive_rounds"])
            print(f"{subset.n_documents:7d} {measured[-1]:6d} {solution.budget - subset.n_documents:24d}", flush=True)
    a, b = np.polyfit(np.log(sizes), measured, 1)
    residual = np.asarray(measured) - (a * np.log(sizes) + b)
    print(f"fit: rounds = {a:.2f} ln(D) + {b:.2f} (max residual {np.abs(residual).max():.2f})")


def scaling(args):
    """Reuters on 1 and 2 workers, as ``topicbench elda --algorithm parallel`` runs it: a fresh cluster
    (cold worker processes, which warm their kernels up while this process builds the candidates),
    its first run, then repeat runs on the same cluster. Wall time split into cluster start,
    candidates, warm-up (what the run still waited for: data placement and kernel warm-up) and rounds.

    Timing on shared cores drifts by tens of percent over a minute, so the two worker counts
    alternate (``--trials`` pairs, each on a fresh cluster): each pair's speed-up is measured in
    the same minute, and the median over pairs is the figure. The order within a pair alternates
    too (1 then 2 workers, then 2 then 1), so that an effect of the order falls on both counts: in
    three runs of 1-then-2 pairs the first pair's second cluster waited 0.5 s to start, against
    0.25-0.3 s for every other cluster (writing the candidates' files took 0.34 s instead of 0.08 s
    once), and a fixed order put that on the two workers every time."""
    corpus = shared(args.data, "reuters")
    print(f"reuters: D={corpus.n_documents}; parallel_elda eps={args.epsilon}, kappa={args.kappa}, seed={args.seed}; "
          f"load average before: {_load()}")
    print("wall seconds, and the rounds' critical path (the slowest shard of every round) in wall and CPU seconds")
    print(f"{'trial':>5s} {'workers':>7s} {'run':>6s} {'cluster start':>13s} {'candidates':>10s} {'warm-up':>8s} {'rounds':>7s} "
          f"{'(slowest shard':>14s} {'CPU)':>6s} {'total':>7s} {'rounds':>6s} {'F':>16s}")
    keyword_candidates(corpus.subset(range(100)), "raw_umass")  # this process's kernels: loaded before any timing
    speedups = {"first": [], "repeat": []}
    for trial in range(1, args.trials + 1):
        walls = {}
        for workers in ((1, 2) if trial % 2 else (2, 1)):
            runs = _timed_runs(corpus, workers, args)
            for label, timing, solution in runs:
                print(f"{trial:5d} {workers:7d} {label:>6s} {timing['cluster']:12.2f}s {timing['candidates']:9.2f}s "
                      f"{timing['warm_up']:7.2f}s {timing['rounds']:6.2f}s {timing['shards']:13.2f}s {timing['cpu']:5.2f}s "
                      f"{sum(timing[k] for k in _PARTS):6.2f}s {solution.stats['adaptive_rounds']:6d} "
                      f"{solution.log_posterior:16.3f}", flush=True)
            walls[workers] = {label: timing for label, timing, _ in runs}
            walls[workers]["repeat"] = {
                k: float(np.median([t[k] for lab, t, _ in runs if lab == "repeat"])) for k in (*_PARTS, "cpu")
            }
        for label in ("first", "repeat"):
            one, two = walls[1][label], walls[2][label]
            speedups[label].append({
                "warm-up + rounds": (one["warm_up"] + one["rounds"]) / (two["warm_up"] + two["rounds"]),
                "rounds": one["rounds"] / two["rounds"],
                "everything (cluster start and candidates too)": sum(one[k] for k in _PARTS) / sum(two[k] for k in _PARTS),
                "critical path in CPU seconds": one["cpu"] / two["cpu"],
            })
    for label in ("first", "repeat"):
        measures = speedups[label][0].keys() if label == "first" else ("warm-up + rounds", "rounds", "critical path in CPU seconds")
        parts = [f"{name} {np.median([s[name] for s in speedups[label]]):.2f}x "
                 f"({', '.join(f'{s[name]:.2f}' for s in speedups[label])})" for name in measures]
        print(f"speed-up 1 -> 2 workers, {label} run{'s (median of each trial)' if label == 'repeat' else ''}, "
              f"median over {args.trials} trials (each trial's): " + "; ".join(parts))
    print(f"load average after: {_load()} (2 cores; other users' processes share them)")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


#: The parts of a run's wall time that :func:`scaling` prints.
_PARTS = ("cluster", "candidates", "warm_up", "rounds")


def _timed_runs(corpus, workers: int, args) -> list:
    """[(label, seconds by part, solution)]: the first run on a fresh cluster, then repeats."""
    from topicbench.core.elda.dask_shards import DaskShards

    started = time.perf_counter()
    executor = DaskShards(n_workers=workers)
    cluster = time.perf_counter() - started
    runs = []
    with executor:
        started = time.perf_counter()
        candidates = keyword_candidates(corpus, "raw_umass")  # while the workers warm up
        generate = time.perf_counter() - started
        for i in range(1 + args.repeats):
            solution = parallel_elda(corpus, candidates, args.kappa, epsilon=args.epsilon, seed=args.seed,
                                     executor=Borrowed(executor))
            timing = {"cluster": 0.0, "candidates": 0.0, "warm_up": solution.stats["start_seconds"],
                      "rounds": solution.stats["rounds_seconds"], "shards": solution.stats["shard_seconds"],
                      "cpu": solution.stats["shard_cpu_seconds"]}
            if i == 0:
                timing.update(cluster=cluster, candidates=generate)
            runs.append(("first" if i == 0 else "repeat", timing, solution))
    return runs


def _busy(milliseconds: float) -> int:
    """A shard round's stand-in: this much CPU on the worker, a small answer."""
    started = time.perf_counter()
    while time.perf_counter() - started < milliseconds / 1000:
        pass
    return 0


def round_trip(args):
    """What one round costs beyond its work, on 1 and 2 local workers: a round as tasks (submit
    one per worker, gather) against a round out of band (``Client.run``, as DaskShards runs them),
    each round doing ``--work-ms`` of CPU on every worker, alternating the two ways."""
    from distributed import Client

    from topicbench.core.dask_cluster import start_local_cluster

    ms, rounds = args.work_ms, args.round_count
    print(f"{rounds} rounds of {ms:.0f} ms of work per worker; overhead = ms a round beyond the work; "
          f"load average before: {_load()}")
    for workers in (1, 2):
        with start_local_cluster(workers) as cluster, Client(cluster) as client:
            addresses = sorted(client.scheduler_info()["workers"])
            client.run(_busy, 1.0)  # connections opened before timing
            overhead = {"tasks": [], "Client.run": []}
            for trial in range(args.trials):
                started = time.perf_counter()
                for _ in range(rounds):
                    client.gather([client.submit(_busy, ms, workers=[a], pure=False) for a in addresses])
                overhead["tasks"].append((time.perf_counter() - started) / rounds * 1000 - ms)
                started = time.perf_counter()
                for _ in range(rounds):
                    client.run(_busy, ms, workers=addresses)
                overhead["Client.run"].append((time.perf_counter() - started) / rounds * 1000 - ms)
            print(f"{workers} worker{'s' if workers > 1 else ' '}: " + "; ".join(
                f"{way} {np.median(v):.1f} ms a round ({', '.join(f'{x:.1f}' for x in v)})" for way, v in overhead.items()
            ), flush=True)
    print(f"load average after: {_load()}")


def synthetic(args):
    """Synthetic LDA corpora (every ``--documents`` x ``--vocabulary``) through ``topicbench elda
    --algorithm parallel --workers N`` (every ``--workers``) on a local cluster, as a user runs it:
    one line per point with wall time and its parts, rounds, and the peak memory of the command's
    process (client, scheduler and nannies) and of its worker processes."""
    print(f"load average before: {_load()} (2 cores, shared with other users' processes)")
    print(f"{'D':>8s} {'|V|':>7s} {'workers':>7s} {'tokens':>9s} {'topics':>7s} {'wall':>7s} {'read':>6s} "
          f"{'cands':>6s} {'start':>6s} {'rounds':>7s} {'(CPU)':>7s} {'#rounds':>7s} {'client GiB':>10s} "
          f"{'worker GiB (private)':>22s}")
    for n_documents in args.documents:
        for n_words in args.vocabulary:
            folder = _synthetic_folder(args, n_documents, n_words)
            for workers in args.workers:
                wall, summary, peaks = _run_elda_command(folder, workers, args)
                stats = summary["stats"]
                worker_peaks = [v for k, v in peaks.items() if k != "client process"]
                print(f"{n_documents:8d} {n_words:7d} {workers:7d} {summary['num_tokens']:9d} "
                      f"{summary['num_candidates']:7d} {wall:6.1f}s {stats['load_seconds']:5.1f}s "
                      f"{stats['generate_seconds']:5.1f}s {stats['start_seconds']:5.1f}s {stats['rounds_seconds']:6.1f}s "
                      f"{stats['shard_cpu_seconds']:6.1f}s {summary['adaptive_rounds']:7d} "
                      f"{peaks['client process'][0]:10.2f} "
                      f"{max(p for p, _ in worker_peaks):13.2f} ({max(q for _, q in worker_peaks):.2f})", flush=True)
    print(f"load average after: {_load()}")


def _run_elda_command(folder: Path, workers: int, args):
    """(wall seconds, the --json summary, peak memory by process) of one ``topicbench elda`` run."""
    out = Path(tempfile.mkdtemp(prefix="topicbench-bench-")) / "result.json"
    command = [str(Path(sys.executable).parent / "topicbench"), "elda", "--corpus", str(folder), "--preprocessed",
               "--algorithm", "parallel", "--workers", str(workers), "--kappa", str(args.kappa),
               "--epsilon", str(args.epsilon), "--seed", str(args.seed), "--top", "3", "--json", str(out)]
    if args.verbose:
        print("$", " ".join(command), flush=True)
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peaks = _watch_memory(process)
    wall = time.perf_counter() - started
    output = process.stdout.read()
    try:
        if process.returncode != 0:
            raise SystemExit(f"topicbench elda failed ({process.returncode}):\n{output[-3000:]}")
        return wall, json.loads(out.read_text(encoding="utf-8")), peaks
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)


def _synthetic_folder(args, n_documents: int, n_words: int) -> Path:
    """The synthetic corpus as an OCTIS folder in the temporary folder, generated once per settings."""
    name = f"topicbench-synthetic-D{n_documents}-V{n_words}-L{args.doc_length:g}-seed{args.seed}"
    folder = Path(args.folder or tempfile.gettempdir()) / name
    if (folder / "vocabulary.txt").is_file():  # written last: the folder is complete
        return folder
    started = time.perf_counter()
    corpus = synthetic_lda_corpus(n_documents, n_words, doc_length=args.doc_length, seed=args.seed)
    generated = time.perf_counter() - started
    write_octis_folder(corpus, folder)
    print(f"generated {folder} in {generated:.1f} s, written in {time.perf_counter() - started - generated:.1f} s "
          f"({corpus.n_tokens} tokens)", flush=True)
    return folder


def _watch_memory(process, every: float = 0.5) -> dict:
    """Poll a process and its worker processes until it exits: {name: (peak RSS, peak private)}, GiB.

    The peak RSS is the kernel's high-water mark (VmHWM, exact); it counts the memory-mapped
    candidates each worker has touched, which the workers share. The private part (RssAnon) is
    sampled every ``every`` seconds.
    """
    import psutil

    root = psutil.Process(process.pid)
    peaks: dict = {}
    while process.poll() is None:
        try:
            children = [c for c in root.children(recursive=True) if "resource_tracker" not in " ".join(c.cmdline())]
        except psutil.Error:
            children = []
        for name, pid in [("client process", root.pid)] + [(f"worker pid {c.pid}", c.pid) for c in children]:
            fields = _status_fields(pid)
            if fields:
                old = peaks.get(name, (0.0, 0.0))
                peaks[name] = (max(old[0], fields["VmHWM"]), max(old[1], fields["RssAnon"]))
        time.sleep(every)
    return peaks


def _status_fields(pid: int) -> dict:
    """VmHWM and RssAnon of a process in GiB ({} once it has exited)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            lines = [line.split() for line in status if line.startswith(("VmHWM:", "RssAnon:"))]
    except OSError:
        return {}
    return {line[0].rstrip(":"): int(line[1]) / 2**20 for line in lines}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", choices=("quality", "rounds", "scaling", "round-trip", "synthetic"))
    parser.add_argument("--data", default=str(SHARED_DATA), help="folder of the shared corpora (default: %(default)s)")
    parser.add_argument("--kappa", type=float, default=2.0)
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--documents", type=int, nargs="+", default=[1_000_000], help="synthetic: D (one or more)")
    parser.add_argument("--vocabulary", type=int, nargs="+", default=[100_000], help="synthetic: |V| (one or more)")
    parser.add_argument("--doc-length", type=float, default=20.0, help="synthetic: mean document length")
    parser.add_argument("--folder", help="synthetic: where the corpus folder goes (default: the temporary folder)")
    parser.add_argument("--workers", type=int, nargs="+", default=[2], help="synthetic: Dask workers (one or more)")
    parser.add_argument("--verbose", action="store_true", help="synthetic: print each command")
    parser.add_argument("--repeats", type=int, default=3, help="scaling: timed runs after the first")
    parser.add_argument("--trials", type=int, default=3,
                        help="scaling: alternating pairs of 1- and 2-worker clusters; round-trip: timed sets per way")
    parser.add_argument("--work-ms", type=float, default=40.0, help="round-trip: CPU milliseconds per worker per round")
    parser.add_argument("--round-count", type=int, default=40, help="round-trip: rounds per timed set")
    args = parser.parse_args()
    parts = {"quality": quality, "rounds": rounds, "scaling": scaling, "round-trip": round_trip, "synthetic": synthetic}
    parts[args.part](args)


if __name__ == "__main__":
    main()
