"""How a report's marks read: the interval behind ± and the deterministic mark, said once under
each table (:func:`estimate_notes`), and the rule behind bold cells, said once per section.

A table marks its best cells by the stated test of
:func:`~topicbench.core.metrics.stats.best_against_rest` (a :class:`~.tables.ReportTable` with
``tested``); its own note says only which direction is better. The test itself,
:data:`~topicbench.core.metrics.stats.BEST_RULE`, is one paragraph under the last such table of a
section, so a section of ten small tables states it once, not ten times.
"""

from __future__ import annotations

from dataclasses import replace

from topicbench.core.metrics.stats import BEST_RULE, DETERMINISTIC

from .parts import Section
from .tables import Estimate, ReportTable


def with_best_rule(section: Section) -> Section:
    """``section`` with :data:`~topicbench.core.metrics.stats.BEST_RULE` after its last tested
    table; unchanged where no table of it is tested or it states the rule already."""
    tested = [i for i, block in enumerate(section.blocks) if isinstance(block, ReportTable) and block.tested
              and not block.empty]
    if not tested or BEST_RULE in section.blocks:
        return section
    at = tested[-1] + 1
    return replace(section, blocks=(*section.blocks[:at], BEST_RULE, *section.blocks[at:]))


#: Said once under a table where some count shows no ± (the same value on every seed).
NO_SPREAD_NOTE = "No ±: the same value on every seed."
#: What a score whose seeds all gave the same fit shows where its ± would be (the short form).
DETERMINISTIC_MARK = "det."
#: Said once under a table with a deterministic score.
DETERMINISTIC_NOTE = (f"{DETERMINISTIC_MARK}: {DETERMINISTIC}: every seed gave the same fit, so there is no seed "
                      "variance and no interval.")
#: What a score shows that is the same on every seed of a model whose fits differ (a coincidence
#: of a small discrete score, e.g. topic diversity on a tiny vocabulary): not a deterministic model.
SAME_VALUE_MARK = "same"
#: Said once under a table with such a score.
SAME_VALUE_NOTE = (f"{SAME_VALUE_MARK}: the same value on every seed although the model's fits differ: no spread to "
                   "estimate, so no interval.")
#: Said once under a table whose estimates show a ±, with the seeds it rests on (``n = 3``): a
#: Student-t interval, not a standard deviation nor the seeds' range (which covers the mean about
#: 75% of the time at 3 seeds), so that it reads as covering the mean 95% of the time.
SPREAD_NOTE = ("±: the half-width of the 95% Student-t interval of the mean over {seeds} (t with n − 1 degrees of "
               "freedom: ±2.48 sd at n = 3; stability: over pairs of seeds); no interval under 3 seeds.")


def estimate_notes(table: ReportTable) -> list[str]:
    """How a table's estimates read, each said once: the interval behind ± with the seeds it rests
    on (:data:`SPREAD_NOTE`), and :data:`DETERMINISTIC_NOTE` where a model's score (a ``tested``
    table's) has no seed variance (any other value the same on every seed: :data:`NO_SPREAD_NOTE`)."""
    values = [value for column in table.cells for value in table.cells[column] if isinstance(value, Estimate)]
    notes, seeds = [], sorted({value.n for value in values if value.interval.has_interval})
    if table.spread and seeds:
        notes.append(SPREAD_NOTE.format(seeds=f"n = {seeds[0]} seeds" if len(seeds) == 1 else
                                        f"n = {seeds[0]}–{seeds[-1]} seeds (each cell its own n)"))
    same = [value for value in values if value.interval.deterministic]
    if any(not value.fits_differ for value in same):  # a model's scores, or a share, count, ...
        notes.append(DETERMINISTIC_NOTE if table.tested and table.unit != "count" else NO_SPREAD_NOTE if table.spread
                     else "")
    if table.tested and table.unit != "count" and any(value.fits_differ for value in same):
        notes.append(SAME_VALUE_NOTE)
    return [note for note in notes if note]
