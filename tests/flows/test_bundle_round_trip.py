"""A benchmark's result bundle, end to end: run -> export -> import into a fresh store -> the same
report (from that store and straight from the bundle) -> importing again adds nothing -> running
the same config there fits nothing."""

from __future__ import annotations

import random

import pytest
from mlflow.tracking import MlflowClient

from topicbench.flows.benchmark import run_benchmark
from topicbench.flows.cli.main import main
from topicbench.flows.config.model import BenchmarkConfig
from topicbench.flows.report import report
from topicbench.tasks.results.bundle import export_bundle, import_bundle
from topicbench.tasks.store.claims import FIT_ROLE, ROLE_TAG

pytestmark = pytest.mark.usefixtures("prefect_server")


def _config(corpus_folder, uri: str) -> BenchmarkConfig:
    return BenchmarkConfig.from_dict({
        "experiment": "bundle-test",
        "corpora": [{"name": "toy", "source": str(corpus_folder), "preprocessing": {"preprocessed": True}}],
        "models": [
            {"model": "gensim_lda", "num_topics": 3, "settings": {"passes": 2, "iterations": 20, "top_words": 8}},
            {"model": "gibbs_lda", "num_topics": 4, "settings": {"iterations": 40, "top_words": 8}},
        ],
        "seeds": [0, 1],
        "metrics": ["umass", "npmi", "topic_diversity"],
        "top_n": [5, 10],
        "tracking_uri": uri,
    })


@pytest.fixture(scope="module")
def tracked(tmp_path_factory):
    """(corpus folder, store URI) of a finished benchmark: 2 models x 2 seeds on a toy corpus."""
    folder = tmp_path_factory.mktemp("corpus")
    rng = random.Random(3)
    vocab = "tax budget war troops school teacher health doctor vote bill law court".split()
    lines = [" ".join(rng.choices(vocab[(d % 3) * 4:(d % 3) * 4 + 4] + vocab, k=12)) + f"\ttrain\ttheme{d % 3}\n"
             for d in range(30)]
    (folder / "corpus.tsv").write_text("".join(lines))
    uri = f"sqlite:///{tmp_path_factory.mktemp('store') / 'mlflow.db'}"
    assert run_benchmark(_config(folder, uri)).is_completed()
    return folder, uri


def _markdown(folder) -> str:
    """The report's Markdown without the line naming when and by which command it was generated."""
    return "\n".join(line for line in (folder / "report.md").read_text().splitlines() if "Generated " not in line)


def _fits(uri: str) -> list:
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("bundle-test")
    return [run for run in client.search_runs([experiment.experiment_id]) if run.data.tags.get(ROLE_TAG) == FIT_ROLE]


def test_a_bundle_reports_and_resumes_like_the_store_it_came_from(tracked, tmp_path, capsys):
    corpus, source = tracked
    report("bundle-test", source, str(tmp_path / "original"))
    original = _markdown(tmp_path / "original")
    stability = original[original.index("## Stability across seeds"):]
    assert "| gensim_lda | 2 |" in stability and "| gibbs_lda | 2 |" in stability  # both models scored

    manifest = export_bundle(source, "bundle-test", tmp_path / "bundle")
    assert manifest["bundle_format"] == 3 and manifest["fits"] == 4
    assert manifest["tables"]["runs"]["rows"] == 4 and set(manifest["datasets"]) == {"toy"}
    assert manifest["config"]["experiment"] == "bundle-test"

    target = f"sqlite:///{tmp_path / 'imported' / 'mlflow.db'}"
    assert import_bundle(tmp_path / "bundle", target) == {"imported": 5, "already_there": 0}
    report("bundle-test", target, str(tmp_path / "from-import"))
    assert _markdown(tmp_path / "from-import") == original  # stability included, without any matrices

    assert main(["report", "--bundle", str(tmp_path / "bundle"), "--out", str(tmp_path / "from-bundle")]) == 0
    assert _markdown(tmp_path / "from-bundle") == original
    assert f"topicbench report --bundle {tmp_path / 'bundle'}" in (tmp_path / "from-bundle" / "report.md").read_text()

    assert import_bundle(tmp_path / "bundle", target) == {"imported": 0, "already_there": 5}
    imported = {run.info.run_id for run in _fits(target)}
    assert run_benchmark(_config(corpus, target)).is_completed()
    assert {run.info.run_id for run in _fits(target)} == imported  # every fit skipped, none refitted


def test_report_takes_a_bundle_or_a_store_never_both(tmp_path, capsys):
    assert main(["report", "--bundle", str(tmp_path), "--experiment", "x"]) == 2
    assert "give it without --experiment and --tracking-uri" in capsys.readouterr().err.splitlines()[-1]
    assert main(["report"]) == 2
    assert "--experiment NAME" in capsys.readouterr().err.splitlines()[-1]
    assert main(["report", "--bundle", str(tmp_path)]) == 2
    assert "is not a readable result bundle" in capsys.readouterr().err.splitlines()[-1]
