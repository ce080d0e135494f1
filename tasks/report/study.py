"""The report of a search: what to use across models (the recommendation, its runners-up within
noise, the objectives' disagreement); the setting chosen per model and why, and its fit's topics
(and the first topics found at each searched K, or each value of the first searched dimension);
each objective against K (or the first searched dimension), one y-scale per objective and one
colour per model, the mean over seeds with its 95% Student-t interval as a band; the Pareto front
where there are several objectives; the trials' cost and the shared work; and the chosen config.

Every ± says what it is: a table's ``mean ± 95% t`` columns carry the half-width of the Student-t
interval over the seeds (none under 3 seeds; a deterministic model said so), and the one-standard-
error rule's standard error is always written ``se``.

Built from the search's outcome (:func:`topicbench.flows.search.summarise`) into the report
blocks the benchmark report uses (:mod:`.sections`), rendered by the same functions.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from topicbench.core.io import OutputPathError, file_name_for, make_output_folder, write_text_atomically
from topicbench.core.search_space import NUM_TOPICS, point_text
from topicbench.core.metrics.stats import seed_interval
from topicbench.core.selection import pareto_front

from .write import ReportWriteError
from .interactive import interactive_plots
from .plots import write_plots
from .render import render_html, render_markdown
from .parts import Plot, Report, Section
from .tables import Estimate, ReportTable, estimate
from .text import Code, Markdown, Text

CHOSEN_CONFIG = "chosen.yaml"


def chosen_config_name(corpus: str | None) -> str:
    """The chosen config's file: ``chosen.yaml`` for a search of one corpus (``corpus`` None),
    ``chosen-<corpus>.yaml`` for each corpus of a search of several."""
    return CHOSEN_CONFIG if corpus is None else f"chosen-{file_name_for(corpus)}.yaml"

#: One line style per value of the other searched dimensions (the colour is the model's), in
#: matplotlib's and plotly's names.
LINE_STYLES = ("-", "--", ":", "-.")
DASHES = ("solid", "dash", "dot", "dashdot")


def study_report(outcome: dict, objectives, command: str, storage: str) -> Report:
    """The :class:`Report` of a search ``outcome`` with its ``objectives``."""
    choices, counts = outcome["choices"], outcome["counts"]
    lead = (
        f"Search {outcome['experiment']!r}: {len(choices)} studies (corpus x model), objectives "
        f"{', '.join(o.key for o in objectives)} (the first chooses, by the one-standard-error rule over seeds).",
        Markdown("Regenerate (fits nothing already fitted): ", Code(command), ". Studies kept in ", Text(storage), "."),
        *(f"Caution: {warning}." for warning in outcome.get("warnings", ())),
    )
    sections = [_recommendation_section(outcome.get("recommendations", ())),
                _chosen_section(choices, objectives), _topics_section(choices), _curves_section(choices, objectives)]
    if len(objectives) > 1:
        sections.append(_pareto_section(choices, objectives))
    sections += [_trials_section(choices, objectives), _cost_section(choices, counts)]
    return Report(f"Search: {outcome['experiment']}", lead, tuple(sections))


def _recommendation_section(recommendations) -> Section:
    """Per corpus: the model and setting to use, the runners-up within noise, and every trial that
    beats it on some objective beyond noise (the seeds' caution is the report's lead)."""
    blocks = []
    for recommendation in recommendations:
        if recommendation.label is None:
            blocks.append(f"{recommendation.corpus}: {recommendation.headline()}.")
            continue
        rows = [_recommendation_row("recommended", recommendation.label, recommendation.point, recommendation.summary,
                                    recommendation.objective)]
        rows += [_recommendation_row("within noise", *item, recommendation.objective) for item in recommendation.runners_up]
        rows += [_recommendation_row("not testable against it", *item, recommendation.objective)
                 for item in recommendation.undecided]
        blocks.append(ReportTable(pd.DataFrame(rows), title=recommendation.corpus if len(recommendations) > 1 else "",
                                  note=f"The rule: {recommendation.rule}."))
        blocks.append(f"On {recommendation.corpus}: {recommendation.headline()}.")
        if recommendation.disagreements:
            blocks.append("The objectives disagree: " + "; ".join(recommendation.disagreements) + ".")
        else:
            blocks.append("No trial of any model beats it beyond noise on any objective.")
    return Section("Recommendation", tuple(blocks))


def _recommendation_row(role: str, label: str, point, summary, objective: str) -> dict:
    return {"": role, "model": label, "setting": point_text(point), _spread_label(objective): _estimate(summary.scores),
            "seeds": summary.n}


def _chosen_section(choices, objectives) -> Section:
    primary = objectives[0]
    rows = []
    for choice in choices:
        chosen = next((t for t in choice.trials if t["state"] == "COMPLETE" and t["point"] == choice.point), None)
        rows.append({
            "corpus": choice.corpus, "model": choice.label, "chosen": point_text(choice.point),
            "best mean": point_text(choice.best),
            _spread_label(primary.key): _estimate(chosen["per_seed"].get(primary.key, [])) if chosen else None,
            "why": choice.rule,
        })
    corpora = list(dict.fromkeys(choice.corpus for choice in choices))
    files = ([CHOSEN_CONFIG] if len(corpora) < 2 else [chosen_config_name(corpus) for corpus in corpora])
    where = (f"{files[0]} beside this report: `topicbench run {files[0]}`" if len(files) == 1 else
             "one file per corpus beside this report, each with that corpus's own choices: "
             + ", ".join(f"`topicbench run {name}`" for name in files))
    note = Markdown("The rule's se is the standard error of the best mean (sd / √seeds; none for a deterministic "
                    "point, whose seeds gave one fit). The chosen config (every model at its "
                    f"choice, labelled as in the search, so it fits nothing the search fitted) is {where}.")
    blocks = [ReportTable(pd.DataFrame(rows), note=note)]
    for choice in choices:
        blocks += [f"{choice.label} on {choice.corpus}: {message}" for message in choice.messages]
    return Section("Chosen settings", tuple(blocks))


def _topics_section(choices, shown: int = 20, words: int = 10, per_value: int = 5) -> Section:
    """The topics of each chosen fit (its first finished seed), so a reader judges the choice by
    what it found, not by its scores alone; then, per model, the first topics found at each value
    of the first searched dimension (each K), to see what the choice gains or loses."""
    blocks = []
    for choice in choices:
        if choice.topics:
            rows = [{"topic": number, "top words": " ".join(topic.split()[:words])}
                    for number, topic in enumerate(choice.topics[:shown])]
            title = (f"{choice.label} at {point_text(choice.point)} on {choice.corpus}, seed {choice.topics_seed}: "
                     f"{len(rows)} of {len(choice.topics)} topics shown (the model's own order)")
            blocks.append(ReportTable(pd.DataFrame(rows), title=title))
        if len(choice.searched_topics) > 1:
            blocks.append(_searched_topics_table(choice, words, per_value))
    if not blocks:
        blocks = ["No chosen fit's topics could be read (no trial finished, or their topics.json is missing)."]
    return Section("Topics of the chosen fits", tuple(blocks))


def _searched_topics_table(choice, words: int, per_value: int) -> ReportTable:
    """One row per value of the first searched dimension: the fit there (the chosen one, else the
    best on the first objective), its seed and its first ``per_value`` topics."""
    dimension = next(iter(choice.searched_topics[0].point), "setting")
    rows = [{"K" if dimension == NUM_TOPICS else dimension: item.point.get(dimension),
             "setting": point_text(item.point) + (" (chosen)" if item.chosen else ""), "seed": item.seed,
             "topics shown": f"{min(per_value, len(item.topics))} of {len(item.topics)}",
             "first topics (top words)": tuple(" ".join(topic.split()[:words]) for topic in item.topics[:per_value])}
            for item in choice.searched_topics]
    title = (f"{choice.label} on {choice.corpus}: the topics at each searched "
             f"{'K' if dimension == NUM_TOPICS else dimension}")
    note = ("At each value: the chosen trial where it is there, else the trial with the best mean first objective; "
            "its first finished seed's fit; its first topics in the model's own order.")
    return ReportTable(pd.DataFrame(rows), title=title, note=note)


def _curves_section(choices, objectives) -> Section:
    blocks = ["Each objective against the first searched dimension (K where it is searched): the mean over seeds, "
              "the band its 95% Student-t interval (none under 3 seeds); one colour per model, one y-scale per objective across models (compare the panels "
              "of a row directly); other searched dimensions draw one line style per value."]
    for corpus in dict.fromkeys(c.corpus for c in choices):
        corpus_choices = [c for c in choices if c.corpus == corpus]
        blocks.append(Plot(f"search_{file_name_for(corpus)}.png", f"objectives against the searched settings on {corpus}",
                           lambda runs, styles, chosen=corpus_choices: _curves_figure(chosen, objectives),
                           lambda runs, styles, chosen=corpus_choices, name=corpus: _curves_interactive(chosen, objectives, name)))
    return Section("Objectives against the settings", tuple(blocks))


def _curve_lines(choice, objective) -> tuple[str, list]:
    """What a panel of (model, objective) draws: the x dimension's name and, per value of the
    other searched dimensions, (label, x values, positions, means, sds, position of the chosen x
    or None); positions are the values when numeric, else 0, 1, …"""
    trials = [t for t in choice.trials if t["state"] == "COMPLETE"]
    names = list(trials[0]["point"]) or ["(as configured)"]
    x_name, rest = names[0], names[1:]
    groups = {}
    for trial in trials:
        groups.setdefault(tuple((n, trial["point"].get(n)) for n in rest), []).append(trial)
    lines = []
    for key, members in sorted(groups.items(), key=lambda item: str(item[0])):
        members = sorted(members, key=lambda t: _sort_value(t["point"].get(x_name)))
        xs = [t["point"].get(x_name, 0) for t in members]
        values = [_finite(t["per_seed"].get(objective.key, [])) for t in members]
        means = np.array([np.mean(v) if v else np.nan for v in values])
        sds = np.array([_half_width(v) for v in values])  # the t-interval's half-width: the band
        positions = xs if all(isinstance(x, (int, float)) for x in xs) else list(range(len(xs)))
        chosen = None
        if choice.point and all(choice.point.get(n) == v for n, v in key) and choice.point.get(x_name) in xs:
            chosen = positions[xs.index(choice.point[x_name])]
        lines.append((", ".join(f"{n}={v}" for n, v in key) or choice.label, xs, positions, means, sds, chosen))
    return ("K" if x_name == NUM_TOPICS else x_name), lines


def _objective_label(objective) -> str:
    return objective.key + (" (higher is better)" if objective.higher_is_better else " (lower is better)")


def _curves_figure(choices, objectives):
    from .plots import MARKERS, _pyplot, model_colour

    plt = _pyplot()
    drawable = [c for c in choices if any(t["state"] == "COMPLETE" for t in c.trials)]
    if not drawable:
        return None
    figure, axes = plt.subplots(len(objectives), len(drawable), figsize=(4.2 * len(drawable), 3.0 * len(objectives)),
                                squeeze=False, sharey="row")  # one scale per objective: panels compare directly
    for column, choice in enumerate(drawable):
        colour = model_colour(choice.label, [c.label for c in drawable])  # the model's, as in its report
        for row, objective in enumerate(objectives):
            axis = axes[row][column]
            x_label, lines = _curve_lines(choice, objective)
            for i, (label, xs, positions, means, sds, chosen) in enumerate(lines):
                marker, style = MARKERS[i % len(MARKERS)], LINE_STYLES[i % len(LINE_STYLES)]
                axis.plot(positions, means, marker=marker, linestyle=style, color=colour, label=label)
                axis.fill_between(positions, means - sds, means + sds, color=colour, alpha=0.2)
                axis.set_xticks(positions, [str(x) for x in xs])  # the searched values only (K = 2.5 was never fitted)
                if chosen is not None:
                    axis.axvline(chosen, color="#555", linestyle=":", linewidth=1)
            axis.set_xlabel(x_label)
            if column == 0:  # the row shares its scale: one title says what it measures
                axis.set_ylabel(_objective_label(objective))
            axis.set_title(choice.label if row == 0 else "", fontsize=9, color=colour)
            axis.grid(alpha=0.3)
            if len(lines) > 1 and row == 0:
                axis.legend(fontsize=7, frameon=False)
    figure.tight_layout()
    return figure


def _curves_interactive(choices, objectives, corpus: str):
    """:func:`_curves_figure` as an interactive figure (hover reads a trial's mean and sd)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from .interactive import SYMBOLS, figure_layout
    from .plots import MARKERS, model_colour

    drawable = [c for c in choices if any(t["state"] == "COMPLETE" for t in c.trials)]
    if not drawable:
        return None
    figure = make_subplots(rows=len(objectives), cols=len(drawable), column_titles=[c.label for c in drawable],
                           vertical_spacing=0.6 / len(objectives), horizontal_spacing=0.08,
                           shared_yaxes=True)  # one scale per objective (row) across models
    for column, choice in enumerate(drawable, start=1):
        colour = model_colour(choice.label, [c.label for c in drawable])  # the model's, as in its report
        for row, objective in enumerate(objectives, start=1):
            x_label, lines = _curve_lines(choice, objective)
            for i, (label, xs, positions, means, sds, chosen) in enumerate(lines):
                figure.add_trace(go.Scatter(
                    x=positions, y=means, error_y={"type": "data", "array": sds, "color": colour, "thickness": 1},
                    mode="lines+markers", name=label, legendgroup=label, showlegend=row == 1 and len(lines) > 1,
                    line={"color": colour, "dash": DASHES[i % len(DASHES)]},
                    marker={"symbol": SYMBOLS[MARKERS[i % len(MARKERS)]], "size": 7},
                    customdata=[str(x) for x in xs],
                    hovertemplate=f"{label}<br>{x_label}=%{{customdata}}: mean %{{y:.4g}} ± %{{error_y.array:.2g}} (95% t)<extra></extra>",
                ), row=row, col=column)
                if chosen is not None:
                    figure.add_vline(x=chosen, line={"color": "#555", "dash": "dot", "width": 1}, row=row, col=column)
                # ticks at the searched values only (K = 2.5 was never fitted)
                figure.update_xaxes(tickvals=positions, ticktext=[str(x) for x in xs], row=row, col=column)
            figure.update_xaxes(title_text=x_label, row=row, col=column)
            if column == 1:  # the row shares its scale: one title says what it measures
                figure.update_yaxes(title_text=_objective_label(objective), title_font={"size": 10}, row=row, col=column)
    figure_layout(figure, f"Objectives against the searched settings — {corpus}", 120 + 260 * len(objectives),
                  legend_title=None)
    return figure


def _pareto_section(choices, objectives) -> Section:
    rows = []
    for choice in choices:
        trials = [t for t in choice.trials if t["state"] == "COMPLETE"]
        if not trials:
            continue
        values = [[t.get(o.key, math.nan) for o in objectives] for t in trials]
        for index in pareto_front(values, [o.higher_is_better for o in objectives]):
            trial = trials[int(index)]
            rows.append({"corpus": choice.corpus, "model": choice.label, "setting": point_text(trial["point"]),
                         **{_spread_label(o.key): _estimate(trial["per_seed"].get(o.key, [])) for o in objectives}})
    note = "Trials no other trial of the model beats on every objective (means over seeds)."
    return Section("Pareto front", (ReportTable(pd.DataFrame(rows), note=note),))


def _trials_section(choices, objectives) -> Section:
    rows = []
    for choice in choices:
        for trial in sorted(choice.trials, key=lambda t: t["number"]):
            rows.append({"corpus": choice.corpus, "model": choice.label, "trial": trial["number"],
                         "setting": point_text(trial["point"]), "state": trial["state"],
                         "seeds": len(trial["seeds"]),
                         **{_spread_label(o.key): _estimate(trial["per_seed"].get(o.key, [])) for o in objectives},
                         "fit s (sum over seeds)": round(sum(trial["fit_seconds"]), 2)})
    return Section("Trials", (ReportTable(pd.DataFrame(rows), note="Each objective: the mean over the trial's seeds."),))


def _spread_label(key: str) -> str:
    """A column of :class:`Estimate` cells, its ± named: ``npmi@10 (mean ± 95% t)``."""
    return f"{key} (mean ± 95% t)"


def _cost_section(choices, counts) -> Section:
    rows = []
    for choice in choices:
        seconds = [s for t in choice.trials for s in t["fit_seconds"] if math.isfinite(s)]
        rows.append({"corpus": choice.corpus, "model": choice.label, "trials": len(choice.trials),
                     "fits": len(seconds), "fit s (total)": round(sum(seconds), 1),
                     "fit s (per fit)": round(sum(seconds) / len(seconds), 2) if seconds else None})
    shared = (f"Shared work: {counts.corpus_reads} corpus reads (each corpus read and split once, for every trial); of "
              f"{counts.fits_scored} scored fits, {counts.metric_context_builds} built the corpus's metric context "
              "(its counts; once per worker process that fitted) and the others reused it. This run: "
              f"{counts.batches} batches, {counts.fits_run} fits run, {counts.fits_found} found already fitted.")
    return Section("Cost and shared work", (ReportTable(pd.DataFrame(rows)), shared))


def write_study_report(report: Report, chosen_configs: dict, folder) -> dict:
    """Write ``search.md``, ``search.html``, the plots and the chosen configs (file name -> config,
    :func:`topicbench.flows.search_choice.chosen_configs`) into ``folder`` (each file whole or not at
    all); returns their paths (``configs``: one per chosen config)."""
    folder = Path(folder)
    try:
        make_output_folder(folder, "the report folder")
        images = write_plots(report.plots(), pd.DataFrame(), folder, [])
        write_text_atomically(folder / "search.md", render_markdown(report, images))
        figures = interactive_plots(report.plots(), pd.DataFrame(), [])
        write_text_atomically(folder / "search.html", render_html(report, images, figures))
        for name, chosen in chosen_configs.items():
            header = (f"# The search's chosen settings{_on_corpus(chosen, chosen_configs)}: topicbench run {name}\n"
                      "# (its experiment, labels and seeds are the search's: on the same store it fits nothing the "
                      "search fitted)\n")
            write_text_atomically(folder / name, header + yaml.safe_dump(chosen, sort_keys=False))
    except (OSError, OutputPathError) as error:  # the folder became something else while the search ran
        reason = getattr(error, "strerror", None) or error
        raise ReportWriteError(f"cannot write the search report into {folder}: {reason}; the trials "
                               "are kept: run the same search command with another --out") from None
    return {"markdown": str(folder / "search.md"), "html": str(folder / "search.html"),
            "configs": [str(folder / name) for name in chosen_configs]}


def _on_corpus(chosen: dict, chosen_configs: dict) -> str:
    """`` on <corpus>`` for one of several corpora's chosen configs."""
    return f" on {chosen['corpora'][0]['name']}" if len(chosen_configs) > 1 and chosen.get("corpora") else ""


def _estimate(values) -> Estimate | None:
    return estimate(_finite(values))


def _half_width(values) -> float:
    """The half-width of the 95% Student-t interval of ``values``' mean; 0 (no band) without one."""
    interval = seed_interval(values) if values else None
    return interval.high - interval.mean if interval is not None and interval.has_interval else 0.0


def _finite(values) -> list:
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def _sort_value(value):
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))
