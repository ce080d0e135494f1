"""The console of a real ``topicbench run``: on one screen at the default verbosity, everything
with -v, and the report's path on the last line."""

from __future__ import annotations

import subprocess

import pytest

from test_run_claims import topicbench, topicbench_env, write_config

#: Lines a person can take in at once (one screen).
ONE_SCREEN = 40


@pytest.mark.slow
def test_the_console_of_a_run_fits_on_one_screen_and_ends_with_the_report(tiny_octis, tmp_path):
    config = write_config(tmp_path, tiny_octis, seeds=(0,))
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = tmp_path / "report"
    finished = subprocess.run(
        topicbench("run", str(config), "--tracking-uri", store, "--out", str(out)),
        env=topicbench_env(tmp_path / "prefect"), cwd=tmp_path, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900,
    )
    lines = finished.stdout.splitlines()
    assert finished.returncode == 0, finished.stdout[-3000:]
    assert len(lines) <= ONE_SCREEN, finished.stdout
    # libraries' INFO chatter is gone (gensim's, Prefect's task-run states and server notices);
    # INFO lines are topicbench's own, logged by it or through the flow's run logger
    info_loggers = {line.split()[2] for line in lines if line[8:14] == " INFO "}
    assert info_loggers <= {"topicbench.flows.runtime:", "prefect.flow_runs:"}, finished.stdout
    chatter = ("Finished in state", "Starting temporary server", "Beginning flow run", "PROGRESS: pass")
    assert not any(word in line for line in lines for word in chatter), finished.stdout
    assert "2 of 2 runs done in" in finished.stdout  # the progress display's final line (not a terminal)
    assert lines[-1] == f"report: {out / 'report.md'} (and .html); runs tracked at {store}"
    assert (out / "report.md").is_file()
