"""Stores that go away or fill up mid-run, stores without a file lock shared by two processes,
and a PostgreSQL store, with real servers and real ``topicbench`` processes.

What must hold: a run whose store stops answering ends within a bounded time with exit 2 and a
last line naming the spool that keeps its finished fits; SIGTERM then still ends it within
seconds; the same command, once the store answers again, logs the spooled fits without refitting
and finishes every run; two processes started together on a server or PostgreSQL store finish
every run exactly once, whichever of them fits it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import psutil
import pytest
from mlflow.tracking import MlflowClient

from topicbench.tasks.store.tracking import Tracker

from servers import free_port, postgres_server, prefect_api, running_mlflow_server  # noqa: F401 (fixtures)
from test_exit_paths import SLOW_MODELS, slow_corpus, wait_for_fit_claims  # noqa: F401 (fixture)
from test_run_claims import other_process, owner_of, topicbench, topicbench_env, write_config  # noqa: F401 (fixture)
from test_store_faults import fill, small_disk  # noqa: F401 (fixture)

#: A benchmark of E-LDA and a baseline, small enough for seconds per fit.
ELDA_AND_GIBBS = (
    "  - {model: elda, settings: {kappa: 2.0, generator: cooccurrence, top_words: 10}}\n"
    "  - {model: gibbs_lda, num_topics: 4, settings: {iterations: 20, top_words: 10}}\n"
)
#: Seconds a `topicbench` command may take here (starting Prefect and loading numba's kernels
#: take most of it on a loaded 2-core machine).
COMMAND_SECONDS = 600
#: Seconds a run may take to end once its store is gone: MLflow's bounded retries of one call
#: (topicbench's defaults: about 30 s), the fits still running (seconds here) and the exit.
GONE_STORE_SECONDS = 150
#: Seconds SIGTERM may take to end a run whose tracking server is gone.
SIGTERM_SECONDS = 30


def run_command(arguments: list, env: dict, cwd: Path, expect: int = 0) -> str:
    result = subprocess.run(topicbench(*arguments), env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, timeout=COMMAND_SECONDS)
    assert result.returncode == expect, result.stdout[-4000:]
    return result.stdout


def fit_runs(store: str, experiment: str = "tiny") -> list:
    client = MlflowClient(store)
    found = client.get_experiment_by_name(experiment)
    assert found is not None, f"no experiment {experiment!r} at {store}"
    return client.search_runs([found.experiment_id], "tags.`topicbench.role` = 'fit'", max_results=1000)


def finished_once_each(store: str, keys: int) -> list:
    """The FINISHED fit runs, asserting there is exactly one per run key, ``keys`` of them, and no
    run left RUNNING."""
    runs = fit_runs(store)
    finished = [r for r in runs if r.info.status == "FINISHED"]
    per_key = {}
    for run in finished:
        per_key.setdefault(run.data.tags["topicbench.run_key"], []).append(run.info.run_id)
    assert len(per_key) == keys and all(len(ids) == 1 for ids in per_key.values()), (
        [(r.info.run_name, r.info.status, r.data.tags.get("topicbench.end_reason")) for r in runs])
    assert "RUNNING" not in {r.info.status for r in runs}
    return finished


def last_line(output: str) -> str:
    return output.strip().splitlines()[-1]


def spool_entries(spool: Path) -> list:
    return sorted(p.parent.name for p in spool.rglob("run.json"))


# -- PostgreSQL ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_benchmark_is_tracked_in_postgresql_and_reported_from_it(tiny_octis, tmp_path, postgres_server, prefect_api):
    store = postgres_server.extra["new_database"]("benchmark")
    config = write_config(tmp_path, tiny_octis, ELDA_AND_GIBBS, seeds=(0,))
    env = topicbench_env(tmp_path / "prefect", prefect_api.url)
    run_command(["run", str(config), "--tracking-uri", store, "--no-report"], env, tmp_path)
    for run in finished_once_each(store, 2):
        assert "umass_top5" in run.data.metrics and run.data.params["corpus"] == "tiny"
        assert run.inputs.dataset_inputs[0].dataset.name == "tiny"
    out = tmp_path / "report"
    output = run_command(["report", "--experiment", "tiny", "--tracking-uri", store, "--out", str(out)], env, tmp_path)
    assert "(2 runs, 0 failed)" in output and "gibbs_lda" in (out / "report.md").read_text()


def test_report_of_a_postgresql_database_without_a_store_creates_none(postgres_server, capsys):
    import sqlalchemy

    from topicbench.flows.cli.main import main

    store = postgres_server.extra["new_database"]("empty")
    assert main(["report", "--experiment", "tiny", "--tracking-uri", store]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("topicbench: error: no MLflow store in the database")
    engine = sqlalchemy.create_engine(store)
    try:
        assert sqlalchemy.inspect(engine).get_table_names() == []
    finally:
        engine.dispose()


# -- two processes on a store without a file lock ---------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mlflow server", "postgresql"])
def test_two_processes_on_one_fresh_server_store_finish_every_run_once(kind, tiny_octis, tmp_path, postgres_server,
                                                                       prefect_api):
    """Started together on a new store, both log the corpus as a new dataset at once (the race
    that crashed one of them with "UNIQUE constraint failed: datasets"), claim without a lock
    (the check after the creation decides) and wait for each other's runs: both exit 0 and
    each of the 6 runs is FINISHED once."""
    config = write_config(tmp_path, tiny_octis, ELDA_AND_GIBBS, seeds=(0, 1, 2))
    env = topicbench_env(tmp_path / "prefect", prefect_api.url)

    def race(store: str) -> list:
        processes = [subprocess.Popen(topicbench("run", str(config), "--tracking-uri", store, "--no-report"), env=env,
                                      cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                     for _ in range(2)]
        outputs = [process.communicate(timeout=COMMAND_SECONDS)[0] for process in processes]
        assert [p.returncode for p in processes] == [0, 0], "\n\n".join(o[-3000:] for o in outputs)
        return outputs

    if kind == "postgresql":
        store = postgres_server.extra["new_database"]("race")
        outputs = race(store)
    else:
        (tmp_path / "server").mkdir()
        with running_mlflow_server(tmp_path / "server") as server:
            store = server.url
            outputs = race(store)
            finished_once_each(store, 6)
    if kind == "postgresql":
        finished_once_each(store, 6)
    assert sum(int(n) for o in outputs for n in re.findall(r"(\d+) runs logged", o)) == 6, outputs


# -- a tracking server that goes away -----------------------------------------------------------


def start_run(config: Path, store: str, env: dict, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(topicbench("run", str(config), "--tracking-uri", store, "--no-report"), env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def kill_group(server) -> None:
    os.killpg(server.process.pid, signal.SIGKILL)
    server.process.wait()


@pytest.mark.slow
def test_a_server_that_dies_mid_run_ends_it_in_bounded_time_and_its_fits_are_logged_later(slow_corpus, tmp_path,
                                                                                           prefect_api):
    folder, spool, port = tmp_path / "server", tmp_path / "spool", free_port()
    folder.mkdir()
    config = write_config(tmp_path, slow_corpus, SLOW_MODELS, seeds=(0,))
    env = {**topicbench_env(tmp_path / "prefect", prefect_api.url), "TOPICBENCH_SPOOL": str(spool)}
    with running_mlflow_server(folder, port) as server:
        first = start_run(config, server.url, env, tmp_path)
        wait_for_fit_claims(folder / "mlflow.db", first, 2)
        time.sleep(2.0)  # the claims are described; the fits run
        kill_group(server)
        gone = time.monotonic()
        output = first.communicate(timeout=GONE_STORE_SECONDS + 60)[0]
        seconds = time.monotonic() - gone
    print(f"the run ended {seconds:.1f} s after its server died")  # a figure for the manual (pytest -s)
    assert first.returncode == 2, output[-4000:]
    assert seconds < GONE_STORE_SECONDS, f"ended {seconds:.0f} s after its server died"
    line = last_line(output)
    assert line.startswith(f"topicbench: error: the tracking store at {server.url} stopped answering"), line
    assert f"are kept in {spool}" in line and "run the same command once the store answers" in line, line
    assert "Traceback" not in output
    spooled = spool_entries(spool)
    assert spooled, output[-3000:]  # the gibbs fit at least ended after the server was gone

    with running_mlflow_server(folder, port) as server:  # back, on its database and port
        output = run_command(["run", str(config), "--tracking-uri", server.url, "--no-report"], env, tmp_path)
        finished = finished_once_each(server.url, 2)
    assert "logged from the spool, not refitted" in output and spool_entries(spool) == []
    from_spool = [r for r in finished if "topicbench.logged_from_spool" in r.data.tags]
    assert sorted(r.data.tags["topicbench.run_key"] for r in from_spool) == spooled
    # fitted by the first process, before its server died: not refitted
    assert {r.data.tags["topicbench.fitted_on.pid"] for r in from_spool} == {str(first.pid)}


@pytest.mark.slow
def test_sigterm_ends_a_run_whose_server_is_gone_within_seconds(slow_corpus, tmp_path, prefect_api):
    folder, spool, port = tmp_path / "server", tmp_path / "spool", free_port()
    folder.mkdir()
    config = write_config(tmp_path, slow_corpus, SLOW_MODELS, seeds=(0,))
    env = {**topicbench_env(tmp_path / "prefect", prefect_api.url), "TOPICBENCH_SPOOL": str(spool)}
    with running_mlflow_server(folder, port) as server:
        process = start_run(config, server.url, env, tmp_path)
        wait_for_fit_claims(folder / "mlflow.db", process, 2)
        time.sleep(2.0)
        kill_group(server)
        time.sleep(5.0)  # fitting, or waiting on the dead server
        children = [child.pid for child in psutil.Process(process.pid).children(recursive=True)]
        process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        output = process.communicate(timeout=SIGTERM_SECONDS + 60)[0]
        seconds = time.monotonic() - signalled
    print(f"SIGTERM ended the run in {seconds:.1f} s")
    assert process.returncode == 130 and seconds < SIGTERM_SECONDS, (seconds, output[-3000:])
    assert last_line(output).startswith("topicbench: interrupted:"), output[-3000:]
    if spool_entries(spool):
        assert str(spool) in last_line(output), output[-6000:]
    assert not [pid for pid in children if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    with running_mlflow_server(folder, port) as server:  # the same command afterwards finishes every run
        run_command(["run", str(config), "--tracking-uri", server.url, "--no-report"], env, tmp_path)
        finished_once_each(server.url, 2)
    assert spool_entries(spool) == []


# -- a disk that fills up ------------------------------------------------------------------------


@pytest.mark.slow
def test_a_disk_that_fills_mid_run_loses_no_fit(slow_corpus, tmp_path, small_disk, prefect_api):
    database, spool = small_disk / "mlflow.db", tmp_path / "spool"
    store = f"sqlite:///{database}"
    config = write_config(tmp_path, slow_corpus, SLOW_MODELS, seeds=(0,))
    env = {**topicbench_env(tmp_path / "prefect", prefect_api.url), "TOPICBENCH_SPOOL": str(spool)}
    process = start_run(config, store, env, tmp_path)
    wait_for_fit_claims(database, process, 2)
    time.sleep(2.0)
    filler = fill(small_disk)
    output = process.communicate(timeout=GONE_STORE_SECONDS + 60)[0]
    assert process.returncode == 2, output[-4000:]
    line = last_line(output)
    assert f"the tracking store at {store} stopped answering (its disk is full)" in line and f"kept in {spool}" in line, line
    spooled = spool_entries(spool)
    assert spooled and "Traceback" not in output, output[-6000:]

    filler.unlink()
    output = run_command(["run", str(config), "--tracking-uri", store, "--no-report"], env, tmp_path)
    finished = finished_once_each(store, 2)
    from_spool = [r for r in finished if "topicbench.logged_from_spool" in r.data.tags]
    assert sorted(r.data.tags["topicbench.run_key"] for r in from_spool) == spooled
    assert {r.data.tags["topicbench.fitted_on.pid"] for r in from_spool} == {str(process.pid)}


# -- runs held by another process ----------------------------------------------------------------


@pytest.mark.usefixtures("prefect_server")
@pytest.mark.parametrize("holder_ends", ["dies", "finishes"])
def test_runs_another_process_holds_are_waited_for_and_claimed_again_if_it_stops(holder_ends, tiny_octis, tmp_path,
                                                                                other_process, monkeypatch):
    """A re-run started while an interrupted run still exits finds its claims live, and skipped
    them: those then ended KILLED and nothing finished them. Now the run waits for them after its
    own, and claims again and fits those whose holder stops without finishing them."""
    from topicbench.flows import benchmark as benchmark_module
    from topicbench.flows.benchmark import run_benchmark
    from topicbench.flows.benchmark_runs import Job
    from topicbench.flows.config.model import BenchmarkConfig
    from topicbench.tasks.run.corpus import corpus_splits, load_corpus

    monkeypatch.setattr(benchmark_module, "WAIT_POLL_SECONDS", 0.5)
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = BenchmarkConfig.from_dict({
        "experiment": "tiny", "corpora": [{"name": "tiny", "source": str(tiny_octis), "preprocessing": {"preprocessed": True}}],
        "models": [{"model": "elda", "settings": {"kappa": 2.0, "generator": "cooccurrence"}}], "seeds": [0, 1],
        "metrics": ["umass"], "top_n": [5], "tracking_uri": store,
    })
    spec = config.corpora[0]
    held = Job(spec, corpus_splits(load_corpus.fn(spec))[0], config.models[0], 1, config)
    holder = Tracker(store, "tiny")
    holder.owner = owner_of(other_process)
    held_run = holder.claim("another parent", held).run_id

    def end_the_holder():
        time.sleep(3.0)
        if holder_ends == "dies":
            other_process.kill()
        else:
            holder.client.set_terminated(held_run, "FINISHED")

    threading.Thread(target=end_the_holder, daemon=True).start()
    summary = run_benchmark(config).result()
    runs = {r.info.run_id: r for r in fit_runs(store)}
    assert runs[held_run].info.status == ("KILLED" if holder_ends == "dies" else "FINISHED")
    finished_once_each(store, 2)
    if holder_ends == "dies":
        assert len(summary["logged"]) == 2 and summary["claimed_elsewhere"] == []
        assert f"pid {other_process.pid}" in runs[held_run].data.tags["topicbench.end_reason"]
    else:
        assert len(summary["logged"]) == 1 and summary["claimed_elsewhere"] == [f"{held.label}: fitted by another process"]
