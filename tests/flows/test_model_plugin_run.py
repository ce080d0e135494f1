"""A model of another installed package runs in a benchmark like a built-in one.

The manual's example plugin (docs/own-model.md) is installed with pip into a temporary folder, and a real
``topicbench run`` process, given that folder on its ``PYTHONPATH``, checks the config, fits the
plugin's model beside E-LDA on two Dask worker processes, tracks both and writes the report.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from mlflow.tracking import MlflowClient

from plugin_packages import EXAMPLE_MODEL, install_example_plugin
from test_run_claims import fit_runs, topicbench, topicbench_env, write_config

MODELS_WITH_THE_PLUGIN = (
    "  - {model: elda, settings: {kappa: 2.0, generator: cooccurrence, top_words: 10}}\n"
    f"  - {{model: {EXAMPLE_MODEL}, num_topics: 4, settings: {{max_iter: 300, top_words: 10}}}}\n"
)


def with_pythonpath(env: dict, folder) -> dict:
    """``env`` with ``folder`` first on PYTHONPATH, before what the tests themselves import from."""
    paths = [str(folder), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}


@pytest.mark.slow
def test_a_benchmark_runs_the_pip_installed_plugin_model(tiny_octis, tmp_path):
    site = install_example_plugin(tmp_path)
    config = write_config(tmp_path, tiny_octis, MODELS_WITH_THE_PLUGIN, seeds=(0,))
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    command = topicbench("run", str(config), "--tracking-uri", store)
    env = topicbench_env(tmp_path / "prefect")

    # without the plugin on the path the config names an unknown model, before any work
    without = subprocess.run(command, env=with_pythonpath(env, tmp_path / "nothing"), cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
    assert without.returncode == 2, without.stdout + without.stderr
    assert f"Unknown model '{EXAMPLE_MODEL}'. Available: bertopic, ctm, elda," in without.stderr

    # two Dask worker processes: they find the plugin as the flow's process does, on the path
    finished = subprocess.run([*command, "--workers", "2"], env=with_pythonpath(env, site), cwd=tmp_path,
                              capture_output=True, text=True, timeout=900)
    assert finished.returncode == 0, (finished.stdout + finished.stderr)[-4000:]
    runs = {run.data.tags["model"]: run for run in fit_runs(store)}
    assert sorted(runs) == ["elda", EXAMPLE_MODEL]
    assert {run.info.status for run in runs.values()} == {"FINISHED"}
    plugin_run = runs[EXAMPLE_MODEL]
    scores = plugin_run.data.metrics
    assert {"umass_top5", "topic_diversity_top5", "fit_seconds"} <= set(scores)
    assert -50 < scores["umass_top5"] < 0 and 0 < scores["topic_diversity_top5"] <= 1 and scores["fit_seconds"] > 0
    params = plugin_run.data.params
    assert params["settings.max_iter"] == "300" and int(params["resolved.n_iter_"]) >= 1
    assert float(params["resolved.reconstruction_error_"]) >= 0
    # which package the model came from, and its version
    assert params["model_plugin"] == f"{EXAMPLE_MODEL} = topicbench_nmf:SklearnNMF"
    assert params["version.topicbench-nmf"] == "0.1.0"
    artifacts = {item.path for item in MlflowClient(store).list_artifacts(plugin_run.info.run_id)}
    assert artifacts, "the plugin's run has no artifacts"
    report = (tmp_path / "results" / "tiny" / "report.md").read_text(encoding="utf-8")
    assert EXAMPLE_MODEL in report and "elda" in report
