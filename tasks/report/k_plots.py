"""The K section's figures: each score against K with every model's runs as points, and how a
model's mean over its k most prevalent topics moves with k. Drawn with the helpers of
:mod:`~topicbench.tasks.report.plots` (one colour and marker per model, the legend outside)."""

from __future__ import annotations

from .k_curves import k_points
from .plots import _legend_outside, _pyplot

#: K spanning more than this factor is drawn on a log axis (E-LDA's thousands beside K = 20).
LOG_K_FACTOR = 10


def _k_axis(axis, ks) -> None:
    ks = [k for k in ks if k > 0]
    if ks and max(ks) > LOG_K_FACTOR * min(ks):
        axis.set_xscale("log")


def metric_against_k_figure(runs, styles: dict, *, corpus: str, keys):
    """One panel per score of ``keys`` ((score key, title) pairs): each finished run on ``corpus``
    a point (K, score) in its model's style, and a grey line through the per-model means of the
    variants of one model (E-LDA's kappa or generator grid, a K grid), ordered by K."""
    panels = [(key, title, points) for key, title in keys
              if not (points := k_points(runs[runs.corpus == corpus], key)).empty]
    if not panels:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 3.1), squeeze=False)
    for axis, (key, title, points) in zip(axes[0], panels):
        means = points.groupby(["model_class", "model"], sort=False)[["k", "value"]].mean().reset_index()
        for _, variants in means.groupby("model_class", sort=False):
            if len(variants) > 1:
                ordered = variants.sort_values("k")
                axis.plot(ordered.k, ordered.value, color="#999999", linewidth=0.8, zorder=1)
        for model, style in styles.items():
            mine = points[points.model == model]
            if not mine.empty:
                axis.scatter(mine.k, mine.value, label=model, s=18, color=style["color"], marker=style["marker"],
                             zorder=2)
        _k_axis(axis, points.k.tolist())
        _label_axis(axis, title, "K (topics used)", f"{title} (one point per run)")
    figure.suptitle(f"Scores against K — {corpus}", fontsize=11)
    figure.tight_layout()
    _legend_outside(figure, axes, "model")
    return figure


def _label_axis(axis, title: str, xlabel: str, ylabel: str) -> None:
    """One panel's title, axis labels and grid, the same in both figures."""
    axis.set_title(title, fontsize=10)
    axis.set_xlabel(xlabel, fontsize=8)
    axis.set_ylabel(ylabel, fontsize=8)
    axis.tick_params(labelsize=7)
    axis.grid(alpha=0.3)


def top_k_figure(runs, styles: dict, *, corpus: str, panels):
    """One panel per ((score key, title), curves) of ``panels``, ``curves`` from
    :func:`~topicbench.tasks.report.k_curves.top_k_curves`: a line per model of its mean over the k
    most prevalent topics against k; the line's end (k = K) is the model's plain mean."""
    panels = [(title, curves) for (_, title), curves in panels if curves]
    if not panels:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 3.1), squeeze=False)
    for axis, (title, curves) in zip(axes[0], panels):
        for model, ks, means in curves:
            style = styles.get(model, {"color": "#555555", "marker": "o"})
            axis.plot(ks, means, label=model, color=style["color"], linewidth=1.2)
            axis.plot(ks[-1:], means[-1:], color=style["color"], marker=style["marker"], markersize=5)
        _k_axis(axis, [k for _, ks, _ in curves for k in (ks[0], ks[-1])])
        if axis.get_xscale() == "linear":  # k counts topics: whole ticks
            axis.xaxis.get_major_locator().set_params(integer=True)
        _label_axis(axis, title, "k most prevalent topics", f"{title}: mean over them")
    figure.suptitle(f"Mean over the k most prevalent topics — {corpus}", fontsize=11)
    figure.tight_layout()
    _legend_outside(figure, axes, "model")
    return figure

