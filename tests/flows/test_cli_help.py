"""What a new user meets first: every command's description and every option's help (defaults
shown), `models list` / `metrics list`, the URL `topicbench ui` opens on, and one progress display."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest

from topicbench.flows.cli.main import build_parser, main
from topicbench.flows.cli.common import DefaultsShownFormatter

#: Every command a user can run, as typed after `topicbench`.
COMMANDS = {
    "elda", "run", "serve", "report", "paper", "data list", "data fetch", "models list", "metrics list", "ui",
    "compile", "schema", "judge calibrate", "search", "export", "import",
    "leaderboard", "server",
}


def _parsers(parser: argparse.ArgumentParser, path: tuple = (), listed_help: str | None = None):
    """(path, parser, its line in its parent's list of commands) of ``parser`` and of every sub-command under it."""
    yield path, parser, listed_help
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, child in action.choices.items():
                yield from _parsers(child, (*path, name), helps.get(name))


PARSERS = list(_parsers(build_parser()))
LEAVES = {" ".join(path): parser for path, parser, _ in PARSERS
          if path and not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)}


def _options(parser):
    return [action for action in parser._actions
            if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))]


def test_every_command_is_there():
    assert set(LEAVES) == COMMANDS


SUB_COMMANDS = [found for found in PARSERS if found[0]]


@pytest.mark.parametrize("path, parser, listed_help", SUB_COMMANDS, ids=[" ".join(found[0]) for found in SUB_COMMANDS])
def test_every_command_has_a_description_and_a_line_in_its_parent_s_list(path, parser, listed_help):
    assert (parser.description or "").strip(), f"`topicbench {' '.join(path)}` has no description"
    assert (listed_help or "").strip(), f"`topicbench {' '.join(path)}` has no help line in `topicbench --help`"


@pytest.mark.parametrize("command", sorted(LEAVES))
def test_every_option_has_help_and_shows_its_default(command):
    parser = LEAVES[command]
    formatter = DefaultsShownFormatter(parser.prog)
    for action in _options(parser):
        name = "/".join(action.option_strings) or action.dest
        assert (action.help or "").strip(), f"`topicbench {command}` {name} has no help"
        shown = action.default is not None and not isinstance(action.default, bool)
        if shown:
            assert "default" in formatter._get_help_string(action), f"`topicbench {command}` {name} hides its default"
    parser.format_help()  # every help text formats (a stray % would raise here)


def test_defaults_are_shown_as_typed_and_not_twice(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["paper", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: 0 1 2)" in text and "(default: results/paper)" in text
    with pytest.raises(SystemExit):
        build_parser().parse_args(["ui", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: 5000)" in text and "--experiment NAME" in text and "(default: True)" not in text
    with pytest.raises(SystemExit):
        build_parser().parse_args(["elda", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert text.count("(default: 60)") == 1  # --worker-timeout names its default itself


# ------------------------------------------------------------------------------------------------
# models list, metrics list
# ------------------------------------------------------------------------------------------------


def test_models_list_names_every_model_with_what_it_is_and_its_defaults(capsys):
    from topicbench.baselines.registry import MODELS

    assert main(["models", "list"]) == 0
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    assert lines[0].split() == ["MODEL", "WHAT", "IT", "IS"]
    for name in MODELS.names():
        (line,) = [line for line in lines if line.split()[:1] == [name]]
        assert len(line.split()) > 1, f"{name} has no description"
    assert "kappa=2.0" in printed and "passes=10" in printed


def test_models_list_json_parses_and_imports_no_heavy_library():
    script = ("import sys; from topicbench.flows.cli.main import main; main(['models', 'list', '--json']); "
              "print('HEAVY', sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'bertopic') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    text, _, heavy = result.stdout.rpartition("HEAVY")
    assert heavy.strip() == "[]"
    models = {entry["name"]: entry for entry in json.loads(text)}
    from topicbench.baselines.registry import MODELS

    assert set(models) == set(MODELS.names())
    assert models["elda"]["defaults"]["kappa"] == 2.0 and models["elda"]["description"]
    assert models["gensim_lda"]["plugin"] is None and models["gensim_lda"]["error"] is None


def test_metrics_list_names_every_metric_with_direction_and_needs(capsys):
    from topicbench.core.metrics.registry import METRICS

    assert main(["metrics", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["METRIC", "BETTER", "NEEDS"]
    for name in METRICS.names():
        spec = METRICS.get(name)
        (line,) = [line for line in lines if line.split()[:1] == [name]]
        assert line.split()[1] == ("higher" if spec.higher_is_better else "lower")
        assert line.split(None, 2)[2] == ", ".join(spec.needs)


def test_metrics_list_json_carries_direction_needs_and_settings(capsys):
    from topicbench.core.metrics.registry import METRICS

    assert main(["metrics", "list", "--json"]) == 0
    metrics = {entry["name"]: entry for entry in json.loads(capsys.readouterr().out)}
    assert set(metrics) == set(METRICS.names())
    assert metrics["perplexity"]["direction"] == "lower" and metrics["perplexity"]["higher_is_better"] is False
    assert metrics["npmi"]["needs"] == ["top_words", "varied_reference", "reference"]
    assert metrics["npmi"]["settings"] == {"top_n": [5, 10, 15, 20, 25], "window": 10}
    assert metrics["inverted_rbo"]["settings"] == {"rbo_top_n": 10, "rbo_persistence": 0.9}
    assert metrics["classification"]["outputs"] == ["classification_accuracy", "classification_macro_f1"]
    assert all(entry["description"] for entry in metrics.values())


# ------------------------------------------------------------------------------------------------
# ui: the URL of the runs view
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A sqlite store (one for the module: creating one takes seconds; no test changes it): 'older'
    and 'newer' with a topicbench run each, 'latest' (created last) with a run topicbench did not
    make, 'empty' with none."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path_factory.mktemp('store')}/mlflow.db"
    client = MlflowClient(uri)
    for name, tags in (("older", {"topicbench.role": "benchmark"}), ("newer", {"topicbench.role": "fit"}),
                       ("latest", {"someone": "else"}), ("empty", None)):
        experiment_id = client.create_experiment(name)
        if tags is not None:
            client.create_run(experiment_id, tags=tags)
    return uri, client


def test_runs_view_url_opens_on_the_runs_of_the_experiment():
    from topicbench.flows.cli.ui import runs_view_url

    assert runs_view_url(5000, "7") == "http://127.0.0.1:5000/#/experiments/7/runs?workflowType=machine_learning"
    assert runs_view_url(5001, None) == "http://127.0.0.1:5001/#/experiments"
    assert runs_view_url(5000, "7", "topicbench-runs").endswith("?workflowType=machine_learning&viewStateShareKey=topicbench-runs")


def test_ui_opens_on_the_named_experiment_else_the_latest_with_topicbench_runs(store):
    from topicbench.core.validation import InputError
    from topicbench.flows.cli.ui import ui_experiment

    uri, client = store
    assert ui_experiment(uri, None).name == "newer"
    assert ui_experiment(uri, "older").experiment_id == client.get_experiment_by_name("older").experiment_id
    with pytest.raises(InputError, match="no experiment named 'missing'.*experiments there: empty, latest, newer, older"):
        ui_experiment(uri, "missing")


def test_ui_without_topicbench_runs_opens_on_the_experiment_list():
    from types import SimpleNamespace

    from topicbench.flows.cli.ui import latest_topicbench_experiment

    class NoTopicbenchRuns:
        def search_experiments(self, order_by):
            return [SimpleNamespace(experiment_id="1", name="someone-else")]

        def search_runs(self, experiment_ids, filter_string, max_results):
            return []

    assert latest_topicbench_experiment(NoTopicbenchRuns()) is None


class _FinishedServer:
    pid = -1

    def wait(self):
        return 0


@pytest.mark.parametrize("browser", [True, False])
def test_ui_prints_the_runs_view_url_and_opens_it_only_with_a_browser(store, monkeypatch, capsys, browser):
    from topicbench.flows.cli import ui as cli_ui

    uri, client = store
    opened = []
    monkeypatch.setattr(cli_ui, "start_ui_server", lambda uri, port: _FinishedServer())
    monkeypatch.setattr(cli_ui, "stop_process_group", lambda process: None)
    monkeypatch.setattr(cli_ui, "browser_available", lambda: browser)
    monkeypatch.setattr(cli_ui, "wait_until_answering", lambda server, port: True)
    monkeypatch.setattr(cli_ui, "open_in_browser", opened.append)
    port = _free_port()
    assert main(["ui", "--tracking-uri", uri, "--port", str(port), "--experiment", "older"]) == 0
    experiment_id = client.get_experiment_by_name('older').experiment_id
    url = (f"http://127.0.0.1:{port}/#/experiments/{experiment_id}/runs?workflowType=machine_learning"
           "&viewStateShareKey=topicbench-runs")
    assert url in capsys.readouterr().out
    assert opened == ([url] if browser else [])
    assert main(["ui", "--tracking-uri", uri, "--port", str(port), "--no-browser"]) == 0
    assert len(opened) == (1 if browser else 0)


def test_no_browser_is_opened_without_a_display(monkeypatch):
    from topicbench.flows.cli.ui import browser_available

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert browser_available() is False


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ------------------------------------------------------------------------------------------------
# One progress display
# ------------------------------------------------------------------------------------------------


def test_library_progress_bars_are_off_in_the_processes_a_command_starts(monkeypatch):
    """After the console's setup, a process started from here (as a local cluster's Dask worker
    is) draws neither transformers' "Loading weights" bar nor any other tqdm bar."""
    from topicbench.flows.console import PROGRESS_BAR_SETTINGS

    for name in PROGRESS_BAR_SETTINGS:
        monkeypatch.setenv(name, "")  # restored (unset, or the value it had) after the test
        monkeypatch.delenv(name)
    assert main(["models", "list"]) == 0
    assert all(os.environ[name] == value for name, value in PROGRESS_BAR_SETTINGS.items())
    script = ("import tqdm, transformers.utils.logging as hf; "
              "print(hf.is_progress_bar_enabled(), hf.tqdm(range(3)).__class__.__name__, tqdm.tqdm(range(3)).disable)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["False", "EmptyTqdm", "True"]


def test_a_progress_bar_setting_the_user_gave_is_kept(monkeypatch):
    from topicbench.flows.console import quiet_library_progress_bars

    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "0")
    monkeypatch.setenv("TQDM_DISABLE", "")
    monkeypatch.delenv("TQDM_DISABLE")
    quiet_library_progress_bars()
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "0" and os.environ["TQDM_DISABLE"] == "1"
