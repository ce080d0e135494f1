"""The judge's calibrations as tracked runs: the experiments they are kept in, the tag naming the
judged LLM, and the newest calibration of a model, word-level (``topicbench judge calibrate``, on
Hoyle et al.'s ratings) and document-level (``--protocol proxann``, on ProxAnn's user study); the
report states both beside the LLM scores."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

CALIBRATION_EXPERIMENT = "judge-calibration"
#: The experiment of the document-level calibrations (``flows/judge_proxann.py`` writes them).
PROXANN_EXPERIMENT = "judge-calibration-proxann"
#: The tag naming the judged model on a calibration run (the report looks it up by it).
MODEL_TAG = "topicbench.llm_model"
#: The answers a document-level judge gives, and what is logged of each one's topic-ranking τ.
PROXANN_ANSWERS = ("fit", "rank")
#: ``tau`` is the point estimate with its bootstrap ``se``, ``low``, ``high`` over ``resamples``
#: of ``n_topics``; ``proxann_tau``/``proxann_se`` ProxAnn's replay (mean of 50 resamples at seed
#: 42). A run logged before the point estimate has no ``resamples``: its ``tau`` is that replay.
PROXANN_PARTS = ("tau", "se", "low", "high", "resamples", "n_topics", "proxann_tau", "proxann_se", "document_tau")
#: The document-level run's artifact holding every scorer's τ (the released LLMs', NPMI's and
#: C_V's beside the endpoint's); people's own τ are metrics (``proxann.people.<answer>.<part>``).
PROXANN_TABLE = "topic_ranking_tau.csv"
#: People's own τ: the mean over draws of who is left out, the ``spread`` over them (an older
#: run logged it as ``se``), the middle 95% of the draws, and the draws made and dropped.
PEOPLE_PARTS = ("tau", "low", "high")
PEOPLE_COUNTS = ("spread", "draws", "dropped")


def latest_calibration(tracking_uri: str, model: str) -> dict | None:
    """The newest finished word-level calibration of ``model`` in the store, as its
    ``calibration.json`` (with ``run_id`` and ``when``); None when there is none."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    run = _latest_run(client, CALIBRATION_EXPERIMENT, model)
    if run is None:
        return None
    with tempfile.TemporaryDirectory() as folder:
        path = client.download_artifacts(run.info.run_id, "calibration.json", folder)
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    data.update(run_id=run.info.run_id, when=run.info.start_time)
    return data


def latest_proxann_calibration(tracking_uri: str, model: str) -> dict | None:
    """The newest finished document-level calibration of ``model`` in the store; None when there is none.

    Returns
    -------
    dict
        ``run_id``, ``when`` (ms since the epoch), ``topics`` (study topics asked; None where not
        logged); ``judge``: answer (fit, rank) -> its topic-ranking τ against people's as logged
        (``tau``, ``se``, ``low``, ``high``, ``document_tau``; a part not logged is absent);
        ``advantage``: the alternative annotator test's advantage probabilities by cell
        (``document_fit``, ...); ``others``: the other scorers of the same run (the released LLMs,
        NPMI, C_V), each ``{"scorer", "fit", "rank"}`` with the same parts (None where undefined),
        empty where the run kept no table; ``people``: people's own τ (one left out) per answer
        (``tau``, ``spread``, ``low``, ``high``, ``draws``, ``dropped``), None where not logged.
        Numbers are plain floats or None, so the record is JSON as it stands (a bundle keeps it).
    """
    import pandas as pd
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    run = _latest_run(client, PROXANN_EXPERIMENT, model)
    if run is None:
        return None
    metrics, topics = run.data.metrics, run.data.params.get("topics")
    judge = {answer: {part: metrics[f"proxann.{answer}.{part}"] for part in PROXANN_PARTS
                      if f"proxann.{answer}.{part}" in metrics} for answer in PROXANN_ANSWERS}
    advantage = {key.removeprefix("proxann.advantage."): value for key, value in sorted(metrics.items())
                 if key.startswith("proxann.advantage.")}
    with tempfile.TemporaryDirectory() as folder:
        table = _artifact(client, run.info.run_id, PROXANN_TABLE, folder, lambda path: pd.read_csv(path))
    return {"run_id": run.info.run_id, "when": run.info.start_time, "model": model,
            "topics": int(topics) if topics and topics.isdigit() else None, "judge": judge, "advantage": advantage,
            "others": [] if table is None else other_scorers(table, model),
            "people": people_tau(metrics)}


def other_scorers(table, model: str) -> list:
    """The scorers of a document-level calibration's :data:`PROXANN_TABLE` (a DataFrame) other than ``model``,
    in its order, each ``{"scorer", "fit": {part: value}, "rank": {...}}`` (None: undefined)."""
    found = {}
    for row in table.to_dict("records"):
        if row.get("scorer") == model or row.get("answer") not in PROXANN_ANSWERS:
            continue
        scorer = found.setdefault(str(row["scorer"]), {"scorer": str(row["scorer"])})
        scorer[row["answer"]] = {part: _number(row.get(part)) for part in PROXANN_PARTS}
    return list(found.values())


def people_tau(metrics: dict) -> dict | None:
    """People's own topic-ranking τ per answer (one left out) from a document-level calibration
    run's metrics (:data:`PEOPLE_PARTS`, and :data:`PEOPLE_COUNTS` as logged, else None); None
    where the run logged none, an answer without them None."""
    def of(answer: str) -> dict | None:
        key = f"proxann.people.{answer}."
        if not all(key + part in metrics for part in PEOPLE_PARTS):
            return None
        found = {part: metrics[key + part] for part in PEOPLE_PARTS}
        found.update({part: metrics.get(key + part) for part in PEOPLE_COUNTS})
        if found["spread"] is None:
            found["spread"] = metrics.get(key + "se")  # an older run's name for the same spread
        return found

    found = {answer: of(answer) for answer in PROXANN_ANSWERS}
    return None if all(value is None for value in found.values()) else found


def _number(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _latest_run(client, experiment: str, model: str):
    """The newest finished run of ``experiment`` tagged with ``model``; None when there is none."""
    from topicbench.tasks.store.filters import search_runs

    found = client.get_experiment_by_name(experiment)
    if found is None:
        return None
    runs = search_runs(client, [found.experiment_id], tags={MODEL_TAG: model}, status="FINISHED",
                       order_by=["attributes.start_time DESC"], max_results=1)
    return runs[0] if runs else None


def _artifact(client, run_id: str, name: str, folder: str, read):
    """``read(path)`` of the run's artifact ``name``; None where the run has none (an older run)."""
    if name not in {artifact.path for artifact in client.list_artifacts(run_id)}:
        return None
    return read(Path(client.download_artifacts(run_id, name, folder)))
