"""``topicbench judge calibrate --protocol proxann``: how far a document-level judge (``llm_fit``,
``llm_rank``) agrees with people, on the questions ProxAnn's participants answered (24 Bills
topics), beside the released answers of seven LLMs scored by the same code.

The endpoint is asked each study topic's category, each evaluation document's fit and every
pair's order (:mod:`topicbench.core.metrics.proxann_questions`, the prompts of ``llm_fit`` and
``llm_rank``); the answers, people's and the released LLMs' are scored by
:mod:`topicbench.core.metrics.proxann_agreement` (topic-ranking τ against people with SE and
bootstrap interval and ProxAnn's replay, per-document τ against people, NPMI's and C_V's τ, people's
own) and
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
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from topicbench.core.metrics.alternative_annotator import alternative_annotator_test, constant_judge
from topicbench.core.metrics.calibration import constant_answers
from topicbench.core.metrics.llm_judging import JudgeSettings
from topicbench.core.metrics.proxann_agreement import ANSWERS, calibration_table, people_ranking_tau, seed_means
from topicbench.core.metrics.proxann_questions import study_answers, study_questions
from topicbench.tasks.results.calibration_runs import MODEL_TAG, PROXANN_EXPERIMENT

from .console import CONSOLE

logger = logging.getLogger(__name__)

#: The alternative annotator test's four cells: (level, answer).
ALT_TEST_CELLS = (("document", "fit"), ("document", "rank"), ("topic", "fit"), ("topic", "rank"))
#: The figures of an answer whose values are constant: not shown as agreement (see ``constant``).
TAU_PARTS = ("tau", "se", "low", "high", "proxann_tau", "proxann_se", "document_tau")
#: What is logged of each row of the endpoint's (``proxann.<answer>.<part>``) and of people's own
#: τ (``proxann.people.<answer>.<part>``): the report reads them back.
LOGGED_PARTS = ("tau", "se", "low", "high", "resamples", "n_topics", "proxann_tau", "proxann_se", "document_tau")


@dataclass(frozen=True)
class ProxAnnCalibration:
    """A document-level calibration: the topic-ranking table (rows of
    :func:`~topicbench.core.metrics.proxann_agreement.calibration_table`), people's own τ, the
    advantage probabilities (with a last row, :func:`constant_answer_name`, of what a constant
    answer gets), the endpoint's answers, what was asked, and the run; ``constant``: answer (fit,
    rank) -> :class:`~topicbench.core.metrics.calibration.ConstantAnswers` where the endpoint's
    answers are (nearly) all one value (its τ and advantages for them are then NaN: not measurable)."""

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
    constant: dict = field(default_factory=dict)


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
    table = calibration_table(judges, people, evaluation, release.coherences[release.coherences["topic"].isin(kept)],
                              seed=seed)
    advantage = pd.DataFrame([_advantage(name, answers_of, people) for name, answers_of in judges.items()])
    constant = {answer: constant_answers(answers[answer], answers["topic"]) for answer in ANSWERS}
    table, advantage = _not_measurable(table, advantage, endpoint.model, constant)
    advantage = pd.concat([advantage, pd.DataFrame([_constant_advantage(answers, people, constant)])],
                          ignore_index=True)
    asked = sum(not record["cached"] for record in records)
    calibration = ProxAnnCalibration(table, people_ranking_tau(people, evaluation, seed=seed), advantage, answers,
                                     endpoint.model, len(topics), asked, len(records) - asked,
                                     time.perf_counter() - started, constant=constant)
    run_id = None if tracking_uri is None else _track(calibration, endpoint, settings, records, tracking_uri)
    return ProxAnnCalibration(**{**calibration.__dict__, "run_id": run_id})


def _not_measurable(table: pd.DataFrame, advantage: pd.DataFrame, model: str, constant: dict) -> tuple:
    """The table and advantages with the endpoint's figures for a constant answer blanked (NaN):
    a τ of near-constant answers rests on the few others, and the alternative annotator test
    rewards a constant near people's mean (a judge always answering 4 "beat" people on 71% of
    documents), so neither is agreement."""
    table, advantage = table.copy(), advantage.copy()
    for answer, found in constant.items():
        if found is None:
            continue
        table.loc[(table["scorer"] == model) & (table["answer"] == answer), list(TAU_PARTS)] = math.nan
        cells = [f"{level}_{cell}" for level, cell in ALT_TEST_CELLS if cell == answer]
        advantage.loc[advantage["judge"] == model, cells] = math.nan
    return table, advantage


def constant_fit(answers: pd.DataFrame, people: pd.DataFrame, constant: dict) -> float:
    """The fit a constant answer gives: the endpoint's own where its fits are constant, else
    people's mean fit rounded to the scale (the constant nearest the average person, which the
    test rewards most)."""
    if constant.get("fit") is not None:
        return constant["fit"].value
    return float(min(5, max(1, round(people["fit"].mean()))))


def constant_answer_name(fit: float) -> str:
    return f"constant answer (fit {fit:g}, ranks tied)"


def _constant_advantage(answers: pd.DataFrame, people: pd.DataFrame, constant: dict) -> dict:
    """The advantage probabilities of a constant answer, scored by the same test as the judges."""
    fit = constant_fit(answers, people, constant)
    return _advantage(constant_answer_name(fit), constant_judge(answers, fit), people)


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
    """The calibration as text: per scorer, the topic-ranking τ [95% bootstrap interval] of fit and
    rank against people's, ProxAnn's protocol replayed (mean (SE) of its 50 resamples at seed 42),
    the mean per-document τ against people, and the advantage probabilities; then how each figure
    was made (n topics, resamples, people's dropped draws), what a constant answer gets, and,
    where the endpoint's answers are constant, that its agreement is not measurable."""
    header = ["scorer", "τ fit [95%]", "τ rank [95%]", "ProxAnn's protocol fit", "ProxAnn's protocol rank",
              "doc τ fit", "doc τ rank", "adv doc fit", "adv doc rank", "adv topic fit", "adv topic rank"]
    lines = [header]
    advantage = calibration.advantage.set_index("judge") if len(calibration.advantage) else pd.DataFrame()
    for scorer, rows in calibration.table.groupby("scorer", sort=False):
        by_answer = rows.set_index("answer")
        cells = [scorer] + [_tau_text(*by_answer.loc[answer, ["tau", "low", "high"]]) for answer in ANSWERS]
        cells += [_replay_text(*by_answer.loc[answer, ["proxann_tau", "proxann_se"]]) for answer in ANSWERS]
        cells += [_number(by_answer.loc[answer, "document_tau"]) for answer in ANSWERS]
        cells += [_number(advantage.loc[scorer, f"{level}_{answer}"]) if scorer in advantage.index else "–"
                  for level, answer in ALT_TEST_CELLS]
        if scorer == calibration.model:  # a constant answer's cells say so, not "–"
            flagged = [answer for answer, found in calibration.constant.items() if found is not None]
            columns = list(ANSWERS) * 3 + [answer for _, answer in ALT_TEST_CELLS]
            cells = cells[:1] + ["not measurable" if answer in flagged else cell
                                 for cell, answer in zip(cells[1:], columns)]
        lines.append(cells)
    for scorer in [name for name in advantage.index if name not in set(calibration.table["scorer"])]:
        lines.append([scorer] + ["–"] * 6 + [_number(advantage.loc[scorer, f"{level}_{answer}"])
                                             for level, answer in ALT_TEST_CELLS])
    own = [calibration.people[answer] for answer in ANSWERS]
    lines.append(["people (one left out)"] + [_people_text(tau) for tau in own] + ["–"] * 8)
    widths = [max(len(line[c]) for line in lines) for c in range(len(header))]
    table = "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines)
    return "\n".join([table, *method_notes(calibration), *constant_answer_notes(calibration)])


def method_notes(calibration: ProxAnnCalibration) -> list:
    """How the figures were made: the headline τ's topics, resamples and method; ProxAnn's
    replay named as such; people's spread named for what it is, with the dropped draws counted."""
    shown = calibration.table[calibration.table["resamples"] > 0]
    methods = sorted(set(shown["method"])) if len(shown) else []
    notes = [f"τ: Kendall's τ over topics on the data as given, [95% interval]: {'; '.join(methods) or 'none'}. "
             "ProxAnn's protocol: mean (SE) of 50 resamples at seed 42, a replay of one seed's draw, not the figure."]
    people = calibration.people
    draws = ", ".join(f"{answer}: {tau.dropped_text()}" for answer, tau in people.items())
    notes.append(f"people (one left out): mean τ over draws of who is left out (spread over which person is left out, "
                 f"not an SE) [middle 95% of the draws]; {draws}.")
    return notes


def constant_answer_notes(calibration: ProxAnnCalibration) -> list:
    """A line per answer of the endpoint's that is constant: not measurable, and what a constant
    answer's advantage is (the figure a judge's own would have been read as)."""
    notes = []
    floor = calibration.advantage.iloc[-1] if len(calibration.advantage) else None
    for answer, found in calibration.constant.items():
        if found is None:
            continue
        advantages = ", ".join(f"{level} {answer} {_number(floor[f'{level}_{answer}'])}"
                               for level, cell in ALT_TEST_CELLS if cell == answer) if floor is not None else "–"
        notes.append(f"{calibration.model}: {answer} {found.as_text('documents')}; no τ and no advantage for it. "
                     f"The {floor['judge'] if floor is not None else 'constant answer'} gets advantage "
                     f"{advantages} (0.5: as good as a person), with no skill at all.")
    return notes


def _track_constant_answers(client, run_id: str, calibration: ProxAnnCalibration, floor) -> None:
    """What a constant answer's advantage is, as metrics (``proxann.constant_answer_advantage.<cell>``),
    and, per answer of the endpoint's that is constant, a tag saying its agreement is not measurable
    and the share of its most common answer as a metric."""
    for level, answer in ALT_TEST_CELLS:
        if math.isfinite(floor[f"{level}_{answer}"]):
            client.log_metric(run_id, f"proxann.constant_answer_advantage.{level}_{answer}", floor[f"{level}_{answer}"])
    for answer, found in calibration.constant.items():
        if found is not None:
            client.set_tag(run_id, f"topicbench.constant_answers.{answer}", found.as_text("documents"))
            client.log_metric(run_id, f"proxann.{answer}.constant_share", found.share)


def _tau_text(tau: float, low: float, high: float) -> str:
    return "–" if math.isnan(tau) else f"{tau:+.2f} [{low:+.2f}, {high:+.2f}]"


def _replay_text(mean: float, se: float) -> str:
    return "–" if math.isnan(mean) else f"{mean:+.2f} ({se:.2f})"


def _people_text(tau) -> str:
    if math.isnan(tau.mean):
        return "–"
    spread = "" if math.isnan(tau.spread) else f" (spread {tau.spread:.2f})"
    return f"{tau.mean:+.2f}{spread} [{tau.low:+.2f}, {tau.high:+.2f}]"


def _number(value) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.2f}"


def _track(calibration: ProxAnnCalibration, endpoint, settings: JudgeSettings, records: list,
           tracking_uri: str) -> str:
    """The calibration as an MLflow run: τ, its interval, ProxAnn's replay and advantages as metrics, the tables, answers
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
        for part in LOGGED_PARTS:
            if math.isfinite(getattr(row, part)):
                client.log_metric(run_id, f"proxann.{row.answer}.{part}", getattr(row, part))
    for answer, tau in calibration.people.items():  # people's own τ: what the judge's is read against
        for part, value in (("tau", tau.mean), ("spread", tau.spread), ("low", tau.low), ("high", tau.high),
                            ("draws", tau.draws), ("dropped", tau.dropped)):
            if math.isfinite(value):
                client.log_metric(run_id, f"proxann.people.{answer}.{part}", value)
    advantages = calibration.advantage.set_index("judge")
    for key, value in advantages.loc[endpoint.model].items():  # NaN, so not logged, for a constant answer
        if math.isfinite(value):
            client.log_metric(run_id, f"proxann.advantage.{key}", value)
    _track_constant_answers(client, run_id, calibration, advantages.iloc[-1])
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
