"""What several commands share: the parser's help format (defaults shown), the --llm-* and
--connect-timeout options, the config with the command line's LLM flags over it, the tracking URI,
store and report folder a command uses, and the console's handling of library tracebacks."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from topicbench.core.validation import InputError
from topicbench.flows.checks import DEFAULT_CONNECT_TIMEOUT, number_in
from topicbench.flows.config.model import DEFAULT_TRACKING_DATABASE, DEFAULT_TRACKING_URI


class DefaultsShownFormatter(argparse.HelpFormatter):
    """argparse's help with each option's default after its text, "(default: 5000)", so that a
    reader need not look it up. Left out where the text already names its default (one that is
    not a literal: "default: the config's") and where there is none to show (None; a flag's bool)."""

    def _get_help_string(self, action) -> str:
        text = action.help or ""
        default = action.default
        if "default" in text or default is None or isinstance(default, bool) or default is argparse.SUPPRESS:
            return text
        if not action.option_strings and action.nargs not in (argparse.OPTIONAL, argparse.ZERO_OR_MORE):
            return text  # a required positional: its default is never used
        return f"{text} (default: {shown_default(default).replace('%', '%%')})"


def shown_default(value) -> str:
    """A default as typed on the command line: ``0 1 2`` for a list, ``60`` for ``60.0``."""
    if isinstance(value, (list, tuple)):
        return " ".join(shown_default(item) for item in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


class CommandParser(argparse.ArgumentParser):
    """The parser of ``topicbench`` and, through ``add_subparsers``, of each of its sub-commands
    (argparse makes them of the parent's class): every one shows its options' defaults."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", DefaultsShownFormatter)
        super().__init__(*args, **kwargs)


class WithoutTraceback(logging.Filter):
    """Keeps a log record's message and drops its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = record.exc_text = None
        return True


def hide_library_tracebacks(verbose: bool) -> None:
    """Prefect logs a failed task's or flow's traceback; the command's last line already names the
    cause, so without -v the logs keep only the message. Call after Prefect is imported (it sets up
    its logging handlers then)."""
    if verbose:
        return
    loggers = [logging.getLogger()] + [
        logger_ for name, logger_ in logging.Logger.manager.loggerDict.items()
        if isinstance(logger_, logging.Logger) and name.startswith("prefect")
    ]
    for handler in {handler for logger_ in loggers for handler in logger_.handlers}:
        if not any(isinstance(f, WithoutTraceback) for f in handler.filters):
            handler.addFilter(WithoutTraceback())


def llm_arguments(parser) -> None:
    parser.add_argument("--llm-base-url", metavar="URL", help="an OpenAI-compatible endpoint for the LLM metrics "
                        "(e.g. http://127.0.0.1:8080/v1); overrides the config's llm.base_url")
    parser.add_argument("--llm-model", metavar="NAME", help="the model at that endpoint; overrides llm.model")
    parser.add_argument("--llm-api-key-env", metavar="VARIABLE",
                        help="the environment variable holding the endpoint's key (the key itself is never given or logged)")


def config_with_llm_flags(args):
    """The config of ``args.config`` (or the built-in one) with the --llm-* flags over its llm:
    block, applied before it is checked (its LLM metrics need the endpoint the flags give)."""
    from topicbench.flows.config.model import BenchmarkConfig, default_config
    from topicbench.flows.config.file import read_yaml_config

    if not args.config:
        config = default_config()
        llm = llm_block(args, None)
        return config.replace(llm=llm) if llm is not None else config
    data = read_yaml_config(args.config)
    configured = data.get("llm")
    llm = llm_block(args, configured if isinstance(configured, dict) else None)
    if llm is not None:
        data["llm"] = llm
    return BenchmarkConfig.from_dict(data, where=str(args.config))


def llm_block(args, configured: dict | None) -> dict | None:
    """The config's ``llm`` block with the command line's --llm-* flags over it (None when neither
    gives one); base URL and model must both be known."""
    given = {key: value for key, value in (("base_url", args.llm_base_url), ("model", args.llm_model),
                                           ("api_key_env", args.llm_api_key_env)) if value}
    if not given:
        return configured
    block = {**(configured or {}), **given}
    missing = [flag for flag, key in (("--llm-base-url", "base_url"), ("--llm-model", "model")) if key not in block]
    if missing:
        raise InputError(f"{missing[0]} is needed too: an LLM endpoint is a base URL and a model")
    return block


def check_llm_endpoint(endpoint, tracking_uri: str | None) -> None:
    """The LLM judge, before any work: its reply cache is a file of its own that can be written
    (not the database of the store at ``tracking_uri``), then the endpoint answers a chat request
    (:func:`~topicbench.tasks.llm.client.check_endpoint`)."""
    from topicbench.tasks.llm.judge import check_endpoint, check_reply_cache

    check_reply_cache(endpoint, tracking_uri)
    check_endpoint(endpoint)


def connect_timeout_argument(parser) -> None:
    parser.add_argument(
        "--connect-timeout", type=number_in(0, low_open=True), default=DEFAULT_CONNECT_TIMEOUT, metavar="SECONDS",
        help=f"how long to wait for --scheduler to answer before giving up (default: {DEFAULT_CONNECT_TIMEOUT:g})",
    )


def default_report_folder(experiment: str) -> Path:
    """``results/<experiment>`` under the working folder, as :func:`topicbench.flows.report.default_report_folder`
    makes it (a test holds the two equal): told here without importing the report's modules, which a
    run's start does not need (they load pandas and the report's sections, seconds on a busy machine)."""
    from topicbench.core.io import file_name_for

    return Path.cwd() / "results" / file_name_for(experiment)


def tracking_uri(value: str | None) -> str:
    """The given URI, or the default sqlite database under ./results/ as an absolute path."""
    if value:
        return value
    return "sqlite:///" + str(Path.cwd() / DEFAULT_TRACKING_DATABASE)


def require_existing_store(uri: str) -> None:
    """Reading commands never create a store: a sqlite file that does not exist is an error (MLflow
    would create and migrate an empty database, slowly, and then find nothing)."""
    from topicbench.tasks.store.checks import uri_scheme
    from topicbench.tasks.store.checks import check_tracking_uri, sqlite_path, tracking_store_exists

    database = sqlite_path(uri)
    if database is not None and not tracking_store_exists(uri):
        raise InputError(
            f"no tracking database at {database}: nothing has been tracked there yet "
            "(run `topicbench run` first, or give the store with --tracking-uri)"
        )
    check_tracking_uri(uri)
    if uri_scheme(uri) == "postgresql" and not tracking_store_exists(uri):  # it answers, but holds no MLflow store
        raise InputError(
            f"no MLflow store in the database {uri.split('@')[-1]}: nothing has been tracked there yet "
            "(run `topicbench run` first, or give the store with --tracking-uri)"
        )


def require_experiment(uri: str, experiment: str):
    """The experiment ``experiment`` of the existing store at ``uri`` (an MLflow ``Experiment``);
    an :class:`InputError` naming the experiments there when it has none of that name."""
    from mlflow.tracking import MlflowClient

    require_existing_store(uri)
    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        names = sorted(e.name for e in client.search_experiments() if e.name != "Default")
        raise InputError(
            f"no experiment named {experiment!r} at {uri}; "
            + (f"experiments there: {', '.join(names)}" if names else "it holds no experiments yet")
        )
    return found


def config_tracking_uri(given: str | None, config, from_file: bool) -> str:
    """The tracking URI a command uses: the one given, else the config file's own, else the default
    database under ./results/ (as an absolute path)."""
    if given or not from_file or config.tracking_uri == DEFAULT_TRACKING_URI:
        return tracking_uri(given)
    return config.tracking_uri


def minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def config_from_command_line(args):
    """The config of ``args.config`` (or the built-in one) with the --llm-* flags, the tracking
    URI and --experiment, --workers, --scheduler and --seeds over it, checked."""
    config = config_with_llm_flags(args)
    overrides = {"tracking_uri": config_tracking_uri(args.tracking_uri, config, from_file=bool(args.config))}
    for key in ("experiment", "workers", "scheduler", "seeds"):
        if getattr(args, key, None):
            overrides[key] = getattr(args, key)
    return config.replace(**overrides)


def check_services(config, connect_timeout: float) -> None:
    """What a run needs outside this process answers, before any work: the Dask scheduler, the
    tracking store, and the LLM endpoint where a metric or a model (TopicGPT) asks one."""
    from topicbench.flows.checks import check_scheduler_reachable
    from topicbench.tasks.store.checks import check_tracking_uri

    if config.scheduler:
        check_scheduler_reachable(config.scheduler, connect_timeout)
    check_tracking_uri(config.tracking_uri)
    if config.llm_metrics() or config.llm_models():
        check_llm_endpoint(config.llm_settings()[0], config.tracking_uri)
