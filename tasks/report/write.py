"""The report's files: its plots (PNG), ``report.md`` and the self-contained ``report.html``,
each written whole or not at all."""

from __future__ import annotations

import shlex
from pathlib import Path

from topicbench.core.io import OutputPathError, make_output_folder, write_text_atomically
from topicbench.core.validation import InputError

from .interactive import interactive_plots
from .plot_cache import PlotCache
from .drawing import PngDrawing
from .plots import drawn_png, model_styles, write_plots
from .render import render_html, render_markdown
from .parts import Report, ReportData
from .tables import failed_runs, interrupted_runs


class ReportWriteError(InputError):
    """The report's folder took no files (a full disk, a read-only mount): the runs are safe in
    the tracking store, and the message says how to write the report elsewhere."""


def write_report(report: Report, data: ReportData, folder) -> dict:
    """Write the report's plots (PNG), ``report.md`` and the self-contained ``report.html`` (its
    plots interactive) into ``folder``; returns their paths and the number of finished, failed and
    interrupted runs.

    Every file is written whole or not at all (a full disk leaves no empty ``report.md``); a
    failed write raises :class:`ReportWriteError`."""
    folder = Path(folder)
    try:
        make_output_folder(folder, "the report folder")
        cache = PlotCache(folder, data.runs, data.models)  # an unchanged plot is copied, not drawn
        # the PNGs are drawn by worker processes while this one makes the interactive figures
        with PngDrawing(report.plots(), data.runs, model_styles(data.models), cache,
                        drawn_png=drawn_png) as drawing:
            figures = interactive_plots(report.plots(), data.runs, data.models, cache)
            images = write_plots(report.plots(), data.runs, folder, data.models, cache, drawing)
        write_text_atomically(folder / "report.md", render_markdown(report, images))
        write_text_atomically(folder / "report.html", render_html(report, images, figures))
        cache.prune()
    except (OSError, OutputPathError) as error:  # the folder became something else while the runs ran
        reason = getattr(error, "strerror", None) or error
        raise ReportWriteError(
            f"cannot write the report into {folder}: {reason}; the runs are kept in the "
            f"tracking store: write the report elsewhere with `topicbench report --experiment {shlex.quote(data.experiment)} "
            f"--out OTHER_FOLDER`"
        ) from None
    files = [str(folder / "report.md"), str(folder / "report.html"), *map(str, images.values())]
    return {"markdown": str(folder / "report.md"), "html": str(folder / "report.html"), "files": files,
            "finished": int(len(data.finished)), "failed": len(failed_runs(data.runs)),
            "interrupted": len(interrupted_runs(data.runs))}
