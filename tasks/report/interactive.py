"""The HTML report's interactive plots: Plotly figures of the same data as the PNG plots
(:mod:`~topicbench.tasks.report.plots`), in the same colour and marker per model, each with a
title and labelled axes. Hovering reads a value off a curve, clicking a legend entry hides a
model (so one far-off model no longer squashes the others), dragging zooms.

The page stays self-contained and works offline: plotly.js is embedded once in the page's head
(:func:`plotly_script`) and each figure is a ``<div>`` with the script that draws it
(:func:`figure_html`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import plots as static

#: matplotlib marker -> Plotly marker symbol, so a model has the same shape on the page and in the PNG.
SYMBOLS = {"o": "circle", "s": "square", "^": "triangle-up", "D": "diamond", "v": "triangle-down", "P": "cross",
           "X": "x", "<": "triangle-left", ">": "triangle-right", "p": "pentagon", "h": "hexagon", "*": "star",
           "d": "diamond-tall"}
DASHES = {"-": "solid", "--": "dash", ":": "dot", "-.": "dashdot"}
PANEL_HEIGHT = 340
FONT = {"family": "system-ui, sans-serif", "size": 12}


def figure_layout(figure, title: str, height: int, legend_title: str | None = "model") -> None:
    """The house layout of an interactive figure: its title, height, font, margins and legend."""
    figure.update_layout(title={"text": title, "x": 0.01}, height=height, template="plotly_white", font=FONT,
                         # no gap between legend groups (a model's line and band): 13+ models fit
                         legend={"title": {"text": legend_title}, "tracegroupgap": 0} if legend_title else None,
                         margin={"l": 60, "r": 20, "t": 70, "b": 50}, hovermode="closest")


def _rgba(colour: str, alpha: float) -> str:
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def _coherence_traces(figure, done: pd.DataFrame, styles: dict, key: str, column: int) -> dict:
    """A line per model (mean over seeds against N) and its 95% t-interval band; returns model -> mean."""
    import plotly.graph_objects as go

    sizes, found = static.coherence_curves(done, key, styles)
    curves = {}
    for model, style, mean, sd in found:
        if sd is not None:
            figure.add_trace(go.Scatter(x=sizes + sizes[::-1], y=np.r_[mean + sd, (mean - sd)[::-1]], fill="toself", mode="lines",
                                        fillcolor=_rgba(style["color"], 0.12), line={"width": 0}, hoverinfo="skip",
                                        legendgroup=model, showlegend=False), row=1, col=column)
        figure.add_trace(go.Scatter(x=sizes, y=mean, name=model, legendgroup=model, showlegend=column == 1,
                                    mode="lines+markers", line={"color": style["color"], "width": 1.6},
                                    marker={"symbol": SYMBOLS[style["marker"]], "size": 7},
                                    hovertemplate=f"{model}<br>N=%{{x}}: %{{y:.4g}}<extra></extra>"),
                         row=1, col=column)
        curves[model] = mean
    return curves


def _fit_outliers(figure, curves: dict, column: int, title: str) -> bool:
    """The y-axis fitted to the models that are not outliers (:func:`.plots.clipped_axis`:
    one model far off would squash the others); the panel's title names them, with their
    values, and a double click shows everything. Whether it clipped."""
    clipped = static.clipped_axis(curves)
    if clipped is None:
        return False
    figure.update_yaxes(range=list(clipped.limits), row=1, col=column)
    said = "; ".join(f"{'↓' if m in clipped.below else '↑'} {m}: {low:.3g} to {high:.3g}"
                     for m, (low, high) in {**clipped.below, **clipped.above}.items())
    # under the panel's title, not over its curves
    figure.for_each_annotation(lambda a: a.update(text=f"{title}<br><span style='font-size:10px;color:#666'>"
                                                       f"off the axis: {said}</span>"),
                               selector={"text": title})
    return True


def coherence_figure(runs: pd.DataFrame, styles: dict, *, corpus: str, measures):
    """:func:`.plots.coherence_figure` as an interactive figure: a panel per measure, the
    mean over seeds against N per model with its 95% Student-t interval as a band."""
    from plotly.subplots import make_subplots

    done = runs[(runs.status == "FINISHED") & (runs.corpus == corpus)]
    panels = [(key, title) for key, title in measures if static._sizes(done.columns, key)]
    if not panels or done.empty:
        return None
    # room between panels for an axis title beside the tick labels ("−0.04"), clear of the panel before
    figure = make_subplots(rows=1, cols=len(panels), subplot_titles=[title for _, title in panels],
                           horizontal_spacing=0.09)
    clipped = False
    for column, (key, title) in enumerate(panels, start=1):
        clipped |= _fit_outliers(figure, _coherence_traces(figure, done, styles, key, column), column, title)
        figure.update_xaxes(title_text="top-N words", tickvals=static.coherence_curves(done, key, {})[0], row=1, col=column)
        figure.update_yaxes(title_text=f"{title} (mean over seeds)", row=1, col=column)
    # tall enough for a legend entry per model without a scroll bar
    figure_layout(figure, f"Coherence against N — {corpus}", max(PANEL_HEIGHT + 40, 150 + 22 * len(styles)))
    if clipped:  # room for the second line of a panel's title
        figure.update_layout(margin={"t": 100})
    return figure


def training_figure(runs: pd.DataFrame, styles: dict, *, corpus: str):
    """:func:`.plots.training_figure` as an interactive figure: a panel per iterative model,
    its training loss against epochs (or sweeps), one line style per seed."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    done, models = static.training_runs(runs, styles, corpus)
    if not models:
        return None
    columns = min(4, len(models))
    rows = -(-len(models) // columns)
    # room between panels for a two-line axis title beside the tick labels
    figure = make_subplots(rows=rows, cols=columns, subplot_titles=models, horizontal_spacing=0.12,
                           vertical_spacing=0.5 / rows)
    seeds = sorted(done.seed.unique())
    for i, model in enumerate(models):
        row, column = i // columns + 1, i % columns + 1
        group = done[done.model == model]
        for seed, (steps, losses) in zip(group.seed, group.training_curve):
            dash = DASHES[static.SEED_LINES[seeds.index(seed) % len(static.SEED_LINES)]]
            figure.add_trace(go.Scatter(x=list(steps), y=list(losses), mode="lines", name=f"seed {seed}",
                                        legendgroup=f"seed {seed}", showlegend=i == 0,
                                        line={"color": styles[model]["color"], "dash": dash, "width": 1.3},
                                        hovertemplate=f"{model}, seed {seed}<br>%{{x}}: %{{y:.5g}}<extra></extra>"),
                             row=row, col=column)
        kind = group.training_loss_kind.iloc[0] or ""
        figure.update_xaxes(title_text=static._loss_axis_label(kind), row=row, col=column)
        figure.update_yaxes(title_text="<br>".join(static.loss_value_lines(kind)), row=row, col=column,
                            title_font={"size": 10}, title_standoff=4, automargin=True)
    figure_layout(figure, f"Training loss — {corpus}", 120 + 280 * rows, legend_title="seed")
    return figure


def fit_time_figure(runs: pd.DataFrame, styles: dict, *, corpora):
    """:func:`.plots.fit_time_figure` as an interactive figure: a panel per corpus, a row
    per model, each seed's fit time as a small marker and the mean as a large one, on a log axis
    ticked in seconds, minutes and hours."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    done, models, corpora = static.timed_runs(runs, styles, corpora)
    if not models:
        return None
    figure = make_subplots(rows=1, cols=len(corpora), subplot_titles=corpora, shared_yaxes=True,
                           horizontal_spacing=0.03)
    for column, corpus in enumerate(corpora, start=1):
        here = done[done.corpus == corpus]
        for model in models:
            seconds = here.loc[here.model == model, "fit_seconds"]
            if seconds.empty:
                continue
            style = {"color": styles[model]["color"], "symbol": SYMBOLS[styles[model]["marker"]]}
            figure.add_trace(go.Scatter(x=seconds, y=[model] * len(seconds), mode="markers", showlegend=False,
                                        legendgroup=model, marker={**style, "size": 6, "opacity": 0.4},
                                        hovertemplate=f"{model}: %{{x:.3g}} s<extra>one seed</extra>"),
                             row=1, col=column)
            figure.add_trace(go.Scatter(x=[seconds.mean()], y=[model], mode="markers", name=model,
                                        legendgroup=model, showlegend=False,
                                        marker={**style, "size": 12, "line": {"color": "white", "width": 1}},
                                        hovertemplate=f"{model}: %{{x:.3g}} s<extra>mean over seeds</extra>"),
                             row=1, col=column)
        figure.update_xaxes(title_text="fit time (log scale)", row=1, col=column, **_time_axis(done.fit_seconds))
    figure.update_yaxes(title_text="model", autorange="reversed", row=1, col=1)
    # the rows name the models: no legend
    figure_layout(figure, "Fit time per model and corpus", max(280, 130 + 30 * len(models)), legend_title=None)
    return figure


def _time_axis(seconds: pd.Series) -> dict:
    """A log axis over ``seconds`` ticked at round durations (:func:`.plots.duration_label`)."""
    low, high, ticks = static.time_ticks(seconds)
    return {"type": "log", "range": [np.log10(low), np.log10(high)], "tickvals": ticks,
            "ticktext": [static.duration_label(value) for value in ticks]}


def plotly_script() -> str:
    """plotly.js, to embed once in the page's head (the page then needs no network)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def figure_html(figure, div_id: str) -> str:
    """One figure as a ``<div>`` and the script that draws it (plotly.js is in the page's head)."""
    return figure.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                          config={"displaylogo": False, "responsive": True})


def interactive_plots(plots, runs: pd.DataFrame, models, cache=None) -> dict:
    """file name -> HTML of the interactive figure, for every plot request that has one and
    something to draw (``models`` fixes each model's style, as for the PNG plots); with a
    :class:`~.plot_cache.PlotCache`, a figure made before from the same request and runs is taken
    from it (Plotly is imported only to draw)."""
    styles = static.model_styles(models)
    drawn = {}
    for number, plot in enumerate(plots):
        if plot.interactive is None:
            continue
        key = cache.key(plot, "html", extra=f"plot-{number}") if cache is not None else None
        kept = cache.get(key) if key is not None else None
        if kept is None:
            figure = plot.interactive(runs, styles)
            kept = figure_html(figure, f"plot-{number}").encode("utf-8") if figure is not None else b""
            if key is not None:
                cache.put(key, kept)
        if kept:
            drawn[plot.file_name] = kept.decode("utf-8")
    return drawn
