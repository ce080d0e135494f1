"""The benchmark flow end to end on a tiny corpus against a temporary MLflow store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from topicbench.baselines.base import TopicModel
from topicbench.baselines.registry import MODELS
from topicbench.flows.benchmark import run_benchmark
from topicbench.flows.config.model import BenchmarkConfig
from topicbench.core.validation import InputError
from topicbench.tasks.store.tracking_error import TrackingError


pytestmark = pytest.mark.usefixtures("prefect_server")


class AlwaysFails(TopicModel):
    """A model whose fit raises: used to check failure isolation."""

    name = "always_fails"
    defaults = {}

    def _fit(self, corpus):
        raise RuntimeError("injected failure for the test")


@pytest.fixture
def failing_model():
    """Registers 'always_fails' for one test only (the contract tests must never see it)."""
    MODELS.register("always_fails", AlwaysFails)
    yield
    MODELS._entries.pop("always_fails", None)


def make_config(tiny_octis, tracking_uri, models, **extra):
    return BenchmarkConfig.from_dict({
        "experiment": "tiny",
        "corpora": [{"name": "tiny", "source": str(tiny_octis), "preprocessing": {"preprocessed": True}}],
        "models": models,
        "seeds": [0, 1],
        "metrics": ["umass", "npmi", "topic_diversity", "log_likelihood_own", "log_likelihood_randk"],
        "top_n": [5, 10],
        "tracking_uri": tracking_uri,
        **extra,
    })


ELDA = {"model": "elda", "settings": {"kappa": 2.0, "generator": "cooccurrence", "top_words": 10}}
GENSIM = {"model": "gensim_lda", "num_topics": 4, "settings": {"passes": 2, "iterations": 20, "top_words": 10}}


def fit_runs(client, experiment="tiny"):
    experiment_id = client.get_experiment_by_name(experiment).experiment_id
    return client.search_runs([experiment_id], filter_string="tags.`topicbench.role` = 'fit'", max_results=1000)


def test_flow_end_to_end_with_resume(tiny_octis, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = make_config(tiny_octis, uri, [ELDA, GENSIM])
    state = run_benchmark(config)
    assert state.is_completed(), state.message
    client = MlflowClient(uri)
    runs = fit_runs(client)
    assert len(runs) == 4 and {r.info.status for r in runs} == {"FINISHED"}
    by_model = {(r.data.tags["model"], r.data.tags["seed"]): r for r in runs}
    elda = by_model[("elda", "0")]
    # params: everything needed to repeat the run
    params = elda.data.params
    assert params["corpus_fingerprint"] and params["seed"] == "0" and params["settings.kappa"] == "2.0"
    assert params["preprocessing.preprocessed"] == "True"
    assert "version.numpy" in params and "git_commit" in params
    # what was asked (the model's get_params()) and what its fit resolved, as named fields
    assert params["num_topics"] == "None" and params["settings.algorithm"] == "exact"
    assert int(params["resolved.budget_"]) == int(2.0 * int(params["corpus_documents"]))
    gensim = by_model[("gensim_lda", "1")].data.params
    assert gensim["num_topics"] == "4" and gensim["seed"] == "1" and gensim["resolved.num_topics_"] == "4"
    assert json.loads(gensim["resolved.alpha_"]) == [0.1] * 4 and float(gensim["resolved.eta_"]) == pytest.approx(0.01)
    # metrics: coherence per measure and N (stored as name_topN), fit time, memory
    metrics = elda.data.metrics
    for key in ("umass_top5", "umass_top10", "npmi_top10", "topic_diversity_top10", "fit_seconds", "peak_memory_mb",
                "log_likelihood_own", "log_likelihood_randk"):
        assert key in metrics, key
    assert metrics["log_likelihood_own"] > metrics["log_likelihood_randk"]
    # artifacts: topics, the output's matrices, token assignments
    artifacts = {a.path for a in client.list_artifacts(elda.info.run_id)}
    assert {"topics.json", "topics.csv", "output"} <= artifacts
    # beside the database, not in ./mlruns of whatever folder the flow ran in
    assert (tmp_path / "mlartifacts" / "tiny" / elda.info.run_id / "artifacts" / "topics.json").is_file()
    topics = json.loads(Path(client.download_artifacts(elda.info.run_id, "topics.json")).read_text())
    assert topics and all(t["words"] for t in topics)
    # the corpus as an MLflow input with our fingerprint as its digest
    inputs = client.get_run(elda.info.run_id).inputs.dataset_inputs
    assert inputs and inputs[0].dataset.name == "tiny" and params["corpus_fingerprint"].startswith(inputs[0].dataset.digest)
    # tags to filter by in the UI
    assert elda.data.tags["corpus"] == "tiny" and elda.data.tags["experiment"] == "tiny"
    parents = client.search_runs([elda.info.experiment_id], filter_string="tags.`topicbench.role` = 'benchmark'")
    assert len(parents) == 1 and elda.data.tags["mlflow.parentRunId"] == parents[0].info.run_id

    # resume: a re-run skips the four finished runs and adds none
    again = run_benchmark(config)
    assert again.is_completed()
    summary = again.result()
    assert summary["skipped_finished"] == 4 and summary["logged"] == []
    assert len(fit_runs(client)) == 4


def test_a_failing_model_is_recorded_and_the_others_complete(tiny_octis, tmp_path, failing_model):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = make_config(tiny_octis, uri, [ELDA, {"model": "always_fails", "num_topics": 3}])
    state = run_benchmark(config)
    assert state.is_failed()
    assert "2 of 4 runs failed" in state.message and "always_fails@tiny seed 0" in state.message
    runs = fit_runs(MlflowClient(uri))
    statuses = {(r.data.tags["model"], r.data.tags["seed"]): r.info.status for r in runs}
    assert statuses == {("elda", "0"): "FINISHED", ("elda", "1"): "FINISHED",
                        ("always_fails", "0"): "FAILED", ("always_fails", "1"): "FAILED"}
    failed = [r for r in runs if r.info.status == "FAILED"][0]
    assert "injected failure" in failed.data.tags["topicbench.error"]


def test_a_num_topics_beyond_the_corpus_fails_before_any_fit(tiny_octis, tmp_path):
    """K = 5000 on 40 documents of a few dozen words: no model can fit it (was: every seed fitted
    5000 topics and scored them)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = make_config(tiny_octis, uri, [ELDA, {**GENSIM, "num_topics": 5000}])
    with pytest.raises(InputError, match=r"model 'gensim_lda': num_topics: K = 5000 topics is beyond corpus 'tiny', "
                                         r"which has 40 documents x \d+ words"):
        run_benchmark(config)
    assert fit_runs(MlflowClient(uri)) == []


def test_an_unreachable_tracking_server_fails_before_any_work(tiny_octis, tmp_path):
    config = make_config(tiny_octis, "http://127.0.0.1:9", [ELDA])
    with pytest.raises(TrackingError, match="tracking server at http://127.0.0.1:9 is unreachable"):
        run_benchmark(config)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"models": [{"model": "lda"}]}, "Unknown model 'lda'. Available:"),
        ({"metrics": ["coherence"]}, "Unknown metric 'coherence'"),
        ({"models": [{"model": "gensim_lda", "settings": {"alphas": 1}}]}, "has no setting 'alphas'"),
        ({"seeds": []}, "seeds is empty: list at least one"),
        ({"colour": "blue"}, "has no setting 'colour'"),
    ],
)
def test_config_errors_name_the_problem(tiny_octis, tmp_path, change, message):
    data = make_config(tiny_octis, "sqlite:///x.db", [ELDA]).to_dict()
    data.update(change)
    with pytest.raises(InputError, match=message):
        BenchmarkConfig.from_dict(data)


def test_config_from_yaml(tmp_path, tiny_octis):
    path = tmp_path / "bench.yaml"
    path.write_text(
        f"experiment: y\ncorpora:\n  - name: t\n    source: {tiny_octis}\n    preprocessing: {{preprocessed: true}}\n"
        "models:\n  - model: elda\nseeds: [3]\n"
    )
    config = BenchmarkConfig.from_yaml(path)
    assert config.seeds == (3,) and config.models[0].model == "elda"
    assert config.fingerprint() == BenchmarkConfig.from_yaml(path).fingerprint()
    path.write_text("experiment: [unclosed")
    with pytest.raises(InputError, match="not valid YAML"):
        BenchmarkConfig.from_yaml(path)


def test_topics_shorter_than_the_largest_n_are_scored_on_the_ns_that_fit(tiny_octis):
    import numpy as np

    from topicbench.core.io import load_corpus
    from topicbench.core.output import TopicModelOutput
    from topicbench.core.preprocess import PreprocessConfig
    from topicbench.core.metrics.scoring import score
    from topicbench.tasks.run.metric_context import build_metric_context

    corpus = load_corpus(tiny_octis, PreprocessConfig(preprocessed=True))
    words = list(corpus.vocabulary)
    output = TopicModelOutput(
        model="short", vocabulary=corpus.vocabulary, topics=[words[:7], words[7:14]],
        topic_word_matrix=np.full((2, corpus.n_words), 1 / corpus.n_words),
        topic_document_matrix=np.full((2, corpus.n_documents), 0.5),
    )
    context = build_metric_context(corpus, ["umass", "npmi", "log_likelihood_own"], (5, 10))
    scores, skipped = score(output, context, ["umass", "npmi", "log_likelihood_own"], seed=0)
    assert "umass@5" in scores and "npmi@5" in scores and "umass@10" not in scores
    assert skipped["top_n 10"] == "short's shortest topic has 7 words"
    assert "assigns no topics to tokens" in skipped["log_likelihood_own"]


def test_document_embeddings_are_computed_once_per_corpus_before_the_fits(tiny_octis, tmp_path, monkeypatch):
    """Models that read document embeddings run concurrently; the flow embeds each corpus once, first."""
    from topicbench.baselines import embeddings
    from topicbench.baselines.gensim_lda import GensimLDA

    events = []

    def recording_embeddings(corpus, *, model_path=None, **_):
        events.append(("embed", corpus.n_documents, model_path))

    class EmbeddingReader(GensimLDA):
        name = "embedding_reader"
        defaults = {**GensimLDA.defaults, "embedding_model": None}
        uses_document_embeddings = True

        def _fit(self, corpus):
            events.append(("fit", self.random_state))
            self.settings = {k: v for k, v in self.settings.items() if k != "embedding_model"}
            return super()._fit(corpus)

    monkeypatch.setattr(embeddings, "document_embeddings", recording_embeddings)
    MODELS.register("embedding_reader", EmbeddingReader)
    try:
        reader = {"model": "embedding_reader", "num_topics": 3, "settings": {"passes": 1, "iterations": 10, "top_words": 10}}
        config = make_config(tiny_octis, f"sqlite:///{tmp_path / 'mlflow.db'}", [ELDA, reader, {**reader, "label": "reader_b"}])
        state = run_benchmark(config)
    finally:
        MODELS._entries.pop("embedding_reader", None)
    assert state.is_completed(), state.message
    embeds = [e for e in events if e[0] == "embed"]
    assert len(embeds) == 1 and embeds[0][2] is None  # one corpus, one embedding model
    assert events.index(embeds[0]) < min(i for i, e in enumerate(events) if e[0] == "fit")
    assert sum(e[0] == "fit" for e in events) == 4  # 2 labels x 2 seeds


def test_artifacts_of_a_sqlite_store_live_beside_the_database(tmp_path):
    from topicbench.core.io import file_name_for
    from topicbench.tasks.store.tracking import local_artifact_location

    location = local_artifact_location(f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}", "paper run")
    assert location == (tmp_path / "store" / "mlartifacts" / file_name_for("paper run")).resolve().as_uri()
    assert location.rsplit("/", 1)[-1].startswith("paper_run-")
    # an experiment named like a path stays one folder beside the database
    escaped = local_artifact_location(f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}", "../../x")
    assert escaped.startswith((tmp_path / "store" / "mlartifacts").resolve().as_uri() + "/")
    assert local_artifact_location("http://127.0.0.1:5000", "paper") is None  # the server decides
    assert local_artifact_location("sqlite:///:memory:", "paper") is None


def test_finished_futures_are_handed_over_one_by_one_and_forgotten():
    """The flow keeps no reference to a fit once it is yielded, so its output can be freed."""
    import concurrent.futures
    import gc
    import weakref

    from topicbench.flows.benchmark import finished_one_by_one

    class Output:  # stands in for a large model output
        pass

    class FakePrefectFuture:
        def __init__(self):
            self.wrapped_future = concurrent.futures.Future()

    first, second = FakePrefectFuture(), FakePrefectFuture()
    futures = {first: "first job", second: "second job"}
    second.wrapped_future.set_result(Output())
    watched = weakref.ref(second.wrapped_future.result())
    order = finished_one_by_one(futures, poll_seconds=0.01)
    future, job = next(order)
    assert (future, job) == (second, "second job") and list(futures) == [first]  # finished first, handed over
    del future, second
    gc.collect()
    assert watched() is None  # nothing in the flow's bookkeeping keeps the output alive
    first.wrapped_future.set_result(Output())
    assert next(order)[1] == "first job" and futures == {}


def logged_scores(uri: str) -> dict:
    """{(model, seed): {metric: value}} of the scores the fit runs logged (fit time and memory aside)."""
    unscored = {"peak_memory_mb", "num_topics_used", "vocabulary_size"}  # what the fit ran on, not a score
    return {
        (r.data.tags["model"], r.data.tags["seed"]): {
            k: v for k, v in r.data.metrics.items() if k not in unscored and not k.endswith("_seconds")
        }
        for r in fit_runs(MlflowClient(uri))
    }


def scores_in_this_process(config) -> dict:
    """What the flow logged before scoring moved to the workers: each output fitted and scored here,
    with one context per corpus, the metrics under their tracked names and the output's numbers."""
    from topicbench.core.io import load_corpus
    from topicbench.core.preprocess import PreprocessConfig
    from topicbench.tasks.run.fit import fit_model
    from topicbench.core.metrics.scoring import score
    from topicbench.tasks.run.metric_context import build_metric_context
    from topicbench.tasks.store.fit_record import tracked_name

    spec = config.corpora[0]
    corpus = load_corpus(spec.source, PreprocessConfig(**spec.preprocessing))
    context = build_metric_context(corpus, config.metrics, config.top_n)
    expected = {}
    for model in config.models:
        for seed in config.seeds:
            fitted = fit_model.fn(corpus, model.model, model.num_topics, model.settings, seed)
            values, _ = score(fitted.output, context, config.metrics, seed=seed)
            numbers = {k: v for k, v in fitted.output.extra.items()
                       if isinstance(v, (int, float)) and not isinstance(v, bool) and not k.endswith("_seconds")}
            expected[(model.model, str(seed))] = {**numbers, **{tracked_name(k): v for k, v in values.items()}}
    return expected


def test_outputs_are_scored_where_they_were_fitted_and_the_flow_logs_the_same_scores(tiny_octis, tmp_path, monkeypatch):
    """In process and on a local Dask cluster, the runs hold the scores of scoring in the flow
    process (as before), no E-LDA matrix was ever made dense, and no artifact folder is left."""
    import tempfile

    from topicbench.core.topic_word import ConstantPlusSparse

    def refuse(*args, **kwargs):
        raise AssertionError("an E-LDA topic-word matrix was made dense during the benchmark")

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    monkeypatch.setenv("TMPDIR", str(temporary))  # the Dask worker processes' temporary folder too
    in_process = make_config(tiny_octis, f"sqlite:///{tmp_path / 'one' / 'mlflow.db'}", [ELDA], seeds=[0])
    expected = scores_in_this_process(in_process)
    monkeypatch.setattr(ConstantPlusSparse, "toarray", refuse)
    monkeypatch.setattr(ConstantPlusSparse, "__array__", refuse)
    assert run_benchmark(in_process).is_completed()
    on_dask = in_process.replace(tracking_uri=f"sqlite:///{tmp_path / 'two' / 'mlflow.db'}", workers=2)
    assert run_benchmark(on_dask).is_completed()
    for uri in (in_process.tracking_uri, on_dask.tracking_uri):
        logged = logged_scores(uri)
        assert set(logged) == set(expected)
        for key, values in expected.items():
            assert logged[key].keys() == values.keys(), key
            for name, value in values.items():
                assert logged[key][name] == pytest.approx(value, rel=1e-12), (uri, key, name)
    client = MlflowClient(on_dask.tracking_uri)
    run = fit_runs(client)[0]
    assert run.data.tags["topicbench.fitted_on.dask_worker"].startswith("tcp://")
    assert float(run.data.tags["topicbench.scoring_seconds"]) > 0
    matrices = Path(client.download_artifacts(run.info.run_id, "output/matrices.npz", str(tmp_path / "download")))
    import numpy as np

    with np.load(matrices) as arrays:
        assert "topic_word_matrix.row_constants" in arrays.files and "topic_word_matrix" not in arrays.files
    assert not [p for p in temporary.iterdir() if p.name.startswith("topicbench-run-")]
