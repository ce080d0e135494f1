"""Models of other installed distributions (the ``topicbench.models`` entry points) in ``MODELS``.

The plugins here are real distributions on ``sys.path``: a ``*.dist-info`` written by hand (for
the broken ones) or the manual's example (docs/own-model.md) installed with pip, read by ``importlib.metadata``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import sys

import pytest

from topicbench.baselines.base import TopicModel
from topicbench.baselines.registry import MODELS, model_registry
from topicbench.core.registry import PluginError
from topicbench.core.validation import InputError
from topicbench.flows.config.model import BenchmarkConfig
from plugin_packages import EXAMPLE_MODEL, EXAMPLE_PLUGIN, ROOT, install_example_plugin, write_plugin
from synthetic_lda import lee_corpus, small_synthetic, synthetic_words  # noqa: F401 (fixtures used by name)
from test_baselines_contract import check_model_contract

#: A toy model for a plugin module (NAME: its registry name): K topics over the word counts,
#: the words dealt round-robin by id.
TOY_MODEL = '''
import numpy as np
from topicbench.baselines.base import TopicModel, normalize_rows, top_words_of
from topicbench.core.output import TopicModelOutput


class CountTopics(TopicModel):
    name = "NAME"
    defaults = {"top_words": 3}

    def _fit(self, corpus):
        k = self._require_num_topics(self.num_topics)
        counts = np.asarray(corpus.doc_term.sum(axis=0)).ravel() + 1.0
        dealt = np.arange(corpus.n_words) % k
        topic_word = normalize_rows(np.stack([np.where(dealt == t, counts, 0.0) for t in range(k)]))
        output = TopicModelOutput(
            model=self.name, vocabulary=tuple(corpus.vocabulary),
            topics=top_words_of(topic_word, corpus.vocabulary, self.settings["top_words"]),
            topic_word_matrix=topic_word, topic_document_matrix=np.full((k, corpus.n_documents), 1.0 / k),
        )
        return output, {"num_topics_": k}
'''


def toy_model(name: str) -> str:
    return TOY_MODEL.replace("NAME", name)


@pytest.fixture
def plugin_site(tmp_path):
    """A folder on ``sys.path`` for plugin distributions; afterwards the folder, its modules and
    the plugins ``MODELS`` read from it are gone."""
    site = tmp_path / "site"
    site.mkdir()
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    yield site
    sys.path.remove(str(site))
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(site)):
            del sys.modules[name]
    MODELS.discover_plugins()


def test_a_plugin_model_is_listed_unimported_and_imported_when_named(plugin_site, tiny_corpus):
    write_plugin(plugin_site, "toy-topics", {"count_topics": "toy_topics:CountTopics"}, {"toy_topics.py": toy_model("count_topics")})
    models = model_registry()
    assert "count_topics" in models and models.names() == sorted([*models.builtin_names(), "count_topics"])
    with pytest.raises(InputError, match=r"Unknown model 'nope'\. Available: bertopic, count_topics, ctm, elda, "):
        models.get("nope")
    assert "toy_topics" not in sys.modules, "listing the models imported the plugin"
    model_class = models.get("count_topics")
    assert issubclass(model_class, TopicModel) and model_class.__module__ == "toy_topics"
    assert models.plugin_source("count_topics") == {
        "distribution": "toy-topics", "version": "0.1.0", "entry_point": "count_topics = toy_topics:CountTopics"}
    assert models.plugin_source("elda") is None and models.plugin_source("nope") is None
    fitted = model_class(2, random_state=4).fit(tiny_corpus)
    assert fitted.output_.model == "count_topics" and fitted.output_.seed == 4 and fitted.num_topics_ == 2


def test_a_config_names_a_plugin_model_like_a_builtin_one(plugin_site):
    write_plugin(plugin_site, "toy-topics", {"count_topics": "toy_topics:CountTopics"}, {"toy_topics.py": toy_model("count_topics")})
    MODELS.discover_plugins()
    models = [{"model": "elda"}, {"model": "count_topics", "num_topics": 3, "settings": {"top_words": 5}}]
    config = BenchmarkConfig.from_dict({"models": models})
    assert config.models[1].build(MODELS, seed=2).get_params() == {"num_topics": 3, "random_state": 2, "top_words": 5}
    with pytest.raises(InputError, match=r"models\[1\].settings: model 'count_topics' has no setting 'colour'; its settings: top_words"):
        BenchmarkConfig.from_dict({"models": [models[0], {"model": "count_topics", "settings": {"colour": 1}}]})
    with pytest.raises(InputError, match=r"models\[0\] \(count_topics\): count_topics: num_topics must be an integer >= 1, got None"):
        BenchmarkConfig.from_dict({"models": [{"model": "count_topics"}]})


def test_a_broken_plugin_breaks_only_its_own_name(plugin_site):
    write_plugin(plugin_site, "broken-plugin", {"broken": "broken_plugin:Model"},
                 {"broken_plugin.py": "import not_an_installed_package_xyz\n"})
    write_plugin(plugin_site, "toy-topics", {"count_topics": "toy_topics:CountTopics"}, {"toy_topics.py": toy_model("count_topics")})
    models = model_registry()
    expected = (r"model plugin 'broken' \(entry point 'broken = broken_plugin:Model' in group 'topicbench\.models' "
                r"of distribution broken-plugin 0\.1\.0\) could not be imported: ModuleNotFoundError: "
                r"No module named 'not_an_installed_package_xyz'")
    with pytest.raises(PluginError, match=expected):
        models.get("broken")
    assert models.get("count_topics").name == "count_topics"
    assert models.get("gibbs_lda").name == "gibbs_lda"
    MODELS.discover_plugins()
    BenchmarkConfig.from_dict({"models": [{"model": "count_topics", "num_topics": 2}]})  # the others' configs run
    with pytest.raises(PluginError, match=expected):
        BenchmarkConfig.from_dict({"models": [{"model": "broken"}]})


def test_a_plugin_may_not_take_a_builtin_models_name(plugin_site):
    # importing this module would raise: the clash is found from the metadata alone
    write_plugin(plugin_site, "clashing-plugin", {"elda": "clashing_plugin:Model"},
                 {"clashing_plugin.py": "raise RuntimeError('the clashing plugin was imported')\n"})
    models = model_registry()
    assert models.names().count("elda") == 1
    with pytest.raises(PluginError, match=(
        r"model plugin 'elda' \(entry point 'elda = clashing_plugin:Model' in group 'topicbench\.models' of "
        r"distribution clashing-plugin 0\.1\.0\) takes the name of the built-in model 'elda'; rename the entry point"
    )):
        models.get("elda")
    assert models.get("gensim_lda").name == "gensim_lda"


def test_two_plugins_may_not_claim_one_name(plugin_site):
    source = {"toy_topics.py": toy_model("count_topics")}
    write_plugin(plugin_site, "first-plugin", {"count_topics": "toy_topics:CountTopics"}, source)
    write_plugin(plugin_site, "second-plugin", {"count_topics": "toy_topics:CountTopics"})
    with pytest.raises(PluginError, match=(
        r"2 plugins claim the model name 'count_topics': .*of distribution first-plugin 0\.1\.0\); "
        r".*of distribution second-plugin 0\.1\.0\); rename or uninstall all but one"
    )):
        model_registry().get("count_topics")


BAD_OBJECTS = '''
from topicbench.baselines.base import TopicModel


def make_model():
    return None


class NotAModel:
    name = "bad"


class Unfinished(TopicModel):
    name = "bad"
'''


@pytest.mark.parametrize("target, problem", [
    ("bad_objects:make_model", r"<function make_model at 0x[0-9a-f]+> is not a subclass of topicbench\.baselines\.base\.TopicModel"),
    ("bad_objects:NotAModel", r"<class 'bad_objects\.NotAModel'> is not a subclass of topicbench\.baselines\.base\.TopicModel"),
    ("bad_objects:Unfinished", r"Unfinished is abstract: it does not implement _fit"),
    ("toy_topics:CountTopics", r"CountTopics\.name is 'count_topics'; set it to the entry point's name 'bad'"),
    ("bad_objects:Missing", r"could not be imported: AttributeError: module 'bad_objects' has no attribute 'Missing'"),
])
def test_a_plugin_must_give_a_topic_model_of_its_name(plugin_site, target, problem):
    write_plugin(plugin_site, "bad-objects", {"bad": target},
                 {"bad_objects.py": BAD_OBJECTS, "toy_topics.py": toy_model("count_topics")})
    where = rf"model plugin 'bad' \(entry point 'bad = {target}' in group 'topicbench\.models' of distribution bad-objects 0\.1\.0\)"
    with pytest.raises(PluginError, match=f"{where}:? {problem}"):
        model_registry().get("bad")


def test_unreadable_plugin_metadata_leaves_the_builtin_models(monkeypatch, caplog):
    def unreadable(**selection):
        raise ValueError("malformed entry_points.txt")

    monkeypatch.setattr(importlib.metadata, "entry_points", unreadable)
    models = model_registry()
    with caplog.at_level(logging.WARNING, logger="topicbench.core.registry"):
        assert models.names() == models.builtin_names()
    assert "cannot read the 'topicbench.models' entry points of the installed distributions: ValueError: malformed" in caplog.text
    assert models.get("elda").name == "elda"


def test_entry_points_are_read_once_until_discovered_again(monkeypatch):
    calls = []
    real = importlib.metadata.entry_points

    def counted(**selection):
        calls.append(selection)
        return real(**selection)

    monkeypatch.setattr(importlib.metadata, "entry_points", counted)
    models = model_registry()
    models.names(), models.get("elda"), "x" in models
    assert calls == [{"group": "topicbench.models"}]
    models.discover_plugins()
    assert len(calls) == 2


@pytest.mark.slow
def test_the_example_plugin_installed_with_pip_keeps_the_model_contract(tmp_path, lee_corpus, small_synthetic):
    site = install_example_plugin(tmp_path)
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    try:
        models = model_registry()
        assert EXAMPLE_MODEL in models.plugins()
        check_model_contract(models, EXAMPLE_MODEL, lee_corpus, small_synthetic)
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("topicbench_nmf", None)


def test_the_manual_shows_the_example_plugin_as_it_is():
    page = (ROOT / "docs" / "own-model.md").read_text(encoding="utf-8")
    for name in ("pyproject.toml", "topicbench_nmf.py"):
        assert (EXAMPLE_PLUGIN / name).read_text(encoding="utf-8") in page, f"docs/own-model.md does not show examples/nmf_plugin/{name} as it is"
