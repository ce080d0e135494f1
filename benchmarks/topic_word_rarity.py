"""How rare are a model's top words? The measured side of the report's Set 2 gap paragraphs.

For each tracked run of the given labels (one seed), reads its topics from the MLflow store and
prints the median document frequency of the topics' top-N words and the share of top-N word pairs
that never occur in one document (UMass scores such a pair log(1e-12 / D(w)), about -27).

    .venv/bin/python benchmarks/topic_word_rarity.py --tracking-uri sqlite:////root/topicbench-paper/mlflow.db \\
        --labels fastopic fastopic_vocab2000 fastopic_vocab1000 gibbs elda_cooccurrence
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_elda import SHARED_DATA  # noqa: E402


def rarity(corpus, topics, n: int) -> tuple[float, float]:
    """(median document frequency of the top-n words, share of top-n pairs never in one document)."""
    present = (corpus.doc_term > 0).astype(np.float64).tocsc()
    frequency = np.asarray(present.sum(axis=0)).ravel()
    index = corpus.word_index
    tops = [[index[w] for w in words[:n]] for words in topics if len(words) >= n]
    pairs = [(t[i], t[j]) for t in tops for i in range(1, n) for j in range(i)]
    never = sum(present[:, a].multiply(present[:, b]).sum() == 0 for a, b in pairs)
    return float(np.median(frequency[np.concatenate(tops)])), never / len(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", required=True)
    parser.add_argument("--experiment", default="paper")
    parser.add_argument("--labels", nargs="+", required=True)
    parser.add_argument("--corpora", nargs="+", default=["congress", "20ng_politics", "reuters"])
    parser.add_argument("--seed", default="0")
    parser.add_argument("--top-n", type=int, default=5)
    args = parser.parse_args()
    from mlflow.tracking import MlflowClient

    from topicbench.core.io import load_corpus
    from topicbench.core.preprocess import PreprocessConfig

    client = MlflowClient(args.tracking_uri)
    experiment = client.get_experiment_by_name(args.experiment)
    if experiment is None:
        sys.exit(f"no experiment {args.experiment!r} at {args.tracking_uri}")
    print(f"{'corpus':14s} {'label':22s} {'topics':>6s} {'median df':>9s} {'pairs never together':>20s}")
    for name in args.corpora:
        corpus = load_corpus(SHARED_DATA / name, PreprocessConfig(preprocessed=True))
        for label in args.labels:
            runs = client.search_runs([experiment.experiment_id], f"params.model_label = '{label}' and "
                                      f"params.corpus = '{name}' and params.seed = '{args.seed}'")
            finished = [run for run in runs if run.info.status == "FINISHED"]
            if not finished:
                print(f"{name:14s} {label:22s} no finished run")
                continue
            records = json.loads(Path(client.download_artifacts(finished[0].info.run_id, "topics.json")).read_text())
            topics = [record["words"].split() for record in records]
            median, never = rarity(corpus, topics, args.top_n)
            print(f"{name:14s} {label:22s} {len(topics):6d} {median:9.1f} {never:20.2f}")


if __name__ == "__main__":
    main()
