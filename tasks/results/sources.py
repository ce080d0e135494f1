"""Where a report reads its runs from: one interface, two sources.

A report needs seven things of the runs it shows, and nothing else: the run table, the benchmark's
config, what the runs rest on (data and settings), each topic's own scores (for the K section's prevalence-weighted means), each model's stability across
seeds, and the latest calibrations of the LLM that judged them (on words and on documents). :class:`RunSource` names them;

- :class:`StoreSource` reads them from an MLflow tracking store (and logs the finished report
  back to the benchmark's parent run);
- :class:`topicbench.tasks.results.bundle_source.BundleSource` reads them from a result bundle's tables,
  with no store at all.

The report itself (:func:`topicbench.flows.report.report_from`) never knows which one it has.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import pandas as pd


@runtime_checkable
class RunSource(Protocol):
    """What a report reads.

    Attributes
    ----------
    experiment : str
        The experiment's name (the report's title and default folder).
    described : str
        The source as the report's "regenerate it" command names it (``--tracking-uri URI`` or
        ``--bundle DIR``).
    """

    experiment: str
    described: str

    def runs(self) -> pd.DataFrame:
        """One row per (corpus, model, seed) fit, as :func:`~topicbench.tasks.results.store.collect_runs`."""

    def config(self) -> dict | None:
        """The benchmark's config, None where the source has none."""

    def topic_scores(self, runs: pd.DataFrame, corpora) -> dict:
        """(corpus, model, seed) -> each topic's share and own scores, for the runs on ``corpora``."""

    def stability(self, runs: pd.DataFrame):
        """:class:`~topicbench.tasks.results.stability.StabilityFindings` of the runs' seeds."""

    def data_and_settings(self) -> dict | None:
        """What the runs rest on (:func:`~topicbench.tasks.results.data_settings.data_and_settings`):
        corpora, preprocessing, labels, each model's settings, seeds and package versions; None
        where the source does not hold it (a bundle exported before it was written)."""

    def calibration(self, model: str) -> dict | None:
        """The latest word-level calibration of the judge ``model``, None where there is none."""

    def document_calibration(self, model: str) -> dict | None:
        """The latest document-level (ProxAnn) calibration of the judge ``model``, None where there is none."""

    def log_report(self, files) -> str | None:
        """Keep the written report beside the runs where the source can; the parent run's id or None."""


class StoreSource:
    """The runs of ``experiment`` in the MLflow store at ``tracking_uri``."""

    def __init__(self, tracking_uri: str, experiment: str):
        self.tracking_uri, self.experiment = tracking_uri, experiment
        self.described = f"--tracking-uri {tracking_uri}"

    def runs(self) -> pd.DataFrame:
        from topicbench.tasks.results.store import collect_runs

        return collect_runs(self.tracking_uri, self.experiment)

    def config(self) -> dict | None:
        from topicbench.tasks.results.store import collect_config

        return collect_config(self.tracking_uri, self.experiment)

    def topic_scores(self, runs: pd.DataFrame, corpora) -> dict:
        from topicbench.tasks.results.store import collect_topic_scores

        return collect_topic_scores(self.tracking_uri, runs, corpora)

    def stability(self, runs: pd.DataFrame):
        from topicbench.tasks.results.stability import collect_stability

        return collect_stability(self.tracking_uri, runs)

    def data_and_settings(self) -> dict | None:
        from topicbench.tasks.results.data_settings import collect_data_and_settings

        return collect_data_and_settings(self.tracking_uri, self.experiment)

    def calibration(self, model: str) -> dict | None:
        from topicbench.tasks.results.calibration_runs import latest_calibration

        return latest_calibration(self.tracking_uri, model)

    def document_calibration(self, model: str) -> dict | None:
        from topicbench.tasks.results.calibration_runs import latest_proxann_calibration

        return latest_proxann_calibration(self.tracking_uri, model)

    def log_report(self, files) -> str | None:
        from topicbench.tasks.results.store import log_report_to_parent

        return log_report_to_parent(self.tracking_uri, self.experiment, files)
