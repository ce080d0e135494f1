"""The contract every registered model keeps (like scikit-learn's ``parametrize_with_checks``).

Each model fits the built-in corpus twice with one seed (identical outputs) and a synthetic
LDA corpus once, and returns an output that keeps :class:`TopicModelOutput`'s invariants. The
settings below only make the fits small; they are not the paper's. Models of installed plugins
(the ``topicbench.models`` entry points) are checked the same way, at their own defaults.
"""

from __future__ import annotations

import numpy as np
import pytest

from topicbench.baselines.base import ModelError, TopicModel
from topicbench.baselines.registry import MODELS
from topicbench.core.output import PROBABILITY_TOLERANCE, TopicModelOutput
from topicbench.core.validation import InputError
from synthetic_lda import lee_corpus, small_synthetic, synthetic_words  # noqa: F401 (fixtures used by name)

#: Small settings per registered model, so that the whole contract runs in about a minute.
QUICK_SETTINGS = {
    "elda": {},
    "gensim_lda": {"passes": 2, "iterations": 50},
    "gibbs_lda": {"iterations": 50},
    "prodlda": {"epochs": 5},
    "ctm": {"epochs": 5},
    "etm": {"epochs": 5},
    "bertopic": {},
    "fastopic": {"epochs": 10},
    "nmf": {},
    "lsi": {},
    "hdp": {"iterations": 50},
    "keynmf": {},
    "s3": {},
    "gmm": {},
}

#: Models that assign a topic to every token (the output then carries ``token_topics``).
TOKEN_ASSIGNING_MODELS = {"elda", "gensim_lda", "gibbs_lda", "hdp"}

NUM_TOPICS = 6
SEED = 3


#: Every model the contract checks: the built-in ones and those of the installed plugins.
CONTRACT_MODELS = sorted(set(QUICK_SETTINGS) | set(MODELS.plugins()))


def test_every_registered_model_is_in_the_contract():
    # models that tests of other packages register (e.g. a model that always fails) are not ours
    # (the built-in names only: a plugin is imported when its contract test names it)
    # (a model that asks an LLM, TopicGPT, keeps the contract against a scripted LLM: tests/baselines/test_topicgpt.py)
    ours = {name for name in MODELS.builtin_names() if MODELS.get(name).__module__.startswith("topicbench.baselines.")
            and not getattr(MODELS.get(name), "asks_llm", False)}
    assert ours == set(QUICK_SETTINGS)


def check_output(output: TopicModelOutput, model: TopicModel, corpus, seed: int) -> None:
    """Everything the contract promises, checked here independently of ``output.check``."""
    assert output.check(corpus.n_documents, corpus.n_tokens) is output
    assert output.model == model.name
    assert output.seed == seed
    assert output.fit_seconds > 0 and output.peak_memory_mb > 0
    n_topics = output.n_topics
    assert n_topics >= 2
    assert output.vocabulary == corpus.vocabulary
    # the OCTIS view: dense arrays, whatever form the output keeps its matrices in (E-LDA: sparse)
    octis = output.to_octis()
    topic_word, topic_document = octis["topic-word-matrix"], octis["topic-document-matrix"]
    assert type(topic_word) is np.ndarray and type(topic_document) is np.ndarray
    assert octis["topics"] == [list(words) for words in output.topics]
    assert output.topic_word_matrix.shape == topic_word.shape == (n_topics, corpus.n_words)
    assert topic_word.shape == (n_topics, corpus.n_words)
    assert topic_document.shape == (n_topics, corpus.n_documents)
    for matrix, axis in ((topic_word, 1), (topic_document, 0)):
        assert np.isfinite(matrix).all() and (matrix >= 0).all()
        np.testing.assert_allclose(matrix.sum(axis=axis), 1.0, atol=PROBABILITY_TOLERANCE)
    vocabulary = set(corpus.vocabulary)
    top_words = model.settings.get("top_words")
    for words in output.topics:
        assert words, "a topic without words"
        assert all(isinstance(w, str) and w and w in vocabulary for w in words)
        assert len(set(words)) == len(words)
        if top_words is not None:
            assert len(words) <= top_words
    # settings: what was asked, untouched, plus resolved values ending in "_"
    for key, value in model.settings.items():
        assert output.settings[key] == value
    assert all(key in model.defaults or key.endswith("_") for key in output.settings)
    # the class says what its outputs hold (a search refuses posterior objectives by it, unfitted)
    assert type(model).assigns_token_topics == (output.token_topics is not None)
    if model.name in TOKEN_ASSIGNING_MODELS or output.token_topics is not None:
        tokens = output.token_topics
        assert tokens is not None and tokens.shape == (corpus.n_tokens,)
        assert tokens.min() >= -1 and tokens.max() < n_topics


def check_resolved(model: TopicModel, output: TopicModelOutput) -> None:
    """The resolved values are named fields of the fitted model (``resolved_`` and one attribute
    each, names ending in "_"), the same values the output's settings carry beside the asked ones."""
    assert model.resolved_, "a fit resolves at least one value"
    assert {key for key in output.settings if key not in model.settings} == set(model.resolved_)
    for key, value in model.resolved_.items():
        assert key.endswith("_") and key not in model.defaults
        assert getattr(model, key) == value == output.settings[key]


@pytest.mark.slow
@pytest.mark.parametrize("name", CONTRACT_MODELS)
def test_model_contract(name, lee_corpus, small_synthetic):
    check_model_contract(MODELS, name, lee_corpus, small_synthetic)


def check_model_contract(models, name: str, lee_corpus, small_synthetic) -> None:
    """The whole contract for the model ``models.get(name)`` (built-in or plugin)."""
    model_class = models.get(name)
    assert issubclass(model_class, TopicModel) and model_class.name == name
    settings = QUICK_SETTINGS.get(name, {})  # a plugin's model runs at its own defaults
    model = model_class(NUM_TOPICS, random_state=SEED, **settings)
    asked = model.get_params()
    assert asked == {"num_topics": NUM_TOPICS, "random_state": SEED, **model_class.defaults, **settings}

    assert model.fit(lee_corpus) is model
    first = model.output_
    check_output(first, model, lee_corpus, SEED)
    check_resolved(model, first)
    assert model.get_params() == asked, "fit changed the stored settings"
    if model.supports_transform:
        held_out = lee_corpus.subset(range(20))
        theta = model.transform(held_out)
        assert theta.shape == (first.n_topics, 20)
        np.testing.assert_allclose(theta.sum(axis=0), 1.0, atol=PROBABILITY_TOLERANCE)
    else:
        with pytest.raises(ModelError, match=name):
            model.transform(lee_corpus)

    if model_class.reproducible:
        second = model_class(NUM_TOPICS, random_state=SEED, **settings).fit(lee_corpus).output_
        assert second.topics == first.topics
        second_octis, first_octis = second.to_octis(), first.to_octis()
        np.testing.assert_array_equal(second_octis["topic-word-matrix"], first_octis["topic-word-matrix"])
        np.testing.assert_array_equal(second_octis["topic-document-matrix"], first_octis["topic-document-matrix"])
        if first.token_topics is not None:
            np.testing.assert_array_equal(second.token_topics, first.token_topics)

    synthetic = small_synthetic.corpus
    check_output(model_class(NUM_TOPICS, random_state=SEED, **settings).fit(synthetic).output_, model, synthetic, SEED)


@pytest.mark.parametrize(
    "name", ["gensim_lda", "gibbs_lda", "prodlda", "ctm", "etm", "fastopic", "nmf", "lsi", "keynmf", "s3", "gmm"]
)
def test_fixed_topic_count_models_require_num_topics(name, tiny_corpus):
    with pytest.raises(InputError, match=f"{name}: num_topics must be an integer >= 1"):
        MODELS.get(name)(None).fit(tiny_corpus)


@pytest.mark.parametrize("name", CONTRACT_MODELS)
def test_unknown_setting_is_refused_with_the_known_ones(name):
    with pytest.raises(InputError, match=rf"{name}: unknown settings \['colour'\]; known: "):
        MODELS.get(name)(colour="blue")


@pytest.mark.parametrize(
    "name, settings, message",
    [
        ("gensim_lda", {"alpha": "sparse"}, "setting 'alpha' must be a number <= 10000 or 'auto', got 'sparse'"),
        ("gensim_lda", {"alpha": -0.1}, "alpha must be a positive number"),
        ("gensim_lda", {"iterations": "many"}, "setting 'iterations' must be an integer <= 100000, got 'many'"),
        ("gensim_lda", {"passes": True}, "setting 'passes' must be an integer <= 100000, got True"),
        ("elda", {"kappa": 0.5}, "kappa must be >= 1"),
        ("elda", {"kappa": True}, "setting 'kappa' must be a number <= 1000, got True"),
        ("elda", {"generator": "magic"}, "generator must be one of"),
        ("bertopic", {"calculate_probabilities": "yes"}, "setting 'calculate_probabilities' must be true or false"),
        ("prodlda", {"hidden_sizes": 100}, "setting 'hidden_sizes' must be a list"),
        ("gensim_lda", {"passes": 0}, "passes must be an integer >= 1"),
        ("gibbs_lda", {"alpha": -1.0}, "alpha must be a positive number"),
        ("gibbs_lda", {"eta": "small"}, "setting 'eta' must be a number <= 10000, got 'small'"),
        ("gibbs_lda", {"eta": 0.0}, "eta must be a positive number"),
        ("gibbs_lda", {"optimize_alpha": "yes"}, "setting 'optimize_alpha' must be true or false"),
        ("prodlda", {"epochs": 0}, "epochs must be an integer >= 1"),
        ("ctm", {"variant": "mixed"}, "variant must be one of"),
        ("etm", {"word_embeddings": "glove"}, "word_embeddings must be one of"),
        ("bertopic", {"nr_topics": 1}, "nr_topics must be None, 'auto' or an integer >= 2"),
        ("fastopic", {"dt_alpha": 0}, "dt_alpha must be a positive number"),
        ("prodlda", {"dropout": 1.5}, "setting 'dropout' must be a number <= 1, got 1.5"),
        ("prodlda", {"dropout": 1.0}, "dropout must lie in"),
    ],
)
def test_bad_setting_values_are_refused(name, settings, message):
    with pytest.raises(InputError, match=f"{name}: {message}"):
        MODELS.get(name)(**settings)


def test_transform_needs_a_fit_and_the_same_vocabulary(lee_corpus, tiny_corpus):
    model = MODELS.get("gibbs_lda")(3, random_state=0, iterations=5)
    with pytest.raises(ModelError, match="gibbs_lda: transform needs a fitted model"):
        model.transform(lee_corpus)
    model.fit(lee_corpus)
    with pytest.raises(InputError, match="does not match the corpus vocabulary"):
        model.transform(tiny_corpus)


class UniformModel(TopicModel):
    """K uniform topics; resolves ``num_topics_`` and whatever ``extra_resolved`` holds."""

    name = "uniform"
    defaults = {"top_words": 2}
    extra_resolved: dict = {}

    def _fit(self, corpus):
        k = self._require_num_topics(self.num_topics)
        output = TopicModelOutput(
            model="anything", vocabulary=tuple(corpus.vocabulary),
            topics=[list(corpus.vocabulary[: self.settings["top_words"]])] * k,
            topic_word_matrix=np.full((k, corpus.n_words), 1.0 / corpus.n_words),
            topic_document_matrix=np.full((k, corpus.n_documents), 1.0 / k), seed=99,
        )
        return output, {"num_topics_": k, **self.extra_resolved}


def test_fit_returns_the_model_with_its_output_and_resolved_values_as_fields(tiny_corpus):
    model = UniformModel(2, random_state=5, top_words=1)
    assert model.get_params() == {"num_topics": 2, "random_state": 5, "top_words": 1}
    assert model.fit(tiny_corpus) is model
    # the output's model name, seed and settings come from the model, whatever _fit put there
    assert model.output_.model == "uniform" and model.output_.seed == 5
    assert model.output_.settings == {"top_words": 1, "num_topics_": 2}
    assert model.resolved_ == {"num_topics_": 2} and model.num_topics_ == 2
    model.extra_resolved = {"width_": 3}
    model.fit(tiny_corpus)
    assert model.width_ == 3
    model.extra_resolved = {}
    model.fit(tiny_corpus)  # a refit's resolved values replace the previous ones
    assert model.resolved_ == {"num_topics_": 2} and not hasattr(model, "width_")


@pytest.mark.parametrize("resolved", [{"width": 3}, {"output_": 1}, {"resolved_": {}}])
def test_resolved_values_must_be_named_fields(tiny_corpus, resolved):
    model = UniformModel(2)
    model.extra_resolved = resolved
    with pytest.raises(ModelError, match="uniform: resolved values must be named with a trailing '_'"):
        model.fit(tiny_corpus)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"num_topics": 0}, "uniform: num_topics must be an integer >= 1, got 0"),
        ({"num_topics": None}, "uniform: num_topics must be an integer >= 1, got None"),
        ({"num_topics": 2, "random_state": -1}, "uniform: random_state must be an integer in \\[0, 4294967295\\], got -1"),
        ({"num_topics": 2, "random_state": True}, "uniform: random_state must be an integer in \\[0, 4294967295\\], got True"),
        ({"num_topics": 2, "top_words": "two"}, "uniform: setting 'top_words' must be an integer"),
    ],
)
def test_k_seed_and_settings_are_checked_at_construction(arguments, message):
    with pytest.raises(InputError, match=message):
        UniformModel(**arguments)
