"""K matched by design: ``num_topics: {match: LABEL}`` fits a model at the K another model used on
each corpus and seed, and ``num_topics: [..]`` is one model entry per K."""

from __future__ import annotations

import pytest
from mlflow.tracking import MlflowClient

from topicbench.core.validation import InputError
from topicbench.flows.benchmark import run_benchmark
from topicbench.flows.benchmark_runs import matched_jobs
from topicbench.flows.config.model import BenchmarkConfig

ELDA = {"model": "elda", "settings": {"kappa": 2.0, "generator": "cooccurrence", "top_words": 10}}
NMF_MATCHED = {"model": "nmf", "num_topics": {"match": "elda"}, "settings": {"top_words": 10}}


def config_of(models, source="lee", **extra) -> BenchmarkConfig:
    return BenchmarkConfig.from_dict({"corpora": [{"name": "c", "source": str(source)}], "models": models,
                                      "seeds": [0, 1], **extra})


def test_a_k_grid_is_one_model_entry_per_k_labelled_as_a_search_labels_its_points():
    config = config_of([ELDA, {"model": "nmf", "num_topics": [20, 50, 100]},
                        {"model": "gensim_lda", "label": "lda", "num_topics": {"low": 10, "high": 30, "step": 10}}])
    assert [(m.name, m.num_topics) for m in config.models] == [
        ("elda", None), ("nmf[num_topics=20]", 20), ("nmf[num_topics=50]", 50), ("nmf[num_topics=100]", 100),
        ("lda[num_topics=10]", 10), ("lda[num_topics=20]", 20), ("lda[num_topics=30]", 30)]
    # the expanded config is what is recorded, and reads back the same
    assert BenchmarkConfig.from_dict(config.to_dict()).models == config.models


@pytest.mark.parametrize(("models", "message"), [
    ([ELDA, {"model": "nmf", "num_topics": {"match": "hdp"}}], r"\{match: hdp\} names no model of this config; its models: elda, nmf"),
    ([{"model": "nmf", "num_topics": 5}, {**ELDA, "num_topics": {"match": "nmf"}}],
     r"\{match: nmf\} needs a model that takes K, and elda chooses how many topics it uses from kappa"),
    ([ELDA, {"model": "nmf", "num_topics": {"match": "nmf"}}], "names the model itself"),
    ([ELDA, NMF_MATCHED, {"model": "gensim_lda", "num_topics": {"match": "nmf"}}],
     r"names a model whose K is matched itself \(to elda\); match elda directly"),
    ([ELDA, {"model": "nmf", "num_topics": {"matches": "elda"}}], r"num_topics must be .*\{match\}"),
    ([ELDA, {"model": "nmf", "num_topics": {"low": 10, "high": 30}}], r"num_topics must be .*\{low, high, step\}"),
    ([ELDA, {"model": "nmf", "num_topics": [1, 20]}], r"num_topics\[0\] must be an integer >= 2"),
])
def test_bad_matches_and_grids_fail_before_any_work_naming_the_problem(models, message):
    with pytest.raises(InputError, match=message):
        config_of(models)


def test_a_matched_run_takes_the_k_its_match_used_on_the_same_corpus_and_seed(tmp_path):
    """Without a store: E-LDA used 7 topics on seed 0, and its fit on seed 1 never finished."""
    from topicbench.core.preprocess import corpus_from_token_lists
    from topicbench.flows.benchmark_runs import Job

    config = config_of([ELDA, NMF_MATCHED])
    corpus = corpus_from_token_lists([["a", "b"], ["b", "c"]], name="c")
    fitted = [Job(config.corpora[0], corpus, config.models[0], seed, config) for seed in (0, 1)]
    jobs, missing = matched_jobs(config, {"c": (corpus, None)}, fitted, {fitted[0].key: 7.0})
    assert [(job.model.name, job.seed, job.model.num_topics, job.matched_to) for job in jobs] == [("nmf", 0, 7, "elda")]
    assert jobs[0].record()["num_topics"] == 7 and jobs[0].record()["num_topics_matched_to"] == "elda"
    assert len(missing) == 1 and missing[0].startswith("nmf@c seed 1: not fitted, as its K matches elda@c seed 1")


@pytest.mark.usefixtures("prefect_server")
def test_matched_fits_record_the_k_of_elda_per_seed(tiny_octis, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    config = BenchmarkConfig.from_dict({
        "experiment": "matched", "tracking_uri": uri, "seeds": [0, 1], "metrics": ["npmi", "topic_diversity"],
        "top_n": [5, 10], "corpora": [{"name": "tiny", "source": str(tiny_octis), "preprocessing": {"preprocessed": True}}],
        "models": [ELDA, NMF_MATCHED],
    })
    state = run_benchmark(config)
    assert state.is_completed(), state.message
    client = MlflowClient(uri)
    experiment_id = client.get_experiment_by_name("matched").experiment_id
    runs = client.search_runs([experiment_id], filter_string="tags.`topicbench.role` = 'fit'")
    by_model = {(r.data.tags["model"], r.data.tags["seed"]): r for r in runs}
    assert len(runs) == 4 and {r.info.status for r in runs} == {"FINISHED"}
    for seed in ("0", "1"):
        elda, nmf = by_model[("elda", seed)], by_model[("nmf", seed)]
        assert nmf.data.params["num_topics"] == str(int(elda.data.metrics["num_topics_used"]))
        assert nmf.data.metrics["num_topics_used"] == elda.data.metrics["num_topics_used"]
        assert nmf.data.params["num_topics_matched_to"] == "elda"
    # a second run resumes: nothing is refitted, the matched runs included
    again = run_benchmark(config)
    assert again.is_completed() and again.result()["skipped_finished"] == 4
