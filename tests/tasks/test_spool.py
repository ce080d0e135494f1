"""The spool of fits that could not be logged, and the record a fit logs (tracked or spooled)."""

from __future__ import annotations

import json
import math
import os
import socket
from pathlib import Path

import pytest

from topicbench.tasks.store.artifacts import ArtifactFolder
from topicbench.tasks.run.fit import OutputSummary, ScoredFit
from topicbench.tasks.store.fit_record import FitRecord
from topicbench.tasks.store.spool import (
    MAX_RECORD_BYTES,
    SPOOL_VARIABLE,
    Spool,
    SpooledFit,
    UnusableEntry,
    spool_root,
    store_name,
    this_version,
)


def scored_fit(artifacts: ArtifactFolder) -> ScoredFit:
    extra = {"converged": True, "training_loss_kind": "perplexity", "training_loss": [3.0, float("nan"), 2.0],
             "training_steps": [0, 1, 2], "setup_seconds": 0.5, "labels": "not a number"}
    return ScoredFit(OutputSummary(1.25, 4, None, extra), {"alpha_": [0.1, 0.2]}, {"umass@5": -2.5, "npmi@5": float("nan")},
                     {"c_v": "no reference"}, artifacts, {"host": "h", "pid": "7"}, 0.75,
                     params={"num_topics": None, "random_state": 0, "kappa": 2.0, "generator": "raw_umass"})


def artifact_folder(tmp_path: Path) -> ArtifactFolder:
    folder = tmp_path / "topicbench-run-x"
    (folder / "output").mkdir(parents=True)
    (folder / "topics.json").write_text("[]")
    (folder / "output" / "matrices.npz").write_bytes(b"\x00" * 100)
    return ArtifactFolder(socket.gethostname(), str(folder))


def test_a_fits_record_holds_what_its_run_logs(tmp_path):
    record = FitRecord.of(scored_fit(artifact_folder(tmp_path)), "elda@tiny seed 0")
    # what was asked, from the fitted model's get_params() (K and the seed are the run's own params)
    assert record.params == {"settings.kappa": "2.0", "settings.generator": "raw_umass", "resolved.alpha_": "[0.1, 0.2]"}
    assert record.metrics == {"fit_seconds": 1.25, "num_topics_used": 4.0, "converged": 1.0, "setup_seconds": 0.5,
                              "umass_top5": -2.5}  # finite numbers only, '@' as '_top'
    # a score that came out NaN is not logged, and says why like a skipped metric: in one tag and in its own
    nan = ("npmi@5 came out nan (not a number: undefined for this model's topics, e.g. a topic whose words never "
           "occur together in the reference)")
    assert record.tags == {"topicbench.fitted_on.host": "h", "topicbench.fitted_on.pid": "7",
                           "topicbench.scoring_seconds": "0.750", "topicbench.training_loss_kind": "perplexity",
                           "topicbench.skipped_metrics": json.dumps({"c_v": "no reference", "npmi@5": nan}),
                           "topicbench.skipped.c_v": "no reference", "topicbench.skipped.npmi_top5": nan,
                           "topicbench.metric_context": "reused"}  # this scoring found the corpus's counts made
    assert record.curve == [(0, 3.0), (2, 2.0)]
    assert FitRecord.from_json(record.to_json()) == record


def test_a_spooled_fit_is_kept_whole_and_removed_once_logged(tmp_path):
    artifacts = artifact_folder(tmp_path)
    record = FitRecord.of(scored_fit(artifacts), "elda@tiny seed 0")
    spool = Spool(tmp_path / "spool" / "store" / "tiny")
    assert spool.keys() == set()
    entry = spool.put("key1", record, artifacts)
    assert not Path(artifacts.path).exists()  # moved, not copied
    assert spool.keys() == {"key1"} and spool.entry("key1") == SpooledFit(record, spool.artifacts("key1"))
    assert sorted(str(p.relative_to(spool.artifacts("key1"))) for p in spool.artifacts("key1").rglob("*")) == [
        "output", "output/matrices.npz", "topics.json"]
    assert entry == spool.folder / "key1"
    spool.remove("key1")
    assert not (tmp_path / "spool" / "store").exists()  # empty folders go with the last entry


def test_artifacts_sent_as_files_from_another_host_are_spooled_too(tmp_path):
    sent = ArtifactFolder("another-host", None, {"topics.json": b"[1]", "output/output.json": b"{}"})
    spool = Spool(tmp_path / "spool")
    spool.put("key2", FitRecord({}, {}, {"fit_seconds": 1.0}), sent)
    assert (spool.artifacts("key2") / "output" / "output.json").read_bytes() == b"{}"


def test_a_spool_entry_that_cannot_be_written_leaves_the_artifacts_where_they_were(tmp_path):
    artifacts = artifact_folder(tmp_path)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the spool's folder would be")
    with pytest.raises(OSError):
        Spool(blocked / "tiny").put("key3", FitRecord({}, {}, {}), artifacts)
    assert (Path(artifacts.path) / "topics.json").is_file()


def test_the_spool_of_a_store_is_named_by_the_store_and_the_experiment(tmp_path, monkeypatch):
    monkeypatch.setenv(SPOOL_VARIABLE, str(tmp_path / "spools"))
    assert spool_root() == tmp_path / "spools"
    database = tmp_path / "results" / "mlflow.db"
    monkeypatch.chdir(tmp_path)
    # two spellings of one database share a spool; another store, or a server, has its own
    assert store_name("sqlite:///results/mlflow.db") == store_name(f"sqlite:///{database}")
    assert store_name("http://127.0.0.1:5000") != store_name("http://127.0.0.1:5001")
    assert "secret" not in store_name("postgresql://lab:secret@db.example.org/mlflow")
    assert Spool.of("http://127.0.0.1:5000", "my experiment").folder.name == "my_experiment"
    monkeypatch.delenv(SPOOL_VARIABLE)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert spool_root() == tmp_path / "state" / "topicbench" / "spool"


def test_nan_never_reaches_the_record():
    record = FitRecord.of(ScoredFit(OutputSummary(float("inf"), 2, float("nan"), {}), {}, {}, {},
                                    ArtifactFolder("h", None)))
    assert all(math.isfinite(value) for value in record.metrics.values()) and "fit_seconds" not in record.metrics


def _spooled(tmp_path) -> Spool:
    """A spool with one whole entry, ``key``, of the fit :func:`scored_fit` makes."""
    artifacts = artifact_folder(tmp_path)
    spool = Spool(tmp_path / "spool")
    spool.put("key", FitRecord.of(scored_fit(artifacts), "elda@tiny seed 0"), artifacts)
    return spool


def _edit_record(spool: Spool, change) -> None:
    path = spool.folder / "key" / "run.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


#: (what is wrong with the entry, how to make it so, the reason its error gives)
BAD_ENTRIES = [
    ("run.json cut short", lambda s: (s.folder / "key" / "run.json").write_text('{"spool_format": 1, "rec'),
     "run.json is not JSON (line 1, column 21"),
    ("run.json not UTF-8", lambda s: (s.folder / "key" / "run.json").write_bytes(b"{\xff}"), "run.json is not UTF-8"),
    ("run.json a folder", lambda s: ((s.folder / "key" / "run.json").unlink(), (s.folder / "key" / "run.json").mkdir()),
     "run.json is not a regular file"),
    ("run.json too large", lambda s: os.truncate(s.folder / "key" / "run.json", MAX_RECORD_BYTES + 1), "too large"),
    ("a bare record (no envelope)", lambda s: _edit_record(s, lambda d: (d.clear(), d.update(params={}, tags={}, metrics={}))),
     "not a spool entry of format 1"),
    ("another topicbench version", lambda s: _edit_record(s, lambda d: d.update(topicbench_version="0.0.1")),
     "made by topicbench '0.0.1', this is"),
    ("a metric that is not a number", lambda s: _edit_record(s, lambda d: d["record"]["metrics"].update(fit_seconds="1")),
     "metrics['fit_seconds'] is not a finite number"),
    ("a NaN metric", lambda s: _edit_record(s, lambda d: d["record"]["metrics"].update(fit_seconds=float("nan"))),
     "metrics['fit_seconds'] is not a finite number"),
    ("a param that is not a string", lambda s: _edit_record(s, lambda d: d["record"]["params"].update(k=3)),
     "params['k'] is not a string"),
    ("a field of another version", lambda s: _edit_record(s, lambda d: d["record"].update(inputs=[])),
     "unknown fields ['inputs']"),
    ("no metrics", lambda s: _edit_record(s, lambda d: d["record"].pop("metrics")), "no field 'metrics'"),
    ("a bad curve point", lambda s: _edit_record(s, lambda d: d["record"].update(curve=[[0, 1.0], ["x", 2.0]])),
     "curve[1] is not a [step, finite value] pair"),
    ("artifacts missing", lambda s: os.rename(s.artifacts("key"), s.folder / "elsewhere"), "its artifacts folder is missing"),
    # a pipe would block the logging forever
    ("an artifact that is a pipe", lambda s: os.mkfifo(s.artifacts("key") / "output" / "pipe"),
     "artifacts/output/pipe is not a regular file"),
    ("an artifact that is a dangling link", lambda s: (s.artifacts("key") / "gone.csv").symlink_to(s.folder / "nowhere"),
     "artifacts/gone.csv is not a regular file"),
]


@pytest.mark.parametrize("name, spoil, reason", BAD_ENTRIES, ids=[entry[0] for entry in BAD_ENTRIES])
def test_an_entry_that_cannot_be_logged_says_why_before_anything_is_logged(tmp_path, name, spoil, reason):
    spool = _spooled(tmp_path)
    spoil(spool)
    with pytest.raises(UnusableEntry) as raised:
        spool.entry("key")
    assert reason in str(raised.value) and "\n" not in str(raised.value)


def test_an_entry_records_the_version_that_made_its_fit(tmp_path):
    data = json.loads((_spooled(tmp_path).folder / "key" / "run.json").read_text())
    assert data["spool_format"] == 1 and data["topicbench_version"] == this_version() != "unknown"


def test_an_entry_set_aside_is_kept_with_why_and_never_over_an_earlier_one(tmp_path):
    spool = _spooled(tmp_path)
    first = spool.set_aside("key", "run.json is not JSON")
    assert first == spool.folder / "failed" / "key" and spool.keys() == set()
    assert (first / "why.txt").read_text() == "run.json is not JSON\n"
    assert (first / "run.json").is_file() and (first / "artifacts" / "topics.json").is_file()  # whole, for inspection
    artifacts = artifact_folder(tmp_path / "again")
    spool.put("key", FitRecord({}, {}, {}), artifacts)
    second = spool.set_aside("key", "its artifacts folder is missing")
    assert second != first and second.parent == first.parent and (first / "why.txt").is_file()
    spool.put("other", FitRecord({}, {}, {}), artifact_folder(tmp_path / "third"))
    spool.remove("other")  # the spool's folder holds failed/: it stays
    assert sorted(p.name for p in spool.folder.iterdir()) == ["failed"]
