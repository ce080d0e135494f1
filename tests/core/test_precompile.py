"""``topicbench compile`` (core/precompile.py): after it, no run compiles a kernel.

Fresh processes over a fresh numba cache (``NUMBA_CACHE_DIR``): the command compiles every kernel
of both kernel modules; then the runs a user starts with (exact E-LDA on the built-in corpus, the
parallel algorithm on a 2-worker Dask cluster, an E-LDA output scored by the coherence metrics)
leave the cache exactly as it was, i.e. they loaded everything and compiled nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TOPICBENCH = [str(Path(sys.executable).with_name("topicbench"))]

COMPILE_AND_REPORT = """
import json
from topicbench.core.precompile import compile_kernels, kernel_dispatchers
report = compile_kernels()
print(json.dumps({"compiled": report.compiled, "loaded": report.loaded, "kernels": sorted(kernel_dispatchers()),
                  "folders": report.cache_folders}))
"""

SCORE_AN_ELDA_OUTPUT = """
from topicbench.baselines.elda import ELDAModel
from topicbench.core.io import load_corpus
from topicbench.core.metrics.context import MetricContext, MetricInputs
from topicbench.core.metrics.scoring import score
from topicbench.core.preprocess import PreprocessConfig
corpus = load_corpus(None, PreprocessConfig())
output = ELDAModel().fit(corpus).output_
values, skipped = score(output, MetricContext(MetricInputs(corpus=corpus)), ["umass", "npmi", "cv", "uci"], seed=0)
assert values and not skipped, (values, skipped)
"""


def _cache_files(folder: Path) -> dict:
    """{path: (size, modification time)} of every file numba wrote."""
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file()}


def _run(command, env, timeout=300):
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


@pytest.fixture
def fresh_cache_env(tmp_path):
    return {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache"), "PREFECT_HOME": str(tmp_path / "prefect")}


def test_after_compile_no_run_compiles_a_kernel(fresh_cache_env, tmp_path):
    cache = Path(fresh_cache_env["NUMBA_CACHE_DIR"])
    report = json.loads(_run([sys.executable, "-c", COMPILE_AND_REPORT], fresh_cache_env).splitlines()[-1])
    assert sorted(report["compiled"]) == report["kernels"], "kernels no entry point reached"
    assert len(report["kernels"]) > 40
    assert report["loaded"] == []
    assert all(Path(folder).is_relative_to(cache) for folder in report["folders"]), report["folders"]
    compiled = _cache_files(cache)
    assert compiled

    _run([*TOPICBENCH, "elda", "--top", "1"], fresh_cache_env)
    _run([*TOPICBENCH, "elda", "--top", "1", "--generator", "raw_umass", "--algorithm", "parallel", "--workers", "2"],
         fresh_cache_env)
    _run([sys.executable, "-c", SCORE_AN_ELDA_OUTPUT], fresh_cache_env)
    assert _cache_files(cache) == compiled, "a run compiled (or recompiled) a kernel that compile did not"

    summary = _run([*TOPICBENCH, "compile"], fresh_cache_env)
    assert "0 kernels compiled" in summary, summary
    assert _cache_files(cache) == compiled
