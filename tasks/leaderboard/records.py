"""The leaderboard as data: ``leaderboard.json`` (:func:`leaderboard_json`: every cell, a value
kept out of the ranking with its reason, and every ranking across datasets) and, one file per (dataset, model), Every Eval Ever records
(:func:`eee_records`, schema 0.3.0 of the ``every-eval-ever`` package: each metric a result whose
uncertainty carries the standard error, the confidence interval with its method and level, and n).

A number that does not exist is ``null`` (never NaN, never a zero for a deterministic model's
spread), so any JSON reader reads the files.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from datetime import datetime, timezone

from topicbench.core.metrics.stats import ALPHA, DETERMINISTIC, MIN_SEEDS_FOR_INTERVAL, RANK_BOUNDS_RULE

from topicbench.tasks.leaderboard.cross import MIN_DATASETS
from topicbench.tasks.leaderboard.ranking import Leaderboard
from topicbench.tasks.report.summary import K_FACTOR

#: The version of ``leaderboard.json``'s layout.
JSON_FORMAT = 1
#: The Every Eval Ever schema the records follow (the ``every-eval-ever`` package's eval.schema.json).
EEE_SCHEMA_VERSION = "0.3.0"
SE_METHOD = "analytic: sample sd / sqrt(n) over seeds"


def _number(value) -> float | None:
    return float(value) if value is not None and math.isfinite(float(value)) else None


def interval_record(score) -> dict | None:
    """A score's interval as data, or None where it has none (deterministic, too few seeds)."""
    if not score.has_interval:
        return None
    return {"low": score.low, "high": score.high, "level": score.level, "method": "Student-t over seeds",
            "df": score.n - 1, "n": score.n}


def _cells(leaderboard: Leaderboard):
    headline = dict(leaderboard.headline)
    for board in leaderboard.datasets:
        for entry in board.entries:
            for key, score in entry.scores.items():
                rank = entry.ranks[key]
                yield {"model": entry.model, "model_class": entry.model_class, "bundle": entry.bundle,
                       "dataset": board.corpus, "metric": key, "higher_is_better": headline[key],
                       "mean": score.mean, "n": score.n, "seeds": list(entry.seeds),
                       "se": None if score.deterministic else _number(score.se),
                       "interval": interval_record(score), "interval_method": score.method,
                       "deterministic": score.deterministic, **{f"rank_{k}" if k != "rank" else k: v
                                                               for k, v in rank.as_dict().items()},
                       "K": _number(entry.topics), "K_text": entry.num_topics,
                       "in_reference": entry.in_reference.get(key), "not_ranked": None}
            for key, (score, reason) in entry.unranked.items():  # shown with its reason, never ranked
                yield {"model": entry.model, "model_class": entry.model_class, "bundle": entry.bundle,
                       "dataset": board.corpus, "metric": key, "higher_is_better": headline[key],
                       "mean": _number(score.mean), "n": score.n, "seeds": list(entry.seeds), "se": None,
                       "interval": None, "interval_method": None, "deterministic": score.deterministic,
                       "rank": None, "rank_best": None, "rank_worst": None, "rank_of": None, "rank_tied": None,
                       "K": _number(entry.topics), "K_text": entry.num_topics, "in_reference": None,
                       "not_ranked": reason}


def _cross_record(cross) -> dict:
    result = cross.result
    test = None if result is None else {"omnibus": result.omnibus, "posthoc": result.posthoc,
                                        "p_value": _number(result.pvalue), "critical_difference": _number(result.cd),
                                        "alpha": ALPHA}
    return {"metric": cross.metric, "higher_is_better": cross.higher, "group": cross.group,
            "datasets": list(cross.datasets), "test": test, "no_test_reason": cross.reason,
            "separated_pairs": [list(pair) for pair in cross.separated], "separated_by": cross.separated_by,
            "left_out": list(cross.left_out),
            "models": [{"model": m, "position": cross.position(m), "tied": cross.tied(m),
                        "mean_rank": cross.mean_ranks[m], "mean_rank_low": cross.rank_low[m],
                        "mean_rank_high": cross.rank_high[m],
                        "ranks": dict(zip(cross.datasets, cross.block_ranks[m])),
                        "K": [_number(k) for k in cross.topics[m]]} for m in cross.models]}


def leaderboard_json(leaderboard: Leaderboard) -> str:
    """``leaderboard.json``'s text: the rules, every (model, dataset, metric) cell and every
    ranking across datasets."""
    document = {
        "format": JSON_FORMAT,
        "bundles": [{"name": b.name, "created": b.manifest.get("created"),
                     "topicbench_version": b.manifest.get("topicbench_version"), "commit": b.manifest.get("commit")}
                    for b in leaderboard.bundles],
        "headline": [{"metric": key, "higher_is_better": higher} for key, higher in leaderboard.headline],
        "rules": {"interval": f"{1 - ALPHA:.0%} Student-t interval over seeds, none under "
                              f"{MIN_SEEDS_FOR_INTERVAL} seeds", "deterministic": DETERMINISTIC,
                  "rank_interval": RANK_BOUNDS_RULE, "min_datasets_for_test": MIN_DATASETS, "k_factor": K_FACTOR},
        "cells": list(_cells(leaderboard)),
        "across": [_cross_record(cross) for cross in leaderboard.crosses],
        "set_aside": list(leaderboard.set_aside),
    }
    return json.dumps(document, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def file_name(name: str) -> str:
    """A name as a file name: kept where it is plain, else made plain with a hash of the name, so
    two names never share a file."""
    plain = re.sub(r"[^A-Za-z0-9_.-]", "_", name).strip(".") or "_"
    return plain if plain == name else f"{plain}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def _epoch(leaderboard: Leaderboard) -> str:
    """The newest bundle's creation as Unix time (the records' ``retrieved_timestamp``), so the
    same bundles give the same records."""
    times = []
    for bundle in leaderboard.bundles:
        try:
            times.append(datetime.strptime(str(bundle.manifest.get("created")), "%Y-%m-%dT%H:%M:%S%z"))
        except ValueError:
            continue
    newest = max(times) if times else datetime.now(timezone.utc)
    return str(int(newest.timestamp()))


def _uncertainty(score) -> dict:
    found = {"num_samples": score.n}
    if not score.deterministic and math.isfinite(score.se):
        found["standard_error"] = {"value": score.se, "method": SE_METHOD}
        found["standard_deviation"] = score.se * math.sqrt(score.n)
    if score.has_interval:
        found["confidence_interval"] = {"lower": score.low, "upper": score.high, "confidence_level": score.level,
                                        "method": f"Student-t over seeds (df {score.n - 1})"}
    return found


def _result(board, entry, key: str, higher: bool) -> dict:
    score, rank = entry.scores[key], entry.ranks[key]
    details = {"rank": str(rank.rank), "rank_best": str(rank.best), "rank_worst": str(rank.worst),
               "rank_of": str(rank.of), "tied": str(rank.tied).lower(), "deterministic": str(score.deterministic).lower(),
               "interval": score.method, "seeds": ", ".join(map(str, entry.seeds))}
    return {"evaluation_result_id": f"{board.corpus}/{key}", "evaluation_name": key,
            "source_data": {"dataset_name": board.corpus, "source_type": "other", "additional_details": {
                "fingerprint": board.fingerprint, "source": board.source,
                "preprocessing": json.dumps(board.preprocessing, sort_keys=True)}},
            "metric_config": {"metric_id": f"topicbench.{key}", "metric_name": key, "lower_is_better": not higher,
                              "evaluation_description": f"{key}: the model's mean over its seeds"},
            "score_details": {"score": score.mean, "details": details, "uncertainty": _uncertainty(score)}}


def eee_records(leaderboard: Leaderboard) -> list[tuple[str, dict]]:
    """One Every Eval Ever record per (dataset, model): (its path under the records' folder,
    ``<dataset>/<model>.json``, and the record)."""
    headline, retrieved = dict(leaderboard.headline), _epoch(leaderboard)
    versions = {b.name: b.manifest for b in leaderboard.bundles}
    records = []
    for board in leaderboard.datasets:
        for entry in board.entries:
            if not entry.scores:
                continue
            manifest = versions.get(entry.bundle, {})
            record = {
                "schema_version": EEE_SCHEMA_VERSION,
                "evaluation_id": f"topicbench-leaderboard/{board.corpus}/{entry.model}/{retrieved}",
                "retrieved_timestamp": retrieved,
                "source_metadata": {"source_name": f"topicbench leaderboard, bundle {entry.bundle}",
                                    "source_type": "evaluation_run", "source_organization_name": "topicbench",
                                    "evaluator_relationship": "third_party"},
                "model_info": {"name": entry.model, "id": entry.model, "additional_details": {
                    "deployment_type": "self_deployed", "model_availability": "unknown",
                    "model_class": entry.model_class, "num_topics": entry.num_topics,
                    "settings": json.dumps(entry.settings, sort_keys=True)}},
                "eval_library": {"name": "topicbench", "version": str(manifest.get("topicbench_version", "unknown")),
                                 "additional_details": {"commit": str(manifest.get("commit", "unknown"))}},
                "evaluation_results": [_result(board, entry, key, headline[key]) for key in headline
                                       if key in entry.scores],
            }
            records.append((f"{file_name(board.corpus)}/{file_name(entry.model)}.json", record))
    return records
