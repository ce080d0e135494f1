"""The pinned ProxAnn files: checksums and sizes against the authors' repository, and the oracle's
fixture (tests/data/proxann) against what its script derives from them."""

from __future__ import annotations

import hashlib
import json

from proxann_release import FIXTURE_FOLDER, proxann_fixture, release_folder

from topicbench.core.proxann_data import read_release
from topicbench.core.proxann_release import LLM_ANSWER_FILES, PROXANN_COMMIT, STUDY_TOPICS, release_files

#: The fixture stays small enough to keep in the repository (the release is 6 MB).
FIXTURE_BYTES = 300_000


def test_every_pinned_file_has_its_checksum_and_size(tmp_path_factory):
    folder = release_folder(tmp_path_factory)
    files = release_files()
    assert len(files) == 4 + 7 * 5 * 2  # study inputs, answers, coherences; 7 LLMs x 5 seeds x (fit, rank)
    for path, sha256, size in files:
        data = (folder / path).read_bytes()
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (sha256, size), path
    assert len({llm for llm, *_ in LLM_ANSWER_FILES}) == 7


def test_release_reads_every_llm_and_the_study(tmp_path_factory):
    release = read_release(release_folder(tmp_path_factory))
    assert len(release.study.topics) == STUDY_TOPICS == release.people["topic"].nunique()
    for llm, answers in release.llm_answers.items():
        assert answers["seed"].nunique() == 5, llm
        assert set(answers["topic"]) == set(release.study.topics["topic"]), llm


def test_the_fixture_records_the_pinned_files_it_was_derived_from():
    sources = json.loads((FIXTURE_FOLDER / "SOURCES.json").read_text(encoding="utf-8"))
    assert sources["commit"] == PROXANN_COMMIT
    assert sources["files"] == {path: {"sha256": sha256, "size": size} for path, sha256, size in release_files()}
    assert sum(path.stat().st_size for path in FIXTURE_FOLDER.iterdir()) < FIXTURE_BYTES
    assert "MIT License" in (FIXTURE_FOLDER / "LICENSE").read_text(encoding="utf-8")


def test_the_fixture_is_what_the_script_derives_from_the_release(tmp_path_factory):
    folder = release_folder(tmp_path_factory)
    fixture = proxann_fixture()
    derived = fixture.derive_tables(folder)
    assert list(derived) == list(fixture.TABLES)
    for name, table in derived.items():
        assert fixture.csv_text(table) == fixture.fixture_text(name), name
    assert fixture.source_checksums(folder) == json.loads((FIXTURE_FOLDER / "SOURCES.json").read_text())
    # What the oracle reads of it is the release as read_release gives it.
    tables = fixture.read_fixture()
    release = read_release(folder)
    kept = tables["people"][~tables["people"]["removed"]]
    assert len(kept) == len(release.people) == 101 * 7
    assert set(tables["llm_answers"]["llm"]) == set(release.llm_answers)


def test_the_fixture_reads_back_exactly():
    fixture = proxann_fixture()
    tables = fixture.read_fixture()
    for name in ("documents", "llm_answers", "coherences"):  # floats in their shortest round-trip form
        assert fixture.csv_text(tables[name]) == fixture.fixture_text(name), name
    people = tables["people"].assign(removed=tables["people"]["removed"].astype(int))
    assert fixture.csv_text(people) == fixture.fixture_text("people")
    assert tables["documents"].groupby("topic").size().eq(7).all() and tables["documents"]["topic"].nunique() == 24
