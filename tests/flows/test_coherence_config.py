"""The config's ``coherence`` block (issue 47, item 4): ``oov`` and the reference corpus as settings,
checked with errors that name the problem, recorded with every run, and honoured where fits are
scored; a config without it keeps its fingerprint and its runs' keys."""

from __future__ import annotations

import numpy as np
import pytest

from topicbench.core.metrics.context import MetricSettings
from topicbench.core.metrics.scoring import score
from topicbench.core.output import TopicModelOutput
from topicbench.core.validation import InputError
from topicbench.flows.benchmark_runs import Job
from topicbench.flows.config.model import BenchmarkConfig
from topicbench.tasks.run.corpus import coherence_references, corpus_splits, load_corpus
from topicbench.tasks.run.metric_context import build_metric_context
from topicbench.tasks.store.tracking import run_record

LINES = [
    "budget tax spending deficit\ttrain", "tax budget deficit economy\ttrain", "war troops army defense\ttrain",
    "troops war army security\ttrain", "budget war specifics tax\ttest", "army budget troops\ttest",
]


@pytest.fixture
def folder(tmp_path):
    folder = tmp_path / "man"
    folder.mkdir()
    (folder / "corpus.tsv").write_text("".join(f"{line}\n" for line in LINES), encoding="utf-8")
    return folder


def config(folder, **coherence):
    data = {"experiment": "x", "corpora": [{"name": "man", "source": str(folder), "preprocessing": {"preprocessed": True}}],
            "models": [{"model": "gibbs_lda", "num_topics": 2}], "metrics": ["npmi"], "top_n": [3]}
    return BenchmarkConfig.from_dict({**data, "coherence": coherence} if coherence else data)


def test_the_keys_validate_and_keep_the_fingerprint_of_a_config_without_them(folder):
    plain = config(folder)
    assert plain.coherence_settings() == ("error", "train") and plain.coherence is None
    assert "coherence" not in plain.to_dict() or plain.to_dict()["coherence"] is None
    chosen = config(folder, oov="drop", reference="all")
    assert chosen.coherence_settings() == ("drop", "all")
    assert chosen.fingerprint() != plain.fingerprint()
    external = config(folder, reference={"source": str(folder), "preprocessing": {"preprocessed": True}})
    reference = external.coherence_reference()
    assert reference.source == str(folder) and reference.preprocess_config().vocabulary_from == "all"


@pytest.mark.parametrize("block, message", [
    ({"oov": "skip"}, "coherence.oov must be one of 'error', 'drop', got 'skip'"),
    ({"reference": "val"}, "coherence.reference must be one of 'train', 'test', 'all'"),
    ({"refrence": "all"}, "coherence: unknown setting 'refrence'; known: oov, reference"),
    ({"reference": {"source": "/no/such/corpus"}}, "coherence.reference .*corpus source not found: /no/such/corpus"),
    ({"reference": {"source": "lee", "preprocessing": {"min_df": 0}}}, "coherence.reference.preprocessing.min_df"),
])
def test_bad_values_name_the_key_and_the_choices(folder, block, message):
    with pytest.raises(InputError, match=message):
        config(folder, **block)


def test_runs_record_the_settings_and_only_other_settings_change_a_runs_key(folder):
    plain = config(folder)
    fitting, _ = corpus_splits(load_corpus.fn(plain.corpora[0]))
    record = run_record(fitting, plain.models[0], 0, plain)
    assert (record["coherence.oov"], record["coherence.reference"]) == ("error", "train")
    assert (record["corpus_vocabulary_from"], record["corpus_test_only_words"], record["corpus_test_only_tokens"]) == (
        "train", 1, 1)  # 'specifics' is in a test document only
    keys = {str(c.coherence_settings()): Job(c.corpora[0], fitting, c.models[0], 0, c).key
            for c in (plain, config(folder, oov="error", reference="train"), config(folder, reference="test"))}
    assert len(keys) == 2  # the defaults, given or not, keep the key; another reference changes it
    external = config(folder, reference={"source": str(folder)})
    assert run_record(fitting, external.models[0], 0, external)["coherence.reference"] == f'{{"source": "{folder}"}}'


def test_each_reference_is_the_corpus_it_names(folder, tmp_path):
    splits = {"man": corpus_splits(load_corpus.fn(config(folder).corpora[0]))}
    assert coherence_references(config(folder), splits) == {"man": None}  # the fitting corpus
    assert coherence_references(config(folder, reference="test"), splits)["man"] is splits["man"][1]
    every = coherence_references(config(folder, reference="all"), splits)["man"]
    assert every.n_documents == len(LINES) and every.name == "man[all]"
    external = coherence_references(config(folder, reference={"source": str(folder), "preprocessing": {
        "preprocessed": True}}), splits)["man"]
    assert "specifics" in external.word_index and external.vocabulary_from == "all"  # a reference keeps every word
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "corpus.tsv").write_text("budget tax\ttrain\nwar army\ttrain\n", encoding="utf-8")
    no_test = {"man": corpus_splits(load_corpus.fn(config(tmp_path / "plain").corpora[0]))}
    with pytest.raises(InputError, match="corpus 'man': coherence.reference is 'test', and the corpus has no test"):
        coherence_references(config(tmp_path / "plain", reference="test"), no_test)


def test_the_context_counts_in_the_reference_and_honours_oov(folder):
    fitting, heldout = corpus_splits(load_corpus.fn(config(folder).corpora[0]))
    rng = np.random.default_rng(0)
    topics = [["budget", "deficit", "tax", "army"], ["war", "defense", "troops", "army"]]
    output = TopicModelOutput(model="m", vocabulary=fitting.vocabulary, topics=topics,
                              topic_word_matrix=rng.dirichlet(np.ones(fitting.n_words), size=2),
                              topic_document_matrix=rng.dirichlet(np.ones(2), size=fitting.n_documents).T)
    on_test = build_metric_context(fitting, ["npmi"], (3,), heldout, reference=heldout)
    assert on_test.inputs.reference_corpus is heldout and on_test.inputs.settings == MetricSettings(top_n=(3,))
    scored = score(output, on_test, ["npmi"], seed=0)  # no test document has 'deficit' or 'defense'
    assert "npmi@3" not in scored.values and "npmi_in_reference@3" in scored.values
    assert scored.values["npmi_in_reference_dropped@3"] == 2 and scored.values["npmi_in_reference_topics@3"] == 2
    dropping = build_metric_context(fitting, ["npmi"], (3,), heldout, reference=heldout, oov="drop")
    assert "npmi@3" in score(output, dropping, ["npmi"], seed=0).values
