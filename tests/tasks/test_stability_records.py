"""Stability kept with runs that travelled without their matrices: a record of an older scoring is
kept (and said to be older), never dropped for "no output/matrices.npz"; a model whose seeds cannot
be read is exported as not compared, without a crash.

The paper's bundle holds such runs: exported before the permutation test (record version 1), and
without matrices, so its numbers cannot be scored again."""

from __future__ import annotations

import json

import numpy as np
import pytest

from topicbench.tasks.report.stability import chance_verdict
from topicbench.tasks.results.bundle_tables import stability_records, stability_table
from topicbench.tasks.results.stability import (STABILITY_ARTIFACT, STABILITY_MEASURES, STABILITY_VERSION,
                                                VERSION_COLUMN, collect_stability)
from topicbench.tasks.results.store import collect_runs

EXPERIMENT = "stability-records"
#: A version-1 row, as the paper's bundle holds it: a chance level from two seeds, no permutation test.
OLD_ROW = {"seeds": 2, "pairs": 1, "jensen_shannon_mean": 0.39, "jensen_shannon_sd": 0.006,
           "jensen_shannon_share_mean": 0.27, "jensen_shannon_share_sd": 0.01, "jensen_shannon_chance": 0.067,
           "top_words_mean": 0.51, "top_words_sd": 0.019, "top_words_share_mean": 0.55,
           "top_words_share_sd": 0.04, "top_words_chance": 0.018}


@pytest.fixture()
def store(tmp_path):
    """Model ``old``: two finished seeds with no output/, each carrying a version-1 record; model
    ``gone``: two finished seeds with no output/ and no record."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment_id = client.create_experiment(EXPERIMENT, artifact_location=(tmp_path / "artifacts").as_uri())
    keys = {model: [f"toy/{model}/{seed}" for seed in (0, 1)] for model in ("old", "gone")}
    record = tmp_path / STABILITY_ARTIFACT
    record.write_text(json.dumps({"corpus": "toy", "model": "old", "run_keys": keys["old"], "version": 1,
                                  "measures": list(STABILITY_MEASURES), "row": OLD_ROW, "not_compared": None}))
    for model in ("old", "gone"):
        for seed, key in enumerate(keys[model]):
            run = client.create_run(experiment_id, tags={"topicbench.role": "fit", "corpus": "toy", "model": model,
                                                         "seed": str(seed), "topicbench.run_key": key})
            if model == "old":
                client.log_artifact(run.info.run_id, str(record))
            client.set_terminated(run.info.run_id, "FINISHED")
    return uri


def test_an_older_record_is_kept_as_older_where_the_outputs_did_not_travel(store):
    runs = collect_runs(store, EXPERIMENT)
    findings = collect_stability(store, runs)
    row = findings.table.set_index("model").loc["old"]
    assert row[VERSION_COLUMN] == 1 and row.jensen_shannon_mean == pytest.approx(0.39)
    # the record stands in for old's outputs: only gone's runs are named unreadable
    assert sorted((run.model, run.seed) for run in findings.unreadable) == [("gone", 0), ("gone", 1)]
    assert findings.not_compared == (("toy", "gone", "0 of 2 seeds readable"),)
    assert chance_verdict(row) == ("JS: not tested (scored before the permutation test); "
                                   "RBO: not tested (scored before the permutation test)")


def test_exported_again_the_older_record_keeps_its_version_and_a_not_compared_model_exports(store):
    runs = collect_runs(store, EXPERIMENT)
    records = stability_records(stability_table(collect_stability(store, runs), runs))
    old = json.loads(records[("toy", "old")])
    assert old["version"] == 1 and VERSION_COLUMN not in old["row"]
    assert old["row"]["seeds"] == 2 and old["row"]["jensen_shannon_chance"] == pytest.approx(0.067)
    gone = json.loads(records[("toy", "gone")])
    assert gone["row"] is None and gone["not_compared"] == "0 of 2 seeds readable"
    assert gone["version"] == STABILITY_VERSION and np.isfinite(old["row"]["top_words_mean"])
