"""topicbench with a team's real servers, run as a user runs them: ``mlflow server``, ``prefect
server start``, ``dask scheduler`` with two ``dask worker`` processes, and ``topicbench serve``.

Every server is a real process on 127.0.0.1 and a free port (``tests/servers.py``), every
``topicbench`` a real command; what they recorded is read back with MLflow's and Prefect's
clients over HTTP.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from servers import (  # noqa: F401 (fixtures)
    answers, dask_cluster, dask_scheduler, kill_dask_worker, mlflow_server, prefect_api, wait_for_workers,
    worker_addresses,
)
from test_run_claims import topicbench, topicbench_env, write_config

#: A benchmark of E-LDA and a baseline, small enough for seconds per fit.
ELDA_AND_GIBBS = (
    "  - {model: elda, settings: {kappa: 2.0, generator: cooccurrence, top_words: 10}}\n"
    "  - {model: gibbs_lda, num_topics: 4, settings: {iterations: 20, top_words: 10}}\n"
)
#: Seconds a `topicbench` command may take here (fits take seconds; starting Prefect and numba's
#: first compilation take most of it on a loaded 2-core machine).
COMMAND_SECONDS = 600


def run_command(arguments: list, env: dict, cwd: Path) -> str:
    """Run a ``topicbench`` command to its end; its console output, asserting it exited 0."""
    result = subprocess.run(topicbench(*arguments), env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=COMMAND_SECONDS)
    assert result.returncode == 0, result.stdout[-4000:]
    return result.stdout


def fit_runs_of(client: MlflowClient, experiment: str = "tiny") -> list:
    found = client.get_experiment_by_name(experiment)
    assert found is not None, f"no experiment {experiment!r} on the server"
    return client.search_runs([found.experiment_id], "tags.`topicbench.role` = 'fit'", max_results=100)


# -- MLflow's tracking server ------------------------------------------------------------------


@pytest.mark.slow
def test_a_benchmark_is_tracked_on_an_mlflow_server_and_reported_from_it(tiny_octis, tmp_path, mlflow_server, prefect_api):
    config = write_config(tmp_path, tiny_octis, ELDA_AND_GIBBS, seeds=(0,))
    env = topicbench_env(tmp_path / "prefect", prefect_api.url)
    output = run_command(["run", str(config), "--tracking-uri", mlflow_server.url, "--no-report"], env, tmp_path)
    assert "View run" not in output  # MLflow's per-run links stay off the console

    client = MlflowClient(mlflow_server.url)
    runs = fit_runs_of(client)
    assert sorted(r.data.tags["model"] for r in runs) == ["elda", "gibbs_lda"]
    for run in runs:
        assert run.info.status == "FINISHED", run.data.tags.get("topicbench.error")
        assert run.data.params["corpus"] == "tiny" and run.data.params["seed"] == "0"
        assert "umass_top5" in run.data.metrics and "fit_seconds" in run.data.metrics
        (dataset,) = run.inputs.dataset_inputs
        assert dataset.dataset.name == "tiny" and dataset.tags[0].value == "training"
        listed = {artifact.path for artifact in client.list_artifacts(run.info.run_id)}
        assert {"topics.json", "topics.csv", "output"} <= listed
        downloaded = Path(client.download_artifacts(run.info.run_id, "topics.json", str(tmp_path)))
        assert "words" in downloaded.read_text()
    # the artifacts went to the server's artifact folder, not to a local ./mlruns or ./mlartifacts
    assert any(mlflow_server.extra["artifacts"].rglob("topics.json"))
    assert not (tmp_path / "mlruns").exists() and not (tmp_path / "mlartifacts").exists()

    out = tmp_path / "report"
    output = run_command(["report", "--experiment", "tiny", "--tracking-uri", mlflow_server.url, "--out", str(out)],
                         env, tmp_path)
    assert f"report: {out / 'report.md'}" in output and "(2 runs, 0 failed)" in output
    markdown = (out / "report.md").read_text()
    assert "elda" in markdown and "gibbs_lda" in markdown


# -- Prefect's API server ----------------------------------------------------------------------


def benchmark_flow_runs(api_url: str) -> dict:
    """{flow run id: flow run} of the flows named "benchmark" on the Prefect server at ``api_url``."""
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    with SyncPrefectClient(api_url) as client:
        runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["benchmark"])))
    return {run.id: run for run in runs}


def task_run_names(api_url: str, flow_run_id) -> list:
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with SyncPrefectClient(api_url) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return sorted(run.name for run in runs if run.state is not None and run.state.is_completed())


def run_watching_children(arguments: list, env: dict, cwd: Path) -> tuple:
    """Run a ``topicbench`` command to its end, noting the command lines of every process it
    started meanwhile; (console output, command lines)."""
    import time

    import psutil

    process = subprocess.Popen(topicbench(*arguments), env=env, cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    seen, deadline = set(), time.monotonic() + COMMAND_SECONDS
    while process.poll() is None and time.monotonic() < deadline:
        for child in psutil.Process(process.pid).children(recursive=True):
            try:
                seen.add(" ".join(child.cmdline()))
            except psutil.Error:  # ended meanwhile
                pass
        time.sleep(0.2)
    output = process.communicate(timeout=60)[0]
    assert process.returncode == 0, output[-4000:]
    return output, seen


@pytest.mark.slow
def test_with_prefect_api_url_the_runs_are_recorded_on_that_server_and_none_starts(tiny_octis, tmp_path, prefect_api):
    config = write_config(tmp_path, tiny_octis, ELDA_AND_GIBBS, seeds=(0,))
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    before = benchmark_flow_runs(prefect_api.url)
    output, children = run_watching_children(
        ["run", str(config), "--tracking-uri", store, "--no-report"],
        topicbench_env(tmp_path / "prefect", prefect_api.url), tmp_path,
    )
    assert "temporary Prefect API server" not in output, output[-3000:]
    assert not [line for line in children if "uvicorn" in line or "prefect.server" in line], children

    new = {run_id: run for run_id, run in benchmark_flow_runs(prefect_api.url).items() if run_id not in before}
    (flow_run,) = new.values()
    assert flow_run.state.is_completed(), flow_run.state
    names = task_run_names(prefect_api.url, flow_run.id)
    assert sum(name.startswith("fit_model") for name in names) == 2, names
    assert sum(name.startswith("log_model_run") for name in names) == 2, names
    assert {r.info.status for r in fit_runs_of(MlflowClient(store))} == {"FINISHED"}


# -- a Dask scheduler and two workers ------------------------------------------------------------


def executed_per_worker(address: str) -> dict:
    """{worker address: tasks it has executed} of the scheduler at ``address``."""
    from distributed import Client

    with Client(address, timeout="10s") as client:
        return client.run(lambda dask_worker: dask_worker.state.executed_count)


@pytest.mark.slow
def test_a_benchmark_runs_its_fits_on_a_dask_scheduler_and_its_workers(tiny_octis, tmp_path, dask_cluster, prefect_api):
    config = write_config(tmp_path, tiny_octis, ELDA_AND_GIBBS, seeds=(0,))
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run_command(["run", str(config), "--tracking-uri", store, "--scheduler", dask_cluster.url, "--no-report"],
                topicbench_env(tmp_path / "prefect", prefect_api.url), tmp_path)
    runs = fit_runs_of(MlflowClient(store))
    assert sorted(r.data.tags["model"] for r in runs) == ["elda", "gibbs_lda"]
    assert {r.info.status for r in runs} == {"FINISHED"}
    workers = worker_addresses(dask_cluster.url)
    worker_pids = {str(pid) for worker in dask_cluster.extra["workers"] for pid in worker.group_pids()}
    for run in runs:  # each fit ran in a worker process of the cluster, not in topicbench's
        assert run.data.tags["topicbench.fitted_on.dask_worker"] in workers, run.data.tags
        assert run.data.tags["topicbench.fitted_on.pid"] in worker_pids, (run.data.tags, worker_pids)


@pytest.mark.slow
def test_parallel_elda_runs_its_rounds_on_a_dask_scheduler_and_its_workers(tiny_octis, tmp_path, dask_cluster):
    before = executed_per_worker(dask_cluster.url)
    out = tmp_path / "elda.json"
    output = run_command(
        ["elda", "--algorithm", "parallel", "--scheduler", dask_cluster.url, "--corpus", str(tiny_octis),
         "--preprocessed", "--kappa", "2", "--json", str(out)],
        topicbench_env(tmp_path / "prefect"), tmp_path,
    )
    assert "adaptive rounds" in output and out.is_file()
    after = executed_per_worker(dask_cluster.url)
    assert set(after) == set(before) and len(after) == 2
    assert all(after[worker] > before[worker] for worker in after), (before, after)  # both workers held shards


@pytest.mark.slow
def test_the_readme_dask_commands_listen_on_127_0_0_1_only(dask_scheduler):
    """Dask's defaults put the scheduler's dashboard (/health, /metrics) and every worker and its
    dashboard on 0.0.0.0; the team page's commands (docs/team.md, which the fixture runs) bind 127.0.0.1."""
    assert answers(dask_scheduler.extra["dashboard"] + "/health")
    dashboard_port = int(dask_scheduler.extra["dashboard"].rsplit(":", 1)[1])
    scheduler = dask_scheduler.listening()
    assert {port for _, port in scheduler} == {int(dask_scheduler.url.rsplit(":", 1)[1]), dashboard_port}
    for server in [dask_scheduler, *dask_scheduler.extra["workers"]]:
        listening = server.listening()
        assert len(listening) >= 2, (server.process.args, listening)  # a worker: itself, its nanny, its dashboard
        assert {address for address, _ in listening} == {"127.0.0.1"}, (server.process.args, listening)


def elda_json(arguments: list, out: Path, capsys) -> dict:
    """Run ``topicbench elda`` (in this process) writing ``--json out``; the JSON, asserting exit 0."""
    import json

    from topicbench.flows.cli.main import main

    code = main(["elda", *arguments, "--json", str(out)])
    assert code == 0, capsys.readouterr().err[-4000:]
    return json.loads(out.read_text())


@pytest.mark.slow
def test_parallel_elda_survives_a_worker_killed_right_after_the_candidates_are_built(
    tiny_octis, tmp_path, dask_scheduler, monkeypatch, capsys,
):
    """The command of issue 29, which ended with ``KeyError: 'tcp://...'``: the worker dies
    between the candidates and the placing of the shards (its nanny then starts another)."""
    from distributed import Client

    from topicbench.core.elda import model as elda

    wait_for_workers(dask_scheduler.url, 2)
    arguments = ["--algorithm", "parallel", "--scheduler", dask_scheduler.url, "--corpus", str(tiny_octis),
                 "--preprocessed", "--kappa", "2"]
    reference = elda_json(arguments, tmp_path / "reference.json", capsys)

    built, killed = elda.keyword_candidates, []

    def build_then_kill_a_worker(*args, **kwargs):
        candidates = built(*args, **kwargs)
        with Client(dask_scheduler.url, timeout="10s") as client:
            victim = sorted(client.scheduler_info(n_workers=-1)["workers"])[0]
            killed.append(kill_dask_worker(client, victim, wait_until_removed=False))
        return candidates

    monkeypatch.setattr(elda, "keyword_candidates", build_then_kill_a_worker)
    result = elda_json(arguments, tmp_path / "killed.json", capsys)
    assert killed
    assert result["links"] == reference["links"]
    assert result["log_posterior"] == reference["log_posterior"]


# -- topicbench serve: a Prefect deployment of the benchmark ------------------------------------


def test_serve_without_a_prefect_server_is_a_one_line_error(tiny_octis, tmp_path, monkeypatch, capsys):
    from topicbench.flows.cli.main import main

    config = write_config(tmp_path, tiny_octis, ELDA_AND_GIBBS, seeds=(0,))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    assert main(["serve", str(config)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "topicbench: error: topicbench serve needs a Prefect server: start one (`prefect server start`) and set "
        "PREFECT_API_URL=http://127.0.0.1:4200/api"
    ]
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    assert main(["serve", str(config)]) == 2
    assert "the Prefect server at PREFECT_API_URL=http://127.0.0.1:9/api does not answer" in capsys.readouterr().err


def test_serve_refuses_a_schedule_that_is_not_cron(tiny_octis, tmp_path, capsys):
    from topicbench.flows.cli.main import main

    config = write_config(tmp_path, tiny_octis, ELDA_AND_GIBBS, seeds=(0,))
    assert main(["serve", str(config), "--cron", "every night"]) == 2
    assert "--cron: 'every night' is not a cron schedule" in capsys.readouterr().err


@pytest.mark.slow
def test_a_served_benchmark_runs_when_triggered_through_the_server(tiny_octis, tmp_path, prefect_api):
    import signal
    import time

    from prefect.client.orchestration import SyncPrefectClient
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    config = write_config(tmp_path, tiny_octis, ELDA_AND_GIBBS, seeds=(0,))
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    serving = subprocess.Popen(
        topicbench("serve", str(config), "--cron", "0 2 * * *", "--name", "nightly", "--tracking-uri", store,
                   "--out", str(tmp_path / "report")),
        env=topicbench_env(tmp_path / "prefect", prefect_api.url), cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )
    try:
        with temporary_settings(updates={PREFECT_API_URL: prefect_api.url}), SyncPrefectClient(prefect_api.url) as client:
            deadline = time.monotonic() + COMMAND_SECONDS
            while not _deployment_exists(client, "topicbench-benchmark/nightly"):
                assert serving.poll() is None and time.monotonic() < deadline, serving.communicate()[0][-4000:]
                time.sleep(1)
            deployment = client.read_deployment_by_name("topicbench-benchmark/nightly")
            assert [s.schedule.cron for s in deployment.schedules] == ["0 2 * * *"]
            flow_run = run_deployment("topicbench-benchmark/nightly", timeout=COMMAND_SECONDS)
            assert client.read_flow_run(flow_run.id).state.is_completed(), flow_run.state
    finally:
        serving.send_signal(signal.SIGTERM)
        output = serving.communicate(timeout=120)[0]
    assert serving.returncode == 0 and "stopped serving 'nightly'" in output, output[-4000:]
    runs = fit_runs_of(MlflowClient(store))
    assert sorted(r.data.tags["model"] for r in runs) == ["elda", "gibbs_lda"]
    assert {r.info.status for r in runs} == {"FINISHED"}
    assert (tmp_path / "report" / "report.md").is_file()


def _deployment_exists(client, name: str) -> bool:
    from prefect.exceptions import ObjectNotFound

    try:
        client.read_deployment_by_name(name)
    except ObjectNotFound:
        return False
    return True
