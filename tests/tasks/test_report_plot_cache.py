"""The report's plot cache: an unchanged report copies its plots (the same bytes), a changed run
table or request draws again, and a drawing with data of its own is never kept."""

from __future__ import annotations

from functools import partial

import pandas as pd
import pytest

from topicbench.tasks.report import interactive, plots
from topicbench.tasks.report.plot_cache import CACHE_FOLDER, PlotCache, describe_drawing
from topicbench.tasks.report.parts import Plot

MODELS = ("elda", "gensim_lda")
#: Drawings made by the counting functions below, by kind.
DRAWN = {"png": 0, "html": 0}


def counted_fit_time(runs, styles, *, corpora):
    DRAWN["png"] += 1
    return plots.fit_time_figure(runs, styles, corpora=corpora)


def counted_fit_time_interactive(runs, styles, *, corpora):
    DRAWN["html"] += 1
    return interactive.fit_time_figure(runs, styles, corpora=corpora)


def run_table(fit_seconds=(1.5, 3.0, 2.0, 4.5)) -> pd.DataFrame:
    return pd.DataFrame({"corpus": "toy", "model": ["elda", "elda", "gensim_lda", "gensim_lda"], "seed": [0, 1, 0, 1],
                         "status": "FINISHED", "fit_seconds": list(fit_seconds)})


def fit_time_plot() -> Plot:
    return Plot("fit_time.png", "fit time", partial(counted_fit_time, corpora=("toy",)),
                partial(counted_fit_time_interactive, corpora=("toy",)))


def write(folder, runs, plot, cached=True):
    cache = PlotCache(folder, runs, MODELS) if cached else None
    images = plots.write_plots([plot], runs, folder, MODELS, cache)
    figures = interactive.interactive_plots([plot], runs, MODELS, cache)
    if cache is not None:
        cache.prune()
    return images, figures


@pytest.fixture(autouse=True)
def zero_counts():
    DRAWN.update(png=0, html=0)


def test_an_unchanged_report_redraws_nothing_and_writes_the_same_bytes(tmp_path):
    runs = run_table()
    uncached_images, uncached_figures = write(tmp_path / "plain", runs, fit_time_plot(), cached=False)
    first_images, first_figures = write(tmp_path / "report", runs, fit_time_plot())
    assert DRAWN == {"png": 2, "html": 2}
    (tmp_path / "report" / "fit_time.png").unlink()  # a file removed since is written again
    again_images, again_figures = write(tmp_path / "report", runs, fit_time_plot())
    assert DRAWN == {"png": 2, "html": 2}  # nothing drawn the second time
    png = (tmp_path / "report" / "fit_time.png").read_bytes()
    assert png == uncached_images["fit_time.png"].read_bytes() and png.startswith(b"\x89PNG")
    assert again_figures == first_figures == uncached_figures
    assert list(again_images) == ["fit_time.png"]


def test_a_changed_run_table_or_request_draws_again_and_prunes_the_old(tmp_path):
    write(tmp_path, run_table(), fit_time_plot())
    write(tmp_path, run_table(fit_seconds=(1.5, 3.0, 2.0, 9.0)), fit_time_plot())
    assert DRAWN == {"png": 2, "html": 2}
    other_request = Plot("fit_time.png", "fit time", partial(counted_fit_time, corpora=("toy", "other")),
                         partial(counted_fit_time_interactive, corpora=("toy", "other")))
    write(tmp_path, run_table(fit_seconds=(1.5, 3.0, 2.0, 9.0)), other_request)
    assert DRAWN == {"png": 3, "html": 3}
    kept = sorted(path.suffix for path in (tmp_path / CACHE_FOLDER).iterdir())
    assert kept == [".html", ".png"]  # the latest report's two drawings only


def test_a_drawing_with_data_of_its_own_is_drawn_every_time(tmp_path):
    seconds = {"value": 1.0}
    closure = Plot("own.png", "own", lambda runs, styles: counted_fit_time(runs.assign(fit_seconds=seconds["value"]),
                                                                           styles, corpora=("toy",)))
    assert describe_drawing(closure.draw) is None
    for _ in range(2):
        write(tmp_path, run_table(), closure)
    assert DRAWN["png"] == 2
    assert describe_drawing(partial(counted_fit_time, corpora=(object(),))) is None  # an argument without content
    assert describe_drawing(partial(counted_fit_time, corpora=("toy",))) is not None


def test_a_plot_with_nothing_to_draw_is_kept_as_such(tmp_path):
    runs = run_table().assign(status="FAILED")
    for _ in range(2):
        images, figures = write(tmp_path, runs, fit_time_plot())
        assert images == {} and figures == {}
    assert DRAWN == {"png": 1, "html": 1}


def pid_marked_fit_time(runs, styles, *, corpora, folder):
    """The fit-time figure, leaving a file named by the process that drew it."""
    import os
    from pathlib import Path

    (Path(folder) / f"drawn-by-{os.getpid()}").touch()
    return plots.fit_time_figure(runs, styles, corpora=corpora)


def test_a_reports_pngs_drawn_by_worker_processes_are_the_bytes_drawn_in_turn(tmp_path, monkeypatch):
    import os

    from topicbench.tasks.report import drawing

    monkeypatch.setattr(drawing, "FIGURES_PER_WORKER", 1)  # two figures, two workers where there are two cores
    marks = tmp_path / "marks"
    marks.mkdir()
    requests = [Plot(f"fit_time_{number}.png", "fit time", partial(pid_marked_fit_time, corpora=("toy",), folder=str(marks)))
                for number in range(2)]
    nothing = Plot("nothing.png", "no runs of this corpus",
                   partial(plots.coherence_figure, corpus="other", measures=(("npmi", "NPMI"),)))
    runs = run_table()
    in_turn = plots.write_plots([*requests, nothing], runs, tmp_path / "in-turn", MODELS)
    assert [path.name for path in marks.iterdir()] == [f"drawn-by-{os.getpid()}"]  # both drawn here
    for path in marks.iterdir():
        path.unlink()
    cache = PlotCache(tmp_path / "parallel", runs, MODELS)
    with drawing.PngDrawing([*requests, nothing], runs, plots.model_styles(MODELS), cache,
                            drawn_png=plots.drawn_png) as under_way:
        parallel = plots.write_plots([*requests, nothing], runs, tmp_path / "parallel", MODELS, cache, under_way)
    assert list(parallel) == list(in_turn) == ["fit_time_0.png", "fit_time_1.png"]  # nothing drawn: no file
    for name in in_turn:
        assert parallel[name].read_bytes() == in_turn[name].read_bytes()
    drawers = {path.name for path in marks.iterdir()}
    if drawing._forking():  # drawn by forked workers, none by this process
        assert drawers and f"drawn-by-{os.getpid()}" not in drawers
    assert len(list((tmp_path / "parallel" / CACHE_FOLDER).iterdir())) == 3  # each kept, the empty one too


def test_a_figure_whose_worker_failed_is_drawn_here_and_its_own_error_raised(tmp_path):
    from topicbench.tasks.report import drawing

    broken = Plot("broken.png", "fails", partial(plots.fit_time_figure, corpora=("toy",), unknown_argument=1))
    with drawing.PngDrawing([broken], run_table(), plots.model_styles(MODELS), drawn_png=plots.drawn_png) as under_way:
        with pytest.raises(TypeError, match="unknown_argument"):
            under_way.content(0)


def test_workers_one_per_four_figures_at_most_the_cores():
    from topicbench.tasks.report.drawing import worker_count

    assert [worker_count(n, cores=2) for n in (0, 1, 4, 5, 7, 30)] == [0, 1, 1, 2, 2, 2]
    assert worker_count(9, cores=8) == 3
