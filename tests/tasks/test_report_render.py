"""Rendering: numbers become text only here; the best cell is bold in Markdown and HTML."""

from __future__ import annotations

import pandas as pd

from topicbench.tasks.report_render import (
    format_estimate, format_value, html_table, markdown_table, render_html, render_markdown,
)
from topicbench.tasks.report_sections import Plot, Report, Section
from topicbench.tasks.report_statistics import Flip
from topicbench.tasks.report_tables import Estimate, ReportTable, Share


def test_an_estimate_is_mean_and_sd_with_the_n_it_was_scored_at_and_missing_seeds():
    assert format_estimate(Estimate(-1.6494, 0.0401, 3, 3)) == "-1.649 ± 0.040"
    assert format_estimate(Estimate(0.4123, 0.012, 3, 3, scored_at=7)) == "0.4123 ± 0.012 (N=7)"
    assert format_estimate(Estimate(2585.2, 1953.0, 2, 3)) == "2585 ± 2000 (n=2)"
    assert format_estimate(Estimate(0.223, 3.4e-17, 3)) == "0.2230 ± 0"  # rounding noise of a deterministic fit
    assert format_estimate(Estimate(5.0, float("nan"), 1)) == "5.000"


def test_values_are_formatted_by_type_unless_the_column_says_otherwise():
    assert format_value(None) == "–" and format_value(float("nan")) == "–"
    assert format_value(Share(2, 3)) == "2/3"
    assert format_value(0.00011, "{:.2g}") == "0.00011"
    assert format_value(Flip("a", "b", (1, 4), (2, 1))) == "a (1→2) vs b (4→1)"
    assert format_value((Share(1, 2), Share(2, 2)), separator="<sep>") == "1/2<sep>2/2"
    assert format_value(None, lambda v: "not in the paper" if v is None else "x") == "not in the paper"


def _table():
    cells = pd.DataFrame({"model": ["a", "b"], "c1": [Estimate(1.0, 0.1, 2), Estimate(2.0, 0.2, 2)]})
    return ReportTable(cells, frozenset({(1, "c1")}), note="Bold: the best.", title="NPMI@10")


def test_markdown_marks_the_best_cell_bold():
    text = markdown_table(_table())
    assert "| b | **2.000 ± 0.20** |" in text and "| a | 1.000 ± 0.10 |" in text
    assert text.startswith("**NPMI@10**") and "Bold: the best." in text


def test_html_marks_the_best_cell_and_right_aligns_numbers():
    page = html_table(_table())
    assert "<td class='number best'><strong>2.000 ± 0.20</strong></td>" in page
    assert "<td class='number'>1.000 ± 0.10</td>" in page and "<caption>NPMI@10</caption>" in page


def test_pages_embed_only_the_plots_that_were_written(tmp_path):
    png = tmp_path / "drawn.png"
    png.write_bytes(b"\x89PNG fake")
    report = Report("title", ("lead line",), (Section("S", ("words", Plot("drawn.png", "drawn", None),
                                                                 Plot("empty.png", "empty", None))),))
    markdown = render_markdown(report, {"drawn.png": png})
    assert "![drawn](drawn.png)" in markdown and "empty.png" not in markdown
    page = render_html(report, {"drawn.png": png})
    assert page.count("<img") == 1 and "data:image/png;base64," in page and "<p>lead line</p>" in page
