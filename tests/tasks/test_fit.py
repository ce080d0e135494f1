"""The fit task through ``fit_model.fn``: one model, one seed, the resolved values as named fields
and the asked ones as the model holds them."""

from __future__ import annotations

import numpy as np
import pytest

from topicbench.baselines.registry import MODELS
from topicbench.core.output import PROBABILITY_TOLERANCE
from topicbench.core.validation import InputError
from topicbench.tasks.run.fit import FitResult, fit_model


def test_fit_model_returns_the_output_the_resolved_values_and_heldout_topics(make_random_corpus):
    corpus = make_random_corpus(3)
    heldout = corpus.subset(range(4))
    fitted = fit_model.fn(corpus, "gibbs_lda", 3, {"iterations": 5, "top_words": 5}, 2, heldout)
    assert isinstance(fitted, FitResult)
    assert fitted.output.model == "gibbs_lda" and fitted.output.seed == 2 and fitted.output.n_topics == 3
    # the resolved values, as the model names them, and as the output's settings carry them
    expected = MODELS.get("gibbs_lda")(3, random_state=2, iterations=5, top_words=5).fit(corpus)
    assert set(fitted.resolved) == set(expected.resolved_) >= {"num_topics_", "alpha_", "eta_"}
    assert fitted.resolved["num_topics_"] == 3 and len(fitted.resolved["alpha_"]) == 3
    assert all(fitted.output.settings[key] == value for key, value in fitted.resolved.items())
    # what was asked, as the fitted model holds it: the flow logs these, and builds no model of its own
    assert fitted.params == expected.get_params() and fitted.params["iterations"] == 5
    assert fitted.heldout_theta.shape == (3, 4)
    np.testing.assert_allclose(fitted.heldout_theta.sum(axis=0), 1.0, atol=PROBABILITY_TOLERANCE)


def test_fit_model_of_a_model_without_transform_has_no_heldout_topics(make_random_corpus):
    corpus = make_random_corpus(4)
    fitted = fit_model.fn(corpus, "elda", None, {"kappa": 1.5}, 0, corpus.subset(range(2)))
    assert fitted.heldout_theta is None
    assert fitted.resolved["budget_"] == int(1.5 * corpus.n_documents)


def test_fit_model_refuses_a_missing_k_before_fitting(make_random_corpus):
    with pytest.raises(InputError, match="gensim_lda: num_topics must be an integer >= 1, got None"):
        fit_model.fn(make_random_corpus(5), "gensim_lda", None, {}, 0)
