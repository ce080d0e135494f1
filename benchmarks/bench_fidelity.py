"""Benchmark the neural baselines' fidelity: ours against the authors' code, same corpus and seeds.

For each model, ours (``MODELS.get(name)(K, random_state=seed, **settings).fit(corpus)``) and the reference
are fitted at their defaults on the same bag of words over several seeds, and their topics
scored with the project's metrics (UMass@10, NPMI@10 over the corpus itself, topic
diversity@25). The table gives mean ± sd over seeds, fit seconds and peak memory, and says
whether ours lies within seed-to-seed noise of the reference: |mean difference| <= 2 × the pooled
sd (sqrt((sd_ours² + sd_ref²) / 2)), with Welch's t-test p-value beside it.

The references, each trained by its own training loop at its own defaults:

- prodlda: OCTIS's PyTorch AVITM, ``AVITM(num_topics=K, use_partitions=False).train_model(...)``
  (``octis/models/pytorchavitm``); its topics ranked by β, as its ``get_topics``.
- etm: OCTIS's ETM, ``ETM(num_topics=K, use_partitions=False).train_model(..., top_words=25)``
  (``octis/models/ETM.py`` over the authors' ``ETM_model/etm.py``).
- ctm: the authors' package ``contextualized_topic_models`` (installed): ``CombinedTM`` with
  ``num_data_loader_workers=0``, ``fit`` on a ``CTMDataset`` of the corpus's bag of words and the
  same document embeddings ours reads (:func:`topicbench.baselines.embeddings.document_embeddings`).
- fastopic: the authors' package ``fastopic`` (installed): ``FASTopic`` with a preprocess object
  returning the corpus's bag of words and vocabulary, those document embeddings preset, and a
  document-embedding object that is never called.

OCTIS is not installed (it pins old packages): ``--octis`` names a checkout of its repository or a
bare git directory (read with ``git archive``), and the few modules needed are copied into a
temporary folder for this run and imported from there; nothing of OCTIS is kept. Its two
wrappers receive the corpus as token lists, which their CountVectorizer turns into the same bag
of words (checked before each fit).

Each fit runs in a fresh subprocess (its peak memory its own; a failure or time-out leaves the
others alone), with torch, OpenMP and MKL on one thread for both implementations. Fit seconds are
``output.fit_seconds`` for ours (the training, the document proportions and the output; cached
embeddings loaded before) and, for a reference, the same span measured the same way
(:func:`topicbench.baselines.base.measure`) around its training call and the reading of its
topics; the references' own preprocessing (CountVectorizer, dense matrices) is inside it.

    nice -n 5 .venv/bin/python benchmarks/bench_fidelity.py --octis /work/.mirror/MIND-Lab+OCTIS/repo
    nice -n 5 .venv/bin/python benchmarks/bench_fidelity.py --octis ~/src/OCTIS --models prodlda etm \\
        --json out/fidelity.json
    nice -n 5 .venv/bin/python benchmarks/bench_fidelity.py --octis ~/src/OCTIS --models prodlda \\
        --seeds 0 1 --set prodlda epochs=2          # a quick run (--set applies to both sides)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from bench_baselines import parse_settings  # the same --set MODEL key=value syntax
from bench_baselines import run_child as run_script_child

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
MODELS = ("prodlda", "etm", "ctm", "fastopic")
#: What each reference is, for the table.
REFERENCES = {
    "prodlda": "OCTIS AVITM",
    "etm": "OCTIS ETM",
    "ctm": "contextualized_topic_models CombinedTM",
    "fastopic": "fastopic FASTopic",
}
#: Models whose fit reads the document embeddings (computed once, first, and cached).
EMBEDDING_MODELS = {"ctm", "fastopic"}
#: Our setting -> the reference's argument, for ``--set`` (keys without one change ours only).
REFERENCE_NAMES = {
    "prodlda": {"epochs": "num_epochs", "batch_size": "batch_size", "learning_rate": "lr",
                "momentum": "momentum", "dropout": "dropout"},
    "etm": {"epochs": "num_epochs", "batch_size": "batch_size", "learning_rate": "lr", "weight_decay": "wdecay",
            "dropout": "dropout", "hidden_size": "t_hidden_size", "activation": "activation",
            "embedding_size": ("rho_size", "embedding_size")},
    "ctm": {"epochs": "num_epochs", "batch_size": "batch_size", "learning_rate": "lr", "momentum": "momentum",
            "dropout": "dropout", "hidden_sizes": "hidden_sizes"},
    "fastopic": {"epochs": "epochs", "learning_rate": "learning_rate", "dt_alpha": "DT_alpha",
                 "tw_alpha": "TW_alpha", "theta_temperature": "theta_temp"},
}
#: Scores in the table: (score key, column title).
SCORES = (("umass@10", "UMass@10"), ("npmi@10", "NPMI@10"), ("topic_diversity@25", "TD@25"))
#: Words kept per topic (TD@25 needs 25).
TOP_WORDS = 25
#: The OCTIS files the references import (their package __init__ files are replaced by empty
#: ones: OCTIS's own import every module of the package, dashboards and optimisers included).
OCTIS_FILES = (
    "octis/models/model.py",
    "octis/models/early_stopping/__init__.py",
    "octis/models/early_stopping/pytorchtools.py",
    "octis/models/pytorchavitm/__init__.py",
    "octis/models/pytorchavitm/AVITM.py",
    "octis/models/pytorchavitm/avitm/__init__.py",
    "octis/models/pytorchavitm/avitm/avitm_model.py",
    "octis/models/pytorchavitm/avitm/decoder_network.py",
    "octis/models/pytorchavitm/avitm/inference_network.py",
    "octis/models/pytorchavitm/datasets/__init__.py",
    "octis/models/pytorchavitm/datasets/bow.py",
    "octis/models/base_etm.py",
    "octis/models/ETM.py",
    "octis/models/ETM_model/__init__.py",
    "octis/models/ETM_model/data.py",
    "octis/models/ETM_model/etm.py",
)
#: Environment of every fit: one thread everywhere, no progress bars.
CHILD_ENVIRONMENT = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                     "TQDM_DISABLE": "1", "TOKENIZERS_PARALLELISM": "false"}


def load(corpus: str):
    from topicbench.core.io import load_corpus
    from topicbench.core.preprocess import PreprocessConfig

    path = SHARED_DATA / corpus if (SHARED_DATA / corpus).is_dir() else Path(corpus)
    return load_corpus(path, PreprocessConfig(preprocessed=True))


# ------------------------------------------------------------------------------------------------
# OCTIS's modules, copied for the run
# ------------------------------------------------------------------------------------------------


def copy_octis(source: str, destination: Path) -> Path:
    """Copy :data:`OCTIS_FILES` from an OCTIS checkout or bare git directory into ``destination``
    (with empty ``octis/__init__.py`` and ``octis/models/__init__.py``); return ``destination``."""
    source = Path(source).expanduser()
    if (source / "octis" / "models").is_dir():
        for name in OCTIS_FILES:
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / name, target)
    else:  # a bare repository (or a .git directory): its HEAD
        archive = subprocess.run(["git", "--git-dir", str(source), "archive", "--format=tar", "HEAD", "--", *OCTIS_FILES],
                                 capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(destination)], input=archive.stdout, check=True)
    for package in ("octis/__init__.py", "octis/models/__init__.py"):
        (destination / package).write_text('"""Emptied for this benchmark: the copied modules only."""\n')
    return destination


def octis_revision(source: str) -> str:
    source = Path(source).expanduser()
    git_dir = source / ".git" if (source / ".git").exists() else source
    try:
        return subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown"


# ------------------------------------------------------------------------------------------------
# Fits (in a child process)
# ------------------------------------------------------------------------------------------------


def ranked_topics(topic_word, vocabulary, top_n: int = TOP_WORDS) -> list[list[str]]:
    """Each row's ``top_n`` highest-weighted words, best first (as the references' get_topics)."""
    order = np.argsort(-np.asarray(topic_word, dtype=np.float64), axis=1, kind="stable")[:, :top_n]
    return [[vocabulary[w] for w in row] for row in order]


def fit_ours(corpus, model: str, num_topics: int, seed: int, settings: dict) -> dict:
    from topicbench.baselines.registry import MODELS as REGISTRY

    output = REGISTRY.get(model)(num_topics, random_state=seed, **settings).fit(corpus).output_
    return {"topics": [list(words[:TOP_WORDS]) for words in output.topics], "seconds": output.fit_seconds,
            "peak_memory_mb": output.peak_memory_mb,
            "settings": {k: v for k, v in output.settings.items() if isinstance(v, (int, float, str, bool, type(None)))}}


class OctisDataset:
    """The two methods of OCTIS's ``Dataset`` its wrappers call with ``use_partitions=False``."""

    def __init__(self, corpus):
        self.corpus = corpus

    def get_corpus(self):
        return self.corpus.texts()

    def get_vocabulary(self):
        return list(self.corpus.vocabulary)


def check_octis_bag_of_words(corpus) -> None:
    """OCTIS's wrappers count the joined tokens with this CountVectorizer: it must give the corpus's
    own bag of words, or the two sides would not train on the same data."""
    from sklearn.feature_extraction.text import CountVectorizer

    vectorizer = CountVectorizer(vocabulary={w: i for i, w in enumerate(corpus.vocabulary)}, token_pattern=r"(?u)\b\w+\b")
    counts = vectorizer.fit_transform([" ".join(tokens) for tokens in corpus.texts()])
    if counts.shape != corpus.doc_term.shape or (counts != corpus.doc_term).nnz:
        raise RuntimeError("OCTIS's CountVectorizer does not reproduce the corpus's bag of words")


def reference_arguments(model: str, settings: dict) -> dict:
    arguments = {}
    for key, value in settings.items():
        names = REFERENCE_NAMES[model].get(key)
        for name in (names,) if isinstance(names, str) else names or ():
            arguments[name] = tuple(value) if isinstance(value, list) else value
    return arguments


def fit_reference(corpus, model: str, num_topics: int, seed: int, settings: dict, octis_dir: str | None) -> dict:
    import torch

    from topicbench.baselines.base import measure

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    arguments = reference_arguments(model, settings)
    vocabulary = list(corpus.vocabulary)
    if model in ("prodlda", "etm"):
        if octis_dir is None:
            raise RuntimeError("the OCTIS references need --octis")
        sys.path.insert(0, octis_dir)
        if not hasattr(np, "Inf"):  # OCTIS's EarlyStopping starts from np.Inf, an alias NumPy 2 removed
            np.Inf = np.inf
        check_octis_bag_of_words(corpus)
    embeddings = None
    if model in EMBEDDING_MODELS:
        from topicbench.baselines.embeddings import document_embeddings

        embeddings = document_embeddings(corpus)
    workdir = tempfile.mkdtemp(prefix="fidelity-")
    previous = os.getcwd()
    os.chdir(workdir)  # anything a reference writes (checkpoints) goes here
    try:
        with measure() as usage, contextlib.redirect_stdout(io.StringIO()):
            if model == "prodlda":
                from octis.models.pytorchavitm.AVITM import AVITM

                wrapper = AVITM(num_topics=num_topics, use_partitions=False, **arguments)
                result = wrapper.train_model(OctisDataset(corpus))
                topics = ranked_topics(result["topic-word-matrix"], vocabulary)  # β, ranked as its get_topics
                defaults = wrapper.hyperparameters
            elif model == "etm":
                from octis.models.ETM import ETM

                wrapper = ETM(num_topics=num_topics, use_partitions=False, **arguments)
                result = wrapper.train_model(OctisDataset(corpus), top_words=TOP_WORDS)
                topics = [list(words) for words in result["topics"]]
                defaults = wrapper.hyperparameters
            elif model == "ctm":
                import scipy.sparse as sp
                from contextualized_topic_models.datasets.dataset import CTMDataset
                from contextualized_topic_models.models.ctm import CombinedTM

                package = CombinedTM(bow_size=corpus.n_words, contextual_size=int(embeddings.shape[1]),
                                     n_components=num_topics, num_data_loader_workers=0, **arguments)
                dataset = CTMDataset(X_contextual=embeddings, X_bow=sp.csr_matrix(corpus.doc_term),
                                     idx2token=dict(enumerate(vocabulary)))
                package.fit(dataset)
                topics = package.get_topic_lists(TOP_WORDS)
                defaults = {key: getattr(package, key) for key in ("num_epochs", "batch_size", "lr", "momentum",
                                                                   "dropout", "hidden_sizes", "learn_priors")}
            elif model == "fastopic":
                from fastopic import FASTopic

                fit_arguments = {key: arguments.pop(key) for key in ("epochs", "learning_rate") if key in arguments}
                package = FASTopic(num_topics, preprocess=PresetBagOfWords(corpus), doc_embed_model=NoDocumentEmbedder(),
                                   **arguments)
                package.fit_transform([" ".join(tokens) for tokens in corpus.texts()], preset_doc_embeddings=embeddings,
                                      **fit_arguments)
                topics = ranked_topics(package.get_beta(), vocabulary)
                defaults = {"arguments": arguments, **fit_arguments}
            else:
                raise ValueError(f"no reference for {model!r}")
    finally:
        os.chdir(previous)
        shutil.rmtree(workdir, ignore_errors=True)
    return {"topics": topics, "seconds": usage["seconds"], "peak_memory_mb": usage["peak_memory_mb"],
            "settings": {key: value for key, value in defaults.items() if isinstance(value, (int, float, str, bool, tuple, type(None)))}}


class PresetBagOfWords:
    """FASTopic's ``preprocess``: the corpus's own bag of words and vocabulary."""

    def __init__(self, corpus):
        self.corpus = corpus

    def preprocess(self, docs):
        return {"train_bow": self.corpus.doc_term, "vocab": list(self.corpus.vocabulary)}


class NoDocumentEmbedder:
    """FASTopic's ``doc_embed_model``; never called, the embeddings are preset."""

    def encode(self, docs):
        raise RuntimeError("the benchmark presets the document embeddings")


def child_fit(corpus_name: str, model: str, implementation: str, num_topics: int, seed: int, settings: dict,
              octis_dir: str | None) -> dict:
    corpus = load(corpus_name)
    if implementation == "ours":
        return fit_ours(corpus, model, num_topics, seed, settings)
    return fit_reference(corpus, model, num_topics, seed, settings, octis_dir)


def child_embed(corpus_name: str) -> dict:
    from topicbench.baselines.embeddings import document_embeddings

    corpus = load(corpus_name)
    started = time.perf_counter()
    vectors = document_embeddings(corpus)
    return {"seconds": time.perf_counter() - started, "shape": list(vectors.shape)}


def run_child(arguments: list[str], timeout: float) -> dict:
    return run_script_child(arguments, timeout, script=__file__, environment=CHILD_ENVIRONMENT)


# ------------------------------------------------------------------------------------------------
# Scores and statistics (in the parent)
# ------------------------------------------------------------------------------------------------


def score_topics(topics, corpus, context) -> dict:
    """The project's metrics of a fit's topics (the metrics read the topics alone)."""
    from topicbench.core.metrics.scoring import score
    from topicbench.core.output import TopicModelOutput

    output = TopicModelOutput(model="fidelity", vocabulary=tuple(corpus.vocabulary), topics=topics,
                              topic_word_matrix=np.zeros((len(topics), 0)),
                              topic_document_matrix=np.zeros((len(topics), 0)))
    scores = score(output, context, ["umass", "npmi", "topic_diversity"], seed=0).values
    return {key: float(scores[key]) for key, _ in SCORES}


def summarize(values) -> dict:
    values = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=np.float64)
    if values.size == 0:
        return {"mean": None, "sd": None, "n": 0}
    return {"mean": float(values.mean()), "sd": float(values.std(ddof=1)) if values.size > 1 else None,
            "n": int(values.size)}


def compare(ours, reference) -> dict:
    """Whether ours lies within seed-to-seed noise of the reference: |Δ mean| <= 2 × pooled sd,
    and Welch's t-test."""
    from scipy import stats

    a = np.asarray(ours, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    result = {"difference": float(a.mean() - b.mean()) if a.size and b.size else None}
    if a.size < 2 or b.size < 2:
        return {**result, "pooled_sd": None, "within_noise": None, "welch_p": None}
    pooled = float(np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2))
    within = abs(result["difference"]) <= 2 * pooled
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # identical scores (sd 0) give no p-value
        p_value = float(stats.ttest_ind(a, b, equal_var=False).pvalue)
    return {**result, "pooled_sd": pooled, "within_noise": bool(within), "welch_p": None if np.isnan(p_value) else p_value}


def summarize_model(runs: list[dict]) -> dict:
    summary: dict = {}
    for implementation in ("ours", "reference"):
        done = [run for run in runs if run["implementation"] == implementation and "scores" in run]
        summary[implementation] = {
            **{key: summarize([run["scores"][key] for run in done]) for key, _ in SCORES},
            "seconds": summarize([run["seconds"] for run in done]),
            "peak_memory_mb": summarize([run["peak_memory_mb"] for run in done]),
            "failed": [run["error"] for run in runs if run["implementation"] == implementation and "error" in run],
        }
    summary["comparison"] = {
        key: compare([run["scores"][key] for run in runs if run["implementation"] == "ours" and "scores" in run],
                     [run["scores"][key] for run in runs if run["implementation"] == "reference" and "scores" in run])
        for key, _ in SCORES
    }
    return summary


def _format(stat: dict, digits: int) -> str:
    if stat["mean"] is None:
        return "failed"
    sd = "" if stat["sd"] is None else f" ± {stat['sd']:.{digits}f}"
    return f"{stat['mean']:.{digits}f}{sd}"


def print_table(summaries: dict) -> None:
    print()
    print("| model | implementation | " + " | ".join(title for _, title in SCORES) + " | fit seconds | peak memory (MB) |")
    print("|---|---|" + "---:|" * (len(SCORES) + 2))
    for model, summary in summaries.items():
        for implementation in ("ours", "reference"):
            side = summary[implementation]
            label = "ours" if implementation == "ours" else f"reference ({REFERENCES[model]})"
            cells = [_format(side[key], 3) for key, _ in SCORES]
            failed = f" ({len(side['failed'])} failed)" if side["failed"] else ""
            print(f"| {model} | {label}{failed} | " + " | ".join(cells)
                  + f" | {_format(side['seconds'], 1)} | {_format(side['peak_memory_mb'], 0)} |")
        cells = []
        for key, _ in SCORES:
            comparison = summary["comparison"][key]
            if comparison["difference"] is None:
                cells.append("–")
                continue
            verdict = "" if comparison["within_noise"] is None else (" within noise" if comparison["within_noise"] else " OUTSIDE noise")
            p_value = "" if comparison["welch_p"] is None else f", p={comparison['welch_p']:.2f}"
            cells.append(f"{comparison['difference']:+.3f}{verdict}{p_value}")
        print(f"| {model} | ours − reference | " + " | ".join(cells) + " | | |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="20ng_politics", help="a folder of ../shared/data or an OCTIS folder (preprocessed)")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--num-topics", type=int, default=50)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--octis", help="an OCTIS checkout or bare git directory (needed for prodlda and etm)")
    parser.add_argument("--set", nargs="+", action="append", metavar=("MODEL", "KEY=VALUE"),
                        help="override our settings; those with a counterpart in the reference change it too")
    parser.add_argument("--timeout", type=float, default=7200, help="seconds per fit")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        logging.basicConfig(level=logging.WARNING)
        kind, *rest = args.child
        if kind == "embed":
            result = child_embed(rest[0])
        else:
            corpus_name, model, implementation, num_topics, seed, settings, octis_dir = rest
            result = child_fit(corpus_name, model, implementation, int(num_topics), int(seed), json.loads(settings),
                               octis_dir or None)
        print(json.dumps(result, default=str))
        return 0

    from topicbench.core.metrics.context import MetricContext, MetricInputs, MetricSettings

    extra_settings = parse_settings(args.set)
    unknown = sorted(set(extra_settings) - set(args.models))
    if unknown:
        parser.error(f"--set names models not run: {unknown}")
    if {"prodlda", "etm"} & set(args.models) and not args.octis:
        parser.error("prodlda and etm need --octis (an OCTIS checkout or bare git directory)")
    corpus = load(args.corpus)
    print(f"corpus {corpus.name}: {corpus.n_documents} documents, {corpus.n_words} words, {corpus.n_tokens} tokens; "
          f"K = {args.num_topics}, seeds {args.seeds}", flush=True)
    for model, settings in extra_settings.items():
        ignored = sorted(set(settings) - set(REFERENCE_NAMES[model]))
        print(f"{model}: --set {settings}" + (f" ({', '.join(ignored)}: ours only)" if ignored else ""), flush=True)

    octis_temporary = tempfile.TemporaryDirectory(prefix="octis-") if args.octis else None
    octis_dir = str(copy_octis(args.octis, Path(octis_temporary.name))) if octis_temporary else ""
    context = MetricContext(MetricInputs(corpus=corpus, settings=MetricSettings(top_n=(10, 25))))
    results: dict = {"corpus": corpus.summary(), "num_topics": args.num_topics, "seeds": args.seeds,
                     "settings": extra_settings, "references": {m: REFERENCES[m] for m in args.models},
                     "octis_revision": octis_revision(args.octis) if args.octis else None, "models": {}}
    try:
        if EMBEDDING_MODELS & set(args.models):
            embedded = run_child(["embed", args.corpus], args.timeout)
            results["document_embeddings"] = embedded
            status = embedded["error"] if "error" in embedded else f"{embedded['seconds']:.1f} s (cached after)"
            print(f"document embeddings: {status}", flush=True)
        for model in args.models:
            runs = []
            for seed in args.seeds:
                for implementation in ("ours", "reference"):
                    run = run_child(["fit", args.corpus, model, implementation, str(args.num_topics), str(seed),
                                     json.dumps(extra_settings.get(model, {})), octis_dir], args.timeout)
                    run = {"implementation": implementation, "seed": seed, **run}
                    if "topics" in run:
                        run["scores"] = score_topics(run["topics"], corpus, context)
                    runs.append(run)
                    _print_run(model, run)
            results["models"][model] = {"runs": runs, "summary": summarize_model(runs)}
            if args.json:  # written as each model finishes
                _write_json(args.json, results)
    finally:
        if octis_temporary:
            octis_temporary.cleanup()
    summaries = {model: entry["summary"] for model, entry in results["models"].items()}
    print_table(summaries)
    if args.json:
        _write_json(args.json, results)
    return 0


def _write_json(path: str, results: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(results, indent=1, default=str))


def _print_run(model: str, run: dict) -> None:
    name = f"{model} {run['implementation']} seed {run['seed']}"
    if "error" in run:
        print(f"{name:>28}: FAILED {run['error']}", flush=True)
    else:
        scores = "  ".join(f"{title} {run['scores'][key]:.3f}" for key, title in SCORES)
        print(f"{name:>28}: {run['seconds']:7.1f} s  {run['peak_memory_mb']:6.0f} MB  {scores}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
