"""The ``topicbench`` command line: the parser of every sub-command, and the commands' bodies.

``topicbench elda`` runs exact E-LDA on a corpus (the core directly, no orchestration). The
``search`` command lives in :mod:`.cli_search`, ``models list`` / ``metrics list`` in
:mod:`.cli_catalog` and ``ui`` in :mod:`.cli_ui`.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from pathlib import Path

from topicbench.core.config import DEFAULT_EPSILON, DEFAULT_GENERATOR, DEFAULT_TOP_WORDS, GENERATORS, MAX_SEED
from topicbench.core.dask_cluster import WORKER_WAIT_SECONDS
from topicbench.core.validation import InputError
from topicbench.flows.checks import (
    DEFAULT_CONNECT_TIMEOUT, check_output_file, check_output_folder, check_prefect_environment,
    check_scheduler_reachable, experiment_name, integer_at_least, integer_in, number_in,
)
from topicbench.flows.cli_catalog import add_catalog_commands
from topicbench.flows.cli_search import add_search_command
from topicbench.flows.cli_ui import add_ui_command
from topicbench.flows.cli_common import (
    CommandParser, check_services, config_from_command_line, hide_library_tracebacks as _hide_library_tracebacks, llm_arguments as _llm_arguments, llm_block as llm_block, check_llm_endpoint as _check_llm_endpoint, connect_timeout_argument as _connect_timeout_argument, default_report_folder as _default_report_folder, require_experiment, tracking_uri as _tracking_uri, config_tracking_uri as _config_tracking_uri, minutes as _minutes,
)
from topicbench.flows.config import DEFAULT_TRACKING_URI
from topicbench.flows.console import configure_console, quiet_library_progress_bars, quiet_worker_consoles
from topicbench.flows.data import DOWNLOAD_DEADLINE_SECONDS, DOWNLOAD_TIMEOUT_SECONDS
from topicbench.flows.runtime import prefect_defaults
from topicbench.flows.startup import defer_imports

logger = logging.getLogger("topicbench")


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``topicbench`` and every sub-command; each shows its options' defaults."""
    parser = CommandParser(
        prog="topicbench", description="Evaluate E-LDA and established topic models: benchmarks tracked in MLflow, "
        "their reports, the paper's experiments, and the corpora, models and metrics they use. "
        "`topicbench COMMAND --help` describes a command.",
    )
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="show debug logging, libraries' INFO messages and full tracebacks")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add_command in (_add_elda_command, _add_run_command, _add_serve_command, _add_report_command,
                        _add_paper_command, _add_data_command, add_catalog_commands, add_ui_command,
                        _add_compile_command, _add_schema_command, _add_judge_command, add_search_command):
        add_command(commands)
    return parser


def _add_elda_command(commands) -> None:
    """topicbench elda: E-LDA on one corpus, printed or written as JSON/Parquet."""
    elda = commands.add_parser(
        "elda",
        help="run exact E-LDA (keyword topics, 1 - 1/e greedy) on a corpus",
        description="Run exact E-LDA: keyword-anchored candidate topics, FastInitialize + FastGreedy.",
    )
    elda.add_argument(
        "--corpus", default="lee",
        help="an OCTIS folder (corpus.tsv [+ vocabulary.txt]), a text file with one document a "
        "line, or 'lee' (gensim's bundled Lee news corpus)",
    )
    elda.add_argument("--generator", choices=GENERATORS, default=DEFAULT_GENERATOR, help="keyword topic generator (spec §2)")
    elda.add_argument("--kappa", type=number_in(1), default=2.0, help="mean number of topics per document (>= 1)")
    elda.add_argument(
        "--preprocessed", action="store_true",
        help="take the corpus as already preprocessed: tokens split on single spaces, nothing else changed",
    )
    elda.add_argument("--stem", action="store_true", help="Snowball-stem words (raw text only)")
    elda.add_argument("--min-df", type=integer_at_least(1), default=1, help="keep words in at least this many documents (raw text only)")
    elda.add_argument("--drop-unknown", action="store_true", help="drop tokens missing from vocabulary.txt instead of failing")
    elda.add_argument("--algorithm", choices=("greedy", "parallel"), default="greedy",
                      help="exact FastGreedy, or the low-adaptivity parallel algorithm on Dask")
    elda.add_argument("--epsilon", type=number_in(0, 1, low_open=True), default=DEFAULT_EPSILON, help="accuracy parameter of the parallel algorithm")
    elda.add_argument("--seed", type=integer_in(0, MAX_SEED), default=0, help="seed of the parallel algorithm")
    elda.add_argument("--workers", type=integer_at_least(1), help="workers of the local Dask cluster (default: cores)")
    elda.add_argument("--scheduler", metavar="ADDRESS", help="run on an existing Dask scheduler instead")
    _connect_timeout_argument(elda)
    elda.add_argument(
        "--worker-timeout", type=number_in(0, low_open=True), default=WORKER_WAIT_SECONDS, metavar="SECONDS",
        help=f"when every Dask worker is gone, how long to wait for one to join before giving up (default: {WORKER_WAIT_SECONDS:g})",
    )
    elda.add_argument("--top", type=integer_at_least(0), default=10, help="number of topics to print")
    elda.add_argument("--top-words", type=integer_at_least(1), default=DEFAULT_TOP_WORDS, help="words shown per topic")
    elda.add_argument("--json", metavar="OUT", help="write the result as JSON to OUT")
    elda.add_argument("--parquet", metavar="DIR", help="write links, token topics and topics as Parquet to DIR")
    elda.set_defaults(handler=run_elda)


def _add_run_command(commands) -> None:
    """topicbench run: a benchmark from a config, tracked, with its report."""
    run = commands.add_parser(
        "run", help="run a benchmark (corpora x models x seeds) and write its report",
        description="Run a benchmark from a YAML config (no config: the built-in Lee corpus with "
        "E-LDA, gensim LDA and Gibbs LDA), track it in MLflow and write results/<experiment>/report.*",
    )
    run.add_argument("config", nargs="?", help="a benchmark YAML config (default: the built-in Lee benchmark)")
    run.add_argument("--tracking-uri", help=f"MLflow tracking URI (default: {DEFAULT_TRACKING_URI})")
    run.add_argument("--experiment", type=experiment_name,
                     help="MLflow experiment name (default: the config's experiment; 'lee-default' without a config)")
    run.add_argument("--workers", type=integer_at_least(1),
                     help="Dask worker processes fitting models concurrently (default: the config's workers, else 1)")
    run.add_argument("--scheduler", metavar="ADDRESS",
                     help="run the fits on an existing Dask scheduler (default: the config's, else a local cluster)")
    _connect_timeout_argument(run)
    run.add_argument("--seeds", type=integer_in(0, MAX_SEED), nargs="+",
                     help="seeds, one run each per corpus and model (default: the config's seeds, else 0)")
    run.add_argument("--no-report", action="store_true", help="do not write the report afterwards")
    run.add_argument("--out", help="report folder (default: results/<experiment>)")
    _llm_arguments(run)
    run.set_defaults(handler=run_benchmark_command, runs_flows=True)


def _add_serve_command(commands) -> None:
    """topicbench serve: the benchmark as a Prefect deployment, on a schedule or run by hand."""
    serve = commands.add_parser(
        "serve", help="serve a benchmark as a Prefect deployment (on a cron schedule, or run by hand)",
        description="Register the deployment topicbench-benchmark/NAME of a benchmark config with the Prefect "
        "server at PREFECT_API_URL and run its flow runs until stopped; each run reads the config afresh, "
        "skips finished runs and writes the report.",
    )
    serve.add_argument("config", help="a benchmark YAML config")
    serve.add_argument("--cron", help='a cron schedule, e.g. "0 2 * * *" (02:00 every night) (default: none, runs are '
                       'started by hand)')
    serve.add_argument("--name", help="the deployment's name (default: the config's experiment)")
    serve.add_argument("--tracking-uri", help=f"MLflow tracking URI (default: the config's, else {DEFAULT_TRACKING_URI})")
    serve.add_argument("--out", help="report folder (default: results/<experiment>)")
    serve.set_defaults(handler=run_serve_command, runs_flows=True)


def _add_report_command(commands) -> None:
    """topicbench report: the report of a tracked experiment."""
    report = commands.add_parser(
        "report", help="build the report of an experiment from its tracked runs",
        description="Read the runs of an experiment from the tracking store (nothing is fitted) and write its "
        "report, report.md and report.html, to --out; `topicbench run` does this itself unless given --no-report.",
    )
    report.add_argument("--experiment", type=experiment_name, required=True, metavar="NAME",
                        help="the MLflow experiment to report (a config's experiment: name)")
    report.add_argument("--tracking-uri", help=f"MLflow tracking URI (default: {DEFAULT_TRACKING_URI})")
    report.add_argument("--out", help="report folder (default: results/<experiment>)")
    report.set_defaults(handler=run_report_command, runs_flows=True)


def _add_paper_command(commands) -> None:
    """topicbench paper: the paper's Experiment Sets 1 and 2."""
    paper = commands.add_parser(
        "paper", help="reproduce the paper's Experiment Sets 1 and 2 (corpora: --data, ../shared/data or the data cache)",
        description="Run the paper's experiments (spec §4) and write their reports to results/paper/.",
    )
    paper.add_argument("--baselines", nargs="*", help="Set 2 baselines to include (default: every one registered)")
    paper.add_argument("--corpora", nargs="+", help="subset of congress reuters 20ng_politics (default: all three)")
    paper.add_argument("--data", help="folder holding congress/, reuters/ and 20ng_politics/ (default: ../shared/data "
                       "when it exists, else the data cache of `topicbench data fetch`)")
    paper.add_argument("--seeds", type=integer_in(0, MAX_SEED), nargs="+", default=[0, 1, 2],
                       help="seeds, one run each per corpus and model")
    paper.add_argument("--iterations", type=integer_at_least(1), default=1000, help="Gibbs sweeps (the paper: 1000)")
    paper.add_argument("--workers", type=integer_at_least(1), default=2,
                       help="Dask worker processes fitting models concurrently (ignored with --scheduler)")
    paper.add_argument("--scheduler", metavar="ADDRESS", help="run the fits on an existing Dask scheduler")
    _connect_timeout_argument(paper)
    paper.add_argument("--tracking-uri", help=f"MLflow tracking URI (default: {DEFAULT_TRACKING_URI})")
    paper.add_argument("--out", default="results/paper", help="folder of the paper's report (report.md and report.html)")
    _llm_arguments(paper)
    paper.set_defaults(handler=run_paper_command, runs_flows=True)


def _add_data_command(commands) -> None:
    """topicbench data list / fetch: the registry's public corpora, by name."""
    data = commands.add_parser(
        "data", help="list or fetch public benchmark corpora by name",
        description="The paper's corpora and the OCTIS benchmark datasets, fetched only by "
        "`topicbench data fetch` into the data cache ($TOPICBENCH_DATA, default under the user's cache).",
    )
    actions = data.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    actions.add_parser(
        "list", help="each dataset: what it is, size, documents, whether it is cached",
        description="List the datasets `topicbench data fetch` can download: each one's name, what it is, its download "
        "size and documents, and whether it is in the data cache already. Nothing is downloaded.",
    ).set_defaults(handler=run_data_list_command)
    fetch = actions.add_parser(
        "fetch", help="download a dataset (checksums verified) into the data cache",
        description="Download a dataset by name, check every file's checksum, convert a corpus to an OCTIS folder "
        "(corpus.tsv + vocabulary.txt) and keep it in the data cache, where configs and `topicbench paper` find it. "
        "A dataset already there is not downloaded again.",
    )
    fetch.add_argument("name", help="a dataset name from `topicbench data list`")
    fetch.add_argument("--dest", metavar="DIR", help="write DIR/NAME instead of the data cache (default: the data cache)")
    fetch.add_argument("--url", metavar="URL", help="a base URL (a mirror) in place of the published one (default: the published one)")
    fetch.add_argument("--timeout", type=number_in(0, low_open=True), default=DOWNLOAD_TIMEOUT_SECONDS, metavar="SECONDS",
                       help=f"how long to wait for the server to answer, and then for each next piece of a file "
                       f"(default: {DOWNLOAD_TIMEOUT_SECONDS:g})")
    fetch.add_argument("--deadline", type=number_in(0, low_open=True), default=DOWNLOAD_DEADLINE_SECONDS, metavar="SECONDS",
                       help=f"how long one file's whole download may take (default: {DOWNLOAD_DEADLINE_SECONDS:g})")
    fetch.set_defaults(handler=run_data_fetch_command)


def _add_compile_command(commands) -> None:
    """topicbench compile: numba's kernels compiled into its on-disk cache once per install."""
    compile_command = commands.add_parser(
        "compile", help="compile and cache E-LDA's numba kernels once (scripts/setup.sh runs it)",
        description="Compile every numba kernel of E-LDA and the metrics into numba's on-disk cache, "
        "by running each entry point on the built-in corpus, so that no later run compiles "
        "(a first run otherwise takes about 30 s longer). Kernels already cached are only loaded.",
    )
    compile_command.set_defaults(handler=run_compile_command)


def _add_schema_command(commands) -> None:
    """topicbench schema: the benchmark config's JSON Schema, for editors."""
    schema = commands.add_parser(
        "schema", help="print the benchmark config's JSON Schema (for editors' YAML support)",
        description="Print the JSON Schema (draft 2020-12) every benchmark config is checked against: its "
        "fields, each registered model's settings (plugins included), the metric and report-section names. "
        "A YAML language server reads it from a first line '# yaml-language-server: $schema=PATH'.",
    )
    schema.add_argument("--out", metavar="FILE", help="write it to FILE instead of printing it")
    schema.set_defaults(handler=run_schema_command)


def _add_judge_command(commands) -> None:
    """topicbench judge calibrate: an LLM judge against people's judgments of 300 topics."""
    judge = commands.add_parser(
        "judge", help="calibrate an LLM judge against human judgments of topics",
        description="The LLM metrics (llm_rating, llm_intrusion) ask an OpenAI-compatible endpoint. `judge calibrate` "
        "asks it about the 300 topics people judged in Hoyle et al. 2021 (`topicbench data fetch hoyle2021`) and "
        "reports Spearman's rho against people, with bootstrap intervals, beside the automated coherences.",
    )
    actions = judge.add_subparsers(dest="judge_command", metavar="ACTION", required=True)
    calibrate = actions.add_parser(
        "calibrate", help="rho of the judge's scores against people's, tracked in MLflow",
        description="Ask the LLM endpoint to rate, and to find the intruder in, each of the 300 topics people judged in "
        "Hoyle et al. 2021; print Spearman's rho of its scores against people's (with bootstrap intervals) beside "
        "the automated coherences', and track it as a run of the experiment 'judge-calibration'. Answers are cached.",
    )
    _llm_arguments(calibrate)
    calibrate.add_argument("--config", help="read the llm: block (endpoint and judge settings) from this benchmark config "
                           "(default: the --llm-* options alone)")
    calibrate.add_argument("--judgments", metavar="FILE", help="Hoyle et al.'s all_data.json (default: the fetched hoyle2021)")
    calibrate.add_argument("--topics-per-model", type=integer_at_least(1), metavar="N",
                           help="judge only each model's first N topics of each corpus (a quick look; default: all 50)")
    calibrate.add_argument("--bootstrap", type=integer_at_least(100), default=1000, help="bootstrap resamples")
    calibrate.add_argument("--seed", type=integer_in(0, MAX_SEED), default=0, help="seed of the word orders, intruders and bootstrap")
    calibrate.add_argument("--tracking-uri", help=f"MLflow tracking URI (default: {DEFAULT_TRACKING_URI})")
    calibrate.set_defaults(handler=run_judge_calibrate_command)


def run_benchmark_command(args) -> int:
    from topicbench.flows.benchmark import run_benchmark

    _hide_library_tracebacks(args.verbose)

    config = config_from_command_line(args)
    # everything that can fail without running anything fails now
    out = args.out or str(_default_report_folder(config.experiment))
    if not args.no_report:
        check_output_folder(out, "--out (the report folder)")
    check_services(config, args.connect_timeout)

    started = time.perf_counter()
    state = run_benchmark(config)
    seconds = time.perf_counter() - started
    failed = state.is_failed()
    summary = state.result(raise_on_failure=False) if not failed else None
    print(f"benchmark {config.experiment!r} {'FAILED' if failed else 'completed'} in {_minutes(seconds)}"
          + (f": {_runs_summary(summary)}" if isinstance(summary, dict) else ""))
    written = None if args.no_report else _write_report(config.experiment, config.tracking_uri, out)
    print(summary_line(written and written["markdown"], config.tracking_uri))
    if failed:
        # the flow's own cause last: a report of the runs that did finish must not hide it
        print(f"topicbench: error: {state.message}", file=sys.stderr)
        return 1
    return 0


def run_serve_command(args) -> int:
    from topicbench.flows.config import BenchmarkConfig
    from topicbench.flows.serve import require_prefect_server, serve_benchmark
    from topicbench.tasks.tracking import check_tracking_uri

    _hide_library_tracebacks(args.verbose)
    config_path = str(Path(args.config).resolve())
    config = BenchmarkConfig.from_yaml(config_path)  # checked now; each run reads it again
    if args.cron:
        _check_cron(args.cron)
    require_prefect_server()
    tracking_uri = _config_tracking_uri(args.tracking_uri, config, from_file=True)
    out = str(Path(args.out or _default_report_folder(config.experiment)).resolve())
    check_output_folder(out, "--out (the report folder)")
    if config.scheduler:
        check_scheduler_reachable(config.scheduler, DEFAULT_CONNECT_TIMEOUT)
    check_tracking_uri(tracking_uri)
    try:
        serve_benchmark(config_path, tracking_uri=tracking_uri, report_folder=out,
                        name=args.name or config.experiment, cron=args.cron)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM while serving: the ordinary way to stop it
        pass
    print(f"stopped serving {args.name or config.experiment!r}")
    return 0


def _check_cron(cron: str) -> None:
    from prefect.client.schemas.schedules import CronSchedule

    try:
        CronSchedule(cron=cron)
    except ValueError:  # pydantic's ValidationError
        raise InputError(f"--cron: {cron!r} is not a cron schedule (five fields, e.g. \"0 2 * * *\" for 02:00 every night)") from None


def _runs_summary(summary: dict) -> str:
    elsewhere, from_spool = summary.get("claimed_elsewhere", []), summary.get("from_spool", [])
    return (f"{len(summary['logged'])} runs logged"
            + (f" ({len(from_spool)} of them from the spool, not refitted)" if from_spool else "")
            + f", {summary['skipped_finished']} already finished (skipped)"
            + (f", {len(elsewhere)} fitted by another process" if elsewhere else ""))


def summary_line(report_path: str | None, tracking_uri: str) -> str:
    """The command's last line on success: where the report is and where the runs are tracked."""
    return (f"report: {report_path} (and .html)" if report_path else "no report written") + f"; runs tracked at {tracking_uri}"


def _write_report(experiment: str, tracking_uri: str, out: str) -> dict | None:
    """The report of whatever runs the store holds (its paths, as :func:`report`); when it has
    none (the flow failed before its first fit), say so and go on (None), so that the flow's error
    stays the last line."""
    from topicbench.flows.report import report
    from topicbench.tasks.report import ReportWriteError

    try:
        return report(experiment, tracking_uri, out)
    except ReportWriteError:
        raise  # the folder took no files: the command fails with that as its last line
    except InputError as error:
        logger.warning("no report written: %s", error)
        return None


def run_paper_command(args) -> int:
    from topicbench.flows.paper import PAPER_CORPORA, SET2_BASELINES, default_data_folder, paper_config, run_paper
    from topicbench.tasks.tracking import check_tracking_uri

    _hide_library_tracebacks(args.verbose)

    tracking_uri = _tracking_uri(args.tracking_uri)
    settings = dict(
        data=args.data or default_data_folder(), seeds=args.seeds, iterations=args.iterations, workers=args.workers,
        baselines=tuple(args.baselines) if args.baselines is not None else tuple(SET2_BASELINES),
        corpora=tuple(args.corpora or PAPER_CORPORA),
    )
    settings["llm"] = llm_block(args, None)
    config = paper_config(**settings, tracking_uri=tracking_uri)  # the corpora, baselines and seeds, checked
    check_output_folder(args.out, "--out (the report folder)")
    if args.scheduler:
        check_scheduler_reachable(args.scheduler, args.connect_timeout)
    check_tracking_uri(tracking_uri)
    if config.llm_metrics():
        _check_llm_endpoint(config.llm_settings()[0])

    started = time.perf_counter()
    state = run_paper(**settings, tracking_uri=tracking_uri, out=args.out, scheduler=args.scheduler)
    print(f"paper reproduction finished in {_minutes(time.perf_counter() - started)}")
    report_path = Path(args.out).resolve() / "report.md"  # where the report flow writes it
    print(summary_line(str(report_path) if report_path.is_file() else None, tracking_uri))
    if state.is_failed():
        print(f"topicbench: error: {state.message}", file=sys.stderr)
        return 1
    return 0


def run_data_list_command(args) -> int:
    from topicbench.flows.data import dataset_table

    print(dataset_table())
    return 0


def run_data_fetch_command(args) -> int:
    from topicbench.flows.data import DownloadLimits, fetch_dataset

    started = time.perf_counter()
    limits = DownloadLimits(timeout=args.timeout, deadline=args.deadline)
    folder, fetched = fetch_dataset(args.name, dest=args.dest, base_url=args.url, limits=limits)
    if fetched:
        print(f"{args.name}: fetched and checked in {time.perf_counter() - started:.1f} s: {folder}")
    else:
        print(f"{args.name}: already in {folder} (nothing downloaded)")
    return 0


def run_report_command(args) -> int:
    from topicbench.flows.report import report

    _hide_library_tracebacks(args.verbose)

    uri = _tracking_uri(args.tracking_uri)
    require_experiment(uri, args.experiment)
    out = args.out or str(_default_report_folder(args.experiment))
    check_output_folder(out, "--out (the report folder)")
    written = report(args.experiment, uri, out)
    print(f"report: {written['markdown']} and {written['html']} ({written['finished']} runs, {written['failed']} failed)")
    return 0


def run_schema_command(args) -> int:
    import json

    from topicbench.core.io import write_text_atomically
    from topicbench.flows.config_schema import config_schema

    if args.out:
        check_output_file(args.out, "--out")
    text = json.dumps(config_schema(), indent=2, ensure_ascii=False) + "\n"
    if args.out:
        write_text_atomically(Path(args.out), text)
        print(f"wrote {args.out}")
    else:
        sys.stdout.write(text)
    return 0


def run_judge_calibrate_command(args) -> int:
    from topicbench.core.datasets import JUDGMENTS_FILE, cached_dataset_folder
    from topicbench.core.schema import check_schema
    from topicbench.flows.config import BenchmarkConfig
    from topicbench.flows.judge import calibrate, format_table, verdict
    from topicbench.tasks.llm_judge import LLM_SCHEMA, llm_settings
    from topicbench.tasks.tracking import check_tracking_uri

    configured = BenchmarkConfig.from_yaml(args.config).llm if args.config else None
    block = llm_block(args, configured)
    if block is None:
        block = {}
    check_schema(block, LLM_SCHEMA, "llm")
    if "base_url" not in block or "model" not in block:
        raise InputError("give the endpoint: --llm-base-url URL --llm-model NAME (or --config with an llm: block)")
    endpoint, settings = llm_settings(block)
    judgments = Path(args.judgments) if args.judgments else cached_dataset_folder("hoyle2021") / JUDGMENTS_FILE
    if not judgments.is_file():
        raise InputError(f"--judgments: {judgments} is not a file")
    uri = _tracking_uri(args.tracking_uri)
    check_tracking_uri(uri)
    _check_llm_endpoint(endpoint)
    calibration = calibrate(endpoint, settings, judgments, tracking_uri=uri, topics_per_model=args.topics_per_model,
                            draws=args.bootstrap, seed=args.seed)
    print(f"calibration of {endpoint.model} at {endpoint.base_url} on {calibration.topics} human-judged topics "
          f"({calibration.requests} requests, {calibration.cached} answered from the cache, {calibration.seconds:.0f} s):")
    print(format_table(calibration))
    print(verdict(calibration))
    print(f"tracked as run {calibration.run_id} of experiment 'judge-calibration' at {uri}")
    return 0


def run_compile_command(args) -> int:
    from topicbench.core.precompile import compile_kernels

    report = compile_kernels(on_step=lambda step: logger.info("compile: %s", step))
    print(f"topicbench compile: {report.summary()}")
    return 0


def run_elda(args) -> int:
    from topicbench.core.dask_shards import dask_executor
    from topicbench.core.elda import ELDA
    from topicbench.core.io import load_corpus
    from topicbench.core.preprocess import PreprocessConfig

    # outputs and the scheduler are checked before the fit, so that the fit is never thrown away
    if args.json:
        check_output_file(args.json, "--json")
    if args.parquet:
        check_output_folder(args.parquet, "--parquet")
    if args.algorithm != "parallel" and (args.scheduler or args.workers):
        raise InputError("--scheduler and --workers apply to --algorithm parallel only (exact greedy runs in this process)")
    if args.scheduler:
        check_scheduler_reachable(args.scheduler, args.connect_timeout)
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

    executor = dask_executor(
        args.scheduler, workers=args.workers, connect_timeout=args.connect_timeout, worker_timeout=args.worker_timeout,
    ) if args.algorithm == "parallel" else None
    with executor or contextlib.nullcontext():  # a local cluster stops when the fit is done
        model = ELDA(
            args.kappa, generator=args.generator, top_words=args.top_words, executor=executor,
            epsilon=args.epsilon, seed=args.seed,
        )
        model.fit(corpus, on_progress=progress)
    solution = model.solution_
    solution.stats["load_seconds"] = load_seconds
    print(format_summary(solution, args.top, args.top_words))
    if args.json:
        path = _write_or_keep(lambda target: solution.to_json(target, top_n=args.top_words), args.json, "--json", ".json")
        print(f"\nwrote {path}")
    if args.parquet:
        folder = _write_or_keep(solution.to_parquet, args.parquet, "--parquet", "")
        print(f"wrote {folder}/links.parquet, token_topics.parquet, topics.parquet")
    return 0


def _write_or_keep(write, target, what: str, suffix: str):
    """``write(target)``; if that fails after all (the disk filled up, the folder vanished), the
    result goes to a temporary path instead and the error names both, so the fit is not lost."""
    import tempfile

    try:
        return write(target)
    except OSError as error:
        fallback = Path(tempfile.mkdtemp(prefix="topicbench-elda-")) / f"result{suffix}"
        kept = write(fallback)
        raise InputError(f"{what}: could not write {target} ({error.strerror or error}); the result is kept at {kept}") from None


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


def _user_errors() -> tuple:
    """Errors that a user's input or environment causes: one line, no traceback (unless -v)."""
    from topicbench.baselines.base import ModelError
    from topicbench.flows.runtime import PrefectServerStartError
    from topicbench.tasks.tracking import TrackingError

    return (InputError, TrackingError, ModelError, PrefectServerStartError, ConnectionError)


def _spooled_clause() -> str:
    """For each spool this process put fits in (a benchmark whose store stopped answering), the
    clause ", and N fitted runs it could not take in FOLDER"; else an empty string."""
    spool = sys.modules.get("topicbench.tasks.spool")  # not imported: nothing spooled
    kept = spool.kept_by_this_process() if spool is not None else {}
    return "".join(f", and {count} fitted runs it could not take in {folder}" for folder, count in kept.items())


def _interrupt_on_sigterm(signum, frame):
    # SIGTERM (a job scheduler's stop, `kill`) takes the same exit path as Ctrl-C: runs are closed
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None) -> int:
    import signal
    import traceback

    defer_imports()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # a usage error (argparse printed it) or --help: its code, returned
        return exit_.code if isinstance(exit_.code, int) else 2
    # libraries' INFO only with -v, on the console alone: Prefect's run logs still get every record
    configure_console(args.verbose, sys.stderr)
    quiet_worker_consoles(args.verbose)
    quiet_library_progress_bars()  # one progress display: topicbench's own
    # every command that runs a flow (report and paper too, not only run): no analytics sent from
    # a temporary Prefect server, and a patient start of one
    prefect_defaults()
    previous_sigterm = signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
    try:
        if getattr(args, "runs_flows", False):
            check_prefect_environment()  # before any work: Prefect would fail later, with a traceback
        code = args.handler(args)
        if argv is None:
            _exit_without_teardown(code)
        return code
    except KeyboardInterrupt:
        print(f"topicbench: interrupted: finished runs are kept in the tracking store{_spooled_clause()}; the same "
              f"command resumes", file=sys.stderr)
        if argv is None:
            # the command itself (not a caller of main): every run and server is closed by now, but
            # a fit still running in a worker thread would hold the interpreter's exit until it ends
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
        return 130
    except _user_errors() as error:
        if args.verbose:
            traceback.print_exc()
        print(f"topicbench: error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # a bug or a library failure: its traceback, and its cause last
        traceback.print_exc()
        print(f"topicbench: error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)


def _exit_without_teardown(code: int) -> None:
    """End the command itself (not a caller of main) with ``code`` once its work is done, without
    the interpreter's teardown: tearing down numba's compiled kernels takes about 0.3 s and only
    frees memory the OS takes back anyway. The atexit handlers still run (they close servers and
    remove temporary folders) and the streams are flushed. Skipped while another thread runs,
    since the interpreter would wait for it."""
    import atexit
    import threading

    if threading.active_count() > 1:
        return
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
