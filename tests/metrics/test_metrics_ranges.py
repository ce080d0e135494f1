"""Every metric knows its valid range and the baseline it must beat: the range of each key, the
reasons a value cannot be ranked (outside it, worse than the uniform model over V words, not
finite), and the held-out metrics declared not applicable to a model that is not a probability
model of words."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topicbench.core.constants import NOT_A_PROBABILITY_MODEL
from topicbench.core.corpus import Corpus
from topicbench.core.metrics import ranges
from topicbench.core.metrics.context import MetricContext, MetricInputs
from topicbench.core.metrics.ranges import PERPLEXITY, ValidRange
from topicbench.core.metrics.registry import METRICS, MetricSpec
from topicbench.core.metrics.scoring import score
from topicbench.core.metrics.validity import invalid_scores, unranked_reason, value_problem
from topicbench.core.output import TopicModelOutput
from topicbench.core.preprocess import corpus_from_token_lists
from topicbench.core.validation import InputError

#: Metrics whose values have no bound of use, and why (every other metric declares one).
UNBOUNDED_METRICS = {
    "uci": "PMI is a log-ratio of counts, unbounded both ways",
    "umass": "at most log(1 + epsilon), which a setting changes",
}


def _keys(spec: MetricSpec) -> list[str]:
    return [f"{name}@10" if not spec.outputs else name for name in (spec.outputs or (spec.name,))]


@pytest.mark.parametrize("name", METRICS.builtin_names())
def test_every_metric_declares_a_range_for_every_key_it_returns(name):
    spec = METRICS.get(name)
    for key in _keys(spec):
        valid = spec.range_of(key)
        assert isinstance(valid, ValidRange)
        if name not in UNBOUNDED_METRICS:
            assert valid != ranges.UNBOUNDED, f"{key} declares no range"
            assert valid.why


@pytest.mark.parametrize("key, value, expected", [
    ("perplexity", 2023.0, None),
    ("perplexity", 8070.0, None),  # exactly the uniform model: no worse than it
    ("perplexity", 2.01e10, "worse than a uniform model over the 8,070-word vocabulary (perplexity 8,070)"),
    ("perplexity", 0.5, "outside the valid range >= 1"),
    ("heldout_log_likelihood", -7.61, None),
    ("heldout_log_likelihood", -23.0, "worse than a uniform model over the 8,070-word vocabulary "
                                      f"(log-likelihood per word {-math.log(8070):.4g})"),
    ("heldout_log_likelihood", 0.3, "outside the valid range <= 0"),
    ("npmi@10", 0.12, None),
    ("npmi@10", -1.2, "outside the valid range [-1, 1]"),
    ("cv@5", 1.0 + 1e-12, None),  # rounding past a bound is no problem
    ("topic_diversity@25", 1.1, "outside the valid range [0, 1]"),
    ("ari", -0.2, None),  # below chance is possible
    ("nmi", 1.3, "outside the valid range [0, 1]"),
    ("llm_rating", 0.5, "outside the valid range [1, 3]"),
    ("llm_rating_answered", 0.5, None),
    ("npmi_in_reference_topics@10", 4.0, None),
    ("log_likelihood_own", 12.0, "outside the valid range <= 0"),
    ("uci@10", 55.0, None),
    ("npmi@10", float("nan"), "not a finite number"),
    ("perplexity", float("inf"), "not a finite number"),
])
def test_value_problem_says_why_a_value_cannot_be_ranked(key, value, expected):
    assert value_problem(key, value, vocabulary_size=8070) == expected


def test_the_baseline_is_checked_only_with_the_vocabulary_size():
    assert value_problem("perplexity", 2.01e10) is None  # >= 1: inside the range
    assert value_problem("perplexity", 2.01e10, vocabulary_size=np.int64(8070)) is not None
    for bad in (0, -3, 2.5, True):
        with pytest.raises(InputError, match="vocabulary_size must be a positive integer"):
            value_problem("perplexity", 10.0, vocabulary_size=bad)
    with pytest.raises(InputError, match="no metric returns the score 'nope'"):
        value_problem("nope", 1.0)


def test_a_range_is_checked_where_it_is_declared():
    with pytest.raises(ValueError, match="low <= high"):
        ValidRange(1.0, 0.0)
    with pytest.raises(ValueError, match="unknown baseline 'zipf'"):
        ValidRange(baseline="zipf")
    with pytest.raises(ValueError, match=r"gives valid ranges for \['a'\], its outputs are \['a', 'b'\]"):
        MetricSpec("two", lambda output, run: {}, True, outputs=("a", "b"), valid_range={"a": ranges.PROPORTION})
    assert PERPLEXITY.text() == ">= 1" and ranges.SIGNED_UNIT.text() == "[-1, 1]"
    assert ranges.UNBOUNDED.text() == "any value"
    assert ranges.describe(PERPLEXITY) == ">= 1; at most V (the uniform model)"
    assert ranges.describe(METRICS.get("clustering").valid_range).endswith("harmonic_purity: [0, 1]; ari: [-1, 1]")


def test_a_model_s_seeds_are_not_ranked_when_one_of_them_cannot_be():
    reason = unranked_reason("perplexity", [2023.0, 2.01e10, 1900.0], [8070, 8070, 8070])
    assert reason == ("not ranked: a seed scored 2.01e+10, worse than a uniform model over the 8,070-word "
                      "vocabulary (perplexity 8,070)")
    assert unranked_reason("perplexity", [2023.0, 1900.0], [8070, 8070]) is None
    # no vocabulary size logged (a run tracked before it was): the range alone
    assert unranked_reason("perplexity", [2.01e10], [float("nan")]) is None
    assert unranked_reason("perplexity", [0.2], ()) == "not ranked: a seed scored 0.2, outside the valid range >= 1"
    assert unranked_reason("npmi@10", [None, float("nan"), 0.1]) is None  # a missing value is a gap, not bad
    assert unranked_reason("fit_seconds", [-5.0]) is None  # not a metric's score


def test_a_fit_s_invalid_scores_are_each_said_with_their_value():
    found = invalid_scores({"perplexity": 2.01e10, "npmi@10": 0.1, "nmi": 1.5, "fit_seconds": -1.0,
                            "umass@10": float("-inf")}, 8070)
    assert found == {"perplexity": "2.01e+10 is worse than a uniform model over the 8,070-word vocabulary "
                                   "(perplexity 8,070)",
                     "nmi": "1.5 is outside the valid range [0, 1]"}


def _tiny_corpus(name: str, documents) -> Corpus:
    return corpus_from_token_lists(documents, vocabulary=["apple", "pear", "plum", "fig"], name=name)


def _output(model: str, extra: dict) -> TopicModelOutput:
    vocabulary = ("apple", "pear", "plum", "fig")
    return TopicModelOutput(
        model=model, vocabulary=vocabulary, topics=[["apple", "pear"], ["plum", "fig"]],
        topic_word_matrix=np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5]]),
        topic_document_matrix=np.full((2, 2), 0.5), extra=extra,
    )


def test_held_out_metrics_do_not_apply_to_a_model_that_is_not_a_probability_model():
    train = _tiny_corpus("train", [["apple", "pear"], ["plum", "fig"]])
    test = _tiny_corpus("test", [["apple", "plum"], ["fig", "pear"]])
    context = MetricContext(MetricInputs(corpus=train, heldout_corpus=test))
    theta = np.full((2, 2), 0.5)
    why = "its loadings are not word probabilities"
    values, skipped = score(_output("nmf", {NOT_A_PROBABILITY_MODEL: why}), context,
                            ["perplexity", "heldout_log_likelihood"], seed=0, heldout_theta=theta)
    assert values == {}
    assert skipped["perplexity"] == skipped["heldout_log_likelihood"] == f"not a probability model: {why}"
    values, skipped = score(_output("lda", {}), context, ["perplexity"], seed=0, heldout_theta=theta)
    assert "perplexity" not in skipped and values["perplexity"] == pytest.approx(4.0)  # p = 1/4 for every test token
