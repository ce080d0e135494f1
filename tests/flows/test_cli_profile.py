"""``topicbench --profile FILE``: the command's cProfile statistics, written although the command
line ends its process without the interpreter's teardown (``os._exit``)."""

from __future__ import annotations

import pstats
import subprocess
import sys

from topicbench.flows.cli.main import main


def profiled_functions(path) -> set:
    return {name for _, _, name in pstats.Stats(str(path)).stats}


def test_the_profile_holds_the_commands_own_calls(tmp_path):
    profile, schema = tmp_path / "schema.prof", tmp_path / "schema.json"
    assert main(["--profile", str(profile), "schema", "--out", str(schema)]) == 0
    assert schema.exists()
    assert "run_schema_command" in profiled_functions(profile)


def test_the_profile_is_written_before_the_fast_exit(tmp_path):
    profile = tmp_path / "schema.prof"
    done = subprocess.run([sys.executable, "-c", "from topicbench.flows.cli.main import main; main()",
                           "--profile", str(profile), "schema", "--out", str(tmp_path / "schema.json")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"profile written to {profile}" in done.stderr
    assert "run_schema_command" in profiled_functions(profile)


def test_a_failed_command_still_leaves_its_profile_and_status(tmp_path):
    profile = tmp_path / "report.prof"
    code = main(["--profile", str(profile), "report", "--bundle", str(tmp_path / "no-such-bundle")])
    assert code == 2
    assert "run_report_command" in profiled_functions(profile)


def test_a_profile_that_cannot_be_written_leaves_the_status_alone(tmp_path, capsys):
    code = main(["--profile", str(tmp_path / "missing" / "x.prof"), "schema", "--out", str(tmp_path / "s.json")])
    assert code == 0
    assert "profile not written" in capsys.readouterr().err
