"""Every exit path closes what it opened: runs end FINISHED, FAILED or KILLED, servers go.

The in-process cases run the flow against the session's Prefect server; the signal cases run real
processes: SIGKILL mid-fit then a resume, and SIGINT / SIGTERM.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from mlflow.tracking import MlflowClient

from topicbench.core.validation import InputError
from topicbench.flows import benchmark as benchmark_module
from topicbench.flows import benchmark_runs
from topicbench.flows.benchmark import run_benchmark
from topicbench.flows.config.model import BenchmarkConfig
from topicbench.flows.runtime import PrefectServerStartError, start_prefect_server

from test_run_claims import fit_runs, topicbench, topicbench_env, write_config

ELDA = {"model": "elda", "settings": {"kappa": 2.0, "generator": "cooccurrence", "top_words": 10}}


@pytest.fixture(autouse=True)
def spool_of_the_test(tmp_path, monkeypatch):
    """Fits whose logging an interrupt stops are spooled: into the test's folder."""
    monkeypatch.setenv("TOPICBENCH_SPOOL", str(tmp_path / "spool"))


def make_config(corpus: Path, store: str) -> BenchmarkConfig:
    return BenchmarkConfig.from_dict({
        "experiment": "tiny", "corpora": [{"name": "tiny", "source": str(corpus), "preprocessing": {"preprocessed": True}}],
        "models": [ELDA], "seeds": [0, 1], "metrics": ["umass"], "top_n": [5], "tracking_uri": store,
    })


def all_runs(store: str, experiment: str = "tiny") -> list:
    client = MlflowClient(store)
    return client.search_runs([client.get_experiment_by_name(experiment).experiment_id], max_results=1000)


def parents(runs) -> list:
    return [r for r in runs if r.data.tags.get("topicbench.role") == "benchmark"]


# -- in process ---------------------------------------------------------------------------------


@pytest.mark.usefixtures("prefect_server")
def test_a_flow_level_failure_raises_its_cause_and_ends_the_parent_failed(tiny_octis, tmp_path):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = make_config(tiny_octis, store)
    shutil.rmtree(tiny_octis)  # after the config's checks: the flow itself fails to read it
    with pytest.raises(InputError, match="corpus not found: .*tiny"):
        run_benchmark(config)
    (parent,) = all_runs(store)
    assert parent.info.status == "FAILED"
    assert "corpus not found" in parent.data.tags["topicbench.error"]


@pytest.mark.usefixtures("prefect_server")
def test_an_interrupt_ends_the_parent_and_every_claim_killed(tiny_octis, tmp_path, monkeypatch):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"

    def interrupted(futures, poll_seconds=0.5):
        raise KeyboardInterrupt
        yield  # a generator, as the real one

    monkeypatch.setattr(benchmark_module, "finished_one_by_one", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(make_config(tiny_octis, store))
    runs = all_runs(store)
    assert len(runs) == 3 and {r.info.status for r in runs} == {"KILLED"}  # the parent and 2 claims
    assert all("KeyboardInterrupt" in r.data.tags["topicbench.end_reason"] for r in runs)


@pytest.mark.usefixtures("prefect_server")
def test_an_interrupt_masked_by_prefects_crash_handler_still_ends_the_benchmark(tiny_octis, tmp_path, monkeypatch):
    # Ctrl-C inside a task the flow runs in its own thread, before Prefect created the task run:
    # Prefect's crash handler then raises ValueError("Task run is not set") from the interrupt.
    # Found in CI: the benchmark recorded one failed fit and went on instead of stopping.
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"

    def interrupted_logging(*args, **kwargs):
        try:
            raise KeyboardInterrupt
        except BaseException:
            raise ValueError("Task run is not set")

    # the task the flow runs in its own thread (scoring runs where the fit ran, logging here)
    monkeypatch.setattr(benchmark_runs, "log_model_run", interrupted_logging)
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(make_config(tiny_octis, store))
    runs = all_runs(store)
    assert len(runs) == 3 and {r.info.status for r in runs} == {"KILLED"}  # nothing recorded as a failed fit
    assert all("KeyboardInterrupt" in r.data.tags["topicbench.end_reason"] for r in runs)


@pytest.fixture
def server_start(monkeypatch, tmp_path):
    """Replace the temporary server's start by ``outcomes`` (an exception, or None to "start" a
    stand-in process), in a PREFECT_HOME of the test's own."""
    from prefect.settings import PREFECT_HOME, temporary_settings

    from topicbench.flows import runtime

    tries = []

    def use(*outcomes):
        def start(self, timeout=None):
            tries.append(timeout)
            outcome = outcomes[len(tries) - 1]
            if outcome is not None:
                raise outcome
            self.server_process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])

        monkeypatch.setattr(runtime._guarded_server_class(), "start", start)
        return tries

    with temporary_settings(updates={PREFECT_HOME: tmp_path}):
        yield use


TIMED_OUT = RuntimeError("Timed out while attempting to connect to ephemeral Prefect API server.")


def test_a_server_that_does_not_start_is_tried_twice_then_named(server_start):
    tries = server_start(TIMED_OUT, TIMED_OUT)
    with pytest.raises(PrefectServerStartError, match="raise PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS \\(now 7\\)"):
        start_prefect_server(7)
    assert tries == [7, 7]


def test_a_server_that_starts_on_the_second_try_is_used(server_start):
    tries = server_start(TIMED_OUT, None)
    server = start_prefect_server(7)
    try:
        assert tries == [7, 7] and server.server_process.poll() is None
    finally:
        server.stop()


def test_a_guarded_child_dies_with_its_parent_even_on_sigkill():
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import subprocess, sys, time
            from topicbench.flows.runtime import die_with_parent
            child = subprocess.Popen(die_with_parent([{sys.executable!r}, "-c", "import time; time.sleep(60)"]))
            print(child.pid, flush=True)
            time.sleep(60)
        """)],
        stdout=subprocess.PIPE, text=True,
    )
    child = int(parent.stdout.readline())
    time.sleep(1.0)  # the guard has exec'd the command
    assert psutil.Process(child).cmdline()[-1] == "import time; time.sleep(60)"
    parent.kill()
    parent.wait()
    assert wait_gone([child], 10) == []


# -- real processes and signals -----------------------------------------------------------------


def wait_gone(pids, seconds: float) -> list:
    """The pids still running after up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        alive = [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def with_ctrl_c_restored():
    """``preexec_fn`` for a child that must see Ctrl-C: a shell's background job (``cmd &``) starts
    with SIGINT ignored, the child inherits that and Python then installs no KeyboardInterrupt
    handler; reset it so the test holds however pytest itself was started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def slow_corpus(tmp_path):
    """400 documents of 100 tokens: 2000 Gibbs sweeps take a few seconds, time to send a signal."""
    rng = random.Random(0)
    words = [f"w{i}" for i in range(300)]
    folder = tmp_path / "slow"
    folder.mkdir()
    lines = [" ".join(rng.choice(words[(d % 5) * 60:(d % 5) * 60 + 60]) for _ in range(100)) + "\ttrain\n" for d in range(400)]
    (folder / "corpus.tsv").write_text("".join(lines))
    return folder


SLOW_MODELS = (
    "  - {model: elda, settings: {kappa: 2.0, generator: cooccurrence}}\n"
    "  - {model: gibbs_lda, num_topics: 10, settings: {iterations: 2000}}\n"
)


def wait_for_fit_claims(database: Path, process, count: int, seconds: float = 900, status: str = "RUNNING") -> None:
    """Wait until ``count`` nested runs are ``status`` in the sqlite store (read with sqlite3, so as
    not to race the process's creation of the database)."""
    query = ("SELECT count(*) FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid "
             f"WHERE t.key = 'topicbench.role' AND t.value = 'fit' AND r.status = '{status}'")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[0][-3000:]
        try:
            with sqlite3.connect(database, timeout=5) as connection:
                if connection.execute(query).fetchone()[0] >= count:
                    return
        except sqlite3.OperationalError:  # not created or migrated yet
            pass
        time.sleep(0.3)
    raise AssertionError("the runs were never claimed")


@pytest.mark.slow
def test_sigkill_mid_fit_then_resume_leaves_one_finished_run_per_key(slow_corpus, tmp_path, prefect_server):
    from prefect.settings import PREFECT_API_URL

    database = tmp_path / "mlflow.db"
    store = f"sqlite:///{database}"
    config = write_config(tmp_path, slow_corpus, SLOW_MODELS, seeds=(0,))
    run = topicbench("run", str(config), "--tracking-uri", store, "--no-report")
    first = subprocess.Popen(run, env=topicbench_env(tmp_path / "prefect"), cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for_fit_claims(database, first, 2)
    time.sleep(1.5)  # into the fits
    children = [child.pid for child in psutil.Process(first.pid).children(recursive=True)]
    assert children  # the temporary Prefect server at least
    first.kill()
    first.communicate()
    assert wait_gone(children, 10) == []  # the server did not outlive its parent
    killed_parent = parents(all_runs(store))[0].info.run_id

    resumed = subprocess.run(run, env=topicbench_env(tmp_path / "prefect", PREFECT_API_URL.value()), cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    runs = all_runs(store)
    assert "RUNNING" not in {r.info.status for r in runs}
    finished = [r for r in fit_runs(store) if r.info.status == "FINISHED"]
    keys = [r.data.tags["topicbench.run_key"] for r in finished]
    assert len(finished) == 2 and len(set(keys)) == 2
    stale = [r for r in fit_runs(store) if r.info.status == "KILLED"]
    assert stale and all(f"pid {first.pid} on host" in r.data.tags["topicbench.end_reason"] for r in stale)
    assert {r.data.tags["topicbench.run_key"] for r in stale} <= set(keys)
    statuses = {r.info.run_id: r.info.status for r in parents(runs)}
    assert statuses[killed_parent] == "KILLED" and sorted(statuses.values()) == ["FINISHED", "KILLED"]


@pytest.mark.slow
@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_ends_every_run_killed_and_stops_the_server(slow_corpus, tmp_path, signal_number):
    database = tmp_path / "mlflow.db"
    store = f"sqlite:///{database}"
    config = write_config(tmp_path, slow_corpus, SLOW_MODELS, seeds=(0,))
    # the command itself: it turns SIGTERM into the KeyboardInterrupt of Ctrl-C, and exits at once
    # once everything is closed (a fit running in a thread would otherwise hold its exit). It leads
    # its own process group, as a terminal's foreground job does.
    process = subprocess.Popen(topicbench("run", str(config), "--tracking-uri", store, "--no-report"),
                               env=topicbench_env(tmp_path / "prefect"), cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               preexec_fn=with_ctrl_c_restored, start_new_session=True)
    wait_for_fit_claims(database, process, 2)
    time.sleep(1.5)  # into the fits
    children = [child.pid for child in psutil.Process(process.pid).children(recursive=True)]
    if signal_number == signal.SIGINT:
        # Ctrl-C: the terminal signals the whole group, the temporary Prefect server included
        # unless it left the group; it must outlive the signal long enough to record the flow's end
        os.killpg(process.pid, signal_number)
    else:
        process.send_signal(signal_number)  # `kill PID`
    output = process.communicate(timeout=300)[0]
    print(output)  # shown by pytest when the test fails
    assert process.returncode == 130 and "interrupted" in output, output[-3000:]
    assert "ConnectError" not in output and "Connection refused" not in output, output[-3000:]
    assert wait_gone(children, 10) == []
    runs = all_runs(store)
    unfinished = [r for r in runs if r.info.status != "FINISHED"]
    assert parents(unfinished) and {r.info.status for r in unfinished} == {"KILLED"}, (
        [(r.info.run_name, r.info.status) for r in runs], output[-3000:]
    )
    assert all(r.data.tags.get("topicbench.end_reason", "").startswith("the benchmark stopped") for r in unfinished)


# -- the command line ---------------------------------------------------------------------------


@pytest.mark.slow
def test_the_command_ends_with_the_flows_own_cause_not_a_later_symptom(tmp_path):
    """A corpus that exists (so the config's checks pass) but is malformed fails inside the flow:
    the command's last line is that error, with no traceback and not the report's "no tracked
    runs"; the parent run ends FAILED with the cause."""
    corpus = tmp_path / "malformed"
    corpus.mkdir()
    (corpus / "corpus.tsv").write_text("tax cut\ttrain\ntax\ttrain\tlabel\textra\n")
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = write_config(tmp_path, corpus, "  - {model: elda}\n", seeds=(0,))
    result = subprocess.run(
        topicbench("run", str(config), "--tracking-uri", store, "--out", str(tmp_path / "report")),
        env=topicbench_env(tmp_path / "prefect"), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=900,
    )
    last = result.stdout.strip().splitlines()[-1]
    assert result.returncode == 2, result.stdout[-3000:]
    assert last.startswith("topicbench: error: ") and "corpus.tsv line 2" in last, result.stdout[-3000:]
    assert "Traceback" not in result.stdout
    (parent,) = parents(all_runs(store, experiment=_experiment_of(config)))
    assert parent.info.status == "FAILED" and "line 2" in parent.data.tags["topicbench.error"]


def _experiment_of(config: Path) -> str:
    import yaml

    return yaml.safe_load(config.read_text())["experiment"]


@pytest.mark.slow
def test_ui_stopped_with_ctrl_c_takes_its_server_and_workers_down(tmp_path):
    """`topicbench ui` runs MLflow's server (and its workers) in a process group of their own; Ctrl-C
    on the command stops all of them and frees the port."""
    import socket

    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    MlflowClient(store).create_experiment("kept")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ui = subprocess.Popen(
        [sys.executable, "-m", "topicbench.flows.cli.main", "ui", "--tracking-uri", store, "--port", str(port), "--no-browser"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=topicbench_env(tmp_path),
        preexec_fn=with_ctrl_c_restored,
    )
    server_processes = []
    try:
        deadline = time.monotonic() + 180
        while not _listening(port):
            assert ui.poll() is None, ui.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "the MLflow UI never listened"
            time.sleep(0.5)
        server_processes = [p.pid for p in psutil.Process(ui.pid).children(recursive=True)]
        assert server_processes
        ui.send_signal(signal.SIGINT)
        output = ui.communicate(timeout=120)[0]
        assert wait_gone(server_processes, 30) == []
        assert not _listening(port)
        # the UI's own last line, not `run`'s "the same command resumes"
        assert output.strip().splitlines()[-1] == f"stopped the MLflow UI on 127.0.0.1:{port}" and ui.returncode == 0
    finally:  # a failed check must not leave the server listening after the test
        for pid in [ui.pid, *server_processes]:
            with contextlib.suppress(psutil.NoSuchProcess):
                psutil.Process(pid).kill()


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0
