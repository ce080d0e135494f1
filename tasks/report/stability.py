"""The stability section's tables and remarks, from the findings of
:func:`topicbench.tasks.results.stability.collect_stability` (pure)."""

from __future__ import annotations

import math

import pandas as pd

from topicbench.core.metrics.stability import NOT_APPLICABLE
from topicbench.core.metrics.stats import ALPHA
from topicbench.tasks.report.tables import Estimate, ReportTable, pair_order
from topicbench.tasks.results.stability import StabilityFindings

#: (column title, measure, which summary) of the report's table, in order.
STABILITY_COLUMNS = (
    ("matched similarity (1 − JS distance)", "jensen_shannon", "mean"),
    ("topics reappearing", "jensen_shannon", "share"),
    ("chance similarity", "jensen_shannon", "chance"),
    ("matched top-10 RBO", "top_words", "mean"),
    ("chance RBO", "top_words", "chance"),
)
#: The column that says, per model, whether each similarity is significantly above its chance level.
VERDICT_COLUMN = "vs chance"
#: Short names of the measures in the verdicts.
MEASURE_NAMES = {"jensen_shannon": "JS", "top_words": "RBO"}


def stability_tables(findings: StabilityFindings, corpora=(), models=()) -> list[ReportTable]:
    """One table per corpus (in the order of ``corpora``, others after), models as rows (in the
    order of ``models``): seeds, each column of :data:`STABILITY_COLUMNS` (the similarities as
    mean ± sd over the pairs of seeds, the chance levels as the permutation null's mean ± sd), and
    :data:`VERDICT_COLUMN`, the permutation test's verdict with its p; the rule under each table.
    A deterministic model's row says :data:`~topicbench.core.metrics.stability.NOT_APPLICABLE`."""
    table = findings.table
    if table.empty:
        return []
    ordered = sorted(zip(table.corpus, table.model, range(len(table))),
                     key=lambda item: pair_order(item[:2], corpora, models))
    tables = {}
    for corpus, model, position in ordered:
        row = table.iloc[position]
        cells = {"model": model, "seeds": int(row["seeds"])}
        deterministic = is_deterministic_row(row)
        for title, measure, summary in STABILITY_COLUMNS:
            cells[title] = None if deterministic else _cell(row, measure, summary)
        cells[VERDICT_COLUMN] = NOT_APPLICABLE if deterministic else chance_verdict(row)
        tables.setdefault(corpus, []).append(cells)
    return [ReportTable(pd.DataFrame(rows), title=corpus, note=chance_rule(table)) for corpus, rows in tables.items()]


def is_deterministic_row(row) -> bool:
    """Whether a findings row is a model whose seeds all gave the same fit (stability not applicable)."""
    value = row.get("deterministic", 0.0) if hasattr(row, "get") else 0.0
    return bool(value) and not (isinstance(value, float) and math.isnan(value))


def chance_verdict(row) -> str:
    """"above chance" or "near chance" per measure, with the permutation p (one-sided, at α):
    near chance where a similarity is not significantly above its chance level."""
    parts = []
    for measure, name in MEASURE_NAMES.items():
        p = row.get(f"{measure}_chance_p") if hasattr(row, "get") else None
        if p is None or (isinstance(p, float) and math.isnan(p)):
            if f"{measure}_mean" in row:
                parts.append(f"{name}: not tested (scored before the permutation test)")
            continue
        parts.append(f"{name}: {'above' if p <= ALPHA else 'near'} chance (p = {p:.3g})")
    return "; ".join(parts) if parts else "not tested"


def chance_rule(table: pd.DataFrame) -> str:
    """The rule under a stability table: how the chance level and the verdict are found."""
    permutations = table["permutations"].dropna() if "permutations" in table else pd.Series(dtype=float)
    draws = f"{int(permutations.max())} " if len(permutations) else ""
    sampled = table["sampled_topics"].dropna() if "sampled_topics" in table else pd.Series(dtype=float)
    sampling = (f" Where a run has many topics, a draw shuffles a sample of them ({int(sampled.min())}–"
                f"{int(sampled.max())} here), so that the draws cost about what the seeds' own comparison does: an "
                "upper estimate, so the test errs toward \"near chance\"; [± its sampling error] follows."
                if len(sampled) else "")
    sampling += _word_sampling(table)
    return (f"Chance: mean ± sd of {draws}permutation draws, each a pair of seeds (taken in turn) with the words of "
            "one run's topics shuffled. vs chance: one-sided permutation test of the matched similarity over every "
            f"pair of seeds against those draws; \"above chance\" where p ≤ α = {ALPHA:g}, else \"near chance\", "
            f"where \"topics reappearing\" says nothing.{sampling} {NOT_APPLICABLE.capitalize()}: every seed gave "
            "the same fit, so there is nothing to compare.")


def _word_sampling(table: pd.DataFrame) -> str:
    """The sentence on models whose Jensen-Shannon was read on a sample of their words, each with
    its sampling error (:mod:`topicbench.core.metrics.stability_sampled`); empty where none was."""
    if "sampled_words" not in table or table["sampled_words"].isna().all():
        return ""
    sampled = table[table["sampled_words"].notna()]
    errors = "; ".join(f"{r.model} on {r.corpus}: {int(r.sampled_words):,} words, ± {r.jensen_shannon_error:.3f}"
                       for r in sampled.itertuples())
    return (" Dense topics over many words have their Jensen-Shannon similarity, and its chance level, read on a "
            "sample of the words (those of most weight in any topic, and a random draw of the rest, weighted), so that "
            f"it stays within seconds; the similarity from every word lies within ± its sampling error ({errors}).")


def _cell(row: pd.Series, measure: str, summary: str):
    if f"{measure}_mean" not in row:
        return None
    if summary == "chance":
        return _chance_cell(row, measure)
    prefix = f"{measure}_share" if summary == "share" else measure
    return Estimate(float(row[f"{prefix}_mean"]), float(row[f"{prefix}_sd"]), int(row["pairs"]))


def _chance_cell(row: pd.Series, measure: str):
    """The chance level as mean ± sd of its permutation draws (and [± sampling error] where its
    topics were sampled); a bare mean for findings scored before the permutation test."""
    chance = float(row[f"{measure}_chance"])
    sd = row.get(f"{measure}_chance_sd")
    if sd is None or math.isnan(float(sd)):
        return chance
    error = float(row.get(f"{measure}_chance_error", 0.0) or 0.0)
    text = f"{chance:.3f} ± {float(sd):.3f}"
    return f"{text} [± {error:.3f}]" if error > 0 else text


def stability_remarks(findings: StabilityFindings) -> tuple:
    """The sentences under the tables: models with one seed, runs that could not be read, and
    models whose seeds could not be compared (each one sentence, or nothing)."""
    remarks = []
    if findings.one_seed:
        remarks.append("One seed, so not measurable: " + ", ".join(f"{m} on {c}" for c, m in findings.one_seed) + ".")
    if findings.unreadable:
        remarks.append("Runs whose output could not be read from the tracking store, left out: " + "; ".join(
            f"{r.model} on {r.corpus} seed {r.seed} (run {r.run_id}: {r.reason})" for r in findings.unreadable) + ".")
    if findings.not_compared:
        remarks.append("Not compared: " + "; ".join(f"{m} on {c} ({why})" for c, m, why in findings.not_compared) + ".")
    return tuple(remarks)
