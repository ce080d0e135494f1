"""Rendering a built report as Markdown and as one self-contained HTML page.

The only place numbers become text: an :class:`Estimate` is ``mean ± sd`` (with ``(N=…)`` when it
was scored at a smaller top-N, and ``(n=…)`` when it rests on fewer seeds than asked for), a
:class:`Share` is ``k/n``, a missing value a dash; a table's ``formats`` override a column. The
best cell of a column is bold in both outputs.
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path

import pandas as pd

from .report_sections import Plot, Report, Section
from .report_statistics import Flip
from .report_tables import Estimate, ReportTable, Share

MISSING = "–"
STYLE = """body{font-family:system-ui,sans-serif;max-width:1360px;margin:2em auto;padding:0 1em;color:#222;line-height:1.4}
h2{margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:0.2em}
table.results{border-collapse:collapse;margin:0.3em 0 0.4em;font-size:0.88em}
table.results caption{text-align:left;font-weight:600;padding:0.2em 0}
table.results th,table.results td{border-bottom:1px solid #e3e3e3;padding:0.22em 0.55em;text-align:left;vertical-align:top}
table.results th{background:#f3f3f3;position:sticky;top:0}
table.results td.number{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.results td.best{background:#eef6ee}
p.table-note{font-size:0.8em;color:#666;margin:0 0 1.4em}
div.table-row{display:flex;flex-wrap:wrap;gap:0 2em;align-items:flex-start}
img{max-width:100%;margin:0.5em 0 1.5em;display:block} code{background:#f3f3f3}"""


def _significant(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant digits, in plain notation between 1e-4 and 1e6 (so
    2585 stays 2585 and 1953 at two digits is 2000, not 2e+03), in e-notation outside."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    if not 1e-4 <= abs(value) < 1e6:
        return f"{value:.{digits - 1}e}"
    decimals = digits - 1 - math.floor(math.log10(abs(value)))
    return f"{round(value, decimals):.{max(decimals, 0)}f}"


def format_estimate(value: Estimate) -> str:
    """``mean ± sd`` to 4 and 2 significant digits; an sd below rounding noise of the mean is 0."""
    text = _significant(value.mean, 4)
    if value.n > 1 and math.isfinite(value.sd):
        noise = abs(value.mean) * 1e-9
        text += " ± " + ("0" if value.sd <= noise else _significant(value.sd, 2))
    if value.scored_at is not None:
        text += f" (N={value.scored_at})"
    if value.expected and value.n < value.expected:
        text += f" (n={value.n})"
    return text


def format_flip(flip: Flip) -> str:
    """``a (1→7) vs b (7→1)``: each model's rank under the base metric → under the other."""
    (a_base, b_base), (a_other, b_other) = flip.base_ranks, flip.other_ranks
    return f"{flip.first} ({a_base}→{a_other}) vs {flip.second} ({b_base}→{b_other})"


def format_value(value, style=None, *, separator: str = "; ") -> str:
    """One cell as text: ``style`` (a format string or callable) first, then by the value's type."""
    if callable(style):
        return style(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if style is not None:
        return style.format(value)
    if isinstance(value, Estimate):
        return format_estimate(value)
    if isinstance(value, Share):
        return f"{value.count}/{value.total}"
    if isinstance(value, Flip):
        return format_flip(value)
    if isinstance(value, tuple):
        return separator.join(format_value(item, separator=separator) for item in value) or "none"
    if isinstance(value, float):
        return _significant(value, 4)
    return str(value)


def format_table(table: ReportTable, *, separator: str = "; ") -> pd.DataFrame:
    """The table's cells as text, one column format or type rule each (no marking)."""
    cells = table.cells
    return pd.DataFrame(
        {column: [format_value(v, table.formats.get(column), separator=separator) for v in cells[column]]
         for column in cells.columns},
        index=cells.index, columns=cells.columns,
    )


def _is_number(value) -> bool:
    return isinstance(value, (int, float, Estimate, Share)) and not isinstance(value, bool)


# ----------------------------------------------------------------------------------------------
# Markdown
# ----------------------------------------------------------------------------------------------


def markdown_table(table: ReportTable) -> str:
    if table.empty:
        return "(no data)\n"
    text = format_table(table)
    lines = [f"**{table.title}**\n"] if table.title else []
    lines.append("| " + " | ".join(map(str, text.columns)) + " |")
    lines.append("|" + "|".join("---" for _ in text.columns) + "|")
    for row, values in enumerate(text.itertuples(index=False)):
        cells = [_markdown_cell(value, (row, column) in table.best) for column, value in zip(text.columns, values)]
        lines.append("| " + " | ".join(cells) + " |")
    if table.note:
        lines.append(f"\n{table.note}")
    return "\n".join(lines) + "\n"


def _markdown_cell(text: str, best: bool) -> str:
    text = text.replace("|", "/")
    return f"**{text}**" if best else text


def render_markdown(report: Report, images: dict) -> str:
    """The report as Markdown; plots link to their PNG files beside ``report.md``."""
    parts = [f"# {report.title}\n", *(line + "\n" for line in report.lead)]
    for section in report.sections:
        parts.append(f"## {section.title}\n")
        for block in section.blocks:
            if isinstance(block, ReportTable):
                parts.append(markdown_table(block))
            elif isinstance(block, Plot):
                if block.file_name in images:
                    parts.append(f"![{block.alt}]({block.file_name})\n")
            else:
                parts.append(block + "\n")
    return "\n".join(parts)


# ----------------------------------------------------------------------------------------------
# HTML
# ----------------------------------------------------------------------------------------------


def html_table(table: ReportTable) -> str:
    if table.empty:
        return "<p>(no data)</p>"
    text = format_table(table, separator="\n")
    caption = f"<caption>{html.escape(table.title)}</caption>" if table.title else ""
    head = "".join(f"<th>{html.escape(str(column))}</th>" for column in text.columns)
    numeric = {column for column in text.columns if any(_is_number(value) for value in table.cells[column])}
    rows = []
    for row in range(len(text)):
        cells = []
        for column in text.columns:
            best = (row, column) in table.best
            classes = " ".join(c for c, on in (("number", column in numeric), ("best", best)) if on)
            content = html.escape(text[column].iloc[row]).replace("\n", "<br>")
            content = f"<strong>{content}</strong>" if best else content
            cells.append(f"<td class='{classes}'>{content}</td>" if classes else f"<td>{content}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    note = f"<p class='table-note'>{html.escape(table.note)}</p>" if table.note else ""
    return (f"<div class='table'><table class='results'>{caption}<thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>{note}</div>")


def _html_block(block, images: dict) -> str:
    if isinstance(block, ReportTable):
        return html_table(block)
    if isinstance(block, Plot):
        if block.file_name not in images:
            return ""
        data = base64.b64encode(Path(images[block.file_name]).read_bytes()).decode()
        return f'<img alt="{html.escape(block.alt)}" src="data:image/png;base64,{data}">'
    return f"<p>{html.escape(block)}</p>"


def _html_section(section: Section, images: dict) -> str:
    """The heading and the blocks; titled tables next to each other share a row (they are read
    side by side: one metric each, same models and corpora)."""
    parts, group = [f"<h2>{html.escape(section.title)}</h2>"], []
    for block in (*section.blocks, None):
        if isinstance(block, ReportTable) and block.title:
            group.append(html_table(block))
            continue
        if group:
            parts.append(f"<div class='table-row'>{''.join(group)}</div>")
            group = []
        if block is not None:
            parts.append(_html_block(block, images))
    return "".join(parts)


def render_html(report: Report, images: dict) -> str:
    """The report as one self-contained page: the plots are embedded, the style inline."""
    lead = "".join(f"<p>{html.escape(line)}</p>" for line in report.lead)
    body = f"<h1>{html.escape(report.title)}</h1>{lead}" + "".join(_html_section(s, images) for s in report.sections)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(report.title)}</title>"
            f"<style>{STYLE}</style></head><body>{body}</body></html>")
