"""The report's plots: matplotlib figures drawn from the run table, and the one function that
writes them as PNG files.

Every model keeps one colour and one marker across every plot of a report
(:func:`model_styles`), and legends sit outside the axes so that no curve hides under them.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from topicbench.core.io import replaced_atomically

logger = logging.getLogger(__name__)

#: Twelve well-separated colours (matplotlib's tab10, black, ochre) and eleven markers: model i
#: takes colour i mod 12 and marker i mod 11, so up to 132 models differ in colour or marker.
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#000000", "#a6761d")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "p", "h")
SEED_LINES = ("-", "--", ":", "-.")
DPI = 110


def model_styles(models) -> dict:
    """model -> {"color", "marker"}, fixed by the model's place in ``models`` (the config's order),
    so a model looks the same in every plot of a report."""
    return {model: {"color": COLOURS[i % len(COLOURS)], "marker": MARKERS[i % len(MARKERS)]}
            for i, model in enumerate(models)}


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


def coherence_figure(runs: pd.DataFrame, styles: dict, *, corpus: str, measures):
    """One panel per measure of ``measures`` ((key, title) pairs): the mean over seeds against N,
    a line per model with a band of ± sd. An N a model was not scored at (its topics are shorter)
    is a gap, so BERTopic's short topics show as the points they have."""
    done = runs[(runs.status == "FINISHED") & (runs.corpus == corpus)]
    panels = [(key, title) for key, title in measures if _sizes(done.columns, key)]
    if not panels or done.empty:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(panels), figsize=(3.3 * len(panels), 3.0), squeeze=False)
    for axis, (key, title) in zip(axes[0], panels):
        columns = _sizes(done.columns, key)
        sizes = [int(c.split("@")[1]) for c in columns]
        for model, style in styles.items():
            values = done.loc[done.model == model, columns].to_numpy(dtype=float)
            if values.size == 0 or np.isnan(values).all():
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN N: a gap
                mean = np.nanmean(values, axis=0)
                sd = np.nanstd(values, axis=0, ddof=1) if len(values) > 1 else None
            axis.plot(sizes, mean, label=model, linewidth=1.3, markersize=4, **style)
            if sd is not None:
                axis.fill_between(sizes, mean - sd, mean + sd, alpha=0.12, color=style["color"])
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("top-N words", fontsize=8)
        axis.set_xticks(sizes)
        axis.tick_params(labelsize=7)
        axis.grid(alpha=0.3)
    figure.suptitle(f"Coherence against N — {corpus}", fontsize=11)
    figure.tight_layout()
    _legend_outside(figure, axes, "model")
    return figure


def _loss_axis_label(kind: str) -> str:
    return "Gibbs sweep" if "Gibbs" in kind else "pass" if "pass" in kind else "epoch"


def training_figure(runs: pd.DataFrame, styles: dict, *, corpus: str):
    """One panel per iterative model on ``corpus``: its training loss against epochs (or
    iterations), in the model's colour, one line style per seed, so convergence is seen rather
    than assumed."""
    if "training_curve" not in runs:
        return None
    done = runs[(runs.status == "FINISHED") & (runs.corpus == corpus)].dropna(subset=["training_curve"])
    models = [model for model in styles if model in set(done.model)]
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


def fit_time_figure(runs: pd.DataFrame, styles: dict, *, corpora):
    """Mean fit seconds per corpus (in the order of ``corpora``), a bar per model in its colour, on
    a log scale (fits range from seconds to hours)."""
    done = runs[runs.status == "FINISHED"]
    if "fit_seconds" not in done or done.fit_seconds.isna().all():
        return None
    means = done.groupby(["corpus", "model"]).fit_seconds.mean()
    models = [model for model in styles if model in set(m for _, m in means.index)]
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(max(5.0, 1.0 + 0.28 * len(models) * len(corpora)), 3.2))
    width = 0.8 / len(models)
    for i, model in enumerate(models):
        heights = [means.get((corpus, model), np.nan) for corpus in corpora]
        positions = np.arange(len(corpora)) - 0.4 + (i + 0.5) * width
        axis.bar(positions, heights, width, label=model, color=styles[model]["color"])
    axis.set_xticks(np.arange(len(corpora)), corpora)
    axis.set_yscale("log")
    axis.set_ylabel("mean fit seconds (log scale)", fontsize=8)
    axis.grid(alpha=0.3, axis="y")
    figure.tight_layout()
    _legend_outside(figure, [axis], "model")
    return figure


def write_plots(plots, runs: pd.DataFrame, folder, models) -> dict:
    """Draw every plot request (see ``report_sections.Plot``) and write it as PNG into ``folder``;
    returns file name -> path for those that had something to draw. ``models`` fixes each model's
    style for all of them."""
    plt = _pyplot()
    folder = Path(folder)
    styles = model_styles(models)
    written = {}
    for plot in plots:
        figure = plot.draw(runs, styles)
        if figure is None:
            continue
        path = folder / plot.file_name
        try:
            with replaced_atomically(path) as temporary:
                # "tight" keeps the legends outside the axes inside the image
                figure.savefig(temporary, format="png", dpi=DPI, bbox_inches="tight")
        finally:
            plt.close(figure)
        written[plot.file_name] = path
    return written
