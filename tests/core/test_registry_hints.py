"""An unknown name points to what was meant (issue 47): a score asked for as a metric names the
metric that returns it, a misspelt name its closest match."""

import pytest

from topicbench.core.metrics.registry import METRICS
from topicbench.core.registry import Registry
from topicbench.core.validation import InputError


@pytest.mark.parametrize("asked, hint", [
    ("nmi", "'nmi' is a score of the metric 'clustering': ask for 'clustering'"),
    ("ari", "'ari' is a score of the metric 'clustering'"),
    ("classification_accuracy", "the metric 'classification'"),
    ("npmi@10", "'npmi@10' is a score of the metric 'npmi'"),
    ("cvv", "did you mean 'cv'?"),
])
def test_an_unknown_metric_points_to_the_metric_meant(asked, hint):
    with pytest.raises(InputError, match="Unknown metric") as raised:
        METRICS.get(asked)
    assert hint in str(raised.value)


def test_a_name_close_to_nothing_gets_no_hint():
    registry = Registry("model")
    registry.register("gensim_lda", object())
    with pytest.raises(InputError) as raised:
        registry.get("zzz")
    assert str(raised.value) == "Unknown model 'zzz'. Available: gensim_lda"
