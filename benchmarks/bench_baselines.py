"""Benchmark the registered topic models: fit time and peak memory on one corpus, as a table.

Each run (a model with its settings) goes in a fresh subprocess, so that its peak memory is its
own and a failure or time-out leaves the other runs alone. The defaults are the paper's
(the E-LDA paper's experiments): K = 100 topics, each model's own defaults, and Gibbs LDA in its three settings
(Gibbs, Gibbs-Sparse, Gibbs-Bayes). BERTopic is run without K, as in the paper (HDBSCAN decides).

The sentence embeddings of the documents (all-MiniLM-L6-v2) are computed once, first, and timed
on their own row; BERTopic, CTM, FASTopic, KeyNMF, S³ and GMM then read them from the cache, so
their rows are the fit proper. So are the vocabulary's word embeddings, which KeyNMF and S³ read.
HDP, like BERTopic and E-LDA, chooses its own number of topics (its row says how many).

    nice -n 10 .venv/bin/python benchmarks/bench_baselines.py                      # congress, every model
    nice -n 10 .venv/bin/python benchmarks/bench_baselines.py --runs gibbs gensim_lda --num-topics 50
    nice -n 10 .venv/bin/python benchmarks/bench_baselines.py --set prodlda epochs=20 --json out/bench.json
"""

from __future__ import annotations

import argparse
import json
import os
import logging
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

#: Run name -> (registry model, settings). Settings not named are the model's defaults.
RUNS = {
    "gensim_lda": ("gensim_lda", {}),
    "gibbs": ("gibbs_lda", {"alpha": 1.0, "optimize_alpha": False}),
    "gibbs_sparse": ("gibbs_lda", {"alpha": 0.1, "optimize_alpha": False}),
    "gibbs_bayes": ("gibbs_lda", {"alpha": 0.1, "optimize_alpha": True}),
    "prodlda": ("prodlda", {}),
    "ctm": ("ctm", {}),
    "etm": ("etm", {}),
    "bertopic": ("bertopic", {}),
    "fastopic": ("fastopic", {}),
    "elda": ("elda", {}),
    "nmf": ("nmf", {}),
    "lsi": ("lsi", {}),
    "hdp": ("hdp", {}),
    "keynmf": ("keynmf", {}),
    "s3": ("s3", {}),
    "gmm": ("gmm", {}),
}
#: Models that read the document embeddings.
EMBEDDING_MODELS = {"ctm", "bertopic", "fastopic", "keynmf", "s3", "gmm"}
#: Models that read the vocabulary's word embeddings (turftopic's KeyNMF and S³, from the cache).
WORD_EMBEDDING_MODELS = {"keynmf", "s3"}
#: Models that choose their number of topics (run without K).
NO_K_MODELS = {"bertopic", "elda", "hdp"}


def load(corpus: str):
    from topicbench.core.io import load_corpus
    from topicbench.core.preprocess import PreprocessConfig

    if corpus == "lee":  # the built-in corpus, raw text
        return load_corpus()
    path = SHARED_DATA / corpus if (SHARED_DATA / corpus).is_dir() else Path(corpus)
    return load_corpus(path, PreprocessConfig(preprocessed=True))


def child_embed(corpus_name: str) -> dict:
    """Compute (and cache) the document embeddings; report the time."""
    from topicbench.baselines.embeddings import document_embeddings

    corpus = load(corpus_name)
    started = time.perf_counter()
    vectors = document_embeddings(corpus, refresh=True)
    return {"seconds": time.perf_counter() - started, "detail": f"{vectors.shape[0]} x {vectors.shape[1]}"}


def child_embed_words(corpus_name: str) -> dict:
    """Compute (and cache) the vocabulary's word embeddings; report the time."""
    from topicbench.baselines.embeddings import word_vectors

    corpus = load(corpus_name)
    started = time.perf_counter()
    vectors = word_vectors(corpus.vocabulary)
    return {"seconds": time.perf_counter() - started, "detail": f"{vectors.shape[0]} x {vectors.shape[1]} (0 s when cached)"}


def child_fit(corpus_name: str, run: str, num_topics: int, seed: int, extra_settings: dict) -> dict:
    """Fit one run; report fit seconds, peak memory and a few resolved settings."""
    from topicbench.baselines.registry import MODELS

    corpus = load(corpus_name)
    model_name, settings = RUNS[run]
    settings = {**settings, **extra_settings.get(model_name, {})}
    chosen_k = None if model_name in NO_K_MODELS else num_topics
    model = MODELS.get(model_name)(chosen_k, random_state=seed, **settings).fit(corpus)
    output = model.output_
    detail = f"{output.n_topics} topics"
    if model_name == "gibbs_lda":
        detail += f", alpha sum {sum(model.alpha_):.3g}"
    return {
        "seconds": output.fit_seconds,
        "peak_memory_mb": output.peak_memory_mb,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "detail": detail,
        "settings": {k: v for k, v in output.settings.items() if not isinstance(v, list)},
    }


def run_child(arguments: list[str], timeout: float, *, script: str = __file__, environment: dict | None = None) -> dict:
    """Run ``script --child ARGUMENTS`` in a fresh process; its last JSON line, or {"error": why}."""
    command = [sys.executable, script, "--child", *arguments]
    try:
        finished = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                  env={**os.environ, **(environment or {})})
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in finished.stdout.splitlines() if line.startswith("{")]
    if finished.returncode != 0 or not lines:
        if finished.returncode < 0:
            reason = f"killed by {signal.Signals(-finished.returncode).name}"
        else:
            reason = (finished.stderr.strip().splitlines() or [f"exit status {finished.returncode}, no output"])[-1]
        return {"error": reason[:200]}
    return json.loads(lines[-1])


def parse_settings(pairs) -> dict:
    """``--set MODEL key=value ...`` -> {model: {key: value}} (values parsed as JSON when they can be)."""
    settings: dict = {}
    for model, *assignments in pairs or []:
        for assignment in assignments:
            key, _, value = assignment.partition("=")
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass
            settings.setdefault(model, {})[key] = value
    return settings


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="congress", help="a folder of ../shared/data or an OCTIS folder")
    parser.add_argument("--runs", nargs="+", default=list(RUNS), choices=list(RUNS))
    parser.add_argument("--num-topics", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", nargs="+", action="append", metavar=("MODEL", "KEY=VALUE"), help="override settings")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per run")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    extra_settings = parse_settings(args.set)

    if args.child:
        logging.basicConfig(level=logging.WARNING)
        kind, *rest = args.child
        if kind == "embed":
            result = child_embed(rest[0])
        elif kind == "embed_words":
            result = child_embed_words(rest[0])
        else:
            result = child_fit(rest[0], rest[1], int(rest[2]), int(rest[3]), json.loads(rest[4]))
        print(json.dumps(result))
        return 0

    corpus = load(args.corpus)
    print(f"corpus {corpus.name}: {corpus.n_documents} documents, {corpus.n_words} words, {corpus.n_tokens} tokens; "
          f"K = {args.num_topics}, seed {args.seed}", flush=True)
    results = {}
    runs = list(args.runs)
    if EMBEDDING_MODELS & {RUNS[run][0] for run in runs}:
        results["document embeddings"] = run_child(["embed", args.corpus], args.timeout)
        _print_row("document embeddings", results["document embeddings"])
    if WORD_EMBEDDING_MODELS & {RUNS[run][0] for run in runs}:
        results["word embeddings"] = run_child(["embed_words", args.corpus], args.timeout)
        _print_row("word embeddings", results["word embeddings"])
    for run in runs:
        results[run] = run_child(
            ["fit", args.corpus, run, str(args.num_topics), str(args.seed), json.dumps(extra_settings)], args.timeout
        )
        _print_row(run, results[run])
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"corpus": corpus.summary(), "num_topics": args.num_topics,
                                               "seed": args.seed, "results": results}, indent=1, default=str))
    print()
    print(f"| run | fit seconds | peak memory (MB) | result |")
    print(f"|---|---:|---:|---|")
    for run, result in results.items():
        if "error" in result:
            print(f"| {run} | failed | | {result['error']} |")
        else:
            memory = result.get("peak_memory_mb")
            print(f"| {run} | {result['seconds']:.1f} | {'' if memory is None else f'{memory:.0f}'} | {result['detail']} |")
    return 0


def _print_row(run: str, result: dict) -> None:
    if "error" in result:
        print(f"{run:>20}: FAILED {result['error']}", flush=True)
    else:
        print(f"{run:>20}: {result['seconds']:8.1f} s  {result.get('detail', '')}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
