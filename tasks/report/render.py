"""Rendering a built report as Markdown and as one self-contained HTML page.

The only place numbers become text. Every number is shown to :data:`DIGITS` significant digits
(never rounding away an integer part: 2585 stays 2585); an :class:`Estimate` is ``mean ± h``, h
the half-width of its 95% Student-t interval over its n seeds (said once under its table, with
n), its mean alone under 3 seeds, and ``(det.)`` where every seed gave the same fit, with
``(N=…)`` when it was scored at a smaller top-N (grey in HTML) and ``(n=…)`` when it rests on
fewer seeds than asked for; a table's ``unit`` shows seconds as µs, ms, s, min or h and counts as
whole numbers; a :class:`Share` is ``k/n``, a missing value a dash; a table's ``formats`` override
a column. The best cell of a column is bold in both outputs; a ranked table (the summary) shows
each cell's rank as a circled number in both, and in HTML also as a background that lightens
from blue (rank 1) to white (last): one hue and a falling lightness, read alike by colour-blind
readers and in greyscale print (:func:`rank_colour`).
Every section heading has an anchor, and a list of links to them follows the opening sections.
Text is written by :mod:`topicbench.tasks.report.text`: what a user named is shown as given, in
both outputs, never read as Markdown or HTML.
"""

from __future__ import annotations

import base64
import html
import math
import re
from dataclasses import replace
from pathlib import Path

import pandas as pd

from .interactive import plotly_script
from .parts import Plot, Report, Section
from .statistics import Flip
from .summary import footnote_mark
from .emphasis import DETERMINISTIC_MARK, NO_SPREAD_NOTE, SAME_VALUE_MARK, SPREAD_NOTE, estimate_notes  # noqa: F401 (said here)
from .layout import group_notes, grouped
from .tables import Estimate, Gap, PartialValue, ReportTable, Share, TopicWords
from .text import display_text, html_attribute, markdown_paragraph, markdown_text, to_html, to_markdown, visible_controls

MISSING = "–"
#: Significant digits of every number shown (an sd: two).
DIGITS = 3
#: Durations: (largest value in seconds shown in this unit, unit, seconds per unit); above 120 s
#: minutes read better than seconds, above 2 h hours.
DURATION_UNITS = ((1e-3, "µs", 1e-6), (1.0, "ms", 1e-3), (120.0, "s", 1.0), (7200.0, "min", 60.0), (math.inf, "h", 3600.0))
STYLE = """body{font-family:system-ui,sans-serif;max-width:1360px;margin:2em auto;padding:0 1em;color:#222;line-height:1.4}
h2{margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:0.2em}
nav.contents ol{columns:2;font-size:0.9em;margin:0.3em 0 1em} nav.contents a{text-decoration:none}
div.table{max-width:100%;overflow-x:auto}
table.results{border-collapse:collapse;margin:0.3em 0 0.4em;font-size:0.88em}
table.results caption{text-align:left;font-weight:600;padding:0.2em 0}
table.results th,table.results td{border-bottom:1px solid #e3e3e3;padding:0.22em 0.55em;text-align:left;vertical-align:top}
table.results th{background:#f3f3f3;position:sticky;top:0}
table.results th.group{text-align:center;border-left:2px solid #fff}
table.results td.number{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.results td.best{background:#eef6ee}
table.results td.smaller-n{color:#999}
table.summary{font-size:0.82em} table.summary th{font-weight:600;font-size:0.92em;position:static}
table.summary th,table.summary td{padding:0.22em 0.4em} table.summary td.number{white-space:normal;min-width:4.2em}
span.rank{white-space:nowrap;font-size:0.92em}
table.topics{table-layout:fixed;width:100%} table.topics td{font-size:0.95em} table.topics th:first-child{width:9em}
p.table-note{font-size:0.8em;color:#666;margin:0 0 1.4em}
div.table-row{display:flex;flex-wrap:wrap;gap:0 2em;align-items:flex-start;max-width:100%}
div.table-row>div.table{flex:0 1 auto} div.table-row p.table-note{contain:inline-size}
img{max-width:100%;margin:0.5em 0 1.5em;display:block} code{background:#f3f3f3}
figure.plot{margin:0.5em 0 1.5em;max-width:100%}"""


# ----------------------------------------------------------------------------------------------
# Numbers
# ----------------------------------------------------------------------------------------------


def _decimals(value: float, digits: int) -> int:
    """Decimals that show ``value`` to ``digits`` significant digits, never fewer than none."""
    return max(digits - 1 - math.floor(math.log10(abs(value))), 0) if value and math.isfinite(value) else 0


def _significant(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant digits, in plain notation between 1e-4 and 1e6 (so
    2585 stays 2585 and 1953 at two digits is 2000, not 2e+03), in e-notation outside."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    if not 1e-4 <= abs(value) < 1e6:
        return f"{value:.{digits - 1}e}"
    decimals = digits - 1 - math.floor(math.log10(abs(value)))
    return f"{round(value, decimals):.{max(decimals, 0)}f}"


def format_number(value: float, digits: int = DIGITS) -> str:
    """``value`` to ``digits`` significant digits, its integer part whole (2585, 0.272, -1.65)."""
    if value == 0 or not math.isfinite(value) or not 1e-4 <= abs(value) < 1e6:
        return _significant(value, digits)
    return f"{value:.{_decimals(value, digits)}f}"


def _spread(sd: float, mean_decimals: int) -> str:
    """An sd to two significant digits, or ``<0.0001`` where it is below a tenth of the mean's
    last shown digit (which no reader of the mean can see)."""
    floor = 10.0 ** -(mean_decimals + 1)
    if sd < floor:
        return f"<{floor:.{mean_decimals + 1}f}"
    return _significant(sd, 2) if sd >= 1e-4 else f"{sd:.{_decimals(sd, 2)}f}"  # plain, like its mean


def same_on_every_seed(value) -> bool:
    """Whether an estimate over several seeds has an sd of 0 (up to rounding noise of its mean)."""
    return isinstance(value, Estimate) and value.interval.deterministic


def duration_unit(seconds: float) -> tuple:
    """(unit, seconds per unit) that shows ``seconds`` best: 6.5e-3 -> ms, 140 -> min."""
    return next((unit, size) for limit, unit, size in DURATION_UNITS if abs(seconds) < limit)


def format_estimate(value: Estimate, unit: str = "", spread: bool = True, scores: bool = True) -> str:
    """``mean ± h`` (``spread``; h the half-width of the 95% Student-t interval over the seeds,
    none under 3 seeds), the mean in :data:`DIGITS` significant digits and h in two; a score whose
    seeds all gave the same value marked :data:`DETERMINISTIC_MARK` (not ``scores`` or a count:
    its value alone, e.g. a share of topics answered the same on every seed);
    in the table's ``unit`` (see :func:`format_quantity`)."""
    scale, suffix = 1.0, ""
    if unit == "seconds" and math.isfinite(value.mean):
        suffix, scale = duration_unit(value.mean)
        suffix = f" {suffix}"
    mean = value.mean / scale
    text = str(round(mean)) if unit == "count" and float(mean).is_integer() else format_number(mean)
    interval = value.interval
    if spread and interval.has_interval:
        text += " ± " + _spread((interval.high - interval.mean) / scale, len(text.partition(".")[2]))
    text += suffix
    if interval.deterministic and scores and unit != "count":
        text += f" ({SAME_VALUE_MARK if value.fits_differ else DETERMINISTIC_MARK})"
    if value.scored_at is not None:
        text += f" (N={value.scored_at})"
    if value.expected and value.n < value.expected:
        text += f" (n={value.n})"
    text += footnote_mark(value.mark) if value.footnote and value.mark else ""  # said under its table
    return text + (f" ({value.unranked})" if value.unranked else "")  # shown, never ranked: why


def format_quantity(value: float, unit: str = "") -> str:
    """A plain number in a table's unit: seconds as µs/ms/s/min/h, a count whole where it is."""
    if unit == "seconds":
        name, size = duration_unit(value)
        return f"{format_number(value / size)} {name}"
    if unit == "count" and float(value).is_integer():
        return str(int(value))
    return format_number(value)


def format_topic(topic: TopicWords) -> str:
    """A topic's words, then its share of the documents and its own scores where known:
    ``tax cut vote (4.2% · NPMI 0.12)``."""
    facts = [f"{_significant(topic.share * 100, 2)}%"] if topic.share is not None else []
    facts += [f"{label} {format_number(value, 2)}" for label, value in topic.scores]
    return " ".join(topic.words) + (f" ({' · '.join(facts)})" if facts else "")


def format_partial(partial: PartialValue, spread: bool = True) -> str:
    """What a gap shows beside its dash, labelled: `` (in-reference words: 0.052, 3 of 4 topics)``."""
    of = f" of {format_quantity(float(partial.of), 'count')}" if partial.of is not None else ""
    return (f" (in-reference words: {format_estimate(partial.value, spread=spread)}, "
            f"{format_quantity(float(partial.topics), 'count')}{of} topics)")


def format_flip(flip: Flip) -> str:
    """``a (1→7) vs b (7→1)``: each model's rank under the base metric → under the other."""
    (a_base, b_base), (a_other, b_other) = flip.base_ranks, flip.other_ranks
    return f"{flip.first} ({a_base}→{a_other}) vs {flip.second} ({b_base}→{b_other})"


def format_value(value, style=None, *, separator: str = "; ", unit: str = "", spread: bool = True,
                 scores: bool = True) -> str:
    """One cell as text: ``style`` (a format string or callable) first, then by the value's type."""
    if callable(style):
        return style(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, Gap):  # its reason is a footnote of the table's note
        return MISSING + footnote_mark(value.mark) + (format_partial(value.partial, spread) if value.partial else "")
    if style is not None:
        return style.format(value)
    if isinstance(value, Estimate):
        return format_estimate(value, unit, spread, scores)
    if isinstance(value, Share):
        return f"{value.count}/{value.total}"
    if isinstance(value, Flip):
        return format_flip(value)
    if isinstance(value, TopicWords):
        return format_topic(value)
    if isinstance(value, tuple):
        return separator.join(format_value(item, separator=separator) for item in value) or "none"
    if isinstance(value, float):
        return format_quantity(value, unit)
    return str(value)


def format_table(table: ReportTable, *, separator: str = "; ") -> pd.DataFrame:
    """The table's cells as text, one column format or type rule each (no marking)."""
    cells = table.cells
    return pd.DataFrame(
        {column: [format_value(v, table.formats.get(column), separator=separator, unit=table.unit, spread=table.spread,
                               scores=table.tested)  # a model's scores, tested for the best: said deterministic
                  for v in cells[column]]
         for column in cells.columns},
        index=cells.index, columns=cells.columns,
    )


def table_notes(table: ReportTable) -> list[str]:
    """The lines under a table: its own note, and how its estimates read (:func:`~.emphasis.estimate_notes`)."""
    return ([table.note] if table.note else []) + estimate_notes(table)


def _is_number(value) -> bool:
    """A cell to right-align (a NaN is a missing value of any column, not a number)."""
    if isinstance(value, float) and math.isnan(value):
        return False
    return isinstance(value, (int, float, Estimate, Share)) and not isinstance(value, bool)


def circled(rank: int) -> str:
    """A rank as one compact character: ① … ⑳, then (21), (22), …"""
    return chr(0x2460 + rank - 1) if 1 <= rank <= 20 else f"({rank})"


def anchors(sections) -> list[str]:
    """Each section's anchor, as GitHub makes it from a heading (lower case, punctuation dropped,
    spaces as hyphens, ``-1`` … on repeats), so the Markdown's links work where it is shown."""
    found, seen = [], {}
    for section in sections:
        slug = re.sub(r"[^\w\- ]", "", display_text(section.title).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.append(slug if count == 0 else f"{slug}-{count}")
    return found


def _ordered(report: Report) -> tuple[list, list]:
    """(opening sections, the others), each a list of (section, anchor)."""
    pairs = list(zip(report.sections, anchors(report.sections)))
    return [p for p in pairs if p[0].opening], [p for p in pairs if not p[0].opening]


# ----------------------------------------------------------------------------------------------
# Markdown
# ----------------------------------------------------------------------------------------------


def markdown_table(table: ReportTable, with_notes: bool = True, notes: list | None = None) -> str:
    """The table as Markdown, under it ``notes`` (default: all its :func:`table_notes`)."""
    if table.empty:
        return "(no data)\n"
    text = format_table(table)
    lines = [f"**{markdown_text(table.title)}**\n"] if table.title else []
    lines.append("| " + " | ".join(map(markdown_text, text.columns)) + " |")
    lines.append("|" + "|".join("---" for _ in text.columns) + "|")
    for row, values in enumerate(text.itertuples(index=False)):
        cells = [_markdown_cell(value, (row, column) in table.best, table.ranks.get((row, column)))
                 for column, value in zip(text.columns, values)]
        lines.append("| " + " | ".join(cells) + " |")
    notes = (table_notes(table) if notes is None else notes) if with_notes else []
    if notes:
        lines.append("\n" + " ".join(map(to_markdown, notes)))
    return "\n".join(lines) + "\n"


def _markdown_cell(text: str, best: bool, rank: int | None = None) -> str:
    text = markdown_text(text)
    text = f"**{text}**" if best else text
    return f"{text} {circled(rank)}" if rank is not None else text


def _markdown_blocks(section: Section, images: dict) -> list[str]:
    """The blocks of a section; titled tables read side by side (one metric each) keep their own
    footnotes under each, and the rules they share are said once, under the last of them."""
    parts = []
    for block in grouped(section.blocks):
        if isinstance(block, list):
            own, shared = group_notes(block)
            parts += [markdown_table(table, notes=notes) for table, notes in zip(block, own)]
            parts += [" ".join(map(to_markdown, shared)) + "\n"] if shared else []
        elif isinstance(block, ReportTable):
            parts.append(markdown_table(block))
        elif isinstance(block, Plot):
            if block.file_name in images:
                parts.append(f"![{markdown_text(block.alt)}]({block.file_name})\n")
        else:
            parts.append(markdown_paragraph(to_markdown(block)) + "\n")
    return parts


def render_markdown(report: Report, images: dict) -> str:
    """The report as Markdown: the opening sections (the summary), a list of links to every
    section, then the others; plots link to their PNG files beside ``report.md``."""
    opening, rest = _ordered(report)
    parts = [f"# {markdown_text(report.title)}\n", *(markdown_paragraph(to_markdown(line)) + "\n" for line in report.lead)]
    for section, _ in opening:
        parts += [f"## {markdown_text(section.title)}\n", *_markdown_blocks(section, images)]
    if report.sections:
        parts.append("**Contents**\n\n" + "\n".join(f"- [{markdown_text(section.title)}](#{anchor})"
                                                     for section, anchor in opening + rest) + "\n")
    for section, _ in rest:
        parts += [f"## {markdown_text(section.title)}\n", *_markdown_blocks(section, images)]
    return "\n".join(parts)


# ----------------------------------------------------------------------------------------------
# HTML
# ----------------------------------------------------------------------------------------------


#: The ranked cells' backgrounds, rank 1 and last: ColorBrewer's Blues, whose lightness alone
#: orders them (a green-to-red scale is one muddy yellow-brown to a deuteranope); the text (#222)
#: keeps a contrast of 6.5:1 or more on every one (WCAG AA asks 4.5:1).
RANK_SCALE = ((0x6B, 0xAE, 0xD6), (0xF7, 0xFB, 0xFF))


def rank_colour(rank: int, ranked: int) -> str:
    """A cell's background by its rank: :data:`RANK_SCALE`'s blue for rank 1, lightening evenly
    to white for the last of ``ranked``."""
    position = 0.0 if ranked <= 1 else (rank - 1) / (ranked - 1)
    best, last = RANK_SCALE
    return "#" + "".join(f"{round(b + (w - b) * position):02x}" for b, w in zip(best, last))


def _html_head(table: ReportTable, columns) -> str:
    """One header row, or two where the table groups its columns (a metric over its corpora)."""
    if not table.column_groups:
        return "<tr>" + "".join(f"<th>{_breakable(column)}</th>" for column in columns) + "</tr>"
    groups, labels = [], []
    for column in columns:
        group, label = table.column_groups.get(column, ("", column))
        if groups and groups[-1][0] == group:
            groups[-1][1] += 1
        else:
            groups.append([group, 1])
        labels.append(f"<th>{_breakable(label)}</th>")
    top = "".join(f"<th class='group' colspan='{span}'>{to_html(visible_controls(group) if isinstance(group, str) else group)}</th>" for group, span in groups)
    return f"<tr>{top}</tr><tr>{''.join(labels)}</tr>"


def _breakable(text) -> str:
    """Header text that may wrap after an underscore or a dot (``20ng_politics``)."""
    return re.sub(r"([_.])", r"\1<wbr>", to_html(visible_controls(text) if isinstance(text, str) else text))


def _html_cell(table: ReportTable, row: int, column, text: str, numeric: bool, ranked: dict) -> str:
    value = table.cells[column].iloc[row]
    best, rank = (row, column) in table.best, table.ranks.get((row, column))
    classes = [c for c, on in (("number", numeric), ("best", best),
                               ("smaller-n", isinstance(value, Estimate) and value.not_ranked)) if on]
    content = to_html(text).replace("\n", "<br>")
    content = f"<strong>{content}</strong>" if best else content
    attributes = f" class='{' '.join(classes)}'" if classes else ""
    tips = [table.tips[(row, column)]] if (row, column) in table.tips else []  # the p behind bold or not
    if rank is not None:  # shown, as the table's note promises, not only on hover
        content += f" <span class='rank'>{circled(rank)}</span>"
        attributes += f" style='background:{rank_colour(rank, ranked[column])}'"
        tips.insert(0, _rank_tip(value, rank, ranked[column]))
    if tips:
        attributes += f" title='{html_attribute('; '.join(tips))}'"
    return f"<td{attributes}>{content}</td>"


def _rank_tip(value, rank: int, of: int) -> str:
    """A ranked cell's hover text: its rank, and the seeds behind its mean (mean ± the half-width
    of its 95% t-interval over n)."""
    tip = f"rank {rank} of {of}"
    if isinstance(value, Estimate):
        seeds = "1 seed" if value.n == 1 else f"{value.n} seeds"
        shown = format_estimate(replace(value, expected=None))
        tip += f"; {shown} over {seeds}" + (" (95% Student-t interval)" if value.interval.has_interval else "")
    return tip


def html_table(table: ReportTable, with_notes: bool = True, notes: list | None = None) -> str:
    """The table as HTML, under it (in its box) ``notes`` (default: all its :func:`table_notes`)."""
    if table.empty:
        return "<p>(no data)</p>"
    text = format_table(table, separator="\n")
    caption = f"<caption>{to_html(table.title)}</caption>" if table.title else ""
    numeric = {column for column in text.columns if any(_is_number(value) for value in table.cells[column])}
    ranked = {column: sum(1 for (_, c) in table.ranks if c == column) for column in text.columns}
    rows = ("<tr>" + "".join(_html_cell(table, row, column, text[column].iloc[row], column in numeric, ranked)
                             for column in text.columns) + "</tr>" for row in range(len(text)))
    kind = " summary" if table.ranks else " topics" if any(
        isinstance(value, TopicWords) for column in table.cells for value in table.cells[column]) else ""
    notes = (table_notes(table) if notes is None else notes) if with_notes else []
    notes = "".join(f"<p class='table-note'>{to_html(note)}</p>" for note in notes)
    return (f"<div class='table'><table class='results{kind}'>{caption}<thead>{_html_head(table, text.columns)}</thead>"
            f"<tbody>{''.join(rows)}</tbody></table>{notes}</div>")


def _html_block(block, images: dict, figures: dict) -> str:
    if isinstance(block, ReportTable):
        return html_table(block)
    if isinstance(block, Plot):
        if block.file_name in figures:
            return f"<figure class='plot' aria-label='{to_html(block.alt)}'>{figures[block.file_name]}</figure>"
        if block.file_name not in images:
            return ""
        data = base64.b64encode(Path(images[block.file_name]).read_bytes()).decode()
        return f'<img alt="{to_html(block.alt)}" src="data:image/png;base64,{data}">'
    return f"<p>{to_html(block)}</p>"


def _html_section(section: Section, anchor: str, images: dict, figures: dict) -> str:
    """The heading (with its anchor) and the blocks; titled tables next to each other share a row
    (they are read side by side: one metric each, same models and corpora), each with its own
    footnotes directly under it, and the rules they share said once under the row."""
    parts = [f"<h2 id='{anchor}'>{to_html(section.title)}</h2>"]
    for block in grouped(section.blocks):
        if isinstance(block, list):
            own, shared = group_notes(block)
            tables = "".join(html_table(table, notes=notes) for table, notes in zip(block, own))
            said = "".join(f"<p class='table-note'>{to_html(note)}</p>" for note in shared)
            parts.append(f"<div class='table-row'>{tables}</div>{said}")
        else:
            parts.append(_html_block(block, images, figures))
    return "".join(parts)


def render_html(report: Report, images: dict, figures: dict | None = None) -> str:
    """The report as one self-contained page: the plots are embedded (``figures``, file name ->
    HTML of an interactive figure, in place of that image; plotly.js then once in the head), the
    style inline; the opening sections (the summary) first, then a list of links to every section."""
    figures = figures or {}
    opening, rest = _ordered(report)
    lead = "".join(f"<p>{to_html(line)}</p>" for line in report.lead)
    links = "".join(f"<li><a href='#{anchor}'>{to_html(section.title)}</a></li>" for section, anchor in opening + rest)
    contents = f"<nav class='contents'><strong>Contents</strong><ol>{links}</ol></nav>" if report.sections else ""
    body = (f"<h1>{to_html(report.title)}</h1>{lead}" + "".join(_html_section(s, a, images, figures) for s, a in opening)
            + contents + "".join(_html_section(s, a, images, figures) for s, a in rest))
    script = f"<script>{plotly_script()}</script>" if figures else ""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{to_html(report.title)}</title>"
            f"<style>{STYLE}</style>{script}</head><body>{body}</body></html>")
