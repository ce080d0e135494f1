"""The checks of a report page in headless chromium that every browser test of a report shares.

:func:`open_page` opens an HTML file at a width (1400 px, the issue's) and collects the page's
errors; :func:`clipped_titles` names every plot title or axis title that leaves its figure, lies
over a panel, overlaps another text or is longer than its axis; :func:`rank_problems` checks that
every ranked cell shows its rank and that the first and last of each ranked column stay apart
for a deuteranope, measured on the screenshot's pixels (:mod:`colour_vision`).
"""

from __future__ import annotations

import io
import re
import shutil
from contextlib import contextmanager

import numpy as np

from colour_vision import delta_e, deuteranopia

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: CIE ΔE between the first and last rank's backgrounds, as a deuteranope sees them, below which
#: the scale does not order the cells at a glance (2.3 is just noticeable).
RANK_DELTA_E = 20.0

TITLE_CHECKS = """() => {
  const problems = [];
  const box = e => e.getBoundingClientRect();
  const apart = (a, b) => a.right <= b.left + 1 || b.right <= a.left + 1 || a.bottom <= b.top + 1 || b.bottom <= a.top + 1;
  const inside = (a, b) => a.left >= b.left - 1 && a.right <= b.right + 1 && a.top >= b.top - 1 && a.bottom <= b.bottom + 1;
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    const svg = box(plot.querySelector('.main-svg'));
    const areas = Array.from(plot.querySelectorAll('.draglayer .nsewdrag')).map(box);
    const titles = Array.from(plot.querySelectorAll('.gtitle, .infolayer [class^="g-x"][class$="title"] text, '
                                                    + '.infolayer [class^="g-y"][class$="title"] text, .annotation-text'))
      .filter(t => t.textContent.trim());
    const ticks = Array.from(plot.querySelectorAll('.xtick text, .ytick text'));
    for (const title of titles) {
      const r = box(title), name = `'${title.textContent}'`;
      const vertical = /^g-y/.test(title.parentNode.getAttribute('class') || '');
      if (!inside(r, svg)) problems.push(`${name} leaves its figure`);
      for (const area of areas) {
        if (!apart(r, area)) problems.push(`${name} lies over a panel`);
        // an axis title longer than its axis runs into the panels around it
        const beside = vertical
          ? r.right <= area.left + 1 && area.left - r.right < 80 && !(r.bottom < area.top || r.top > area.bottom)
          : r.top >= area.bottom - 1 && r.top - area.bottom < 60 && !(r.right < area.left || r.left > area.right);
        if (beside && (vertical ? r.height > area.height + 2 : r.width > area.width + 2))
          problems.push(`${name} is longer than its axis`);
      }
      for (const other of [...titles, ...ticks])
        if (other !== title && !apart(r, box(other))) problems.push(`${name} overlaps '${other.textContent}'`);
    }
  }
  return [...new Set(problems)];
}"""

#: Every ranked cell (its hover text says "rank r of n"): its table, column, rank and what it shows.
RANKED_CELLS = """() => Array.from(document.querySelectorAll('table.results')).flatMap((table, t) =>
  Array.from(table.querySelectorAll('td[title^="rank "]')).map(cell => ({
    table: t, column: cell.cellIndex, tip: cell.title, shown: cell.innerText,
    rankWidth: (cell.querySelector('span.rank') || {getBoundingClientRect: () => ({width: 0})}).getBoundingClientRect().width})))"""


@contextmanager
def open_page(path, width: int = 1400):
    """The page at ``path`` in headless chromium, ``width`` px wide, loaded; yields (page, errors),
    errors being what the page logged as errors."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            errors = []
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(path.as_uri())
            page.wait_for_load_state("load")
            yield page, errors
        finally:
            browser.close()


def clipped_titles(page) -> list[str]:
    """Each plot or axis title of the page that cannot be read whole (see :data:`TITLE_CHECKS`)."""
    return page.evaluate(TITLE_CHECKS)


def background(png: bytes) -> np.ndarray:
    """The colour most of a cell's pixels have (its background; the text is the few others)."""
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float).reshape(-1, 3)
    return np.median(pixels, axis=0)


def rank_problems(page) -> tuple[int, list[str]]:
    """(ranked cells, problems): a ranked cell that does not show its rank as ① … (the summary's
    note promises it in each cell, not only on hover), and a ranked column whose first and last
    cells a deuteranope cannot tell apart (:data:`RANK_DELTA_E`, on the cells' screenshots)."""
    from topicbench.tasks.report.render import circled

    cells, problems, columns = page.evaluate(RANKED_CELLS), [], {}
    for index, cell in enumerate(cells):
        rank, of = map(int, re.match(r"rank (\d+) of (\d+)", cell["tip"]).groups())
        if circled(rank) not in cell["shown"] or cell["rankWidth"] <= 0:
            problems.append(f"a cell of rank {rank} shows {cell['shown']!r}")
        if of > 1 and rank in (1, of):
            columns.setdefault((cell["table"], cell["column"], of), {})[rank] = index
    located = page.locator('table.results td[title^="rank "]')
    for (table, column, of), ends in columns.items():
        if set(ends) != {1, of}:
            continue
        first, last = (background(located.nth(ends[rank]).screenshot()) for rank in (1, of))
        seen = delta_e(deuteranopia(first), deuteranopia(last))
        if seen < RANK_DELTA_E:
            problems.append(f"table {table}, column {column}: rank 1 and {of} differ by ΔE {seen:.1f} "
                            f"to a deuteranope ({first.round()} vs {last.round()})")
    return len(cells), problems
