"""The stability section's tables and remarks, from the findings of
:func:`topicbench.tasks.results.stability.collect_stability` (pure)."""

from __future__ import annotations

import pandas as pd

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


def stability_tables(findings: StabilityFindings, corpora=(), models=()) -> list[ReportTable]:
    """One table per corpus (in the order of ``corpora``, others after), models as rows (in the
    order of ``models``): seeds, and each column of :data:`STABILITY_COLUMNS` as mean ± sd over
    the pairs of seeds (the chance levels as a mean over the shuffles)."""
    table = findings.table
    if table.empty:
        return []
    ordered = sorted(zip(table.corpus, table.model, range(len(table))),
                     key=lambda item: pair_order(item[:2], corpora, models))
    tables = {}
    for corpus, model, position in ordered:
        row = table.iloc[position]
        cells = {"model": model, "seeds": int(row["seeds"])}
        for title, measure, summary in STABILITY_COLUMNS:
            cells[title] = _cell(row, measure, summary)
        tables.setdefault(corpus, []).append(cells)
    return [ReportTable(pd.DataFrame(rows), title=corpus) for corpus, rows in tables.items()]


def _cell(row: pd.Series, measure: str, summary: str):
    if f"{measure}_mean" not in row:
        return None
    if summary == "chance":
        return float(row[f"{measure}_chance"])
    prefix = f"{measure}_share" if summary == "share" else measure
    return Estimate(float(row[f"{prefix}_mean"]), float(row[f"{prefix}_sd"]), int(row["pairs"]))


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
