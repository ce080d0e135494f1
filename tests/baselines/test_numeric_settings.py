"""Every numeric setting of every registered model is bounded and finite before any work, and
what depends on the corpus is checked before the fit's setup (issue 46, item 6).

A hostile prober found ``hdp initial_k: 1000000000`` accepted (3.2 GB, about two hours), GMM and
S³ learning only inside turftopic's fit that K exceeded the documents, and an ``inf`` setting
failing only once the fit had started.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from topicbench.baselines.base import FitStopped
from topicbench.baselines.registry import MODELS
from topicbench.core.preprocess import corpus_from_token_lists
from topicbench.core.validation import InputError

#: Settings whose default is None but which take a number (the default's type cannot say so).
NUMERIC_NONE_DEFAULTS = {"gmm": ("gamma",), "fastopic": ("vocab_size",), "bertopic": ("nr_topics",)}


def is_number(value) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_))


def numeric_settings() -> list:
    """(model, setting) for every numeric setting (a number, or a list of numbers) of every
    built-in registered model."""
    pairs = []
    for name in MODELS.builtin_names():
        for key, default in MODELS.get(name).defaults.items():
            numbers = default if isinstance(default, (tuple, list)) else (default,)
            if (numbers and all(is_number(item) for item in numbers)) or key in NUMERIC_NONE_DEFAULTS.get(name, ()):
                pairs.append((name, key))
    return pairs


NUMERIC_SETTINGS = numeric_settings()


def build(name: str, **settings):
    """The model ``name`` with ``settings``, at a K it takes (None where it chooses its own)."""
    model_class = MODELS.get(name)
    return model_class(None if model_class.topics_decided_by or name == "bertopic" else 5, **settings)


def published_maximum(name: str, key: str):
    """The ``maximum`` the model's settings schema declares for ``key`` (on its numbers, or on
    its items for a list); None where it declares none."""
    schema = MODELS.get(name).settings_schema()["properties"][key]
    for part in [schema, *schema.get("anyOf", ()), schema.get("items", {})]:
        if "maximum" in part:
            return part["maximum"]
    return None


def is_integer_setting(name: str, key: str) -> bool:
    default = MODELS.get(name).defaults[key]
    return isinstance(default, (int, np.integer, tuple, list)) or key in ("vocab_size", "nr_topics")


def shown(maximum) -> str:
    """The maximum as an error line writes it (an int as is, a float as ``%g``)."""
    return str(maximum) if isinstance(maximum, int) else f"{maximum:g}"


def test_the_numeric_settings_are_found():
    assert ("hdp", "initial_k") in NUMERIC_SETTINGS and ("gmm", "gamma") in NUMERIC_SETTINGS
    assert ("prodlda", "hidden_sizes") in NUMERIC_SETTINGS and ("gensim_lda", "alpha") in NUMERIC_SETTINGS
    assert ("nmf", "features") not in NUMERIC_SETTINGS and ("gibbs_lda", "optimize_alpha") not in NUMERIC_SETTINGS


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan], ids=["inf", "-inf", "nan"])
@pytest.mark.parametrize("name, key", NUMERIC_SETTINGS, ids=[f"{n}.{k}" for n, k in NUMERIC_SETTINGS])
def test_inf_and_nan_are_refused_at_construction_in_one_line(name, key, value):
    given = (100, value) if isinstance(MODELS.get(name).defaults[key], (tuple, list)) else value
    with pytest.raises(InputError) as refused:
        build(name, **{key: given})
    message = str(refused.value)
    assert message == f"{name}: setting {key!r} must be a finite number, got {given!r}"


@pytest.mark.parametrize("name, key", NUMERIC_SETTINGS, ids=[f"{n}.{k}" for n, k in NUMERIC_SETTINGS])
def test_a_setting_above_its_published_maximum_is_refused_naming_the_maximum(name, key):
    maximum = published_maximum(name, key)
    assert maximum is not None and math.isfinite(maximum), f"{name}.{key} has no maximum in its schema"
    above = maximum + 1 if is_integer_setting(name, key) else maximum * 2
    given = (above,) if isinstance(MODELS.get(name).defaults[key], (tuple, list)) else above
    with pytest.raises(InputError) as refused:
        build(name, **{key: given})
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"{name}: ") and key in message
    assert f"<= {shown(maximum)}" in message and repr(above) in message


def test_hdps_start_of_a_billion_topics_is_refused_naming_its_maximum():
    with pytest.raises(InputError, match=r"hdp: setting 'initial_k' must be an integer <= 1000, got 1000000000"):
        build("hdp", initial_k=1_000_000_000)


def tiny_corpus(n_documents: int = 8):
    themes = ("tax budget cut deficit", "war troops army defense", "school teacher student class")
    return corpus_from_token_lists([themes[d % 3].split() * 2 for d in range(n_documents)], name="tiny")


@pytest.mark.parametrize("name, package_class", [
    ("gmm", "turftopic:GMM"), ("s3", "turftopic:SemanticSignalSeparation"),
])
def test_more_topics_than_documents_is_refused_before_any_fitting(name, package_class, monkeypatch):
    module, class_name = package_class.split(":")
    package = getattr(pytest.importorskip(module), class_name)

    def reached(*args, **kwargs):
        pytest.fail(f"{name} reached work with K above the documents")

    monkeypatch.setattr(package, "fit_transform", reached)
    monkeypatch.setattr(package, "fit", reached, raising=False)
    monkeypatch.setattr(MODELS.get(name), "_setup", reached)  # the encoder and embeddings are work too
    corpus = tiny_corpus(8)
    with pytest.raises(InputError, match=rf"{name}: num_topics = 9 is more than 8, the documents of corpus 'tiny'"):
        MODELS.get(name)(9).fit(corpus)


def test_nmf_with_an_svd_start_refuses_more_topics_than_the_corpus_spans_before_fitting(monkeypatch):
    from sklearn.decomposition import NMF as SklearnNMF

    monkeypatch.setattr(SklearnNMF, "fit_transform", lambda *a, **k: pytest.fail("reached scikit-learn's fit"))
    corpus = tiny_corpus(8)  # 12 words, 8 documents
    with pytest.raises(InputError, match=r"nmf: num_topics with init 'nndsvd' = 9 is more than 8"):
        MODELS.get("nmf")(9, init="nndsvd").fit(corpus)


def test_hdp_refuses_a_start_of_more_topics_than_the_corpus_has_tokens_before_sampling(monkeypatch):
    tomotopy = pytest.importorskip("tomotopy")
    monkeypatch.setattr(tomotopy, "HDPModel", lambda *a, **k: pytest.fail("reached tomotopy"))
    corpus = tiny_corpus(2)  # 16 tokens
    with pytest.raises(InputError, match=r"hdp: initial_k = 17 is more than 16, the tokens of corpus 'tiny'"):
        MODELS.get("hdp")(initial_k=17).fit(corpus)


@pytest.mark.parametrize("name", ["hdp", "gibbs_lda"])
def test_tomotopys_samplers_stop_at_the_next_sweep_when_asked(name):
    looks = itertools.count(1)
    model = MODELS.get(name)(None if name == "hdp" else 3, iterations=100_000)
    with pytest.raises(FitStopped, match=rf"{name}: stopped at step 4/100000"):
        model.fit(tiny_corpus(30), stop_requested=lambda: next(looks) > 5)  # sweeps 0..3 and the curve's 0
