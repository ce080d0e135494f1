"""``topicbench data fetch proxann``: ProxAnn's release pinned at a commit with every file's SHA-256,
fetched from a real HTTP server on 127.0.0.1 (``--url``), its files kept under their paths in the
repository (several share a name); no network: one line and nothing left behind.

The registry's entry is the real one; where the real files are needed (the mirror of
``ahoho/proxann``, or ``$PROXANN_DATA``), the test skips saying why when they are absent; the
others serve a small release of the same layout (``tests/proxann_files.py``) under an entry whose
checksums are computed here from the files served.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil

import pytest
from proxann_files import TOPICS, write_release
from proxann_release import release_folder
from test_data import _closed_port, _files_under, cache, server  # noqa: F401 (fixtures)

from topicbench.core.datasets import DATASETS, DatasetError, RemoteFile, cached_dataset_folder, is_cached
from topicbench.core.proxann_data import read_release
from topicbench.core.proxann_release import HUMAN_RESPONSES, PROXANN_COMMIT, STUDY_TOPICS
from topicbench.flows.cli.main import main
from topicbench.flows.data import DOWNLOADS_FOLDER, fetch_dataset, file_url


def _serve_small_release(server, monkeypatch):
    """The small release on the server, and the registry's proxann entry pinned to its files."""
    write_release(server.root)
    files = tuple(RemoteFile(path.relative_to(server.root).as_posix(), hashlib.sha256(path.read_bytes()).hexdigest(),
                             path.stat().st_size) for path in sorted(server.root.rglob("*")) if path.is_file())
    small = dataclasses.replace(DATASETS["proxann"], files=files, documents=len(TOPICS))
    monkeypatch.setitem(DATASETS, "proxann", small)
    return small


def test_the_entry_pins_the_release_at_its_commit():
    dataset = DATASETS["proxann"]
    assert not dataset.is_corpus and dataset.documents == STUDY_TOPICS == 24
    assert dataset.content == HUMAN_RESPONSES
    first = dataset.files[0]
    assert file_url(dataset, first) == f"https://raw.githubusercontent.com/ahoho/proxann/{PROXANN_COMMIT}/{first.path}"
    paths = [dataset.local_path(file) for file in dataset.files]
    assert len(set(paths)) == len(paths) == 74 and len({file.name for file in dataset.files}) < 74


def test_offline_the_fetch_is_one_line_naming_the_file_and_leaves_nothing(cache, capsys):
    offline = f"http://127.0.0.1:{_closed_port()}"
    assert main(["data", "fetch", "proxann", "--url", offline]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    first = DATASETS["proxann"].files[0]
    assert len(err) == 1 and err[0].startswith(f"topicbench: error: cannot download {first.name}: {offline}/")
    assert f"put it at {cache / DOWNLOADS_FOLDER / 'proxann' / first.path}" in err[0]
    assert err[0].endswith("(or give a checkout of the repository by path: `topicbench judge calibrate --protocol "
                           "proxann --release DIR`)")
    assert _files_under(cache) == [] and not (cache / DOWNLOADS_FOLDER).exists()
    with pytest.raises(DatasetError, match="run `topicbench data fetch proxann`"):
        cached_dataset_folder("proxann")


def test_fetch_keeps_every_file_under_its_path_and_a_second_fetch_downloads_nothing(server, cache, monkeypatch,
                                                                                    capsys):
    small = _serve_small_release(server, monkeypatch)
    assert main(["data", "fetch", "proxann", "--url", server.url]) == 0
    folder = cache / "proxann"
    assert is_cached("proxann") and cached_dataset_folder("proxann") == folder
    for file in small.files:  # e.g. seven llm_results_q2.json, one per LLM
        assert (folder / file.path).read_bytes() == (server.root / file.path).read_bytes(), file.path
    metadata = json.loads((folder / "metadata.json").read_text())
    assert metadata["topics"] == 3 and metadata["source"].startswith(f"ahoho/proxann at {PROXANN_COMMIT}")
    assert set(metadata["files"]) == {file.path for file in small.files}
    assert len(read_release(folder).people) == 3 * 3 * 7
    served = len(server.requests)
    assert fetch_dataset("proxann", base_url=server.url) == (folder, False) and len(server.requests) == served
    assert main(["data", "list"]) == 0
    assert any(line.startswith("proxann") and line.endswith(f"yes ({folder})") and " 3 topics" in line
               for line in capsys.readouterr().out.splitlines())


def test_a_corrupted_answer_file_is_refused_and_the_others_are_kept_for_the_next_fetch(server, cache, monkeypatch):
    small = _serve_small_release(server, monkeypatch)
    answers = next(file for file in small.files if file.name == "llm_results_q3.json")
    (server.root / answers.path).write_text("[]")
    with pytest.raises(DatasetError, match=f"checksum mismatch for llm_results_q3.json from {server.url}/"):
        fetch_dataset("proxann", base_url=server.url)
    assert not (cache / "proxann").exists()
    kept = cache / DOWNLOADS_FOLDER / "proxann"
    assert (kept / small.files[0].path).is_file() and not (kept / answers.path).exists()


def test_the_real_release_fetched_from_a_local_server_is_read_whole(server, cache, tmp_path_factory):
    real = release_folder(tmp_path_factory)
    shutil.copytree(real / "data", server.root / "data")
    folder, fetched = fetch_dataset("proxann", base_url=server.url)  # the pinned checksums, verified
    assert fetched and len(server.requests) == 74
    release = read_release(folder)
    assert len(release.study.topics) == 24 and release.people["response"].nunique() == 101
