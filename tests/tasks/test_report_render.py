"""Rendering: numbers become text only here; the best cell is bold in Markdown and HTML."""

from __future__ import annotations

import pandas as pd

from topicbench.tasks.report.render import (
    NO_SPREAD_NOTE, SPREAD_NOTE, anchors, format_estimate, format_value, html_table, markdown_table, rank_colour, render_html,
    render_markdown,
)
from topicbench.tasks.report.emphasis import DETERMINISTIC_NOTE
from topicbench.tasks.report.parts import Plot, Report, Section
from topicbench.tasks.report.statistics import Flip
from topicbench.tasks.report.tables import Estimate, ReportTable, Share, TopicWords

from colour_vision import delta_e, deuteranopia, hex_rgb, lab


def test_an_estimate_is_mean_and_t_interval_with_the_n_it_was_scored_at_and_missing_seeds():
    # ± is the half-width of the 95% Student-t interval: t_{0.975, 2} · 0.0401 / √3 = 0.0996 over 3 seeds
    assert format_estimate(Estimate(-1.6494, 0.0401, 3, 3)) == "-1.65 ± 0.100"  # three significant digits
    assert format_estimate(Estimate(0.4123, 0.012, 3, 3, scored_at=7)) == "0.412 ± 0.030 (N=7)"
    assert format_estimate(Estimate(0.4123, 0.012, 5)) == "0.412 ± 0.015"  # t_{0.975, 4} = 2.776
    assert format_estimate(Estimate(0.4123, 0.012, 10)) == "0.412 ± 0.0086"  # t_{0.975, 9} = 2.262
    assert format_estimate(Estimate(2585.2, 1953.0, 2, 3)) == "2585 (n=2)"  # no interval under 3 seeds
    assert format_estimate(Estimate(5.0, float("nan"), 1)) == "5.00"
    assert format_estimate(Estimate(0.4123, 0.012, 3), spread=False) == "0.412"


def test_numbers_read_without_scientific_notation_or_a_plus_minus_zero():
    assert format_estimate(Estimate(0.223, 3.4e-17, 3)) == "0.223 (det.)"  # deterministic: said so, no ± 0
    assert format_estimate(Estimate(0.2717, 3.5e-05, 3)) == "0.272 ± <0.0001"  # a ± no one can see in the mean
    assert format_estimate(Estimate(-1.737, 0.0072, 3)) == "-1.74 ± 0.018"
    assert format_estimate(Estimate(-0.000902, 1.8e-07, 3)) == "-0.000902 ± 0.00000045"
    # seconds in the unit that reads best, counts whole (a count the same on every seed is no model's choice)
    assert format_estimate(Estimate(6.512e-06, 9.8e-07, 3), "seconds") == "6.51 ± 2.4 µs"
    assert format_estimate(Estimate(0.0065, 0.0004, 3), "seconds") == "6.50 ± 0.99 ms"
    assert format_estimate(Estimate(12.3, 0.4, 3), "seconds") == "12.3 ± 0.99 s"
    assert format_estimate(Estimate(140.0, 3.0, 3), "seconds") == "2.33 ± 0.12 min"
    assert format_estimate(Estimate(100.0, 0.0, 3), "count") == "100"
    assert format_estimate(Estimate(18.0, 0.0, 3), "count") == "18"
    assert format_estimate(Estimate(17.67, 1.2, 3), "count") == "17.7 ± 3.0"
    assert format_value(0.0123, unit="seconds") == "12.3 ms" and format_value(3.0, unit="count") == "3"
    assert format_value(0.27171) == "0.272"


def test_a_table_says_once_what_its_plus_minus_is_and_why_a_value_has_none():
    cells = pd.DataFrame({"model": ["a", "b"], "c1": [Estimate(1.0, 0.0, 3), Estimate(2.0, 0.2, 3)]})
    text = markdown_table(ReportTable(cells, note="Bold: the best.", tested=True))  # models' scores
    assert "| a | 1.00 (det.) |" in text and "| b | 2.00 ± 0.50 |" in text
    spread = SPREAD_NOTE.format(seeds="n = 3 seeds")  # the interval's method and its n
    assert text.count(DETERMINISTIC_NOTE) == 1 and "Bold: the best. " + spread + " " + DETERMINISTIC_NOTE in text
    assert DETERMINISTIC_NOTE not in markdown_table(ReportTable(cells.iloc[1:], tested=True))
    counts = markdown_table(ReportTable(cells, unit="count", tested=True))  # a count the same on every seed
    assert "| a | 1 |" in counts and NO_SPREAD_NOTE in counts and DETERMINISTIC_NOTE not in counts
    shares = markdown_table(ReportTable(cells))  # not a model's score (a share answered): the same, not deterministic
    assert "| a | 1.00 |" in shares and NO_SPREAD_NOTE in shares and DETERMINISTIC_NOTE not in shares
    mixed = pd.DataFrame({"model": ["a", "b"], "c1": [Estimate(1.0, 0.1, 5), Estimate(2.0, 0.2, 2)]})
    assert SPREAD_NOTE.format(seeds="n = 5 seeds") in markdown_table(ReportTable(mixed))  # n = 2 has no interval


def test_a_topic_is_its_words_and_its_share_of_the_documents():
    assert format_value(TopicWords(("tax", "cut", "vote"), 0.0421)) == "tax cut vote (4.2%)"
    assert format_value(TopicWords(("tax", "cut"))) == "tax cut"
    assert format_value(TopicWords(("tax", "cut"), 0.0421, (("NPMI", 0.12345), ("LLM rating", 2.5)))) == \
        "tax cut (4.2% · NPMI 0.12 · LLM rating 2.5)"
    assert format_value(TopicWords(("tax", "cut"), None, (("NPMI", -0.031),))) == "tax cut (NPMI -0.031)"


def test_values_are_formatted_by_type_unless_the_column_says_otherwise():
    assert format_value(None) == "–" and format_value(float("nan")) == "–"
    assert format_value(Share(2, 3)) == "2/3"
    assert format_value(0.00011, "{:.2g}") == "0.00011"
    assert format_value(Flip("a", "b", (1, 4), (2, 1))) == "a (1→2) vs b (4→1)"
    assert format_value((Share(1, 2), Share(2, 2)), separator="<sep>") == "1/2<sep>2/2"
    assert format_value(None, lambda v: "not in the paper" if v is None else "x") == "not in the paper"


def _table():
    cells = pd.DataFrame({"model": ["a", "b"], "c1": [Estimate(1.0, 0.1, 3), Estimate(2.0, 0.2, 3)]})
    return ReportTable(cells, frozenset({(1, "c1")}), note="Bold: the best.", title="NPMI@10",
                       tips={(1, "c1"): "the best mean; largest Holm-adjusted Welch p against the others 0.012"})


def test_markdown_marks_the_best_cell_bold():
    text = markdown_table(_table())
    assert "| b | **2.00 ± 0.50** |" in text and "| a | 1.00 ± 0.25 |" in text
    assert text.startswith("**NPMI@10**") and "Bold: the best." in text


def test_html_marks_the_best_cell_and_right_aligns_numbers():
    page = html_table(_table())
    # the p behind the bold, in the hover
    assert ("<td class='number best' title='the best mean; largest Holm-adjusted Welch p against the others 0.012'>"
            "<strong>2.00 ± 0.50</strong></td>") in page
    assert "<td class='number'>1.00 ± 0.25</td>" in page and "<caption>NPMI@10</caption>" in page


def test_pages_embed_only_the_plots_that_were_written(tmp_path):
    png = tmp_path / "drawn.png"
    png.write_bytes(b"\x89PNG fake")
    report = Report("title", ("lead line",), (Section("S", ("words", Plot("drawn.png", "drawn", None),
                                                                 Plot("empty.png", "empty", None))),))
    markdown = render_markdown(report, {"drawn.png": png})
    assert "![drawn](drawn.png)" in markdown and "empty.png" not in markdown
    page = render_html(report, {"drawn.png": png})
    assert page.count("<img") == 1 and "data:image/png;base64," in page and "<p>lead line</p>" in page


def _summary():
    cells = pd.DataFrame({"model": ["a", "b", "c"],
                          "UMass@10 · x": [Estimate(-1.5, 0.1, 3, 3), Estimate(-1.2, 0.1, 2, 3), Estimate(-0.4, 0.1, 3, 3, scored_at=5)]})
    return ReportTable(cells, frozenset({(1, "UMass@10 · x")}), note="Bold: the best.",
                       ranks={(0, "UMass@10 · x"): 2, (1, "UMass@10 · x"): 1}, spread=False,
                       column_groups={"UMass@10 · x": ("UMass@10", "x")})


def test_a_ranked_table_shows_ranks_in_markdown_and_ranks_and_colours_in_html():
    text = markdown_table(_summary())
    assert "| a | -1.50 ② |" in text and "| b | **-1.20 (n=2)** ① |" in text and "| c | -0.400 (N=5) |" in text
    page = html_table(_summary())
    assert "<table class='results summary'>" in page and "colspan='1'>UMass@10</th>" in page
    # each ranked cell shows its rank, as in Markdown; hovering tells the seeds behind its mean
    # (two seeds: no interval; three: the 95% Student-t interval, so named)
    assert (f"style='background:{rank_colour(1, 2)}' title='rank 1 of 2; -1.20 over 2 seeds'>"
            "<strong>-1.20 (n=2)</strong> <span class='rank'>①</span></td>") in page
    assert ("title='rank 2 of 2; -1.50 ± 0.25 over 3 seeds (95% Student-t interval)'>-1.50 "
            "<span class='rank'>②</span></td>") in page
    assert "class='number smaller-n'>-0.400 (N=5)</td>" in page  # grey, unranked
    assert rank_colour(1, 5) == "#6baed6" and rank_colour(5, 5) == "#f7fbff"


def test_the_rank_colours_stay_ordered_and_apart_for_a_deuteranope():
    """Under simulated deuteranopia every rank is lighter than the one before, and the first and
    last differ at a glance (CIE ΔE over 20); the green-to-red scale gave 10.2, its yellow middle
    lighter than both ends."""
    for ranked in (2, 3, 5, 12):
        seen = [deuteranopia(hex_rgb(rank_colour(rank, ranked))) for rank in range(1, ranked + 1)]
        lightness = [lab(colour)[0] for colour in seen]
        assert all(a < b for a, b in zip(lightness, lightness[1:])), (ranked, lightness)
        assert delta_e(seen[0], seen[-1]) > 20


def test_the_summary_opens_the_page_and_a_contents_list_links_every_heading():
    sections = (Section("Coherence against N", ("c",)), Section("Summary: who wins where", (_summary(),), opening=True),
                Section("E-LDA's topics", ("t",)))
    assert anchors(sections) == ["coherence-against-n", "summary-who-wins-where", "e-ldas-topics"]
    markdown = render_markdown(Report("title", ("lead",), sections), {})
    assert markdown.index("lead") < markdown.index("## Summary") < markdown.index("**Contents**") < markdown.index("## Coherence")
    assert "- [Summary: who wins where](#summary-who-wins-where)\n- [Coherence against N](#coherence-against-n)" in markdown
    page = render_html(Report("title", ("lead",), sections), {})
    assert page.index("<h2 id='summary-who-wins-where'>") < page.index("<nav class='contents'>") < page.index("<h2 id='coherence-against-n'>")
    assert "<a href='#e-ldas-topics'>E-LDA&#x27;s topics</a>" in page


def test_tables_read_side_by_side_say_their_shared_note_once():
    one, two = (ReportTable(pd.DataFrame({"model": ["a"], "x": [1.0]}), note="Bold: the best.", title=t) for t in ("A", "B"))
    section = Section("S", (one, two))
    assert render_markdown(Report("t", (), (section,)), {}).count("Bold: the best.") == 1
    assert render_html(Report("t", (), (section,)), {}).count("Bold: the best.") == 1
