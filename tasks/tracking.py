"""MLflow tracking: one parent run per benchmark, one nested run per (corpus, model, seed).

Everything goes through an explicit ``MlflowClient`` (no global active run), from the flow's
process. Metric keys such as ``umass@10`` are stored as ``umass_top10`` (MLflow names cannot hold
'@'); :func:`score_key` maps them back.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import traceback
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
from prefect import task
from prefect.cache_policies import NONE

from .records import git_commit, package_versions

logger = logging.getLogger(__name__)

PARENT_ROLE, FIT_ROLE = "benchmark", "fit"
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
_TOP = re.compile(r"^(.*)_top(\d+)$")


def tracked_name(key: str) -> str:
    return key.replace("@", "_top")


def score_key(name: str) -> str:
    match = _TOP.match(name)
    return f"{match.group(1)}@{match.group(2)}" if match else name


class TrackingError(RuntimeError):
    """The tracking store cannot be used (unreachable server, unwritable database)."""


def local_artifact_location(tracking_uri: str, experiment: str) -> str | None:
    """For a sqlite file store, artifacts beside the database (``<db folder>/mlartifacts/<experiment>``)
    rather than MLflow's default ``./mlruns`` under whatever folder the command ran in; for any
    other store, None (the server's or MLflow's default)."""
    if not tracking_uri.startswith("sqlite:///") or ":memory:" in tracking_uri:
        return None
    database = Path(tracking_uri[len("sqlite:///"):])
    folder = database.resolve().parent / "mlartifacts" / re.sub(r"[^A-Za-z0-9._-]+", "_", experiment)
    return folder.as_uri()


def check_tracking_uri(uri: str, timeout: float = 5.0) -> None:
    """Fail early, before any work, if the tracking store cannot be reached."""
    parsed = urlparse(uri)
    if parsed.scheme in ("http", "https"):
        import requests

        try:
            response = requests.get(uri.rstrip("/") + "/health", timeout=timeout)
            response.raise_for_status()
        except requests.RequestException as error:
            raise TrackingError(f"the MLflow tracking server at {uri} is unreachable: {error}") from None
    elif parsed.scheme == "sqlite":
        path = Path(uri[len("sqlite:///"):]) if uri.startswith("sqlite:///") else None
        if path is not None and str(path) not in ("", ":memory:"):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise TrackingError(f"cannot create the folder of the tracking database {path}: {error}") from None
            if not os.access(path.parent, os.W_OK):
                raise TrackingError(f"the tracking database folder {path.parent} is not writable")


class Tracker:
    """Reads and writes the runs of one MLflow experiment."""

    def __init__(self, tracking_uri: str, experiment: str):
        from mlflow.tracking import MlflowClient

        check_tracking_uri(tracking_uri)
        self.tracking_uri = tracking_uri
        self.client = MlflowClient(tracking_uri)
        found = self.client.get_experiment_by_name(experiment)
        self.experiment_id = found.experiment_id if found else self.client.create_experiment(
            experiment, artifact_location=local_artifact_location(tracking_uri, experiment)
        )
        self.experiment = experiment

    # -- parent -------------------------------------------------------------------------------

    def open_parent(self, config) -> str:
        run = self.client.create_run(
            self.experiment_id,
            run_name=f"{config.experiment}-benchmark",
            tags={"topicbench.role": PARENT_ROLE, "experiment": config.experiment,
                  "topicbench.config_fingerprint": config.fingerprint()},
        )
        run_id = run.info.run_id
        self.client.log_batch(run_id, params=_params({
            "config_fingerprint": config.fingerprint(), "git_commit": git_commit(),
            "corpora": ",".join(c.name for c in config.corpora),
            "models": ",".join(m.name for m in config.models),
            "seeds": ",".join(map(str, config.seeds)), "metrics": ",".join(config.metrics),
            "top_n": ",".join(map(str, config.top_n)),
        }))
        self._log_json(run_id, config.to_dict(), "config.json")
        return run_id

    def close_parent(self, run_id: str, summary: dict, failed: list) -> None:
        self._log_json(run_id, summary, "summary.json")
        self.client.set_tag(run_id, "topicbench.failed_runs", str(len(failed)))
        self.client.set_terminated(run_id, "FAILED" if failed else "FINISHED")

    # -- resume -------------------------------------------------------------------------------

    def finished_run_keys(self) -> set:
        """Run keys of nested runs that finished successfully (to skip on a re-run)."""
        runs = self.client.search_runs(
            [self.experiment_id],
            filter_string=f"tags.`topicbench.role` = '{FIT_ROLE}' and attributes.status = 'FINISHED'",
            max_results=50_000,
        )
        return {r.data.tags.get("topicbench.run_key") for r in runs}

    # -- nested runs --------------------------------------------------------------------------

    def _start_nested(self, parent_id: str, job) -> str:
        run = self.client.create_run(
            self.experiment_id,
            run_name=f"{job.corpus.name}/{job.model.name}/seed{job.seed}",
            tags={
                "mlflow.parentRunId": parent_id, "topicbench.role": FIT_ROLE,
                "topicbench.run_key": job.key, "experiment": self.experiment,
                "corpus": job.corpus.name, "model": job.model.name, "model_class": job.model.model,
                "seed": str(job.seed),
            },
        )
        run_id = run.info.run_id
        self.client.log_batch(run_id, params=_params(job.record()))
        changed = changed_settings(job.model.model, job.model.settings)
        if changed:
            self.client.set_tag(run_id, "topicbench.changed_settings", json.dumps(changed, default=str)[:4900])
        self._log_corpus_input(run_id, job)
        return run_id

    def log_model_run(self, parent_id: str, job, output, scores: dict, skipped: dict) -> str:
        run_id = self._start_nested(parent_id, job)
        resolved = {f"resolved.{k}": v for k, v in output.settings.items() if k.endswith("_")}
        if resolved:
            self.client.log_batch(run_id, params=_params(resolved))
        metrics = {"fit_seconds": output.fit_seconds, "num_topics_used": output.n_topics}
        if output.peak_memory_mb is not None:
            metrics["peak_memory_mb"] = output.peak_memory_mb
        metrics.update({k: v for k, v in output.extra.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
        if "converged" in output.extra:
            metrics["converged"] = float(output.extra["converged"])
            self.client.set_tag(run_id, "topicbench.training_loss_kind", output.extra.get("training_loss_kind", ""))
        metrics.update(scores)
        self._log_metrics(run_id, metrics)
        self._log_training_curve(run_id, output.extra)
        if skipped:
            self.client.set_tag(run_id, "topicbench.skipped_metrics", json.dumps(skipped)[:4900])
        with tempfile.TemporaryDirectory() as folder:
            folder = Path(folder)
            output.save(folder / "output")
            _write_topics(output, folder)
            self.client.log_artifacts(run_id, str(folder))
        self.client.set_terminated(run_id, "FINISHED")
        return run_id

    def log_failed_run(self, parent_id: str, job, error: BaseException) -> str:
        run_id = self._start_nested(parent_id, job)
        message = f"{type(error).__name__}: {error}"
        self.client.set_tag(run_id, "topicbench.error", message[:4900])
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        self.client.log_text(run_id, text, "error.txt")
        self.client.set_terminated(run_id, "FAILED")
        return run_id

    # -- helpers ------------------------------------------------------------------------------

    def _log_metrics(self, run_id: str, metrics: dict) -> None:
        from mlflow.entities import Metric

        stamp = int(__import__("time").time() * 1000)
        entries = [
            Metric(tracked_name(k), float(v), stamp, 0)
            for k, v in metrics.items() if v is not None and np.isfinite(float(v))
        ]
        for start in range(0, len(entries), 900):
            self.client.log_batch(run_id, metrics=entries[start : start + 900])

    def _log_training_curve(self, run_id: str, extra: dict) -> None:
        """An iterative fit's loss per epoch (or recorded iteration) as the metric history of
        ``training_loss``, one step per point, so MLflow's UI and the report can plot it."""
        from mlflow.entities import Metric

        losses, steps = extra.get("training_loss"), extra.get("training_steps")
        if not losses:
            return
        stamp = int(__import__("time").time() * 1000)
        entries = [Metric("training_loss", float(v), stamp, int(step)) for v, step in zip(losses, steps) if np.isfinite(v)]
        for start in range(0, len(entries), 900):
            self.client.log_batch(run_id, metrics=entries[start : start + 900])

    def training_curves(self, run_ids) -> dict:
        """{run id: (steps, losses)} of the runs that logged a ``training_loss`` history."""
        curves = {}
        for run_id in run_ids:
            history = sorted(self.client.get_metric_history(run_id, "training_loss"), key=lambda m: m.step)
            if history:
                curves[run_id] = ([m.step for m in history], [m.value for m in history])
        return curves

    def _log_json(self, run_id: str, data: dict, name: str) -> None:
        self.client.log_text(run_id, json.dumps(data, indent=1, default=str), name)

    def _log_corpus_input(self, run_id: str, job) -> None:
        from mlflow.data.meta_dataset import MetaDataset
        from mlflow.data.sources import LocalArtifactDatasetSource
        from mlflow.entities import DatasetInput, InputTag

        corpus = job.corpus_data
        dataset = MetaDataset(
            LocalArtifactDatasetSource(corpus.source or corpus.name), name=corpus.name,
            digest=corpus.fingerprint()[:36],
        )
        self.client.log_inputs(
            run_id, datasets=[DatasetInput(dataset._to_mlflow_entity(), tags=[InputTag("mlflow.data.context", "training")])]
        )


@task(name="log_model_run", retries=3, retry_delay_seconds=[1, 2, 4], cache_policy=NONE)
def log_model_run(tracker: Tracker, parent_id: str, job, output, scores: dict, skipped: dict) -> str:
    return tracker.log_model_run(parent_id, job, output, scores, skipped)


@task(name="log_failed_run", retries=3, retry_delay_seconds=[1, 2, 4], cache_policy=NONE)
def log_failed_run(tracker: Tracker, parent_id: str, job, error: BaseException) -> str:
    return tracker.log_failed_run(parent_id, job, error)


def _params(values: dict) -> list:
    from mlflow.entities import Param

    return [Param(str(k)[:250], str(v)[:6000]) for k, v in values.items()]


def _write_topics(output, folder: Path) -> None:
    import pandas as pd

    records = [
        {"topic": k, "label": (output.topic_labels or [None] * output.n_topics)[k], "words": " ".join(words)}
        for k, words in enumerate(output.topics)
    ]
    (folder / "topics.json").write_text(json.dumps(records, indent=1, ensure_ascii=False), encoding="utf-8")
    pd.DataFrame(records).to_csv(folder / "topics.csv", index=False)


def changed_settings(model: str, settings: dict) -> dict:
    """{setting: [value, default]} for each setting given that differs from the model's default
    (a run trained otherwise than its authors ship the model, which the report flags)."""
    from topicbench.baselines.registry import MODELS

    defaults = MODELS.get(model).defaults
    as_json = lambda value: json.loads(json.dumps(value, default=str))  # (100, 100) == [100, 100]
    return {key: [value, defaults.get(key)] for key, value in settings.items() if as_json(value) != as_json(defaults.get(key))}


def run_record(corpus, model_spec, seed: int, config) -> dict:
    """Every setting needed to repeat one (corpus, model, seed) run, flattened for MLflow params."""
    import numba

    record = {
        "corpus": corpus.name, "corpus_fingerprint": corpus.fingerprint(), "corpus_source": corpus.source,
        "corpus_documents": corpus.n_documents, "corpus_vocabulary": corpus.n_words, "corpus_tokens": corpus.n_tokens,
        "model": model_spec.model, "model_label": model_spec.name, "num_topics": model_spec.num_topics, "seed": seed,
        "config_fingerprint": config.fingerprint(), "git_commit": git_commit(), "numba_threads": numba.get_num_threads(),
        "metrics": ",".join(model_spec.metrics or config.metrics), "top_n": ",".join(map(str, config.top_n)),
    }
    record.update({f"preprocessing.{k}": v for k, v in corpus.preprocessing.items()})
    from topicbench.baselines.registry import MODELS

    settings = {**MODELS.get(model_spec.model).defaults, **model_spec.settings}
    record.update({f"settings.{k}": v for k, v in settings.items()})
    record.update({f"version.{k}": v for k, v in package_versions().items()})
    return record
