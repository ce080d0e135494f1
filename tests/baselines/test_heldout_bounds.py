"""Every registered model x held-out metric on a corpus with a test split: each value is either
not applicable, with its reason, or inside its bound (perplexity no worse than the uniform model
over the V words, per-word log-likelihood no lower than -log V), and a probability model gives
no observed test token a probability of 0 (which the held-out likelihood would floor at 1e-100,
log -230 a token: the 10^10 perplexities of issue 47).

The corpus is drawn from a known LDA; its vocabulary covers both partitions, so the test split
holds words the training split never uses (the case that gave HDP's φ its zeros). The settings
below only make the fits small.
"""

from __future__ import annotations

import numpy as np
import pytest

from topicbench.baselines.registry import MODELS
from topicbench.core.constants import PROBABILITY_FLOOR
from topicbench.core.metrics.context import MetricContext, MetricInputs
from topicbench.core.metrics.heldout import heldout_log_likelihood
from topicbench.core.metrics.scoring import score
from topicbench.core.metrics.validity import value_problem
from synthetic_lda import lee_corpus, small_synthetic, synthetic_words  # noqa: F401 (fixtures used by name)

HELDOUT_METRICS = ("perplexity", "heldout_log_likelihood")

#: Small settings per model; the models that embed documents or train a network are slow.
QUICK_SETTINGS = {
    "elda": {}, "gensim_lda": {"passes": 2, "iterations": 50}, "gibbs_lda": {"iterations": 50},
    "hdp": {"iterations": 50}, "nmf": {}, "lsi": {},
    "prodlda": {"epochs": 5}, "etm": {"epochs": 5}, "ctm": {"epochs": 5}, "fastopic": {"epochs": 10},
    "bertopic": {}, "keynmf": {}, "s3": {}, "gmm": {},
}
SLOW = {"prodlda", "etm", "ctm", "fastopic", "bertopic", "keynmf", "s3", "gmm"}

#: Models whose held-out likelihood applies: probability models of words that infer new documents.
PROBABILITY_MODELS = {"gensim_lda", "gibbs_lda", "hdp", "prodlda", "etm", "ctm", "fastopic"}

NUM_TOPICS, SEED, TRAIN_DOCUMENTS = 5, 3, 240


def test_every_registered_model_is_walked():
    ours = {name for name in MODELS.builtin_names() if MODELS.get(name).__module__.startswith("topicbench.baselines.")
            and not getattr(MODELS.get(name), "asks_llm", False)}
    assert ours == set(QUICK_SETTINGS)
    # a model says it is not a probability model exactly where the held-out metrics do not apply
    declared = {name for name in ours if not MODELS.get(name).not_a_probability_model}
    assert declared - {"elda"} == PROBABILITY_MODELS  # E-LDA: a probability model that infers no new documents


@pytest.fixture(scope="module")
def split(small_synthetic):
    corpus = small_synthetic.corpus
    train = corpus.subset(range(TRAIN_DOCUMENTS), name="synthetic[train]")
    test = corpus.subset(range(TRAIN_DOCUMENTS, corpus.n_documents), name="synthetic[test]")
    in_train = np.asarray(train.doc_term.sum(axis=0)).ravel() > 0
    in_test = np.asarray(test.doc_term.sum(axis=0)).ravel() > 0
    assert (in_test & ~in_train).any(), "the test split must hold a word the training split never uses"
    return train, test


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name
                                  for name in sorted(QUICK_SETTINGS)])
def test_each_heldout_value_is_not_applicable_or_inside_its_bound(name, split):
    train, test = split
    model_class = MODELS.get(name)
    model = model_class(None if model_class.topics_decided_by else NUM_TOPICS, random_state=SEED,
                        **QUICK_SETTINGS[name]).fit(train)
    theta = model.transform(test) if model.supports_transform else None
    context = MetricContext(MetricInputs(corpus=train, heldout_corpus=test))
    values, skipped = score(model.output_, context, HELDOUT_METRICS, seed=SEED, heldout_theta=theta)
    for metric in HELDOUT_METRICS:
        if name in PROBABILITY_MODELS:
            assert metric not in skipped, f"{name}: {metric} should apply"
            assert value_problem(metric, values[metric], vocabulary_size=train.n_words) is None, (
                f"{name}: {metric} = {values[metric]:.4g} with V = {train.n_words}")
        else:
            assert metric not in values and skipped[metric], f"{name}: {metric} should not apply, with a reason"
    if name in PROBABILITY_MODELS:  # no test token has probability 0 (none is floored)
        fit = heldout_log_likelihood(test, model.output_.topic_word_matrix, theta)
        assert fit.floored_tokens == 0, f"{name}: {fit.floored_tokens} test tokens below {PROBABILITY_FLOOR}"
    elif model_class.not_a_probability_model:
        assert skipped["perplexity"] == f"not a probability model: {model_class.not_a_probability_model}"


def test_a_search_refuses_a_heldout_objective_for_a_model_that_is_not_a_probability_model():
    from types import SimpleNamespace

    from topicbench.flows.search_plan import objective_problem

    problem = objective_problem("perplexity", MODELS.get("nmf"), SimpleNamespace(metrics=None, model="nmf"))
    assert problem == f"perplexity needs a probability model of words; nmf: {MODELS.get('nmf').not_a_probability_model}"
    assert objective_problem("perplexity", MODELS.get("gibbs_lda"), SimpleNamespace(metrics=None, model="gibbs_lda")) is None
