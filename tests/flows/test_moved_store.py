"""A store copied to another folder (mlflow.db with mlartifacts/) reports as the original did,
and no command writes outside the copy and the report's folder."""

from __future__ import annotations

import random
import shutil

import pytest

from topicbench.flows.benchmark import run_benchmark
from topicbench.flows.cli.main import main
from topicbench.flows.config.model import BenchmarkConfig

pytestmark = pytest.mark.usefixtures("prefect_server")


def _files(folder, leave_out=()):
    """{path: (size, mtime)} of every file under ``folder`` outside the ``leave_out`` folders."""
    return {path: (path.stat().st_size, path.stat().st_mtime_ns) for path in folder.rglob("*")
            if path.is_file() and not any(path.is_relative_to(other) for other in leave_out)}


def _without_generated_line(text: str) -> list:
    return [line for line in text.splitlines() if " UTC by: " not in line]


def test_a_copied_store_reports_as_the_original_and_writes_nothing_outside_the_copy(tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    rng = random.Random(1)
    vocab = "tax budget war troops school teacher health doctor vote bill law court".split()
    corpus.joinpath("corpus.tsv").write_text("".join(
        " ".join(rng.choices(vocab[(d % 3) * 4 : (d % 3) * 4 + 4] + vocab, k=12)) + "\ttrain\n" for d in range(30)))
    first = tmp_path / "first"
    config = BenchmarkConfig.from_dict({
        "experiment": "moving", "tracking_uri": f"sqlite:///{first / 'mlflow.db'}", "seeds": [0, 1],
        "corpora": [{"name": "toy", "source": str(corpus), "preprocessing": {"preprocessed": True}}],
        "models": [{"model": "elda", "settings": {"top_words": 10}},
                   {"model": "gibbs_lda", "num_topics": 3, "settings": {"iterations": 30, "top_words": 10}}],
        "metrics": ["umass", "npmi", "topic_diversity"], "top_n": [5, 10],
    })
    assert run_benchmark(config).is_completed()
    elsewhere = tmp_path / "elsewhere"  # the working folder: a command must not write there either
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["report", "--experiment", "moving", "--tracking-uri", config.tracking_uri,
                 "--out", str(tmp_path / "report-first")]) == 0
    original = (tmp_path / "report-first" / "report.md").read_text()
    assert "## Stability across seeds" in original and "## E-LDA's topics" in original

    copy = tmp_path / "copy"
    shutil.copytree(first, copy, ignore=shutil.ignore_patterns("*.lock"))
    shutil.rmtree(first)  # gone: anything read from or written to its place would show
    before = _files(tmp_path, leave_out=(copy, tmp_path / "report-copy"))
    assert main(["report", "--experiment", "moving", "--tracking-uri", f"sqlite:///{copy / 'mlflow.db'}",
                 "--out", str(tmp_path / "report-copy")]) == 0
    moved = (tmp_path / "report-copy" / "report.md").read_text()
    assert _without_generated_line(moved) == _without_generated_line(original)
    assert not first.exists()
    assert _files(tmp_path, leave_out=(copy, tmp_path / "report-copy")) == before
    assert (copy / "mlartifacts" / "moving").is_dir() and any((copy / "mlartifacts").rglob("report/report.md"))
