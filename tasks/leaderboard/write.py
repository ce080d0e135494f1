"""The leaderboard's files: ``leaderboard.md``, ``leaderboard.html``, ``leaderboard.json`` and a
critical-difference diagram per ranking that has a test (:func:`write_leaderboard`), and the
Every Eval Ever records where asked (:func:`write_eee_records`). The same leaderboard writes the
same bytes.
"""

from __future__ import annotations

import io
import json

from topicbench.core.io import make_output_folder, write_text_atomically

from topicbench.tasks.leaderboard.cross import MAIN_GROUP
from topicbench.tasks.leaderboard.page_html import render_html
from topicbench.tasks.leaderboard.ranking import Leaderboard
from topicbench.tasks.leaderboard.records import eee_records, leaderboard_json
from topicbench.tasks.leaderboard.render import diagram_file, render_markdown


def critical_difference_figure(result):
    """autorank's critical-difference diagram of ``result`` as a matplotlib figure."""
    import matplotlib

    matplotlib.use("Agg")
    from autorank import plot_stats
    from matplotlib import pyplot

    figure = pyplot.figure(figsize=(8, 0.4 * len(result.rankdf) + 1.5))
    plot_stats(result, allow_insignificant=True, ax=figure.add_subplot(111))
    return figure


def _diagram(result) -> tuple[bytes, str]:
    """A critical-difference diagram as PNG bytes and as inline SVG (no XML prolog), both
    written without dates and with ids from a fixed salt, so the same result gives the same bytes."""
    import matplotlib
    from matplotlib import pyplot

    figure = critical_difference_figure(result)
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=120, bbox_inches="tight", metadata={"Software": None})
    svg = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "topicbench-leaderboard"}):
        figure.savefig(svg, format="svg", bbox_inches="tight", metadata={"Date": None})
    pyplot.close(figure)
    text = svg.getvalue()
    return png.getvalue(), text[text.index("<svg"):]


def write_leaderboard(leaderboard: Leaderboard, out) -> list:
    """Write ``leaderboard.md``, ``leaderboard.html``, ``leaderboard.json`` and the diagram of each
    main-group ranking with a test into ``out``; the paths written."""
    folder = make_output_folder(out, "--out")
    diagrams, written = {}, []
    for cross in leaderboard.crosses:
        if cross.result is not None and cross.group == MAIN_GROUP:
            png, diagrams[diagram_file(cross)] = _diagram(cross.result)
            (folder / diagram_file(cross)).write_bytes(png)
            written.append(folder / diagram_file(cross))
    written.append(write_text_atomically(folder / "leaderboard.md", render_markdown(leaderboard, bool(diagrams))))
    written.append(write_text_atomically(folder / "leaderboard.html", render_html(leaderboard, diagrams)))
    written.append(write_text_atomically(folder / "leaderboard.json", leaderboard_json(leaderboard)))
    return written


def write_eee_records(leaderboard: Leaderboard, out) -> list:
    """Write each (dataset, model) of ``leaderboard`` as an Every Eval Ever record under ``out``
    (``<dataset>/<model>.json``); the paths written."""
    folder = make_output_folder(out, "--eee")
    written = []
    for path, record in eee_records(leaderboard):
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(record, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
        written.append(write_text_atomically(folder / path, text))
    return written
