"""Upper bounds of the models' numeric settings, and the checks that hold settings to them before
any work.

A setting without a ceiling lets one typo (or a hostile config) run for hours or fill the memory:
HDP's ``initial_k: 1000000000`` allocated 3.2 GB and sampled for about two hours. So every
integer and float setting has a maximum. A model lists its own in ``setting_maxima`` (setting ->
largest value; for a list setting, its largest item), each stated in its docstring; they are
published in its settings schema (JSON Schema ``maximum``) and checked with it when the model is
built. Bounds that depend on the corpus (K against its documents, HDP's ``initial_k`` against its
tokens) are checked by ``check_corpus`` when the fit starts, before its setup. The maxima are
generous: far above every default and every value the suite's studies use, yet finite.
"""

from __future__ import annotations

import math

import numpy as np

from topicbench.core.validation import InputError

#: Sweeps, iterations, epochs and passes: 20x the largest default (FASTopic's 5000 Sinkhorn steps).
MAX_ITERATIONS = 100_000
#: Documents per mini-batch or chunk: more than any corpus the suite reads (20 Newsgroups: 18,846).
MAX_BATCH_DOCUMENTS = 1_000_000
#: Words listed per topic (the metrics read 25 at most).
MAX_TOP_WORDS = 1_000
#: Threads of one fit.
MAX_THREADS = 1_024
#: Dirichlet concentrations and priors (alpha, eta, gamma): 10,000 is already a flat prior.
MAX_CONCENTRATION = 10_000.0
#: Other positive scales without a natural ceiling (regularisation strengths, temperatures, offsets).
MAX_SCALE = 1_000_000.0
#: Optimiser step sizes (the defaults are 0.002 to 0.005).
MAX_LEARNING_RATE = 10.0
#: Width of a network layer or an embedding (a 10,000 x 50,000-word layer is 2 GB of float32).
MAX_LAYER_SIZE = 10_000
#: Layers of a network's encoder.
MAX_LAYERS = 100
#: A number of topics that a setting caps or asks for (K itself is checked against the corpus).
MAX_TOPICS = 100_000

_NUMERIC_TYPES = ("integer", "number")


def check_finite_settings(model: str, settings: dict) -> None:
    """Raise :class:`InputError` naming the first setting that is or holds an infinite or NaN
    number: no range check can catch NaN (every comparison with it is false), and an infinite
    iteration count or prior would only fail, or never end, inside the fit."""
    for key, value in settings.items():
        items = value if isinstance(value, (list, tuple)) else (value,)
        if any(isinstance(item, (float, np.floating)) and not math.isfinite(item) for item in items):
            raise InputError(f"{model}: setting {key!r} must be a finite number, got {value!r}")


def with_maximum(schema: dict, maximum) -> dict:
    """``schema`` of a setting with ``maximum`` declared on its numbers: on the numeric option of
    an ``anyOf``, on the items of a list, or on the value itself (a schema without a type applies
    it to numbers only, as JSON Schema does)."""
    if "anyOf" in schema:
        return {**schema, "anyOf": [with_maximum(option, maximum) if option.get("type") in _NUMERIC_TYPES else option
                                    for option in schema["anyOf"]]}
    if schema.get("type") == "array":
        return {**schema, "items": {**schema.get("items", {}), "maximum": maximum}}
    return {**schema, "maximum": maximum}


def require_at_most(model: str, what: str, value, limit, why: str) -> None:
    """Raise :class:`InputError` unless ``value`` <= ``limit``; the line names the model, what the
    value is, the limit and ``why`` (the corpus's count that sets it)."""
    if value > limit:
        raise InputError(f"{model}: {what} = {value} is more than {limit}, {why}; give at most {limit}")
