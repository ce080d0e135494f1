"""``topicbench judge calibrate``: how far an LLM judge agrees with people, measured on Hoyle et
al.'s 300 human-judged topics and tracked, so that every report showing its scores can say.

The endpoint rates each topic and spots intruders in it exactly as in a benchmark
(:mod:`topicbench.core.metrics.llm_judging`; intruders come from the other topics of the same
model and corpus); :func:`~topicbench.core.metrics.calibration.calibration_table` compares its
scores, and the automated coherences of the file, with people's. The run is an MLflow run of the
experiment ``judge-calibration``, tagged with the endpoint's model, holding the table as metrics
and artifacts and every request as a trace.
"""

from __future__ import annotations

import json
import logging
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from topicbench.core.metrics.bootstrap import BOOTSTRAP_RESAMPLES
from topicbench.core.metrics.calibration import NOT_MEASURABLE, RANKING_TAU_READING, calibration_table
from topicbench.core.metrics.llm_judging import JudgeSettings, draw_intruders, intrusion_scores, rate_topics
from topicbench.tasks.results.calibration_runs import CALIBRATION_EXPERIMENT, MODEL_TAG, latest_calibration  # noqa: F401 - the judge's API

from .console import CONSOLE

logger = logging.getLogger(__name__)

#: What a constant answer would score here: Spearman's ρ of a constant is undefined (it orders
#: no topic before another), so it says nothing of the judge's agreement with people.
CONSTANT_ANSWER_READING = ("A constant answer gets no ρ against people (it orders no topic before another): do not "
                           "read its scores as people's judgment")
@dataclass(frozen=True)
class Calibration:
    """A calibration's table (rows of :func:`calibration_table`), what it asked, and its run."""

    rows: list
    model: str
    topics: int
    requests: int
    cached: int
    seconds: float
    run_id: str | None = None


def judge_human_topics(topics: list, judge, settings: JudgeSettings, seed: int = 0) -> dict:
    """{"llm_rating": per-topic scores, "llm_intrusion": per-topic scores} of ``topics``; each
    topic's intruders are drawn from the other topics of its (dataset, model)."""
    word_lists = [list(topic.words) for topic in topics]
    everything = list(range(len(topics)))
    rated = rate_topics(word_lists, everything, judge, settings, seed)
    drawn = {}
    for group in sorted({(t.dataset, t.model) for t in topics}):
        rows = [i for i, t in enumerate(topics) if (t.dataset, t.model) == group]
        local = draw_intruders([word_lists[i] for i in rows], range(len(rows)), settings, seed)
        drawn.update({(rows[topic], draw): word for (topic, draw), word in local.items()})
    spotted = intrusion_scores(word_lists, everything, drawn, judge, settings, seed)
    return {"llm_rating": list(rated.scores), "llm_intrusion": list(spotted.scores)}


def calibrate(endpoint, settings: JudgeSettings, topics: list, *, tracking_uri: str | None, topics_per_model=None,
              draws: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> Calibration:
    """Judge the human-judged ``topics`` (:func:`~topicbench.core.metrics.calibration.read_human_judgments`,
    read and checked before any request) with ``endpoint``, compare with people, and track the run."""
    from topicbench.tasks.llm.judge import EndpointJudge

    if topics_per_model is not None:
        topics = [t for t in topics if t.index < topics_per_model]
    judge = EndpointJudge(endpoint)
    started = time.perf_counter()
    logger.info("judging %d human-judged topics with %s at %s", len(topics), endpoint.model, endpoint.base_url,
                extra=CONSOLE)
    scores = judge_human_topics(topics, judge, settings, seed)
    records = judge.take_records()
    rows = calibration_table(topics, scores, np.random.default_rng(seed), draws=draws)
    asked = sum(not record["cached"] for record in records)
    calibration = Calibration(rows, endpoint.model, len(topics), asked, len(records) - asked, time.perf_counter() - started)
    run_id = None
    if tracking_uri is not None:
        run_id = _track(calibration, endpoint, settings, topics, scores, records, tracking_uri, draws)
    return Calibration(**{**calibration.__dict__, "run_id": run_id})


def format_table(calibration: Calibration) -> str:
    """The table as text: ρ [95% interval] against people's ratings and intrusion, and the
    model-ranking agreement (Kendall's τ, descriptive) per dataset, one row per measure; a measure
    whose answers are constant shows that its agreement is not measurable; then how the
    intervals were made and how to read the τ."""
    datasets = sorted(next(iter(calibration.rows))["ranking"]) if calibration.rows else []
    header = ["measure", "ρ vs ratings [95%]", "ρ vs intrusion [95%]", *[f"τ models {d}" for d in datasets], "topics"]
    lines = [header]
    for row in calibration.rows:
        taus = [row["ranking"][d]["tau"] for d in datasets]
        agreement = [NOT_MEASURABLE] * 2 if row.get("constant") else [row["rating"].as_text(), row["intrusion"].as_text()]
        lines.append([row["measure"], *agreement, *["–" if math.isnan(t) else f"{t:+.2f}" for t in taus],
                      str(row["scored"])])
    widths = [max(len(line[c]) for line in lines) for c in range(len(header))]
    table = "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines)
    return "\n".join([table, *table_notes(calibration)])


def table_notes(calibration: Calibration) -> list:
    """How the ρ intervals were made (what was resampled, how often), and that the models' τ is descriptive."""
    methods = sorted({method for row in calibration.rows for against in ("rating", "intrusion")
                      if (method := getattr(row[against], "method", ""))})
    models = sorted({entry["models"] for row in calibration.rows for entry in row["ranking"].values()
                     if entry.get("models")})
    notes = [f"ρ: Spearman's ρ over the topics; [95% interval]: {'; '.join(methods)}."] if methods else []
    if models:
        notes.append(RANKING_TAU_READING.format(models=" or ".join(map(str, models))) + ".")
    return notes


def verdict(calibration: Calibration) -> str:
    """One sentence on whether the judge's scores can be trusted, by its two ρ against people; a
    judge whose answers are constant is said to be so first: no ρ measures it."""
    llm = [row for row in calibration.rows if row["measure"].startswith("llm_")]
    constant = [row for row in llm if row.get("constant")]
    weak = [row["measure"] for row in llm if row["rating" if row["measure"] == "llm_rating" else "intrusion"].weak]
    if not llm:
        return "no LLM score was computed"
    if constant:
        return (f"{NOT_MEASURABLE}: " + "; ".join(f"{row['measure']} of {calibration.model} gave "
                                                   f"{row['constant'].value:g} to {row['constant'].share:.0%} of "
                                                   f"{row['constant'].items} topics" for row in constant)
                + f". {CONSTANT_ANSWER_READING}")
    if weak:
        return (f"weak: {', '.join(weak)} of {calibration.model} agree little with people (ρ below 0.3 or an interval "
                "reaching 0); do not read its scores as people's judgment")
    return f"{calibration.model}'s scores agree with people (ρ at least 0.3, intervals above 0)"


def calibration_markdown(calibration: Calibration) -> str:
    """``calibration.md``: the table verbatim in a code block (its columns aligned), then the
    verdict, whose model name is shown as given (:mod:`topicbench.tasks.report.text`)."""
    from topicbench.tasks.report.text import markdown_code_block, markdown_paragraph, markdown_text

    return markdown_code_block(format_table(calibration)) + "\n" + markdown_paragraph(markdown_text(verdict(calibration))) + "\n"


def _track(calibration: Calibration, endpoint, settings: JudgeSettings, topics: list, scores: dict, records: list,
           tracking_uri: str, draws: int) -> str:
    """The calibration as an MLflow run: ρ and intervals as metrics, the table and every question
    as artifacts, the requests as traces."""
    from mlflow.entities import Param
    from mlflow.tracking import MlflowClient

    from topicbench.tasks.llm.judge import judge_record
    from topicbench.tasks.store.traces import log_traces
    from topicbench.tasks.store.records import package_versions
    from topicbench.tasks.store.tracking import local_artifact_location

    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(CALIBRATION_EXPERIMENT)
    experiment_id = found.experiment_id if found else client.create_experiment(
        CALIBRATION_EXPERIMENT, artifact_location=local_artifact_location(tracking_uri, CALIBRATION_EXPERIMENT))
    run = client.create_run(experiment_id, run_name=f"calibration-{endpoint.model}",
                            tags={MODEL_TAG: endpoint.model, "topicbench.role": "calibration"})
    run_id = run.info.run_id
    params = {**{f"llm.{k}": v for k, v in endpoint.record().items()},
              **{f"llm.judge.{k}": v for k, v in judge_record(settings).items()},
              "topics": len(topics), "bootstrap_draws": draws, **{f"version.{k}": v for k, v in package_versions().items()}}
    client.log_batch(run_id, params=[Param(str(k)[:250], str(v)[:6000]) for k, v in params.items()])
    for row in calibration.rows:
        for against in ("rating", "intrusion"):
            correlation = row[against]
            for part in ("rho", "low", "high"):
                value = getattr(correlation, part)
                if math.isfinite(value):
                    client.log_metric(run_id, f"{row['measure']}.{against}.{part}", value)
    for row in calibration.rows:  # a judge with constant answers: no ρ above, and this says why
        if row.get("constant"):
            client.log_metric(run_id, f"{row['measure']}.constant_share", row["constant"].share)
            client.set_tag(run_id, f"topicbench.constant_answers.{row['measure']}", row["constant"].as_text("topics"))
    client.log_metric(run_id, "llm_requests", calibration.requests)
    client.log_metric(run_id, "llm_cached_replies", calibration.cached)
    with tempfile.TemporaryDirectory(prefix="topicbench-calibration-") as folder:
        Path(folder, "calibration.md").write_text(calibration_markdown(calibration), encoding="utf-8")
        Path(folder, "calibration.json").write_text(json.dumps(_as_json(calibration), indent=1), encoding="utf-8")
        Path(folder, "topic_scores.json").write_text(json.dumps(
            [{"dataset": t.dataset, "model": t.model, "topic": t.index, **{k: v[i] for k, v in scores.items()},
              "human_rating": t.human_rating, "human_intrusion": t.human_intrusion} for i, t in enumerate(topics)],
            indent=1), encoding="utf-8")
        (Path(folder) / "llm").mkdir()
        Path(folder, "llm", "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        client.log_artifacts(run_id, folder)
    log_traces(tracking_uri, experiment_id, run_id, records)
    client.set_terminated(run_id, "FINISHED")
    return run_id


def _as_json(calibration: Calibration) -> dict:
    return {
        "model": calibration.model, "topics": calibration.topics, "verdict": verdict(calibration),
        "rows": [{"measure": row["measure"], "scored": row["scored"], "ranking": row["ranking"],
                  "constant": row["constant"].as_text("topics") if row.get("constant") else None,
                  **{against: {"rho": row[against].rho, "low": row[against].low, "high": row[against].high,
                               "n": row[against].n, "method": row[against].method}
                     for against in ("rating", "intrusion")}} for row in calibration.rows],
    }
