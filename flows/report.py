"""The report: tracked runs of one experiment -> results/<experiment>/report.{md,html}.

collect (the run table, the benchmark's config and, when the report shows it, each model's stability
across seeds from the runs' outputs) -> build the sections the config names (pure)
-> write the plots, the Markdown and the HTML. Every report goes through here: ``topicbench run``,
``topicbench report``, ``topicbench serve`` and ``topicbench paper``.

A report orchestrates nothing (it reads a store and writes files, one step after the other), so
it is plain functions, not a Prefect flow: a flow would need a Prefect API, and without one of the
user's, Prefect starts a temporary server for it (about 20 s on a busy machine, for a report that
takes 2).
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path

from topicbench.core.io import file_name_for
from topicbench.tasks.report.parts import ReportData
from topicbench.tasks.report.sections import DEFAULT_REPORT_SECTIONS, REPORT_SECTIONS, build_report
from topicbench.tasks.results.sources import RunSource, StoreSource
from topicbench.tasks.report.k_curves import K_SECTION
from topicbench.tasks.report.summary import k_differences
from topicbench.tasks.report.write import write_report

# The paper's sections (our figures beside the paper's) sit with the paper's figures in
# flows/paper_report.py; registered lazily, so an ordinary report imports none of them.
for _name, _builder in (("paper_notes", "notes_section"), ("paper_set1", "set1_section"), ("paper_set2", "set2_section")):
    REPORT_SECTIONS.register(_name, lazy=f"topicbench.flows.paper_report:{_builder}")


def default_report_folder(experiment: str) -> Path:
    """``results/<experiment>`` under the working folder, the experiment's name made a file name
    by the one rule for user text (:func:`~topicbench.core.io.file_name_for`): no name, not even
    ``../..`` or an absolute path, places the report outside ``results/``."""
    return Path.cwd() / "results" / file_name_for(experiment)


def _judge_calibrations(source: RunSource, config: dict | None, runs) -> dict:
    """The latest calibrations of the LLM that judged these runs, as :class:`ReportData`'s fields:
    on words where any run has word-level LLM scores, on documents where any has document-level ones."""
    model = ((config or {}).get("llm") or {}).get("model")
    found = {}
    if model is not None and any(column in runs for column in ("llm_rating", "llm_intrusion")):
        found["calibration"] = source.calibration(model)
    if model is not None and any(column in runs for column in ("llm_fit", "llm_rank")):
        found["document_calibration"] = source.document_calibration(model)
    return found


def report_sections(config: dict | None, sections=None) -> tuple:
    """The sections to show: those asked for, else the config's, else the default ones."""
    return tuple(sections or (config or {}).get("report_sections") or DEFAULT_REPORT_SECTIONS)


def report(experiment: str, tracking_uri: str, folder: str | None = None, command: str = "", notes: str = "",
           sections=None) -> dict:
    """Write the report of ``experiment`` into ``folder`` (default: results/<experiment>).

    Parameters
    ----------
    experiment, tracking_uri : str
        The MLflow experiment and its store.
    folder : str, optional
    command : str
        The command the report names as the one that regenerates it.
    notes : str
        Free text for the "notes" section (paragraphs separated by blank lines).
    sections : sequence of str, optional
        Names from ``REPORT_SECTIONS``; default: the ``report_sections`` of the benchmark's
        config in the store, else ``DEFAULT_REPORT_SECTIONS``.

    Returns
    -------
    dict
        ``markdown`` and ``html`` paths, ``finished`` and ``failed`` run counts.
    """
    source = StoreSource(tracking_uri, experiment)
    command = command or f"topicbench report --experiment {shlex.quote(experiment)} --tracking-uri {shlex.quote(tracking_uri)}"
    return report_from(source, folder, command=command, notes=notes, sections=sections)


def report_from(source: RunSource, folder: str | None = None, *, command: str, notes: str = "",
                sections=None) -> dict:
    """Write the report of the runs ``source`` reads (a tracking store or a result bundle) into
    ``folder`` (default: results/<experiment>); as :func:`report`."""
    runs = source.runs()
    config = source.config()
    sections = report_sections(config, sections)
    folder = folder or str(default_report_folder(source.experiment))
    # the runs' outputs are read only for a report that shows their stability (a download per run)
    stability = source.stability(runs) if "stability" in sections else None
    data_settings = source.data_and_settings() if "data_and_settings" in sections else None
    data = ReportData(runs=runs, experiment=source.experiment, command=command, config=config, notes=notes,
                      stability=stability, data_settings=data_settings, **_judge_calibrations(source, config, runs))
    if K_SECTION in sections:  # each topic's scores are read only where models side by side differ in K
        unequal = k_differences(runs, models=data.models, corpora=data.corpora)
        data = replace(data, topic_scores=source.topic_scores(runs, unequal) if unequal else None)
    written = write_report(build_report(data, sections), data, folder)
    written["parent_run_id"] = source.log_report(written["files"])
    return written
