"""topicbench search: choose K and settings per model with evidence (flows/search.py)."""

from __future__ import annotations

import sys
import time

from topicbench.core.constants import MAX_SEED
from topicbench.core.search_space import point_text
from topicbench.flows.checks import check_output_folder, experiment_name, integer_at_least, integer_in
from topicbench.flows.cli.common import (
    check_services,
    config_from_command_line,
    connect_timeout_argument,
    default_report_folder,
    hide_library_tracebacks,
    llm_arguments,
    minutes,
)


def add_search_command(commands) -> None:
    """The ``search`` sub-command and its options."""
    search = commands.add_parser(
        "search", help="search each model's K and settings over seeds, and choose them (one-standard-error rule)",
        description="Search the spaces of a config's search: block (a grid, or Optuna's TPE / NSGA-II), several seeds "
        "per point, each fit a tracked run under one parent run; choose each model's setting by the one-standard-error "
        "rule and write results/<experiment>/search.md, .html and chosen.yaml (chosen-<corpus>.yaml per corpus where "
        "several are searched). Run again, it resumes: nothing is "
        "fitted twice.",
    )
    search.add_argument("config", help="a benchmark YAML config with a search: block (see examples/search.yaml)")
    search.add_argument("--tracking-uri", help="MLflow tracking URI (default: the config's, else results/mlflow.db)")
    search.add_argument("--experiment", type=experiment_name, help="MLflow experiment name (default: the config's experiment)")
    search.add_argument("--workers", type=integer_at_least(1), help="Dask worker processes fitting trials concurrently (default: the config's workers)")
    search.add_argument("--scheduler", metavar="ADDRESS", help="fit the trials on an existing Dask scheduler (default: the config's, else a local cluster)")
    connect_timeout_argument(search)
    search.add_argument("--seeds", type=integer_in(0, MAX_SEED), nargs="+", help="seeds per point (default: the config's seeds)")
    search.add_argument("--storage", metavar="URL", help="where the studies are kept: an Optuna RDB URL or a .journal "
                        "file (default: optuna-studies.db beside a sqlite tracking store)")
    search.add_argument("--out", help="report folder (default: results/<experiment>)")
    llm_arguments(search)
    search.set_defaults(handler=run_search_command, runs_flows=True)


def run_search_command(args) -> int:
    from topicbench.flows.search import run_search
    from topicbench.flows.search_plan import SearchPlan
    from topicbench.tasks.search.study import default_storage, storage_label
    from topicbench.tasks.report.study import study_report, write_study_report

    hide_library_tracebacks(args.verbose)
    config = config_from_command_line(args)
    plan = SearchPlan.from_config(config, where=str(args.config))  # every space and objective, before any work
    out = args.out or str(default_report_folder(config.experiment))
    check_output_folder(out, "--out (the report folder)")
    check_services(config, args.connect_timeout)
    storage = args.storage or plan.storage or default_storage(config.tracking_uri)

    started = time.perf_counter()
    outcome = run_search(config, plan, storage)
    seconds = time.perf_counter() - started
    counts = outcome["counts"]
    print(f"search {config.experiment!r} done in {minutes(seconds)}: {counts.trials_told} trials told, "
          f"{counts.fits_run} fits run, {counts.fits_found} found already fitted")
    for choice in outcome["choices"]:
        print(f"  {choice.label} on {choice.corpus}: {point_text(choice.point, missing='no choice (no trial finished)')} ({choice.rule})")
        for message in choice.messages:
            print(f"    note: {message}")
    for recommendation in outcome["recommendations"]:
        print(f"recommended on {recommendation.corpus}: {recommendation.headline()}")
        for disagreement in recommendation.disagreements:
            print(f"  but {disagreement}")
    for warning in outcome["warnings"]:
        print(f"caution: {warning}")
    command = f"topicbench search {args.config}" + (f" --tracking-uri {config.tracking_uri}" if args.tracking_uri else "")
    written = write_study_report(study_report(outcome, plan.objectives, command, storage_label(storage)),
                                 outcome["chosen_configs"], out)
    print(f"report: {written['markdown']} (and .html); chosen config: {', '.join(written['configs'])}; "
          f"runs tracked at {config.tracking_uri}")
    if counts.failed:
        print(f"topicbench: error: {len(counts.failed)} fits failed: " + "; ".join(counts.failed[:5]), file=sys.stderr)
        return 1
    return 0
