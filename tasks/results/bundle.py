"""Result bundles: an experiment's finished runs as files that outlive the store they came from.

A bundle is a folder: ``manifest.json`` (format version, experiment, topicbench version and
commit, package versions, when, the runs it holds), ``runs.jsonl`` (one finished run a line:
its id in the store it came from, its parent's, status, times, params, tags, latest metrics) and
``artifacts/<run id>.tar.gz`` (the run's artifacts, each fit's with a ``stability.json``: its
model's stability across seeds and the run keys it covers, so a store the bundle is imported into
keeps the stability without the matrices) and, from format 2, ``tables/*.parquet``: the tidy tables
a report or a leaderboard reads without any store (:mod:`topicbench.tasks.results.bundle_tables`). The
manifest then also holds the datasets (fingerprint, source), each corpus's preprocessing, the
benchmark's config, the LLM judge (its settings, prompt hashes and latest calibration) where runs
were judged, and each table's rows and SHA-256. The fits' ``output/matrices.npz`` (about 15 MB a
run) is left out unless asked for: only the stability section reads it, and the tables and
``stability.json`` carry what it found.

:func:`import_bundle` recreates the runs in any store, parents first, with their tags (so their
run keys) unchanged: a later ``run`` or ``paper`` on that store skips every imported fit, and a
run already in the store (by run key, or by its original id for parents) is not imported twice.
"""

from __future__ import annotations

import gzip
import json
import tarfile
import tempfile
import time
from pathlib import Path

from topicbench.core.io import make_output_folder, write_text_atomically
from topicbench.core.validation import InputError

from topicbench.tasks.results.bundle_tables import (
    collect_tables,
    describe_runs,
    read_tables,
    stability_records,
    write_tables,
)
from topicbench.tasks.store.records import git_commit, package_versions
from topicbench.tasks.results.stability import STABILITY_ARTIFACT
from topicbench.tasks.store.claims import FIT_ROLE, PARENT_ROLE, ROLE_TAG, RUN_KEY
from topicbench.tasks.store.filters import search_runs

BUNDLE_FORMAT = 2
#: The formats :func:`read_manifest` reads: format 1 has no tables (import still reads it).
READABLE_FORMATS = (1, 2)
MANIFEST, RUNS_FILE, ARTIFACTS_FOLDER = "manifest.json", "runs.jsonl", "artifacts"
#: The tag an imported run carries: the id it had in the store it was exported from.
ORIGIN_TAG = "topicbench.bundle.origin_run_id"
#: Artifacts left out by default: large, and read only by the stability section.
LARGE_ARTIFACTS = ("matrices.npz",)
METRICS_PER_BATCH = 1000


class BundleError(InputError):
    """A bundle that cannot be read or written: the message names the file and the problem."""


def export_bundle(tracking_uri: str, experiment: str, out, *, with_matrices: bool = False) -> dict:
    """Write the FINISHED runs of ``experiment`` at ``tracking_uri`` as a bundle in ``out``;
    the manifest (also written as ``manifest.json``)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise BundleError(f"the store at {tracking_uri} has no experiment {experiment!r}")
    runs = search_runs(client, [found.experiment_id], status="FINISHED")
    folder = make_output_folder(out, "--out")
    (folder / ARTIFACTS_FOLDER).mkdir(exist_ok=True)
    ids = bundle_ids(runs)
    records = [_run_record(run, ids) for run in runs]
    fits = [run for run in runs if run.data.tags.get(ROLE_TAG) == FIT_ROLE]
    tables, report_columns = collect_tables(tracking_uri, experiment, fits, ids)
    stability = stability_records(tables["stability"])
    for run in runs:
        pair = (run.data.tags.get("corpus"), run.data.tags.get("model"))
        extra = {STABILITY_ARTIFACT: stability[pair]} if run in fits and pair in stability else {}
        _pack_artifacts(client, run.info.run_id, folder / ARTIFACTS_FOLDER / f"{ids[run.info.run_id]}.tar.gz",
                        skip=() if with_matrices else LARGE_ARTIFACTS, extra=extra)
    write_text_atomically(folder / RUNS_FILE, "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    versions = package_versions()
    manifest = {
        "bundle_format": BUNDLE_FORMAT, "experiment": experiment, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "topicbench_version": versions.get("topicbench"), "commit": git_commit(), "packages": versions,
        "runs": len(records), "fits": sum(r["tags"].get(ROLE_TAG) != PARENT_ROLE for r in records),
        "run_keys": sorted(r["tags"][RUN_KEY] for r in records if RUN_KEY in r["tags"]),
        "matrices_included": with_matrices,
        **describe_runs(tracking_uri, experiment, fits, tables["scores"]),
        "report_columns": report_columns, "tables": write_tables(folder, tables),
    }
    write_text_atomically(folder / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def bundle_ids(runs) -> dict:
    """{run id: the run's id in bundles}: the id it had in the store it was first exported from
    (:data:`ORIGIN_TAG`, which an import keeps), else its own; so a bundle exported again from a
    store it was imported into (``topicbench paper --bundle``) names each run, and its archive, as before."""
    return {run.info.run_id: run.data.tags.get(ORIGIN_TAG, run.info.run_id) for run in runs}


def _run_record(run, ids: dict) -> dict:
    tags = dict(run.data.tags)
    parent = tags.get("mlflow.parentRunId")
    if parent is not None:
        parent = tags["mlflow.parentRunId"] = ids.get(parent, parent)
    return {"run_id": ids[run.info.run_id], "parent_id": parent, "run_name": run.info.run_name,
            "status": run.info.status, "start_time": run.info.start_time, "end_time": run.info.end_time,
            "params": dict(run.data.params), "tags": tags, "metrics": dict(run.data.metrics)}


def _pack_artifacts(client, run_id: str, target: Path, skip, extra: dict) -> None:
    """The run's artifacts (less ``skip``, with ``extra``: {name: text} in place of any it has) as ``target``."""
    with tempfile.TemporaryDirectory(prefix="topicbench-bundle-") as scratch:
        local = Path(client.download_artifacts(run_id, "", scratch))
        for name, text in extra.items():
            (local / name).write_text(text, encoding="utf-8")
        # the same run gives the same bytes (no times or owners kept): exporting again into a
        # committed bundle changes only the runs that changed
        with gzip.GzipFile(target, "wb", compresslevel=6, mtime=0) as packed, tarfile.open(fileobj=packed, mode="w") as archive:
            for path in sorted(local.rglob("*")):
                if path.is_file() and path.name not in skip:
                    archive.add(path, arcname=str(path.relative_to(local)), filter=_without_times_or_owners)


def _without_times_or_owners(member: tarfile.TarInfo) -> tarfile.TarInfo:
    member.mtime, member.uid, member.gid, member.uname, member.gname = 0, 0, 0, "", ""
    return member


def read_manifest(folder) -> tuple:
    """(manifest, run records) of the bundle in ``folder``; a :class:`BundleError` naming what is wrong."""
    folder = Path(folder)
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        records = [json.loads(line) for line in (folder / RUNS_FILE).read_text(encoding="utf-8").splitlines() if line]
    except (OSError, ValueError) as error:
        raise BundleError(f"{folder} is not a readable result bundle ({error})") from None
    if manifest.get("bundle_format") not in READABLE_FORMATS:
        raise BundleError(f"{folder / MANIFEST}: bundle format {manifest.get('bundle_format')!r}, this topicbench "
                          f"reads {' and '.join(map(str, READABLE_FORMATS))}")
    return manifest, records


def import_bundle(folder, tracking_uri: str) -> dict:
    """Recreate the bundle's runs at ``tracking_uri`` (parents first, run keys kept); the numbers
    of runs imported and already there."""
    from mlflow.entities import Metric, Param

    from topicbench.tasks.store.tracking import Tracker

    folder = Path(folder)
    manifest, records = read_manifest(folder)
    # the experiment as a run creates it: artifacts beside a sqlite store, never in the working folder
    tracker = Tracker(tracking_uri, manifest["experiment"])
    client, experiment_id = tracker.client, tracker.experiment_id
    present = _present(client, experiment_id)
    histories = _metric_histories(folder, manifest)
    new_ids, imported, skipped = {}, 0, 0
    for record in sorted(records, key=lambda r: r["parent_id"] is not None):  # parents first
        already = present.get(record["tags"].get(RUN_KEY) or record["run_id"])
        if already:
            new_ids[record["run_id"]], skipped = already, skipped + 1
            continue
        tags = {**record["tags"], ORIGIN_TAG: record["run_id"]}
        if record["parent_id"]:
            tags["mlflow.parentRunId"] = new_ids.get(record["parent_id"], record["parent_id"])
        run = client.create_run(experiment_id, start_time=record["start_time"], tags=tags, run_name=record["run_name"])
        stamp = record["end_time"] or record["start_time"] or 0
        history = histories.get(record["run_id"], {})
        metrics = [Metric(k, v, stamp, 0) for k, v in record["metrics"].items() if k not in history]
        metrics += [Metric(k, v, stamp, step) for k, steps in history.items() for step, v in steps]
        for start in range(0, len(metrics), METRICS_PER_BATCH):  # MLflow takes at most 1000 a call
            client.log_batch(run.info.run_id, metrics=metrics[start:start + METRICS_PER_BATCH])
        client.log_batch(run.info.run_id, params=[Param(k, v) for k, v in record["params"].items()])
        _unpack_artifacts(client, run.info.run_id, folder / ARTIFACTS_FOLDER / f"{record['run_id']}.tar.gz")
        client.set_terminated(run.info.run_id, record["status"], end_time=record["end_time"])
        new_ids[record["run_id"]], imported = run.info.run_id, imported + 1
    return {"imported": imported, "already_there": skipped}


def _metric_histories(folder: Path, manifest: dict) -> dict:
    """{original run id: {metric: [(step, value), ...]}}: the training loss per step, which a
    bundle of format 2 keeps (``loss_curves``) and ``runs.jsonl`` (the latest value only) does not."""
    if not manifest.get("tables"):
        return {}
    curves = read_tables(folder)["loss_curves"]
    return {run_id: {"training_loss": list(zip(part.step.tolist(), part.value.tolist()))}
            for run_id, part in curves.groupby("run_id", sort=False)}


def _present(client, experiment_id: str) -> dict:
    """{run key or original run id: run id} of the FINISHED runs already in the experiment."""
    present = {}
    for run in search_runs(client, [experiment_id], status="FINISHED"):
        tags = run.data.tags
        for name in (tags.get(RUN_KEY), tags.get(ORIGIN_TAG), run.info.run_id):
            if name:
                present[name] = run.info.run_id
    return present


def _unpack_artifacts(client, run_id: str, archive_path: Path) -> None:
    if not archive_path.is_file():
        return
    with tempfile.TemporaryDirectory(prefix="topicbench-bundle-") as scratch:
        with tarfile.open(archive_path, "r:gz") as archive:
            archive.extractall(scratch, filter="data")  # no absolute paths, links or devices out of a bundle
        if any(Path(scratch).iterdir()):
            client.log_artifacts(run_id, scratch)
