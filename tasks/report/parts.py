"""A report before rendering: the data its sections are built from, and the sections, blocks and plots they make.

:class:`ReportData` is what every section builder of :mod:`topicbench.tasks.report.sections` reads;
a builder returns a :class:`Section` of blocks (paragraphs, tables, :class:`Plot` requests) and
:func:`~topicbench.tasks.report.sections.build_report` gathers them into a :class:`Report`, which
:mod:`topicbench.tasks.report.render` renders as Markdown and HTML.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from topicbench.tasks.results.stability import StabilityFindings
from .tables import FINISHED


@dataclass(frozen=True)
class Plot:
    """A figure a section shows: ``draw(runs, styles)`` returns a matplotlib figure (or None when
    there is nothing to draw), written to ``file_name`` by :func:`.plots.write_plots`;
    ``interactive(runs, styles)``, when given, the same data as a Plotly figure, which the HTML
    page shows instead of the image (:mod:`~topicbench.tasks.report.interactive`)."""

    file_name: str
    alt: str
    draw: Callable
    interactive: Callable | None = None


@dataclass(frozen=True)
class Section:
    """A heading and its blocks in reading order: paragraphs, :class:`ReportTable`, :class:`Plot`;
    an ``opening`` section (the summary) is shown above the table of contents.

    Every text of a report (titles, paragraphs, cells, notes) is plain text, shown as given; a
    paragraph with Markdown of its own is a :class:`~topicbench.tasks.report.text.Markdown`,
    whose user text is marked (:mod:`~topicbench.tasks.report.text`)."""

    title: str
    blocks: tuple = ()
    opening: bool = False


@dataclass(frozen=True)
class Report:
    """A whole report before rendering: title, the lines at the top, and the sections."""

    title: str
    lead: tuple
    sections: tuple

    def plots(self) -> list[Plot]:
        return [block for section in self.sections for block in section.blocks if isinstance(block, Plot)]


@dataclass(frozen=True, eq=False)
class ReportData:
    """What every section is built from.

    Attributes
    ----------
    runs : pandas.DataFrame
        The run table of :func:`topicbench.tasks.results.store.collect_runs`.
    experiment, command : str
        The MLflow experiment, and the command that regenerates the report.
    config : dict or None
        The benchmark config of the experiment's latest parent run (its order of corpora and
        models, its seeds), None where the store holds none.
    notes : str
        Free text shown under "Notes" (paragraphs separated by blank lines).
    calibration : dict or None
        The latest word-level calibration against people of the LLM that judged the runs
        (:func:`topicbench.tasks.results.calibration_runs.latest_calibration`), None when there is none.
    document_calibration : dict or None
        Its latest document-level calibration, on ProxAnn's user study
        (:func:`topicbench.tasks.results.calibration_runs.latest_proxann_calibration`), None when there is none.
    stability : StabilityFindings or None
        Each model's stability across seeds, read from the runs' outputs
        (:func:`topicbench.tasks.results.stability.collect_stability`); None when not collected.
    topic_scores : dict or None
        (corpus, model, seed) -> each topic's share of the documents and own scores
        (:func:`topicbench.tasks.results.store.collect_topic_scores`), read for the corpora where the
        models differ in K, for the K section's prevalence-weighted means and their sensitivity to k
        (:mod:`~topicbench.tasks.report.k_section`); None when not collected.
    data_settings : dict or None
        What the runs rest on: corpora, preprocessing, labels, each model's settings, seeds and
        package versions (:func:`topicbench.tasks.results.data_settings.data_and_settings`); None
        when the source holds none.
    """

    runs: pd.DataFrame
    experiment: str
    command: str
    config: dict | None = None
    notes: str = ""
    calibration: dict | None = None
    document_calibration: dict | None = None
    stability: StabilityFindings | None = None
    topic_scores: dict | None = None
    data_settings: dict | None = None
    generated: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc))

    @property
    def finished(self) -> pd.DataFrame:
        return self.runs[self.runs.status == FINISHED]

    @property
    def corpora(self) -> list[str]:
        return _in_config_order(self.runs.corpus, [c["name"] for c in (self.config or {}).get("corpora", [])])

    @property
    def models(self) -> list[str]:
        names = [m.get("label") or m["model"] for m in (self.config or {}).get("models", [])]
        return _in_config_order(self.runs.model, names)

    @property
    def seeds(self) -> list[int]:
        return list((self.config or {}).get("seeds") or sorted(self.finished.seed.unique().tolist()))


def _in_config_order(found: pd.Series, listed: list) -> list:
    present = set(found.dropna())
    return [name for name in listed if name in present] + sorted(present - set(listed))
