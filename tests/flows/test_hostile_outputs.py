"""Where results are written, under hostile names and full disks (issue 29): user text that becomes
a file name never leaves the output folder, and a write that fails leaves no truncated or empty
file, only a one-line error that says where the results are.

A full disk is a real one: a 1 MiB tmpfs mounted for the test (root only; skipped otherwise, saying
why), filled before the command runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from topicbench.flows.cli import main

pytestmark = pytest.mark.usefixtures("prefect_server")

HOSTILE_EXPERIMENT = "../../escaped_exp"


@contextlib.contextmanager
def full_disk(folder: Path):
    """A 1 MiB tmpfs at ``folder``, filled to the last byte, for the block."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("a full disk is simulated with a tmpfs mount, which needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        fill(folder / "filler")
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(path: Path) -> None:
    """Write ``path`` until its disk has no byte left."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (1 << 16, 1 << 10, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(descriptor, b"\0" * size)
    finally:
        os.close(descriptor)


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory, prefect_server):
    """One benchmark whose experiment, corpus and label are paths: run from ``work/deep`` with the
    default report folder. Returns (tmp folder, working folder, store URI, exit code)."""
    import random

    tmp = tmp_path_factory.mktemp("hostile")
    corpus = tmp / "corpus"
    corpus.mkdir()
    rng = random.Random(0)
    themes = ["budget tax spending deficit revenue", "war troops iraq military soldiers", "school teacher education student"]
    lines = []
    for d in range(24):
        words = themes[d % 3].split() * 2
        rng.shuffle(words)
        lines.append(" ".join(words) + "\ttrain\n")
    (corpus / "corpus.tsv").write_text("".join(lines))
    work = tmp / "work" / "deep"
    work.mkdir(parents=True)
    config = tmp / "config.yaml"
    config.write_text(json.dumps({
        "experiment": HOSTILE_EXPERIMENT,
        "corpora": [{"name": "a/b", "source": str(corpus), "preprocessing": {"preprocessed": True}}],
        "models": [{"model": "elda", "label": "../x", "settings": {"top_words": 10}}],
        "metrics": ["umass", "topic_diversity"], "top_n": [5, 10],
    }))
    store = f"sqlite:///{tmp / 'store' / 'mlflow.db'}"
    previous = Path.cwd()
    os.chdir(work)
    try:
        code = main(["run", str(config), "--tracking-uri", store])
    finally:
        os.chdir(previous)
    return tmp, work, store, code


def _files(folder: Path) -> set:
    return {p.relative_to(folder) for p in folder.rglob("*") if p.is_file()}


def test_names_that_are_paths_stay_inside_the_report_folder(hostile_run):
    from topicbench.core.io import file_name_for

    tmp, work, store, code = hostile_run
    assert code == 0
    report = work / "results" / file_name_for(HOSTILE_EXPERIMENT)
    assert report.name.startswith("_._.._escaped_exp-")
    written = _files(report)
    assert {Path("report.md"), Path("report.html"), Path(f"coherence_{file_name_for('a/b')}.png")} <= written
    # nothing anywhere else: only the inputs, the store and the report folder exist
    outside = {p for p in _files(tmp) if not str(p).startswith(("corpus/", "config.yaml", "store/", "work/deep/results/"))}
    assert outside == set()
    assert {p.parent for p in _files(work / "results")} == {Path(report.name)}
    markdown = (report / "report.md").read_text()
    assert "../x" in markdown and "a/b" in markdown  # shown as given


def test_report_of_an_experiment_named_like_a_path_writes_under_results(hostile_run, capsys, monkeypatch, tmp_path):
    from topicbench.core.io import file_name_for

    tmp, work, store, _ = hostile_run
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--experiment", HOSTILE_EXPERIMENT, "--tracking-uri", store]) == 0
    written = _files(tmp_path)
    assert {Path("results") / file_name_for(HOSTILE_EXPERIMENT) / name
            for name in ("report.md", "report.html", f"coherence_{file_name_for('a/b')}.png")} <= written
    assert {path.parent for path in written} == {Path("results") / file_name_for(HOSTILE_EXPERIMENT)}
    assert main(["report", "--experiment", "/tmp/absolute", "--tracking-uri", store]) == 2
    assert "no experiment named '/tmp/absolute'" in capsys.readouterr().err


@pytest.mark.timeout(120)
def test_a_report_folder_on_a_full_disk_is_one_line_and_leaves_no_empty_report(hostile_run, tmp_path, capsys):
    _, _, store, _ = hostile_run
    with full_disk(tmp_path / "full") as disk:
        started = time.monotonic()
        code = main(["report", "--experiment", HOSTILE_EXPERIMENT, "--tracking-uri", store, "--out", str(disk / "report")])
        seconds = time.monotonic() - started
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert code == 2 and seconds < 60
        assert "Traceback" not in "\n".join(err)
        assert err[-1].startswith(f"topicbench: error: cannot write the report into {disk / 'report'}")
        assert "No space left on device" in err[-1] and "topicbench report --experiment" in err[-1]
        # no half-written file: nothing but the (empty) folder and the filler
        assert _files(disk) == {Path("filler")}


@pytest.mark.timeout(120)
def test_json_on_a_full_disk_keeps_the_result_elsewhere_and_no_truncated_file(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("budget tax cut budget\ntax cut vote budget\nwar troops iraq vote\niraq war troops budget\n")
    with full_disk(tmp_path / "full") as disk:
        target = disk / "result.json"  # the disk is full: not even an empty file fits there
        code = main(["elda", "--corpus", str(corpus), "--preprocessed", "--json", str(target)])
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert code == 2
        assert "No space left on device" in err[-1] and "the result is kept at" in err[-1]
        kept = Path(err[-1].split("the result is kept at ")[1])
        assert json.loads(kept.read_text())["num_links"] > 0
        assert not target.exists() and _files(disk) == {Path("filler")}


@pytest.mark.timeout(120)
def test_json_over_an_existing_file_on_a_full_disk_keeps_the_old_file_whole(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("budget tax cut budget\ntax cut vote budget\nwar troops iraq vote\niraq war troops budget\n")
    folder = tmp_path / "full"
    folder.mkdir()
    previous = json.dumps({"previous": str(uuid.uuid4())})
    with full_disk(folder) as disk:
        os.remove(disk / "filler")
        (disk / "result.json").write_text(previous)
        fill(disk / "filler")
        code = main(["elda", "--corpus", str(corpus), "--preprocessed", "--json", str(disk / "result.json")])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and "the result is kept at" in err[-1]
        assert (disk / "result.json").read_text() == previous  # whole, not truncated
        assert not any(p.name.endswith(".part.json") for p in disk.iterdir())
