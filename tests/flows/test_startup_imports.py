"""What `topicbench run` imports before its first fit: nothing that only a fit, a score or a report
needs (issue 49: each of these cost about a second of CPU on every run's start)."""

from __future__ import annotations

import json
import subprocess
import sys

#: The command line's start of `topicbench run` with the built-in config: its parser, the config
#: checked, the flow's module imported, a corpus read; then the modules loaded, as JSON.
RUN_START = """
import json, sys
from topicbench.flows.cli.main import build_parser
from topicbench.flows.cli.common import config_from_command_line, default_report_folder
args = build_parser().parse_args(["run", "--no-report"])
config = config_from_command_line(args)
default_report_folder(config.experiment)
import topicbench.flows.benchmark
from topicbench.core.io import load_corpus
load_corpus("lee")
print(json.dumps(sorted(sys.modules)))
"""

#: Imported only where a fit runs, a score is computed or a report is written.
NOT_AT_START = ("numba", "gensim", "scipy.stats", "torch", "sentence_transformers", "matplotlib", "plotly",
                "topicbench.flows.report", "topicbench.tasks.report", "topicbench.core.elda.model",
                "topicbench.core.metrics.kernels", "topicbench.core.metrics.stability_kernels")


def test_a_runs_start_imports_no_fit_score_or_report_module(tmp_path):
    done = subprocess.run([sys.executable, "-c", RUN_START], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    modules = set(json.loads(done.stdout.splitlines()[-1]))
    assert "prefect" in modules and "topicbench.flows.benchmark" in modules  # the check sees imports
    loaded = sorted(name for name in NOT_AT_START if name in modules)
    assert loaded == [], f"imported before any fit: {loaded}"


def test_the_command_lines_report_folder_is_the_reports(tmp_path, monkeypatch):
    from topicbench.flows.cli.common import default_report_folder as command_line_folder
    from topicbench.flows.report import default_report_folder

    monkeypatch.chdir(tmp_path)
    for experiment in ("lee-default", "../../etc", "/abs/name", "a b/c", "é"):
        assert command_line_folder(experiment) == default_report_folder(experiment)
