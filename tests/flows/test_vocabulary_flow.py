"""Issue 47, item 4 through the benchmark flow: a corpus with a test split and a test-only word is
fitted on a vocabulary without it, the runs record what was dropped and the coherence settings, and
a reference corpus the config names is the one coherence counts in."""

from __future__ import annotations

import random

import pytest
from mlflow.tracking import MlflowClient

from topicbench.flows.benchmark import run_benchmark
from topicbench.flows.config.model import BenchmarkConfig

pytestmark = pytest.mark.usefixtures("prefect_server")

THEMES = ["budget tax spending deficit revenue economy", "war troops military soldiers defense army",
          "school teacher education student college class"]


@pytest.fixture
def split_corpus(tmp_path):
    rng = random.Random(0)
    lines = []
    for d in range(30):
        words = THEMES[d % 3].split() * 2
        rng.shuffle(words)
        held_out = d % 5 == 4 and d % 3 != 2  # no school document is held out
        lines.append(f"{' '.join(words)}\t{'test' if held_out else 'train'}\n")
    lines.append("budget specifics army\ttest\n")  # 'specifics': in this test document only
    folder = tmp_path / "split"
    folder.mkdir()
    (folder / "corpus.tsv").write_text("".join(lines), encoding="utf-8")
    return folder


def test_a_test_only_word_is_left_out_of_the_vocabulary_and_the_reference_is_the_one_asked(split_corpus, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = BenchmarkConfig.from_dict({
        "experiment": "split", "tracking_uri": uri, "seeds": [0], "top_n": [5],
        "corpora": [{"name": "split", "source": str(split_corpus), "preprocessing": {"preprocessed": True}}],
        "models": [{"model": "gensim_lda", "num_topics": 3, "settings": {"passes": 2, "iterations": 20}}],
        "metrics": ["npmi", "perplexity"], "coherence": {"reference": "test"},
    })
    state = run_benchmark(config)
    assert state.is_completed(), state.message
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("split").experiment_id
    (run,) = client.search_runs([experiment], filter_string="tags.`topicbench.role` = 'fit'")
    params, metrics = run.data.params, run.data.metrics
    assert (params["corpus_vocabulary_from"], params["corpus_test_only_words"], params["corpus_test_only_tokens"]) == (
        "train", "1", "1")
    assert params["preprocessing.vocabulary_from"] == "train"
    assert (params["coherence.oov"], params["coherence.reference"]) == ("error", "test")
    assert int(params["corpus_vocabulary"]) == 18  # the training documents' words, not 'specifics'
    assert "perplexity" in metrics  # scored over the test words the model could have seen
    # the test documents have no school words: a topic's top words they lack leave npmi undefined
    # there (it would be scored on the training documents, the default), and its in-reference value is logged
    assert "npmi_top5" not in metrics and "npmi_in_reference_top5" in metrics
    assert "does not occur in the reference corpus 'split[test]'" in run.data.tags["topicbench.skipped_metrics"]
