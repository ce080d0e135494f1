"""Benchmark runs described by config (YAML), validated against the registries, fingerprinted."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path


from topicbench.core.constants import COHERENCE_TOP_N
from topicbench.core.preprocess import PreprocessConfig
from topicbench.core.validation import InputError

#: Default MLflow store: a sqlite database under results/ (git-ignored), relative to the working
#: folder; the CLI makes it absolute (``DEFAULT_TRACKING_DATABASE`` under the current folder).
DEFAULT_TRACKING_DATABASE = Path("results") / "mlflow.db"
DEFAULT_TRACKING_URI = f"sqlite:///{DEFAULT_TRACKING_DATABASE.as_posix()}"
#: The key of ``num_topics: {match: LABEL}``: a model fitted at the K another model used.
MATCH_KEY = "match"
DEFAULT_METRICS = (
    "umass", "npmi", "uci", "cv", "embedding_pairwise", "embedding_centroid",
    "topic_diversity", "inverted_rbo", "log_likelihood_own", "log_likelihood_randk",
)


@dataclass(frozen=True)
class CorpusSpec:
    """A corpus: ``source`` is 'lee', an OCTIS folder, a text file, or the name of a dataset fetched
    by ``topicbench data fetch NAME`` (``core/datasets.py``; an existing path of that name wins);
    ``preprocessing`` holds :class:`PreprocessConfig` fields. A dataset by name is read as its
    publisher preprocessed it (``preprocessed: true``) unless ``preprocessing`` says otherwise."""

    name: str
    source: str = "lee"
    preprocessing: dict = field(default_factory=dict)

    def _is_dataset_name(self) -> bool:
        from topicbench.core.datasets import is_dataset_name

        if not isinstance(self.source, str) or not self.source.strip():
            return False
        return not Path(self.source).expanduser().exists() and is_dataset_name(self.source)

    def resolved_source(self) -> str:
        """The path (or 'lee') to read: a dataset name becomes its folder in the data cache."""
        from topicbench.core.datasets import cached_dataset_folder

        return str(cached_dataset_folder(self.source)) if self._is_dataset_name() else self.source

    def preprocess_config(self) -> PreprocessConfig:
        defaults = {"preprocessed": True} if self._is_dataset_name() else {}
        return PreprocessConfig.from_dict({**defaults, **self.preprocessing})

    def check(self, where: str) -> None:
        """The name, the source (the built-in corpus, a path that exists, or a dataset in the data
        cache) and the preprocessing settings, before any corpus is read."""
        from topicbench.core.datasets import DATASETS, DatasetError
        from topicbench.core.io import BUILTIN_CORPUS, check_regular_file

        _require_text(self.name, f"{where}: name")
        _require_text(self.source, f"{where} ({self.name}): source")
        if not isinstance(self.preprocessing, dict):
            raise InputError(f"{where} ({self.name}): preprocessing must be a mapping of settings, got {self.preprocessing!r}")
        if self._is_dataset_name():
            try:
                self.resolved_source()
            except DatasetError as error:
                raise InputError(f"{where} ({self.name}): {error}") from None
        elif self.source != BUILTIN_CORPUS and Path(self.source).expanduser().exists():
            source = Path(self.source).expanduser()
            if not source.is_dir():  # a pipe or a device would block or never end when read
                try:
                    check_regular_file(source, "corpus source")
                except InputError as error:
                    raise InputError(f"{where} ({self.name}): {error}") from None
        elif self.source != BUILTIN_CORPUS:
            raise InputError(
                f"{where} ({self.name}): corpus source not found: {self.source} (give an OCTIS folder, "
                f"a text file with one document a line, {BUILTIN_CORPUS!r}, or a dataset name fetched by "
                f"`topicbench data fetch NAME`: {', '.join(n for n, d in DATASETS.items() if d.is_corpus)}; relative paths are read from {Path.cwd()})"
            )
        self.preprocess_config()


@dataclass(frozen=True)
class ModelSpec:
    """A model of the registry with its settings. ``label`` names this variant in reports
    (default: the model name); ``num_topics`` is K where the model takes one, or ``{"match":
    LABEL}``: on each corpus and seed, the K that the config's model ``LABEL`` used there (its fit
    comes first; :meth:`with_topics` gives the spec at that K); ``metrics`` restricts the config's
    metrics for this model. A grid of K (``num_topics: [20, 50, 100]``) is one spec per K
    (:func:`expand_num_topics_grid`)."""

    model: str
    num_topics: int | dict | None = None
    settings: dict = field(default_factory=dict)
    label: str | None = None
    metrics: tuple | None = None  # only these of the config's metrics (default: all of them)

    @property
    def name(self) -> str:
        return self.label or self.model

    @property
    def matched_label(self) -> str | None:
        """The label of the model whose K this one takes (``num_topics: {match: LABEL}``), else None."""
        return self.num_topics.get(MATCH_KEY) if isinstance(self.num_topics, dict) else None

    def with_topics(self, num_topics: int) -> "ModelSpec":
        """This spec at K = ``num_topics`` (a matched spec once its K is known)."""
        return replace(self, num_topics=int(num_topics))

    def build(self, models, seed: int = 0):
        """The model this spec names, unfitted: ``models.get(model)(num_topics, random_state=seed,
        **settings)``, which checks K and every setting (cheap: models load nothing until they fit)."""
        return models.get(self.model)(self.num_topics, random_state=seed, **self.settings)

    def check(self, models, where: str) -> None:
        """The model's name, label and metrics' types, then its settings and K through the model's
        own checks, by building it (:meth:`build`)."""
        _require_text(self.model, f"{where}: model")
        if self.label is not None:
            _require_text(self.label, f"{where}: label")
        if not isinstance(self.settings, dict):
            raise InputError(f"{where} ({self.name}): settings must be a mapping, got {self.settings!r}")
        if self.metrics is not None and not all(isinstance(m, str) for m in self.metrics):
            raise InputError(f"{where} ({self.name}): metrics must list metric names, got {list(self.metrics)}")
        model_class = models.get(self.model)
        if self.matched_label is not None and model_class.topics_decided_by:
            raise InputError(
                f"{where} ({self.name}): num_topics: {{match: {self.matched_label}}} needs a model that takes K, and "
                f"{self.model} chooses how many topics it uses from {model_class.topics_decided_by}; match a model "
                "that takes num_topics (gensim_lda, nmf, ...) to it instead"
            )
        unknown = sorted(set(self.settings) - set(model_class.defaults))
        if unknown:
            raise InputError(
                f"{where}: model {self.name!r} ({self.model}) has no setting {unknown[0]!r}; "
                f"its settings: {', '.join(sorted(model_class.defaults))}"
            )
        if self.num_topics is not None and model_class.topics_decided_by:
            raise InputError(
                f"{where} ({self.name}): num_topics does not apply to {self.model}, which chooses how many topics it "
                f"uses from {model_class.topics_decided_by}; leave num_topics out and set those instead"
            )
        try:  # a matched K is known only after the fit it matches: the settings are checked at K = 2
            (self if self.matched_label is None else self.with_topics(2)).build(models)
        except InputError as error:
            raise InputError(f"{where} ({self.name}): {error}") from None


@dataclass(frozen=True)
class BenchmarkConfig:
    """corpora x models x seeds, the metrics to compute and where to record them.

    Attributes
    ----------
    experiment : str
        MLflow experiment name (one parent run per benchmark run).
    corpora, models : tuples of specs
    seeds : tuple of int
    metrics : tuple of str
        Names from the metrics registry.
    top_n : tuple of int
        The N grid for topic-level metrics.
    tracking_uri : str
        Any MLflow tracking URI (default: a sqlite database under results/).
    workers : int
        Dask worker processes fitting models concurrently (1: in the flow's process).
    scheduler : str or None
        Address of an existing Dask scheduler instead of a local cluster.
    report_sections : tuple of str or None
        Sections of the report, in order, from the report's section registry
        (``topicbench.tasks.report.sections.REPORT_SECTIONS``); None: the default sections.
    llm : dict or None
        The OpenAI-compatible endpoint the LLM metrics ask, and how
        (:data:`topicbench.tasks.llm.judge.LLM_SCHEMA`); needed by the metrics that ask an LLM
        (``llm_rating``, ``llm_intrusion``, ``llm_fit``, ``llm_rank``).
    search : dict or None
        What ``topicbench search`` searches (:data:`topicbench.flows.search_plan.SEARCH_SCHEMA`):
        each model's space, the objectives, the sampler; ``topicbench run`` fits the models as given.
    coherence : dict or None
        ``oov`` (top words the reference corpus lacks: ``"error"``, the default, or ``"drop"``) and
        ``reference`` (``"train"``, the default, ``"test"``, ``"all"``, or ``{source, preprocessing}``
        of an external corpus) (:func:`~topicbench.flows.config.schema.coherence_schema`); None: the defaults.
    """

    experiment: str = "topicbench"
    corpora: tuple = (CorpusSpec(name="lee", source="lee"),)
    models: tuple = ()
    seeds: tuple = (0,)
    metrics: tuple = DEFAULT_METRICS
    top_n: tuple = COHERENCE_TOP_N
    tracking_uri: str = DEFAULT_TRACKING_URI
    workers: int = 1
    scheduler: str | None = None
    report_sections: tuple | None = None
    llm: dict | None = None
    search: dict | None = None
    coherence: dict | None = None

    @classmethod
    def from_yaml(cls, path) -> "BenchmarkConfig":
        """The config in a YAML file, checked (:func:`~topicbench.flows.config.file.read_yaml_config`
        reads it, :meth:`from_dict` checks it)."""
        from topicbench.flows.config.file import read_yaml_config

        return cls.from_dict(read_yaml_config(path), where=str(path))

    @classmethod
    def from_dict(cls, data: dict, *, where: str = "config") -> "BenchmarkConfig":
        """A config from its data, checked against the declared schema (every type and name,
        :func:`~topicbench.flows.config.schema.check_config_data`) and then as a whole
        (:meth:`validate`), before any work."""
        from topicbench.flows.config.schema import check_config_data

        if not isinstance(data, dict):
            raise InputError(f"{where}: the config must be a mapping of settings, got {type(data).__name__}")
        check_config_data(data, where)
        values = dict(data)
        values["corpora"] = tuple(CorpusSpec(**item) for item in data.get("corpora", ())) or cls.corpora
        values["models"] = tuple(
            ModelSpec(**{**item, "metrics": tuple(item["metrics"]) if item.get("metrics") is not None else None})
            for i, entry in enumerate(data.get("models", ()))
            for item in expand_num_topics_grid(entry, f"{where}: models[{i}].num_topics")
        )
        for key in ("seeds", "metrics", "top_n", "report_sections"):
            if values.get(key) is not None:
                values[key] = tuple(values[key])
        config = cls(**values)
        config.validate(where)
        return config

    def validate(self, where: str = "config") -> "BenchmarkConfig":
        """Check every field's type and range, fields against each other, names against the
        registries and each model's settings and K through the model's own checks, so that a
        config that cannot run fails here, before any work (errors name the field)."""
        from topicbench.baselines.registry import MODELS
        from topicbench.core.metrics.registry import METRICS

        from topicbench.flows.checks import parse_scheduler_address

        _require_text(self.experiment, f"{where}: experiment")
        _require_text(self.tracking_uri, f"{where}: tracking_uri")
        if not self.models:
            raise InputError(f"{where}: no models: list at least one under 'models'")
        if not self.seeds or not all(_is_integer(s) and s >= 0 for s in self.seeds):
            raise InputError(f"{where}: seeds must be a non-empty list of integers >= 0, got {list(self.seeds)}")
        if len(set(self.seeds)) != len(self.seeds):
            raise InputError(f"{where}: seeds repeat: {list(self.seeds)} (each seed is one run per model and corpus)")
        if not self.top_n or not all(_is_integer(n) and n >= 2 for n in self.top_n):
            raise InputError(f"{where}: top_n must list integers >= 2, got {list(self.top_n)}")
        if not _is_integer(self.workers) or self.workers < 1:
            raise InputError(f"{where}: workers must be an integer >= 1, got {self.workers!r}")
        if self.scheduler is not None:
            parse_scheduler_address(self.scheduler)
        names = [c.name for c in self.corpora]
        if len(set(names)) != len(names):
            raise InputError(f"{where}: corpus names must be unique, got {names}")
        for i, corpus in enumerate(self.corpora):
            corpus.check(f"{where}: corpora[{i}]")
        _check_models(self.models, MODELS, where)
        if not self.metrics or not all(isinstance(m, str) for m in self.metrics):
            raise InputError(f"{where}: metrics must be a non-empty list of metric names, got {list(self.metrics)}")
        for metric in self.metrics:
            METRICS.get(metric)
        for spec in self.models:
            outside = sorted(set(spec.metrics or ()) - set(self.metrics))
            if outside:
                raise InputError(f"{where}: model {spec.name!r} lists metric {outside[0]!r}, which is not in the config's metrics")
        if isinstance((self.coherence or {}).get("reference"), dict):  # an external reference: read like a corpus
            CorpusSpec(name="coherence reference", **self.coherence["reference"]).check(f"{where}: coherence.reference")
        if self.report_sections is not None:
            _check_report_sections(self.report_sections, where)
        if self.llm is not None:  # what its schema cannot say: finite numbers, no key in the URL
            from topicbench.tasks.llm.judge import check_llm_block

            try:
                check_llm_block(self.llm)
            except InputError as error:
                raise InputError(f"{where}: {error}") from None
        asking = [f"the metrics {', '.join(self.llm_metrics())}"] if self.llm_metrics() else []
        asking += [f"the model {name!r}" for name in self.llm_models()]
        missing = [key for key in ("base_url", "model") if key not in (self.llm or {})]
        if asking and missing:
            raise InputError(
                f"{where}: {' and '.join(asking)} {'ask' if len(asking) > 1 or self.llm_metrics() else 'asks'} an LLM, "
                f"and its llm.{missing[0]} is not given: give the "
                "config an llm: block (base_url, model) or run with --llm-base-url URL --llm-model NAME"
            )
        return self

    def coherence_settings(self) -> tuple:
        """(oov, reference) of the ``coherence`` block, defaults filled in: ``("error", "train")``."""
        block = self.coherence or {}
        return block.get("oov", "error"), block.get("reference", "train")

    def coherence_reference(self):
        """The ``coherence.reference`` to read: ``"train"``, ``"test"``, ``"all"``, or an external
        corpus as a :class:`CorpusSpec` (its vocabulary from all its documents unless its
        preprocessing says otherwise: a reference has no held-out part)."""
        reference = self.coherence_settings()[1]
        if isinstance(reference, str):
            return reference
        return CorpusSpec(name=f"{Path(reference['source']).stem} (reference)", source=reference["source"],
                          preprocessing={"vocabulary_from": "all", **reference.get("preprocessing", {})})

    def llm_metrics(self) -> list:
        """The config's metrics that ask an LLM (those that need ``llm``)."""
        from topicbench.core.metrics.registry import METRICS

        return [name for name in self.metrics if "llm" in METRICS.get(name).needs]

    def llm_models(self) -> list:
        """The names of the config's models that ask an LLM themselves (TopicGPT: ``asks_llm``)."""
        from topicbench.baselines.registry import MODELS

        return [spec.name for spec in self.models if getattr(MODELS.get(spec.model), "asks_llm", False)]

    def llm_settings(self):
        """(endpoint, judge settings) of the ``llm`` block, or None when there is none."""
        from topicbench.tasks.llm.judge import llm_settings

        return llm_settings(self.llm) if self.llm is not None else None

    def to_dict(self) -> dict:
        data = json.loads(json.dumps(asdict(self)))
        if data["coherence"] is None:  # unset: written as configs were before it existed
            del data["coherence"]
        return data

    def fingerprint(self) -> str:
        """SHA-256 of the canonical JSON of the whole config (without an unset ``llm``,
        ``search`` or ``coherence``, so that configs written before they existed keep their fingerprints)."""
        data = self.to_dict()
        for optional in ("llm", "search", "coherence"):
            if data.get(optional) is None:
                data.pop(optional, None)
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()

    def replace(self, **changes) -> "BenchmarkConfig":
        data = {**self.to_dict(), **changes}
        return BenchmarkConfig.from_dict(data)


def default_config(tracking_uri: str = DEFAULT_TRACKING_URI) -> BenchmarkConfig:
    """The built-in benchmark: the Lee corpus with E-LDA, gensim LDA and Gibbs LDA (the README's job)."""
    return BenchmarkConfig.from_dict(
        {
            "experiment": "lee-default",
            "corpora": [{"name": "lee", "source": "lee"}],
            "models": [
                # every model at its defaults (gibbs_lda's are the paper's "Gibbs": alpha 1, 1000 sweeps)
                {"model": "elda"},
                {"model": "gensim_lda", "num_topics": 20},
                {"model": "gibbs_lda", "num_topics": 20},
            ],
            "seeds": [0],
            "tracking_uri": tracking_uri,
        },
        where="default config",
    )


def expand_num_topics_grid(item, where: str) -> list:
    """A config's model entry as one entry per K where its ``num_topics`` is a grid (a list, or a
    range ``{low, high, step}``: the search spaces' vocabulary,
    :func:`~topicbench.core.search_space.num_topics_grid`), each labelled as a search labels its
    points (``gensim_lda[num_topics=20]``); any other entry as it is."""
    from topicbench.core.search_space import NUM_TOPICS, num_topics_grid, point_label

    value = item.get(NUM_TOPICS) if isinstance(item, dict) else None
    if not (isinstance(value, list) or (isinstance(value, dict) and MATCH_KEY not in value)):
        return [item]
    label = item.get("label") or item.get("model")
    return [{**item, NUM_TOPICS: k, "label": point_label(label, {NUM_TOPICS: k})} for k in num_topics_grid(value, where)]


def _check_models(models, registry, where: str) -> None:
    """Labels unique, each model's name, settings and K (:meth:`ModelSpec.check`), then each
    ``num_topics: {match: LABEL}`` against the others (:func:`_check_matches`)."""
    labels = [m.name for m in models]
    if len(set(labels)) != len(labels):
        raise InputError(f"{where}: two models share the label {[l for l in labels if labels.count(l) > 1][0]!r}; give each a 'label'")
    for i, spec in enumerate(models):
        spec.check(registry, f"{where}: models[{i}]")
    _check_matches(models, where)


def _check_matches(models, where: str) -> None:
    """Each ``num_topics: {match: LABEL}`` names another model of the config whose K is its own
    (one given or one its fit chooses): never itself, never an absent model, never another match."""
    labels = {spec.name: spec for spec in models}
    for i, spec in enumerate(models):
        target = spec.matched_label
        if target is None:
            continue
        if target not in labels:
            raise InputError(f"{where}: models[{i}] ({spec.name}): num_topics: {{match: {target}}} names no model of "
                             f"this config; its models: {', '.join(labels)}")
        if target == spec.name:
            raise InputError(f"{where}: models[{i}] ({spec.name}): num_topics: {{match: {target}}} names the model "
                             "itself; match another model's label")
        if labels[target].matched_label is not None:
            raise InputError(f"{where}: models[{i}] ({spec.name}): num_topics: {{match: {target}}} names a model whose "
                             f"K is matched itself (to {labels[target].matched_label}); match "
                             f"{labels[target].matched_label} directly")


def _check_report_sections(sections, where: str) -> None:
    from topicbench.flows.report import REPORT_SECTIONS  # with the sections registered by flows

    if not sections or not all(isinstance(name, str) for name in sections):
        raise InputError(f"{where}: report_sections must be a non-empty list of section names, got {list(sections)}")
    for name in sections:
        if name not in REPORT_SECTIONS:
            raise InputError(f"{where}: unknown report section {name!r}. Available: {', '.join(REPORT_SECTIONS.names())}")


def _is_integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # YAML's true is not seed 1


def _require_text(value, what: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{what} must be a non-empty string, got {value!r}")
