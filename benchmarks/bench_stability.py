"""Benchmark topic stability (core/metrics/stability.py) on outputs of E-LDA's and a baseline's size.

Synthetic cases, each a pair of "seeds" of one model (run B: run A's topics perturbed, a tenth
of them replaced by new ones, shuffled):

- keyword topics (E-LDA): constant-plus-sparse, 3,000 topics x 10,000 words, each row storing
  about 300 words (Zipf-like word frequencies, so rows share words as keyword topics do) at
  (count + eps) / norm, eps / norm elsewhere, eps = 1e-5 (the generators' default): the pairs take
  the kernel's series path;
- heavy constants: the same shapes with 1-10% of each row's mass on its constant and stored values
  as small as it: every pair is merged word by word (the kernel's worst case; skip it with
  ``--skip-worst-case``);
- dense: two 200 x 10,000 matrices, Dirichlet(0.05) rows.

For each case and measure (``jensen_shannon``, ``top_words``) it times :func:`stability` (all
pairwise similarities, the Hungarian matching and the summary) and reports the peak resident
memory above the level before the call (psutil, sampled every 5 ms in a thread) and the peak of
numpy's allocations (tracemalloc; the numba kernels' output arrays are numpy's too). The kernels are
compiled (or loaded from numba's cache) on a tiny instance first, outside the timing.

With ``--paper`` it times instead what a report or an export spends scoring the stability of the
paper's runs (results/paper/bundle: its (corpus, model) pairs, their topics and each model's own
vocabulary size, three seeds each; the bundle holds no matrices, so they are synthesised in the
form each model's fits have: E-LDA's as keyword topics, the same fit at every seed as its exact
greedy gives; Gibbs samplers' as counts plus β = 0.01 on every word (dense arrays, each row mostly
its smoothing constant); BERTopic's as c-TF-IDF rows, zero but for ~300 words; the neural models'
as softmax rows, no two entries alike; each seed a perturbed copy), before and after the
permutation test (core/metrics/stability_chance.py):

- before: every pair of seeds scored, E-LDA's included, and the chance level as 10 shuffles of
  seeds 0 and 1 with every topic matched (one shuffle timed, times 10; one E-LDA pair timed,
  times the pairs);
- after: :func:`topicbench.tasks.results.stability.model_stability` as a report calls it: a
  deterministic model is not scored, the others' chance level is the permutation test over every
  pair, many-topic runs sampled, and dense rows that are mostly one value compacted
  (:func:`topicbench.core.metrics.stability.compacted`), dense many-word runs read on a sample of
  their words (:mod:`topicbench.core.metrics.stability_sampled`); ``--uncompacted`` times the same
  without either (the code before them), ``--after-only`` skips the "before" column.

    nice -n 10 .venv/bin/python benchmarks/bench_stability.py
    nice -n 10 .venv/bin/python benchmarks/bench_stability.py --elda-topics 1000 --threads 1
    nice -n 10 .venv/bin/python benchmarks/bench_stability.py --paper [--bundle results/paper/bundle]

``--chance`` times the chance level alone for three seeds of one non-deterministic keyword-topic
model (``--elda-topics`` x ``--words``, each seed a perturbed copy), before (10 shuffles of seeds
0 and 1, every topic matched: one timed, times 10) and after (the permutation test, sampled).
"""

from __future__ import annotations

import argparse
import threading
import time
import tracemalloc
from pathlib import Path

import numba
import numpy as np
import psutil

from topicbench.core.metrics.stability import MEASURES, stability
from topicbench.core.topic_word import ConstantPlusSparse


def elda_like(n_topics: int, n_words: int, stored: int, rng, epsilon: float = 1e-5) -> ConstantPlusSparse:
    """Keyword topics as E-LDA's generators make them: p = (count + eps) / norm at ~``stored`` words
    co-occurring with the keyword (drawn with Zipf-like word frequencies), eps / norm elsewhere;
    keyword frequencies spread the row totals over three orders of magnitude."""
    frequency = 1.0 / np.arange(1, n_words + 1) ** 0.8
    frequency /= frequency.sum()
    lengths = rng.integers(stored // 2, 3 * stored // 2 + 1, size=n_topics)
    columns = [np.sort(rng.choice(n_words, size=int(n), replace=False, p=frequency)) for n in lengths]
    counts = [rng.geometric(0.3, size=int(n)) * float(10 ** rng.uniform(0, 3)) for n in lengths]
    norms = np.array([c.sum() for c in counts]) + n_words * epsilon
    values = [(c + epsilon) / norm for c, norm in zip(counts, norms)]
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return ConstantPlusSparse(epsilon / norms, indptr, np.concatenate(columns).astype(np.int64),
                              np.concatenate(values), n_words)


def heavy_constants(n_topics: int, n_words: int, stored: int, rng) -> ConstantPlusSparse:
    """The kernel's worst case: 1-10% of each row's mass on its constant, stored values as small as
    the constant, so no pair takes the series and every pair is merged word by word."""
    matrix = elda_like(n_topics, n_words, stored, rng)
    unstored = rng.uniform(0.01, 0.1, size=n_topics)
    values = rng.gamma(0.5, size=matrix.n_stored)
    rows = np.repeat(np.arange(n_topics), np.diff(matrix.indptr))
    values *= (1 - unstored[rows]) / np.bincount(rows, weights=values, minlength=n_topics)[rows]
    return ConstantPlusSparse(unstored / (n_words - np.diff(matrix.indptr)), matrix.indptr, matrix.indices,
                              values, n_words)


def other_seed(matrix, fresh, rng, replaced: float = 0.1):
    """Run B: the topics of ``matrix`` perturbed (stored values x U(0.7, 1.3), renormalised), a share
    of them replaced by the same rows of ``fresh`` (new topics of the same kind), all shuffled."""
    n_topics = matrix.shape[0]
    order = rng.permutation(n_topics)
    keep = rng.uniform(size=n_topics) >= replaced
    if isinstance(matrix, ConstantPlusSparse):
        noisy = ConstantPlusSparse(matrix.row_constants, matrix.indptr, matrix.indices,
                                   matrix.values * rng.uniform(0.7, 1.3, size=matrix.values.shape), matrix.n_columns)
        rows = np.where(keep, np.arange(n_topics), n_topics + np.arange(n_topics))
        return _stack(noisy.normalised_rows(), fresh).take(rows[order])
    noisy = matrix * rng.uniform(0.7, 1.3, size=matrix.shape)
    noisy /= noisy.sum(axis=1, keepdims=True)
    return np.where(keep[:, None], noisy, fresh)[order]


def _stack(first: ConstantPlusSparse, second: ConstantPlusSparse) -> ConstantPlusSparse:
    return ConstantPlusSparse(
        np.concatenate([first.row_constants, second.row_constants]),
        np.concatenate([first.indptr, second.indptr[1:] + first.indptr[-1]]),
        np.concatenate([first.indices, second.indices]), np.concatenate([first.values, second.values]),
        first.n_columns,
    )


class PeakMemory:
    """Peak RSS above the starting level, sampled in a thread, and tracemalloc's peak."""

    def __enter__(self):
        self.process = psutil.Process()
        self.start = self.peak = self.process.memory_info().rss
        self.running = True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        tracemalloc.start()
        self.thread.start()
        return self

    def _sample(self):
        while self.running:
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.005)

    def __exit__(self, *exc):
        self.running = False
        self.thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)
        self.traced_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        self.rss_mb = (self.peak - self.start) / 2**20
        self.traced_mb = self.traced_peak / 2**20


def run_case(name: str, a, b) -> None:
    for measure in MEASURES:
        with PeakMemory() as memory:
            started = time.perf_counter()
            score = stability(a, b, measure)
            seconds = time.perf_counter() - started
        print(f"{name:<38} {measure:<15} {seconds:8.2f} s   peak RSS +{memory.rss_mb:7.1f} MB   "
              f"numpy peak {memory.traced_mb:7.1f} MB   mean matched {score.mean_matched_similarity:.3f}   "
              f"share {score.share_reappearing:.3f}")


def paper_shapes(bundle: Path) -> list:
    """(corpus, model, topics, words) of every (corpus, model) of a bundle: the most topics any of
    its seeds used, and its vocabulary size (read from its first run's output.json, whose words a
    bundle of format 3 keeps in its table ``vocabularies``)."""
    import json
    import tarfile

    import pandas as pd

    runs = pd.read_parquet(bundle / "tables" / "runs.parquet")
    runs = runs[runs.status == "FINISHED"]
    table = bundle / "tables" / "vocabularies.parquet"
    sizes = pd.read_parquet(table).groupby("vocabulary").size().to_dict() if table.exists() else {}
    shapes = []
    for (corpus, model), group in runs.groupby(["corpus", "model"]):
        for run_id in group.run_id:
            archive = bundle / "artifacts" / f"{run_id}.tar.gz"
            if archive.exists():
                with tarfile.open(archive) as tar:
                    if "output/output.json" in tar.getnames():
                        words = json.load(tar.extractfile("output/output.json"))["vocabulary"]
                        n_words = sizes[words["bundle_vocabulary"]] if isinstance(words, dict) else len(words)
                        shapes.append((corpus, model, int(group.num_topics_used.max()), int(n_words)))
                        break
    return shapes


def gibbs_like(n_topics: int, n_words: int, rng, beta: float = 0.01) -> np.ndarray:
    """A collapsed Gibbs sampler's topics, dense: (count + β) / norm, most words never drawn (2-5%
    of them drawn, geometric counts), so most of each row is its smoothing constant."""
    counts = np.zeros((n_topics, n_words))
    for row in counts:
        drawn = rng.choice(n_words, size=int(rng.integers(n_words // 50, n_words // 20)), replace=False)
        row[drawn] = rng.geometric(0.2, size=len(drawn))
    counts += beta
    return counts / counts.sum(axis=1, keepdims=True)


def bertopic_like(n_topics: int, n_words: int, rng) -> np.ndarray:
    """BERTopic's c-TF-IDF topics, dense: zero but for ~300 words a topic."""
    matrix = np.zeros((n_topics, n_words))
    for row in matrix:
        words = rng.choice(n_words, size=min(n_words, int(rng.integers(150, 450))), replace=False)
        row[words] = rng.gamma(0.5, size=len(words))
    return matrix / matrix.sum(axis=1, keepdims=True)


def softmax_like(n_topics: int, n_words: int, rng) -> np.ndarray:
    """A neural model's topics (ProdLDA, ETM, CTM, FASTopic): softmax rows, every entry its own."""
    logits = rng.normal(0.0, 2.0, size=(n_topics, n_words))
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True)


def paper_seeds(model: str, n_topics: int, n_words: int, rng) -> list:
    """Three seeds of a model of the paper, each in the form its fits have (module docstring): E-LDA
    one keyword-topic fit three times (its exact greedy ignores the seed), any other perturbed at
    each seed (a perturbed Gibbs or BERTopic row keeps its constant or its zeros)."""
    if model.startswith("elda"):
        fit = elda_like(n_topics, n_words, 300, rng)
        return [fit, fit, fit]
    make = gibbs_like if model.startswith("gibbs") else bertopic_like if model == "bertopic" else softmax_like
    first = make(n_topics, n_words, rng)
    return [first] + [_perturbed(first, make(n_topics, n_words, rng), rng) for _ in range(2)]


def _perturbed(matrix: np.ndarray, fresh: np.ndarray, rng, replaced: float = 0.1) -> np.ndarray:
    """:func:`other_seed` for dense rows that keeps each row's smallest value where it is (a Gibbs
    row's constant, BERTopic's zeros): only the other entries are scaled by U(0.7, 1.3)."""
    smallest = matrix.min(axis=1, keepdims=True)
    noisy = np.where(matrix > smallest, matrix * rng.uniform(0.7, 1.3, size=matrix.shape), matrix)
    noisy /= noisy.sum(axis=1, keepdims=True)
    keep = rng.uniform(size=matrix.shape[0]) >= replaced
    return np.where(keep[:, None], noisy, fresh)[rng.permutation(matrix.shape[0])]


def time_paper(bundle: Path, before: bool) -> None:
    """Seconds to score the stability of every (corpus, model) of the bundle, after (measured) and
    before (from its timed parts; see the module docstring)."""
    from topicbench.core.metrics.stability import chance_stability, seed_stability
    from topicbench.tasks.results.stability import STABILITY_MEASURES, model_stability

    rng = np.random.default_rng(0)
    totals = {"after": 0.0, "after_cpu": 0.0, "before": 0.0}
    print(f"{'corpus':<14} {'model':<20} {'topics':>6} {'words':>6}   {'after s':>8} {'(CPU s)':>8}   {'before s':>8}")
    for corpus, model, n_topics, n_words in paper_shapes(bundle):
        seeds = paper_seeds(model, n_topics, n_words, rng)
        vocabulary = [tuple(map(str, range(n_words)))] * 3
        started, cpu = time.perf_counter(), time.process_time()
        row = model_stability(seeds, vocabulary, [0, 1, 2])
        after, after_cpu = time.perf_counter() - started, time.process_time() - cpu
        old = float("nan")
        if before:
            old = 0.0
            for measure in STABILITY_MEASURES:
                started = time.perf_counter()
                if row["deterministic"]:  # the old code scored the pairs of one fit: one timed, times 3
                    stability(seeds[0], seeds[1], measure)
                    old += 3 * (time.perf_counter() - started)
                else:
                    seed_stability(seeds, measure)
                    old += time.perf_counter() - started
                started = time.perf_counter()
                chance_stability(seeds[0], seeds[1], measure, rng=np.random.default_rng(0), draws=1)
                old += 10 * (time.perf_counter() - started)  # ten shuffles, each matched in full
        totals["after"] += after
        totals["after_cpu"] += after_cpu
        totals["before"] += old
        verdict = "not applicable" if row["deterministic"] else (
            f"JS {row['jensen_shannon_mean']:.4f}, chance {row['jensen_shannon_chance']:.4f} "
            f"± {row['jensen_shannon_chance_error']:.4f}, p = {row['jensen_shannon_chance_p']:.2f}")
        print(f"{corpus:<14} {model:<20} {n_topics:>6} {n_words:>6}   {after:8.2f} {after_cpu:8.2f}   {old:8.2f}   {verdict}",
              flush=True)
    print(f"total: after {totals['after']:.1f} s ({totals['after_cpu']:.1f} CPU s), before {totals['before']:.1f} s")


def time_chance(n_topics: int, n_words: int, stored: int, rng) -> None:
    """Seconds of the chance level of three seeds of keyword topics, before and after, per measure."""
    from topicbench.core.metrics.stability import chance_stability
    from topicbench.core.metrics.stability_chance import chance_test

    first = elda_like(n_topics, n_words, stored, rng)
    seeds = [first] + [other_seed(first, elda_like(n_topics, n_words, stored, rng), rng) for _ in range(2)]
    print(f"chance level, keyword topics {n_topics} x {n_words}, 3 seeds")
    for measure in MEASURES:
        started = time.perf_counter()
        chance_stability(seeds[0], seeds[1], measure, rng=np.random.default_rng(0), draws=1)
        before = 10 * (time.perf_counter() - started)
        started = time.perf_counter()
        test = chance_test(seeds, measure, rng=np.random.default_rng(0), observed=1.0)
        after = time.perf_counter() - started
        print(f"{measure:<15} before {before:7.1f} s (10 draws, seeds 0-1)   after {after:6.1f} s "
              f"({test.permutations} draws over {test.pairs} pairs, {test.sampled_topics} topics a draw): "
              f"chance {test.chance:.4f} ± {test.chance_sd:.4f} [± {test.chance_error:.4f}]", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elda-topics", type=int, default=3000)
    parser.add_argument("--dense-topics", type=int, default=200)
    parser.add_argument("--words", type=int, default=10_000)
    parser.add_argument("--stored", type=int, default=300, help="mean stored entries per E-LDA-like row")
    parser.add_argument("--threads", type=int, default=None, help="numba threads (default: numba's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-worst-case", action="store_true", help="skip the heavy-constants case (all pairs merged)")
    parser.add_argument("--paper", action="store_true", help="time scoring the paper bundle's runs, before and after")
    parser.add_argument("--bundle", type=Path, default=Path("results/paper/bundle"))
    parser.add_argument("--after-only", action="store_true", help="with --paper: skip timing the old scoring")
    parser.add_argument("--chance", action="store_true", help="time the chance level alone, before and after")
    parser.add_argument("--uncompacted", action="store_true",
                        help="with --paper: score dense rows as they are, on every word (the code before issue 49's)")
    args = parser.parse_args()
    if args.uncompacted:
        import topicbench.core.metrics.stability as scoring
        import topicbench.core.metrics.stability_sampled as sampled

        scoring.COMPACT_SHARE = 2.0  # no row has more than all of its entries alike: nothing is compacted
        sampled.WORD_BUDGET = float("inf")  # no pairs of seeds cost more: every word read
    if args.threads:
        numba.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    if args.paper:
        warm = elda_like(4, 50, 5, rng)
        for measure in MEASURES:  # compile or load every kernel outside the timing
            stability(warm, warm.toarray(), measure, top_n=3), stability(warm.toarray(), warm.toarray(), measure, top_n=3)
        time_paper(args.bundle, before=not args.after_only)
        return
    if args.chance:
        warm = elda_like(4, 50, 5, rng)
        for measure in MEASURES:  # compile or load every kernel outside the timing
            stability(warm, warm, measure, top_n=3)
        time_chance(args.elda_topics, args.words, args.stored, rng)
        return

    started = time.perf_counter()
    tiny = elda_like(4, 50, 5, rng)
    for measure in MEASURES:  # compile or load every kernel outside the timing
        stability(tiny, tiny, measure, top_n=3), stability(tiny.toarray(), tiny, measure, top_n=3)
        stability(tiny.toarray(), tiny.toarray(), measure, top_n=3)
    print(f"kernels loaded (or compiled) in {time.perf_counter() - started:.1f} s; numba threads: {numba.get_num_threads()}")

    def case(name, make):
        a = make()
        if isinstance(a, ConstantPlusSparse):
            print(f"{name}: {a.shape[0]} x {a.shape[1]}, {a.n_stored / a.shape[0]:.0f} stored per row "
                  f"({a.nbytes / 2**20:.1f} MB; dense would be {8 * a.shape[0] * a.shape[1] / 2**20:.0f} MB)")
        run_case(f"{name} {a.shape[0]} x {a.shape[1]}", a, other_seed(a, make(), rng))

    case("keyword topics", lambda: elda_like(args.elda_topics, args.words, args.stored, rng))
    if not args.skip_worst_case:
        case("heavy constants", lambda: heavy_constants(args.elda_topics, args.words, args.stored, rng))
    case("dense", lambda: rng.dirichlet(np.full(args.words, 0.05), size=args.dense_topics))

if __name__ == "__main__":
    main()
