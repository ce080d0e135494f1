"""What a finished fit logs to its MLflow run, as plain values: params, tags, metrics and the
training curve (its artifacts stay in their folder).

Built once from the :class:`~topicbench.tasks.run.fit.ScoredFit` a fit sends back; the tracker logs
it, and the spool (:mod:`topicbench.tasks.store.spool`) keeps it as JSON when the store cannot take it,
so that a later run logs exactly what this one would have. Metric keys such as ``umass@10`` are
stored as ``umass_top10`` (MLflow names cannot hold '@').
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field, fields

from topicbench.core.metrics.validity import VOCABULARY_SIZE, invalid_scores


#: Whether a fit's scoring built the corpus's metric context ("built") or reused it ("reused").
METRIC_CONTEXT_TAG = "topicbench.metric_context"
#: The tag that says why a requested metric (or a score key) has no value: ``topicbench.skipped.npmi``.
SKIPPED_TAG_PREFIX = "topicbench.skipped."
#: The tag that says why a score is kept but never ranked (outside its valid range, or worse than
#: the uniform model over the vocabulary): ``topicbench.invalid.perplexity``.
INVALID_TAG_PREFIX = "topicbench.invalid."


def skipped_tag(name: str) -> str:
    """The tag of a skipped metric or score key, named as MLflow takes it (the score key as it is
    tracked, any other character than a letter, digit, ``_``, ``-``, ``.`` or space as ``-``):
    ``npmi@5`` -> ``topicbench.skipped.npmi_top5``, ``top_n 10,25`` -> ``topicbench.skipped.top_n 10-25``."""
    return SKIPPED_TAG_PREFIX + re.sub(r"[^\w\-. ]", "-", tracked_name(name))[:200]


def invalid_tags(scores: dict, vocabulary_size: int | None) -> dict:
    """One tag per score that cannot be ranked (:func:`~topicbench.core.metrics.validity.invalid_scores`),
    ``topicbench.invalid.<tracked key>`` -> ``"<value> is <why>"``, and all of them as JSON in
    ``topicbench.invalid_scores``; empty where every score is valid."""
    found = invalid_scores(scores, vocabulary_size)
    if not found:
        return {}
    tags = {INVALID_TAG_PREFIX + re.sub(r"[^\w\-. ]", "-", tracked_name(key))[:200]: reason[:4900]
            for key, reason in found.items()}
    return {**tags, "topicbench.invalid_scores": json.dumps(found)[:4900]}


def not_finite_scores(scores: dict) -> dict:
    """Score key -> why it is not logged, for each score that came out NaN or infinite (MLflow
    keeps finite values only), so that its absence has a reason like any skipped metric's."""
    return {key: f"{key} came out {value} (not a number: undefined for this model's topics, e.g. "
                 "a topic whose words never occur together in the reference)"
            for key, value in scores.items() if value is not None and not math.isfinite(float(value))}


#: A tracked metric name such as ``umass_top10``: the score key ``umass@10`` it stands for.
_TOP = re.compile(r"^(.*)_top(\d+)$")


def tracked_name(key: str) -> str:
    """A score key as MLflow stores it: ``umass@10`` -> ``umass_top10``."""
    return key.replace("@", "_top")


def score_key(name: str) -> str:
    """A tracked metric name's score key (the inverse of :func:`tracked_name`)."""
    match = _TOP.match(name)
    return f"{match.group(1)}@{match.group(2)}" if match else name


@dataclass(frozen=True)
class FitRecord:
    """A finished fit's run content.

    Attributes
    ----------
    params : dict of str -> str
        What was asked, the fitted model's settings as ``settings.<name>`` (from its
        ``get_params()``; K and the seed are the run's own params), and the model's resolved
        values as ``resolved.<name>``.
    tags : dict of str -> str
        Where it was fitted, the scoring time, skipped metrics, scores that cannot be ranked
        (:func:`invalid_tags`), the kind of training loss.
    metrics : dict of str -> float
        Finite values only, under tracked names: fit time, topics used, vocabulary size, peak
        memory, the output's numeric extras and the scores.
    curve : list of (int, float)
        ``training_loss`` per recorded step (finite values).
    label : str
        The run's "model@corpus seed N", for messages.
    """

    params: dict
    tags: dict
    metrics: dict
    curve: list = field(default_factory=list)
    label: str = ""

    @classmethod
    def of(cls, fit, label: str = "") -> "FitRecord":
        """The record of a :class:`~topicbench.tasks.run.fit.ScoredFit`."""
        output = fit.output
        asked = {k: v for k, v in (fit.params or {}).items() if k not in ("num_topics", "random_state")}
        params = {f"settings.{k}"[:250]: str(v)[:6000] for k, v in asked.items()}
        params.update({f"resolved.{k}"[:250]: str(v)[:6000] for k, v in fit.resolved.items()})
        tags = {f"topicbench.fitted_on.{k}": str(v) for k, v in fit.fitted_on.items()}
        tags["topicbench.scoring_seconds"] = f"{fit.scoring_seconds:.3f}"
        # the shared work a search counts: this scoring built the corpus's counts, or reused them
        tags[METRIC_CONTEXT_TAG] = "built" if fit.context_built else "reused"
        # the vocabulary's size, so that a reader can check the uniform model's baseline (perplexity <= V)
        metrics = {"fit_seconds": output.fit_seconds, "num_topics_used": output.n_topics,
                   VOCABULARY_SIZE: output.vocabulary_size}
        if output.peak_memory_mb is not None:
            metrics["peak_memory_mb"] = output.peak_memory_mb
        extra = output.extra
        metrics.update({k: v for k, v in extra.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
        if "converged" in extra:
            metrics["converged"] = float(extra["converged"])
            tags["topicbench.training_loss_kind"] = str(extra.get("training_loss_kind", ""))
        metrics.update(fit.scores)
        skipped = {**fit.skipped, **not_finite_scores(fit.scores)}
        if skipped:  # why a requested score has no value: all in one tag (the report reads it), and one tag each
            tags["topicbench.skipped_metrics"] = json.dumps(skipped)[:4900]
            tags.update({skipped_tag(name): str(reason)[:4900] for name, reason in skipped.items()})
        tags.update(invalid_tags(fit.scores, output.vocabulary_size))  # kept as metrics, never ranked
        finite = {tracked_name(k): float(v) for k, v in metrics.items() if v is not None and math.isfinite(float(v))}
        losses, steps = extra.get("training_loss") or [], extra.get("training_steps") or []
        curve = [(int(step), float(v)) for v, step in zip(losses, steps) if math.isfinite(float(v))]
        return cls(params, tags, finite, curve, label)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> "FitRecord":
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data) -> "FitRecord":
        """The record of ``asdict(record)``; a ValueError naming the first field that is not as
        :meth:`of` makes it (a hand-edited file, or one of another topicbench version)."""
        if not isinstance(data, dict):
            raise ValueError(f"a fit record is a JSON object, got {type(data).__name__}")
        names = [f.name for f in fields(cls)]
        unknown, missing = sorted(set(data) - set(names)), [name for name in names[:3] if name not in data]
        if unknown or missing:
            raise ValueError(f"unknown fields {unknown}" if unknown else f"no field {missing[0]!r}")
        for name in ("params", "tags"):
            _check_mapping(data[name], name, lambda value: isinstance(value, str), "a string")
        _check_mapping(data["metrics"], "metrics", _is_finite_number, "a finite number")
        curve = data.get("curve", [])
        if not isinstance(curve, list):
            raise ValueError(f"curve is a list of [step, value] pairs, got {type(curve).__name__}")
        for index, point in enumerate(curve):
            if not (isinstance(point, list) and len(point) == 2 and isinstance(point[0], int)
                    and not isinstance(point[0], bool) and _is_finite_number(point[1])):
                raise ValueError(f"curve[{index}] is not a [step, finite value] pair: {point!r}"[:300])
        if not isinstance(data.get("label", ""), str):
            raise ValueError("label is not a string")
        return cls(data["params"], data["tags"], {k: float(v) for k, v in data["metrics"].items()},
                   [(step, float(value)) for step, value in curve], data.get("label", ""))


def _is_finite_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_mapping(value, name: str, valid, what: str) -> None:
    """A ValueError unless ``value`` maps strings to values that are ``valid``."""
    if not isinstance(value, dict):
        raise ValueError(f"{name} is a JSON object, got {type(value).__name__}")
    for key, item in value.items():
        if not valid(item):
            raise ValueError(f"{name}[{key!r}] is not {what}: {item!r}"[:300])
