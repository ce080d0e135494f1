"""Result bundles: an experiment's finished runs exported to files and imported into another store,
run keys kept (a later run fits nothing imported), importing twice adding nothing."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from topicbench.tasks.results.bundle import BundleError, export_bundle, import_bundle, read_manifest
from topicbench.tasks.store.claims import FIT_ROLE, PARENT_ROLE, ROLE_TAG, RUN_KEY
from topicbench.tasks.store.tracking import Tracker


def _store_with_runs(folder):
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    tracker = Tracker(uri, "paper")
    client = tracker.client
    parent = client.create_run(tracker.experiment_id, tags={ROLE_TAG: PARENT_ROLE}, run_name="paper")
    artifacts = folder / "fit-artifacts"
    (artifacts / "output").mkdir(parents=True)
    (artifacts / "topics.json").write_text(json.dumps([{"words": "tax vote"}]))
    (artifacts / "output" / "matrices.npz").write_bytes(b"\0" * 1000)
    for seed, status in ((0, "FINISHED"), (1, "FAILED")):
        fit = client.create_run(tracker.experiment_id, run_name=f"lda seed {seed}", tags={
            ROLE_TAG: FIT_ROLE, RUN_KEY: f"key-{seed}", "mlflow.parentRunId": parent.info.run_id, "model": "gensim_lda"})
        client.log_param(fit.info.run_id, "seed", str(seed))
        client.log_metric(fit.info.run_id, "npmi_10", 0.125 + seed)
        client.log_artifacts(fit.info.run_id, str(artifacts))
        client.set_terminated(fit.info.run_id, status)
    client.set_terminated(parent.info.run_id, "FINISHED")
    return uri


def _runs(uri):
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("paper")
    return client, client.search_runs([experiment.experiment_id])


def test_a_bundle_carries_the_finished_runs_into_another_store_once(tmp_path):
    source = _store_with_runs(tmp_path / "a")
    manifest = export_bundle(source, "paper", tmp_path / "bundle")
    assert (manifest["runs"], manifest["fits"], manifest["run_keys"]) == (2, 1, ["key-0"])  # the failed fit is not exported
    target = f"sqlite:///{tmp_path / 'b' / 'mlflow.db'}"
    assert import_bundle(tmp_path / "bundle", target) == {"imported": 2, "already_there": 0}
    client, runs = _runs(target)
    assert {run.info.status for run in runs} == {"FINISHED"}
    [fit] = [run for run in runs if run.data.tags[ROLE_TAG] == FIT_ROLE]
    [parent] = [run for run in runs if run.data.tags[ROLE_TAG] == PARENT_ROLE]
    assert fit.data.tags[RUN_KEY] == "key-0" and fit.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert fit.data.params == {"seed": "0"} and fit.data.metrics == {"npmi_10": 0.125}
    assert [a.path for a in client.list_artifacts(fit.info.run_id)] == ["topics.json"]
    assert client.list_artifacts(fit.info.run_id, "output") == []  # the matrices stay out unless asked for
    # artifacts beside the target store, nowhere else
    assert (tmp_path / "b" / "mlartifacts").is_dir() and not (tmp_path / "mlruns").exists()
    assert import_bundle(tmp_path / "bundle", target) == {"imported": 0, "already_there": 2}
    assert len(_runs(target)[1]) == 2


def test_the_matrices_travel_when_asked_for(tmp_path):
    source = _store_with_runs(tmp_path / "a")
    export_bundle(source, "paper", tmp_path / "bundle", with_matrices=True)
    target = f"sqlite:///{tmp_path / 'b' / 'mlflow.db'}"
    import_bundle(tmp_path / "bundle", target)
    client, runs = _runs(target)
    [fit] = [run for run in runs if run.data.tags[ROLE_TAG] == FIT_ROLE]
    assert [a.path for a in client.list_artifacts(fit.info.run_id, "output")] == ["output/matrices.npz"]


def test_a_folder_that_is_no_bundle_is_one_error_naming_it(tmp_path):
    with pytest.raises(BundleError, match="is not a readable result bundle"):
        read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"bundle_format": 99}))
    (tmp_path / "runs.jsonl").write_text("")
    with pytest.raises(BundleError, match="bundle format 99, this topicbench reads 1 and 2"):
        read_manifest(tmp_path)
    with pytest.raises(BundleError, match="has no experiment 'nope'"):
        export_bundle(f"sqlite:///{tmp_path / 'mlflow.db'}", "nope", tmp_path / "out")


def test_the_tables_have_their_columns_and_types_and_a_damaged_one_is_named(tmp_path):
    from topicbench.tasks.results.bundle_tables import TABLE_COLUMNS, TableError, read_tables

    export_bundle(_store_with_runs(tmp_path / "a"), "paper", tmp_path / "bundle")
    tables = read_tables(tmp_path / "bundle")
    assert set(tables) == set(TABLE_COLUMNS)
    for name, columns in TABLE_COLUMNS.items():
        assert list(tables[name].columns)[:len(columns)] == list(columns), name
        assert {c: str(t) for c, t in tables[name].dtypes.items() if c in columns} == columns, name
    [run] = tables["runs"].to_dict("records")
    assert (run["run_key"], run["model"], run["seed"], run["settings"]) == ("key-0", "gensim_lda", 0, "{}")
    assert pd.isna(run["num_topics"]) and pd.isna(run["num_topics_used"])  # none asked for, none recorded
    assert tables["scores"][["metric", "score", "value"]].values.tolist() == [["npmi_10", "npmi_10", 0.125]]
    assert tables["topics"][["topic", "rank", "word"]].values.tolist() == [[0, 0, "tax"], [0, 1, "vote"]]
    assert tables["topics"].weight.isna().all()  # no matrices to weigh the words with

    (tmp_path / "bundle" / "tables" / "scores.parquet").write_bytes(b"PAR1 not a table")
    with pytest.raises(TableError, match=r"scores.parquet: table 'scores' is damaged"):
        read_tables(tmp_path / "bundle")
    (tmp_path / "bundle" / "tables" / "scores.parquet").unlink()
    with pytest.raises(TableError, match=r"table 'scores' is missing; export the bundle again"):
        read_tables(tmp_path / "bundle")


def test_a_bundle_of_format_1_still_imports_but_has_no_tables(tmp_path):
    from topicbench.tasks.results.bundle_tables import TableError, read_tables

    export_bundle(_store_with_runs(tmp_path / "a"), "paper", tmp_path / "bundle")
    manifest = json.loads((tmp_path / "bundle" / "manifest.json").read_text())
    old = {key: value for key, value in manifest.items() if key not in ("tables", "report_columns")}
    (tmp_path / "bundle" / "manifest.json").write_text(json.dumps({**old, "bundle_format": 1}))
    assert read_manifest(tmp_path / "bundle")[0]["bundle_format"] == 1
    with pytest.raises(TableError, match="has no tables; export it again"):
        read_tables(tmp_path / "bundle")
    assert import_bundle(tmp_path / "bundle", f"sqlite:///{tmp_path / 'b' / 'mlflow.db'}")["imported"] == 2


def test_the_stability_table_gives_back_its_findings_only_for_the_runs_it_covered():
    from topicbench.tasks.results.bundle_tables import findings_from_table, stability_table
    from topicbench.tasks.results.stability import StabilityFindings, UnreadableRun

    runs = pd.DataFrame({"corpus": ["c"] * 5, "model": ["a", "a", "b", "b", "d"], "seed": [0, 1, 0, 1, 0],
                         "run_key": ["a0", "a1", "b0", "b1", "d0"], "run_id": ["r1", "r2", "r3", "r4", "r5"],
                         "status": ["FINISHED"] * 5})
    findings = StabilityFindings(
        pd.DataFrame([{"corpus": "c", "model": "a", "seeds": 2, "pairs": 1, "top_words_mean": 0.5}]),
        one_seed=(("c", "d"),), unreadable=(UnreadableRun("c", "b", 1, "r4", "no output/matrices.npz"),),
        not_compared=(("c", "b", "1 of 2 seeds readable"),))
    table = stability_table(findings, runs)
    assert table.kind.tolist() == ["scored", "one_seed", "unreadable", "not_compared"]
    back = findings_from_table(table, runs)
    pd.testing.assert_frame_equal(back.table, findings.table)
    assert (back.one_seed, back.unreadable, back.not_compared) == (
        findings.one_seed, findings.unreadable, findings.not_compared)
    rerun = runs.assign(run_key=["a0", "a9", "b0", "b1", "d0"])  # model a's seed 1 fitted again since
    assert findings_from_table(table, rerun).table.empty


# ------------------------------------------------------------------------------------------------
# scores.jsonl: a bundle's numbers as text a reviewer can diff
# ------------------------------------------------------------------------------------------------

#: A label with a Unicode line separator: str.splitlines() (and many editors) break a line there.
SEPARATED_LABEL = "lda\u2028wide"
#: Tracked metric -> value of the scored fits (each score key: npmi@10, ...); the shown text of each.
SCORED_METRICS = {"npmi_top10": 1 / 3, "fit_seconds": 2585.31, "log_posterior": -132196234.5,
                  "topic_diversity_top5": 0.000123456, "umass_top10": -0.5}
SHOWN = {"npmi@10": "0.333", "fit_seconds": "2585", "log_posterior": "-1.32e8", "topic_diversity@5": "0.000123",
         "umass@10": "-0.5"}
LINE_FIELDS = ("corpus", "model", "seed", "run_key", "score")


def _store_with_scored_fits(folder):
    """:func:`_store_with_runs` (its fit on corpus ``toy``) and three more finished fits there (two of
    a model labelled :data:`SEPARATED_LABEL`), each with :data:`SCORED_METRICS`, logged out of order."""
    from mlflow.entities import Metric

    uri = _store_with_runs(folder)
    tracker = Tracker(uri, "paper")
    client = tracker.client
    [parent] = [run for run in _runs(uri)[1] if run.data.tags[ROLE_TAG] == PARENT_ROLE]
    [first] = [run for run in _runs(uri)[1] if run.info.status == "FINISHED" and run.data.tags[ROLE_TAG] == FIT_ROLE]
    client.set_tag(first.info.run_id, "corpus", "toy")
    for model, seed in ((SEPARATED_LABEL, 1), ("ctm", 0), (SEPARATED_LABEL, 0)):
        fit = client.create_run(tracker.experiment_id, run_name=f"{model} seed {seed}", tags={
            ROLE_TAG: FIT_ROLE, RUN_KEY: f"{model}-{seed}", "mlflow.parentRunId": parent.info.run_id,
            "model": model, "corpus": "toy", "seed": str(seed)})
        client.log_batch(fit.info.run_id, metrics=[Metric(k, v, 0, 0) for k, v in SCORED_METRICS.items()])
        client.set_terminated(fit.info.run_id, "FINISHED")
    return uri


def _significant_digits(number: str) -> int:
    """Significant digits of JSON number text (an integer's trailing zeros counted: 2585 has 4)."""
    mantissa = number.lstrip("-").partition("e")[0]
    return len(mantissa.replace(".", "").lstrip("0")) if "." in mantissa else len(mantissa.lstrip("0"))


def test_every_bundle_carries_scores_jsonl_sorted_rounded_and_the_same_bytes_again(tmp_path):
    import hashlib
    import re

    from topicbench.tasks.results.bundle_scores import scores_file_bytes
    from topicbench.tasks.results.bundle_tables import TableError, read_tables

    uri = _store_with_scored_fits(tmp_path / "a")
    manifest = export_bundle(uri, "paper", tmp_path / "bundle")
    data = (tmp_path / "bundle" / "scores.jsonl").read_bytes()
    assert data.isascii() and b"\r" not in data and data.endswith(b"\n")
    lines = data.decode("ascii").split("\n")[:-1]
    assert len(lines) == len(data.decode("ascii").splitlines()) == 1 + 3 * len(SCORED_METRICS)  # one a run x score
    assert len(lines) == len(read_tables(tmp_path / "bundle")["scores"])
    records = [json.loads(line) for line in lines]
    assert all(list(record) == sorted(record) and set(LINE_FIELDS) | {"value"} <= set(record) for record in records)
    order = [tuple((r[k] is not None, "" if r[k] is None else r[k]) for k in LINE_FIELDS) for r in records]
    assert order == sorted(order)
    assert list(dict.fromkeys((r["model"], r["seed"]) for r in records)) == [
        ("ctm", 0), ("gensim_lda", 0), (SEPARATED_LABEL, 0), (SEPARATED_LABEL, 1)]
    assert sum("lda\\u2028wide" in line for line in lines) == 2 * len(SCORED_METRICS)  # escaped, on its line
    shown = {r["score"]: re.search(r'"value": ([^,}]+)}$', line).group(1) for r, line in zip(records, lines)
             if r["model"] == "ctm"}
    assert shown == SHOWN
    assert all(_significant_digits(text) <= 4 for text in shown.values())  # 3, or an integer part's own
    assert (records[0]["model"], records[0]["score"], records[0]["value"]) == ("ctm", "fit_seconds", 2585)
    assert {(r["model"], r["value"]) for r in records if r["score"] == "npmi_10"} == {("gensim_lda", 0.125)}
    assert manifest["scores_file"] == {"file": "scores.jsonl", "lines": len(lines),
                                       "sha256": hashlib.sha256(data).hexdigest()}
    assert scores_file_bytes(read_tables(tmp_path / "bundle", names=("runs", "scores"))) == data  # the tables give it
    with pytest.raises(TableError, match="its manifest lists no table 'scores.jsonl'"):
        read_tables(tmp_path / "bundle", names=("scores.jsonl",))
    export_bundle(uri, "paper", tmp_path / "again")
    export_bundle(uri, "paper", tmp_path / "bundle")
    assert (tmp_path / "again" / "scores.jsonl").read_bytes() == (tmp_path / "bundle" / "scores.jsonl").read_bytes() == data


def test_shown_numbers_are_the_reports_rounded_digits_as_json_numbers():
    import math
    import random

    from topicbench.tasks.report.render import DIGITS, format_number
    from topicbench.tasks.results.bundle_scores import SHOWN_DIGITS, shown_number

    assert SHOWN_DIGITS == DIGITS
    generator = random.Random(45)
    values = [0.0, -0.0, 0.5, 999.96, 0.99996, 1e6, 9.9996e-5, 1e-4, -1e-9, 4.2e15]
    values += [generator.choice((-1, 1)) * 10 ** generator.uniform(-8, 11) for _ in range(3000)]
    for value in values:
        text = shown_number(value)
        assert float(json.loads(text)) == float(format_number(value)), value
        assert _significant_digits(text) <= max(DIGITS, len(str(abs(int(float(text)))))), value
    assert [shown_number(v) for v in (math.nan, math.inf, -math.inf, -0.0)] == ["null", "null", "null", "0"]


def test_a_bundle_without_scores_jsonl_still_imports_and_reports_and_can_be_given_one(tmp_path):
    from topicbench.flows.report import report_from
    from topicbench.tasks.results.bundle_scores import add_scores_file
    from topicbench.tasks.results.bundle_source import BundleSource

    export_bundle(_store_with_scored_fits(tmp_path / "a"), "paper", tmp_path / "bundle")
    folder = tmp_path / "bundle"
    exported = {name: (folder / name).read_bytes() for name in ("manifest.json", "scores.jsonl")}
    manifest = json.loads(exported["manifest.json"])
    del manifest["scores_file"]  # a bundle exported before the file existed
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    (folder / "scores.jsonl").unlink()
    assert import_bundle(folder, f"sqlite:///{tmp_path / 'b' / 'mlflow.db'}") == {"imported": 5, "already_there": 0}
    written = report_from(BundleSource(folder), str(tmp_path / "report"), command="cmd", sections=["coherence"])
    assert "ctm" in open(written["markdown"], encoding="utf-8").read()
    assert add_scores_file(folder)["lines"] == 1 + 3 * len(SCORED_METRICS)  # from its tables, no store, no refit
    assert {name: (folder / name).read_bytes() for name in exported} == exported


def test_each_committed_bundle_holds_the_scores_jsonl_its_tables_give():
    import hashlib
    from pathlib import Path

    from topicbench.tasks.results.bundle_scores import scores_file_bytes
    from topicbench.tasks.results.bundle_tables import read_tables

    manifests = sorted((Path(__file__).resolve().parents[2] / "results").glob("*/bundle/manifest.json"))
    for folder in [path.parent for path in manifests if json.loads(path.read_text(encoding="utf-8")).get("tables")]:
        data = (folder / "scores.jsonl").read_bytes()  # missing: give it one with add_scores_file(folder)
        assert data == scores_file_bytes(read_tables(folder, names=("runs", "scores"))), folder
        listed = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["scores_file"]
        assert listed["sha256"] == hashlib.sha256(data).hexdigest() and listed["lines"] == data.count(b"\n"), folder
