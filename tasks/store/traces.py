"""The LLM metrics' requests as MLflow traces: one trace per request made (cached replies cost
nothing and make none), with its messages, reply, token usage and timing, linked to its run, so
that the tracking UI's GenAI view shows real traces beside the runs.

The questions are asked where a fit is scored (a Dask worker, maybe on another host); they come
back as a run's artifact ``llm/requests.jsonl`` with their start and end times, and the flow
process, which alone talks to the tracking store, turns them into traces after the fact.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from topicbench.core.jsonl import read_json_lines

logger = logging.getLogger(__name__)
# exported as each trace ends: a benchmark logs its traces between fits, and MLflow's background
# queue would otherwise flush at exit, after the command's last line
os.environ.setdefault("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")


def read_records(folder) -> list:
    """The records of ``llm/requests.jsonl`` (the metrics' questions) and ``llm/fit_requests.jsonl``
    (a model's own, TopicGPT's) in a run's artifacts folder (none when absent)."""
    from topicbench.tasks.store.artifacts import LLM_FIT_RECORDS, LLM_RECORDS

    paths = [Path(folder) / name for name in (LLM_FIT_RECORDS, LLM_RECORDS)]
    return [record for path in paths if path.is_file()
            for record in read_json_lines(path.read_text(encoding="utf-8"), where=path.name)]


def log_traces(tracking_uri: str, experiment_id: str, run_id: str, records: list) -> int:
    """One trace per request made (``cached`` false), linked to ``run_id``; returns how many.

    MLflow exports traces to its global tracking URI, so it is pointed at ``tracking_uri`` (the
    flow process tracks to that store only), and the export is flushed before returning.
    """
    import mlflow
    from mlflow import MlflowClient

    asked = [record for record in records if not record.get("cached") and record.get("started_ns")]
    if not asked:
        return 0
    mlflow.set_tracking_uri(tracking_uri)
    client = MlflowClient(tracking_uri)
    for record in asked:
        span = client.start_trace(
            f"llm_{record['task']}", span_type="CHAT_MODEL", inputs={"messages": record["messages"]},
            attributes={"model": record["model"], "task": record["task"], "sample": record["sample"]},
            experiment_id=experiment_id, run_id=run_id, start_time_ns=int(record["started_ns"]),
            tags={"topicbench.llm_task": record["task"]},
        )
        usage = {"input_tokens": record["prompt_tokens"], "output_tokens": record["completion_tokens"],
                 "total_tokens": record["prompt_tokens"] + record["completion_tokens"]}
        client.end_trace(span.trace_id, outputs={"content": record["reply"]},
                         attributes={"mlflow.chat.tokenUsage": usage}, end_time_ns=int(record["ended_ns"]))
    _flush()
    return len(asked)


def _flush() -> None:
    import mlflow

    flush = getattr(mlflow, "flush_trace_async_logging", None)
    if flush is not None:
        flush(terminate=False)
