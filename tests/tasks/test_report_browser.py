"""The rendered report read in headless chromium at 1400 px, from tables and runs made here (no
benchmark, no server): ranks shown in the cells, a rank scale a deuteranope reads, and plot titles
that fit. ``tests/flows/test_report.py`` and ``tests/flows/test_search.py`` check real reports."""

from __future__ import annotations

import pandas as pd
import pytest

from topicbench.tasks.report.interactive import figure_html, training_figure
from topicbench.tasks.report.plots import model_styles
from topicbench.tasks.report.render import render_html
from topicbench.tasks.report.parts import Plot, Report, Section
from topicbench.tasks.report.tables import Estimate, ReportTable

from report_browser import CHROMIUM, clipped_titles, open_page, rank_problems

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium: scripts/setup.sh --browser installs it (Debian package)")

#: Each baseline's loss, as its fit records it, and a typical size: the longest names and the
#: widest tick labels of the training plots.
LOSSES = {"gensim_lda": ("negative variational bound per word (every pass)", 8.0),
          "gibbs_lda": ("negative log-likelihood per word (every 10 Gibbs sweeps)", 7.5),
          "prodlda": ("negative ELBO per training document", 123456.0),
          "fastopic": ("DSR reconstruction + both transport costs (full batch)", 1234.5),
          "etm": ("negative ELBO per training document", 2345.6)}


def _summary() -> ReportTable:
    models = ["elda", "gensim_lda", "gibbs_lda", "prodlda"]
    columns = {"NPMI@10 · a": [0.12, 0.08, 0.05, -0.02], "UMass@10 · a": [-1.2, -1.9, -2.4, -3.0]}
    cells = pd.DataFrame({"model": models, **{c: [Estimate(v, 0.01, 3) for v in vs] for c, vs in columns.items()}})
    ranks = {(row, column): row + 1 for column in columns for row in range(len(models))}
    return ReportTable(cells, frozenset((0, column) for column in columns), note="Each cell: its rank.", ranks=ranks,
                       spread=False, column_groups={c: tuple(c.split(" · ")) for c in columns})


def test_the_summary_shows_every_rank_and_a_scale_a_deuteranope_reads(tmp_path):
    page_path = tmp_path / "report.html"
    page_path.write_text(render_html(Report("t", (), (Section("Summary", (_summary(),), opening=True),)), {}))
    with open_page(page_path) as (page, errors):
        ranked, problems = rank_problems(page)
    assert ranked == 8 and problems == [] and errors == []


def test_the_training_plots_axis_titles_fit_their_panels(tmp_path):
    """Five models with the baselines' loss names: each y-axis title, wrapped, fits beside its
    panel (unwrapped, FASTopic's ran past its axis at 1400 px, and three ran over the next panel
    at 800 px)."""
    runs = pd.DataFrame([{"status": "FINISHED", "corpus": "toy", "model": model, "seed": seed,
                          "training_curve": (list(range(0, 50, 10)), [size * (1 + 0.1 / (step + 1)) for step in range(5)]),
                          "training_loss_kind": kind}
                         for model, (kind, size) in LOSSES.items() for seed in (0, 1)])
    figure = figure_html(training_figure(runs, model_styles(list(LOSSES)), corpus="toy"), "plot-0")
    page_path = tmp_path / "report.html"
    page_path.write_text(render_html(Report("t", (), (Section("Training", (Plot("training.png", "loss", None),)),)),
                                     {}, {"training.png": figure}))
    for width in (1400, 800):
        with open_page(page_path, width) as (page, errors):
            assert clipped_titles(page) == [] and errors == [], width
