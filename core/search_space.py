"""A model's search space (K and any of its settings) and a study's objectives, as plain values,
checked before any fit.

A space maps a dimension (``num_topics`` or one of the model's settings) to the values searched:
a list (every value, in order: what a grid walks and what a sampler picks from) or a range
``{low, high}`` with an optional ``step`` (integers, or a grid of floats) and ``log`` (a
log-uniform range, for samplers only). A point is a mapping dimension -> value, turned into the
model's ``(num_topics, settings)`` by :func:`point_model`.

>>> space = SearchSpace.from_dict("gensim_lda", {"num_topics": [10, 20]})
>>> [dict(point) for point in space.grid()]
[{'num_topics': 10}, {'num_topics': 20}]

An objective is a score key (``npmi@10``, ``perplexity``) or ``stability`` (the mean matched
Jensen-Shannon similarity of the trial's seeds' topics, :mod:`~topicbench.core.metrics.stability`).
"""

from __future__ import annotations

import itertools
import math
import numbers
from dataclasses import dataclass

from .validation import InputError

#: The dimension that is K.
NUM_TOPICS = "num_topics"
#: The objective computed across a trial's seeds rather than by a metric.
STABILITY = "stability"
#: Most points a grid may hold per model (a typo such as step 1 over 1..10⁶ fails at once).
MAX_GRID_POINTS = 10_000


@dataclass(frozen=True)
class Dimension:
    """One searched value: ``values`` (a list), or a range ``low``..``high`` (``step``, ``log``)."""

    name: str
    values: tuple | None = None
    low: float | None = None
    high: float | None = None
    step: float | None = None
    log: bool = False

    @property
    def is_integer(self) -> bool:
        numbers_given = self.values if self.values is not None else (self.low, self.high, self.step or 1)
        return all(_is_int(v) for v in numbers_given if v is not None)

    def grid_values(self, where: str) -> tuple:
        """Every value a grid walks: the list, or the range in steps of ``step`` (a range needs one)."""
        if self.values is not None:
            return self.values
        if self.step is None:
            raise InputError(f"{where}: a grid needs a list or a range with a step, got {{low: {self.low}, high: {self.high}}} "
                             "(add step, or search it with sampler: tpe)")
        count = self.size()
        if count > MAX_GRID_POINTS:
            raise InputError(f"{where}: {count} values from {self.low} to {self.high} in steps of {self.step}; "
                             f"a grid takes at most {MAX_GRID_POINTS}")
        values = [self.low + i * self.step for i in range(count)]
        return tuple(int(round(v)) if self.is_integer else float(v) for v in values)

    def size(self) -> int | None:
        """How many distinct values a grid or a sampler can take: a list's length, a stepped range's
        steps, an integer range's integers; None for a range of floats without a step (endless)."""
        if self.values is not None:
            return len(self.values)
        if self.step is not None:
            return int(math.floor((self.high - self.low) / self.step + 1e-9)) + 1
        return int(self.high) - int(self.low) + 1 if self.is_integer else None

    def bounds(self) -> tuple:
        """The smallest and largest value searched (for the edge warnings)."""
        if self.values is not None:
            numeric = [v for v in self.values if _is_number(v)]
            return (min(numeric), max(numeric)) if len(numeric) == len(self.values) else (None, None)
        return self.low, self.high


@dataclass(frozen=True)
class SearchSpace:
    """The dimensions searched for one model (by its label), K first when it is searched."""

    label: str
    dimensions: tuple

    @classmethod
    def from_dict(cls, label: str, data, *, where: str = "search.spaces") -> "SearchSpace":
        where = f"{where}.{label}"
        if not isinstance(data, dict) or not data:
            raise InputError(f"{where}: the space is empty: give at least one of num_topics or the model's settings, "
                             "each with a list of values or a range {low, high}")
        dimensions = [_dimension(name, value, f"{where}.{name}") for name, value in data.items()]
        dimensions.sort(key=lambda d: d.name != NUM_TOPICS)  # K first: the report plots against it
        return cls(label, tuple(dimensions))

    @property
    def names(self) -> tuple:
        return tuple(d.name for d in self.dimensions)

    def grid(self, where: str = "search.spaces") -> list:
        """Every point of the grid, simplest first (K ascending, then the other dimensions in the
        order given)."""
        axes = [d.grid_values(f"{where}.{self.label}.{d.name}") for d in self.dimensions]
        total = math.prod(len(axis) for axis in axes)
        if total > MAX_GRID_POINTS:
            raise InputError(f"{where}.{self.label}: the grid has {total} points; at most {MAX_GRID_POINTS}")
        return [dict(zip(self.names, values)) for values in itertools.product(*axes)]

    def size(self) -> int | None:
        """How many distinct points the space holds (None: endless, a range of floats without a
        step), so that a study stops once it has asked every one."""
        sizes = [d.size() for d in self.dimensions]
        return None if None in sizes else math.prod(sizes)

    def checked_points(self, sampler: str, where: str = "search.spaces") -> list:
        """The points whose validity stands for the whole space: the grid's, or each range's ends
        and each list's values (every other dimension at its first value)."""
        if sampler == "grid":
            return self.grid(where)
        first = {d.name: (d.values[0] if d.values is not None else d.low) for d in self.dimensions}
        points = []
        for d in self.dimensions:
            for value in (d.values if d.values is not None else (d.low, d.high)):
                points.append({**first, d.name: value})
        return points

    def bounds(self) -> dict:
        """{dimension: (smallest, largest)} of the numeric dimensions."""
        return {d.name: d.bounds() for d in self.dimensions if d.bounds() != (None, None)}


@dataclass(frozen=True)
class Objective:
    """A study's objective: ``key`` (a score key, or ``stability``) and whether higher is better."""

    key: str
    higher_is_better: bool

    @property
    def tracked_key(self) -> str:
        return self.key.replace("@", "_top")

    @property
    def direction(self) -> str:
        return "maximize" if self.higher_is_better else "minimize"


def point_model(base_num_topics, base_settings: dict, point: dict) -> tuple:
    """(num_topics, settings) of a model at ``point``: its configured K and settings with the
    point's values over them."""
    settings = {**base_settings, **{name: value for name, value in point.items() if name != NUM_TOPICS}}
    return point.get(NUM_TOPICS, base_num_topics), settings


def point_label(label: str, point: dict) -> str:
    """The label of a model at a point, e.g. ``gensim_lda[num_topics=20]`` (``label`` alone for no point)."""
    if not point:
        return label
    return f"{label}[{','.join(f'{name}={_format(value)}' for name, value in point.items())}]"


def num_topics_grid(value, where: str) -> tuple:
    """Every K of a config's ``num_topics`` grid, in the search spaces' vocabulary: a list of
    values, or a range ``{low, high, step}`` (a grid needs its step).

    >>> num_topics_grid([20, 50, 100], "models[0].num_topics")
    (20, 50, 100)
    >>> num_topics_grid({"low": 10, "high": 30, "step": 10}, "models[0].num_topics")
    (10, 20, 30)
    """
    return _dimension(NUM_TOPICS, value, where).grid_values(where)


def point_text(point: dict | None, missing: str = "–") -> str:
    """A point as people read it, e.g. ``K=20, alpha=0.1`` (``as configured`` for no dimension,
    ``missing`` for no point)."""
    if point is None:
        return missing
    return ", ".join(f"{'K' if name == NUM_TOPICS else name}={value}" for name, value in point.items()) or "as configured"


def point_complexity(point: dict):
    """Sort key, simpler first: K, then each other numeric dimension's value, in the space's order
    (fewer topics, and smaller κ, are the simpler models)."""
    return tuple(value if _is_number(value) else 0 for value in point.values())


def parse_objective(name, metrics, top_n, higher_is_better_of, where: str) -> Objective:
    """The objective ``name`` of a study whose config scores ``metrics``: ``stability``, a corpus-level
    metric's key (``perplexity``, ``classification_macro_f1``) or a topic-level metric at one N of
    ``top_n`` (``npmi@10``). ``higher_is_better_of(metric)`` gives a metric's direction."""
    from .metrics.registry import METRICS

    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: an objective is a score name such as npmi@10, perplexity or stability, got {name!r}")
    if name == STABILITY:
        return Objective(STABILITY, True)
    metric, _, n = name.partition("@")
    owner = next((m for m in METRICS if METRICS.get(m).owns(name)), None)
    if owner is None:
        raise InputError(f"{where}: no metric returns {name!r}; objectives are scores of the config's metrics "
                         f"({', '.join(metrics)}) or stability")
    if owner not in metrics:
        raise InputError(f"{where}: {name!r} is a score of {owner!r}, which is not in the config's metrics ({', '.join(metrics)})")
    spec = METRICS.get(owner)
    per_topic = "top_words" in spec.needs
    if per_topic and not n:
        raise InputError(f"{where}: {name!r} is scored per N of the top-N grid: give one, e.g. "
                         + " or ".join(f"{owner}@{v}" for v in top_n))
    if per_topic and (not n.isdigit() or int(n) not in top_n):
        raise InputError(f"{where}: {name!r}: N must be one of the config's top_n {list(top_n)}")
    if n and not per_topic and owner != "inverted_rbo":
        raise InputError(f"{where}: {owner!r} is not scored per N; use {spec.outputs[0] if spec.outputs else owner!r}")
    if not n and spec.outputs and name not in spec.outputs:
        raise InputError(f"{where}: {owner!r} returns {', '.join(spec.outputs)}: name one of them")
    return Objective(name, bool(higher_is_better_of(owner)))


def _dimension(name, value, where: str) -> Dimension:
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: a dimension is num_topics or a setting's name, got {name!r}")
    if isinstance(value, list):
        if not value:
            raise InputError(f"{where}: the list of values is empty")
        if len(set(map(repr, value))) != len(value):
            raise InputError(f"{where}: a value repeats in {value}")
        if name == NUM_TOPICS:
            _check_num_topics(value, where)
        return Dimension(name, values=tuple(value))
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"low", "high", "step", "log"})
        if unknown or not {"low", "high"} <= set(value):
            raise InputError(f"{where}: a range is {{low, high}} with optional step and log, got {value}")
        low, high, step, log = value["low"], value["high"], value.get("step"), value.get("log", False)
        for key, number in (("low", low), ("high", high), ("step", step)):
            if number is not None and not _is_number(number):
                raise InputError(f"{where}.{key}: a number, got {number!r}")
        if not isinstance(log, bool):
            raise InputError(f"{where}.log: true or false, got {log!r}")
        if not low < high:
            raise InputError(f"{where}: low must be below high, got {low} and {high}")
        if step is not None and not step > 0:
            raise InputError(f"{where}.step: must be above 0, got {step}")
        if log and (low <= 0 or step is not None):
            raise InputError(f"{where}: a log range needs low > 0 and no step")
        if name == NUM_TOPICS:
            _check_num_topics([low, high], where)
            if step is not None and not _is_int(step):
                raise InputError(f"{where}.step: K moves in whole steps, got {step!r}")
        return Dimension(name, low=low, high=high, step=step, log=log)
    raise InputError(f"{where}: give a list of values or a range {{low, high}}, got {value!r}")


def _check_num_topics(values, where: str) -> None:
    for value in values:
        if not _is_int(value):
            raise InputError(f"{where}: K is a whole number, got {value!r}")
    if min(values) < 2:
        raise InputError(f"{where}: K must be at least 2, got {min(values)}")


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _format(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
