"""A Prefect deployment of the benchmark, so a lab can run one on a schedule (nightly, say).

``topicbench serve CONFIG [--cron "0 2 * * *"] [--name NAME]`` registers the deployment
``topicbench-benchmark/NAME`` with the Prefect server at ``PREFECT_API_URL`` and serves it (Prefect
3's ``flow.serve``): this process polls the server and runs the deployment's flow runs, those of
the cron schedule and those started by hand (``prefect deployment run``, the UI,
``run_deployment``). Each run reads the config file afresh, so an edited config applies from the
next run, runs the benchmark as ``topicbench run`` does (finished runs are skipped, so a nightly
run fits only what is new) and writes its report. Stopping the process (Ctrl-C, SIGTERM) pauses
the schedule.
"""

from __future__ import annotations

import logging
import os

from prefect import flow

from topicbench.core.validation import InputError

from .benchmark import run_benchmark
from .checks import check_scheduler_reachable
from topicbench.flows.config.model import BenchmarkConfig
from .console import CONSOLE
from .report import report

logger = logging.getLogger(__name__)

#: The name of the served flow: deployments are ``topicbench-benchmark/NAME``.
SERVED_FLOW_NAME = "topicbench-benchmark"


@flow(name=SERVED_FLOW_NAME)
def benchmark_from_config(config_path: str, tracking_uri: str, report_folder: str | None = None) -> dict:
    """Run the benchmark of the YAML config at ``config_path`` and write its report.

    Parameters
    ----------
    config_path : str
        The benchmark's config, read when the run starts.
    tracking_uri : str
        The MLflow store (overrides the config's).
    report_folder : str, optional
        Where the report goes; None: no report.

    Returns
    -------
    dict or prefect.State
        The benchmark's summary; its Failed state when some fits failed (the flow run then ends
        Failed, naming them). A failure of the benchmark itself is raised.
    """
    config = BenchmarkConfig.from_yaml(config_path).replace(tracking_uri=tracking_uri)
    if config.scheduler:
        check_scheduler_reachable(config.scheduler)
    state = run_benchmark(config)
    if report_folder is not None:
        try:
            report(config.experiment, config.tracking_uri, report_folder)
        except InputError as error:  # no run finished: the benchmark's own state says why
            logger.warning("no report written: %s", error)
    return state if state.is_failed() else state.result()


def require_prefect_server(timeout: float = 5.0) -> str:
    """The API URL of the Prefect server that ``PREFECT_API_URL`` names, checked to answer.

    Raises
    ------
    InputError
        PREFECT_API_URL is unset (a deployment needs a server that outlives this process), or
        the server does not answer ``/health`` within ``timeout`` seconds.
    """
    import requests

    url = os.environ.get("PREFECT_API_URL", "").rstrip("/")
    if not url:
        raise InputError(
            "topicbench serve needs a Prefect server: start one (`prefect server start`) and set "
            "PREFECT_API_URL=http://127.0.0.1:4200/api"
        )
    try:
        requests.get(url + "/health", timeout=timeout).raise_for_status()
    except requests.RequestException as error:
        raise InputError(f"the Prefect server at PREFECT_API_URL={url} does not answer: {error}") from None
    return url


def serve_benchmark(config_path: str, *, tracking_uri: str, report_folder: str | None, name: str,
                    cron: str | None = None) -> None:
    """Register the deployment ``topicbench-benchmark/<name>`` of :func:`benchmark_from_config`
    with these parameters (and ``cron`` as its schedule) and serve it until interrupted.

    The flow is referred to by its module path, so the runs import it from the installed package
    wherever the process was started.
    """
    from prefect.types.entrypoint import EntrypointType

    logger.info("serving the deployment %s/%s%s; Ctrl-C stops it (and pauses its schedule)", SERVED_FLOW_NAME, name,
                f" on the schedule {cron!r}" if cron else "", extra=CONSOLE)
    benchmark_from_config.serve(
        name=name, cron=cron,
        parameters={"config_path": config_path, "tracking_uri": tracking_uri, "report_folder": report_folder},
        description=f"topicbench benchmark of {config_path}", entrypoint_type=EntrypointType.MODULE_PATH,
    )
