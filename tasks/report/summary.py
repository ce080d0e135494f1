"""The summary and every score asked for, made for a verdict a reader can trust.

Pure functions of the run table of :func:`topicbench.tasks.results.store.collect_runs` (and of the
report's data, :class:`~topicbench.tasks.report.parts.ReportData`, for the paragraphs):

- the summary's table (:func:`summary_table`): beside each model's scores its K (the topics it
  used) and the seeds its cells rest on; where models differ in K by more than
  :data:`K_FACTOR` times a caution (:func:`k_cautions`) that points to the K section
  (:mod:`~topicbench.tasks.report.k_section`: scores against K, verdicts only at the same K);
- every other requested score, a table each (:func:`score_table`), with its direction;
- a reason for every missing value (:class:`~topicbench.tasks.report.tables.Gap`,
  :func:`gap_reason`), numbered as a footnote under its table (:func:`mark_gaps`), and beside a
  coherence's gap for top words out of the reference, its value over the words the reference
  has (:func:`gap`);
- the caution on LLM scores over few topics or one seed is
  :func:`~topicbench.tasks.report.llm_judged.judged_sample_caution` (a stability's test against
  chance is :func:`~topicbench.tasks.report.stability.chance_verdict`).

Bold follows one stated test everywhere (:func:`~topicbench.tasks.report.tables.bold_best`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Mapping

import pandas as pd

from topicbench.core.metrics.coherence_in_reference import IN_REFERENCE, IN_REFERENCE_TOPICS
from topicbench.core.metrics.registry import METRICS, metric_for_key
from topicbench.core.validation import InputError

from .tables import (
    RUNNING, Estimate, Gap, PartialValue, ReportTable, any_scored_smaller, estimate, failed_runs, finished_runs,
    higher_is_better, interrupted_runs, metric_estimates, metric_pivot, ranked_means, ranks_of, scored_sizes,
    bold_best,
)
from .text import Markdown, Text


#: The column of each run's number of topics (K) the fit used: E-LDA and BERTopic choose theirs.
TOPICS_USED = "num_topics_used"
#: Models side by side whose K differ by more than this factor are compared with a caution:
#: coherence and diversity depend on K.
K_FACTOR = 2.0


def summary_table(runs: pd.DataFrame, keys, *, models, corpora, expected: int | None = None,
                  model_metrics: Mapping | None = None) -> ReportTable:
    """Who wins where: models as rows; per corpus, K (the topics each model used, mean over its
    seeds) and the seeds its cells rest on, then one column per (score key, corpus), each cell
    the mean over seeds, ranked within its column by the metric's direction (values scored at a
    smaller N take no part) and bold only where the stated test finds it better than every other
    (:func:`~topicbench.tasks.report.tables.bold_best`). A cell without a value says why
    (:class:`~topicbench.tasks.report.tables.Gap`, :func:`gap_reason`).
    ``keys`` are (score key, title) pairs, e.g. ``("umass@10", "UMass@10")``; ``model_metrics``
    maps a model to the metrics asked of it, where the config restricts them."""
    estimates = {key: metric_estimates(runs, key, expected) for key, _ in keys}
    models = [model for model in models if (runs.model == model).any()]  # one that failed throughout says why
    columns, groups, ranks, best, tips = {}, {}, {}, set(), {}
    for corpus in corpora:
        used = [topics_used(runs, corpus, model) for model in models]
        if any(k is not None for k in used):  # a store tracked before K was logged has none
            columns[f"K · {corpus}"], groups[f"K · {corpus}"] = used, ("K (topics used)", corpus)
        seeds = [len(finished_runs(model_runs(runs, corpus, model))) or None for model in models]
        if any(seeds):
            columns[f"seeds · {corpus}"], groups[f"seeds · {corpus}"] = seeds, ("seeds", corpus)
    for key, title in keys:
        for corpus in corpora:
            values = [estimates[key].get((corpus, model)) for model in models]
            if all(value is None for value in values):
                continue
            _add_ranked_column(columns, groups, ranks, best, (title, corpus), values, key, tips)
            for row, model in enumerate(models):
                if values[row] is None:
                    values[row] = gap(runs, corpus, model, key, (model_metrics or {}).get(model))
    cells, footnotes = mark_gaps(pd.DataFrame({"model": models, **{column: pd.Series(values, dtype=object)
                                                                   for column, values in columns.items()}}))
    note = _summary_note(keys, any_scored_smaller(cells, columns)) + footnotes
    return ReportTable(cells, frozenset(best), note=note, ranks=ranks, spread=False, column_groups=groups, tips=tips,
                       tested=True)


def _add_ranked_column(columns: dict, groups: dict, ranks: dict, best: set, group: tuple, values: list, key: str,
                       tips: dict) -> None:
    """Add the column ``"title · corpus"`` of ``values`` (one per model) with its ranks, its
    tested best (:func:`~topicbench.tasks.report.tables.bold_best`) and the p-values behind it
    (``tips``, the cells' hovers), by ``key``'s direction."""
    column = f"{group[0]} · {group[1]}"
    columns[column], groups[column] = values, group
    for row, rank in ranks_of(ranked_means(values), higher_is_better(key)).items():
        ranks[(row, column)] = rank
    rows, found = bold_best(values, higher_is_better(key))
    best.update((row, column) for row in rows)
    tips.update({(row, column): tip for row, tip in found.items()})


def model_runs(runs: pd.DataFrame, corpus: str, model: str) -> pd.DataFrame:
    """Every run (in any state) of ``model`` on ``corpus``."""
    return runs[(runs.corpus == corpus) & (runs.model == model)]


def topics_used(runs: pd.DataFrame, corpus: str, model: str):
    """K: the mean number of topics ``model`` used on ``corpus`` over its finished seeds, whole
    where it is (an int), else to one decimal; None where no run logged it."""
    done = finished_runs(model_runs(runs, corpus, model))
    if TOPICS_USED not in done or done[TOPICS_USED].isna().all():
        return None
    mean = float(done[TOPICS_USED].mean())
    return int(mean) if mean.is_integer() else round(mean, 1)


def k_differences(runs: pd.DataFrame, *, models, corpora, factor: float = K_FACTOR) -> dict:
    """corpus -> {model: K} for each corpus where the models' K (:func:`topics_used`) differ by
    more than ``factor`` (largest over smallest): there coherence and diversity, which depend on
    K, do not compare the models on equal terms."""
    found = {}
    for corpus in corpora:
        used = {model: topics_used(runs, corpus, model) for model in models}
        used = {model: k for model, k in used.items() if k}
        if len(used) >= 2 and max(used.values()) > factor * min(used.values()):
            found[corpus] = used
    return found


def _summary_note(keys, shorter: bool) -> str:
    directions = {key: higher_is_better(key) for key, _ in keys}
    sizes = sorted({key.partition("@")[2] for key in directions if key.partition("@")[2].isdigit()})
    at = f" at N = {sizes[0]}" if len(sizes) == 1 else ""
    lower = [title for key, title in keys if directions[key] is False]
    order = ("higher is better for every metric here" if not lower
             else f"higher is better, except {', '.join(lower)} (lower is better)")
    rule = (f"K: the topics each model used (mean over its seeds); seeds: the finished seeds its cells rest on "
            f"(a cell on fewer says n=…). Each other cell: the mean over seeds{at}, and its rank in its column "
            f"(1: the best; {order}). Bold: the best mean{' among the models scored' + at if at else ''}, "
            "where the test under this section finds it better than every other.")
    if shorter and sizes:
        rule += (f" A value scored at a smaller N (N=…: the model's topics have fewer than {sizes[0]} words) is shown "
                 "in grey and not ranked.")
    return rule


#: Superscript digits, for the footnote marks of gaps.
_SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def footnote_mark(mark: int) -> str:
    """A footnote's mark as superscript digits: 1 -> ¹, 12 -> ¹²."""
    return str(mark).translate(_SUPERSCRIPTS)


def mark_gaps(cells: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """``cells`` with each :class:`~topicbench.tasks.report.tables.Gap` numbered by its reason, and
    each :class:`~topicbench.tasks.report.tables.Estimate` with a footnote by it (row by row, the
    first ¹), and the footnotes that say each once (a gap's after a dash; empty where there is
    none), to end a note."""
    marks: dict = {}
    for row in cells.itertuples(index=False):
        for value in row:
            if _footnote(value):
                marks.setdefault(_footnote(value), (len(marks) + 1, "–" if isinstance(value, Gap) else ""))
    if not marks:
        return cells, ""
    marked = pd.DataFrame({column: pd.Series([replace(value, mark=marks[_footnote(value)][0]) if _footnote(value)
                                              else value for value in cells[column]], index=cells.index, dtype=object)
                           for column in cells.columns})
    partial = any(isinstance(value, Gap) and value.partial for column in cells for value in cells[column])
    return marked, " " + " ".join(f"{dash}{footnote_mark(mark)} {reason}." for reason, (mark, dash) in marks.items()) + (
        f" {IN_REFERENCE_NOTE}" if partial else "")


def _footnote(value) -> str:
    """What a cell says under its table: a gap's reason, an estimate's footnote; empty otherwise."""
    return value.reason if isinstance(value, Gap) else value.footnote if isinstance(value, Estimate) else ""


#: What a gap's "(in-reference words: …)" is, said under its table.
IN_REFERENCE_NOTE = ("In-reference words (beside a dash): the same measure over each topic's top N words that the "
                     "reference corpus has (the others left out, none taken in their place), for the topics that keep "
                     "at least 2 of them, and how many topics that is; fewer words than the column's N, so not ranked "
                     "against the full values.")


def gap(runs: pd.DataFrame, corpus: str, model: str, key: str, asked=None) -> Gap:
    """A missing value of score ``key``: its reason (:func:`gap_reason`) and, for a coherence
    whose topics have top words the reference lacks, the coherence over the words it has
    (``npmi_in_reference@10`` and the topics it averages, ``npmi_in_reference_topics@10``)."""
    name, _, size = key.partition("@")
    done = finished_runs(model_runs(runs, corpus, model))
    scored, topics = f"{name}{IN_REFERENCE}@{size}", f"{name}{IN_REFERENCE_TOPICS}@{size}"
    value = estimate(done[scored]) if scored in done and topics in done else None
    partial = None if value is None else PartialValue(value, float(done[topics].mean()), topics_used(runs, corpus, model))
    return Gap(gap_reason(runs, corpus, model, key, asked), partial=partial)


def gap_reason(runs: pd.DataFrame, corpus: str, model: str, key: str, asked=None) -> str:
    """Why ``model`` has no value of score ``key`` on ``corpus``: its runs failed, were stopped or
    are still running; the metric was not asked of it (``asked``: the metrics the config asks of
    the model, where it restricts them); the metric does not apply to it (the reason its runs
    recorded in the tag ``topicbench.skipped_metrics``, column ``skipped_metrics``: a model
    without that output, top words outside the reference corpus, ...); or no value was logged."""
    mine = model_runs(runs, corpus, model)
    done = finished_runs(mine)
    if done.empty:
        failed, stopped = failed_runs(mine), interrupted_runs(mine)
        if not failed.empty:
            return f"its runs failed: {_first_line(failed.error.iloc[0])}"
        if not stopped.empty:
            return "its runs were stopped before finishing (rerunning the same command fits them)"
        return "its runs are still being fitted" if (mine.status == RUNNING).any() else "not fitted"
    name, size = metric_name(key), key.partition("@")[2]
    if asked is not None and name not in asked:
        return f"{name} was not asked of {model} (its metrics: {', '.join(asked)})"
    for text in done.get("skipped_metrics", ()):
        skipped = _skipped_metrics(text)
        if key in skipped and key != name:  # the score itself came out NaN or infinite
            return skipped[key]
        if name in skipped:
            return f"{name} does not apply to {model}: {skipped[name]}"
        for entry, why in skipped.items():
            if entry.startswith("top_n ") and size in entry.partition(" ")[2].split(","):
                return f"not scored at N = {size}: {why}"
    return (f"{model}'s runs logged no {key}: not a number for its topics, or tracked before {name} "
            "was asked for (rerun to score it)")


def _skipped_metrics(text) -> dict:
    """A run's ``topicbench.skipped_metrics`` tag as a mapping (empty where there is none, or
    where the tag was cut at MLflow's length limit and no longer parses)."""
    try:
        found = json.loads(text) if isinstance(text, str) and text else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def metric_name(key: str) -> str:
    """The registry name of the metric that returns score ``key`` (``nmi`` -> ``clustering``)."""
    try:
        return metric_for_key(key).name
    except InputError:
        return key.partition("@")[0]


def _first_line(text) -> str:
    lines = str(text or "").strip().splitlines()
    return (lines[0] if lines else "no error recorded")[:200].rstrip(".")


def score_table(runs: pd.DataFrame, key: str, *, models, corpora, expected: int | None = None,
                model_metrics: Mapping | None = None) -> ReportTable:
    """:func:`~topicbench.tasks.report.tables.metric_pivot` of a requested score with a row for
    every model that has runs, each value it lacks a :class:`~topicbench.tasks.report.tables.Gap`
    with its reason (:func:`gap_reason`), said under the table."""
    table = metric_pivot(runs, key, models=models, corpora=corpora, expected=expected)
    present = [model for model in models if (runs.model == model).any()]
    found = {} if table.empty else table.cells.set_index("model").to_dict("index")
    columns = {corpus: pd.Series([found.get(model, {}).get(corpus) for model in present], dtype=object)
               for corpus in corpora if (runs.corpus == corpus).any()}
    for corpus, values in columns.items():
        for row, model in enumerate(present):
            if not isinstance(values[row], Estimate):
                values[row] = gap(runs, corpus, model, key, (model_metrics or {}).get(model))
    tested = {corpus: bold_best(values, higher_is_better(key)) for corpus, values in columns.items()}
    best = {(row, corpus) for corpus, (rows, _) in tested.items() for row in rows}
    tips = {(row, corpus): tip for corpus, (_, found) in tested.items() for row, tip in found.items()}
    cells, footnotes = mark_gaps(pd.DataFrame({"model": pd.Series(present, dtype=object), **columns}))
    return ReportTable(cells, frozenset(best), note=table.note + footnotes if table.note else footnotes.strip(),
                       tips=tips, tested=table.tested)


#: Reasons an empty section lists at most, then how many more there are.
UNSCORED_REASONS_SHOWN = 6


def unscored_reason(data, keys) -> str | None:
    """Why the scores ``keys`` ((score key, title) pairs), called once none of them has a value,
    are not shown: no model has a value of any of them on any corpus, and each distinct reason
    its runs give (:func:`gap_reason`: its runs failed, the metric does not apply to it, ...),
    said once for all the metrics and models it holds for; where the config asks for none of
    them, that. None without keys."""
    asked = set(requested_metrics(data))
    titles = ", ".join(dict.fromkeys(title for _, title in keys))
    keys = [(key, title) for key, title in keys if metric_name(key) in asked]
    if not keys and titles:
        listed = (data.config or {}).get("metrics")
        return f"Not shown: {'the config asks for none of' if listed else 'no run holds a score of'} {titles}."
    if not keys:
        return None
    present = [model for model in data.models if (data.runs.model == model).any()] if len(data.runs) else []
    restricted = model_metrics(data)
    reasons = _grouped_reasons((metric_name(key), model, gap_reason(data.runs, corpus, model, key,
                                                                    restricted.get(model)))
                               for key, _ in keys for corpus in data.corpora for model in present)
    reasons = reasons or ["no run of this experiment was fitted"]
    more = len(reasons) - UNSCORED_REASONS_SHOWN
    why = "; ".join(reasons[:UNSCORED_REASONS_SHOWN]) + (f"; and {more} more" if more > 0 else "")
    titles = ", ".join(dict.fromkeys(title for _, title in keys))  # those asked for
    return f"Not shown: no model has a value of {titles} on any corpus. Why: {why}."


def _grouped_reasons(found) -> list:
    """Each distinct reason of ``found`` ((metric, model, reason) triples) once: "umass, npmi do
    not apply to a, b: <why>" where the metrics do not apply to the models for one reason."""
    grouped: dict = {}
    for metric, model, reason in found:
        prefix = f"{metric} does not apply to {model}: "
        metrics, models = grouped.setdefault(reason.removeprefix(prefix) if reason.startswith(prefix) else (reason,),
                                             ({}, {}))
        metrics[metric], models[model] = None, None
    return [why[0] if isinstance(why, tuple) else
            f"{', '.join(metrics)} {'does' if len(metrics) == 1 else 'do'} not apply to {', '.join(models)}: {why}"
            for why, (metrics, models) in grouped.items()]


def requested_metrics(data) -> list[str]:
    """The metrics the config asks for, in its order; without a config, every metric the runs
    hold a score of."""
    listed = (data.config or {}).get("metrics")
    if listed:
        return list(listed)
    return list(dict.fromkeys(metric_name(column) for column in data.runs.columns if higher_is_better(column) is not None))


def model_metrics(data) -> dict:
    """Model (its label) -> the metrics the config asks of it, for the models whose config entry
    restricts them."""
    return {model.get("label") or model["model"]: list(model["metrics"])
            for model in (data.config or {}).get("models", []) if model.get("metrics") is not None}


def requested_keys(runs: pd.DataFrame, metric: str, n: int) -> list[str]:
    """The score keys a table shows of ``metric``: its named outputs (bookkeeping left out), or
    its score at N = ``n`` (else the largest N it was scored at), or its own name."""
    spec = METRICS.get(metric)
    if spec.outputs:
        return [key for key in spec.outputs if higher_is_better(key) is not None]
    sizes = scored_sizes(runs, metric)
    if sizes:
        return [f"{metric}@{n if n in sizes else sizes[-1]}"]
    return [metric]


def direction_words(key: str) -> str:
    """What follows a score's name to give its direction: "(higher is better)" or "(lower is
    better)" after a space; empty without a direction."""
    higher = higher_is_better(key)
    return "" if higher is None else " (higher is better)" if higher else " (lower is better)"


def k_cautions(data, advice=None) -> tuple:
    """A caution paragraph per corpus where the models' K differ by more than K_FACTOR times;
    ``advice(corpus)``: what it points to (the K section, the same-K fits that exist,
    :func:`~topicbench.tasks.report.k_curves.k_advice`)."""
    cautions = []
    for corpus, used in k_differences(data.runs, models=data.models, corpora=data.corpora).items():
        listing = ", ".join(f"{model} {k:g}" for model, k in sorted(used.items(), key=lambda item: -item[1]))
        pointer = advice(corpus) if advice is not None else (
            "to compare them at equal K by design, give a model num_topics: {match: LABEL} (the K that model LABEL "
            "used, per corpus and seed) or the same K")
        cautions.append(Markdown(
            "**Caution: the models differ in K on ", Text(corpus), "** (topics used: ", Text(listing),
            f"). Coherence and diversity depend on K (a model with more topics keeps more of them specific, and "
            f"its diversity falls), so the ranks below compare models at different K, not on equal terms; {pointer}."))
    return tuple(cautions)


def unlisted_models_note(data) -> tuple:
    """A paragraph naming the models whose runs the experiment holds and the config does not list
    (after ``topicbench run chosen.yaml``: the search's other trials), shown after the config's
    models in every table; empty where there are none."""
    listed = [model.get("label") or model["model"] for model in (data.config or {}).get("models", [])]
    others = [model for model in data.models if model not in listed]
    if not listed or not others:
        return ()
    return (Markdown(f"Besides the config's {len(listed)} model{'s' if len(listed) != 1 else ''}, this experiment "
                     f"holds runs of {len(others)} more, shown after them in every table: ", Text(", ".join(others)),
                     ". Where the config is a search's chosen config, these are the search's other trials; its report "
                     "(search.md, written beside this one by default) says how the choice was made."),)
