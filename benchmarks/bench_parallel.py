"""Benchmark low-adaptivity parallel E-LDA against exact greedy (issue 3's figures).

    .venv/bin/python benchmarks/bench_parallel.py quality     # 3 corpora x 2 generators: F, rounds
    .venv/bin/python benchmarks/bench_parallel.py rounds      # nested reuters subsets: a log D + b
    .venv/bin/python benchmarks/bench_parallel.py scaling     # reuters on 1 and 2 Dask workers
    .venv/bin/python benchmarks/bench_parallel.py synthetic   # >= 200,000-document LDA corpus on Dask

All runs: kappa = 2, epsilon = 0.1 unless given.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_elda import SHARED_DATA, synthetic_corpus  # noqa: E402

from topicbench.core.generators import keyword_candidates  # noqa: E402
from topicbench.core.greedy import fast_greedy  # noqa: E402
from topicbench.core.io import load_corpus  # noqa: E402
from topicbench.core.parallel import Borrowed, parallel_elda  # noqa: E402
from topicbench.core.preprocess import PreprocessConfig  # noqa: E402


def shared(name):
    return load_corpus(SHARED_DATA / name, PreprocessConfig(preprocessed=True))


def quality(args):
    print(f"{'corpus':14s} {'generator':12s} {'greedy F':>18s} {'parallel F':>18s} {'improvement kept':>16s} "
          f"{'rounds':>6s} {'greedy steps':>12s} {'greedy s':>8s} {'parallel s':>10s}")
    for name in ("congress", "20ng_politics", "reuters"):
        corpus = shared(name)
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
    corpus = shared("reuters")
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
    from topicbench.core.dask_shards import DaskShards

    corpus = shared("reuters")
    candidates = keyword_candidates(corpus, "raw_umass")
    print(f"reuters: D={corpus.n_documents}, candidates {candidates.n_topics} topics, "
          f"{candidates.nbytes / 2**30:.2f} GiB; wall time of parallel_elda (eps={args.epsilon}, kappa={args.kappa})")
    times = {}
    for workers in (1, 2):
        with DaskShards(n_workers=workers) as executor:
            keep_open = Borrowed(executor)
            started = time.perf_counter()  # fresh cluster: writes the candidates' memory map once
            parallel_elda(corpus, candidates, args.kappa, epsilon=args.epsilon, seed=args.seed, executor=keep_open)
            first = time.perf_counter() - started
            repeats = []
            for _ in range(args.repeats):
                started = time.perf_counter()
                solution = parallel_elda(corpus, candidates, args.kappa, epsilon=args.epsilon, seed=args.seed, executor=keep_open)
                repeats.append(time.perf_counter() - started)
            peaks = executor.client.run(_peak_resident_gib)
            times[workers] = (first, float(np.median(repeats)))
            print(f"{workers} worker(s): first run {first:.2f} s, repeat runs median {times[workers][1]:.2f} s "
                  f"(of {', '.join(f'{t:.2f}' for t in repeats)}), F = {solution.log_posterior:.3f}, "
                  f"rounds {solution.stats['adaptive_rounds']}, peak RSS per worker "
                  f"{', '.join(f'{p:.2f}' for p in peaks.values())} GiB", flush=True)
    print(f"speed-up 1 -> 2 workers: first run {times[1][0] / times[2][0]:.2f}x, repeat runs {times[1][1] / times[2][1]:.2f}x")


def _peak_resident_gib() -> float:
    """This process's peak resident memory (VmHWM). Not ru_maxrss: Linux keeps that across
    execve, so a spawned Dask worker would report its parent's peak."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**20
    return float("nan")


def _memory_shares():
    """(USS, PSS) of this process in GiB: USS leaves out pages that other processes also map (the
    shared candidate map); PSS counts each shared page divided by the number of its mappers."""
    import psutil

    info = psutil.Process().memory_full_info()
    return info.uss / 2**30, info.pss / 2**30


def synthetic(args):
    from topicbench.core.dask_shards import DaskShards

    started = time.perf_counter()
    corpus = synthetic_corpus(args.vocabulary, n_documents=args.documents, doc_length=args.doc_length)
    candidates = keyword_candidates(corpus, "raw_umass")
    print(f"synthetic corpus: D={corpus.n_documents} V={corpus.n_words} tokens={corpus.n_tokens}; "
          f"candidates {candidates.n_topics} ({candidates.n_stored / 1e6:.1f}M stored, "
          f"{candidates.nbytes / 2**30:.2f} GiB) in {time.perf_counter() - started:.1f} s", flush=True)
    with DaskShards(n_workers=args.workers) as executor:
        started = time.perf_counter()
        solution = parallel_elda(corpus, candidates, args.kappa, epsilon=args.epsilon, seed=args.seed, executor=Borrowed(executor))
        seconds = time.perf_counter() - started
        peaks = executor.client.run(_peak_resident_gib)
        shares = executor.client.run(_memory_shares)
    print(f"parallel E-LDA on {args.workers} workers: {seconds:.1f} s, {solution.stats['adaptive_rounds']} rounds, "
          f"{solution.stats['gain_evaluations'] / 1e9:.2f}e9 gain evaluations, F = {solution.log_posterior:.1f}")
    for worker, peak in sorted(peaks.items()):
        uss, pss = shares[worker]
        print(f"  worker {worker}: peak RSS {peak:.2f} GiB (counts the shared candidate map); at the end "
              f"private (USS) {uss:.2f} GiB, proportional share (PSS) {pss:.2f} GiB")
    print(f"  driver peak memory: {_peak_resident_gib():.2f} GiB")




def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", choices=("quality", "rounds", "scaling", "synthetic"))
    parser.add_argument("--kappa", type=float, default=2.0)
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--documents", type=int, default=200_000)
    parser.add_argument("--vocabulary", type=int, default=20_000)
    parser.add_argument("--doc-length", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="scaling: timed runs after the first")
    args = parser.parse_args()
    {"quality": quality, "rounds": rounds, "scaling": scaling, "synthetic": synthetic}[args.part](args)


if __name__ == "__main__":
    main()
