"""Scoring where the fit ran: ``fit_and_score.fn`` sends back scores, skipped metrics and the
artifacts' folder, never matrices; the metric context is built once per process and corpus."""

from __future__ import annotations

import dataclasses
import json
import pickle
import socket
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from topicbench.core.metrics.scoring import score
from topicbench.core.output import TopicModelOutput
from topicbench.core.topic_word import ConstantPlusSparse
from topicbench.tasks.run import metric_context as metric_tasks
from topicbench.tasks.store.artifacts import FIT_WARNINGS, TOPIC_DOCUMENTS, TOPIC_SCORES, ArtifactFolder, topic_documents
from topicbench.tasks.run.fit_warnings import capturing_warnings, warning_lines
from topicbench.tasks.run.fit import ScoredFit, fit_and_score, fit_model

METRICS = ("umass", "npmi", "topic_diversity", "log_likelihood_own", "log_likelihood_randk", "perplexity")
ELDA = {"kappa": 2.0, "generator": "raw_umass", "top_words": 5}


def matrices_in(value, path="result") -> list:
    """Paths of every array or matrix reachable from ``value`` (dataclass fields, dicts, sequences)."""
    if isinstance(value, (np.ndarray, ConstantPlusSparse)) or sp.issparse(value):
        return [path]
    if dataclasses.is_dataclass(value):
        return [p for f in dataclasses.fields(value) for p in matrices_in(getattr(value, f.name), f"{path}.{f.name}")]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in matrices_in(v, f"{path}[{k!r}]")]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in matrices_in(v, f"{path}[{i}]")]
    return []


@pytest.fixture(autouse=True)
def fresh_contexts(monkeypatch):
    """Each test starts with no metric context kept by this process."""
    monkeypatch.setattr(metric_tasks, "_contexts", type(metric_tasks._contexts)())


def run(corpus, flow_host=None, seed=0, model="elda", settings=ELDA, num_topics=None):
    return fit_and_score.fn(
        corpus, model, num_topics, settings, seed, None, None, metrics=METRICS, context_metrics=METRICS,
        top_n=(5,), flow_host=flow_host or socket.gethostname(),
    )


def test_a_fit_scored_where_it_ran_sends_back_scores_and_a_folder_not_matrices(make_random_corpus):
    corpus = make_random_corpus(1, n_documents=(30, 30), n_words=(25, 25))
    scored = run(corpus)
    try:
        assert isinstance(scored, ScoredFit) and matrices_in(scored) == []
        assert len(pickle.dumps(scored)) < 20_000  # what a Dask worker sends to the flow
        # the scores are those of the fitted output scored in a fresh context
        fitted = fit_model.fn(corpus, "elda", None, ELDA, 0)
        context = metric_tasks.build_metric_context(corpus, METRICS, (5,))
        expected = score(fitted.output, context, METRICS, seed=0)
        assert scored.scores == expected.values and scored.skipped == expected.skipped
        assert "perplexity" in scored.skipped  # no held-out split: skipped with the reason
        assert scored.output.n_topics == fitted.output.n_topics and scored.resolved == fitted.resolved
        # the artifacts: the output in its own (constant-plus-sparse) form and the topic lists
        folder = Path(scored.artifacts.path)
        assert {"topics.json", "topics.csv", TOPIC_SCORES, TOPIC_DOCUMENTS} <= {p.name for p in folder.iterdir()}
        # each topic's documents, from the fitted matrix, with excerpts of the fitted corpus
        facts = json.loads((folder / TOPIC_DOCUMENTS).read_text())
        assert facts == topic_documents(fitted.output.topic_document_matrix, corpus)
        assert sum(record["documents"] for record in facts["topics"]) == corpus.n_documents
        # each topic's own scores, in topics.json's order, averaging to the run's scores
        topic_scores = pd.read_csv(folder / TOPIC_SCORES)
        assert list(topic_scores.topic) == list(range(fitted.output.n_topics))
        assert set(topic_scores.columns) - {"topic"} == set(expected.topic_scores) and expected.topic_scores
        for key in expected.topic_scores:
            assert topic_scores[key].mean() == pytest.approx(scored.scores[key], rel=1e-5), key
        saved = TopicModelOutput.load(folder / "output")
        assert isinstance(saved.topic_word_matrix, ConstantPlusSparse)
        assert saved.topics == fitted.output.topics
    finally:
        scored.artifacts.remove()
    assert not folder.exists()


def test_the_metric_context_is_built_once_per_process_and_corpus(make_random_corpus, monkeypatch):
    built = []
    original = metric_tasks.build_metric_context

    def counting(corpus, *args, **kwargs):
        built.append(corpus.name)
        return original(corpus, *args, **kwargs)

    monkeypatch.setattr(metric_tasks, "build_metric_context", counting)
    first, second = make_random_corpus(2), dataclasses.replace(make_random_corpus(3), name="other")
    results = [run(first, seed=0), run(first, seed=1), run(second, seed=0), run(first, seed=2)]
    for scored in results:
        scored.artifacts.remove()
    assert built == [first.name, "other"]
    context, _ = metric_tasks.process_metric_context(first, METRICS, (5,))
    assert context.counts  # the counts made by the first output, kept for the later ones
    # other metric settings: another context
    metric_tasks.process_metric_context(first, METRICS, (5, 10))
    assert built == [first.name, "other", first.name]


def test_artifacts_for_a_flow_on_another_host_travel_as_files(make_random_corpus):
    corpus = make_random_corpus(4, n_documents=(20, 20))
    scored = run(corpus, flow_host="another-host")
    artifacts = scored.artifacts
    assert artifacts.path is None and {"topics.json", "output/matrices.npz", "output/output.json"} <= set(artifacts.files)
    with artifacts.local_folder() as folder:
        loaded = TopicModelOutput.load(folder / "output")
        assert isinstance(loaded.topic_word_matrix, ConstantPlusSparse)
        assert (folder / "topics.json").read_bytes() == artifacts.files["topics.json"]
    assert not folder.exists()


def test_a_folder_of_another_host_is_not_read_as_if_it_were_here(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not on this host"):
        with ArtifactFolder(host="another-host", path=str(tmp_path)).local_folder():
            pass


def test_a_baseline_scored_where_it_ran_keeps_its_dense_matrices_in_its_artifacts(make_random_corpus):
    corpus = make_random_corpus(5, n_documents=(25, 25))
    scored = run(corpus, model="gibbs_lda", settings={"iterations": 5, "top_words": 5}, num_topics=3)
    try:
        assert matrices_in(scored) == []
        saved = TopicModelOutput.load(Path(scored.artifacts.path) / "output")
        assert type(saved.topic_word_matrix) is np.ndarray and saved.topic_word_matrix.shape == (3, corpus.n_words)
    finally:
        scored.artifacts.remove()


def test_library_warnings_are_said_once_each_with_the_fit_and_kept_in_the_runs_log(make_random_corpus, caplog):
    # scikit-learn's NMF stopped after 2 iterations warns (ConvergenceWarning) without naming the fit
    corpus = make_random_corpus(4, n_documents=(40, 40), n_words=(30, 30))
    with caplog.at_level("WARNING"):
        scored = run(corpus, model="nmf", settings={"max_iter": 2}, num_topics=3, seed=7)
    try:
        said = [record.getMessage() for record in caplog.records if "ConvergenceWarning" in record.getMessage()]
        assert len(said) == 1 and said[0].startswith(f"nmf@{corpus.name} seed 7: ConvergenceWarning: Maximum number")
        log = (Path(scored.artifacts.path) / FIT_WARNINGS).read_text()
        assert log == said[0] + "\n"
    finally:
        scored.artifacts.remove()


def test_each_distinct_warning_is_one_line_with_its_count():
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)  # a filter set before: it keeps precedence
        with capturing_warnings() as caught:
            for _ in range(3):
                warnings.warn("did not converge", UserWarning)
            warnings.warn("another  thing\n here", RuntimeWarning)
            warnings.warn("old", DeprecationWarning)
    assert warning_lines("lda@lee seed 0", caught) == [
        "lda@lee seed 0: UserWarning: did not converge (3 times)", "lda@lee seed 0: RuntimeWarning: another thing here"]


def test_scoring_names_each_metric_as_its_phase(make_random_corpus):
    from progress_listener import Recorder
    from topicbench.tasks.run.progress import listening

    recorder = Recorder()
    with listening(recorder):
        scored = run(make_random_corpus(1, n_documents=(30, 30), n_words=(25, 25)))
    scored.artifacts.remove()
    phases = [event[2] for event in recorder.events if event[0] == "phase"]
    assert phases[-len(METRICS):] == [f"scoring {name}" for name in METRICS]
    assert phases.index("fitting") < phases.index(f"scoring {METRICS[0]}")
