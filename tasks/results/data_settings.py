"""What a benchmark's results rest on, as one record: per corpus its documents (per partition),
vocabulary (its size and how it was built), preprocessing, labels and fingerprint; per model and
corpus the settings it was fitted with (as asked and as resolved), its seeds and the package
versions.

Read from the params each finished fit logged (:func:`~topicbench.tasks.store.tracking.run_record`
when it was claimed, :class:`~topicbench.tasks.store.fit_record.FitRecord` when it finished), where
MLflow keeps every value as text: :func:`typed` gives each back its type (``"True"`` -> ``True``,
``"8"`` -> ``8``), so a report prints settings as what they are. The same record is written into a
bundle at export (:data:`DATA_SETTINGS_FILE`) and read back by ``report --bundle``, so a report made
from a bundle says what it rests on as one made from the store does.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from pathlib import Path

from topicbench.tasks.results.bundle_files import BundleError, read_bundle_file

#: The record's file in a bundle, and the manifest's key of its SHA-256.
DATA_SETTINGS_FILE = "data_and_settings.json"
DATA_SETTINGS_KEY = "data_and_settings_sha256"
#: Params and metrics that count the test-only words dropped from held-out scoring, whatever the
#: fit that logged them calls them (``corpus_test_only_words``, ``heldout_dropped_tokens``, ...):
#: the record keeps every one it finds, so a count logged under a new name is shown too.
DROPPED_WORDS = re.compile(r"test_only|heldout_dropped|dropped_test")
#: The corpus params of :func:`~topicbench.tasks.store.tracking.run_record` the record keeps
#: (without their ``corpus_`` prefix); partitions and labels are JSON counts.
CORPUS_FIELDS = ("fingerprint", "source", "documents", "tokens", "vocabulary", "vocabulary_from", "partitions",
                 "labels", "label_count", "test_only_words", "test_only_tokens")


def typed(text):
    """A param's value with its type back: a Python or JSON literal (``True``, ``None``, ``8``,
    ``0.1``, ``['a', 'b']``, ``{"train": 642}``) as that value, anything else as the text itself.

    >>> typed("True"), typed("8"), typed("0.1"), typed("None"), typed("english"), typed("[1, 2]")
    (True, 8, 0.1, None, 'english', [1, 2])
    """
    if not isinstance(text, str):
        return text
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        try:
            return json.loads(text)
        except ValueError:
            return text


def _prefixed(params: dict, prefix: str) -> dict:
    return {key[len(prefix):]: typed(value) for key, value in sorted(params.items()) if key.startswith(prefix)}


def _corpus_record(params: dict) -> dict:
    record = {name: typed(params[f"corpus_{name}"]) for name in CORPUS_FIELDS if f"corpus_{name}" in params}
    record["preprocessing"] = _prefixed(params, "preprocessing.")
    return record


def _dropped_counts(params: dict, metrics: dict) -> dict:
    """The run's counts of test-only words dropped from held-out scoring (:data:`DROPPED_WORDS`)."""
    found = {key: typed(value) for key, value in params.items() if DROPPED_WORDS.search(key)}
    found.update({key: value for key, value in metrics.items() if DROPPED_WORDS.search(key)})
    return dict(sorted(found.items()))  # by name: a store and a bundle list params in other orders


def data_and_settings(fits) -> dict:
    """The record of the finished fits ``fits`` (MLflow runs): ``{"corpora": {corpus: {...}},
    "models": [{"corpus", "model", "model_name", "num_topics", "seeds", "settings", "resolved",
    "versions", "heldout_dropped"}, ...]}``, each value with its type (:func:`typed`); a corpus's
    record from its earliest fit, a model's settings from its first seed's."""
    corpora, models = {}, {}
    for run in sorted(fits, key=lambda r: (r.info.start_time or 0, r.info.run_id)):
        params, tags = run.data.params, run.data.tags
        corpus, model = tags.get("corpus"), tags.get("model")
        if corpus is None or model is None:
            continue
        corpora.setdefault(corpus, _corpus_record(params))
        entry = models.setdefault((corpus, model), {
            "corpus": corpus, "model": model, "model_name": params.get("model"),
            "num_topics": typed(params.get("num_topics")), "seeds": [],
            "settings": _prefixed(params, "settings."), "resolved": _prefixed(params, "resolved."),
            "versions": _prefixed(params, "version."), "heldout_dropped": {}})
        entry["seeds"] = sorted({*entry["seeds"], int(tags.get("seed", params.get("seed", 0)))})
        for key, value in _dropped_counts(params, run.data.metrics).items():
            entry["heldout_dropped"].setdefault(key, value)
    return {"corpora": corpora, "models": list(models.values())}


def collect_data_and_settings(tracking_uri: str, experiment: str) -> dict | None:
    """The record of ``experiment``'s finished fits in the store at ``tracking_uri``; None where
    the store has no such experiment."""
    from mlflow.tracking import MlflowClient

    from topicbench.tasks.store.claims import FIT_ROLE, ROLE_TAG
    from topicbench.tasks.store.filters import search_runs

    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return None
    return data_and_settings(search_runs(client, [found.experiment_id], tags={ROLE_TAG: FIT_ROLE}, status="FINISHED"))


def record_bytes(record: dict) -> bytes:
    """The record as the bundle keeps it: JSON in the record's own order (partitions and labels
    most frequent first, as the report lists them), which :func:`data_and_settings` makes the same
    for the same runs, so one record gives one file."""
    return (json.dumps(record, indent=1, ensure_ascii=False) + "\n").encode()


def write_data_settings(folder, record: dict) -> str:
    """Write ``record`` as the bundle's :data:`DATA_SETTINGS_FILE` in ``folder``; its SHA-256, for the manifest."""
    from topicbench.core.io import write_text_atomically

    data = record_bytes(record)
    write_text_atomically(Path(folder) / DATA_SETTINGS_FILE, data.decode(), "bundle data and settings")
    return hashlib.sha256(data).hexdigest()


def read_data_settings(folder, manifest: dict) -> dict | None:
    """The record a bundle holds, checked against its manifest's SHA-256 and its shape; None for a
    bundle exported before the record was written (its manifest names none)."""
    digest = manifest.get(DATA_SETTINGS_KEY)
    if digest is None:
        return None
    path = Path(folder) / DATA_SETTINGS_FILE
    data = read_bundle_file(path, "TOPICBENCH_BUNDLE_MAX_MANIFEST_MB")
    if hashlib.sha256(data).hexdigest() != digest:
        raise BundleError(f"{path} is not the file the manifest's {DATA_SETTINGS_KEY} describes; export the bundle "
                          "again, or copy it whole")
    try:
        record = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise BundleError(f"{path} is not JSON ({type(error).__name__})") from None
    if not (isinstance(record, dict) and isinstance(record.get("corpora"), dict)
            and isinstance(record.get("models"), list) and all(isinstance(m, dict) for m in record["models"])):
        raise BundleError(f'{path}: expected {{"corpora": {{...}}, "models": [{{...}}, ...]}}')
    return record
