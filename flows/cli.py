"""The ``topicbench`` command line.

``topicbench elda`` runs exact E-LDA on a corpus (the core directly, no orchestration).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

from topicbench.core.config import DEFAULT_TOP_WORDS, GENERATORS
from topicbench.core.validation import InputError
from topicbench.flows.config import DEFAULT_TRACKING_URI

logger = logging.getLogger("topicbench")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="topicbench", description="Evaluate E-LDA and established topic models."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show debug logging")
    commands = parser.add_subparsers(dest="command", required=True)

    elda = commands.add_parser(
        "elda",
        help="run exact E-LDA (keyword topics, 1 - 1/e greedy) on a corpus",
        description="Run exact E-LDA: keyword-anchored candidate topics, FastInitialize + FastGreedy.",
    )
    elda.add_argument(
        "--corpus", default="lee",
        help="an OCTIS folder (corpus.tsv [+ vocabulary.txt]), a text file with one document a "
        "line, or 'lee' (gensim's bundled Lee news corpus; the default)",
    )
    elda.add_argument("--generator", choices=GENERATORS, default="raw_umass", help="keyword topic generator (spec §2)")
    elda.add_argument("--kappa", type=float, default=2.0, help="mean number of topics per document (>= 1)")
    elda.add_argument(
        "--preprocessed", action="store_true",
        help="take the corpus as already preprocessed: tokens split on single spaces, nothing else changed",
    )
    elda.add_argument("--stem", action="store_true", help="Snowball-stem words (raw text only)")
    elda.add_argument("--min-df", type=int, default=1, help="keep words in at least this many documents (raw text only)")
    elda.add_argument("--drop-unknown", action="store_true", help="drop tokens missing from vocabulary.txt instead of failing")
    elda.add_argument("--algorithm", choices=("greedy", "parallel"), default="greedy",
                      help="exact FastGreedy, or the low-adaptivity parallel algorithm on Dask")
    elda.add_argument("--epsilon", type=float, default=0.1, help="accuracy parameter of the parallel algorithm")
    elda.add_argument("--seed", type=int, default=0, help="seed of the parallel algorithm")
    elda.add_argument("--workers", type=int, help="workers of the local Dask cluster (default: cores)")
    elda.add_argument("--scheduler", metavar="ADDRESS", help="run on an existing Dask scheduler instead")
    elda.add_argument("--top", type=int, default=10, help="number of topics to print")
    elda.add_argument("--top-words", type=int, default=DEFAULT_TOP_WORDS, help="words shown per topic")
    elda.add_argument("--json", metavar="OUT", help="write the result as JSON to OUT")
    elda.add_argument("--parquet", metavar="DIR", help="write links, token topics and topics as Parquet to DIR")
    elda.set_defaults(handler=run_elda)

    run = commands.add_parser(
        "run", help="run a benchmark (corpora x models x seeds) and write its report",
        description="Run a benchmark from a YAML config (no config: the built-in Lee corpus with "
        "E-LDA, gensim LDA and Gibbs LDA), track it in MLflow and write results/<experiment>/report.*",
    )
    run.add_argument("config", nargs="?", help="a benchmark YAML config")
    run.add_argument("--tracking-uri", help=f"MLflow tracking URI (default: {DEFAULT_TRACKING_URI})")
    run.add_argument("--experiment", help="MLflow experiment name (overrides the config)")
    run.add_argument("--workers", type=int, help="Dask worker processes fitting models concurrently")
    run.add_argument("--scheduler", metavar="ADDRESS", help="run the fits on an existing Dask scheduler")
    run.add_argument("--seeds", type=int, nargs="+", help="seeds (overrides the config)")
    run.add_argument("--no-report", action="store_true", help="do not write the report afterwards")
    run.add_argument("--out", help="report folder (default: results/<experiment>)")
    run.set_defaults(handler=run_benchmark_command)

    report = commands.add_parser("report", help="build the report of an experiment from its tracked runs")
    report.add_argument("--experiment", required=True)
    report.add_argument("--tracking-uri", help=f"MLflow tracking URI (default: {DEFAULT_TRACKING_URI})")
    report.add_argument("--out", help="report folder (default: results/<experiment>)")
    report.set_defaults(handler=run_report_command)

    paper = commands.add_parser(
        "paper", help="reproduce the paper's Experiment Sets 1 and 2 on ../shared/data",
        description="Run the paper's experiments (spec §4) and write their reports to results/paper/.",
    )
    paper.add_argument("--baselines", nargs="*", help="Set 2 baselines to include (default: every one registered)")
    paper.add_argument("--corpora", nargs="+", help="subset of congress reuters 20ng_politics")
    paper.add_argument("--data", help="folder holding congress/, reuters/ and 20ng_politics/ (default: ../shared/data)")
    paper.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    paper.add_argument("--iterations", type=int, default=1000, help="Gibbs sweeps (the paper: 1000)")
    paper.add_argument("--workers", type=int, default=2)
    paper.add_argument("--scheduler", metavar="ADDRESS", help="run the fits on an existing Dask scheduler")
    paper.add_argument("--tracking-uri", help=f"MLflow tracking URI (default: {DEFAULT_TRACKING_URI})")
    paper.add_argument("--out", default="results/paper")
    paper.set_defaults(handler=run_paper_command)

    ui = commands.add_parser("ui", help="open the MLflow UI on 127.0.0.1")
    ui.add_argument("--tracking-uri", help=f"MLflow tracking URI (default: {DEFAULT_TRACKING_URI})")
    ui.add_argument("--port", type=int, default=5000)
    ui.set_defaults(handler=run_ui_command)
    return parser


def _tracking_uri(value: str | None) -> str:
    """The given URI, or the default sqlite database under ./results/ as an absolute path."""
    if value:
        return value
    from pathlib import Path

    return "sqlite:///" + str(Path.cwd() / "results" / "mlflow.db")


def run_benchmark_command(args) -> int:
    from topicbench.flows.benchmark import run_benchmark
    from topicbench.flows.config import BenchmarkConfig, default_config

    config = BenchmarkConfig.from_yaml(args.config) if args.config else default_config()
    overrides = {"tracking_uri": _tracking_uri(args.tracking_uri) if (args.tracking_uri or not args.config or config.tracking_uri == DEFAULT_TRACKING_URI) else config.tracking_uri}
    if args.experiment:
        overrides["experiment"] = args.experiment
    if args.workers:
        overrides["workers"] = args.workers
    if args.scheduler:
        overrides["scheduler"] = args.scheduler
    if args.seeds:
        overrides["seeds"] = args.seeds
    config = config.replace(**overrides)
    started = time.perf_counter()
    state = run_benchmark(config)
    seconds = time.perf_counter() - started
    failed = state.is_failed()
    summary = state.result(raise_on_failure=False) if not failed else None
    print(f"benchmark {config.experiment!r}: {'FAILED' if failed else 'completed'} in {seconds:.0f} s; "
          f"tracking at {config.tracking_uri}")
    if not args.no_report:
        from topicbench.flows.report import report

        written = report(config.experiment, config.tracking_uri, args.out)
        print(f"report: {written['markdown']} and {written['html']}")
    if failed:
        print(f"topicbench: error: {state.message}", file=sys.stderr)
        return 1
    if isinstance(summary, dict):
        print(f"{len(summary['logged'])} runs logged, {summary['skipped_finished']} already finished (skipped)")
    return 0


def run_paper_command(args) -> int:
    from topicbench.flows.paper import SHARED_DATA, PAPER_NOTES, run_paper

    started = time.perf_counter()
    from topicbench.flows.paper import PAPER_CORPORA, SET2_BASELINES

    state = run_paper(
        data=args.data or SHARED_DATA, seeds=args.seeds, iterations=args.iterations, workers=args.workers,
        tracking_uri=_tracking_uri(args.tracking_uri), out=args.out, notes=PAPER_NOTES,
        baselines=tuple(args.baselines) if args.baselines is not None else tuple(SET2_BASELINES),
        corpora=tuple(args.corpora or PAPER_CORPORA), scheduler=args.scheduler,
    )
    print(f"paper reproduction finished in {(time.perf_counter() - started) / 60:.1f} min; report in {args.out}/")
    if state.is_failed():
        print(f"topicbench: error: {state.message}", file=sys.stderr)
        return 1
    return 0


def run_report_command(args) -> int:
    from topicbench.flows.report import report

    written = report(args.experiment, _tracking_uri(args.tracking_uri), args.out)
    print(f"report: {written['markdown']} and {written['html']} ({written['finished']} runs, {written['failed']} failed)")
    return 0


def run_ui_command(args) -> int:
    import shutil
    import subprocess

    mlflow = shutil.which("mlflow") or str(__import__("pathlib").Path(sys.executable).with_name("mlflow"))
    uri = _tracking_uri(args.tracking_uri)
    print(f"MLflow UI for {uri} on http://127.0.0.1:{args.port} (Ctrl-C stops it)")
    return subprocess.call([mlflow, "ui", "--backend-store-uri", uri, "--host", "127.0.0.1", "--port", str(args.port)])


def run_elda(args) -> int:
    from topicbench.core.elda import ELDA
    from topicbench.core.io import load_corpus
    from topicbench.core.preprocess import PreprocessConfig

    config = PreprocessConfig(
        preprocessed=args.preprocessed,
        stem=args.stem,
        min_df=args.min_df,
        unknown_words="drop" if args.drop_unknown else "error",
    )
    started = time.perf_counter()
    corpus = load_corpus(args.corpus, config)
    load_seconds = time.perf_counter() - started
    logger.info(
        "corpus %s: %d documents, %d words, %d tokens (read in %.1f s)",
        corpus.name, corpus.n_documents, corpus.n_words, corpus.n_tokens, load_seconds,
    )

    def progress(made, budget, log_posterior):
        logger.info("links %d/%d  F = %.6f", made, budget, log_posterior)

    model = ELDA(
        args.kappa, generator=args.generator, top_words=args.top_words, algorithm=args.algorithm,
        epsilon=args.epsilon, seed=args.seed, workers=args.workers, scheduler=args.scheduler,
    )
    model.fit(corpus, on_progress=progress)
    solution = model.solution_
    solution.stats["load_seconds"] = load_seconds
    print(format_summary(solution, args.top, args.top_words))
    if args.json:
        path = solution.to_json(args.json, top_n=args.top_words)
        print(f"\nwrote {path}")
    if args.parquet:
        folder = solution.to_parquet(args.parquet)
        print(f"wrote {folder}/links.parquet, token_topics.parquet, topics.parquet")
    return 0


def format_summary(solution, top: int, top_words: int) -> str:
    """A readable summary: F, links, topics used, and the top topics with keywords and words."""
    stats = solution.stats
    table = solution.topic_table(top_words)
    lines = [
        f"E-LDA on {solution.corpus.name}: {solution.corpus.n_documents} documents, "
        f"{solution.corpus.n_words} words, {solution.corpus.n_tokens} tokens",
        f"generator {solution.candidates.generator}: {solution.candidates.n_topics} candidate topics",
        f"kappa {solution.kappa:g}: {solution.n_links} links, {len(table)} topics used",
        f"log posterior F = {solution.log_posterior:.6f}  (empty solution {solution.null_log_posterior:.3f})",
        f"time: candidates {stats.get('generate_seconds', 0.0):.2f} s, optimise {stats['optimise_seconds']:.2f} s"
        + (f" ({stats['algorithm']}: {stats['adaptive_rounds']} adaptive rounds, "
           f"{stats['gain_evaluations']} gain evaluations)" if "adaptive_rounds" in stats else ""),
        "",
        f"top {min(top, len(table))} topics by documents:",
    ]
    for record in table[:top]:
        lines.append(f"  [{record['label']}] {record['documents']} docs: {' '.join(record['top_words'])}")
    return "\n".join(lines)


def _tracking_error():
    from topicbench.tasks.tracking import TrackingError

    return TrackingError


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
        stream=sys.stderr,
    )
    for noisy in ("httpx", "httpcore", "alembic", "mlflow.store", "distributed", "prefect.task_runs"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        return args.handler(args)
    except (InputError, ConnectionError, _tracking_error()) as error:
        print(f"topicbench: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
