"""Values a report shows but never ranks: a model's score outside its metric's valid range, or
worse than the uniform model over the vocabulary (:mod:`topicbench.core.metrics.validity`).

:func:`range_checked` is the one call every table of scores makes (through
:func:`~topicbench.tasks.report.tables.metric_estimates`); a value it marks keeps its number, says
its reason in its cell, and takes no part in the bold cell, the ranks or a verdict.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from topicbench.core.metrics.validity import VOCABULARY_SIZE, unranked_reason
from topicbench.tasks.results.runs import finished_runs


def range_checked(runs: pd.DataFrame, key: str, estimates: dict) -> dict:
    """``estimates`` ((corpus, model) -> :class:`~topicbench.tasks.report.tables.Estimate` of
    ``key``) with ``unranked`` set to its reason on each whose seeds' values cannot be ranked:
    outside the metric's valid range, or worse than the uniform model over the vocabulary each
    run logged (:func:`~topicbench.core.metrics.validity.unranked_reason`). The value stays."""
    done = finished_runs(runs)
    # each pair's rows by position, found once (a mask per pair costs a scan of the table each)
    rows = done.groupby(["corpus", "model"], sort=False).indices if estimates else {}
    checked = {}
    for (corpus, model), value in estimates.items():
        mine = done.iloc[rows.get((corpus, model), [])]
        values = mine[key].tolist() if key in mine else list(value.values)
        sizes = mine[VOCABULARY_SIZE].tolist() if VOCABULARY_SIZE in mine and key in mine else ()
        reason = unranked_reason(key, values, sizes)
        checked[(corpus, model)] = replace(value, unranked=reason) if reason else value
    return checked


def unranked_by(key: str, table: pd.DataFrame, by: str = "entry") -> dict:
    """Like :func:`range_checked` for a long score table (a bundle's ``scores`` joined to its
    runs: one row a run and score, columns ``run_id``, ``score``, ``value`` and ``by``): each
    ``by`` (a leaderboard's model) whose values of ``key`` cannot be ranked -> the reason, from
    the :data:`~topicbench.core.metrics.validity.VOCABULARY_SIZE` each run logged."""
    sizes = table[table.score == VOCABULARY_SIZE].drop_duplicates("run_id").set_index("run_id").value
    scored = table[table.score == key].dropna(subset=["value"])
    found = {}
    for name, group in scored.groupby(by, sort=True):
        reason = unranked_reason(key, group.value.tolist(), [sizes.get(run) for run in group.run_id])
        if reason:
            found[name] = reason
    return found
