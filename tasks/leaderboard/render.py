"""The leaderboard's page: a :class:`~topicbench.tasks.leaderboard.ranking.Leaderboard` as a
self-contained ``leaderboard.html`` (sortable tables in plain JavaScript, the critical-difference
diagram inline; nothing fetched) and ``leaderboard.md`` (with ``critical_difference.png``).

Both formats are views of one list of blocks (:func:`page_blocks`): headings, paragraphs and
:class:`Table` s whose cells carry their text, the value they sort by and their hover text.
"""

from __future__ import annotations

import html
import io
import json
import math
from dataclasses import dataclass

from topicbench.core.io import make_output_folder, write_text_atomically

from topicbench.tasks.leaderboard.ranking import (
    ALPHA,
    BOOTSTRAP_RESAMPLES,
    CONFIDENCE,
    Leaderboard,
    plain_number,
)
from topicbench.tasks.report.render import format_number, rank_colour
from topicbench.tasks.report.summary import K_FACTOR
from topicbench.tasks.report.text import display_text, html_attribute, markdown_paragraph, markdown_text, visible_controls

CD_IMAGE = "critical_difference.png"


@dataclass(frozen=True)
class Cell:
    """A table cell: its text, the number it sorts by (None: by its text) and its hover text;
    ``rank`` (rank, of) colours it on the report's rank scale."""

    text: str
    sort: float | None = None
    title: str = ""
    rank: tuple | None = None


@dataclass(frozen=True)
class Table:
    headers: tuple
    rows: tuple
    note: str = ""


def _interval(interval, digits: int = 3) -> str:
    if math.isnan(interval.low):
        return f"{format_number(interval.mean, digits)} (one seed)"
    mean, low, high = (format_number(value, digits) for value in (interval.mean, interval.low, interval.high))
    return f"{mean} [{low}, {high}]"


def _rank_text(rank) -> str:
    low, high = int(rank.low), int(rank.high)
    return f"{int(rank.mean)}" + ("" if low == high else f" ({low}–{high})")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _metric_title(key: str, higher: bool) -> str:
    return f"{key} {'↑' if higher else '↓'}"


def dataset_table(board, headline) -> Table:
    """One dataset's models: rank (by the first headline metric) with its interval, each headline
    metric's mean and interval, K, seeds, fit time and memory."""
    keys = [(key, higher) for key, higher in headline if any(key in e.scores for e in board.entries)]
    ranked = len(board.entries)
    rows = []
    for entry in board.entries:
        first = next((key for key, _ in keys if key in entry.ranks), None)
        rank = entry.ranks.get(first)
        cells = [Cell(_rank_text(rank), rank.mean, f"rank by {first}; {CONFIDENCE:.0%} bootstrap interval over seeds",
                      (int(rank.mean), ranked)) if rank else Cell("—", None, "no headline metric scored"),
                 Cell(entry.model, title=f"{entry.model_class} from bundle {entry.bundle}")]
        for key, _ in keys:
            score, place = entry.scores.get(key), entry.ranks.get(key)
            cells.append(Cell(_interval(score), score.mean, f"rank {_rank_text(place)} of {ranked} on {key}")
                         if score else Cell("—", None, f"not scored on {key}"))
        cells += [Cell(entry.num_topics, entry.topics, "mean over seeds of the topics the model used"),
                  Cell(", ".join(map(str, entry.seeds)), len(entry.seeds), f"{len(entry.seeds)} seeds"),
                  Cell(format_number(entry.fit_seconds, 3), entry.fit_seconds, "mean over seeds"),
                  Cell(format_number(entry.peak_memory_mb, 3), entry.peak_memory_mb, "mean over seeds")]
        rows.append(tuple(cells))
    headers = ("rank", "model", *(_metric_title(k, h) for k, h in keys), "K", "seeds", "fit time (s)", "peak memory (MB)")
    return Table(headers, tuple(rows), f"Each score: mean over seeds [{CONFIDENCE:.0%} bootstrap interval]; rank "
                 "(its interval). ↑ higher is better, ↓ lower is better.")


def overall_table(leaderboard: Leaderboard) -> Table | None:
    """Models by their mean rank over the (dataset, metric) blocks, with their rank in each block."""
    cross = leaderboard.cross
    if not cross.mean_ranks:
        return None
    models = list(cross.mean_ranks)
    rows = []
    for model in models:
        place = 1 + sum(cross.mean_ranks[other] < cross.mean_ranks[model] for other in models)
        cells = [Cell(str(place), place, "position by mean rank", (place, len(models))), Cell(model),
                 Cell(format_number(cross.mean_ranks[model], 3), cross.mean_ranks[model],
                      "mean of its ranks in the blocks")]
        cells += [Cell(plain_number(rank), rank, f"rank on {key} · {corpus} among the models of this table")
                  for (corpus, key), rank in zip(cross.blocks, cross.block_ranks[model])]
        rows.append(tuple(cells))
    headers = ("rank", "model", "mean rank", *(f"{key} · {corpus}" for corpus, key in cross.blocks))
    return Table(headers, tuple(rows), "Each block: the model's rank among the models of this table (ties share "
                 "their mean rank), as Friedman's test ranks them; each dataset's table ranks all its models.")


def statistics_text(leaderboard: Leaderboard) -> list[str]:
    """The cross-dataset test in words: Friedman's p, Nemenyi's critical difference, or why none."""
    cross = leaderboard.cross
    lines = [f"Blocks: {len(cross.blocks)} (dataset, headline metric) pairs; each ranks the models by their mean "
             "over seeds, so metrics on different scales can share the test (Friedman; Nemenyi post hoc; "
             f"autorank, Demšar 2006; α = {ALPHA})."]
    if cross.result is None:
        lines.append(f"No test: {cross.reason}.")
    else:
        result = cross.result
        verdict = ("the models differ" if result.pvalue < ALPHA else "no difference among the models is shown")
        lines.append(f"Friedman's test: p = {format_number(result.pvalue, 2)} ({verdict}). Nemenyi's critical "
                     f"difference: {format_number(result.cd, 3)}; two models whose mean ranks differ by less are "
                     "not told apart (joined by a bar in the diagram). Blocks on one dataset share its corpus, so "
                     "read the test as a guide.")
    if cross.left_out:
        lines.append("Not in the cross-dataset ranking, which needs a score in every block: "
                     + "; ".join(cross.left_out) + ".")
    return lines


def k_caution(board) -> list[str]:
    """A caution where the models on ``board`` differ in K by more than the report's factor."""
    topics = [entry.topics for entry in board.entries if math.isfinite(entry.topics) and entry.topics > 0]
    if not topics or max(topics) <= K_FACTOR * min(topics):
        return []
    return [f"Caution: K differs by more than {K_FACTOR:g}× among these models ({plain_number(min(topics))} to "
            f"{plain_number(max(topics))} topics); coherence and diversity depend on K, so compare them at matched "
            "K in the benchmark's report."]


def rules_text(leaderboard: Leaderboard) -> list[str]:
    """What ranks and how, as the page states it first."""
    metrics = "; ".join(f"{key} ({'higher' if higher else 'lower'} is better)" for key, higher in leaderboard.headline)
    return [f"Headline metrics: {metrics}. Each dataset's table is ordered by the first of them a model has; the "
            "default headline is, of NPMI@10, C_V@10, TD@10 and the LLM's rating and intrusion, those the bundles "
            "scored; the directions come from the metric registry.",
            f"Intervals: {CONFIDENCE:.0%} percentile bootstrap over seeds ({BOOTSTRAP_RESAMPLES:,} resamples); a rank's "
            "interval re-ranks the models on each resample. Only FINISHED fits rank.",
            "Each dataset ranks in one version (fingerprint and preprocessing); fits made with other data or "
            "preprocessing are never ranked with them.",
            *leaderboard.set_aside]


def judge_lines(leaderboard: Leaderboard) -> list[str]:
    """The LLM that judged each bundle and its calibrations against people (word-level: Hoyle et
    al.'s ratings; document-level: ProxAnn's study), or that it has none."""
    lines = []
    for bundle, llm in leaderboard.judges:
        model = llm.get("model", "an LLM")
        words, documents = llm.get("calibration"), llm.get("document_calibration")
        if not words and not documents:
            lines.append(f"Bundle {bundle}: judged by {model}, not calibrated against people: read its scores as one "
                         "model's opinion.")
            continue
        lines.append(f"Bundle {bundle}: judged by {model}; {_word_calibration(words)}; "
                     f"{_document_calibration(documents)}.")
    return lines


def _word_calibration(calibration: dict | None) -> str:
    if not calibration:
        return "word lists not calibrated against people"
    parts = [f"{row['measure']}: ρ = {fit['rho']:.2f} [{fit['low']:.2f}, {fit['high']:.2f}] against people's "
             f"{against}s" for row in calibration.get("rows", []) for against in ("rating", "intrusion")
             if row.get("measure") == f"llm_{against}" and isinstance(fit := row.get(against), dict)]
    verdict = f" ({calibration['verdict']})" if calibration.get("verdict") else ""
    return f"word-level calibration ({calibration.get('topics')} topics): {', '.join(parts) or 'no correlations recorded'}{verdict}"


def _document_calibration(calibration: dict | None) -> str:
    if not calibration:
        return "documents' judging not calibrated against people"
    judge = calibration.get("judge", {})
    parts = [f"llm_{answer}: τ = {tau['tau']:+.2f} (SE {tau['se']:.2f})" for answer in ("fit", "rank")
             if isinstance(tau := judge.get(answer), dict) and "tau" in tau and "se" in tau]
    return (f"document-level calibration on ProxAnn's study ({calibration.get('topics')} topics), topic-ranking "
            f"agreement with people: {', '.join(parts) or 'no τ recorded'}")


def settings_lines(leaderboard: Leaderboard) -> list[str]:
    """Each model's settings, once for the datasets it was fitted on with the same settings."""
    used = {}
    for board in leaderboard.datasets:
        for entry in board.entries:
            settings = json.dumps(entry.settings, sort_keys=True)
            used.setdefault((entry.model, entry.model_class, entry.bundle, settings), []).append(board.corpus)
    return [f"{model} ({model_class}, bundle {bundle}) on {', '.join(corpora)}: {settings}"
            for (model, model_class, bundle, settings), corpora in sorted(used.items())]


def page_blocks(leaderboard: Leaderboard, with_diagram: bool) -> list:
    """The page as ("h1" | "h2" | "p", text), :class:`Table` and ("image", file) blocks."""
    bundles = ", ".join(f"{b.name} ({b.manifest.get('created', '?')}, topicbench "
                        f"{b.manifest.get('topicbench_version', '?')}, commit {str(b.manifest.get('commit', '?'))[:12]})"
                        for b in leaderboard.bundles)
    blocks = [("h1", "Topic model leaderboard"),
              ("p", f"Built from {_count(len(leaderboard.bundles), 'bundle')}: {bundles}."),
              *(("p", line) for line in rules_text(leaderboard)),
              ("h2", "Across datasets")]
    overall = overall_table(leaderboard)
    if overall:
        blocks.append(overall)
    blocks += [("p", line) for line in statistics_text(leaderboard)]
    if with_diagram:
        blocks.append(("image", CD_IMAGE))
    for board in leaderboard.datasets:
        blocks += [("h2", f"Dataset: {board.corpus}"),
                   ("p", f"Fingerprint (SHA-256) {board.fingerprint}; source {board.source}; preprocessing "
                         f"{json.dumps(board.preprocessing, sort_keys=True)}."),
                   *(("p", line) for line in k_caution(board)),
                   dataset_table(board, leaderboard.headline)]
    blocks += [("h2", "Settings"), *(("p", line) for line in settings_lines(leaderboard))]
    judged = judge_lines(leaderboard)
    if judged:
        blocks += [("h2", "The LLM judge"), *(("p", line) for line in judged)]
    return blocks


def _markdown_table(table: Table) -> str:
    def row(cells):
        return "| " + " | ".join(markdown_text(cell) for cell in cells) + " |"  # escapes | too

    lines = [row(table.headers), "|" + "---|" * len(table.headers)]
    lines += [row(cell.text for cell in cells) for cells in table.rows]
    return "\n".join(lines) + (f"\n\n{markdown_text(table.note)}" if table.note else "")


def render_markdown(leaderboard: Leaderboard, with_diagram: bool) -> str:
    parts = []
    for block in page_blocks(leaderboard, with_diagram):
        if isinstance(block, Table):
            parts.append(_markdown_table(block))
        elif block[0] == "image":
            parts.append(f"![critical-difference diagram]({block[1]})")
        else:
            prefix = {"h1": "# ", "h2": "## ", "p": ""}[block[0]]
            parts.append(prefix + markdown_paragraph(markdown_text(block[1])))
    return "\n\n".join(parts) + "\n"


def _html_cell(cell: Cell) -> str:
    sort = "" if cell.sort is None or not math.isfinite(cell.sort) else f' data-sort="{cell.sort!r}"'
    style = f' style="background:{rank_colour(*cell.rank)}"' if cell.rank else ""
    css = ' class="rank"' if cell.rank else ""
    return f'<td{css}{sort}{style} title="{html_attribute(cell.title)}">{html.escape(display_text(cell.text))}</td>'


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
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; white-space: nowrap; }
th button { font: inherit; font-weight: bold; background: none; border: none; cursor: pointer; padding: 0; }
th[aria-sort="ascending"] button::after { content: " ▲"; }
th[aria-sort="descending"] button::after { content: " ▼"; }
td.rank { font-weight: bold; }
.note { font-size: 0.9em; color: #444; }
"""


def render_html(leaderboard: Leaderboard, diagram_svg: str | None) -> str:
    parts = []
    for block in page_blocks(leaderboard, diagram_svg is not None):
        if isinstance(block, Table):
            parts.append(_html_table(block))
        elif block[0] == "image":
            parts.append(f'<figure class="diagram">{diagram_svg}<figcaption>Critical-difference diagram (Nemenyi)'
                         "</figcaption></figure>")
        else:
            parts.append(f"<{block[0]}>{html.escape(display_text(block[1]))}</{block[0]}>")
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Topic model leaderboard</title>'
            f'<meta name="viewport" content="width=device-width"><style>{STYLE}</style></head><body>'
            + "\n".join(parts) + f"<script>{SORT_SCRIPT}</script></body></html>\n")


def critical_difference_figure(result):
    """autorank's critical-difference diagram of ``result`` as a matplotlib figure."""
    import matplotlib

    matplotlib.use("Agg")
    from autorank import plot_stats
    from matplotlib import pyplot

    figure = pyplot.figure(figsize=(8, 0.4 * len(result.rankdf) + 1.5))
    plot_stats(result, allow_insignificant=True, ax=figure.add_subplot(111))
    return figure


def write_leaderboard(leaderboard: Leaderboard, out) -> list:
    """Write ``leaderboard.md``, ``leaderboard.html`` and (where there is a test) the diagram
    into ``out``; the paths written. The same leaderboard writes the same bytes."""
    folder = make_output_folder(out, "--out")
    svg, written = None, []
    if leaderboard.cross.result is not None:
        import matplotlib
        from matplotlib import pyplot

        figure = critical_difference_figure(leaderboard.cross.result)
        figure.savefig(folder / CD_IMAGE, dpi=120, bbox_inches="tight", metadata={"Software": None})
        buffer = io.StringIO()
        with matplotlib.rc_context({"svg.hashsalt": "topicbench-leaderboard"}):  # ids from a fixed salt
            figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
        pyplot.close(figure)
        svg = buffer.getvalue()
        svg = svg[svg.index("<svg"):]  # inline: no XML prolog inside HTML
        written.append(folder / CD_IMAGE)
    written.append(write_text_atomically(folder / "leaderboard.md", render_markdown(leaderboard, svg is not None)))
    written.append(write_text_atomically(folder / "leaderboard.html", render_html(leaderboard, svg)))
    return written
