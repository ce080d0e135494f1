"""Benchmark coherence: topicbench vs gensim CoherenceModel used at its best, in the same run.

Scores 100 topics, the top 25 words of each topic of a K = 100 Gibbs LDA (tomotopy, alpha = 0.1,
eta = 0.01, fixed alpha, seed 0) fitted on congress, at N = 5, 10, 15, 20, 25 with UMass, UCI,
NPMI and C_V over congress itself.

- topicbench: ``coherence(topics, congress, all four measures, N grid)`` from scratch: one count
  per distinct window (documents, 10, 110), then every measure and N from those counts. The numba
  kernels are loaded (JIT cache) on a tiny corpus first, so the timing is of the work itself.
- gensim at its best: per measure, one ``CoherenceModel(topn=25, processes=1)`` accumulates once;
  each smaller N reuses its accumulator (``model.topn = n``). The shared ``Dictionary`` is built
  outside the timing.

The LDA fit is not timed. Both sides' values are compared (max absolute difference).

    nice -n 10 .venv/bin/python benchmarks/bench_coherence.py
    nice -n 10 .venv/bin/python benchmarks/bench_coherence.py --iterations 500 --seed 1
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
TOP_N = (5, 10, 15, 20, 25)
GENSIM_NAMES = {"umass": "u_mass", "uci": "c_uci", "npmi": "c_npmi", "cv": "c_v"}


def lda_topics(corpus, n_topics: int, iterations: int, seed: int, top_n: int) -> list[list[str]]:
    """Top words of a tomotopy Gibbs LDA fitted on the corpus."""
    import tomotopy

    model = tomotopy.LDAModel(k=n_topics, alpha=0.1, eta=0.01, seed=seed)
    model.optim_interval = 0
    for text in corpus.texts():
        model.add_doc(text)
    model.train(iterations, workers=1)
    return [[word for word, _ in model.get_topic_words(k, top_n=top_n)] for k in range(n_topics)]


def time_topicbench(topics, corpus):
    from topicbench.core.preprocess import corpus_from_token_lists
    from topicbench.core.metrics.coherence import coherence

    warm = corpus_from_token_lists([["a", "b", "c"], ["b", "c", "a", "a"]])
    started = time.perf_counter()
    coherence([["a", "b", "c"]], warm, tuple(GENSIM_NAMES), (2, 3))  # load the JIT-compiled kernels
    print(f"numba kernels loaded (or compiled) on a toy corpus in {time.perf_counter() - started:.2f} s (not timed)")
    started = time.perf_counter()
    results = coherence(topics, corpus, tuple(GENSIM_NAMES), TOP_N)
    return time.perf_counter() - started, results


def time_gensim(topics, texts, dictionary):
    from gensim.models.coherencemodel import CoherenceModel

    values, seconds = {}, {}
    for name, gensim_name in GENSIM_NAMES.items():
        started = time.perf_counter()
        model = CoherenceModel(topics=topics, texts=texts, dictionary=dictionary, coherence=gensim_name,
                               topn=max(TOP_N), processes=1)
        values[name] = {}
        for n in sorted(TOP_N, reverse=True):
            model.topn = n  # reuses the accumulator built at the largest N
            values[name][n] = np.asarray(model.get_coherence_per_topic(), dtype=np.float64)
        seconds[name] = time.perf_counter() - started
        print(f"  gensim {gensim_name:7s} {seconds[name]:8.2f} s", flush=True)
    return seconds, values


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(SHARED_DATA / "congress"))
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from gensim.corpora import Dictionary

    from topicbench.core.io import load_corpus
    from topicbench.core.preprocess import PreprocessConfig

    corpus = load_corpus(args.corpus, PreprocessConfig(preprocessed=True))
    print(f"corpus {corpus.name}: {corpus.n_documents} documents, {corpus.n_words} words, {corpus.n_tokens} tokens")
    started = time.perf_counter()
    topics = lda_topics(corpus, args.topics, args.iterations, args.seed, max(TOP_N))
    distinct = len({word for topic in topics for word in topic})
    print(f"topics: tomotopy LDA K = {args.topics}, {args.iterations} iterations, seed {args.seed} "
          f"({time.perf_counter() - started:.1f} s, not timed); {distinct} distinct words in the top {max(TOP_N)}")

    ours_seconds, ours = time_topicbench(topics, corpus)
    print(f"topicbench, all four measures x N = {TOP_N}: {ours_seconds:.2f} s")

    texts = corpus.texts()
    dictionary = Dictionary(texts)
    print("gensim CoherenceModel at its best (one accumulation per measure, reused across N):")
    gensim_seconds, gensim_values = time_gensim(topics, texts, dictionary)
    total = sum(gensim_seconds.values())

    worst = max(
        float(np.nanmax(np.abs(ours[name].per_topic[n] - gensim_values[name][n])))
        for name in GENSIM_NAMES for n in TOP_N
    )
    print()
    print(f"{'measure':8s} " + " ".join(f"{'N=' + str(n):>9s}" for n in TOP_N))
    for name in GENSIM_NAMES:
        print(f"{name:8s} " + " ".join(f"{ours[name].mean[n]:9.4f}" for n in TOP_N))
    print()
    print(f"max |topicbench - gensim| over 100 topics x 4 measures x 5 N: {worst:.2e}")
    print(f"topicbench: {ours_seconds:.2f} s   gensim: {total:.2f} s   speed-up: {total / ours_seconds:.0f}x")


if __name__ == "__main__":
    main()
