"""A model that cannot fit fails with a clear error naming the model and the reason; the other
models are unaffected."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from topicbench.baselines.base import ModelError
from topicbench.baselines.registry import MODELS
from topicbench.core.validation import InputError
from synthetic_lda import lee_corpus, small_synthetic, synthetic_words  # noqa: F401 (fixtures used by name)


def test_unknown_model_lists_the_choices():
    with pytest.raises(InputError, match=r"Unknown model 'lda' \(did you mean 'elda'\?\)\. Available: ") as error:
        MODELS.get("lda")
    available = str(error.value).split("Available: ")[1].split(", ")
    assert {"bertopic", "ctm", "elda", "etm", "fastopic", "gensim_lda", "gibbs_lda", "prodlda"} <= set(available)
    assert available == sorted(available)


def test_bertopic_refuses_a_corpus_too_small_for_its_clustering(small_synthetic):
    few = small_synthetic.corpus.subset(range(12), name="twelve")
    with pytest.raises(ModelError, match=r"bertopic: too few documents for its clustering: 12 documents"):
        MODELS.get("bertopic")(None, random_state=0).fit(few)
    # the other models fit the same corpus
    output = MODELS.get("gibbs_lda")(2, random_state=0, iterations=10).fit(few).output_
    assert output.n_topics == 2


@pytest.mark.slow
def test_bertopic_fails_clearly_when_hdbscan_finds_fewer_than_two_topics(lee_corpus):
    # clusters of at least 140 of 300 documents: HDBSCAN finds at most two, here fewer
    with pytest.raises(ModelError, match=r"bertopic: HDBSCAN found [01] topic\(s\) besides outliers in 300 documents"):
        MODELS.get("bertopic")(None, random_state=0, min_topic_size=140).fit(lee_corpus)


@pytest.mark.parametrize(
    "name, module",
    [("bertopic", "bertopic"), ("bertopic", "umap"), ("prodlda", "torch"), ("gibbs_lda", "tomotopy")],
)
def test_a_missing_optional_package_names_the_model_and_the_package(name, module, monkeypatch, small_synthetic):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(ModelError, match=rf"{name}: the optional package '[\w-]+' is not installed"):
        MODELS.get(name)(3, random_state=0).fit(small_synthetic.corpus)
    output = MODELS.get("gensim_lda")(3, random_state=0, passes=1, iterations=20).fit(small_synthetic.corpus).output_
    assert output.n_topics == 3


def test_a_library_failure_is_reported_with_the_model_and_corpus(monkeypatch, small_synthetic):
    import gensim.models

    def broken(*args, **kwargs):
        raise FloatingPointError("overflow in the E-step")

    monkeypatch.setattr(gensim.models, "LdaModel", broken)
    with pytest.raises(ModelError, match=r"gensim_lda: fitting failed on corpus 'small_synthetic' \(300 documents\): FloatingPointError: overflow"):
        MODELS.get("gensim_lda")(3, random_state=0).fit(small_synthetic.corpus)


def test_a_diverging_neural_model_stops_with_a_clear_error(small_synthetic):
    with pytest.raises(ModelError, match=r"prodlda: the training loss became nan"):
        # a prior of almost no mass: its Laplace approximation's variance overflows (a learning rate
        # of 1e30 did it before; learning rates are now at most 10, where Adam stays finite)
        MODELS.get("prodlda")(3, random_state=0, epochs=3, prior_alpha=1e-300).fit(small_synthetic.corpus)


def test_empty_corpus_is_refused(tiny_corpus):
    empty = tiny_corpus.subset([], name="empty")
    with pytest.raises(InputError, match="gibbs_lda: the corpus 'empty' is empty"):
        MODELS.get("gibbs_lda")(2).fit(empty)
    assert np.all(np.isfinite(MODELS.get("gibbs_lda")(2, iterations=5).fit(tiny_corpus).output_.topic_word_matrix))
