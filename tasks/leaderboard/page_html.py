"""The leaderboard's page as one self-contained ``leaderboard.html``: the blocks of
:func:`~topicbench.tasks.leaderboard.render.page_blocks` as sortable tables (plain JavaScript,
nothing fetched) and the critical-difference diagrams inline. A cell's interval sits on a line of
its own below its value, and headers wrap, so the tables fit a 1400 px window.
"""

from __future__ import annotations

import html
import math

from topicbench.tasks.leaderboard.ranking import Leaderboard
from topicbench.tasks.leaderboard.render import Cell, Table, page_blocks
from topicbench.tasks.report.render import rank_colour
from topicbench.tasks.report.text import display_text, html_attribute, visible_controls


def _html_cell(cell: Cell) -> str:
    sort = "" if cell.sort is None or not math.isfinite(cell.sort) else f' data-sort="{cell.sort!r}"'
    style = f' style="background:{rank_colour(*cell.rank)}"' if cell.rank else ""
    css = ' class="rank"' if cell.rank else ""
    detail = f'<span class="detail">{html.escape(display_text(cell.detail))}</span>' if cell.detail else ""
    return (f'<td{css}{sort}{style} title="{html_attribute(cell.title)}">{html.escape(display_text(cell.text))}'
            f"{detail}</td>")


def _html_table(table: Table) -> str:
    head = "".join(f'<th><button type="button">{html.escape(visible_controls(h))}</button></th>' for h in table.headers)
    body = "".join("<tr>" + "".join(_html_cell(c) for c in cells) + "</tr>" for cells in table.rows)
    note = f'<p class="note">{html.escape(table.note)}</p>' if table.note else ""
    return (f'<div class="scroll"><table class="sortable"><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
            f"</table></div>{note}")


#: Sorting in the page itself: a click on a header sorts by that column (numbers by their
#: data-sort value, others by text; an empty cell last), a second click reverses.
SORT_SCRIPT = """
document.querySelectorAll('table.sortable').forEach(table => {
  const headers = Array.from(table.tHead.rows[0].cells);
  headers.forEach((header, column) => header.querySelector('button').addEventListener('click', () => {
    const ascending = header.getAttribute('aria-sort') !== 'ascending';
    headers.forEach(h => h.removeAttribute('aria-sort'));
    header.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
    const key = row => {
      const cell = row.cells[column];
      return cell.dataset.sort !== undefined ? Number(cell.dataset.sort) : cell.innerText.trim();
    };
    const body = table.tBodies[0];
    const rows = Array.from(body.rows);
    rows.sort((a, b) => {
      const x = key(a), y = key(b);
      if (x === '—' || y === '—') return (x === '—') - (y === '—');
      const order = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
      return ascending ? order : -order;
    });
    rows.forEach(row => body.appendChild(row));
  }));
});
"""

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 96rem; padding: 0 1rem; color: #222; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 0.5rem 0; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
td { white-space: nowrap; }
th { white-space: normal; min-width: 3em; }
td .detail { display: block; white-space: normal; max-width: 11em; font-size: 0.85em; color: #444; }
th button { font: inherit; font-weight: bold; background: none; border: none; cursor: pointer; padding: 0; }
th[aria-sort="ascending"] button::after { content: " ▲"; }
th[aria-sort="descending"] button::after { content: " ▼"; }
td.rank { font-weight: bold; }
.note { font-size: 0.9em; color: #444; }
"""


def render_html(leaderboard: Leaderboard, diagrams: dict | None) -> str:
    """The page as HTML; ``diagrams``: diagram file -> its SVG, inlined where the page shows it."""
    parts = []
    for block in page_blocks(leaderboard, bool(diagrams)):
        if isinstance(block, Table):
            parts.append(_html_table(block))
        elif block[0] == "image":
            parts.append(f'<figure class="diagram">{diagrams[block[1]]}<figcaption>{html.escape(display_text(block[2]))}'
                         "</figcaption></figure>")
        else:
            parts.append(f"<{block[0]}>{html.escape(display_text(block[1]))}</{block[0]}>")
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Topic model leaderboard</title>'
            f'<meta name="viewport" content="width=device-width"><style>{STYLE}</style></head><body>'
            + "\n".join(parts) + f"<script>{SORT_SCRIPT}</script></body></html>\n")
