"""Every Unicode line break through a benchmark (issue 46): a judge's reply and a corpus word
holding U+2028 (or any other character ``str.splitlines`` breaks on) are one record a line in the
run's ``llm/requests.jsonl``, the run is logged and reported, and running the same benchmark again
(its replies now cached) succeeds too. Before, the trace reader split the record and the flow
failed with a traceback on every run after the first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from llm_endpoints import MODEL, Reply, completion, fake_endpoint
from topicbench.flows.cli.main import main
from topicbench.tasks.store.claims import FIT_ROLE, ROLE_TAG

#: The characters ``json.dumps`` leaves raw that ``str.splitlines`` breaks on.
RAW_BREAKS = ["\u2028", "\u2029", "\x85"]


def _corpus(tmp_path: Path) -> Path:
    """40 documents over four themes; one word of the first theme holds every raw break."""
    themes = [f"budget tax{''.join(RAW_BREAKS)}es spending deficit revenue",
              "war troops military soldiers defense", "school teacher education student college",
              "health care hospital doctor patient"]
    lines = [" ".join(themes[d % 4].split() * 3) + "\ttrain\n" for d in range(40)]
    folder = tmp_path / "breaks"
    folder.mkdir()
    (folder / "corpus.tsv").write_text("".join(lines), encoding="utf-8")
    return folder


def _config(tmp_path: Path, corpus: Path, experiment: str) -> str:
    path = tmp_path / f"{experiment}.yaml"
    path.write_text(json.dumps({
        "experiment": experiment,
        "corpora": [{"name": "breaks", "source": str(corpus), "preprocessing": {"preprocessed": True}}],
        "models": [{"model": "elda", "metrics": ["llm_rating", "npmi"], "settings": {"top_words": 12}}],
        "metrics": ["llm_rating", "npmi"], "top_n": [5],
        "llm": {"max_topics": 3, "rating_samples": 1, "retries": 1, "timeout": 10, "concurrency": 1},
    }), encoding="utf-8")
    return str(path)


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_server")
def test_replies_and_words_with_line_separators_are_logged_reported_and_rerun(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPICBENCH_LLM_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setenv("TOPICBENCH_SPOOL", str(tmp_path / "spool"))
    store = tmp_path / "store" / "mlflow.db"
    reply = "3" + "".join(RAW_BREAKS) + " (a clear topic)"
    corpus = _corpus(tmp_path)
    with fake_endpoint(chat=lambda body, headers: Reply(body=completion(text=reply))) as endpoint:
        for experiment in ("line-breaks", "line-breaks-again"):  # the second reads its replies from the cache
            argv = ["run", _config(tmp_path, corpus, experiment), "--llm-base-url", endpoint.url, "--llm-model", MODEL,
                    "--tracking-uri", f"sqlite:///{store}", "--out", str(tmp_path / experiment)]
            assert main(argv) == 0, experiment
    client = MlflowClient(f"sqlite:///{store}")
    experiment = client.get_experiment_by_name("line-breaks-again")
    fits = [r for r in client.search_runs([experiment.experiment_id]) if r.data.tags.get(ROLE_TAG) == FIT_ROLE]
    assert fits and all(r.info.status == "FINISHED" for r in fits)
    folder = client.download_artifacts(fits[0].info.run_id, "llm", str(tmp_path / "artifacts"))
    text = (Path(folder) / "requests.jsonl").read_text(encoding="utf-8")
    assert text.count("\n") == len(text.splitlines()) >= 1, "one record a line, whatever reader splits it"
    assert "llm_rating" in fits[0].data.metrics
    assert (tmp_path / "line-breaks-again" / "report.md").is_file()
