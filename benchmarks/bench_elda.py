"""Benchmark exact E-LDA: wall time and peak memory per corpus, against the reference figures.

Each corpus runs in a fresh subprocess so that its peak memory (max RSS) is its own.

    .venv/bin/python benchmarks/bench_elda.py                      # shared corpora + |V| = 100,000 synthetic
    .venv/bin/python benchmarks/bench_elda.py --corpora congress --generator cooccurrence

Reference figures: the authors' serial code on this kind of machine (docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path


SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
REFERENCE = {  # F, optimise seconds, peak memory GB (authors' serial code, raw_umass, kappa 2)
    "congress": (-2_798_524.681983, "192-210", 3.5),
    "20ng_politics": (-1_773_191.100469, "285", 6.7),
    "reuters": (-3_489_874.824673, "236", 11.1),
}


def measure_one(name: str, generator: str, kappa: float) -> dict:
    """Run inside the child process: load, generate candidates, optimise; report times and memory."""
    from topicbench.core.elda.generators import keyword_candidates
    from topicbench.core.elda.greedy import fast_greedy
    from topicbench.core.io import load_corpus
    from topicbench.core.preprocess import PreprocessConfig
    from topicbench.core.synthetic import synthetic_lda_corpus

    baseline_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    if name.startswith("synthetic"):
        n_words = int(name.split(":")[1])
        # 50 topics each owning |V| / 50 words, picked uniformly (Zipf exponent 0); about 60 tokens a document
        corpus = synthetic_lda_corpus(20_000, n_words, n_topics=50, doc_length=60, alpha=0.1, zipf_exponent=0.0)
    else:
        corpus = load_corpus(SHARED_DATA / name, PreprocessConfig(preprocessed=True))
    load_s = time.perf_counter() - started
    # Compile the kernels on a tiny corpus first so the timings below are of the work itself.
    tiny = corpus.subset(range(min(5, corpus.n_documents)))
    fast_greedy(tiny, keyword_candidates(tiny, generator), 1.0)
    started = time.perf_counter()
    candidates = keyword_candidates(corpus, generator)
    generate_s = time.perf_counter() - started
    solution = fast_greedy(corpus, candidates, kappa)
    optimise_s = solution.stats["optimise_seconds"]
    return {
        "corpus": name,
        "documents": corpus.n_documents,
        "vocabulary": corpus.n_words,
        "tokens": corpus.n_tokens,
        "candidates": candidates.n_topics,
        "stored_entries": candidates.n_stored,
        "candidate_store_mb": candidates.nbytes / 2**20,
        "links": solution.n_links,
        "log_posterior": solution.log_posterior,
        "topics_used": int(len(solution.topics_used)),
        "load_s": load_s,
        "generate_s": generate_s,
        "optimise_s": optimise_s,
        "entries_read": solution.stats["entries_read"],
        "baseline_mb": baseline_mb,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", nargs="*", default=["congress", "20ng_politics", "reuters", "synthetic:100000"])
    parser.add_argument("--generator", default="raw_umass")
    parser.add_argument("--kappa", type=float, default=2.0)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--json", help="also write the rows as JSON here")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure_one(args.one, args.generator, args.kappa)))
        return
    rows = []
    for name in args.corpora:
        if not name.startswith("synthetic") and not (SHARED_DATA / name).is_dir():
            print(f"skip {name}: {SHARED_DATA / name} absent", file=sys.stderr)
            continue
        out = subprocess.run(
            [sys.executable, __file__, "--one", name, "--generator", args.generator, "--kappa", str(args.kappa)],
            capture_output=True, text=True, check=True,
        )
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        ref = REFERENCE.get(name) if args.generator == "raw_umass" and args.kappa == 2.0 else None
        total = row["generate_s"] + row["optimise_s"]
        line = (
            f"{name:18s} D={row['documents']:>6} V={row['vocabulary']:>6} cand={row['candidates']:>6} "
            f"stored={row['stored_entries'] / 1e6:6.1f}M  F={row['log_posterior']:.6f}  "
            f"generate {row['generate_s']:.2f}s + optimise {row['optimise_s']:.2f}s = {total:.2f}s  "
            f"peak {row['peak_mb'] / 1024:.2f} GB (python+numba baseline {row['baseline_mb'] / 1024:.2f} GB)"
        )
        if ref:
            rel = abs(row["log_posterior"] - ref[0]) / abs(ref[0])
            line += f"\n{'':18s} reference F={ref[0]:.6f} (rel. diff {rel:.1e}), authors' serial code {ref[1]} s, {ref[2]} GB"
        print(line, flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
