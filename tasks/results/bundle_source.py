"""A report's runs read from a result bundle's tables, with no tracking store at all.

:class:`BundleSource` is the second :class:`~topicbench.tasks.results.sources.RunSource`: it rebuilds
from ``tables/*.parquet`` (:mod:`topicbench.tasks.results.bundle_tables`) exactly what
:class:`~topicbench.tasks.results.sources.StoreSource` reads from the store the bundle was exported
from -- the run table, what the runs rest on (data and settings) (with each model's first seed's topics and their facts), the config, each
topic's own scores, the stability found at export and the judge's calibration -- so the two
reports are the same, apart from the command that regenerates them.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pandas as pd

from topicbench.tasks.results.bundle_checks import check_bundle
from topicbench.tasks.results.bundle_tables import REPORT_TABLES, findings_from_table
from topicbench.tasks.results.data_settings import read_data_settings
from topicbench.tasks.results.runs import TOPIC_SCORES_SHOWN
from topicbench.tasks.results.runs import FINISHED


class BundleSource:
    """The runs of the result bundle in ``folder`` (format 2 or later: with tables).

    Parameters
    ----------
    folder : str or Path
        The bundle's folder, as ``topicbench export`` wrote it.
    """

    def __init__(self, folder):
        self.folder = Path(folder)
        checked = check_bundle(self.folder)  # all of it checked up front: a malformed bundle is one line
        self.manifest, self.tables = checked.manifest, checked.tables_named(REPORT_TABLES)
        self.experiment = self.manifest["experiment"]
        self.described = f"--bundle {shlex.quote(str(folder))}"
        self._topic_scores = {run_id: _topic_scores_frame(part)
                              for run_id, part in self.tables["topic_scores"].groupby("run_id", sort=False)}

    def runs(self) -> pd.DataFrame:
        """The run table of :func:`~topicbench.tasks.results.store.collect_runs`, from ``runs``,
        ``scores`` and ``loss_curves``, its columns in the order the store gave them."""
        scores = {run_id: dict(zip(part.score, part.value))
                  for run_id, part in self.tables["scores"].groupby("run_id", sort=False)}
        curves = {run_id: (part.step.tolist(), part.value.tolist())
                  for run_id, part in self.tables["loss_curves"].groupby("run_id", sort=False)}
        rows = []
        for run in self.tables["runs"].to_dict("records"):
            row = {key: _text(run[key]) for key in ("run_id", "status", "corpus", "model", "model_class")}
            row.update(seed=int(run["seed"]), error=_text(run["error"]), run_key=_text(run["run_key"]),
                       **scores.get(run["run_id"], {}))
            row.update({key: _text(run[key]) for key in ("changed_settings", "skipped_metrics", "training_loss_kind")})
            if run["run_id"] in curves:
                row["training_curve"] = curves[run["run_id"]]
            rows.append(row)
        frame = pd.DataFrame(rows)
        frame["topics_json"] = None
        frame["topics_json"] = frame["topics_json"].astype(object)
        done = frame[frame.status == FINISHED]
        for _, group in done.groupby(["corpus", "model"]):
            index = group.seed.idxmin()
            frame.at[index, "topics_json"] = self._topics_json(frame.at[index, "run_id"])
        order = [c for c in self.manifest.get("report_columns", []) if c in frame]
        return frame[order + [c for c in frame.columns if c not in order]]

    def _topics_json(self, run_id: str) -> str | None:
        """The run's ``topics.json`` records with their facts, as the store's report reads them."""
        facts = self.tables["topic_facts"]
        facts = facts[facts.run_id == run_id]
        if facts.empty:
            return None
        topics = self.tables["topics"]
        topics = topics[topics.run_id == run_id].sort_values(["topic", "rank"])
        words = {topic: " ".join(part.word) for topic, part in topics.groupby("topic")}
        own = self._topic_scores.get(run_id)
        shown = None if own is None else own[[c for c in own.columns if c in dict(TOPIC_SCORES_SHOWN)]]
        records = []
        for fact in facts.to_dict("records"):
            topic = int(fact["topic"])
            record = {"topic": topic, "label": _text(fact["label"]), "words": words.get(topic, "")}
            if pd.notna(fact["share"]):
                record["prevalence"] = float(fact["share"])
            if shown is not None:
                values = shown.loc[topic] if topic in shown.index else pd.Series(dtype=float)
                record["scores"] = {key: float(value) for key, value in values.items() if pd.notna(value)}
            if pd.notna(fact["documents"]):
                record["documents"] = int(fact["documents"])
            record.update({key: json.loads(fact[key]) for key in ("by_label", "examples") if pd.notna(fact[key])})
            records.append(record)
        return json.dumps(records, ensure_ascii=False)

    def config(self) -> dict | None:
        return self.manifest.get("config")

    def data_and_settings(self) -> dict | None:
        """The record written at export (:data:`~topicbench.tasks.results.data_settings.DATA_SETTINGS_FILE`),
        checked against the manifest; for a bundle exported before it was written, an empty record
        that says so (``absent``), which the report shows as the reason."""
        return read_data_settings(self.folder, self.manifest) or {"corpora": {}, "models": [], "absent": (
            "this bundle was exported before bundles held their runs' data and settings; export it again from its "
            "store to have them")}

    def topic_scores(self, runs: pd.DataFrame, corpora) -> dict:
        """As :func:`~topicbench.tasks.results.store.collect_topic_scores`: (corpus, model, seed) ->
        each topic's own scores and ``share``, for the finished runs on ``corpora``."""
        facts = self.tables["topic_facts"]
        shares = {run_id: part.sort_values("topic").share.to_numpy()
                  for run_id, part in facts.groupby("run_id", sort=False) if part.share.notna().all()}
        found = {}
        done = runs[(runs.status == FINISHED) & runs.corpus.isin(list(corpora))]
        for corpus, model, seed, run_id in zip(done.corpus, done.model, done.seed, done.run_id):
            scores, share = self._topic_scores.get(run_id), shares.get(run_id)
            if scores is not None and share is not None and len(share) == len(scores):
                found[(corpus, model, int(seed))] = scores.assign(share=share[scores.index.to_numpy()])
        return found

    def stability(self, runs: pd.DataFrame):
        """The stability found at export, for the models whose seeds are still the runs it covered."""
        return findings_from_table(self.tables["stability"], runs)

    def calibration(self, model: str) -> dict | None:
        judge = self.manifest.get("judge") or {}
        return judge.get("calibration") if judge.get("model") == model else None

    def document_calibration(self, model: str) -> dict | None:
        """The judge's document-level calibration recorded at export (a bundle from before it was
        recorded has none)."""
        judge = self.manifest.get("judge") or {}
        return judge.get("document_calibration") if judge.get("model") == model else None

    def log_report(self, files) -> str | None:
        """A bundle is read, never written: the report stays where it was written."""
        return None


def _text(value):
    """A text cell as the store gave it: None where the table has none (a ``str`` column's NaN)."""
    return None if pd.isna(value) else value


def _topic_scores_frame(part: pd.DataFrame) -> pd.DataFrame:
    """One run's ``topic_scores`` rows as its ``topic_scores.csv`` read back: a row per topic
    (index ``topic``), a column per score key in the file's order."""
    table = part.pivot(index="topic", columns="score", values="value")[list(pd.unique(part.score))]
    table.columns.name = None
    return table
