"""The interface every topic model implements, and the timing/memory helpers they share."""

from __future__ import annotations

import abc
import importlib
import threading
import time
from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import psutil

from topicbench.core.constants import MAX_SEED, NOT_A_PROBABILITY_MODEL
from topicbench.core.corpus import Corpus
from topicbench.core.output import PROBABILITY_TOLERANCE, TopicModelOutput
from topicbench.core.schema import check_schema
from topicbench.core.validation import InputError, check_vocabulary_matches

from .bounds import check_finite_settings, with_maximum
from .convergence import convergence


#: Attributes every fitted model has; no resolved value may take their names.
_FITTED_FIELDS = ("output_", "resolved_")


class ModelError(RuntimeError):
    """A model could not fit: the message names the model and the reason."""


class FitStopped(RuntimeError):
    """The caller asked a fit to stop (``fit(stop_requested=...)``): it stopped between two of its
    steps, with no output."""


class TopicModel(abc.ABC):
    """A topic model as an estimator: settings at construction, ``fit(corpus)`` returns the model.

    ``Model(num_topics=K, random_state=seed, **settings)`` stores its arguments untouched (each
    setting's default filled in from :attr:`defaults`) and checks them at once: unknown names,
    each value finite, its type and maximum (:attr:`setting_maxima`), its range
    (:meth:`_check_settings`) and K (:meth:`check_num_topics`), so that a config that cannot run
    fails before any work; what depends on the corpus (:meth:`check_corpus`) is checked when
    :meth:`fit` starts, before its setup. :meth:`fit` returns the model, with the
    shared output in ``output_`` and the values the fit resolved (``alpha="auto"`` becomes
    ``alpha_``, K a model chooses itself ``num_topics_``) in ``resolved_`` and as attributes.

    Subclasses set ``name`` (its registry name), list their settings with defaults in
    ``defaults`` (documented in the class docstring's *Settings*) and each numeric one's maximum
    in ``setting_maxima``, implement ``_fit`` and optionally ``_check_settings``,
    ``check_corpus``, ``_setup`` and ``_transform`` (then they set ``supports_transform = True``).

    Parameters
    ----------
    num_topics : int or None
        K, the number of topics; None where the model chooses it (E-LDA, BERTopic).
    random_state : int
        Seed of every random draw of the fit (recorded as the output's ``seed``).
    **settings
        The model's settings (see :attr:`defaults`).

    Attributes
    ----------
    name : str
        Registry name.
    family : str
        The kind of model, in words (``models list`` shows it): "probabilistic (LDA)", "matrix
        factorisation", "neural (VAE)", "embedding clustering", ...
    convergence_family : str
        The row of :data:`~topicbench.baselines.convergence.CONVERGENCE_THRESHOLDS` whose threshold
        judges the fit's loss curve (``"gibbs"``, ``"variational"``, ``"neural"``; empty: ``"default"``).
    defaults : dict
        Every setting with its default value.
    settings : dict
        The settings as given (defaults filled in), never changed by ``fit``.
    reproducible : bool
        Whether the same seed gives an identical output (asserted by the contract test).
    supports_transform : bool
        Whether :meth:`transform` can infer p(topic | document) for new documents.
    assigns_token_topics : bool
        Whether the output holds a topic per token (``output.token_topics``), which the posterior
        metrics need; a search refuses such an objective for a model without them before any fit.
    topics_decided_by : str
        Where the model chooses its own number of topics whatever K it is given: the settings that
        decide it, in words (E-LDA: its ``kappa`` and ``generator``); empty for a model that takes
        K. A config giving such a model ``num_topics`` is refused, naming these settings, since the
        K would be silently ignored and the report compare models at different K unawares.
    uses_document_embeddings : bool
        Whether ``fit`` reads sentence embeddings of the documents (through
        :func:`topicbench.baselines.embeddings.document_embeddings`, from the model named by the
        ``embedding_model`` setting); a benchmark then computes them once per corpus, up front.
    not_a_probability_model : str
        Why the model's topic-word rows are not p(w | k) of a model of the words (NMF's normalised
        TF-IDF loadings, LSI's singular vectors, c-TF-IDF weights), so that a held-out likelihood
        does not apply; empty for a probability model. The fit puts it in the output's ``extra``
        (``"not_a_probability_model"``), where the held-out metrics read it and say it.
    output_ : TopicModelOutput
        The fitted output (its ``settings`` are :attr:`settings` plus :attr:`resolved_`).
    resolved_ : dict
        The values the fit resolved, each named with a trailing ``_`` (``num_topics_``,
        ``alpha_``, ``device_``, ...); each is also an attribute of the fitted model.
    """

    name: str = ""
    family: str = ""
    convergence_family: str = ""
    #: What the one-time work before the fit (:meth:`_setup`) is, as a progress display names it.
    setup_phase: str = "preparing"
    defaults: dict = {}
    reproducible: bool = True
    supports_transform: bool = False
    assigns_token_topics: bool = False
    uses_document_embeddings: bool = False
    not_a_probability_model: str = ""
    topics_decided_by: str = ""
    #: Values other than the default's type that a setting also takes, e.g. ``{"alpha": ("auto",)}``.
    setting_alternatives: dict = {}
    #: The largest value of each numeric setting (of each item, for a list), stated in the class
    #: docstring; published in :meth:`settings_schema` (see :mod:`topicbench.baselines.bounds`).
    setting_maxima: dict = {}

    def __init__(self, num_topics: int | None = None, *, random_state: int = 0, **settings):
        unknown = sorted(set(settings) - set(self.defaults))
        if unknown:
            raise InputError(
                f"{self.name}: unknown settings {unknown}; known: {sorted(self.defaults)}"
            )
        self.num_topics = num_topics
        self.random_state = random_state
        self.settings = {**self.defaults, **settings}
        check_finite_settings(self.name, self.settings)  # first: NaN passes every range check
        self._check_setting_types(self.settings)
        self._check_settings(self.settings)
        self.check_num_topics(num_topics)
        _check_random_state(self.name, random_state)
        self._fitted_vocabulary: tuple | None = None

    def get_params(self) -> dict:
        """What was asked: ``num_topics``, ``random_state`` and every setting (defaults filled in)."""
        return {"num_topics": self.num_topics, "random_state": self.random_state, **self.settings}

    def fit(self, corpus: Corpus, *, on_progress=None, stop_requested=None, on_phase=None) -> "TopicModel":
        """Fit on ``corpus``; set ``output_`` (checked, with fit time and peak memory) and the
        resolved values (``resolved_`` and one attribute each); return the model.

        One-time work (compiling kernels, loading an embedding model or cached embeddings) runs
        first, in :meth:`_setup`, and is timed apart as ``extra["setup_seconds"]``: the fit time
        is the training alone. An iterative model's ``extra["training_loss"]`` gains its
        convergence verdict under its :attr:`convergence_family`'s tail rule
        (:func:`~topicbench.baselines.convergence.convergence`).

        Parameters
        ----------
        corpus : Corpus
            The documents to fit.
        on_progress : callable, optional
            ``on_progress(step, total, loss)`` as an iterative fit advances (epochs, passes,
            Gibbs sweeps or E-LDA links; ``loss`` may be None); models that do not iterate never
            call it.
        stop_requested : callable, optional
            ``stop_requested()`` is true once the caller no longer wants the fit (its flow was
            interrupted): an iterative fit looks at each progress step (tomotopy's samplers at
            every sweep) and raises :class:`FitStopped` there.
        on_phase : callable, optional
            ``on_phase(name)`` as the fit enters a phase that has no step count: its one-time
            work (:attr:`setup_phase`), then ``"fitting"``; a progress display shows the name
            until the first step.
        """
        if corpus.n_documents == 0 or corpus.n_tokens == 0:
            raise InputError(f"{self.name}: the corpus {corpus.name!r} is empty")
        self.check_corpus(corpus)
        self._on_progress, self._stop_requested = on_progress, stop_requested
        try:
            with self._library_errors(corpus):
                with measure() as setup:
                    _enter_phase(on_phase, self.setup_phase)
                    self._setup(corpus)
                _enter_phase(on_phase, "fitting")
                with measure() as usage:
                    output, resolved = self._fit(corpus)
        finally:
            self._on_progress = self._stop_requested = None
        output = _with_usage(output, usage, setup_seconds=setup["seconds"], family=self.convergence_family)
        output = replace(output, model=self.name, seed=self.random_state, settings={**self.settings, **resolved})
        if self.not_a_probability_model:  # the held-out metrics' need "probability_model" reads it
            output = replace(output, extra={**output.extra, NOT_A_PROBABILITY_MODEL: self.not_a_probability_model})
        self.output_ = output.check(corpus.n_documents, corpus.n_tokens)
        self._set_resolved(resolved)
        self._fitted_vocabulary = tuple(corpus.vocabulary)
        return self

    def _progress(self, step: int, total: int, loss=None) -> None:
        """Tell the caller of :meth:`fit` how far the fit is (see its ``on_progress``), unless it
        asked the fit to stop (:meth:`_stop_if_requested`)."""
        self._stop_if_requested(step, total)
        callback = getattr(self, "_on_progress", None)
        if callback is not None:
            callback(int(step), int(total), None if loss is None else float(loss))

    def _stop_if_requested(self, step: int, total: int) -> None:
        """Raise :class:`FitStopped` if the caller of :meth:`fit` asked it to stop (its
        ``stop_requested``); a fit whose steps outlast its progress steps calls it at each one."""
        stop_requested = getattr(self, "_stop_requested", None)
        if stop_requested is not None and stop_requested():
            raise FitStopped(f"{self.name}: stopped at step {step}/{total}: its caller asked it to stop")

    def _set_resolved(self, resolved: dict) -> None:
        misnamed = [key for key in resolved if not key.endswith("_") or key in _FITTED_FIELDS]
        if misnamed:
            raise ModelError(f"{self.name}: resolved values must be named with a trailing '_', got {misnamed}")
        for key in getattr(self, "resolved_", {}):  # a refit replaces the previous fit's values
            self.__dict__.pop(key, None)
        self.resolved_ = dict(resolved)
        for key, value in resolved.items():
            setattr(self, key, value)

    @contextmanager
    def _library_errors(self, corpus: Corpus):
        """A library's exception as a :class:`ModelError` naming the model and the corpus."""
        try:
            yield
        except (InputError, ModelError, FitStopped):
            raise
        except Exception as error:
            raise ModelError(
                f"{self.name}: fitting failed on corpus {corpus.name!r} "
                f"({corpus.n_documents} documents): {type(error).__name__}: {error}"
            ) from error

    def _setup(self, corpus: Corpus) -> None:
        """One-time work before the timed fit (default: none). Models that compile kernels or
        load embeddings do it here, so that a fit's time is comparable between a fresh worker
        process and a warm one."""

    def transform(self, corpus: Corpus) -> np.ndarray:
        """p(topic | document) of (held-out) documents under the fitted topics.

        Parameters
        ----------
        corpus : Corpus
            Documents over the vocabulary the model was fitted on, in the same order.

        Returns
        -------
        ndarray, shape (n_topics, n_documents)
            Columns sum to 1; rows are the fitted output's topics, in its order.
        """
        if not self.supports_transform:
            raise ModelError(f"{self.name}: cannot infer the topics of new documents (no transform)")
        if self._fitted_vocabulary is None:
            raise ModelError(f"{self.name}: transform needs a fitted model; call fit first")
        check_vocabulary_matches(corpus.vocabulary, self._fitted_vocabulary, name=f"{self.name}'s held-out corpus")
        theta = np.asarray(self._transform(corpus), dtype=np.float64)
        sums = theta.sum(axis=0)
        if theta.shape[1] != corpus.n_documents or np.abs(sums - 1).max(initial=0) > PROBABILITY_TOLERANCE:
            raise ModelError(f"{self.name}: transform returned an invalid topic-document matrix {theta.shape}")
        return theta

    def _check_settings(self, settings: dict) -> None:
        """Raise :class:`InputError` for a setting value the model cannot use (default: no checks)."""

    def _check_setting_types(self, settings: dict) -> None:
        """Each setting against :meth:`settings_schema` (its default's type, strictly, or one of
        the model's ``setting_alternatives``)."""
        check_schema(settings, self.settings_schema(), self.name, noun="setting")

    @classmethod
    def settings_schema(cls) -> dict:
        """The model's settings as JSON Schema: each setting has its default's type (a bool is
        not an int, a string not a number), or is one of ``setting_alternatives``; a default of
        None takes anything the model's own checks accept. A numeric setting's maximum is its
        :attr:`setting_maxima` entry; the other range checks are the model's own
        (:meth:`_check_settings`). Part of the benchmark config's published schema."""
        properties = {}
        for key, default in cls.defaults.items():
            schema = _type_of_default(default)
            alternatives = list(cls.setting_alternatives.get(key, ()))
            if alternatives and schema:
                schema = {"anyOf": [schema, {"enum": alternatives}]}
            if key in cls.setting_maxima:
                schema = with_maximum(schema, cls.setting_maxima[key])
            properties[key] = {**schema, "default": _as_json(default)}
        return {"title": f"model {cls.name!r}", "type": "object", "additionalProperties": False, "properties": properties}

    def check_corpus(self, corpus: Corpus) -> None:
        """Raise :class:`InputError` unless K and the settings suit ``corpus`` (default: no
        checks), e.g. K no more than its documents where the package needs that. Runs when
        :meth:`fit` starts, before any work (the setup included)."""

    def check_num_topics(self, num_topics) -> None:
        """Raise :class:`InputError` unless ``num_topics`` (K) suits this model as configured
        (default: K is required, an integer >= 1). Runs at construction, before any work."""
        self._require_num_topics(num_topics)

    def _transform(self, corpus: Corpus) -> np.ndarray:
        raise NotImplementedError

    @abc.abstractmethod
    def _fit(self, corpus: Corpus) -> tuple[TopicModelOutput, dict]:
        """Fit with ``self.num_topics`` and ``self.random_state``; return the output and the
        resolved values (names ending in ``_``). ``fit`` fills in the output's model name, seed,
        settings (:attr:`settings` plus the resolved values), fit time and peak memory."""

    def _require_num_topics(self, num_topics) -> int:
        """``num_topics`` as an int >= 1, or an :class:`InputError` naming the model."""
        if isinstance(num_topics, (bool, np.bool_)) or not isinstance(num_topics, (int, np.integer)) or num_topics < 1:
            raise InputError(f"{self.name}: num_topics must be an integer >= 1, got {num_topics!r}")
        return int(num_topics)


def _type_of_default(default) -> dict:
    """The JSON Schema type a setting takes from its default ({} for None: anything)."""
    if isinstance(default, (bool, np.bool_)):
        return {"type": "boolean"}
    if isinstance(default, (int, np.integer)):
        return {"type": "integer"}
    if isinstance(default, (float, np.floating)):
        return {"type": "number"}
    if isinstance(default, (tuple, list)):
        return {"type": "array"}
    if isinstance(default, str):
        return {"type": "string"}
    return {}


def _as_json(value):
    import json

    return json.loads(json.dumps(value, default=str))


def _check_random_state(model: str, random_state) -> None:
    if (isinstance(random_state, (bool, np.bool_)) or not isinstance(random_state, (int, np.integer))
            or not 0 <= random_state <= MAX_SEED):
        raise InputError(f"{model}: random_state must be an integer in [0, {MAX_SEED}], got {random_state!r}")


def import_optional(module: str, *, model: str, package: str | None = None):
    """Import an optional package for ``model``, or raise :class:`ModelError` saying what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ModelError(
            f"{model}: the optional package {package or module!r} is not installed or cannot be "
            f"imported ({error}); install it with the project's pinned dependencies (bash scripts/setup.sh)"
        ) from error


def require_integers(model: str, settings: dict, lowest: dict) -> None:
    """Raise :class:`InputError` unless each ``settings[key]`` is an integer >= ``lowest[key]``."""
    for key, low in lowest.items():
        value = settings[key]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise InputError(f"{model}: {key} must be an integer >= {low}, got {value!r}")


def require_positive(model: str, settings: dict, keys) -> None:
    """Raise :class:`InputError` unless each ``settings[key]`` is a finite number > 0."""
    for key in keys:
        value = settings[key]
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not 0 < value < np.inf:
            raise InputError(f"{model}: {key} must be a positive number, got {value!r}")


def require_choice(model: str, setting: str, value, choices) -> None:
    """Raise :class:`InputError` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise InputError(f"{model}: {setting} must be one of {list(choices)}, got {value!r}")


def top_words_of(topic_word_matrix: np.ndarray, vocabulary, top_n: int) -> list[list[str]]:
    """Each row's ``top_n`` most probable words with probability > 0, best first (ties: lower id)."""
    topics = []
    for row in np.asarray(topic_word_matrix):
        order = np.argsort(-row, kind="stable")[:top_n]
        topics.append([vocabulary[w] for w in order if row[w] > 0])
    return topics


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to sum to 1 (float64); an all-zero row becomes uniform."""
    matrix = np.asarray(matrix, dtype=np.float64)
    sums = matrix.sum(axis=1, keepdims=True)
    uniform = np.full(matrix.shape[1], 1.0 / matrix.shape[1]) if matrix.shape[1] else matrix[:0]
    out = np.divide(matrix, sums, out=np.zeros_like(matrix), where=sums > 0)
    out[sums[:, 0] <= 0] = uniform
    return out


def training_record(losses, *, kind: str, steps=None) -> dict:
    """The ``extra`` entries of an iterative fit's loss curve: ``training_loss`` (one value per
    epoch or recorded iteration, lower is better), its ``training_steps`` (default 1, 2, ...) and
    what the loss is (``training_loss_kind``)."""
    losses = [float(value) for value in losses]
    steps = list(range(1, len(losses) + 1)) if steps is None else [int(step) for step in steps]
    if len(steps) != len(losses):
        raise ValueError(f"{len(steps)} steps for {len(losses)} loss values")
    return {"training_loss": losses, "training_steps": steps, "training_loss_kind": kind}


def _enter_phase(on_phase, name: str) -> None:
    if on_phase is not None:
        on_phase(name)


def _with_usage(output: TopicModelOutput, usage: dict, setup_seconds: float = 0.0,
                family: str = "") -> TopicModelOutput:
    extra = {**output.extra, "setup_seconds": float(setup_seconds)}
    if "training_loss" in extra:
        extra.update(convergence(extra["training_loss"], extra.get("training_steps"), family))
    return replace(output, fit_seconds=usage["seconds"], peak_memory_mb=usage["peak_memory_mb"], extra=extra)


@contextmanager
def measure(interval: float = 0.05):
    """Wall time and peak resident memory (MB) of the process while the block runs."""
    process = psutil.Process()
    usage = {"seconds": 0.0, "peak_memory_mb": process.memory_info().rss / 2**20}
    done = threading.Event()

    def sample():
        while not done.wait(interval):
            usage["peak_memory_mb"] = max(usage["peak_memory_mb"], process.memory_info().rss / 2**20)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    try:
        yield usage
    finally:
        usage["seconds"] = time.perf_counter() - started
        done.set()
        sampler.join()
        usage["peak_memory_mb"] = max(usage["peak_memory_mb"], process.memory_info().rss / 2**20)
