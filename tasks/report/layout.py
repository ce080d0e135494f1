"""How a section's blocks are laid out: titled tables next to each other are read side by side
(one metric each, the same models and corpora), so they share a row, each with its own footnotes
directly under it, and what they share (a rule, how their estimates read) is said once under the
row, not once per table. Both renderers (:mod:`~topicbench.tasks.report.render`) follow it.
"""

from __future__ import annotations

from .emphasis import estimate_notes
from .tables import ReportTable


def grouped(blocks) -> list:
    """The blocks, each run of titled tables (read side by side: one metric each) as one list."""
    found = []
    for block in blocks:
        if isinstance(block, ReportTable) and block.title:
            if found and isinstance(found[-1], list):
                found[-1].append(block)
                continue
            block = [block]
        found.append(block)
    return found


def group_notes(tables) -> tuple[list, list]:
    """(each table's own notes, the notes said once under the group): a table's own note (its
    footnotes) stays directly under it, unless every table of the group has the same one (a rule);
    how their estimates read (:func:`~.emphasis.estimate_notes`) is said once."""
    own = [[table.note] if table.note else [] for table in tables]
    common = [note for note in own[0] if len(tables) > 1 and all(note in notes for notes in own)]
    shared = list(dict.fromkeys([*common, *(note for table in tables for note in estimate_notes(table))]))
    return [[note for note in notes if note not in common] for notes in own], shared
