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

from topicbench.flows.cli.main import main

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
    assert {p.parts[0] for p in _files(work / "results")} == {report.name}  # its plot cache inside it
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
    assert {path.parts[:2] for path in written} == {("results", file_name_for(HOSTILE_EXPERIMENT))}
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


# -- output paths never replace what they do not own (issue 37, item 3) -----------------------------
#
# Every command that writes a path the user chose, against things that path must never replace: a
# pipe, a socket, a device node, links, /dev, /sys and a path below a file. A refused path ends
# the command before any work (exit 2, one last line) and is left as it was: same kind, same inode,
# a link still a link. The devices that would be replaced if the rule regressed are twins made in
# tmp_path (a FIFO, a socket, a /dev/null twin); /dev/full and /dev/null are given only with
# `system_files_guarded`, which fails any rename onto /dev, /proc or /sys instead of doing it.

#: Each writer command: its argv, ``{out}`` being the path under test, and what that path is.
OUTPUT_WRITERS = {
    "elda --json": (["elda", "--corpus", "{corpus}", "--preprocessed", "--json", "{out}"], "file"),
    "schema --out": (["schema", "--out", "{out}"], "file"),
    "elda --parquet": (["elda", "--corpus", "{corpus}", "--preprocessed", "--parquet", "{out}"], "folder"),
    "run --out": (["run", "{config}", "--tracking-uri", "{new_store}", "--out", "{out}"], "folder"),
    "report --out": (["report", "--experiment", "kept", "--tracking-uri", "{store}", "--out", "{out}"], "folder"),
    "search --out": (["search", "{search_config}", "--tracking-uri", "{new_store}", "--out", "{out}"], "folder"),
    "paper --out": (["paper", "--data", "{paper_data}", "--tracking-uri", "{new_store}", "--out", "{out}"], "folder"),
    "data fetch --dest": (["data", "fetch", "congress", "--dest", "{out}"], "folder"),
}
FILE_WRITERS = [name for name, (_, kind) in OUTPUT_WRITERS.items() if kind == "file"]


@pytest.fixture(scope="module")
def writer_inputs(tmp_path_factory) -> dict:
    """What the writer commands read before they check their output: a corpus, a benchmark config,
    a search config, stand-ins of the paper's corpora and a store holding the experiment 'kept'."""
    from mlflow.tracking import MlflowClient

    inputs = tmp_path_factory.mktemp("writer_inputs")
    corpus = inputs / "corpus"
    corpus.mkdir()
    documents = ["budget tax cut budget", "tax cut vote budget", "war troops iraq vote", "iraq war troops budget"]
    (corpus / "corpus.tsv").write_text("".join(f"{d}\ttrain\n" for d in documents))
    benchmark = {"experiment": "outputs", "corpora": [{"name": "tiny", "source": str(corpus),
                                                       "preprocessing": {"preprocessed": True}}],
                 "models": [{"model": "elda"}], "metrics": ["umass"], "top_n": [5]}
    (inputs / "config.yaml").write_text(json.dumps(benchmark))
    search = {**benchmark, "search": {"sampler": "grid", "objectives": ["umass@5"], "spaces": {"elda": {"kappa": [1, 2]}}}}
    (inputs / "search.yaml").write_text(json.dumps(search))
    for name in ("congress", "reuters", "20ng_politics"):  # stand-ins: the commands must fail before reading them
        (inputs / "paper" / name).mkdir(parents=True)
        (inputs / "paper" / name / "corpus.tsv").write_text((corpus / "corpus.tsv").read_text())
    store = f"sqlite:///{inputs / 'store' / 'mlflow.db'}"
    client = MlflowClient(store)
    client.set_terminated(client.create_run(client.create_experiment("kept")).info.run_id, "FINISHED")
    return {"corpus": str(corpus), "config": str(inputs / "config.yaml"), "search_config": str(inputs / "search.yaml"),
            "paper_data": str(inputs / "paper"), "store": store, "new_store": f"sqlite:///{inputs / 'new' / 'mlflow.db'}"}


@pytest.fixture
def system_files_guarded(monkeypatch):
    """Any rename onto /dev, /proc or /sys fails the test instead of happening: should the rule
    regress, a test giving /dev/full fails rather than replace the device (the bug, as root)."""

    def guarded(rename):
        def refuse_system_targets(source, target, *args, **kwargs):
            if os.path.realpath(target).startswith(("/dev/", "/proc/", "/sys/")):
                raise AssertionError(f"the output rule let {target} be replaced")
            return rename(source, target, *args, **kwargs)

        return refuse_system_targets

    monkeypatch.setattr(os, "replace", guarded(os.replace))
    monkeypatch.setattr(os, "rename", guarded(os.rename))


def _unix_socket(path: Path) -> None:
    """A socket file at ``path``, bound from its folder (a socket's path is limited to 107 bytes)."""
    import socket

    previous = os.getcwd()
    os.chdir(path.parent)
    try:
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(path.name)
    finally:
        os.chdir(previous)


def _as_root_only(make):
    try:
        make()
    except PermissionError:
        pytest.skip("needs root (mknod, lchown)")


def _hostile_output(name: str, folder: Path, kind: str) -> tuple[str, str]:
    """Make the hostile thing ``name`` in ``folder``: the path to give and the text the refusal's
    line must hold."""
    refusal = {"pipe": "is a pipe, not a regular file", "socket": "is a socket, not a regular file",
               "device": "is a device, not a regular file"} if kind == "file" else {
        "pipe": "is not a folder (it is a pipe)", "socket": "is not a folder (it is a socket)",
        "device": "is not a folder (it is a device)"}
    if name == "a FIFO":
        os.mkfifo(folder / "fifo")
        return str(folder / "fifo"), refusal["pipe"]
    if name == "a socket":
        _unix_socket(folder / "socket")
        return str(folder / "socket"), refusal["socket"]
    if name == "a device node":  # /dev/null's twin: harmless if the rule regressed and it were replaced
        _as_root_only(lambda: os.mknod(folder / "null_twin", 0o600 | __import__("stat").S_IFCHR, os.makedev(1, 3)))
        return str(folder / "null_twin"), refusal["device"]
    if name == "a link to a FIFO":
        os.mkfifo(folder / "fifo")
        (folder / "link").symlink_to("fifo")
        return str(folder / "link"), f"(which leads to {folder / 'fifo'}) {refusal['pipe']}"
    if name == "a dangling link":
        (folder / "link").symlink_to("nowhere")
        return str(folder / "link"), "is a symbolic link to nowhere, which does not exist"
    if name == "another user's link":
        target = folder / ("mine.json" if kind == "file" else "mine")
        target.write_text("{}") if kind == "file" else target.mkdir()
        (folder / "link").symlink_to(target.name)
        _as_root_only(lambda: os.lchown(folder / "link", 65534, 65534))
        return str(folder / "link"), "the link belongs to another user"
    if name == "a link to /dev/full":
        (folder / "link").symlink_to("/dev/full")
        return str(folder / "link"), "(which leads to /dev/full) is under /dev"
    if name in ("/dev/full", "/dev/null"):
        return name, f"cannot write in /dev: {name} is under /dev"
    if name == "a path under /sys":
        return "/sys/topicbench-test/out", "cannot write in /sys: /sys/topicbench-test/out is under /sys"
    assert name == "a path below a file"
    (folder / "file").write_text("")
    return str(folder / "file" / "out"), f"{folder / 'file' / 'out'}: {folder / 'file'} is not a folder"


def _state(folder: Path, *paths: str) -> dict:
    """Each thing under ``folder`` (and each of ``paths``): its kind, inode and, for a link, where
    it points; a replaced pipe, socket, device or link shows as another inode or kind."""
    import stat

    def of(path: Path):
        info = os.lstat(path)
        return stat.S_IFMT(info.st_mode), info.st_ino, os.readlink(path) if stat.S_ISLNK(info.st_mode) else None

    state = {path: of(path) for path in folder.rglob("*")}
    state.update({Path(path): of(Path(path)) for path in paths if os.path.lexists(path)})
    return state


HOSTILE_OUTPUTS = ["a FIFO", "a socket", "a device node", "a link to a FIFO", "a dangling link", "another user's link",
                   "a link to /dev/full", "/dev/full", "/dev/null", "a path under /sys", "a path below a file"]


@pytest.mark.usefixtures("system_files_guarded")
class TestOutputPathsNeverReplaceWhatTheyDoNotOwn:
    @pytest.mark.timeout(120)
    @pytest.mark.parametrize("hostile", HOSTILE_OUTPUTS)
    @pytest.mark.parametrize("writer", list(OUTPUT_WRITERS))
    def test_is_refused_before_any_work_and_left_as_it_was(self, writer, hostile, writer_inputs, tmp_path, capsys):
        argv, kind = OUTPUT_WRITERS[writer]
        out, refusal = _hostile_output(hostile, tmp_path, kind)
        before = _state(tmp_path, out)
        started = time.monotonic()
        code = main([part.format(out=out, **writer_inputs) for part in argv])
        seconds = time.monotonic() - started
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2, err
        assert lines[-1].startswith("topicbench: error: ") and refusal in lines[-1], lines[-1]
        assert "Traceback" not in err
        assert _state(tmp_path, out) == before  # nothing replaced, nothing created
        assert seconds < 30, f"took {seconds:.0f} s to fail"

    @pytest.mark.timeout(120)
    @pytest.mark.parametrize("writer", FILE_WRITERS)
    def test_a_link_to_a_file_of_yours_is_written_through_and_stays_a_link(self, writer, writer_inputs, tmp_path):
        (tmp_path / "real.json").write_text("previous")
        link = tmp_path / "latest.json"
        link.symlink_to("real.json")
        argv, _ = OUTPUT_WRITERS[writer]
        assert main([part.format(out=link, **writer_inputs) for part in argv]) == 0
        assert link.is_symlink() and os.readlink(link) == "real.json"
        assert json.loads((tmp_path / "real.json").read_text())  # the target holds the result

    @pytest.mark.timeout(120)
    @pytest.mark.parametrize("writer", [*FILE_WRITERS, "elda --parquet"])
    def test_missing_parent_folders_are_created(self, writer, writer_inputs, tmp_path):
        out = tmp_path / "new" / "deeper" / ("result.json" if writer in FILE_WRITERS else "parquet")
        argv, _ = OUTPUT_WRITERS[writer]
        assert main([part.format(out=out, **writer_inputs) for part in argv]) == 0
        assert out.is_file() if writer in FILE_WRITERS else (out / "links.parquet").is_file()

    @pytest.mark.timeout(120)
    def test_a_json_path_that_becomes_a_pipe_during_the_fit_is_not_replaced(self, writer_inputs, tmp_path, capsys,
                                                                             monkeypatch):
        """Checked again when written: the path may have changed during a long run."""
        import stat

        from topicbench.flows.cli import elda as cli_elda

        target = tmp_path / "result.json"
        summary = cli_elda.format_summary

        def make_a_pipe_then_summarise(*args):
            os.mkfifo(target)
            return summary(*args)

        monkeypatch.setattr(cli_elda, "format_summary", make_a_pipe_then_summarise)
        code = main(["elda", "--corpus", writer_inputs["corpus"], "--preprocessed", "--json", str(target)])
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert code == 2 and "is a pipe, not a regular file" in last and "the result is kept at" in last
        assert stat.S_ISFIFO(os.lstat(target).st_mode)
        assert json.loads(Path(last.split("the result is kept at ")[1]).read_text())["num_links"] > 0

    def test_the_writers_check_again_before_the_rename(self, tmp_path):
        import stat

        from topicbench.core.io import OutputPathError, replaced_atomically

        target = tmp_path / "out.json"
        with pytest.raises(OutputPathError, match="is a pipe, not a regular file"):
            with replaced_atomically(target) as temporary:
                temporary.write_text("{}")
                os.mkfifo(target)  # meanwhile, someone put a pipe there
        assert stat.S_ISFIFO(os.lstat(target).st_mode)
        assert [path.name for path in tmp_path.iterdir()] == ["out.json"]  # no temporary file left

    def test_a_folder_writer_refuses_a_socket_and_creates_missing_folders(self, tmp_path):
        import stat

        from topicbench.core.io import OutputPathError, make_output_folder

        _unix_socket(tmp_path / "socket")
        with pytest.raises(OutputPathError, match=r"is not a folder \(it is a socket\)"):
            make_output_folder(tmp_path / "socket", "--out")
        assert stat.S_ISSOCK(os.lstat(tmp_path / "socket").st_mode)
        assert make_output_folder(tmp_path / "a" / "b").is_dir()
