"""topicbench run / serve / report / paper: the commands that run a benchmark's flow (now, on a
schedule, or the paper's), or report a tracked one, each printing where its report and runs are."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

from topicbench.core.constants import MAX_SEED
from topicbench.core.validation import InputError
from topicbench.flows.checks import (
    DEFAULT_CONNECT_TIMEOUT, check_output_folder, check_scheduler_reachable, experiment_name, integer_at_least, integer_in,
)
from topicbench.flows.cli.common import (
    check_llm_endpoint,
    check_services,
    config_from_command_line,
    config_tracking_uri,
    connect_timeout_argument,
    default_report_folder,
    hide_library_tracebacks,
    llm_arguments,
    llm_block,
    minutes,
    require_experiment,
    tracking_uri,
)
from topicbench.flows.config.model import DEFAULT_TRACKING_URI

logger = logging.getLogger("topicbench")


def add_run_command(commands) -> None:
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
    connect_timeout_argument(run)
    run.add_argument("--seeds", type=integer_in(0, MAX_SEED), nargs="+",
                     help="seeds, one run each per corpus and model (default: the config's seeds, else 0)")
    run.add_argument("--no-report", action="store_true", help="do not write the report afterwards")
    run.add_argument("--out", help="report folder (default: results/<experiment>)")
    llm_arguments(run)
    run.set_defaults(handler=run_benchmark_command, runs_flows=True)


def add_serve_command(commands) -> None:
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


def add_report_command(commands) -> None:
    """topicbench report: the report of a tracked experiment."""
    report = commands.add_parser(
        "report", help="build the report of an experiment from its tracked runs or from a result bundle",
        description="Read the runs of an experiment from the tracking store, or from a result bundle with --bundle "
        "(no store needed; nothing is fitted), and write its report, report.md and report.html, to --out; "
        "`topicbench run` does this itself unless given --no-report.",
    )
    report.add_argument("--experiment", type=experiment_name, metavar="NAME",
                        help="the MLflow experiment to report (a config's experiment: name)")
    report.add_argument("--tracking-uri", help=f"MLflow tracking URI (default: {DEFAULT_TRACKING_URI})")
    report.add_argument("--bundle", metavar="DIR",
                        help="report the runs of this result bundle (`topicbench export`) instead of a store's")
    report.add_argument("--out", help="report folder (default: results/<experiment>)")
    # a report is plain functions (flows/report.py): no Prefect settings to check, and none imported (1-5 s)
    report.set_defaults(handler=run_report_command, runs_flows=False)


def add_paper_command(commands) -> None:
    """topicbench paper: the paper's Experiment Sets 1 and 2, from their experiment files; the
    defaults shown are those files' (read here, so that the help cannot tell another story)."""
    from topicbench.core.datasets import DATA_HOME_VARIABLE
    from topicbench.flows.experiments import PAPER_EXPERIMENTS, read_experiment

    set1 = read_experiment(PAPER_EXPERIMENTS[0])  # the paper runs the sets with Set 1's corpora, seeds and workers
    paper = commands.add_parser(
        "paper", help=f"reproduce the paper's Experiment Sets 1 and 2 (corpora: --data, else the data cache, "
        f"${DATA_HOME_VARIABLE})",
        description=f"Run the E-LDA paper's experiments, defined by the experiment files "
        f"{' and '.join(PAPER_EXPERIMENTS)} shipped with topicbench, with the options below over them, and write "
        "their report to results/paper/.",
    )
    paper.add_argument("--baselines", nargs="*", help=f"Set 2 baselines to include (default: the paper's, as "
                       f"{PAPER_EXPERIMENTS[1]} lists them; any registered model joins at the paper's K, e.g. nmf "
                       "lsi hdp keynmf s3 gmm)")
    paper.add_argument("--corpora", nargs="+", help=f"a subset of {' '.join(c['name'] for c in set1['corpora'])} "
                       "(default: all of them)")
    paper.add_argument("--data", metavar="FOLDER", help=f"folder holding the corpora, one folder each (default: "
                       f"${DATA_HOME_VARIABLE}, else the data cache where `topicbench data fetch` puts them)")
    paper.add_argument("--seeds", type=integer_in(0, MAX_SEED), nargs="+", default=set1["seeds"],
                       help="seeds, one run each per corpus and model")
    sweeps = sorted({model["settings"]["iterations"] for model in set1["models"]
                     if "iterations" in model.get("settings", {})})
    paper.add_argument("--iterations", type=integer_at_least(1), help=f"sweeps of every Gibbs LDA run (default: the "
                       f"experiment files', {' or '.join(map(str, sweeps))})")
    paper.add_argument("--workers", type=integer_at_least(1), default=set1["workers"],
                       help="Dask worker processes fitting models concurrently (ignored with --scheduler)")
    paper.add_argument("--scheduler", metavar="ADDRESS", help="run the fits on an existing Dask scheduler")
    connect_timeout_argument(paper)
    paper.add_argument("--tracking-uri", help=f"MLflow tracking URI (default: {DEFAULT_TRACKING_URI})")
    paper.add_argument("--out", default="results/paper", help="folder of the paper's report (report.md and report.html)")
    paper.add_argument("--bundle", metavar="DIR",
                       help="run one piece of the paper from a result bundle: import DIR's runs first (their fits are "
                       "skipped), then export the experiment's finished runs back into DIR, also after a failure or "
                       "Ctrl-C (DIR may be new)")
    llm_arguments(paper)
    paper.set_defaults(handler=run_paper_command, runs_flows=True)


def run_benchmark_command(args) -> int:
    from topicbench.flows.benchmark import run_benchmark

    hide_library_tracebacks(args.verbose)

    config = config_from_command_line(args)
    # everything that can fail without running anything fails now
    out = args.out or str(default_report_folder(config.experiment))
    if not args.no_report:
        check_output_folder(out, "--out (the report folder)")
    check_services(config, args.connect_timeout)

    started = time.perf_counter()
    state = run_benchmark(config)
    seconds = time.perf_counter() - started
    failed = state.is_failed()
    summary = state.result(raise_on_failure=False) if not failed else None
    print(f"benchmark {config.experiment!r} {'FAILED' if failed else 'completed'} in {minutes(seconds)}"
          + (f": {_runs_summary(summary)}" if isinstance(summary, dict) else ""))
    written = None if args.no_report else _write_report(config.experiment, config.tracking_uri, out)
    print(summary_line(written and written["markdown"], config.tracking_uri))
    if failed:
        # the flow's own cause last: a report of the runs that did finish must not hide it
        print(f"topicbench: error: {state.message}", file=sys.stderr)
        return 1
    return 0


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
    """The report of whatever runs the store holds (its paths, as :func:`~topicbench.flows.report.report`); when it has
    none (the flow failed before its first fit), say so and go on (None), so that the flow's error
    stays the last line."""
    from topicbench.flows.report import report
    from topicbench.tasks.report.write import ReportWriteError

    try:
        return report(experiment, tracking_uri, out)
    except ReportWriteError:
        raise  # the folder took no files: the command fails with that as its last line
    except InputError as error:
        logger.warning("no report written: %s", error)
        return None


def run_serve_command(args) -> int:
    from topicbench.flows.config.model import BenchmarkConfig
    from topicbench.flows.serve import require_prefect_server, serve_benchmark
    from topicbench.tasks.store.checks import check_tracking_uri

    hide_library_tracebacks(args.verbose)
    config_path = str(Path(args.config).resolve())
    config = BenchmarkConfig.from_yaml(config_path)  # checked now; each run reads it again
    if args.cron:
        _check_cron(args.cron)
    require_prefect_server()
    uri = config_tracking_uri(args.tracking_uri, config, from_file=True)
    out = str(Path(args.out or default_report_folder(config.experiment)).resolve())
    check_output_folder(out, "--out (the report folder)")
    if config.scheduler:
        check_scheduler_reachable(config.scheduler, DEFAULT_CONNECT_TIMEOUT)
    check_tracking_uri(uri)
    try:
        serve_benchmark(config_path, tracking_uri=uri, report_folder=out,
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


def run_report_command(args) -> int:
    from topicbench.flows.report import report

    hide_library_tracebacks(args.verbose)
    if args.bundle is not None:
        return _report_bundle(args)
    if args.experiment is None:
        raise InputError("give --experiment NAME (the runs of a tracking store) or --bundle DIR (a result bundle)")
    uri = tracking_uri(args.tracking_uri)
    require_experiment(uri, args.experiment)
    out = args.out or str(default_report_folder(args.experiment))
    check_output_folder(out, "--out (the report folder)")
    _print_written(report(args.experiment, uri, out))
    return 0


def _report_bundle(args) -> int:
    """topicbench report --bundle DIR: the report from a result bundle's tables, no store touched."""
    from topicbench.flows.report import report_from
    from topicbench.tasks.results.bundle_source import BundleSource

    if args.experiment is not None or args.tracking_uri is not None:
        raise InputError("--bundle reads the runs from the bundle: give it without --experiment and --tracking-uri")
    source = BundleSource(args.bundle)  # a missing or damaged table is one line, before any work
    out = args.out or str(default_report_folder(source.experiment))
    check_output_folder(out, "--out (the report folder)")
    _print_written(report_from(source, out, command=f"topicbench report {source.described}"))
    return 0


def _print_written(written: dict) -> None:
    interrupted = f", {written['interrupted']} interrupted" if written["interrupted"] else ""
    print(f"report: {written['markdown']} and {written['html']} ({written['finished']} runs, {written['failed']} failed"
          f"{interrupted})")


def run_paper_command(args) -> int:
    from topicbench.flows.paper import check_paper_bundle, paper_config, run_paper
    from topicbench.tasks.store.checks import check_tracking_uri

    hide_library_tracebacks(args.verbose)

    uri = tracking_uri(args.tracking_uri)
    # an option left out (None) keeps the experiment files' value
    settings = dict(
        data=args.data or None, seeds=args.seeds, iterations=args.iterations, workers=args.workers,
        baselines=tuple(args.baselines) if args.baselines is not None else None,
        corpora=tuple(args.corpora) if args.corpora else None,
    )
    settings["llm"] = llm_block(args, None)
    config = paper_config(**settings, tracking_uri=uri)  # the corpora, baselines and seeds, checked
    check_output_folder(args.out, "--out (the report folder)")
    if args.scheduler:
        check_scheduler_reachable(args.scheduler, args.connect_timeout)
    check_tracking_uri(uri)
    if args.bundle is not None:
        check_paper_bundle(args.bundle, config.experiment)
    if config.llm_metrics():
        check_llm_endpoint(config.llm_settings()[0], uri)

    started = time.perf_counter()
    state = run_paper(**settings, tracking_uri=uri, out=args.out, scheduler=args.scheduler, bundle=args.bundle)
    print(f"paper reproduction finished in {minutes(time.perf_counter() - started)}")
    report_path = Path(args.out).resolve() / "report.md"  # where the report flow writes it
    print(summary_line(str(report_path) if report_path.is_file() else None, uri))
    if state.is_failed():
        print(f"topicbench: error: {state.message}", file=sys.stderr)
        return 1
    return 0
