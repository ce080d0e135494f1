"""The report's tables as numbers: summaries across seeds, pivoted the way readers compare them.

Every function here is pure. It takes the run table of :func:`topicbench.tasks.results.store.collect_runs`
(one row per tracked run: ``corpus``, ``model``, ``seed``, ``status`` and one column per score key,
e.g. ``umass@10``) and returns a :class:`ReportTable` whose cells are numbers (:class:`Estimate`,
:class:`Share`, floats, ints) or words. Numbers become text only in
:mod:`topicbench.tasks.report.render`; the best value of a column is chosen here, from the metric's
own direction (``higher_is_better`` in the metrics registry).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from topicbench.core.metrics.registry import metric_for_key
from topicbench.core.metrics.stats import summarize
from topicbench.core.validation import InputError
from topicbench.tasks.results.runs import (  # noqa: F401 (the report's tables read runs by state)
    FINISHED, INTERRUPTED, RUNNING, failed_runs, finished_runs, interrupted_runs,
)


@dataclass(frozen=True)
class Estimate:
    """Mean and sample standard deviation of one quantity over ``n`` seeds.

    Attributes
    ----------
    mean, sd : float
        ``sd`` is NaN for a single seed.
    n : int
        Seeds the value rests on.
    expected : int or None
        Seeds the experiment asked for (a value on fewer is marked when rendered).
    scored_at : int or None
        The top-N the value was scored at, when smaller than the N of its column: a model whose
        topics have fewer words than that N is scored at the largest N its topics allow.
    """

    mean: float
    sd: float
    n: int
    expected: int | None = None
    scored_at: int | None = None


@dataclass(frozen=True)
class Share:
    """``count`` of ``total`` (e.g. runs that converged, seeds where E-LDA wins)."""

    count: int
    total: int


@dataclass(frozen=True)
class Gap:
    """A value a table would show and does not have, and why (``reason``: the run failed, the
    metric does not apply to the model, ...); shown as a dash with footnote ``mark``, the reason
    under its table (:func:`~topicbench.tasks.report.summary.mark_gaps`)."""

    reason: str
    mark: int = 0
    partial: "PartialValue | None" = None


@dataclass(frozen=True)
class PartialValue:
    """What a :class:`Gap` shows beside its dash where part of the value can be had: the
    coherence over the top words the reference corpus has (where some are out of it), ``value``
    over seeds, averaged over ``topics`` of the model's ``of`` topics (means over seeds)."""

    value: Estimate
    topics: float
    of: float | None = None


@dataclass(frozen=True)
class TopicWords:
    """A topic as a reader meets it: its top words, best first, its share of the documents
    (the mean of p(topic | document); None where not known) and its own scores, as
    ``((label, value), ...)`` (``(("NPMI", 0.12),)``; empty where not known)."""

    words: tuple
    share: float | None = None
    scores: tuple = ()


@dataclass(frozen=True, eq=False)
class ReportTable:
    """A section's table before formatting.

    Attributes
    ----------
    cells : pandas.DataFrame
        One row per table row; values are numbers, :class:`Estimate`, :class:`Share`, text, tuples
        (rendered one item a line) or None (rendered as a dash).
    best : frozenset of (int, str)
        (row position, column) of each cell marked best.
    formats : mapping
        Column -> format string (``"{:.3f}"``) or callable, for columns not shown the default way.
    note : str or Markdown
        A line under the table (what is marked and why): plain text, or a
        :class:`~topicbench.tasks.report.text.Markdown` paragraph.
    title : str
        A caption over the table, where a section holds several.
    ranks : mapping
        (row position, column) -> rank within its column (1: the best), for tables read by rank
        (the summary); the renderer colours or numbers these cells.
    unit : str
        What the numbers of the table count: ``"seconds"`` (shown as ms, s or min as reads best),
        ``"count"`` (whole numbers) or ``""`` (plain).
    spread : bool
        Whether an :class:`Estimate` shows its sd (``mean ± sd``) or its mean alone.
    column_groups : mapping
        Column -> (group, label) for a two-row header (HTML), e.g. ``("UMass@10", "congress")``.
    """

    cells: pd.DataFrame
    best: frozenset = frozenset()
    formats: Mapping[str, str | Callable] = field(default_factory=dict)
    note: str = ""
    title: str = ""
    ranks: Mapping = field(default_factory=dict)
    unit: str = ""
    spread: bool = True
    column_groups: Mapping = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return self.cells.empty


def estimate(values, expected: int | None = None, scored_at: int | None = None) -> Estimate | None:
    """The :class:`Estimate` of the finite values, or None when there are none."""
    values = np.asarray([v for v in values if pd.notna(v)], dtype=np.float64)
    if values.size == 0:
        return None
    summary = summarize(values)
    return Estimate(summary.mean, summary.sd, summary.n, expected, scored_at)


def seed_estimates(runs: pd.DataFrame, column: str, expected: int | None = None) -> dict:
    """(corpus, model) -> :class:`Estimate` of ``column`` over the finished runs' seeds."""
    done = finished_runs(runs)
    if column not in done:
        return {}
    found = {}
    for pair, values in done.groupby(["corpus", "model"])[column]:
        value = estimate(values, expected)
        if value is not None:
            found[pair] = value
    return found


def metric_estimates(runs: pd.DataFrame, key: str, expected: int | None = None) -> dict:
    """Like :func:`seed_estimates` for a score key ``metric@N``, where a model with no score at N
    (its topics have fewer than N words, e.g. BERTopic's) gets its score at the largest smaller N
    it was scored at, marked with that N, instead of nothing."""
    found = seed_estimates(runs, key, expected)
    name, _, size = key.partition("@")
    if not size.isdigit():
        return found
    for smaller in sorted((n for n in scored_sizes(runs, name) if n < int(size)), reverse=True):
        for pair, value in seed_estimates(runs, f"{name}@{smaller}", expected).items():
            found.setdefault(pair, replace(value, scored_at=smaller))
    return found


def scored_sizes(runs: pd.DataFrame, metric: str) -> list[int]:
    """The N of every ``metric@N`` column, ascending."""
    sizes = (column.partition("@")[2] for column in runs.columns if str(column).startswith(f"{metric}@"))
    return sorted(int(size) for size in sizes if size.isdigit())


#: Score keys that say how a score was obtained, not how good a model is (the share of topics
#: an LLM answered for): shown, never ranked or marked best.
BOOKKEEPING_SUFFIXES = ("_answered", "_in_reference_topics")


def higher_is_better(key: str) -> bool | None:
    """The direction of a score key from its metric's spec; None for what is not a metric
    (fit seconds, memory) or is bookkeeping (:data:`BOOKKEEPING_SUFFIXES`), which the report
    then leaves unmarked."""
    if str(key).partition("@")[0].endswith(BOOKKEEPING_SUFFIXES):
        return None
    try:
        return metric_for_key(key).higher_is_better
    except InputError:
        return None


#: A best value is bold only where it stands out of the seeds' noise: its mean differs from the
#: runner-up's by more than this many standard errors of the difference (each se = sd / sqrt(n)).
NOISE_SE = 2.0
#: The rule, as the tables' notes state it.
NOISE_RULE = (f"bold only where it beats the runner-up by more than {NOISE_SE:g} standard errors of the "
              "difference (se = sd / √seeds): never on one seed, never on a tie")


def clear_best(values, higher: bool | None) -> list[int]:
    """The position of the best of ``values`` (:class:`Estimate` cells; others, and values scored
    at a smaller N, take no part) where it stands out of the seeds' noise (:data:`NOISE_SE`), as a
    list of at most one; empty without a direction, a runner-up, or two seeds on both sides."""
    ranked = [(row, value) for row, value in enumerate(values)
              if isinstance(value, Estimate) and not value.scored_at and np.isfinite(value.mean)]
    if higher is None or len(ranked) < 2:
        return []
    (row, best), (_, second) = sorted(ranked, key=lambda item: -item[1].mean if higher else item[1].mean)[:2]
    if best.n < 2 or second.n < 2 or not (np.isfinite(best.sd) and np.isfinite(second.sd)):
        return []
    noise = NOISE_SE * np.sqrt(best.sd ** 2 / best.n + second.sd ** 2 / second.n)
    return [row] if abs(best.mean - second.mean) > noise else []


def best_rows(values, higher: bool | None) -> list[int]:
    """Positions of the best of ``values`` (NaN ignored; ties all marked); none without a direction."""
    values = np.asarray(values, dtype=np.float64)
    if higher is None or np.isnan(values).all():
        return []
    best = np.nanmax(values) if higher else np.nanmin(values)
    return [int(i) for i in np.flatnonzero(values == best)]


def pivot_by_model(estimates: dict, *, models, corpora, key: str | None = None) -> ReportTable:
    """Models as rows, corpora as columns; with a metric ``key``, the best value of each corpus is
    marked by the metric's direction (values scored at a smaller N take no part)."""
    rows = [{"model": model, **{corpus: estimates.get((corpus, model)) for corpus in corpora}}
            for model in models if any((corpus, model) in estimates for corpus in corpora)]
    cells = pd.DataFrame(rows, columns=["model", *corpora])
    direction = higher_is_better(key) if key else None
    best = set()
    for corpus in corpora:
        best.update((row, corpus) for row in clear_best(cells[corpus], direction))
    return ReportTable(cells, frozenset(best), note=best_rule(direction, key, any_scored_smaller(cells, corpora)))


def ranked_means(values) -> list[float]:
    """The means that take part in ranking a column: a value scored at a smaller N (or a gap)
    does not."""
    return [value.mean if isinstance(value, Estimate) and not value.scored_at else np.nan for value in values]


def any_scored_smaller(cells: pd.DataFrame, columns) -> bool:
    return any(isinstance(value, Estimate) and value.scored_at for column in columns for value in cells[column])


def best_rule(direction: bool | None, key: str | None, shorter: bool) -> str:
    """The one rule that marks the best value of a column, in words: the highest (or lowest) mean
    among the models scored at the column's N; with ``shorter``, what happens to the others."""
    if direction is None:
        return ""
    size = (key or "").partition("@")[2]
    among = f" among the models scored at N = {size}" if size.isdigit() else ""
    rule = (f"Bold: the best per column, the {'highest' if direction else 'lowest'} mean "
            f"({'higher' if direction else 'lower'} is better){among}, {NOISE_RULE}.")
    if shorter and size.isdigit():
        rule += (f" A value scored at a smaller N (N=…: the model's topics have fewer than {size} words) is "
                 "shown in grey and not ranked.")
    return rule


def ranks_of(values, higher: bool | None) -> dict:
    """Position -> rank (1: the best; ties share the better rank) of the finite ``values``."""
    series = pd.Series(np.asarray(values, dtype=np.float64))
    if higher is None or series.isna().all():
        return {}
    ranks = series.rank(ascending=not higher, method="min")
    return {int(position): int(rank) for position, rank in ranks.dropna().items()}


def metric_pivot(runs: pd.DataFrame, key: str, *, models, corpora, expected: int | None = None) -> ReportTable:
    """:func:`pivot_by_model` of one score key (or any numeric column) over seeds."""
    return pivot_by_model(metric_estimates(runs, key, expected), models=models, corpora=corpora, key=key)


def changed_settings_table(runs: pd.DataFrame) -> ReportTable:
    """Each (model, setting) that some finished run set otherwise than the model's default:
    value, default, and how many runs."""
    done = finished_runs(runs)
    if "changed_settings" not in done:
        return ReportTable(pd.DataFrame())
    counts: dict = {}
    for model, text in zip(done.model, done.changed_settings):
        for setting, (value, default) in (json.loads(text) if isinstance(text, str) and text else {}).items():
            key = (model, setting, json.dumps(value), json.dumps(default))
            counts[key] = counts.get(key, 0) + 1
    rows = [{"model": model, "setting": setting, "value": value, "model default": default, "runs": n}
            for (model, setting, value, default), n in sorted(counts.items())]
    return ReportTable(pd.DataFrame(rows))


def training_table(runs: pd.DataFrame, corpora=(), models=()) -> ReportTable:
    """Per corpus and iterative model (in the order of ``corpora`` and ``models``, others after):
    the loss that was minimised, how many runs converged (relative change of the loss over the
    last 10% of epochs below 1%), that change, and the epochs (or iterations) trained."""
    done = finished_runs(runs)
    if "converged" not in done:
        return ReportTable(pd.DataFrame())
    rows = []
    groups = done.dropna(subset=["converged"]).groupby(["corpus", "model"])
    for (corpus, model), group in sorted(groups, key=lambda item: pair_order(item[0], corpora, models)):
        curves = group["training_curve"].dropna() if "training_curve" in group else []
        change = group["training_loss_relative_change"] if "training_loss_relative_change" in group else []
        rows.append({
            "corpus": corpus, "model": model, "loss": group.training_loss_kind.iloc[0] or None,
            "converged": Share(int(group.converged.sum()), len(group)),
            "relative change, last 10%": estimate(change),
            "epochs / iterations": tuple(sorted({int(curve[0][-1]) for curve in curves})) or None,
        })
    return ReportTable(pd.DataFrame(rows), formats={"epochs / iterations": _comma_list})


def pair_order(pair, corpora, models) -> tuple:
    """Sort key of a (corpus, model) pair: by the given orders, then by name."""
    corpus, model = pair
    corpora, models = list(corpora), list(models)
    return (corpora.index(corpus) if corpus in corpora else len(corpora),
            models.index(model) if model in models else len(models), corpus, model)


def _comma_list(values) -> str:
    return ", ".join(map(str, values)) if values else "–"


@dataclass(frozen=True)
class RunStatus:
    """How far an experiment is: runs by state (``failed``: ended in an error; ``interrupted``:
    stopped by Ctrl-C, SIGTERM or a dead process, fitted again by a rerun), and the (model,
    corpus) pairs with fewer finished seeds than the config asks for (None where the config is
    unknown)."""

    finished: int
    failed: int
    interrupted: int
    running: tuple
    expected: int | None
    pending: tuple | None


def run_status(runs: pd.DataFrame, corpora=None, models=None, seeds=None) -> RunStatus:
    """Count the runs; with the config's corpora, models and seeds, name the pairs not done yet."""
    done = finished_runs(runs)
    running = runs[runs.status == RUNNING]
    ended = (len(done), len(failed_runs(runs)), len(interrupted_runs(runs)))
    running_pairs = tuple(dict.fromkeys(f"{m}@{c}" for c, m in zip(running.corpus, running.model)))
    if not (corpora and models and seeds):
        return RunStatus(*ended, running_pairs, None, None)
    finished_seeds = done.groupby(["corpus", "model"]).seed.nunique()
    pending = tuple(f"{model}@{corpus}" for corpus in corpora for model in models
                    if finished_seeds.get((corpus, model), 0) < len(seeds))
    return RunStatus(*ended, running_pairs, len(corpora) * len(models) * len(seeds), pending)
