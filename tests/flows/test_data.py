"""Datasets by name: ``topicbench data list / fetch`` against a real HTTP server on 127.0.0.1, the
cache, ``source: NAME`` in configs and ``topicbench paper`` without ../shared/data.

The registry is the real one (``core/datasets.py``) with its base URL replaced by ``--url``, plus
small test entries whose checksums are computed here from the files served.
"""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import json
import re
import socket
import subprocess
import threading
from functools import partial
from pathlib import Path

import pytest

from topicbench.core import datasets as registry
from topicbench.core.datasets import DATASETS, Dataset, DatasetError, RemoteFile
from topicbench.core.io import load_corpus
from topicbench.core.validation import InputError
from topicbench.flows import paper
from topicbench.flows.cli.main import main
from topicbench.flows.config.model import BenchmarkConfig, CorpusSpec
from topicbench.flows.data import DOWNLOADS_FOLDER, fetch_dataset

from conftest import require_shared_data
from test_run_claims import topicbench, topicbench_env

# a tiny corpus in the E-LDA release's layout: the vocabulary on one line, sorted token ids, texts
TINY_WORDS = "tax cut vote\n"
TINY_INDEX = "0 0 1\n2\n0 2\n"
TINY_DOCS = "cut the tax now tax\nvote\nvote for tax cut\n"  # document 3's in-vocabulary words differ
TINY_CORPUS = "cut tax tax\ttrain\nvote\ttrain\ntax vote\ttrain\n"


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the server's folder; files named in ``server.short`` announce 100 bytes more than they send."""

    def log_message(self, *args):
        self.server.requests.append(self.path)

    def send_header(self, keyword, value):
        if keyword == "Content-Length" and self.path.rsplit("/", 1)[-1] in self.server.short:
            value = str(int(value) + 100)
        super().send_header(keyword, value)


@pytest.fixture
def server(tmp_path):
    """A real HTTP server on 127.0.0.1 and a free port, serving ``tmp_path / 'served'``."""
    root = tmp_path / "served"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, directory=str(root)))
    httpd.requests, httpd.short, httpd.root = [], set(), root
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()
    thread.join()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("TOPICBENCH_DATA", str(folder))
    return folder


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _serve(root: Path, path: str, text: str) -> RemoteFile:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return RemoteFile(path, _sha256(text.encode()), len(text.encode()))


def _tiny_release(server, monkeypatch, name="tiny", docs=TINY_DOCS) -> Dataset:
    files = tuple(_serve(server.root, f"preprocessed_data/TINY/TINY_{kind}.txt", text)
                  for kind, text in (("D2Windexform", TINY_INDEX), ("words", TINY_WORDS), ("docs", docs)))
    dataset = Dataset(name, "a tiny test corpus", 3, "elda_release", files, "https://unreachable.invalid", "tests")
    monkeypatch.setitem(DATASETS, name, dataset)
    return dataset


def _files_under(folder: Path) -> list:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once it is closed


def test_fetch_converts_the_release_and_a_second_fetch_downloads_nothing(server, cache, monkeypatch):
    _tiny_release(server, monkeypatch)
    folder, fetched = fetch_dataset("tiny", base_url=server.url)
    assert fetched and folder == cache / "tiny"
    assert (folder / "corpus.tsv").read_text() == TINY_CORPUS
    assert (folder / "vocabulary.txt").read_text() == "tax\ncut\nvote\n"
    assert sorted(p.name for p in cache.iterdir()) == ["tiny"]  # no downloads or staging folder left
    metadata = json.loads((folder / "metadata.json").read_text())
    assert metadata["documents"] == 3 and metadata["tokens"] == 6 and metadata["documents_in_original_word_order"] == 2
    assert metadata["files"]["TINY_docs.txt"]["url"] == f"{server.url}/preprocessed_data/TINY/TINY_docs.txt"
    served = len(server.requests)
    assert served == 3
    assert fetch_dataset("tiny", base_url=server.url) == (folder, False)
    assert len(server.requests) == served
    corpus = load_corpus(folder, CorpusSpec("tiny", "tiny").preprocess_config())
    assert corpus.n_documents == 3 and corpus.n_tokens == 6


def test_the_octis_layout_is_kept_with_its_labels(server, cache, monkeypatch):
    corpus_text = "tax cut\ttrain\tpolitics\nball game\ttest\tsport\n"
    files = (_serve(server.root, "ds/corpus.tsv", corpus_text), _serve(server.root, "ds/vocabulary.txt", "tax\ncut\nball\ngame\n"),
             _serve(server.root, "ds/metadata.json", '{"total_documents": 2}'))
    monkeypatch.setitem(DATASETS, "tinyoctis", Dataset("tinyoctis", "t", 2, "octis", files, "https://x.invalid", "tests"))
    folder, _ = fetch_dataset("TinyOctis", base_url=server.url)  # names are case-insensitive
    assert (folder / "corpus.tsv").read_text() == corpus_text
    metadata = json.loads((folder / "metadata.json").read_text())
    assert metadata["total_documents"] == 2 and metadata["documents"] == 2
    assert load_corpus(folder, CorpusSpec("t", "tinyoctis").preprocess_config()).labels is not None


def test_a_corrupted_file_is_refused_naming_both_checksums_and_nothing_stays(server, cache, monkeypatch):
    dataset = _tiny_release(server, monkeypatch)
    expected = dataset.files[2].sha256
    (server.root / dataset.files[2].path).write_text(TINY_DOCS.replace("vote", "veto"))
    actual = _sha256(TINY_DOCS.replace("vote", "veto").encode())
    with pytest.raises(DatasetError, match=f"checksum mismatch for TINY_docs.txt .*expected sha256 {expected}, got {actual}") as error:
        fetch_dataset("tiny", base_url=server.url)
    assert str(cache / DOWNLOADS_FOLDER / "tiny" / "TINY_docs.txt") in str(error.value)
    assert "\n" not in str(error.value)
    # the two good files stay verified for the next try; the bad one and the dataset folder do not exist
    assert [p.name for p in _files_under(cache)] == ["TINY_D2Windexform.txt", "TINY_words.txt"]
    assert not (cache / "tiny").exists()


def test_a_corrupted_first_file_leaves_the_cache_empty(server, cache, monkeypatch):
    dataset = _tiny_release(server, monkeypatch)
    (server.root / dataset.files[0].path).write_text("0 1\n")
    with pytest.raises(DatasetError, match="checksum mismatch for TINY_D2Windexform.txt"):
        fetch_dataset("tiny", base_url=server.url)
    assert _files_under(cache) == [] and list(cache.iterdir()) == []


def test_a_short_response_is_a_partial_download(server, cache, monkeypatch):
    _tiny_release(server, monkeypatch)
    server.short.add("TINY_words.txt")
    with pytest.raises(DatasetError, match=r"partial download of TINY_words.txt .*the body ended early after 13 of 113 bytes; .*put it at"):
        fetch_dataset("tiny", base_url=server.url)
    assert not any(p.name == "TINY_words.txt" or p.suffix == ".part" for p in _files_under(cache))


def test_an_unreachable_server_is_a_clear_error_and_a_file_put_by_hand_is_used(server, cache, monkeypatch):
    _tiny_release(server, monkeypatch)
    offline = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(DatasetError, match=f"cannot download TINY_D2Windexform.txt: {offline}/.* is unreachable") as error:
        fetch_dataset("tiny", base_url=offline)
    # the message's own instructions: put each file where it says, then fetch again (no network)
    for file in DATASETS["tiny"].files:
        place = cache / DOWNLOADS_FOLDER / "tiny" / file.name
        if file.name == "TINY_D2Windexform.txt":
            assert f"put it at {place}" in str(error.value)
        place.parent.mkdir(parents=True, exist_ok=True)
        place.write_bytes((server.root / file.path).read_bytes())
    folder, fetched = fetch_dataset("tiny", base_url=offline)
    assert fetched and (folder / "corpus.tsv").read_text() == TINY_CORPUS


def test_the_cli_fetches_into_dest_and_reports_errors_on_one_line(server, cache, monkeypatch, tmp_path, capsys):
    _tiny_release(server, monkeypatch)
    assert main(["data", "fetch", "tiny", "--url", f"http://127.0.0.1:{_closed_port()}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("topicbench: error: cannot download TINY_D2Windexform.txt")
    assert main(["data", "fetch", "tiny", "--url", server.url, "--dest", str(tmp_path / "mine")]) == 0
    assert (tmp_path / "mine" / "tiny" / "corpus.tsv").read_text() == TINY_CORPUS
    assert main(["data", "fetch", "tiny", "--url", "127.0.0.1:8000"]) == 2
    assert "--url must be an http://, https:// or file:// base URL, got '127.0.0.1:8000'" in capsys.readouterr().err
    assert main(["data", "fetch", "nyt"]) == 2
    assert "Unknown dataset 'nyt'. Available: congress, reuters, 20ng_politics, hoyle2021, proxann, BBC_News, DBLP, M10" in capsys.readouterr().err


def test_a_local_copy_of_the_publishers_repository_is_a_mirror_with_the_same_checksums(server, cache, monkeypatch,
                                                                                       tmp_path, capsys):
    """Offline, a snapshot of the publisher's repository on disk is fetched from by file:// URL; a
    file that differs from the published one is refused as a download would be."""
    _tiny_release(server, monkeypatch)
    local = server.root.as_uri()
    assert main(["data", "fetch", "tiny", "--url", local, "--dest", str(tmp_path / "offline")]) == 0
    assert (tmp_path / "offline" / "tiny" / "corpus.tsv").read_text() == TINY_CORPUS
    assert server.requests == []  # read from disk, not served
    (server.root / "preprocessed_data/TINY/TINY_words.txt").write_text("tax cut votes\n", encoding="utf-8")
    assert main(["data", "fetch", "tiny", "--url", local]) == 2
    assert "checksum mismatch for TINY_words.txt" in capsys.readouterr().err
    assert not (cache / "tiny").exists()


def test_data_list_names_every_dataset_and_whether_it_is_cached(server, cache, monkeypatch, capsys):
    _tiny_release(server, monkeypatch)
    fetch_dataset("tiny", base_url=server.url)
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"data cache: {cache} (set $TOPICBENCH_DATA to change it)"
    rows = {line.split()[0]: line for line in out.splitlines()[2:]}
    assert set(rows) == {"congress", "reuters", "20ng_politics", "BBC_News", "DBLP", "M10", "hoyle2021", "proxann", "tiny"}
    assert re.search(r"congress\s+US congressional .*\s6\.0 MB\s+3,852\s+no$", rows["congress"])
    assert rows["tiny"].endswith(f"yes ({cache / 'tiny'})")


def test_the_real_registry_pins_every_file_at_a_commit():
    for dataset in DATASETS.values():
        assert re.fullmatch(r"https://raw\.githubusercontent\.com/[\w-]+/[\w-]+/[0-9a-f]{40}", dataset.base_url)
        for file in dataset.files:
            assert re.fullmatch(r"[0-9a-f]{64}", file.sha256) and file.size > 0, file


def _config(corpus_source: str) -> dict:
    return {"corpora": [{"name": "c", "source": corpus_source}], "models": [{"model": "elda"}], "metrics": ["umass"]}


def test_source_by_name_is_a_clear_error_before_the_fetch_and_resolves_after(server, cache, monkeypatch):
    _tiny_release(server, monkeypatch)
    with pytest.raises(InputError, match=r"corpora\[0\] \(c\): dataset 'tiny' is not in the data cache .*run `topicbench data fetch tiny`"):
        BenchmarkConfig.from_dict(_config("tiny"))
    fetch_dataset("tiny", base_url=server.url)
    (spec,) = BenchmarkConfig.from_dict(_config("tiny")).corpora
    assert spec.resolved_source() == str(cache / "tiny")
    assert spec.preprocess_config().preprocessed  # read as its publisher preprocessed it


def test_an_existing_path_wins_over_a_dataset_name(tmp_path, monkeypatch, cache):
    (tmp_path / "congress").mkdir()
    (tmp_path / "congress" / "corpus.tsv").write_text("tax cut\ttrain\n")
    monkeypatch.chdir(tmp_path)
    (spec,) = BenchmarkConfig.from_dict(_config("congress")).corpora
    assert spec.resolved_source() == "congress" and not spec.preprocess_config().preprocessed
    with pytest.raises(InputError, match="corpus source not found: nowhere .*dataset name fetched by `topicbench data fetch NAME`"):
        BenchmarkConfig.from_dict(_config("nowhere"))


def test_paper_without_shared_data_reads_the_cache(cache, monkeypatch, tmp_path, capsys):
    assert paper.default_data_folder() == cache
    code = main(["paper", "--corpora", "congress", "--out", str(tmp_path / "out"), "--tracking-uri", f"sqlite:///{tmp_path}/m.db"])
    assert code == 2
    assert f"paper corpora missing from {cache}: congress" in capsys.readouterr().err
    (cache / "congress").mkdir(parents=True)
    config = paper.set2_config(paper.default_data_folder(), corpora=("congress",), baselines=(), tracking_uri="sqlite:///x.db")
    assert config.corpora[0].source == str(cache / "congress")


# -- against the shared corpora: the release's layout rebuilt from ../shared/data ----------------------


def _release_from_shared(shared: Path, root: Path, prefix: str, with_docs: bool) -> dict:
    """``preprocessed_data/PREFIX/`` files written from a shared corpus folder: the vocabulary on one
    line, sorted token ids, and (``with_docs``) the texts; returns {kind: text}."""
    vocabulary = (shared / "vocabulary.txt").read_text().split("\n")[:-1]
    ids = {word: i for i, word in enumerate(vocabulary)}
    texts = [line.split("\t")[0] for line in (shared / "corpus.tsv").read_text().split("\n")[:-1]]
    files = {"words": " ".join(vocabulary) + "\n",
             "D2Windexform": "".join(" ".join(map(str, sorted(ids[t] for t in text.split()))) + "\n" for text in texts)}
    if with_docs:
        files["docs"] = "".join(text + "\n" for text in texts)
    for kind, text in files.items():
        _serve(root, f"preprocessed_data/{prefix}/{prefix}_{kind}.txt", text)
    return files


@pytest.mark.parametrize("name, prefix", [("congress", "CONGRESS"), ("20ng_politics", "20NEWSGROUPSPOL"), ("reuters", "REUTERS")])
def test_the_pinned_vocabulary_and_index_files_are_the_shared_corpora(name, prefix, tmp_path):
    """The release's words and D2Windexform files rebuilt from ../shared/data have the registry's
    pinned checksums: the cache and ../shared/data hold the same corpus."""
    shared = require_shared_data(name) / name
    files = _release_from_shared(shared, tmp_path, prefix, with_docs=False)
    pinned = {file.name: file.sha256 for file in DATASETS[name].files}
    for kind, text in files.items():
        assert _sha256(text.encode()) == pinned[f"{prefix}_{kind}.txt"], kind


def test_reuters_fetched_with_the_real_entry_equals_the_shared_corpus(server, cache):
    shared = require_shared_data("reuters") / "reuters"
    _release_from_shared(shared, server.root, "REUTERS", with_docs=False)
    folder, _ = fetch_dataset("reuters", base_url=server.url)  # the real checksums, verified
    for file in ("corpus.tsv", "vocabulary.txt"):
        assert (folder / file).read_bytes() == (shared / file).read_bytes(), file


def _congress_from_shared(server, monkeypatch) -> Path:
    """congress served in the release's layout; its docs file (the texts, which ../shared/data holds
    without their out-of-vocabulary words) gets its checksum from the file served."""
    shared = require_shared_data("congress") / "congress"
    docs = _release_from_shared(shared, server.root, "CONGRESS", with_docs=True)["docs"]
    real = DATASETS["congress"]
    files = tuple(RemoteFile(f.path, _sha256(docs.encode()), len(docs.encode())) if f.name.endswith("_docs.txt") else f
                  for f in real.files)
    monkeypatch.setitem(DATASETS, "congress", dataclasses.replace(real, files=files))
    return shared


@pytest.mark.slow
def test_fetch_congress_then_run_a_benchmark_by_name_without_shared_data(server, cache, monkeypatch, tmp_path, capsys):
    """The issue's end-to-end: `topicbench data fetch congress --url <local server>`, then
    `topicbench run` of a config with `source: congress` in a folder with no ../shared/data."""
    shared = _congress_from_shared(server, monkeypatch)
    assert main(["data", "fetch", "congress", "--url", server.url]) == 0
    assert (cache / "congress" / "corpus.tsv").read_bytes() == (shared / "corpus.tsv").read_bytes()
    work = tmp_path / "work"
    work.mkdir()
    (work / "bench.yaml").write_text(
        "experiment: congress-by-name\ncorpora:\n  - {name: congress, source: congress}\n"
        "models:\n  - {model: elda, settings: {generator: cooccurrence}}\nmetrics: [umass]\ntop_n: [5]\n")
    result = subprocess.run(topicbench("run", "bench.yaml"), cwd=work, env={**topicbench_env(tmp_path / "prefect"),
                            "TOPICBENCH_DATA": str(cache)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "benchmark 'congress-by-name' completed in" in result.stdout
    report = (work / "results" / "congress-by-name" / "report.md").read_text()
    assert "congress" in report


# -- every wait has a limit (issue 29) --------------------------------------------------------------


@pytest.fixture
def trickling_server():
    """A server that answers with 1000 announced bytes and then sends one byte every 0.2 s."""
    import time

    class Trickle(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                for _ in range(1000):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:  # the client gave up
                pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def silent_server():
    """A server that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()


@pytest.mark.timeout(60)
def test_a_trickling_mirror_stops_at_the_deadline_with_progress(trickling_server, server, cache, monkeypatch, capsys):
    import time

    from topicbench.flows import data

    _tiny_release(server, monkeypatch)
    monkeypatch.setattr(data, "PROGRESS_SECONDS", 0.5)
    started = time.monotonic()
    code = main(["data", "fetch", "tiny", "--url", trickling_server, "--deadline", "2", "--timeout", "5"])
    seconds = time.monotonic() - started
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and seconds < 10
    assert "stopped at the deadline of 2 s (--deadline) after" in err[-1] and "of 1000 bytes" in err[-1]
    assert any("TINY_D2Windexform.txt: 0.0 kB of 1.0 kB" in line and "kB/s" in line for line in err[:-1]), err
    assert not any(p.suffix == ".part" for p in _files_under(cache))


@pytest.mark.timeout(60)
def test_a_mirror_that_never_answers_ends_at_the_timeout_it_names(silent_server, server, cache, monkeypatch, capsys):
    import time

    _tiny_release(server, monkeypatch)
    started = time.monotonic()
    code = main(["data", "fetch", "tiny", "--url", silent_server, "--timeout", "1.5"])
    seconds = time.monotonic() - started
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and 1.4 < seconds < 8
    assert "is unreachable (no answer within 1.5 s (--timeout))" in err[-1]
    assert _files_under(cache) == []


def test_the_data_folder_must_be_a_writable_folder(tmp_path, monkeypatch, server):
    _tiny_release(server, monkeypatch)
    (tmp_path / "a_file").write_text("")
    with pytest.raises(DatasetError, match="--dest: .*a_file is not a folder"):
        fetch_dataset("tiny", dest=tmp_path / "a_file", base_url=server.url)
    monkeypatch.setenv("TOPICBENCH_DATA", str(tmp_path / "a_file" / "below"))
    with pytest.raises(DatasetError, match=r"the data cache \(\$TOPICBENCH_DATA or its default\): cannot create or write"):
        fetch_dataset("tiny", base_url=server.url)
    assert server.requests == []  # refused before any download
