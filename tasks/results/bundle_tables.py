"""A result bundle's tidy tables: what a report (and a leaderboard) reads of the runs, as Parquet.

:func:`collect_tables` reads them from a tracking store through the report's own readers
(:func:`~topicbench.tasks.results.store.collect_runs` and its per-run helpers, and
:func:`~topicbench.tasks.results.stability.collect_stability`), so a report rendered from the tables
(:class:`~topicbench.tasks.results.bundle_source.BundleSource`) equals the one rendered from the store.
:func:`write_tables` writes them under ``tables/`` and returns each one's rows and SHA-256 for the
manifest; :func:`read_tables` reads them back, checked against it (and
:mod:`~topicbench.tasks.results.bundle_scores` derives ``scores.jsonl`` from them). A run is named by its id in
bundles (the id it had in the store it was first exported from), as in ``runs.jsonl``; the
manifest's ``report_columns`` keeps the order of the report's run table, which the summary's
metric order follows. Text columns are pandas' ``str`` (a missing value: NaN).

=====================  =========================================================================
table                  one row per
=====================  =========================================================================
``runs``               finished fit: run_id, run_key, parent_id, corpus, model, model_class, seed,
                       status, num_topics_used, num_topics, settings (JSON), preprocessing (JSON),
                       corpus_fingerprint, corpus_source, fit_seconds, peak_memory_mb, error,
                       changed_settings, skipped_metrics, training_loss_kind
``scores``             (run, tracked metric): run_id, metric (``npmi_top10``), score (``npmi@10``), value
``topics``             (run, topic, top word): run_id, topic, rank, word, weight (p(word | topic),
                       NaN where the store kept no matrices); from format 3 each topic's words up
                       to its :data:`WORDS_KEPT`-th distinct one, the weights float32
``topic_facts``        (run, topic): run_id, topic, label, share, documents, by_label (JSON),
                       examples (JSON), each NaN/None where the run's artifacts lack it
``topic_scores``       (run, topic, score key): run_id, topic, score, value; from format 3 only
                       the keys a report reads (:func:`topic_score_kept`), the values float32
``loss_curves``        (run, step): run_id, step, value
``vocabularies``       vocabulary: vocabulary (its id), words (a JSON list) (format 3:
                       :mod:`~topicbench.tasks.results.bundle_vocabularies`)
``stability``          (corpus, model) finding: corpus, model, kind (``scored``, ``one_seed``,
                       ``unreadable``, ``not_compared``), run_keys (JSON, the runs it covers),
                       seed, run_id, reason and the numbers of
                       :attr:`~topicbench.tasks.results.stability.StabilityFindings.table`
=====================  =========================================================================
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from topicbench.core.validation import InputError

from topicbench.core.constants import RBO_TOP_N
from topicbench.tasks.results.runs import TABLE_N
from topicbench.tasks.store.fit_record import score_key

TABLES_FOLDER = "tables"
#: The bundle's manifest (:mod:`topicbench.tasks.results.bundle` writes it), which lists the tables.
MANIFEST = "manifest.json"
#: Each table's columns, in order, and the dtypes every reader can count on (text: pandas' ``str``,
#: a missing value NaN).
TABLE_COLUMNS = {
    "runs": {"run_id": "str", "run_key": "str", "parent_id": "str", "corpus": "str", "model": "str",
             "model_class": "str", "seed": "int64", "status": "str", "num_topics_used": "float64",
             "num_topics": "str", "settings": "str", "preprocessing": "str", "corpus_fingerprint": "str",
             "corpus_source": "str", "fit_seconds": "float64", "peak_memory_mb": "float64", "error": "str",
             "changed_settings": "str", "skipped_metrics": "str", "training_loss_kind": "str"},
    "scores": {"run_id": "str", "metric": "str", "score": "str", "value": "float64"},
    "topics": {"run_id": "str", "topic": "int64", "rank": "int64", "word": "str", "weight": "float64"},
    "topic_facts": {"run_id": "str", "topic": "int64", "label": "str", "share": "float64",
                    "documents": "float64", "by_label": "str", "examples": "str"},
    "topic_scores": {"run_id": "str", "topic": "int64", "score": "str", "value": "float64"},
    "loss_curves": {"run_id": "str", "step": "int64", "value": "float64"},
    "stability": {"corpus": "str", "model": "str", "kind": "str", "run_keys": "str", "seed": "float64",
                  "run_id": "str", "reason": "str"},  # and the numbers' columns
    "vocabularies": {"vocabulary": "str", "words": "str"},
}
#: The tables a report reads (:class:`~topicbench.tasks.results.bundle_source.BundleSource`): all but
#: ``vocabularies``, which only an import reads (and bundles before format 3 lack).
REPORT_TABLES = tuple(name for name in TABLE_COLUMNS if name != "vocabularies")
#: Columns written narrower than readers get them (read back as :data:`TABLE_COLUMNS` says): a
#: per-topic score or weight is shown to 3 digits, and float32 holds 7. ``share`` stays float64: it
#: orders a model's topics, and float32 could tie two that float64 tells apart.
STORED_DTYPES = {"topic_scores": {"value": "float32"}, "topics": {"weight": "float32"}}
#: Distinct words kept of each topic: the most any reader takes (the report's tables show TABLE_N,
#: its matched topics compare the top RBO_TOP_N); the archives' topics.json keep them all.
WORDS_KEPT = max(TABLE_N, RBO_TOP_N)


class TableError(InputError):
    """A bundle table missing, damaged or not the one its manifest describes."""


def collect_tables(tracking_uri: str, experiment: str, fits, ids: dict) -> tuple[dict, list]:
    """The tables of the finished fits ``fits`` (MLflow runs) of ``experiment``, each run named by
    its id in bundles (``ids``: {run id in the store: id in bundles}), and the column order of the
    report's run table (which the summary's metric order follows)."""
    from mlflow.tracking import MlflowClient

    from topicbench.tasks.results.stability import collect_stability
    from topicbench.tasks.results.store import collect_runs

    runs = {run.info.run_id: run for run in fits}
    client = RunArtifacts(MlflowClient(tracking_uri), runs)
    frame = collect_runs(tracking_uri, experiment)
    frame = frame[frame.run_id.isin(set(runs))].reset_index(drop=True)
    per_run = [_run_tables(client, runs[run_id]) for run_id in frame.run_id]
    tables = {
        "runs": _frame([_runs_row(runs[run_id], row) for run_id, (_, row) in zip(frame.run_id, frame.iterrows())], "runs"),
        **{name: _frame([row for found in per_run for row in found[name]], name)
           for name in ("scores", "topics", "topic_facts", "topic_scores", "loss_curves")},
        "stability": stability_table(collect_stability(tracking_uri, frame, client=client), frame),
    }
    for table in tables.values():  # each run by the id it has in every bundle
        for column in ("run_id", "parent_id"):
            if column in table:
                table[column] = table[column].map(lambda run_id: ids.get(run_id, run_id)).astype("str")
    return tables, [str(column) for column in frame.columns]


class RunArtifacts:
    """An MlflowClient whose artifact reads go straight to each run's artifact store, resolved
    once a run (the client resolves it again for every file: ~0.1 s, ten files a run)."""

    def __init__(self, client, runs: dict):
        self.client, self._runs, self._stores = client, runs, {}

    def _store(self, run_id: str):
        from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

        if run_id not in self._stores:
            run = self._runs.get(run_id) or self.client.get_run(run_id)
            self._stores[run_id] = get_artifact_repository(run.info.artifact_uri, self.client.tracking_uri)
        return self._stores[run_id]

    def download_artifacts(self, run_id: str, path: str, dst_path=None) -> str:
        parent = path.rstrip("/").rpartition("/")[0] or None
        if path and path.rstrip("/") not in {item.path for item in self.list_artifacts(run_id, parent)}:
            raise FileNotFoundError(f"run {run_id} has no artifact {path}")  # one line, as the client's
        return self._store(run_id).download_artifacts(path, dst_path)

    def list_artifacts(self, run_id: str, path=None) -> list:
        return self._store(run_id).list_artifacts(path)

    def __getattr__(self, name):  # every other call as the client answers it
        return getattr(self.client, name)


def _frame(rows: list, name: str) -> pd.DataFrame:
    columns = {**TABLE_COLUMNS[name], **STORED_DTYPES.get(name, {})}
    frame = pd.DataFrame(rows, columns=list(columns)) if rows else pd.DataFrame({c: [] for c in columns})
    return frame.astype(columns)


def topic_score_kept(key: str) -> bool:
    """Whether the bundle's ``topic_scores`` keeps the per-topic score ``key``: one at N = TABLE_N
    (the report's topics tables and its K section read no other N) or one with no N (an LLM's)."""
    name, at, n = key.rpartition("@")
    return not at or not name or n == str(TABLE_N)


def kept_words(words: list) -> list:
    """A topic's words up to its :data:`WORDS_KEPT`-th distinct one (a reader de-duplicates before
    it takes its top N, so a repeated word must not cut the list short)."""
    seen = set()
    for place, word in enumerate(words):
        seen.add(word)
        if len(seen) == WORDS_KEPT:
            return words[:place + 1]
    return words


def _runs_row(run, report_row: pd.Series) -> dict:
    params, metrics, tags = run.data.params, run.data.metrics, run.data.tags
    prefixed = {prefix: json.dumps({k[len(prefix) + 1:]: v for k, v in params.items() if k.startswith(prefix + ".")},
                                   sort_keys=True) for prefix in ("settings", "preprocessing")}
    requested = params.get("num_topics")
    return {
        "run_id": run.info.run_id, "run_key": report_row["run_key"], "parent_id": tags.get("mlflow.parentRunId"),
        "corpus": report_row["corpus"], "model": report_row["model"], "model_class": report_row["model_class"],
        "seed": int(report_row["seed"]), "status": run.info.status,
        "num_topics_used": float(metrics.get("num_topics_used", np.nan)),
        "num_topics": None if requested in (None, "None") else requested, **prefixed,
        "corpus_fingerprint": params.get("corpus_fingerprint"), "corpus_source": params.get("corpus_source"),
        "fit_seconds": float(metrics.get("fit_seconds", np.nan)),
        "peak_memory_mb": float(metrics.get("peak_memory_mb", np.nan)),
        **{key: report_row[key] for key in ("error", "changed_settings", "skipped_metrics", "training_loss_kind")},
    }


def _run_tables(client, run) -> dict:
    """The rows one fit adds to each per-run table, read from its metrics and artifacts."""
    from topicbench.tasks.results.store import topic_scores_table, topics_artifact, with_topic_facts

    run_id = run.info.run_id
    found = {"scores": [{"run_id": run_id, "metric": name, "score": score_key(name), "value": value}
                        for name, value in run.data.metrics.items()],
             "topics": [], "topic_facts": [], "topic_scores": [], "loss_curves": []}
    if "training_loss" in run.data.metrics:
        history = sorted(client.get_metric_history(run_id, "training_loss"), key=lambda m: m.step)
        found["loss_curves"] = [{"run_id": run_id, "step": m.step, "value": m.value} for m in history]
    scores = topic_scores_table(client, run_id)
    if scores is not None:  # in the file's order: a reader rebuilds the same columns
        found["topic_scores"] = [{"run_id": run_id, "topic": int(topic), "score": key, "value": float(value)}
                                 for key in scores.columns if topic_score_kept(key) for topic, value in scores[key].items()]
    text = with_topic_facts(client, run_id, topics_artifact(client, run_id))
    if text:
        records = [{"topic": place, **record} for place, record in enumerate(json.loads(text))]  # hand-written ones too
        weights = _topic_word_weights(client, run_id, records)
        found["topics"] = [{"run_id": run_id, "topic": r["topic"], "rank": rank, "word": word,
                            "weight": weights.get((r["topic"], word), np.nan)}
                           for r in records for rank, word in enumerate(kept_words(r["words"].split()))]
        found["topic_facts"] = [_facts_row(run_id, record) for record in records]
    return found


def _facts_row(run_id: str, record: dict) -> dict:
    def as_json(key):
        return json.dumps(record[key], ensure_ascii=False) if key in record else None

    return {"run_id": run_id, "topic": record["topic"], "label": record.get("label"),
            "share": record.get("prevalence", np.nan), "documents": record.get("documents", np.nan),
            "by_label": as_json("by_label"), "examples": as_json("examples")}


def _topic_word_weights(client, run_id: str, records: list) -> dict:
    """(topic, word) -> p(word | topic) of the shown words, where the store kept the run's matrices
    (an imported bundle without them: none)."""
    from topicbench.tasks.results.stability import read_topic_word
    from topicbench.tasks.results.store import read_artifact

    found = read_artifact(client, run_id, "output", read_topic_word)
    if found is None:
        return {}
    matrix, vocabulary = found
    where = {word: index for index, word in enumerate(vocabulary)}
    weights = {}
    for record in records:
        topic, words = record["topic"], [w for w in record["words"].split() if w in where]
        if topic < matrix.shape[0] and words:
            row = _matrix_row(matrix, topic)
            weights.update({(topic, word): float(row[where[word]]) for word in words})
    return weights


def _matrix_row(matrix, row: int) -> np.ndarray:
    """Row ``row`` of a topic-word matrix in any of its saved forms, dense."""
    if isinstance(matrix, np.ndarray):
        return matrix[row]
    if hasattr(matrix, "row_constants"):  # ConstantPlusSparse
        return matrix.row(row)
    return np.asarray(matrix.getrow(row).toarray()).ravel()  # scipy sparse


def stability_table(findings, runs: pd.DataFrame) -> pd.DataFrame:
    """:class:`~topicbench.tasks.results.stability.StabilityFindings` as one table, each row with the
    run keys of its (corpus, model)'s finished seeds (:func:`findings_from_table` reads it back)."""
    from topicbench.tasks.results.runs import finished_runs

    done = finished_runs(runs).drop_duplicates(["corpus", "model", "seed"])
    keys = {pair: json.dumps(sorted(str(k) for k in group.run_key)) for pair, group in done.groupby(["corpus", "model"])}
    rows = [{"kind": "scored", **row} for row in findings.table.to_dict("records")]
    rows += [{"kind": "one_seed", "corpus": c, "model": m} for c, m in findings.one_seed]
    rows += [{"kind": "unreadable", "corpus": r.corpus, "model": r.model, "seed": r.seed, "run_id": r.run_id,
              "reason": r.reason} for r in findings.unreadable]
    rows += [{"kind": "not_compared", "corpus": c, "model": m, "reason": why} for c, m, why in findings.not_compared]
    for row in rows:
        row["run_keys"] = keys.get((row["corpus"], row["model"]), "[]")
    base = TABLE_COLUMNS["stability"]
    numbers = [c for c in findings.table.columns if c not in base]
    frame = pd.DataFrame(rows, columns=[*base, *numbers]) if rows else pd.DataFrame({c: [] for c in base})
    return frame.astype({**base, **{c: "float64" for c in numbers}})


def findings_from_table(table: pd.DataFrame, runs: pd.DataFrame):
    """The :class:`~topicbench.tasks.results.stability.StabilityFindings` a :func:`stability_table`
    holds, for the (corpus, model) pairs whose finished seeds in ``runs`` are the runs it covered."""
    from topicbench.tasks.results.stability import StabilityFindings, UnreadableRun
    from topicbench.tasks.results.runs import finished_runs

    done = finished_runs(runs).drop_duplicates(["corpus", "model", "seed"])
    keys = {pair: json.dumps(sorted(str(k) for k in group.run_key)) for pair, group in done.groupby(["corpus", "model"])}
    table = table[[keys.get((c, m)) == k for c, m, k in zip(table.corpus, table.model, table.run_keys)]]
    scored = table[table.kind == "scored"].drop(columns=["kind", "run_keys", "seed", "run_id", "reason"])
    scored = scored.astype({column: "int64" for column in ("seeds", "pairs") if column in scored}).reset_index(drop=True)
    rows = {kind: table[table.kind == kind] for kind in ("one_seed", "unreadable", "not_compared")}
    return StabilityFindings(
        scored if len(scored) else pd.DataFrame(),
        tuple(zip(rows["one_seed"].corpus, rows["one_seed"].model)),
        tuple(UnreadableRun(r.corpus, r.model, int(r.seed), r.run_id, r.reason) for r in rows["unreadable"].itertuples()),
        tuple(zip(rows["not_compared"].corpus, rows["not_compared"].model, rows["not_compared"].reason)))


def stability_records(table: pd.DataFrame) -> dict:
    """(corpus, model) -> the ``stability.json`` its fits carry in a bundle: the model's stability
    row (or why its seeds were not compared) and the run keys it covers, which
    :func:`~topicbench.tasks.results.stability.collect_stability` reads where the matrices are gone."""
    from topicbench.tasks.results.stability import STABILITY_MEASURES, stability_record

    records = {}
    for row in table[table.kind.isin(["scored", "not_compared"])].to_dict("records"):
        # a not-compared row has no numbers (its columns are NaN), nor has a scored row every column
        numbers = {key: int(value) if key in ("seeds", "pairs") and value == value else value
                   for key, value in row.items() if key not in TABLE_COLUMNS["stability"]} if row["kind"] == "scored" else None
        records[(row["corpus"], row["model"])] = stability_record(
            row["corpus"], row["model"], json.loads(row["run_keys"]), STABILITY_MEASURES,
            numbers, row["reason"] if row["kind"] == "not_compared" else None)
    return records


def describe_runs(tracking_uri: str, experiment: str, fits, scores: pd.DataFrame) -> dict:
    """What the manifest says of the fits: ``datasets`` (per corpus: its fingerprint, the SHA-256
    of its documents, and source), ``preprocessing`` per corpus, the benchmark's ``config`` and, where
    any fit was judged by an LLM, the ``judge``: its recorded settings (model, prompt hashes) and
    its latest calibrations (on words; on documents where any fit has document-level scores)."""
    from topicbench.tasks.results.calibration_runs import latest_calibration, latest_proxann_calibration
    from topicbench.tasks.results.store import collect_config

    datasets, preprocessing = {}, {}
    for run in sorted(fits, key=lambda r: r.info.start_time or 0):
        params, corpus = run.data.params, run.data.tags.get("corpus")
        datasets.setdefault(corpus, {key: params.get(f"corpus_{key}") for key in
                                     ("fingerprint", "source", "documents", "tokens", "vocabulary")})
        preprocessing.setdefault(corpus, {k.partition(".")[2]: v for k, v in sorted(params.items())
                                          if k.startswith("preprocessing.")})
    described = {"datasets": datasets, "preprocessing": preprocessing, "config": collect_config(tracking_uri, experiment)}
    judged = set(scores.run_id[scores.score.isin(["llm_rating", "llm_intrusion", "llm_fit", "llm_rank"])])
    settings = next((run.data.params for run in fits if run.info.run_id in judged), None)
    if settings is not None:
        judge = {k: v for k, v in sorted(settings.items()) if k.startswith("llm.")}
        model = judge.get("llm.model")
        described["judge"] = {"model": model, "settings": judge,
                              "calibration": None if model is None else latest_calibration(tracking_uri, model)}
        if model is not None and scores.score.isin(["llm_fit", "llm_rank"]).any():
            described["judge"]["document_calibration"] = latest_proxann_calibration(tracking_uri, model)
    return described


def manifest_text(manifest: dict) -> str:
    """``manifest.json``'s text: keys sorted, one-space indents, a final newline."""
    return json.dumps(manifest, indent=1, sort_keys=True) + "\n"


def write_tables(folder, tables: dict) -> dict:
    """Each table as ``<folder>/tables/<name>.parquet``; {name: {"rows", "sha256"}} for the manifest.
    The same tables give the same bytes (no index, no times), so a re-export changes nothing unchanged."""
    from topicbench.core.io import replaced_atomically

    target = Path(folder) / TABLES_FOLDER
    target.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, frame in tables.items():
        path = target / f"{name}.parquet"
        with replaced_atomically(path, "bundle table") as temporary:
            frame.to_parquet(temporary, index=False, compression="zstd")
        written[name] = {"rows": len(frame), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    return written


def read_tables(folder, names=None, manifest=None) -> dict[str, pd.DataFrame]:
    """The tables of the bundle in ``folder`` (those ``names`` names, default all), each checked
    against the manifest (its rows, its SHA-256 and its columns): a :class:`TableError` naming the
    table and the fix otherwise. ``manifest``: the one :func:`~topicbench.tasks.results.bundle_checks.check_bundle`
    read and checked already (else read here); each table a regular file within its limit."""
    from topicbench.tasks.results.bundle_files import BundleError, read_bundle_file

    if manifest is None:
        try:
            manifest = json.loads(read_bundle_file(Path(folder) / MANIFEST, "TOPICBENCH_BUNDLE_MAX_MANIFEST_MB"))
        except (BundleError, ValueError, RecursionError) as error:
            raise TableError(f"{folder} is not a readable result bundle ({error})") from None
    described = manifest.get("tables") if isinstance(manifest, dict) else None
    if not described or not isinstance(described, dict):
        raise TableError(f"{folder}: this bundle (format {manifest.get('bundle_format')}) has no tables; export it "
                         "again with this topicbench (`topicbench import` it, then `topicbench export`)")
    tables = {}
    for name in described if names is None else names:
        if name not in described:
            raise TableError(f"{folder}: its manifest lists no table {name!r}; export the bundle again")
        if not isinstance(name, str) or not name.replace("_", "").isalnum():  # a name that leaves tables/
            raise TableError(f"{folder / MANIFEST}: field tables names {name!r}, no plain table name")
        tables[name] = _read_table(Path(folder) / TABLES_FOLDER / f"{name}.parquet", name, described[name])
    return tables


def _read_table(path: Path, name: str, facts: dict) -> pd.DataFrame:
    import io

    import pyarrow.parquet as pq

    from topicbench.tasks.results.bundle_files import BundleError, bundle_limit, read_bundle_file

    fix = "export the bundle again, or copy it whole"
    try:
        data = read_bundle_file(path, "TOPICBENCH_BUNDLE_MAX_TABLE_MB")
    except BundleError as error:
        raise TableError(f"{path}: table {name!r} is missing; {fix}" if not os.path.lexists(path)
                         else f"table {name!r}: {error}") from None
    if not isinstance(facts, dict) or hashlib.sha256(data).hexdigest() != facts.get("sha256"):
        raise TableError(f"{path}: table {name!r} is damaged (its SHA-256 is not the manifest's); {fix}")
    limit = bundle_limit("TOPICBENCH_BUNDLE_MAX_TABLE_MB")
    try:  # what the table unpacks to, read from its footer before any of it is
        footer = pq.ParquetFile(io.BytesIO(data)).metadata
        unpacked = sum(footer.row_group(i).total_byte_size for i in range(footer.num_row_groups))
        if unpacked > limit:
            raise TableError(f"{path}: table {name!r} unpacks to {unpacked:,} bytes, more than the {limit:,} "
                             "TOPICBENCH_BUNDLE_MAX_TABLE_MB allows")
        frame = pd.read_parquet(io.BytesIO(data))
    except TableError:
        raise
    except Exception as error:  # noqa: BLE001 - pyarrow's many errors (ZSTD, Thrift, schema) for one damaged file
        raise TableError(f"{path}: table {name!r} is no readable Parquet table ({type(error).__name__}: "
                         f"{str(error)[:200]}); {fix}") from None
    missing = [c for c in TABLE_COLUMNS.get(name, {}) if c not in frame]
    if len(frame) != facts.get("rows") or missing:
        raise TableError(f"{path}: table {name!r} has {len(frame)} rows (the manifest says {facts.get('rows')})"
                         f"{' and lacks ' + ', '.join(missing) if missing else ''}; {fix}")
    widened = {column: TABLE_COLUMNS[name][column] for column in STORED_DTYPES.get(name, {})}
    return frame.astype(widened) if widened else frame  # every reader gets the types TABLE_COLUMNS names
