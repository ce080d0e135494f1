"""``topicbench judge calibrate --protocol proxann``: how far a document-level judge (``llm_fit``,
``llm_rank``) agrees with people, on the questions ProxAnn's participants answered (24 Bills
topics), beside the released answers of seven LLMs scored by the same code.

The endpoint is asked each study topic's category, each evaluation document's fit and every
pair's order (:mod:`topicbench.core.metrics.proxann_questions`, the prompts of ``llm_fit`` and
``llm_rank``); the answers, people's and the released LLMs' are scored by
:mod:`topicbench.core.metrics.proxann_agreement` (topic-ranking τ against people with SE and
interval, per-document τ against people, NPMI's and C_V's τ, people's own) and
:mod:`topicbench.core.metrics.alternative_annotator` (advantage probabilities). The run is an MLflow
run of the experiment ``judge-calibration-proxann`` (apart from the word-level calibrations, which
the report reads), tagged with the endpoint's model, with the tables and every request.
"""

from __future__ import annotations

import json
import logging
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from topicbench.core.metrics.llm_judging import JudgeSettings
from topicbench.core.metrics.proxann_agreement import calibration_table, people_ranking_tau, seed_means
from topicbench.core.metrics.alternative_annotator import alternative_annotator_test
from topicbench.core.metrics.proxann_questions import study_answers, study_questions
from topicbench.tasks.results.calibration_runs import MODEL_TAG, PROXANN_EXPERIMENT

from .console import CONSOLE

logger = logging.getLogger(__name__)

#: The alternative annotator test's four cells: (level, answer).
ALT_TEST_CELLS = (("document", "fit"), ("document", "rank"), ("topic", "fit"), ("topic", "rank"))


@dataclass(frozen=True)
class ProxAnnCalibration:
    """A document-level calibration: the topic-ranking table (rows of
    :func:`~topicbench.core.metrics.proxann_agreement.calibration_table`), people's own τ, the
    advantage probabilities, the endpoint's answers, what was asked, and the run."""

    table: pd.DataFrame
    people: dict
    advantage: pd.DataFrame
    answers: pd.DataFrame
    model: str
    topics: int
    requests: int
    cached: int
    seconds: float
    run_id: str | None = None


def calibrate_proxann(endpoint, settings: JudgeSettings, release, *, tracking_uri: str | None,
                      topics_per_model: int | None = None, seed: int = 0) -> ProxAnnCalibration:
    """Ask ``endpoint`` the study's questions and score it beside people and the released LLMs.

    ``release`` is :func:`~topicbench.core.proxann_data.read_release` of the fetched ``proxann``
    dataset (read and checked before any request); ``topics_per_model`` keeps each topic model's
    first N study topics (a quick look), for every judge alike.
    """
    from topicbench.tasks.llm.judge import EndpointJudge

    topics = release.study.topics.sort_values("topic").reset_index(drop=True)
    if topics_per_model is not None:
        topics = topics[topics.groupby("model").cumcount() < topics_per_model].reset_index(drop=True)
    kept = set(topics["topic"])
    documents = release.study.documents[release.study.documents["topic"].isin(kept)]
    people = release.people[release.people["topic"].isin(kept)]
    judge = EndpointJudge(endpoint)
    started = time.perf_counter()
    logger.info("asking %s at %s the questions of %d study topics", endpoint.model, endpoint.base_url, len(topics),
                extra=CONSOLE)
    questions = study_questions(topics, documents, judge, settings)
    answers = study_answers(topics, questions, judge, settings)
    records = judge.take_records()
    judges = {endpoint.model: answers, **{llm: seed_means(found[found["topic"].isin(kept)])
                                          for llm, found in release.llm_answers.items()}}
    evaluation = documents[documents["role"] == "evaluation"]
    table = calibration_table(judges, people, evaluation, release.coherences[release.coherences["topic"].isin(kept)])
    advantage = pd.DataFrame([_advantage(name, answers_of, people) for name, answers_of in judges.items()])
    asked = sum(not record["cached"] for record in records)
    calibration = ProxAnnCalibration(table, people_ranking_tau(people, evaluation, seed=seed), advantage, answers,
                                     endpoint.model, len(topics), asked, len(records) - asked,
                                     time.perf_counter() - started)
    run_id = None if tracking_uri is None else _track(calibration, endpoint, settings, records, tracking_uri)
    return ProxAnnCalibration(**{**calibration.__dict__, "run_id": run_id})


def _advantage(name: str, answers: pd.DataFrame, people: pd.DataFrame) -> dict:
    """The judge's four advantage probabilities, on the topics it answered in full (a topic it
    named no category for, or left a document unanswered in, is not one it can be tested on)."""
    row = {"judge": name}
    for level, answer in ALT_TEST_CELLS:
        complete = answers.groupby("topic")[answer].transform(lambda values: values.notna().all())
        answered = answers[complete]
        if answered.empty:
            row[f"{level}_{answer}"] = math.nan
            continue
        result = alternative_annotator_test(answered, people[people["topic"].isin(answered["topic"])],
                                            answer=answer, level=level)
        row[f"{level}_{answer}"] = result.advantage_probability
    return row


def format_proxann_table(calibration: ProxAnnCalibration) -> str:
    """The calibration as text: per scorer, the topic-ranking τ (SE) [95%] of fit and rank
    against people's, the mean per-document τ against people, and the advantage probabilities."""
    header = ["scorer", "τ fit (SE) [95%]", "τ rank (SE) [95%]", "doc τ fit", "doc τ rank",
              "adv doc fit", "adv doc rank", "adv topic fit", "adv topic rank"]
    lines = [header]
    advantage = calibration.advantage.set_index("judge") if len(calibration.advantage) else pd.DataFrame()
    for scorer, rows in calibration.table.groupby("scorer", sort=False):
        by_answer = rows.set_index("answer")
        cells = [scorer] + [_tau_text(*by_answer.loc[answer, ["tau", "se", "low", "high"]])
                            for answer in ("fit", "rank")]
        cells += [_number(by_answer.loc[answer, "document_tau"]) for answer in ("fit", "rank")]
        cells += [_number(advantage.loc[scorer, f"{level}_{answer}"]) if scorer in advantage.index else "–"
                  for level, answer in ALT_TEST_CELLS]
        lines.append(cells)
    own = [calibration.people[answer] for answer in ("fit", "rank")]
    lines.append(["people (left out)"] + [_tau_text(tau.mean, tau.se, tau.low, tau.high) for tau in own] + ["–"] * 6)
    widths = [max(len(line[c]) for line in lines) for c in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines)


def _tau_text(tau: float, se: float, low: float, high: float) -> str:
    return "–" if math.isnan(tau) else f"{tau:+.2f} ({se:.2f}) [{low:+.2f}, {high:+.2f}]"


def _number(value) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.2f}"


def _track(calibration: ProxAnnCalibration, endpoint, settings: JudgeSettings, records: list,
           tracking_uri: str) -> str:
    """The calibration as an MLflow run: τ, SE and advantages as metrics, the tables, answers
    and requests as artifacts, the requests as traces."""
    from mlflow.entities import Param
    from mlflow.tracking import MlflowClient

    from topicbench.tasks.llm.judge import judge_record
    from topicbench.tasks.store.traces import log_traces
    from topicbench.tasks.store.records import package_versions
    from topicbench.tasks.store.tracking import local_artifact_location

    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(PROXANN_EXPERIMENT)
    experiment_id = found.experiment_id if found else client.create_experiment(
        PROXANN_EXPERIMENT, artifact_location=local_artifact_location(tracking_uri, PROXANN_EXPERIMENT))
    run = client.create_run(experiment_id, run_name=f"proxann-calibration-{endpoint.model}",
                            tags={MODEL_TAG: endpoint.model, "topicbench.role": "calibration",
                                  "topicbench.protocol": "proxann"})
    run_id = run.info.run_id
    params = {**{f"llm.{k}": v for k, v in endpoint.record().items()},
              **{f"llm.judge.{k}": v for k, v in judge_record(settings).items()},
              "topics": calibration.topics, **{f"version.{k}": v for k, v in package_versions().items()}}
    client.log_batch(run_id, params=[Param(str(k)[:250], str(v)[:6000]) for k, v in params.items()])
    own = calibration.table[calibration.table["scorer"] == endpoint.model]
    for row in own.itertuples():
        for part in ("tau", "se", "low", "high", "document_tau"):
            if math.isfinite(getattr(row, part)):
                client.log_metric(run_id, f"proxann.{row.answer}.{part}", getattr(row, part))
    for answer, tau in calibration.people.items():  # people's own τ: what the judge's is read against
        for part, value in (("tau", tau.mean), ("se", tau.se), ("low", tau.low), ("high", tau.high)):
            if math.isfinite(value):
                client.log_metric(run_id, f"proxann.people.{answer}.{part}", value)
    for key, value in calibration.advantage.set_index("judge").loc[endpoint.model].items():
        if math.isfinite(value):
            client.log_metric(run_id, f"proxann.advantage.{key}", value)
    client.log_metric(run_id, "llm_requests", calibration.requests)
    client.log_metric(run_id, "llm_cached_replies", calibration.cached)
    with tempfile.TemporaryDirectory(prefix="topicbench-proxann-") as folder:
        Path(folder, "proxann_calibration.txt").write_text(format_proxann_table(calibration) + "\n", encoding="utf-8")
        calibration.table.to_csv(Path(folder, "topic_ranking_tau.csv"), index=False)
        calibration.advantage.to_csv(Path(folder, "advantage_probabilities.csv"), index=False)
        calibration.answers.to_csv(Path(folder, "answers.csv"), index=False)
        (Path(folder) / "llm").mkdir()
        Path(folder, "llm", "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records),
                                                         encoding="utf-8")
        client.log_artifacts(run_id, folder)
    log_traces(tracking_uri, experiment_id, run_id, records)
    client.set_terminated(run_id, "FINISHED")
    return run_id
