"""The benchmark config's schema: every field, each model's settings and every name a config may
use, declared once as JSON Schema (draft 2020-12).

:class:`~topicbench.flows.config.model.BenchmarkConfig` checks a config against it before anything
else, so that a wrong type anywhere fails at once with the field's path; ``topicbench schema``
prints it for editors (YAML language servers read ``# yaml-language-server: $schema=FILE``).
The declarations come from their owners: preprocessing from
:data:`~topicbench.core.preprocess.PREPROCESSING_SCHEMA`, a model's settings from its
``defaults`` (:meth:`~topicbench.baselines.base.TopicModel.settings_schema`), the names from the
model, metric and report-section registries. Ranges that depend on other values (K against a
model, κ ≥ 1) stay with the models' own checks, which run right after.
"""

from __future__ import annotations

from topicbench.core.constants import COHERENCE_TOP_N, MAX_SEED
from topicbench.core.preprocess import PREPROCESSING_SCHEMA
from topicbench.core.schema import DRAFT, NAME_SCHEMA, check_schema, integer

#: Where the published schema is kept in the repository (``topicbench schema --out`` rewrites it).
SCHEMA_FILE_NAME = "topicbench-config.schema.json"


def config_schema(model_names=None, *, plugins: bool = True, section_names: bool = True) -> dict:
    """The JSON Schema of a benchmark config.

    Parameters
    ----------
    model_names : iterable of str, optional
        The models whose settings are spelled out (default: every registered model). Any
        registered name is accepted either way; checking a config needs only the models it
        names, which keeps other models' modules unimported.
    plugins : bool
        Include the models of installed plugins (the published file holds this package's own).
    section_names : bool
        Spell out the report's section names; without them ``report_sections`` takes any names.
        Naming them imports the report's modules (a second or more of CPU), which checking a
        config that gives no ``report_sections`` (a run's start) has no use for.
    """
    from topicbench.baselines.registry import MODELS
    from topicbench.core.metrics.registry import METRICS
    from topicbench.flows.search_plan import SEARCH_SCHEMA
    from topicbench.tasks.llm.judge import LLM_SCHEMA

    names = sorted(MODELS.names() if plugins else MODELS.builtin_names())
    detailed = names if model_names is None else [name for name in names if name in set(model_names)]
    metric_name = {"title": "metric", "enum": sorted(METRICS.names())}
    return {
        "$schema": DRAFT,
        "title": "topicbench benchmark config",
        "description": "corpora x models x seeds, the metrics to compute and where to track them (topicbench run CONFIG.yaml)",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "experiment": {**NAME_SCHEMA, "description": "MLflow experiment name; the report goes to results/<experiment>/"},
            "corpora": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/corpus"},
                        "description": "leave out for the built-in Lee corpus"},
            "models": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/model"}},
            "seeds": {"type": "array", "minItems": 1, "uniqueItems": True, "items": integer(0, MAX_SEED),
                      "description": "each seed is one run per model and corpus"},
            "metrics": {"type": "array", "minItems": 1, "uniqueItems": True, "items": metric_name},
            "top_n": {"type": "array", "minItems": 1, "uniqueItems": True, "items": integer(2),
                      "default": list(COHERENCE_TOP_N), "description": "the N grid of topic-level metrics"},
            "tracking_uri": {"type": "string", "minLength": 1,
                             "description": "sqlite:///PATH/mlflow.db or http(s)://HOST:PORT of an MLflow server"},
            "workers": {**integer(1), "description": "Dask worker processes fitting models concurrently"},
            "scheduler": {"type": ["string", "null"], "description": "tcp://HOST:PORT of a running Dask scheduler"},
            "report_sections": {
                "type": ["array", "null"], "minItems": 1,
                "items": {"title": "report section", **({"enum": _section_names()} if section_names else {"type": "string"})},
            },
            "llm": {"anyOf": [LLM_SCHEMA, {"type": "null"}]},
            "search": {"anyOf": [SEARCH_SCHEMA, {"type": "null"}]},
            "coherence": {"anyOf": [coherence_schema(), {"type": "null"}]},
        },
        "$defs": {"corpus": _corpus_schema(), "model": _model_schema(MODELS, names, detailed, metric_name)},
    }


def _corpus_schema() -> dict:
    return {
        "type": "object", "additionalProperties": False, "required": ["name"],
        "properties": {
            "name": NAME_SCHEMA,
            "source": {"type": "string", "minLength": 1,
                       "description": "'lee', an OCTIS folder, a text file (one document a line), or a dataset name"},
            "preprocessing": PREPROCESSING_SCHEMA,
        },
    }


def coherence_schema() -> dict:
    """The ``coherence`` block: what coherence does with top words the reference corpus lacks
    (``oov``), and what the reference corpus is (``reference``): a partition of each corpus, or
    an external corpus read like one."""
    from topicbench.core.metrics.context import COHERENCE_OOV_POLICIES, REFERENCE_PARTITIONS

    external = {
        "type": "object", "additionalProperties": False, "required": ["source"],
        "properties": {
            "source": {"type": "string", "minLength": 1,
                       "description": "an OCTIS folder, a text file (one document a line), 'lee', or a dataset name"},
            "preprocessing": {**PREPROCESSING_SCHEMA,
                              "description": "how its texts become words: use your corpora's, or top words will not match"},
        },
    }
    return {
        "type": "object", "additionalProperties": False,
        "properties": {
            "oov": {"enum": list(COHERENCE_OOV_POLICIES), "default": "error",
                    "description": "top words the reference lacks: 'error' (the full measure does not apply to that "
                                   "model; its coherence over the words the reference has is ranked instead, the "
                                   "words dropped stated) or 'drop' (skip them and take further words, as gensim does)"},
            "reference": {"anyOf": [{"enum": list(REFERENCE_PARTITIONS)}, external], "default": "train",
                          "description": "what coherence counts co-occurrences in: 'train' (the documents each model was "
                                         "fitted on), 'test', 'all' (every document of the corpus), or {source, "
                                         "preprocessing}: an external corpus"},
        },
    }


#: ``num_topics`` as a grid of K, in the search spaces' vocabulary (a list, or a stepped range).
_NUM_TOPICS_GRID = {"type": "array", "minItems": 1, "uniqueItems": True, "items": integer(2)}
_NUM_TOPICS_RANGE = {"type": "object", "additionalProperties": False, "required": ["low", "high", "step"],
                     "properties": {"low": integer(2), "high": integer(2), "step": integer(1)}}
#: ``num_topics: {match: LABEL}``: the K another model of the config used (per corpus and seed).
_NUM_TOPICS_MATCH = {"type": "object", "additionalProperties": False, "required": ["match"],
                     "properties": {"match": {**NAME_SCHEMA, "description": "the label of the model whose K to use"}}}


def _model_schema(models, names: list, detailed: list, metric_name: dict) -> dict:
    """A model entry: its name, K, label, metrics and, by its name, its own settings."""
    return {
        "type": "object", "additionalProperties": False, "required": ["model"],
        "properties": {
            "model": {"title": "model", "enum": names},
            "num_topics": {"anyOf": [integer(1), {"type": "null"}, _NUM_TOPICS_GRID, _NUM_TOPICS_RANGE, _NUM_TOPICS_MATCH],
                           "description": "K, where the model takes one: a number; a grid (a list, or {low, high, step}: "
                                          "one model entry per K); or {match: LABEL}, on each corpus and seed the K "
                                          "that the model LABEL used there"},
            "settings": {"type": "object"},
            "label": {"anyOf": [NAME_SCHEMA, {"type": "null"}],
                      "description": "this variant's name in reports (default: the model name)"},
            "metrics": {"type": ["array", "null"], "uniqueItems": True, "items": metric_name,
                        "description": "only these of the config's metrics"},
        },
        "allOf": [
            {"if": {"properties": {"model": {"const": name}}, "required": ["model"]},
             "then": {"properties": {"settings": models.get(name).settings_schema()}}}
            for name in detailed
        ],
    }


def check_config_data(data: dict, where: str) -> None:
    """Check a config's data (as read from YAML) against :func:`config_schema`, spelling out the
    settings of the models it names; an :class:`InputError` names the first violation."""
    named = {item.get("model") for item in data.get("models") or () if isinstance(item, dict)}
    schema = config_schema(model_names={name for name in named if isinstance(name, str)},
                           section_names=data.get("report_sections") is not None)
    check_schema(data, schema, where)


def _section_names() -> list:
    from topicbench.flows.report import REPORT_SECTIONS

    return sorted(REPORT_SECTIONS.names())
