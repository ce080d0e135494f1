"""`topicbench report` reads a store and writes files: it starts no Prefect server (a temporary
one costs about 20 s on a busy machine, ten times the report itself)."""

from __future__ import annotations

import pytest

from topicbench.flows.cli.main import main

EXPERIMENT = "no-server-test"


@pytest.fixture()
def store(tmp_path):
    """A sqlite store holding two finished fits of one corpus, logged by hand."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment_id = client.create_experiment(EXPERIMENT, artifact_location=(tmp_path / "artifacts").as_uri())
    for number, model in enumerate(("gensim_lda", "gibbs_lda")):
        tags = {"topicbench.role": "fit", "corpus": "toy", "model": model, "model_class": model, "seed": "0",
                "topicbench.run_key": f"toy/{model}/0"}
        run = client.create_run(experiment_id, tags=tags)
        for name, value in (("npmi_top10", 0.05 + number / 100), ("topic_diversity_top10", 0.8), ("fit_seconds", 1.0)):
            client.log_metric(run.info.run_id, name, value)
        client.set_terminated(run.info.run_id, "FINISHED")
    return uri


@pytest.fixture()
def no_prefect_server(monkeypatch):
    """No Prefect API of the user's, and any start of a temporary Prefect server an error."""
    from prefect.server.api.server import SubprocessASGIServer

    def refuse(*args, **kwargs):
        raise AssertionError("a Prefect server was started")

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setattr(SubprocessASGIServer, "start", refuse)
    monkeypatch.setattr("topicbench.flows.runtime.start_prefect_server", refuse)


def test_report_command_starts_no_prefect_server(store, no_prefect_server, tmp_path, capsys):
    out = tmp_path / "report"
    code = main(["report", "--experiment", EXPERIMENT, "--tracking-uri", store, "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    assert "gibbs_lda" in (out / "report.md").read_text(encoding="utf-8")
    assert (out / "report.html").is_file()


def test_report_command_neither_needs_nor_imports_prefect(store, tmp_path):
    """A Prefect API nobody answers does not stop a report, which imports no Prefect at all (its
    settings alone took 1-5 s to import)."""
    import os
    import subprocess
    import sys

    out = tmp_path / "report"
    arguments = ["report", "--experiment", EXPERIMENT, "--tracking-uri", store, "--out", str(out)]
    script = (f"import sys; from topicbench.flows.cli.main import main; code = main({arguments!r}); "
              "print(sorted(name for name in sys.modules if name.split('.')[0] == 'prefect')); sys.exit(code)")
    env = {**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"}  # the discard port: nobody answers
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert (out / "report.md").is_file()

