"""core/metrics/scoring.py::score: applicability decided once from the needs, the top-N policy,
count once / score many, bad input still raising."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from metrics_helpers import spy_on_counting
from topicbench.core.metrics import coherence as coherence_module
from topicbench.core.metrics.context import MetricContext, MetricInputs, MetricRun, MetricSettings
from topicbench.core.metrics.needs import NEEDS, MetricNotApplicable
from topicbench.core.metrics.registry import IN_REFERENCE_NEEDS, METRICS
from topicbench.core.metrics.scoring import score, scored_top_n
from topicbench.core.output import TopicModelOutput
from topicbench.core.preprocess import corpus_from_token_lists
from topicbench.core.validation import InputError

THEMES = [
    "budget tax spending deficit revenue cut economy jobs",
    "war troops iraq military soldiers defense security army",
    "school teacher education student college learning class exam",
    "health care hospital doctor patient insurance medicine clinic",
]
COHERENCE = ["umass", "uci", "npmi", "cv"]


@pytest.fixture(scope="module")
def corpus():
    rng = random.Random(0)
    documents = []
    for d in range(40):
        words = THEMES[d % 4].split() * 2 + THEMES[(d + 1) % 4].split()[:2]
        rng.shuffle(words)
        documents.append(words)
    return corpus_from_token_lists(documents, name="themes")


def make_output(corpus, topics, *, model="m", token_topics=True):
    """An output over ``corpus`` with the given topics (each token in topic d % K)."""
    k = len(topics)
    rng = np.random.default_rng(k)  # uneven phi and theta, so that RandK and the label split matter
    phi = rng.dirichlet(np.ones(corpus.n_words), size=k)
    theta = rng.dirichlet(np.ones(k), size=corpus.n_documents).T
    tokens = corpus.token_documents % k if token_topics else None
    return TopicModelOutput(model=model, vocabulary=corpus.vocabulary, topics=[list(t) for t in topics],
                            topic_word_matrix=phi, topic_document_matrix=theta, token_topics=tokens)


def theme_topics(n_words=8):
    return [theme.split()[:n_words] for theme in THEMES]


def context_of(corpus, top_n=(5, 8), **inputs):
    return MetricContext(MetricInputs(corpus=corpus, settings=MetricSettings(top_n=top_n), **inputs))


@pytest.fixture
def count_builds(monkeypatch):
    return spy_on_counting(monkeypatch)


def test_counting_happens_once_per_window_for_two_outputs(corpus, count_builds):
    context = context_of(corpus)
    first = make_output(corpus, theme_topics(), model="first")
    second = make_output(corpus, theme_topics()[::-1], model="second")  # the same words, other order
    scores_first = score(first, context, COHERENCE, seed=0).values
    assert sorted(count_builds, key=str) == sorted({None, 10, 110}, key=str)  # UMass, UCI=NPMI, C_V
    scores_second = score(second, context, COHERENCE, seed=1).values
    assert len(count_builds) == 3  # the second output is scored from the first one's counts
    fresh = score(second, context_of(corpus), COHERENCE, seed=1).values
    assert scores_second == fresh  # reuse changes no value
    direct = coherence_module.coherence(theme_topics(), corpus, ["umass"], (5, 8))["umass"].as_dict()
    assert scores_first["umass@5"] == direct["umass@5"]


def test_counting_beforehand_covers_every_output(corpus, count_builds):
    first = make_output(corpus, theme_topics()[:2], model="first")
    second = make_output(corpus, theme_topics()[2:], model="second")
    context = context_of(corpus)
    context.count_for([first.topics, second.topics])
    counted = len(count_builds)
    score(first, context, COHERENCE, seed=0)
    score(second, context, COHERENCE, seed=0)
    assert len(count_builds) == counted


def test_metrics_that_do_not_apply_are_skipped_with_their_reason(corpus):
    output = make_output(corpus, theme_topics(), model="bare", token_topics=False)
    names = ["log_likelihood_own", "log_likelihood_randk", "classification", "clustering",
             "perplexity", "heldout_log_likelihood", "topic_diversity"]
    scores = score(output, context_of(corpus), names, seed=0)
    assert set(scores.values) == {"topic_diversity@5", "topic_diversity@8"}
    assert scores.skipped == {
        "log_likelihood_own": "bare assigns no topics to tokens",
        "log_likelihood_randk": "bare assigns no topics to tokens",
        "classification": "the corpus has no labels",
        "clustering": "the corpus has no labels",
        "perplexity": "no held-out split",
        "heldout_log_likelihood": "no held-out split",
    }
    heldout = corpus.subset(range(10))
    with_split = score(output, context_of(corpus, heldout_corpus=heldout), ["perplexity"], seed=0)
    assert with_split.skipped == {"perplexity": "bare cannot infer held-out documents"}
    theta = np.full((4, 10), 0.25)
    assert "perplexity" in score(output, context_of(corpus, heldout_corpus=heldout), ["perplexity"],
                                 seed=0, heldout_theta=theta).values


def test_short_topics_are_scored_at_the_n_that_fit(corpus):
    output = make_output(corpus, [words[:6] for words in theme_topics()], model="short")
    scores = score(output, context_of(corpus, top_n=(5, 8, 10)), ["npmi", "topic_diversity", "inverted_rbo"], seed=0)
    assert set(scores.values) == {"npmi@5", "topic_diversity@5"}
    assert scores.skipped == {
        "top_n 8,10": "short's shortest topic has 6 words",
        "inverted_rbo": "top-N = 10 is larger than topic 0's word list (6 words): "
                        "lower N or give each topic at least 10 words",
    }
    assert scored_top_n((5, 8, 10), output.topics) == ((5,), (8, 10))
    tiny = make_output(corpus, [words[:3] for words in theme_topics()], model="tiny")
    none_fit = score(tiny, context_of(corpus), ["umass", "topic_diversity"], seed=0)
    assert none_fit.values == {}
    assert none_fit.skipped == {"top_n 5,8": "tiny's shortest topic has 3 words",
                                "umass": "tiny's shortest topic has 3 words",
                                "topic_diversity": "tiny's shortest topic has 3 words"}


def test_a_topic_word_the_reference_never_uses_skips_coherence_only(corpus):
    reference = corpus.subset([d for d in range(corpus.n_documents) if d % 4 != 3])  # no health documents
    output = make_output(corpus, theme_topics(), model="m")
    scores = score(output, context_of(corpus, reference=reference), ["umass", "topic_diversity"], seed=0)
    assert "topic_diversity@8" in scores.values and "umass@5" not in scores.values
    assert scores.skipped["umass"].startswith("topic 3: the word 'hospital' does not occur in the reference corpus")
    drop = MetricContext(MetricInputs(corpus=corpus, reference=reference,
                                      settings=MetricSettings(top_n=(5, 8), oov="drop")))
    assert "topic 3 keeps 2 words after dropping 6" in score(output, drop, ["umass"], seed=0).skipped["umass"]


def test_bad_input_still_raises(corpus):
    output = make_output(corpus, theme_topics())
    with pytest.raises(InputError, match="Unknown metric 'coherence'"):
        score(output, context_of(corpus), ["coherence"], seed=0)
    negative = dataclasses.replace(output, topic_word_matrix=-output.topic_word_matrix)
    with pytest.raises(InputError, match="negative"):
        score(negative, context_of(corpus), ["log_likelihood_own"], seed=0)
    with pytest.raises(InputError, match="smoothing must be one of"):
        score(output, MetricContext(MetricInputs(corpus=corpus, settings=MetricSettings(top_n=(5,), smoothing="x"))),
              ["npmi"], seed=0)


def test_the_same_seed_gives_the_same_scores(corpus):
    output = make_output(corpus, theme_topics())
    labelled = context_of(corpus, labels=tuple(f"theme{d % 4}" for d in range(corpus.n_documents)))
    names = ["log_likelihood_randk", "classification"]
    assert score(output, labelled, names, seed=3) == score(output, labelled, names, seed=3)
    assert score(output, labelled, names, seed=3).values != score(output, labelled, names, seed=4).values


def test_inputs_are_frozen_and_every_need_is_checked(corpus):
    inputs = MetricInputs(corpus=corpus)
    with pytest.raises(dataclasses.FrozenInstanceError):
        inputs.corpus = None
    assert {need for name in METRICS for need in METRICS.get(name).needs} | set(IN_REFERENCE_NEEDS) == set(NEEDS)
    single = make_output(corpus, [list(corpus.vocabulary[:12])], model="one")
    with pytest.raises(MetricNotApplicable, match="needs two or more topics") as error:
        METRICS.get("inverted_rbo")(single, MetricRun(MetricContext(inputs), rng=np.random.default_rng(0)))
    assert error.value.reason == "one has a single topic" and error.value.metric == "inverted_rbo"


def test_a_corpus_of_one_label_skips_the_label_metrics_with_the_reason(corpus):
    # one class has nothing to classify or cluster: the corpus, not bad input, so the run goes on
    output = make_output(corpus, theme_topics())
    one_label = context_of(corpus, labels=["same"] * corpus.n_documents)
    scores, skipped = score(output, one_label, ["classification", "topic_diversity"], seed=0)
    assert skipped["classification"] == "the corpus has a single label"
    assert not any(key.startswith("classification") for key in scores) and "topic_diversity@5" in scores
    two_labels = context_of(corpus, labels=[str(d % 2) for d in range(corpus.n_documents)])
    scores, skipped = score(output, two_labels, ["classification"], seed=0)
    assert "classification" not in skipped and 0 <= scores["classification_accuracy"] <= 1
