"""The report's inputs read from an MLflow tracking store: the run table (one row per fit, with
its metrics, tags, training curve and first seed's topics), the benchmark's config and each
topic's own scores; and the report's files logged back to the benchmark's parent run.

:class:`~topicbench.tasks.results.sources.StoreSource` is the report's view of these functions."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from topicbench.tasks.results.runs import TOPIC_SCORES_SHOWN
from topicbench.tasks.results.runs import FINISHED
from topicbench.tasks.store.artifacts import TOPIC_DOCUMENTS, TOPIC_SCORES
from topicbench.tasks.store.fit_record import score_key
from topicbench.tasks.store.claims import FIT_ROLE, PARENT_ROLE, ROLE_TAG
from topicbench.tasks.store.checks import check_tracking_uri
from topicbench.tasks.store.tracking_error import TrackingError
from topicbench.tasks.store.filters import search_runs

logger = logging.getLogger(__name__)


def collect_runs(tracking_uri: str, experiment: str) -> pd.DataFrame:
    """One row per nested (corpus, model, seed) run: tags, status, error, every metric (score keys,
    e.g. ``umass@10``), latest run per run key, and each model's topics from its first finished
    seed (the only ones a report shows: one download per model, not one per run)."""
    from mlflow.tracking import MlflowClient

    check_tracking_uri(tracking_uri)
    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise TrackingError(f"no MLflow experiment named {experiment!r} at {tracking_uri}")
    runs = search_runs(client, [found.experiment_id], tags={ROLE_TAG: FIT_ROLE}, order_by=["attributes.start_time DESC"])
    rows = []
    for run in _latest_attempts(runs):
        _ARTIFACT_ROOTS[run.info.run_id] = run.info.artifact_uri
        tags = run.data.tags
        row = {
            "run_id": run.info.run_id, "status": run.info.status, "corpus": tags.get("corpus"),
            "model": tags.get("model"), "model_class": tags.get("model_class"), "seed": int(tags.get("seed", 0)),
            "error": tags.get("topicbench.error", ""), "run_key": tags.get("topicbench.run_key"),
        }
        row.update({score_key(name): value for name, value in run.data.metrics.items()})
        row["changed_settings"] = tags.get("topicbench.changed_settings", "")
        row["skipped_metrics"] = tags.get("topicbench.skipped_metrics", "")  # why a metric has no value
        row["training_loss_kind"] = tags.get("topicbench.training_loss_kind", "")
        if "training_loss" in run.data.metrics:
            history = sorted(client.get_metric_history(run.info.run_id, "training_loss"), key=lambda m: m.step)
            row["training_curve"] = ([m.step for m in history], [m.value for m in history])
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise TrackingError(f"experiment {experiment!r} has no tracked runs yet")
    frame = frame.sort_values(["corpus", "model", "seed"]).reset_index(drop=True)
    return _with_first_seed_topics(client, frame)


def _latest_attempts(runs) -> list:
    """One run per run key (``runs`` newest first): its latest finished attempt, else its latest
    attempt, so a fit interrupted or failed and then fitted again (or being fitted now) counts
    once, in its present state."""
    chosen = {}
    for run in runs:
        key = run.data.tags.get("topicbench.run_key") or run.info.run_id
        kept = chosen.get(key)
        if kept is None or (run.info.status == FINISHED and kept.info.status != FINISHED):
            chosen[key] = run
    return list(chosen.values())


def _with_first_seed_topics(client, frame: pd.DataFrame) -> pd.DataFrame:
    """Every model's topics on every corpus, from its first finished seed (the "topics" section
    sets them side by side): ``topics_json``, each record with the topic's ``prevalence`` where
    the run's topic-document matrix can be read and its own ``scores`` where the run logged them."""
    frame = frame.copy()
    frame["topics_json"] = frame["topics_json"].astype(object) if "topics_json" in frame else None
    done = frame[frame.status == FINISHED]
    for _, group in done.groupby(["corpus", "model"]):
        index = group.seed.idxmin()
        text = frame.at[index, "topics_json"]
        text = text if isinstance(text, str) else topics_artifact(client, frame.at[index, "run_id"])  # NaN: not read yet
        frame.at[index, "topics_json"] = with_topic_facts(client, frame.at[index, "run_id"], text)
    return frame


def with_topic_facts(client, run_id: str, text: str | None) -> str | None:
    """``topics.json``'s records, each with its topic's share of the documents (``prevalence``:
    the mean of p(topic | document)), the own ``scores`` the topics section shows and, from
    :data:`~topicbench.tasks.store.artifacts.TOPIC_DOCUMENTS`, the documents it is the main topic of
    (``documents``, ``by_label``) and its ``examples``, each where the run's artifacts hold them
    (the topics are shown either way)."""
    if not text:
        return text
    records = json.loads(text)
    documents = _topic_documents(client, run_id)
    shares = _topic_shares(client, run_id) if documents is None else None  # the facts hold the shares
    scores = _shown_topic_scores(client, run_id)
    for record in records:
        if shares is not None:
            record["prevalence"] = float(shares[record["topic"]])
        if scores is not None:
            record["scores"] = scores.get(record["topic"], {})
        if documents is not None:
            facts = documents.get(record["topic"], {})
            record["prevalence"] = facts.get("share", 0.0)
            record["documents"] = facts.get("documents", 0)
            record.update({key: facts[key] for key in ("by_label", "examples") if key in facts})
    return json.dumps(records, ensure_ascii=False)


#: run id -> its artifact URI, as :func:`collect_runs` found it (a run's artifact location never
#: changes): the artifacts of a store whose artifacts are local files are then read in place.
_ARTIFACT_ROOTS: dict = {}


def local_artifact(run_id: str, path: str) -> Path | None:
    """The run's artifact ``path`` as a local file or folder, where the run's artifacts are local
    files (a file path or ``file:`` URI, as an sqlite store keeps them) and it exists; else None
    (the artifact is then downloaded). MLflow's download of a local artifact copies it into a
    temporary folder, about a quarter of a second a file on a loaded machine: four files a model."""
    from urllib.parse import unquote, urlparse

    root = _ARTIFACT_ROOTS.get(run_id)
    if not root:
        return None
    parsed = urlparse(root)
    if parsed.scheme not in ("", "file") or (parsed.scheme == "file" and parsed.netloc not in ("", "localhost")):
        return None
    found = Path(unquote(parsed.path) if parsed.scheme == "file" else root) / path
    return found if found.exists() else None


def read_artifact(client, run_id: str, path: str, read, *, missing_level: int = logging.INFO):
    """``read(local path)`` of the run's artifact ``path`` (read in place where it is a local file:
    :func:`local_artifact`, else downloaded into a temporary folder); None, logged at
    ``missing_level``, where the run has no such artifact or it cannot be read."""
    import tempfile

    try:
        local = local_artifact(run_id, path)
        if local is not None:
            return read(str(local))
        with tempfile.TemporaryDirectory(prefix="topicbench-topics-") as folder:
            return read(client.download_artifacts(run_id, path, folder))
    except Exception as error:  # noqa: BLE001 - a report without this part is still a report
        logger.log(missing_level, "run %s: no %s (%s)", run_id, path, error)
        return None


def _topic_documents(client, run_id: str) -> dict | None:
    """Topic -> its record of :data:`~topicbench.tasks.store.artifacts.TOPIC_DOCUMENTS` (share, main-topic
    documents, by label, examples); None where the run has none (tracked before it was written)."""
    found = read_artifact(client, run_id, TOPIC_DOCUMENTS,
                           lambda path: json.loads(Path(path).read_text(encoding="utf-8")))
    return None if found is None else {int(record["topic"]): record for record in found["topics"]}


def _topic_shares(client, run_id: str, documents: dict | None = None):
    """Each topic's share of the documents: from the run's topic documents (``documents``, as
    :func:`_topic_documents` reads them) where it has them, else from its topic-document matrix
    (about 15 MB a run); None where neither can be read (its topics are then shown in the model's
    own order)."""
    import numpy as np

    from topicbench.core.output import read_matrix

    if documents:
        shares = np.zeros(max(documents) + 1)
        shares[list(documents)] = [record.get("share", 0.0) for record in documents.values()]
        return shares

    def read(path):
        with np.load(path) as arrays:
            matrix = read_matrix(arrays, "topic_document_matrix")
            return np.asarray(matrix.sum(axis=1)).ravel() / max(matrix.shape[1], 1)

    return read_artifact(client, run_id, "output/matrices.npz", read, missing_level=logging.WARNING)


def _shown_topic_scores(client, run_id: str) -> dict | None:
    """Topic -> {score key: value} for the keys the topics section shows (``TOPIC_SCORES_SHOWN``;
    not every key of every topic, which for E-LDA's thousands of topics would be read for
    nothing), from :data:`~topicbench.tasks.store.artifacts.TOPIC_SCORES`; None where the run has
    none (runs tracked before topics were scored one by one)."""
    shown = {key for key, _ in TOPIC_SCORES_SHOWN}
    table = read_artifact(client, run_id, TOPIC_SCORES, lambda path: pd.read_csv(
        path, index_col="topic", usecols=lambda column: column == "topic" or column in shown))
    if table is None:
        return None
    return {topic: {key: float(value) for key, value in values.items() if pd.notna(value)}
            for topic, values in table.to_dict("index").items()}


def collect_topic_scores(tracking_uri: str, runs: pd.DataFrame, corpora) -> dict:
    """(corpus, model, seed) -> a frame with a row per topic: its ``share`` of the documents and
    its own score per key (:data:`~topicbench.tasks.store.artifacts.TOPIC_SCORES`), for each finished
    run on ``corpora`` (read only where the K section weighs the topics of models whose K differ).
    A run without them is left out (its model's cells then say so)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    found = {}
    done = runs[(runs.status == FINISHED) & runs.corpus.isin(list(corpora))]
    for corpus, model, seed, run_id in zip(done.corpus, done.model, done.seed, done.run_id):
        scores = topic_scores_table(client, run_id)
        shares = _topic_shares(client, run_id, _topic_documents(client, run_id))  # no matrices where the run has these
        if scores is not None and shares is not None and len(shares) == len(scores):
            found[(corpus, model, int(seed))] = scores.assign(share=shares[scores.index.to_numpy()])
    return found


def topic_scores_table(client, run_id: str) -> pd.DataFrame | None:
    """The run's :data:`~topicbench.tasks.store.artifacts.TOPIC_SCORES` indexed by topic; None where it has none."""
    return read_artifact(client, run_id, TOPIC_SCORES, lambda path: pd.read_csv(path, index_col="topic"))


def topics_artifact(client, run_id: str):
    try:
        path = local_artifact(run_id, "topics.json") or client.download_artifacts(run_id, "topics.json")
        return Path(path).read_text(encoding="utf-8")
    except Exception as error:  # a report without the topic list is still a report
        logger.warning("run %s: no topics.json (%s)", run_id, error)
        return None


def collect_config(tracking_uri: str, experiment: str) -> dict | None:
    """The benchmark config (``config.json``) of the experiment's latest parent run: the corpora,
    models and seeds it asked for, and its report sections. None where there is none (runs tracked
    by an older version, or a store written by hand)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return None
    parents = search_runs(client, [found.experiment_id], tags={ROLE_TAG: PARENT_ROLE}, max_results=20,
                          order_by=["attributes.start_time DESC"])
    for parent in parents:
        try:
            return json.loads(Path(client.download_artifacts(parent.info.run_id, "config.json")).read_text(encoding="utf-8"))
        except Exception as error:  # a parent that died before logging its config: try the one before
            logger.debug("parent run %s: no config.json (%s)", parent.info.run_id, error)
    return None


def log_report_to_parent(tracking_uri: str, experiment: str, files) -> str | None:
    """Log the report's ``files`` (Markdown, HTML, plots) as artifacts (``report/``) of the
    experiment's latest benchmark parent run, so the tracking UI shows the report beside the runs;
    the run's id, or None where there is no parent or the store does not take them (a warning:
    the report on disk stands)."""
    from mlflow.tracking import MlflowClient

    try:
        client = MlflowClient(tracking_uri)
        found = client.get_experiment_by_name(experiment)
        parents = [] if found is None else search_runs(
            client, [found.experiment_id], tags={ROLE_TAG: PARENT_ROLE}, max_results=1,
            order_by=["attributes.start_time DESC"])
        if not parents:
            return None
        for path in files:
            client.log_artifact(parents[0].info.run_id, path, "report")
        return parents[0].info.run_id
    except Exception as error:  # noqa: BLE001 - the report is written; the store only mirrors it
        logger.warning("the report was not logged to the benchmark's parent run: %s", error)
        return None
