"""Bundles that stay small (issue 49): no rendered report in a parent's archive, each vocabulary
kept once and put back byte for byte by an import, per-topic tables holding only what a report
reads, as float32."""

from __future__ import annotations

import json
import tarfile

import pandas as pd
import pyarrow.parquet as pq
import pytest
from mlflow.tracking import MlflowClient

from topicbench.tasks.results.bundle import BundleError, export_bundle, import_bundle
from topicbench.tasks.results.bundle_tables import kept_words, read_tables, topic_score_kept
from topicbench.tasks.results.bundle_vocabularies import restore_vocabularies, split_vocabulary, vocabularies_table
from topicbench.tasks.store.claims import FIT_ROLE, PARENT_ROLE, ROLE_TAG, RUN_KEY
from topicbench.tasks.store.tracking import Tracker

VOCABULARY = [f"w{i}" for i in range(40)] + ["caf\u00e9"]
WORDS = "w1 w2 w1 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12"  # w1 twice: the 10th distinct word is w10


def _output_json(seed: int) -> str:
    # as TopicModelOutput.save writes it
    return json.dumps({"model": "lda", "vocabulary": VOCABULARY, "topics": [WORDS.split()], "seed": seed,
                       "fit_seconds": 0.5, "extra": {}}, indent=1)


def _store(folder):
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    tracker = Tracker(uri, "small")
    client = tracker.client
    parent = client.create_run(tracker.experiment_id, tags={ROLE_TAG: PARENT_ROLE}, run_name="paper")
    rendered = folder / "parent" / "report"
    rendered.mkdir(parents=True)
    (rendered / "report.html").write_text("<html>" + "x" * 10_000)
    (rendered / "coherence.png").write_bytes(b"\x89PNG" + b"\0" * 1000)
    (folder / "parent" / "config.json").write_text(json.dumps({"experiment": "small"}))
    client.log_artifacts(parent.info.run_id, str(folder / "parent"))
    for seed in (0, 1):
        artifacts = folder / f"fit{seed}"
        (artifacts / "output").mkdir(parents=True)
        (artifacts / "output" / "output.json").write_text(_output_json(seed))
        (artifacts / "topics.json").write_text(json.dumps([{"topic": 0, "label": None, "words": WORDS}]))
        (artifacts / "topic_scores.csv").write_text("topic,npmi@5,npmi@10,npmi@25,llm_rating\n0,0.1,0.123456789,0.3,2.5\n")
        fit = client.create_run(tracker.experiment_id, run_name=f"lda seed {seed}", tags={
            ROLE_TAG: FIT_ROLE, RUN_KEY: f"key-{seed}", "mlflow.parentRunId": parent.info.run_id, "model": "lda",
            "corpus": "toy"})
        client.log_param(fit.info.run_id, "seed", str(seed))
        client.log_metric(fit.info.run_id, "npmi_top10", 0.125)
        client.log_artifacts(fit.info.run_id, str(artifacts))
        client.set_terminated(fit.info.run_id, "FINISHED")
    client.set_terminated(parent.info.run_id, "FINISHED")
    return uri


def _members(path) -> dict:
    with tarfile.open(path) as archive:
        return {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}


def test_a_bundle_keeps_no_rendered_report_one_vocabulary_and_only_what_a_report_reads(tmp_path):
    uri = _store(tmp_path / "a")
    manifest = export_bundle(uri, "small", tmp_path / "bundle")
    assert manifest["bundle_format"] == 3
    archives = {run_id: _members(tmp_path / "bundle" / "artifacts" / f"{run_id}.tar.gz") for run_id in manifest["archive_sha256"]}
    parent = next(members for members in archives.values() if "config.json" in members)
    assert not any(name.startswith("report/") for name in parent)  # report --bundle writes it again
    fits = [members for members in archives.values() if "output/output.json" in members]
    assert len(fits) == 2
    for members in fits:
        reference = json.loads(members["output/output.json"])["vocabulary"]
        assert set(reference) == {"bundle_vocabulary", "sha256"} and "w39" not in members["output/output.json"].decode()
    tables = read_tables(tmp_path / "bundle")
    assert [json.loads(words) for words in tables["vocabularies"].words] == [VOCABULARY]  # once, in order

    assert sorted(set(tables["topic_scores"].score)) == ["llm_rating", "npmi@10"]
    stored = pq.read_schema(tmp_path / "bundle" / "tables" / "topic_scores.parquet")
    assert str(stored.field("value").type) == "float"  # float32 on disk, float64 to every reader
    assert tables["topic_scores"].value.dtype == "float64"
    assert tables["topic_scores"].value.max() == pytest.approx(2.5) and tables["topic_scores"].value.min() == pytest.approx(0.123456789, rel=1e-7)
    words = tables["topics"][tables["topics"].run_id == tables["topics"].run_id.iloc[0]].sort_values("rank").word.tolist()
    assert words == WORDS.split()[:11]  # up to the 10th distinct word


def test_an_import_puts_each_vocabulary_back_byte_for_byte(tmp_path):
    uri = _store(tmp_path / "a")
    export_bundle(uri, "small", tmp_path / "bundle")
    target = f"sqlite:///{tmp_path / 'b' / 'mlflow.db'}"
    assert import_bundle(tmp_path / "bundle", target) == {"imported": 3, "already_there": 0}
    client = MlflowClient(target)
    experiment = client.get_experiment_by_name("small")
    for run in client.search_runs([experiment.experiment_id]):
        if run.data.tags.get(ROLE_TAG) == FIT_ROLE:
            path = client.download_artifacts(run.info.run_id, "output/output.json", str(tmp_path / run.info.run_id))
            seed = int(run.data.params["seed"])
            assert open(path, encoding="utf-8").read() == _output_json(seed)


def test_a_vocabulary_the_table_lacks_or_that_does_not_come_back_is_one_error(tmp_path):
    data = _output_json(0).encode()
    stripped, vocabulary, words = split_vocabulary(data)
    assert words == VOCABULARY and len(stripped) < len(data)
    folder = tmp_path / "run"
    (folder / "output").mkdir(parents=True)
    (folder / "output" / "output.json").write_bytes(stripped)
    with pytest.raises(BundleError, match="which the table vocabularies lacks"):
        restore_vocabularies({"run": folder}, vocabularies_table({}))
    with pytest.raises(BundleError, match="is not the file exported"):
        restore_vocabularies({"run": folder}, vocabularies_table({vocabulary: VOCABULARY[:-1]}))
    assert restore_vocabularies({"run": folder}, vocabularies_table({vocabulary: VOCABULARY})) == 1
    assert (folder / "output" / "output.json").read_bytes() == data
    # a file that would not come back byte for byte (written by hand) travels whole
    assert split_vocabulary(json.dumps({"vocabulary": ["a"]}).encode()) is None


def test_a_topic_keeps_its_words_to_the_tenth_distinct_one_and_its_scores_at_n_10():
    assert kept_words(WORDS.split()) == WORDS.split()[:11]
    assert kept_words(["a", "b"]) == ["a", "b"]
    assert [topic_score_kept(k) for k in ("npmi@10", "cv@5", "umass@25", "llm_rating", "llm_fit")] == \
        [True, False, False, True, True]


def test_a_bundle_of_format_2_still_reports_without_a_vocabularies_table():
    from pathlib import Path

    from topicbench.tasks.results.bundle_source import BundleSource

    folder = Path(__file__).resolve().parents[2] / "results" / "paper" / "bundle"
    if not (folder / "manifest.json").is_file():
        pytest.skip("no committed paper bundle in this checkout")
    manifest = json.loads((folder / "manifest.json").read_text())
    if manifest["bundle_format"] != 2:
        pytest.skip("the committed bundle has been exported again")
    source = BundleSource(folder)
    assert isinstance(source.runs(), pd.DataFrame) and "vocabularies" not in source.tables
