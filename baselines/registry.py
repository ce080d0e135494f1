"""``MODELS``: registry names -> :class:`~topicbench.baselines.base.TopicModel` classes.

Entries are lazy so that optional heavy packages are imported only when a model is named.
Models of other installed packages join through the ``topicbench.models`` entry-point group
(:data:`PLUGIN_GROUP`): the entry point's name is the model's registry name, its value
``package.module:ClassName``; the plugin is imported only when a config names its model.
"""

from __future__ import annotations

import inspect

from topicbench.core.registry import Registry

from .base import TopicModel

#: The entry-point group of model plugins.
PLUGIN_GROUP = "topicbench.models"

#: The models of this package: registry name -> ``module:ClassName``.
BUILTIN_MODELS = {
    "elda": "topicbench.baselines.elda:ELDAModel",
    "gensim_lda": "topicbench.baselines.gensim_lda:GensimLDA",
    "gibbs_lda": "topicbench.baselines.gibbs_lda:GibbsLDA",
    "prodlda": "topicbench.baselines.prodlda:ProdLDA",
    "ctm": "topicbench.baselines.ctm:CTM",
    "etm": "topicbench.baselines.etm:ETM",
    "bertopic": "topicbench.baselines.bertopic:BERTopicModel",
    "fastopic": "topicbench.baselines.fastopic:FASTopic",
    "nmf": "topicbench.baselines.nmf:NMF",
    "lsi": "topicbench.baselines.lsi:LSI",
    "hdp": "topicbench.baselines.hdp:HDP",
    "keynmf": "topicbench.baselines.turftopic_models:KeyNMF",
    "s3": "topicbench.baselines.turftopic_models:S3",
    "gmm": "topicbench.baselines.turftopic_models:GMM",
    "topicgpt": "topicbench.baselines.topicgpt:TopicGPT",
}


def check_model_class(name: str, obj) -> None:
    """Raise TypeError or ValueError unless ``obj`` can serve as the model ``name``: a concrete
    :class:`TopicModel` subclass whose ``name`` is ``name`` (the output and the runs carry it)."""
    if not (isinstance(obj, type) and issubclass(obj, TopicModel)):
        raise TypeError(f"{obj!r} is not a subclass of topicbench.baselines.base.TopicModel")
    if inspect.isabstract(obj):
        raise TypeError(f"{obj.__qualname__} is abstract: it does not implement {', '.join(sorted(obj.__abstractmethods__))}")
    if obj.name != name:
        raise ValueError(f"{obj.__qualname__}.name is {obj.name!r}; set it to the entry point's name {name!r}")


def model_registry() -> Registry:
    """A registry of the built-in models plus the installed plugins (read on first use)."""
    models = Registry("model", plugin_group=PLUGIN_GROUP, check_plugin=check_model_class)
    for name, path in BUILTIN_MODELS.items():
        models.register(name, lazy=path)
    return models


MODELS = model_registry()
