"""The test behind bold cells is stated once per section, under its last tested table, not under
every table; a section whose tables mark no best does not state it."""

from __future__ import annotations

import pandas as pd

from topicbench.core.metrics.stats import BEST_RULE
from topicbench.tasks.report.emphasis import with_best_rule
from topicbench.tasks.report.parts import Plot, Report, Section
from topicbench.tasks.report.render import render_html, render_markdown
from topicbench.tasks.report.tables import ReportTable, estimate, metric_pivot


def _table(title: str, tested: bool = True) -> ReportTable:
    cells = pd.DataFrame({"model": ["a", "b"], "c": [estimate([0.30, 0.31, 0.32]), estimate([0.10, 0.11, 0.12])]})
    return ReportTable(cells, frozenset({(0, "c")}) if tested else frozenset(), title=title, tested=tested)


def test_the_rule_is_said_once_under_the_last_tested_table():
    plot = Plot("p.png", "a plot", None)
    section = with_best_rule(Section("Scores", ("intro", _table("A"), _table("B"), _table("C", tested=False), plot)))
    assert section.blocks.count(BEST_RULE) == 1 and section.blocks.index(BEST_RULE) == 3  # after B, before C
    assert with_best_rule(section) == section  # said once, however often it is applied
    untested = Section("Fit time", ("words", _table("seconds", tested=False)))
    assert with_best_rule(untested) == untested
    report = Report("t", (), (section, with_best_rule(Section("More", (_table("D"), _table("E"))))))
    assert render_markdown(report, {}).count(BEST_RULE) == 2  # once per section, not once per table
    assert render_html(report, {}).count("Holm-corrected for the comparisons") == 2


def test_a_metric_table_is_tested_and_a_plain_column_is_not():
    runs = pd.DataFrame([{"status": "FINISHED", "corpus": "c", "model": model, "seed": seed,
                          "npmi@10": base + 0.01 * seed, "fit_seconds": 1.0 + seed}
                         for model, base in (("a", 0.3), ("b", 0.1)) for seed in range(3)])
    npmi = metric_pivot(runs, "npmi@10", models=["a", "b"], corpora=["c"])
    assert npmi.tested and npmi.best == {(0, "c")} and "Holm-adjusted" in npmi.tips[(1, "c")]
    assert BEST_RULE not in npmi.note  # the rule is the section's, not each table's
    seconds = metric_pivot(runs, "fit_seconds", models=["a", "b"], corpora=["c"])
    assert not seconds.tested and seconds.best == frozenset() and seconds.tips == {}
