"""The report's plots: matplotlib figures drawn from the run table, and the one function that
writes them as PNG files.

Every model keeps one colour and one marker across every plot of a report, of its search and of
the leaderboard, chosen by its name (:func:`model_colour`, :func:`model_styles`), and legends sit outside the axes so that no curve hides under them.
"""

from __future__ import annotations

import hashlib
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from topicbench.core.io import replaced_atomically
from topicbench.core.metrics.stats import MIN_SEEDS_FOR_INTERVAL, seed_interval

logger = logging.getLogger(__name__)

#: Twenty colours told apart on white (matplotlib's tab10, then ten more of other hues or
#: darkness: black, ochre, navy, magenta, teal, salmon, violet, lime, lavender, aqua) and thirteen
#: markers: model i takes colour i mod 20 and marker i mod 13, so 20 models differ in colour and
#: up to 260 in colour or marker.
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#000000", "#a6761d", "#08306b", "#e7298a", "#1b9e77", "#fb9a99", "#6a3d9a", "#b2df8a",
           "#cab2d6", "#80cdc1")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "p", "h", "*", "d")
SEED_LINES = ("-", "--", ":", "-.")
DPI = 110


def _asked_place(model: str, size: int) -> int:
    """The place among ``size`` a model's name asks for: the same in every process and view (a
    hash of the name, not Python's salted ``hash``)."""
    return int.from_bytes(hashlib.sha256(str(model).encode()).digest()[:4], "big") % size


def model_places(models, size: int = len(COLOURS)) -> dict:
    """model -> its place among ``size`` (:data:`COLOURS`, or :data:`MARKERS`): the one its name
    asks for, or, where an earlier name (in name order) took it, the next free one; so the same
    models get the same colours in a report, a search and a leaderboard, whatever their order."""
    places, taken = {}, set()
    for model in sorted(set(map(str, models))):
        place = _asked_place(model, size)
        while place in taken and len(taken) < size:
            place = (place + 1) % size
        places[model] = place
        taken.add(place)
    return places


def model_colour(model: str, models=()) -> str:
    """The colour of ``model`` among ``models`` (those shown beside it), stable by name: every
    view of the same models (the report's plots, the search's, the leaderboard) draws it alike."""
    return COLOURS[model_places([*models, model])[str(model)]]


def model_styles(models) -> dict:
    """model -> {"color", "marker"}, each model's colour fixed by its name (:func:`model_places`),
    so a model looks the same in every plot of a report, of its search and of the leaderboard."""
    colours, markers = model_places(models), model_places(models, len(MARKERS))
    return {model: {"color": COLOURS[colours[str(model)]], "marker": MARKERS[markers[str(model)]]} for model in models}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _legend_outside(figure, axes, title: str | None = None) -> None:
    """One legend for the whole figure, right of the axes, each label once."""
    handles = {}
    for axis in np.ravel(axes):
        for handle, label in zip(*axis.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    if handles:
        figure.legend(handles.values(), handles.keys(), loc="center left", bbox_to_anchor=(1.0, 0.5),
                      fontsize=8, title=title, frameon=False)


def _sizes(columns, metric: str) -> list[str]:
    found = [c for c in columns if str(c).startswith(f"{metric}@") and str(c).split("@")[1].isdigit()]
    return sorted(found, key=lambda c: int(c.split("@")[1]))


def seed_mean_band(values: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Mean over seeds (rows) per column, NaN where a column has no value (a gap), and the
    half-width of its 95% Student-t interval (the band, as the tables' ±: 0 for a deterministic
    model or a column on fewer than 3 seeds); the band None under 3 seeds."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN N: a gap
        mean = np.nanmean(values, axis=0)
    intervals = [seed_interval(column) for column in values.T]
    band = np.array([i.high - i.mean if i.has_interval else 0.0 for i in intervals])
    return mean, band if len(values) >= MIN_SEEDS_FOR_INTERVAL else None


def coherence_curves(done: pd.DataFrame, key: str, styles: dict) -> tuple[list, list]:
    """The N grid of measure ``key`` and, per model of ``styles`` scored under it, (model, style,
    mean over seeds, its 95% t-interval's half-width or None: :func:`seed_mean_band`)."""
    columns = _sizes(done.columns, key)
    curves = []
    for model, style in styles.items():
        values = done.loc[done.model == model, columns].to_numpy(dtype=float)
        if values.size and not np.isnan(values).all():
            curves.append((model, style, *seed_mean_band(values)))
    return [int(c.split("@")[1]) for c in columns], curves


def coherence_figure(runs: pd.DataFrame, styles: dict, *, corpus: str, measures):
    """One panel per measure of ``measures`` ((key, title) pairs): the mean over seeds against N,
    a line per model with its 95% Student-t interval over seeds as a band. An N a model was not scored at (its topics are shorter)
    is a gap, so BERTopic's short topics show as the points they have."""
    done = runs[(runs.status == "FINISHED") & (runs.corpus == corpus)]
    panels = [(key, title) for key, title in measures if _sizes(done.columns, key)]
    if not panels or done.empty:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(panels), figsize=(3.3 * len(panels), 3.0), squeeze=False)
    for axis, (key, title) in zip(axes[0], panels):
        sizes, found = coherence_curves(done, key, styles)
        curves = {}
        for model, style, mean, sd in found:
            axis.plot(sizes, mean, label=model, linewidth=1.3, markersize=4, **style)
            if sd is not None:
                axis.fill_between(sizes, mean - sd, mean + sd, alpha=0.12, color=style["color"])
            curves[model] = mean
        _clip_outliers(axis, curves, styles)
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("top-N words", fontsize=8)
        axis.set_ylabel(f"{title} (mean over seeds)", fontsize=8)
        axis.set_xticks(sizes)
        axis.tick_params(labelsize=7)
        axis.grid(alpha=0.3)
    figure.suptitle(f"Coherence against N — {corpus}", fontsize=11)
    figure.tight_layout()
    _legend_outside(figure, axes, "model")
    return figure


#: A model is an outlier of a panel when its curve's mean lies this many interquartile ranges of
#: the models' means beyond the quartiles (FASTopic's UMass near -14 against the others' -1 to -4).
OUTLIER_IQRS = 3.0
#: ... and when drawing it would make the axis this many times as tall as the others need (one
#: model next to the others is not clipped, however small their interquartile range).
OUTLIER_AXIS_GAIN = 2.0


def outlier_models(centres: dict) -> list:
    """The models whose value lies far outside the others' (:data:`OUTLIER_IQRS`); none with
    fewer than four models, where quartiles say little."""
    values = np.array([v for v in centres.values() if np.isfinite(v)])
    if len(values) < 4:
        return []
    low, high = np.percentile(values, [25, 75])
    spread = max(high - low, 1e-12)
    return [m for m, v in centres.items() if np.isfinite(v) and not low - OUTLIER_IQRS * spread <= v <= high + OUTLIER_IQRS * spread]


@dataclass(frozen=True)
class ClippedAxis:
    """A panel's y-axis fitted to the models that are not outliers: its ``limits`` (with a
    margin) and each outlier's ``(lowest, highest)`` value, in ``below`` or ``above`` the axis."""

    limits: tuple
    below: dict
    above: dict


def clipped_axis(curves: dict) -> ClippedAxis | None:
    """The axis to draw ``curves`` (model -> values) on when outliers (:func:`outlier_models` of
    the curves' means) would squash the others (:data:`OUTLIER_AXIS_GAIN`); None to draw all."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        centres = {model: float(np.nanmean(curve)) for model, curve in curves.items()}
        extents = {model: (float(np.nanmin(curve)), float(np.nanmax(curve))) for model, curve in curves.items()}
    outliers = outlier_models(centres)
    inner = [extents[model] for model in curves if model not in outliers]
    if not outliers or not inner:
        return None
    low, high = np.nanmin([e[0] for e in inner]), np.nanmax([e[1] for e in inner])
    every = np.nanmax([e[1] for e in extents.values()]) - np.nanmin([e[0] for e in extents.values()])
    if every <= OUTLIER_AXIS_GAIN * max(high - low, 1e-12):
        return None
    margin = 0.12 * max(high - low, 1e-9)
    limits = (float(low - margin), float(high + margin))
    off = {m: extents[m] for m in outliers if extents[m][0] < limits[0] or extents[m][1] > limits[1]}
    if not off:
        return None
    return ClippedAxis(limits, {m: e for m, e in off.items() if centres[m] < low},
                       {m: e for m, e in off.items() if centres[m] >= low})


def _clip_outliers(axis, curves: dict, styles: dict) -> None:
    """Fit the y-axis to the models that are not outliers, and name each outlier at the edge it
    lies beyond, with its range of values, in its colour (one model far off would squash the others)."""
    clipped = clipped_axis(curves)
    if clipped is None:
        return
    axis.set_ylim(*clipped.limits)
    for edge, models in ((0.02, clipped.below), (0.98, clipped.above)):
        for i, (model, (lowest, highest)) in enumerate(models.items()):
            arrow = "↓" if edge < 0.5 else "↑"
            axis.annotate(f"{arrow} {model}: {lowest:.3g} to {highest:.3g}", xy=(0.03, edge + (0.07 * i if edge < 0.5 else -0.07 * i)),
                          xycoords="axes fraction", va="bottom" if edge < 0.5 else "top", fontsize=7,
                          color=styles[model]["color"])


#: Characters per line of a training-loss axis title: a panel is about 25 characters tall, so a
#: longer name ("DSR reconstruction + both transport costs") runs past it into the next panel.
LOSS_TITLE_WIDTH = 24


def loss_value_lines(kind: str) -> list[str]:
    """The y-axis title of a loss curve as lines: the loss's name without its cadence, wrapped to
    :data:`LOSS_TITLE_WIDTH` characters (the PNG and the page wrap alike)."""
    import textwrap

    return textwrap.wrap(kind.split(" (")[0] or "training loss", LOSS_TITLE_WIDTH)


def _loss_axis_label(kind: str) -> str:
    return "Gibbs sweep" if "Gibbs" in kind else "pass" if "pass" in kind else "epoch"


def training_runs(runs: pd.DataFrame, styles: dict, corpus: str) -> tuple[pd.DataFrame | None, list]:
    """The finished runs on ``corpus`` with a training curve, and their models in ``styles``'
    order (none: nothing to draw)."""
    if "training_curve" not in runs:
        return None, []
    done = runs[(runs.status == "FINISHED") & (runs.corpus == corpus)].dropna(subset=["training_curve"])
    return done, [model for model in styles if model in set(done.model)]


def timed_runs(runs: pd.DataFrame, styles: dict, corpora) -> tuple[pd.DataFrame | None, list, list]:
    """The finished runs with a fit time, their models in ``styles``' order and their corpora in
    ``corpora``'s (no models: nothing to draw)."""
    done = runs[runs.status == "FINISHED"]
    if "fit_seconds" not in done or done.fit_seconds.isna().all():
        return None, [], []
    done = done.dropna(subset=["fit_seconds"])
    return (done, [model for model in styles if model in set(done.model)],
            [corpus for corpus in corpora if corpus in set(done.corpus)])


def training_figure(runs: pd.DataFrame, styles: dict, *, corpus: str):
    """One panel per iterative model on ``corpus``: its training loss against epochs (or
    iterations), in the model's colour, one line style per seed, so convergence is seen rather
    than assumed."""
    done, models = training_runs(runs, styles, corpus)
    if not models:
        return None
    plt = _pyplot()
    columns = min(4, len(models))
    rows = -(-len(models) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(3.3 * columns, 2.6 * rows), squeeze=False)
    seeds = sorted(done.seed.unique())
    for axis, model in zip(axes.flat, models):
        group = done[done.model == model]
        for seed, (steps, losses) in zip(group.seed, group.training_curve):
            axis.plot(steps, losses, color=styles[model]["color"], linewidth=1.1,
                      linestyle=SEED_LINES[seeds.index(seed) % len(SEED_LINES)])
        axis.set_title(model, fontsize=9, color=styles[model]["color"])
        axis.set_xlabel(_loss_axis_label(group.training_loss_kind.iloc[0] or ""), fontsize=8)
        axis.set_ylabel("\n".join(loss_value_lines(group.training_loss_kind.iloc[0] or "")), fontsize=7)
        axis.grid(alpha=0.3)
        axis.tick_params(labelsize=7)
    for axis in list(axes.flat)[len(models):]:
        axis.set_visible(False)
    figure.suptitle(f"Training loss — {corpus}", fontsize=11)
    figure.tight_layout()
    _seed_legend(figure, seeds)
    return figure


def _seed_legend(figure, seeds) -> None:
    """The line style of each seed, in grey: the colour belongs to the model (the panel's title)."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color="#555", linestyle=SEED_LINES[i % len(SEED_LINES)]) for i in range(len(seeds))]
    figure.legend(handles, [f"seed {seed}" for seed in seeds], loc="center left", bbox_to_anchor=(1.0, 0.5),
                  fontsize=8, frameon=False)


#: The fit-time axis's ticks over a wide range (seconds: 1 ms … 10 h), those within the data's range shown.
TIME_TICKS = (1e-3, 1e-2, 0.1, 1.0, 10.0, 60.0, 600.0, 3600.0, 36000.0)
#: Its ticks over a narrow range: durations a reader says (1-2-5 within a unit, then 30 s, 30 min),
#: never 100 s shown as "1.67 min".
ROUND_DURATIONS = (*(ms * 1e-3 for ms in (1, 2, 5, 10, 20, 50, 100, 200, 500)), 1.0, 2.0, 5.0, 10.0, 20.0, 30.0,
                   *(60.0 * m for m in (1, 2, 5, 10, 20, 30)), *(3600.0 * h for h in (1, 2, 5, 10, 24)))


def fit_time_figure(runs: pd.DataFrame, styles: dict, *, corpora):
    """A dot plot of fit time: a panel per corpus (in the order of ``corpora``), a row per model,
    its mean over seeds as a large marker in its colour and each seed as a small one, on a log axis
    labelled in seconds, minutes and hours (fits range from milliseconds to hours)."""
    done, models, corpora = timed_runs(runs, styles, corpora)
    if not models:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(corpora), figsize=(3.4 * len(corpora) + 1.6, 0.9 + 0.26 * len(models)),
                                sharey=True, sharex=True, squeeze=False)
    rows = {model: len(models) - 1 - i for i, model in enumerate(models)}  # the config's first model on top
    for axis, corpus in zip(axes[0], corpora):
        here = done[done.corpus == corpus]
        for model, group in here.groupby("model"):
            if model not in rows:
                continue
            style = styles[model]
            axis.scatter(group.fit_seconds, [rows[model]] * len(group), s=10, alpha=0.35, color=style["color"],
                         marker=style["marker"], linewidths=0)
            axis.scatter([group.fit_seconds.mean()], [rows[model]], s=42, color=style["color"], marker=style["marker"],
                         edgecolors="white", linewidths=0.6, zorder=3)
        axis.set_title(corpus, fontsize=9)
        axis.grid(alpha=0.3, axis="x")
        axis.set_xlabel("fit time (log scale)", fontsize=8)
        axis.tick_params(labelsize=7)
    _time_axis(axes[0][0], done.fit_seconds)
    axes[0][0].set_yticks(list(rows.values()), list(rows))
    axes[0][0].set_ylim(-0.7, len(models) - 0.3)
    figure.tight_layout()
    return figure


def _time_axis(axis, seconds: pd.Series) -> None:
    """A log x-axis over ``seconds`` ticked at round durations: 1 s, 10 s, 1 min, 10 min, … over a
    wide range, 1-2-5 steps (1 s, 2 s, 5 s) over a narrow one."""
    low, high, ticks = time_ticks(seconds)
    axis.set_xscale("log")
    axis.set_xlim(low, high)
    axis.set_xticks(ticks, [duration_label(value) for value in ticks])
    axis.minorticks_off()


def time_ticks(seconds: pd.Series) -> tuple[float, float, list]:
    """The limits of a log time axis over ``seconds`` and its ticks at round durations
    (:data:`TIME_TICKS` over a wide range, :data:`ROUND_DURATIONS` over a narrow one)."""
    positive = seconds[seconds > 0]
    low, high = float(positive.min()) / 1.8, float(positive.max()) * 1.8
    ticks = [value for value in TIME_TICKS if low <= value <= high]
    if len(ticks) < 3:
        ticks = [value for value in ROUND_DURATIONS if low <= value <= high]
    return low, high, ticks


def duration_label(seconds: float) -> str:
    """A round duration as a reader says it: 0.01 -> "10 ms", 60 -> "1 min", 7200 -> "2 h"."""
    for limit, unit, size in ((1.0, "ms", 1e-3), (60.0, "s", 1.0), (3600.0, "min", 60.0), (np.inf, "h", 3600.0)):
        if seconds < limit:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:g} s"


def write_plots(plots, runs: pd.DataFrame, folder, models, cache=None, drawing=None) -> dict:
    """Draw every plot request (see ``parts.Plot``) and write it as PNG into ``folder``;
    returns file name -> path for those that had something to draw. ``models`` fixes each model's
    style for all of them. With a :class:`~.plot_cache.PlotCache`, a plot drawn before from the
    same request and runs is copied from it, not drawn (matplotlib is imported only to draw).
    ``drawing``: a :class:`~.drawing.PngDrawing` of these plots already under way (its workers
    drew while the caller did other work, as :func:`~.write.write_report` does); else each plot
    is drawn here, in turn."""
    from .drawing import PngDrawing

    folder = Path(folder)
    plots = list(plots)
    owned = drawing is None
    if owned:
        drawing = PngDrawing(plots, runs, model_styles(models), cache, drawn_png=drawn_png,
                             parallel=False)
    written = {}
    try:
        for number, plot in enumerate(plots):
            content = drawing.content(number)
            if not content:  # nothing to draw (kept as such: an empty entry)
                continue
            path = folder / plot.file_name
            with replaced_atomically(path) as temporary:
                Path(temporary).write_bytes(content)
            written[plot.file_name] = path
    finally:
        if owned:
            drawing.close()
    return written


def drawn_png(plot, runs: pd.DataFrame, styles: dict) -> bytes:
    """The plot drawn as PNG bytes; empty when it has nothing to draw."""
    import io

    plt = _pyplot()  # the Agg backend, before any drawing function imports pyplot
    figure = plot.draw(runs, styles)
    if figure is None:
        return b""
    buffer = io.BytesIO()
    try:
        # "tight" keeps the legends outside the axes inside the image
        figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    finally:
        plt.close(figure)
    return buffer.getvalue()
