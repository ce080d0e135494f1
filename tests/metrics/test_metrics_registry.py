"""The metrics registry: every metric runs on a real model output through one calling convention."""

from __future__ import annotations

import dataclasses
import doctest
import importlib

import numpy as np

from topicbench.core.metrics.llm_judging import JudgeReply, JudgeSettings, shown_words
import pytest

from topicbench.core.constants import COHERENCE_TOP_N
from topicbench.core.elda.model import ELDA
from topicbench.core.io import load_corpus
from topicbench.core.metrics.coherence import coherence, count_reference
from topicbench.core.metrics.context import MetricContext, MetricInputs, MetricRun
from topicbench.core.metrics.needs import MetricNotApplicable
from topicbench.core.metrics.registry import (
    METRICS,
    MetricSpec,
    best_index,
    metric_for_key,
)
from topicbench.core.metrics.scoring import score
from topicbench.core.validation import InputError

METRIC_MODULES = ("coherence", "coherence_measures", "coherence_in_reference", "counts", "embedding", "diversity", "posterior", "heldout", "labels", "stats", "registry", "prevalence",
                  "context", "needs", "scoring", "stability")


@pytest.fixture(scope="module")
def lee_run():
    corpus = load_corpus()
    output = ELDA(kappa=1.5, generator="raw_umass").fit(corpus).solution_.to_output(seed=0)
    rng = np.random.default_rng(0)
    labels = tuple(rng.choice(["sport", "politics", "world"], corpus.n_documents))
    heldout = corpus.subset(range(40))
    context = MetricContext(MetricInputs(
        corpus=corpus,
        word_vectors=rng.normal(size=(corpus.n_words, 16)),  # stand-ins: the registry, not the model
        vector_vocabulary=corpus.vocabulary,
        labels=labels,
        heldout_corpus=heldout,
    ), judge=_StandInJudge(), judge_settings=JudgeSettings(max_topics=5, rating_samples=1, intrusion_draws=1))
    return corpus, output, MetricRun(context, rng=rng)


class _StandInJudge:
    """Answers like a judge (stand-in: the registry is tested, not an LLM): rating 3, the first
    shown word as the intruder, a category, a fit and a choice that follow the prompt's length."""

    def ask(self, requests):
        return [self._answer(r) for r in requests]

    @staticmethod
    def _answer(request):
        shown = request.messages[-1][1]
        if request.task == "label":
            return JudgeReply("News")
        if request.task == "fit":
            return JudgeReply(str(1 + len(shown) % 5))
        if request.task == "rank":
            return JudgeReply("A" if len(shown.split("DOCUMENT_B")[-1]) % 2 else "B")
        return JudgeReply("3") if request.task == "rating" else JudgeReply(shown_words(request)[0])


def expected_keys(name, context):
    spec = METRICS.get(name)
    if spec.outputs:
        return set(spec.outputs)
    if name == "inverted_rbo":
        return {f"inverted_rbo@{context.settings.rbo_top_n}"}
    if name in ("umass", "uci", "npmi", "cv", "embedding_pairwise", "embedding_centroid", "topic_diversity"):
        return {f"{name}@{n}" for n in context.top_n}
    return {name}


def test_every_metric_runs_on_an_elda_output(lee_run):
    corpus, output, context = lee_run
    context = dataclasses.replace(context, heldout_doc_topic=output.topic_document_matrix[:, :40])
    for name in METRICS:
        scores = METRICS.get(name)(output, context)
        assert set(scores) == expected_keys(name, context), name
        assert all(isinstance(v, float) and np.isfinite(v) for v in scores.values()), (name, scores)
        for key in scores:
            assert metric_for_key(key) is METRICS.get(name)
    scored = score(output, context.context, METRICS.names(), seed=0, heldout_theta=context.heldout_doc_topic)
    everything, skipped = scored  # unpacks as it always has
    topic_scores = scored.topic_scores
    assert not skipped
    assert len(everything) == sum(len(expected_keys(name, context)) for name in METRICS)
    # coherence through the registry is the coherence function's value
    direct = coherence(output.topics, corpus, ["npmi"], COHERENCE_TOP_N)["npmi"].as_dict()
    assert {k: everything[k] for k in direct} == direct
    assert everything["log_likelihood_randk"] < everything["log_likelihood_own"]
    # each topic's own scores: every per-topic metric's, one per topic, averaging to its score
    # (the LLM judges' over the topics they judged)
    per_topic = {"umass", "uci", "npmi", "cv", "embedding_pairwise", "embedding_centroid", "llm_rating", "llm_intrusion",
                 "llm_fit", "llm_rank"}
    assert set(topic_scores) == {key for key in everything if key.split("@")[0] in per_topic}
    for key, values in topic_scores.items():
        assert len(values) == output.n_topics, key
        assert np.nanmean(values) == pytest.approx(everything[key], rel=1e-12, abs=1e-12), key


def test_the_counts_cache_is_shared_across_outputs(lee_run):
    corpus, output, context = lee_run
    counts = count_reference(corpus, [output.topics], ("npmi", "cv"))
    shared = MetricContext(context.inputs, counts=counts)
    before = dict(counts)
    METRICS.get("npmi")(output, MetricRun(shared, rng=np.random.default_rng(0)))
    METRICS.get("cv")(output, MetricRun(shared, rng=np.random.default_rng(1)))
    assert all(counts[key] is before[key] for key in before)  # reused, not rebuilt


def test_needs_are_checked_with_clear_messages(lee_run):
    corpus, output, context = lee_run
    bare = MetricContext()
    with pytest.raises(MetricNotApplicable, match="metric 'npmi' needs a reference corpus"):
        METRICS.get("npmi")(output, bare)
    with pytest.raises(MetricNotApplicable, match="metric 'embedding_centroid' needs word vectors"):
        METRICS.get("embedding_centroid")(output, bare)
    with pytest.raises(MetricNotApplicable, match="needs a random generator"):
        METRICS.get("log_likelihood_randk")(output, MetricContext(MetricInputs(corpus=corpus)))
    with pytest.raises(MetricNotApplicable, match="token assignments, which the 'x' output does not have"):
        METRICS.get("log_likelihood_own")(dataclasses.replace(output, model="x", token_topics=None), context)
    with pytest.raises(MetricNotApplicable, match="needs held-out documents"):
        METRICS.get("perplexity")(output, context)
    with pytest.raises(MetricNotApplicable, match="document labels"):
        METRICS.get("clustering")(output, MetricContext(MetricInputs(corpus=corpus)))
    assert not issubclass(MetricNotApplicable, InputError)  # "does not apply" is not bad input
    with pytest.raises(InputError, match=r"Unknown metric 'coherence'\. Available: classification, clustering, cv"):
        METRICS.get("coherence")
    with pytest.raises(ValueError, match="needs unknown context fields"):
        MetricSpec("bad", lambda o, c: {}, True, needs=("gpu",))


def test_directions_mark_the_best_value():
    assert best_index("npmi@10", [0.1, 0.3, float("nan")]) == 1
    assert best_index("perplexity", [900.0, 700.0, 800.0]) == 1
    assert best_index("classification_macro_f1", [0.5, 0.7]) == 1
    assert best_index("umass@5", [float("nan")]) is None
    assert METRICS.get("perplexity").higher_is_better is False
    assert all(METRICS.get(name).higher_is_better for name in METRICS if name != "perplexity")
    with pytest.raises(InputError, match="no metric returns the score 'bleu'"):
        metric_for_key("bleu")


@pytest.mark.parametrize("module", METRIC_MODULES)
def test_docstring_examples(module):
    imported = importlib.import_module(f"topicbench.core.metrics.{module}")
    result = doctest.testmod(imported, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
