"""A fit that runs long stops within seconds of SIGTERM: its run ends KILLED (issue 46, item 6).

tomotopy's samplers hold the interpreter for as long as one ``train`` call runs between two
callbacks: a flow interrupted beside such a fit could not close its runs until the sampler let
go. HDP now samples a sweep at a time and stops at the next sweep once its flow is interrupted.
"""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from test_exit_paths import wait_for_fit_claims, with_ctrl_c_restored
from test_run_claims import topicbench, topicbench_env, write_config

#: Seconds from SIGTERM to the command's exit, its fit's run marked KILLED.
STOP_SECONDS = 10.0

#: HDP at its documented largest start (initial_k) and most sweeps: hours of sampling, each sweep
#: a fraction of a second on the corpus below.
LONG_HDP = "  - {model: hdp, settings: {initial_k: 1000, iterations: 100000}}\n"


@pytest.fixture
def small_corpus(tmp_path) -> Path:
    """400 documents of 100 tokens over 300 words (an OCTIS folder, preprocessed)."""
    rng = random.Random(0)
    words = [f"w{i}" for i in range(300)]
    folder = tmp_path / "small"
    folder.mkdir()
    lines = [" ".join(rng.choice(words[(d % 5) * 60:(d % 5) * 60 + 60]) for _ in range(100)) + "\ttrain\n"
             for d in range(400)]
    (folder / "corpus.tsv").write_text("".join(lines))
    return folder


def fit_statuses(database: Path) -> list:
    """The statuses of the fit runs in the sqlite store (read with sqlite3: no MLflow client start)."""
    query = ("SELECT r.status FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid "
             "WHERE t.key = 'topicbench.role' AND t.value = 'fit'")
    with sqlite3.connect(database, timeout=5) as connection:
        return [status for (status,) in connection.execute(query)]


@pytest.mark.slow
def test_a_long_hdp_fit_stops_within_seconds_of_sigterm_with_its_run_killed(small_corpus, tmp_path):
    database = tmp_path / "mlflow.db"
    config = write_config(tmp_path, small_corpus, LONG_HDP, seeds=(0,))
    process = subprocess.Popen(topicbench("run", str(config), "--tracking-uri", f"sqlite:///{database}", "--no-report"),
                               env=topicbench_env(tmp_path / "prefect"), cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               preexec_fn=with_ctrl_c_restored, start_new_session=True)
    wait_for_fit_claims(database, process, 1)
    time.sleep(3.0)  # into the sampler's sweeps
    assert process.poll() is None
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)  # `kill PID`
    try:
        output = process.communicate(timeout=STOP_SECONDS)[0]
    except subprocess.TimeoutExpired:
        process.kill()
        output = process.communicate()[0]
        pytest.fail(f"still running {STOP_SECONDS:g} s after SIGTERM; runs {fit_statuses(database)}\n{output[-3000:]}")
    stopped = time.monotonic() - sent
    print(output, f"stopped {stopped:.1f} s after SIGTERM")  # shown by pytest when the test fails
    assert process.returncode == 130 and "interrupted" in output, output[-3000:]
    assert fit_statuses(database) == ["KILLED"], output[-3000:]
    assert stopped < STOP_SECONDS


def test_a_fit_in_the_flows_process_is_asked_to_stop_once_the_flow_stops_listening():
    from topicbench.tasks.run.fit import stops_with_its_flow
    from topicbench.tasks.run.progress import listening

    assert stops_with_its_flow() is None  # no flow listens here: a model fitted directly, a Dask worker
    with listening(object()):
        stop_requested = stops_with_its_flow()
        assert stop_requested is not None and not stop_requested()
    assert stop_requested()  # the flow left its fits (interrupted or failed): nobody will log this one
