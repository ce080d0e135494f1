"""The tracking UI opens on the runs with the key metrics as columns: the shared view topicbench
writes is read by MLflow's own UI, checked in headless chromium against a real `mlflow ui`."""

from __future__ import annotations

import json
import shutil
import socket

import pytest
from mlflow.tracking import MlflowClient

from topicbench.flows.cli.ui import (
    UI_HOST,
    runs_view_url,
    start_ui_server,
    stop_process_group,
    wait_until_answering,
)
from topicbench.tasks.store.runs_view import (
    SHARED_VIEW_TAG_PREFIX,
    VIEW_KEY,
    runs_view_state,
    share_runs_view,
)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FITS = "tags.`topicbench.role` = 'fit'"


def test_the_view_shows_the_key_metrics_present_and_the_runs_corpus_model_and_seed():
    state = runs_view_state({"npmi_top10", "fit_seconds", "umass_top5"})
    assert state["selectedColumns"] == ["metrics.`npmi_top10`", "metrics.`fit_seconds`", "tags.`corpus`",
                                        "tags.`model`", "tags.`seed`"]


def test_the_view_shows_every_requested_score_first():
    logged = {"nmi", "purity", "npmi_top5", "npmi_top10", "llm_rating", "llm_rating_answered", "fit_seconds",
              "classification_accuracy"}
    state = runs_view_state(logged, requested=["clustering", "npmi", "llm_rating", "perplexity"])
    assert state["selectedColumns"][:5] == ["metrics.`nmi`", "metrics.`purity`", "metrics.`npmi_top10`",
                                            "metrics.`llm_rating`", "metrics.`fit_seconds`"]


def test_the_view_lists_the_fits_flat_not_under_a_collapsed_parent():
    """MLflow's runs table nests children only when ordered by start time (or neither ordered nor
    filtered): the view filters to the fits and orders them by name."""
    state = runs_view_state({"npmi_top10"}, fit_filter=FITS)
    assert state["searchFilter"] == FITS
    assert state["orderByKey"] == "attributes.run_name" and state["orderByAsc"] is True
    assert runs_view_state({"npmi_top10"})["orderByKey"] == "attributes.start_time"  # no filter: MLflow's default


def tracked_benchmark(tmp_path) -> tuple:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment_id = client.create_experiment("bench")
    parent = client.create_run(experiment_id, run_name="bench-benchmark", tags={"topicbench.role": "benchmark"})
    for seed in (0, 1):
        run = client.create_run(experiment_id, run_name=f"toy/elda/seed{seed}", tags={
            "topicbench.role": "fit", "mlflow.parentRunId": parent.info.run_id, "corpus": "toy", "model": "elda",
            "seed": str(seed)})
        client.log_metric(run.info.run_id, "npmi_top10", 0.1 + seed)
        client.log_metric(run.info.run_id, "fit_seconds", 2.5)
        client.set_terminated(run.info.run_id)
    client.set_terminated(parent.info.run_id)
    return uri, client, experiment_id


def test_the_view_is_written_as_the_experiments_shared_view(tmp_path):
    uri, client, experiment_id = tracked_benchmark(tmp_path)
    assert share_runs_view(client, experiment_id, fit_filter=FITS, requested=["npmi"]) == VIEW_KEY
    state = json.loads(client.get_experiment(experiment_id).tags[SHARED_VIEW_TAG_PREFIX + VIEW_KEY])
    assert state["selectedColumns"][0] == "metrics.`npmi_top10`"


class _Server:
    """A UI server that answers at once and stops when ``wait`` raises ``stop`` (Ctrl-C) or returns."""

    pid, returncode = -1, None

    def __init__(self, stop: BaseException | None = None):
        self.stop = stop

    def poll(self):
        return None

    def wait(self):
        if self.stop is not None:
            raise self.stop
        return 0


def _ui(monkeypatch, tmp_path, server: _Server, on_wait=lambda: None) -> tuple:
    from topicbench.flows.cli import ui as cli_ui

    uri, _, _ = tracked_benchmark(tmp_path)
    monkeypatch.setattr(cli_ui, "start_ui_server", lambda uri, port: server)
    monkeypatch.setattr(cli_ui, "stop_process_group", lambda process: None)
    monkeypatch.setattr(cli_ui, "wait_until_answering", lambda server, port: on_wait() or True)
    with socket.socket() as probe:
        probe.bind((UI_HOST, 0))
        port = probe.getsockname()[1]
    return uri, port


def test_ui_prints_its_url_only_once_the_server_answers(monkeypatch, tmp_path, capsys):
    from topicbench.flows.cli.main import main

    printed_while_waiting = []
    uri, port = _ui(monkeypatch, tmp_path, _Server(), on_wait=lambda: printed_while_waiting.append(capsys.readouterr().out))
    assert main(["ui", "--tracking-uri", uri, "--port", str(port), "--no-browser"]) == 0
    assert printed_while_waiting == [""]
    assert f"http://{UI_HOST}:{port}/#/experiments/" in capsys.readouterr().out


def test_ui_stopped_with_ctrl_c_says_so_in_its_own_words(monkeypatch, tmp_path, capsys):
    from topicbench.flows.cli.main import main

    uri, port = _ui(monkeypatch, tmp_path, _Server(stop=KeyboardInterrupt()))
    assert main(["ui", "--tracking-uri", uri, "--port", str(port), "--no-browser"]) == 0
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == f"stopped the MLflow UI on {UI_HOST}:{port}"
    assert "resumes" not in err and "interrupted" not in err


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium: scripts/setup.sh --browser installs it (Debian package)")
def test_mlflows_ui_opens_on_the_fits_with_their_metrics_as_columns(tmp_path):
    from playwright.sync_api import sync_playwright

    uri, client, experiment_id = tracked_benchmark(tmp_path)
    view = share_runs_view(client, experiment_id, fit_filter=FITS)
    with socket.socket() as probe:
        probe.bind((UI_HOST, 0))
        port = probe.getsockname()[1]
    server = start_ui_server(uri, port)
    try:
        assert wait_until_answering(server, port, timeout=120)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                 args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            errors = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(runs_view_url(port, experiment_id, view))
            page.get_by_text("npmi_top10").first.wait_for(timeout=90_000)  # the key metric is a column
            # the fits at once (no parent row to expand), not the GenAI overview
            page.get_by_text("toy/elda/seed1").first.wait_for(timeout=30_000)
            text = page.inner_text("body")
            page.screenshot(path=str(tmp_path / "runs-view.png"))
            browser.close()
    finally:
        stop_process_group(server)
    assert "You're viewing a shared view" in text and "share key" not in text and errors == []
    header = text[text.index("Run Name"):text.index("toy/elda/seed0")]
    assert all(column in header for column in ("npmi_top10", "fit_seconds", "corpus", "model", "seed"))
    assert "bench-benchmark" not in text  # the parent is filtered out: its fits are not nested under it
    assert text.index("toy/elda/seed0") < text.index("toy/elda/seed1")  # by name


def test_the_ui_server_starts_before_the_experiment_is_looked_up(monkeypatch, tmp_path, capsys):
    """Its start is most of the wait: it overlaps the command's own reading of the store."""
    from topicbench.flows.cli import ui as cli_ui
    from topicbench.flows.cli.main import main

    order = []
    uri, port = _ui(monkeypatch, tmp_path, _Server())
    started = cli_ui.start_ui_server
    monkeypatch.setattr(cli_ui, "start_ui_server", lambda uri, port: order.append("server") or started(uri, port))
    looked_up = cli_ui.ui_experiment
    monkeypatch.setattr(cli_ui, "ui_experiment", lambda uri, name: order.append("experiment") or looked_up(uri, name))
    assert main(["ui", "--tracking-uri", uri, "--port", str(port), "--no-browser"]) == 0
    assert order == ["server", "experiment"]


def test_only_a_one_worker_uvicorn_command_is_run_in_the_ui_process():
    from topicbench.flows.ui_server import is_single_uvicorn

    assert is_single_uvicorn(["python", "-m", "uvicorn", "--host", "127.0.0.1", "--workers", "1", "app:app"])
    assert not is_single_uvicorn(["python", "-m", "uvicorn", "--workers", "4", "app:app"])
    assert not is_single_uvicorn(["python", "-m", "gunicorn", "--workers", "1", "app:app"])


@pytest.mark.slow
def test_the_ui_server_answers_from_one_process_that_imports_mlflow_once(tmp_path):
    """No second process (MLflow's spawned uvicorn) imports MLflow again before the UI answers;
    the runs API and the page are served, on 127.0.0.1."""
    import urllib.request

    import psutil

    uri, _, experiment_id = tracked_benchmark(tmp_path)
    with socket.socket() as probe:
        probe.bind((UI_HOST, 0))
        port = probe.getsockname()[1]
    server = start_ui_server(uri, port)
    try:
        assert wait_until_answering(server, port, timeout=180)
        assert psutil.Process(server.pid).children(recursive=True) == []
        listening = {c.laddr for c in psutil.Process(server.pid).net_connections() if c.status == psutil.CONN_LISTEN}
        assert {(address.ip, address.port) for address in listening} == {(UI_HOST, port)}
        with urllib.request.urlopen(f"http://{UI_HOST}:{port}/ajax-api/2.0/mlflow/experiments/get?"
                                    f"experiment_id={experiment_id}", timeout=30) as answer:
            assert json.loads(answer.read())["experiment"]["experiment_id"] == experiment_id
        with urllib.request.urlopen(f"http://{UI_HOST}:{port}/", timeout=30) as page:
            assert b"<html" in page.read().lower()
    finally:
        stop_process_group(server)
    assert server.poll() is not None
