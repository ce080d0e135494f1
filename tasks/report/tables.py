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

from topicbench.baselines.convergence import describe_rule
from topicbench.core.metrics.registry import metric_for_key
from topicbench.core.metrics.stats import (
    ALPHA, BestTest, SeedInterval, best_against_rest, seed_interval, summarize, summary_interval,
)
from topicbench.core.validation import InputError
from topicbench.tasks.report.in_reference import in_reference_values
from topicbench.tasks.report.unranked import range_checked
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
    values : tuple of float
        The seeds' values (what the test for the best of a column reads); empty where only the
        summary was kept, and then the value takes no part in that test.
    unranked : str
        Why the value is shown but never ranked nor marked best (a seed's value outside its
        metric's valid range, or worse than the uniform model:
        :func:`~topicbench.tasks.report.unranked.range_checked`); empty
        where it ranks.
    footnote, mark : str, int
        What a reader must know to read the value, said under its table with footnote ``mark``
        (numbered by :func:`~topicbench.tasks.report.summary.mark_gaps`): a coherence over the
        words the reference corpus has (:func:`~topicbench.tasks.report.in_reference.in_reference_note`).
    """

    mean: float
    sd: float
    n: int
    expected: int | None = None
    scored_at: int | None = None
    values: tuple = field(default=(), compare=False, repr=False)
    unranked: str = ""
    footnote: str = ""
    mark: int = 0
    fits_differ: bool = False

    @property
    def not_ranked(self) -> bool:
        """Whether it takes no part in its column's ranking: scored at a smaller N, or unranked."""
        return self.scored_at is not None or bool(self.unranked)

    @property
    def interval(self) -> SeedInterval:
        """The 95% Student-t interval of the mean over the seeds (none under 3 seeds; a model
        whose seeds gave the same value is deterministic and has none):
        :func:`~topicbench.core.metrics.stats.seed_interval` of the values, else of the summary."""
        return seed_interval(self.values) if self.values else summary_interval(self.mean, self.sd, self.n)


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
        Whether an :class:`Estimate` shows its 95% t-interval (``mean ± h``) or its mean alone.
    column_groups : mapping
        Column -> (group, label) for a two-row header (HTML), e.g. ``("UMass@10", "congress")``.
    tips : mapping
        (row position, column) -> a cell's hover text (HTML): the p-values behind its bold or not.
    tested : bool
        Whether its bold cells come from the stated test for the best
        (:data:`~topicbench.core.metrics.stats.BEST_RULE`), which its section then states once.
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
    tips: Mapping = field(default_factory=dict)
    tested: bool = False

    @property
    def empty(self) -> bool:
        return self.cells.empty


def estimate(values, expected: int | None = None, scored_at: int | None = None) -> Estimate | None:
    """The :class:`Estimate` of the finite values, or None when there are none."""
    values = np.asarray([v for v in values if pd.notna(v)], dtype=np.float64)
    if values.size == 0:
        return None
    summary = summarize(values)
    return Estimate(summary.mean, summary.sd, summary.n, expected, scored_at, tuple(float(v) for v in values))


def seed_estimates(runs: pd.DataFrame, column: str, expected: int | None = None) -> dict:
    """(corpus, model) -> :class:`Estimate` of ``column`` over the finished runs' seeds."""
    done = finished_runs(runs)
    if column not in done:
        return {}
    found, varied = {}, models_whose_fits_differ(done)
    for pair, values in done.groupby(["corpus", "model"])[column]:
        value = estimate(values, expected)
        if value is not None:
            found[pair] = replace(value, fits_differ=pair in varied)
    return found


def models_whose_fits_differ(done: pd.DataFrame) -> set:
    """(corpus, model) pairs some of whose scores differ between seeds: their fits differ, so a
    score that is the same on every seed is a coincidence (a small discrete metric), not a
    deterministic model."""
    scores = [column for column in done.columns if "@" in str(column) or higher_is_better(column) is not None]
    if done.empty or not scores:
        return set()
    # one conversion and one grouped count for all pairs: a loop over groups cost seconds per
    # call on 90 runs, and every table calls this
    numbers = done[scores].apply(pd.to_numeric, errors="coerce")
    distinct = numbers.groupby([done.corpus, done.model]).nunique(dropna=True)
    return set(distinct.index[(distinct > 1).any(axis=1)])


def metric_estimates(runs: pd.DataFrame, key: str, expected: int | None = None) -> dict:
    """Like :func:`seed_estimates` for a score key ``metric@N``, where a model with no score at N
    (its topics have fewer than N words, e.g. BERTopic's) gets its score at the largest smaller N
    it was scored at, marked with that N, instead of nothing. A coherence missing for top words
    outside the reference corpus is its value over the words the reference has, ranked, with a
    footnote (:mod:`~topicbench.tasks.report.in_reference`)."""
    found = range_checked(runs, key, seed_estimates(runs, key, expected))
    name, _, size = key.partition("@")
    if not size.isdigit():
        return found
    done = finished_runs(runs)
    for pair, (values, note) in in_reference_values(runs, key, set(zip(done.corpus, done.model)) - set(found)).items():
        found[pair] = replace(estimate(values, expected), footnote=note)
    for smaller in sorted((n for n in scored_sizes(runs, name) if n < int(size)), reverse=True):
        checked = range_checked(runs, f"{name}@{smaller}", seed_estimates(runs, f"{name}@{smaller}", expected))
        for pair, value in checked.items():
            found.setdefault(pair, replace(value, scored_at=smaller))
    return found



def scored_sizes(runs: pd.DataFrame, metric: str) -> list[int]:
    """The N of every ``metric@N`` column, ascending."""
    sizes = (column.partition("@")[2] for column in runs.columns if str(column).startswith(f"{metric}@"))
    return sorted(int(size) for size in sizes if size.isdigit())


#: Score keys that say how a score was obtained, not how good a model is (the share of topics
#: an LLM answered for): shown, never ranked or marked best.
BOOKKEEPING_SUFFIXES = ("_answered", "_in_reference_topics", "_in_reference_dropped")


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


def column_test(values, higher: bool | None) -> BestTest | None:
    """The stated test for the best of a column (:func:`~topicbench.core.metrics.stats.best_against_rest`:
    the best mean against every other, Welch's t over seeds, Holm-corrected, α = 0.05) over its
    :class:`Estimate` cells that keep their seeds' values (others, and values scored at a smaller
    N, take no part); None without a direction or with fewer than two such cells."""
    samples = [value.values if isinstance(value, Estimate) and value.values and not value.scored_at
               and not value.unranked else None for value in values]
    if higher is None or sum(sample is not None for sample in samples) < 2:
        return None
    return best_against_rest(samples, higher)


def bold_best(values, higher: bool | None) -> tuple[list[int], dict]:
    """(the rows to bold: the best's, where it beats every other by :func:`column_test`, else
    none; row -> hover text with the Holm-adjusted p of each comparison made)."""
    test = column_test(values, higher)
    if test is None or test.best is None:
        return [], {}
    tips = {row: f"Welch p against the best mean, Holm-adjusted: {_p_text(p)}" for row, p in test.adjusted.items()}
    tested = [p for p in test.adjusted.values() if p is not None]
    verdict = f"beats every other at α = {ALPHA:g}: bold" if test.clear else "not bold"
    largest = f"largest Holm-adjusted Welch p against the others {_p_text(max(tested))}" if tested else "no other testable"
    untested = sum(p is None for p in test.adjusted.values())
    tips[test.best] = (f"the best mean; {largest}" + (f"; {untested} not testable" if untested else "")
                       + f"; {verdict}")
    return ([test.best] if test.clear else []), tips


def _p_text(p: float | None) -> str:
    return "not testable (fewer than 2 seeds, or both deterministic)" if p is None else f"{p:.2g}"


def pivot_by_model(estimates: dict, *, models, corpora, key: str | None = None) -> ReportTable:
    """Models as rows, corpora as columns; with a metric ``key``, the best value of each corpus is
    marked by the metric's direction (values scored at a smaller N take no part)."""
    rows = [{"model": model, **{corpus: estimates.get((corpus, model)) for corpus in corpora}}
            for model in models if any((corpus, model) in estimates for corpus in corpora)]
    cells = pd.DataFrame(rows, columns=["model", *corpora])
    direction = higher_is_better(key) if key else None
    best, tips = set(), {}
    for corpus in corpora:
        rows, found = bold_best(cells[corpus], direction)
        best.update((row, corpus) for row in rows)
        tips.update({(row, corpus): tip for row, tip in found.items()})
    return ReportTable(cells, frozenset(best), note=best_rule(direction, key, any_scored_smaller(cells, corpora)),
                       tips=tips, tested=direction is not None)


def ranked_means(values) -> list[float]:
    """The means that take part in ranking a column: a value scored at a smaller N, one that
    cannot be ranked (:attr:`Estimate.unranked`) or a gap does not."""
    return [value.mean if isinstance(value, Estimate) and not value.scored_at and not value.unranked else np.nan
            for value in values]


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
            f"({'higher' if direction else 'lower'} is better){among}, where the test under this section finds it "
            "better than every other.")
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
    the loss that was minimised, how many runs converged, are still improving or stopped at their
    iteration cap (:func:`convergence_verdict`), the loss's fitted fall over the last 20% of the
    curve, the rule that judged them, and the epochs (or iterations) trained."""
    done = finished_runs(runs)
    if "converged" not in done:
        return ReportTable(pd.DataFrame())
    rows = []
    groups = done.dropna(subset=["converged"]).groupby(["corpus", "model"])
    for (corpus, model), group in sorted(groups, key=lambda item: pair_order(item[0], corpora, models)):
        curves = group["training_curve"].dropna() if "training_curve" in group else []
        fall = group["training_loss_tail_fall"] if "training_loss_tail_fall" in group else []
        verdicts = [convergence_verdict(row) for row in group.to_dict("records")]
        counts = {verdict: sum(1 for v, _ in verdicts if v == verdict) for verdict, _ in verdicts}
        rows.append({
            "corpus": corpus, "model": model, "loss": group.training_loss_kind.iloc[0] or None,
            "verdict": ", ".join(f"{verdict} {n}/{len(group)}" for verdict, n in counts.items()),
            "fall of the loss, last 20%": estimate(fall),
            "rule": "; ".join(dict.fromkeys(rule for _, rule in verdicts)),
            "epochs / iterations": tuple(sorted({int(curve[0][-1]) for curve in curves})) or None,
        })
    return ReportTable(pd.DataFrame(rows), formats={"epochs / iterations": _comma_list})


def convergence_verdict(run: Mapping) -> tuple[str, str]:
    """One finished run's convergence verdict and the rule behind it: the tail rule of its loss
    curve (``convergence_threshold`` logged: "converged", "still improving", or "too short to
    tell"), else its package's own stopping rule (no curve: "converged" or "stopped at its
    iteration cap"), else the end-to-end rule of runs tracked before the tail rule."""
    converged = bool(run.get("converged"))
    threshold = run.get("convergence_threshold")
    kind = str(run.get("training_loss_kind") or "")
    if threshold is not None and np.isfinite(threshold):
        fall = run.get("training_loss_tail_fall")
        if converged:
            verdict = "converged"
        else:
            verdict = "still improving" if fall is not None and np.isfinite(fall) else "too short to tell"
        return verdict, describe_rule(float(threshold))
    if kind.startswith("no curve: "):
        return ("converged" if converged else "stopped at its iteration cap"), kind[len("no curve: "):]
    return ("converged" if converged else "not converged"), "change under 1% over the last 10% (tracked before the tail rule)"


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
