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

from servers import mlflow_server, prefect_api  # noqa: F401 (fixtures)
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
