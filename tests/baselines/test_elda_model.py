"""The registry's ``elda``: one set of defaults, the exact and the parallel algorithm from settings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topicbench.baselines.registry import MODELS
from topicbench.core.constants import DEFAULT_EPSILON, DEFAULT_GENERATOR
from topicbench.core.validation import InputError
from synthetic_lda import lee_corpus, small_synthetic, synthetic_words  # noqa: F401 (fixtures used by name)


def test_elda_defaults_are_the_cores():
    defaults = MODELS.get("elda").defaults
    assert defaults["generator"] == DEFAULT_GENERATOR == "cooccurrence"
    assert defaults["epsilon"] == DEFAULT_EPSILON and defaults["algorithm"] == "exact"
    # the estimator's defaults are the same constants
    import inspect

    from topicbench.core.elda.model import ELDA

    parameters = inspect.signature(ELDA).parameters
    assert parameters["generator"].default == DEFAULT_GENERATOR and parameters["epsilon"].default == DEFAULT_EPSILON
    assert parameters["kappa"].default == defaults["kappa"]


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"algorithm": "fast"}, r"elda: algorithm must be one of \['exact', 'parallel'\], got 'fast'"),
        ({"algorithm": "parallel", "epsilon": 1.0}, "elda: epsilon must lie in"),
        ({"algorithm": "parallel", "epsilon": 0}, "elda: epsilon must lie in"),
        ({"algorithm": "parallel", "epsilon": "small"}, "elda: setting 'epsilon' must be a number"),
        ({"epsilon": 0.2}, "elda: epsilon applies to algorithm 'parallel' only"),
    ],
)
def test_bad_algorithm_settings_are_refused_at_construction(settings, message):
    with pytest.raises(InputError, match=message):
        MODELS.get("elda")(**settings)


def test_num_topics_is_ignored_but_checked():
    assert MODELS.get("elda")(None).num_topics is None
    assert MODELS.get("elda")(50).get_params()["num_topics"] == 50
    with pytest.raises(InputError, match="elda: num_topics must be an integer >= 1, got 0"):
        MODELS.get("elda")(0)


def test_parallel_elda_from_settings_is_within_its_guarantee_of_exact(small_synthetic):
    corpus = small_synthetic.corpus
    exact = MODELS.get("elda")(None, random_state=1, generator="raw_umass").fit(corpus)
    parallel = MODELS.get("elda")(None, random_state=1, generator="raw_umass", algorithm="parallel").fit(corpus)
    assert parallel.output_.extra["algorithm"] == "parallel" and exact.output_.extra.get("algorithm", "greedy") == "greedy"
    assert parallel.budget_ == exact.budget_ == math.floor(2.0 * corpus.n_documents)
    assert parallel.num_candidates_ == exact.num_candidates_ and parallel.threads_ >= 1
    assert not hasattr(exact, "threads_")
    assert parallel.output_.extra["adaptive_rounds"] >= 2
    # 1 - 1/e - O(eps) of the optimum, which exact greedy's value bounds from below
    null = exact.output_.extra["null_log_posterior"]
    gain_exact = exact.output_.extra["log_posterior"] - null
    gain_parallel = parallel.output_.extra["log_posterior"] - null
    assert gain_parallel >= (1 - 1 / math.e - DEFAULT_EPSILON) * gain_exact
    assert gain_parallel <= gain_exact / (1 - 1 / math.e) + 1e-6 * abs(gain_exact)
    # a seed gives one result
    again = MODELS.get("elda")(None, random_state=1, generator="raw_umass", algorithm="parallel").fit(corpus)
    np.testing.assert_array_equal(again.output_.token_topics, parallel.output_.token_topics)


def test_a_config_runs_parallel_elda(tmp_path, make_random_corpus):
    from topicbench.flows.config.model import BenchmarkConfig

    config = BenchmarkConfig.from_dict({
        "models": [{"model": "elda", "settings": {"algorithm": "parallel", "epsilon": 0.2}}],
        "tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}",
    })
    model = config.models[0].build(MODELS, seed=3)
    assert model.get_params() == {
        "num_topics": None, "random_state": 3, **MODELS.get("elda").defaults,
        "algorithm": "parallel", "epsilon": 0.2,
    }
    fitted = model.fit(make_random_corpus(1))
    assert fitted.output_.extra["algorithm"] == "parallel" and fitted.output_.seed == 3
    with pytest.raises(InputError, match=r"config: models\[0\] \(elda\): elda: algorithm must be one of"):
        BenchmarkConfig.from_dict({"models": [{"model": "elda", "settings": {"algorithm": "greedy"}}]})
