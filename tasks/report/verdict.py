"""The verdict in words that opens the summary: per corpus, which model leads on which criteria,
how strongly, at what K, where the criteria disagree, and what to try next.

Derived from the summary's own table, never beside it: a model "leads" on a criterion where that
table ranks it 1 in the criterion's column, and how strongly it leads is
:func:`~topicbench.core.metrics.stats.best_against_rest` on the same per-seed values the column's
means come from (Welch's t-test over seeds, Holm-corrected over the comparisons with the others,
α = :data:`~topicbench.core.metrics.stats.ALPHA`). So no sentence can name a leader the table does
not show at rank 1, nor call a lead clear that the test does not find.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from topicbench.core.metrics.stats import ALPHA, best_against_rest

from .summary import model_runs, topics_used
from .tables import ReportTable, finished_runs, higher_is_better
from .text import Code, Markdown, Text

#: Fewer seeds than this and the verdict advises more: over 3 seeds Welch's test finds only large
#: differences (its t has 2 to 4 degrees of freedom).
SEEDS_ENOUGH = 5
#: The command that searches K, named in the advice.
SEARCH_COMMAND = "topicbench search search.yaml"
#: The score keys of label alignment (the ``clustering`` metric's), which the summary shows on a
#: labelled corpus; purity is left out on purpose: it rewards many topics.
LABEL_KEYS = (("nmi", "NMI (labels)"), ("ari", "ARI (labels)"))


@dataclass(frozen=True)
class Lead:
    """Who leads one criterion (a column of the summary) on one corpus.

    Attributes
    ----------
    criterion : str
        The column's title (``NPMI@10``).
    models : tuple of str
        The models the table ranks 1 there (two or more: a tie of their means).
    clear : bool
        The leader beats every other model at α after Holm's correction.
    p : float or None
        The largest Holm-adjusted p of the leader against another model (the weakest of its
        comparisons); None where some comparison could not be tested.
    untested : tuple of str
        The models it could not be tested against (fewer than 2 seeds, or no seed variance).
    seeds : int
        The fewest seeds behind any ranked value of the column.
    """

    criterion: str
    models: tuple
    clear: bool
    p: float | None
    untested: tuple
    seeds: int


def seed_values(runs: pd.DataFrame, corpus: str, model: str, key: str):
    """The finite per-seed values of score ``key`` of ``model`` on ``corpus`` (what a cell's mean is of)."""
    done = finished_runs(model_runs(runs, corpus, model))
    return None if key not in done else pd.to_numeric(done[key], errors="coerce").dropna().to_numpy()


def cell_values(table: ReportTable, row: int, column: str):
    """The per-seed values the cell's mean is of (an in-reference coherence's, where that is what
    the cell ranks), so that the verdict tests exactly what the table shows; None if not kept."""
    cell = table.cells[column].iloc[row] if column in table.cells else None
    values = getattr(cell, "values", ())
    return np.asarray(values, dtype=float) if values else None


def column_lead(table: ReportTable, runs: pd.DataFrame, corpus: str, key: str, title: str) -> Lead | None:
    """The :class:`Lead` of the summary column ``"title · corpus"``; None where the table has no
    ranked value there."""
    column = f"{title} · {corpus}"
    ranked = {row: rank for (row, c), rank in table.ranks.items() if c == column}
    top = sorted(row for row, rank in ranked.items() if rank == 1)
    if not top:
        return None
    models = list(table.cells.model)
    samples = [cell_values(table, row, column) if row in ranked else None for row in range(len(models))]
    samples = [values if values is not None else seed_values(runs, corpus, model, key) if row in ranked else None
               for row, (values, model) in enumerate(zip(samples, models))]
    test = best_against_rest(samples, bool(higher_is_better(key)))
    leaders = tuple(models[row] for row in top)
    seeds = min(len(samples[row]) for row in ranked)
    if len(top) > 1 or test.best not in top:  # a tie: nobody leads it, clearly or not
        return Lead(title, leaders, False, None, (), seeds)
    untested = tuple(models[row] for row, p in test.adjusted.items() if p is None)
    found = [p for p in test.adjusted.values() if p is not None]
    p = None if untested or not found else max(found)
    return Lead(title, leaders, test.clear, p, untested, seeds)


def format_p(p: float) -> str:
    """A p-value as a sentence gives it: ``p = 0.21``, ``p = 0.003``, ``p < 0.001``."""
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}" if p < 0.01 else f"p = {p:.2f}"


def lead_phrase(lead: Lead) -> str:
    """How strongly ``lead``'s model leads its criterion, in words: "NPMI@10 clearly (…: largest
    p = 0.003, below α = 0.05)", "TD@10 but not significantly (p = 0.21, Holm-corrected)"."""
    if lead.clear:
        return (f"{lead.criterion} clearly (Welch's t over seeds against each other model, Holm-corrected: "
                f"largest {format_p(lead.p)}, below α = {ALPHA:g})")
    if lead.p is not None:
        return f"{lead.criterion} but not significantly ({format_p(lead.p)}, Holm-corrected)"
    if not lead.untested:
        return f"{lead.criterion}, not testable (fewer than 2 seeds or the same value on every seed)"
    return (f"{lead.criterion}, untested against {', '.join(lead.untested)} (fewer than 2 seeds or the same value "
            "on every seed)")


def corpus_verdict(table: ReportTable, runs: pd.DataFrame, corpus: str, keys, *, seeds_asked: int) -> Markdown | None:
    """The verdict paragraph of ``corpus``: each leader with its criteria and K, where the criteria
    disagree, and what to try next; None where no column of ``table`` is ranked on it."""
    leads = [lead for key, title in keys if (lead := column_lead(table, runs, corpus, key, title)) is not None]
    if not leads:
        return None
    ks = {model: k for model in table.cells.model if (k := topics_used(runs, corpus, model)) is not None}
    parts: list = ["**On ", Text(corpus), ":** "]
    by_model: dict = {}
    for lead in leads:
        if len(lead.models) == 1:
            by_model.setdefault(lead.models[0], []).append(lead)
    for model, found in by_model.items():
        at = f" (K = {ks[model]:g}, mean over its seeds)" if model in ks else ""
        parts += [Text(model), f"{at} leads on " + "; and on ".join(lead_phrase(lead) for lead in found) + ". "]
    for lead in leads:
        if len(lead.models) > 1:
            parts += [f"On {lead.criterion} ", Text(" and ".join(lead.models)), " tie (the same mean). "]
    if len(by_model) > 1:
        parts.append("The criteria disagree: no model leads on all of them, so choose by the criterion your use "
                     "needs (coherence: readable topics; diversity: topics that differ; labels: topics that follow "
                     "the labels). ")
    elif len(by_model) == 1 and len(leads) > 1 and all(len(lead.models) == 1 for lead in leads):
        parts.append("It leads on every criterion of the table. ")
    parts += next_steps(leads, ks, seeds_asked)
    return Markdown(*parts)


def next_steps(leads, ks: dict, seeds_asked: int) -> list:
    """What to try next, as parts of a :class:`~topicbench.tasks.report.text.Markdown` paragraph:
    a search for K where the models' K differ or a lead is not clear, more seeds where the lead
    rests on fewer than :data:`SEEDS_ENOUGH`."""
    reasons = []
    if len(set(ks.values())) > 1:
        reasons.append(f"the models' K differ ({min(ks.values()):g} to {max(ks.values()):g})")
    if any(not lead.clear for lead in leads):
        reasons.append("a lead is not clear")
    steps: list = []
    if reasons:
        steps += ["Next: search K with ", Code(SEARCH_COMMAND), f" ({' and '.join(reasons)}: each model at its own "
                  "best K compares them fairly)"]
    seeds = min(min(lead.seeds for lead in leads), seeds_asked or SEEDS_ENOUGH)
    if seeds < SEEDS_ENOUGH:
        steps.append(f"{'; and' if steps else 'Next:'} run {SEEDS_ENOUGH} or more seeds (now {seeds}: Welch's test "
                     f"over {seeds} seeds finds only large differences)")
    return [*steps, "."] if steps else []


def verdicts(table: ReportTable, runs: pd.DataFrame, corpora, keys, *, seeds_asked: int) -> tuple:
    """One verdict paragraph per corpus of ``corpora`` (in order) that the summary ``table`` ranks."""
    found = (corpus_verdict(table, runs, corpus, keys, seeds_asked=seeds_asked) for corpus in corpora)
    return tuple(paragraph for paragraph in found if paragraph is not None)


#: Scores that a model's number of topics moves by itself, and which way (docs/metrics.md): a
#: table of one carries a caution with every model's K.
K_SENSITIVE = {
    "purity": "Caution: purity rewards many topics (a topic per document scores 1), so a model with more topics "
                  "scores higher without following the labels better",
    "inverse_purity": "Caution: inverse purity rewards few topics (one topic holding every document scores 1), so a "
                      "model with fewer, larger topics scores higher without following the labels better",
}


def purity_caution(key: str, data, note):
    """``note`` (a table's own note: text or :class:`~topicbench.tasks.report.text.Markdown`)
    opened by the caution of a K-sensitive score (:data:`K_SENSITIVE`), with each model's K per
    corpus to read it by; ``note`` unchanged for any other score."""
    caution = K_SENSITIVE.get(key)
    if caution is None:
        return note
    ks = "; ".join(f"{corpus}: " + ", ".join(f"{model} {k:g}" for model in data.models
                                             if (k := topics_used(data.runs, corpus, model)) is not None)
                   for corpus in data.corpora)
    tail = "); NMI and ARI, in the summary, do not reward K so. "
    if isinstance(note, Markdown):  # model names are user text: kept as text in a Markdown note
        return Markdown(f"{caution}. Read it with each model's K (", Text(ks), tail, *note.parts)
    return f"{caution}. Read it with each model's K ({ks}{tail}{note or ''}".strip()
