"""Spooled fits that cannot be logged (issue 37, item 9): each is said once, moved aside to the
spool's ``failed/`` folder with why, and the benchmark goes on; the next run is not stopped by it."""

from __future__ import annotations

import json

import pytest
from mlflow.tracking import MlflowClient

from topicbench.flows.benchmark import run_benchmark
from topicbench.flows.benchmark_runs import Job
from topicbench.flows.config.model import BenchmarkConfig
from topicbench.tasks.run.corpus import corpus_splits, load_corpus
from topicbench.tasks.store.spool import SPOOL_VARIABLE, Spool, this_version

pytestmark = pytest.mark.usefixtures("prefect_server")

ELDA = {"model": "elda", "settings": {"kappa": 2.0, "generator": "cooccurrence", "top_words": 10}}


def _spool_entry(folder, record: dict) -> None:
    """A whole spool entry as :meth:`Spool.put` writes one, holding ``record``."""
    (folder / "artifacts").mkdir(parents=True)
    (folder / "artifacts" / "topics.json").write_text("[]")
    (folder / "run.json").write_text(json.dumps({"spool_format": 1, "topicbench_version": this_version(), "record": record}))


def test_spooled_fits_that_cannot_be_logged_are_set_aside_once_and_the_runs_go_on(tiny_octis, tmp_path, monkeypatch):
    monkeypatch.setenv(SPOOL_VARIABLE, str(tmp_path / "spool"))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = BenchmarkConfig.from_dict({
        "experiment": "tiny", "corpora": [{"name": "tiny", "source": str(tiny_octis), "preprocessing": {"preprocessed": True}}],
        "models": [ELDA], "seeds": [0, 1, 2], "metrics": ["umass"], "top_n": [5], "tracking_uri": uri,
    })
    spec = config.corpora[0]
    corpus = corpus_splits(load_corpus.fn(spec))[0]
    keys = [Job(spec, corpus, config.models[0], seed, config).key for seed in (0, 1, 2)]
    spool = Spool.of(uri, "tiny")
    good = {"params": {}, "tags": {}, "metrics": {"fit_seconds": 1.0}, "curve": [], "label": "elda@tiny"}
    # seed 0: its record cut short; seed 2: a record that would change the claimed run's seed
    _spool_entry(spool.folder / keys[0], good)
    (spool.folder / keys[0] / "run.json").write_text('{"spool_format": 1, "record": {"params": {')
    _spool_entry(spool.folder / keys[2], {**good, "params": {"seed": "7"}})
    # seed 1: passes every check, and the store refuses it midway (MLflow names hold no '@')
    _spool_entry(spool.folder / keys[1], {**good, "metrics": {"umass@5": -1.0}})

    first = run_benchmark(config)
    assert first.is_failed() and first.message.startswith("1 of 3 runs failed: elda@tiny seed 1: UnusableEntry: "
                                                          "its spooled fit (moved to "), first.message
    runs = MlflowClient(uri).search_runs([MlflowClient(uri).get_experiment_by_name("tiny").experiment_id],
                                         "tags.`topicbench.role` = 'fit'")
    status = {run.data.params["seed"]: run.info.status for run in runs}
    assert status == {"0": "FINISHED", "1": "FAILED", "2": "FINISHED"}  # 0 and 2 fitted again at once
    assert spool.keys() == set()
    aside = {entry.name: (entry / "why.txt").read_text() for entry in (spool.folder / "failed").iterdir()}
    assert set(aside) == set(keys)
    assert aside[keys[0]].startswith("run.json is not JSON (line 1")
    assert aside[keys[2]].startswith("its params seed differ from those of the run it was fitted for")
    assert aside[keys[1]].startswith("the store refused it: ")
    assert all((spool.folder / "failed" / key / "run.json").is_file() for key in keys)  # kept, never deleted

    second = run_benchmark(config)  # not stopped by them again: seed 1 is fitted, the others skipped
    assert second.is_completed(), second.message
    assert second.result()["skipped_finished"] == 2 and second.result()["logged"] == ["elda@tiny seed 1"]
    assert sorted(entry.name for entry in (spool.folder / "failed").iterdir()) == sorted(keys)
