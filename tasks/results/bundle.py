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
were judged, and each table's rows and SHA-256. Every export also writes ``scores.jsonl``: each
fit's tracked numbers as sorted text, rounded as the report shows them, which ``git diff`` of a
committed bundle reads as a change of results (:mod:`topicbench.tasks.results.bundle_scores`; the
manifest's ``scores_file`` gives its lines and SHA-256). The fits' ``output/matrices.npz`` (about 15 MB a
run) is left out unless asked for: only the stability section reads it, and the tables and
``stability.json`` carry what it found. Left out too, from format 3: a parent's rendered report
(``report/``: the HTML with plotly.js inline, the plots), which ``topicbench report --bundle``
writes again from the tables; and each fit's vocabulary, kept once per distinct vocabulary in the
table ``vocabularies`` and put back by an import
(:mod:`~topicbench.tasks.results.bundle_vocabularies`).

:func:`import_bundle` recreates the runs in any store, parents first, with their tags (so their
run keys) unchanged: a later ``run`` or ``paper`` on that store skips every imported fit, and a
run already in the store (by run key, or by its original id for parents) is not imported twice.
An import reads no ``scores.jsonl`` (the tables and ``runs.jsonl`` hold the numbers), so a bundle
without one imports as before.

A bundle is untrusted input: :func:`~topicbench.tasks.results.bundle_checks.check_bundle` reads and
checks all of it first. The import then stages (every archive unpacked into a temporary folder)
and only then writes, holding the store's import lock (:func:`import_lock`): a failure leaves the
store as it was (the runs it had created are deleted again), and two imports at once add each run
once. An export records each archive's SHA-256, writes one run per run key (the latest finished
attempt) and writes only into a new or empty folder or a bundle of the same experiment.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import tarfile
import tempfile
import time
from pathlib import Path

from topicbench.core.io import make_output_folder, replaced_atomically, write_text_atomically
from topicbench.core.jsonl import json_lines

from topicbench.tasks.results.bundle_checks import (  # noqa: F401 - BundleError, READABLE_FORMATS: their old home
    ARCHIVES_KEY,
    ARTIFACTS_FOLDER,
    READABLE_FORMATS,
    RUNS_FILE,
    BundleError,
    archive_path,
    check_bundle,
    read_bundle_file,
    unpack_archive,
)
from topicbench.tasks.results.bundle_scores import SCORES_MANIFEST_KEY, write_scores_file
from topicbench.tasks.results.bundle_vocabularies import (
    OUTPUT_JSON,
    restore_vocabularies,
    split_vocabulary,
    vocabularies_table,
)
from topicbench.tasks.results.bundle_tables import (
    MANIFEST,
    TABLES_FOLDER,
    collect_tables,
    describe_runs,
    manifest_text,
    stability_records,
    write_tables,
)
from topicbench.tasks.results.data_settings import DATA_SETTINGS_KEY, data_and_settings, write_data_settings
from topicbench.tasks.store.records import git_commit, package_versions
from topicbench.tasks.results.stability import STABILITY_ARTIFACT
from topicbench.tasks.store.claims import FIT_ROLE, PARENT_ROLE, ROLE_TAG, RUN_KEY
from topicbench.tasks.store.filters import search_runs

#: 3: vocabularies kept once (``vocabularies``), no rendered report in a parent's archive; a
#: topicbench reading format 2 at most refuses it rather than import references for words.
BUNDLE_FORMAT = 3
#: The tag an imported run carries: the id it had in the store it was exported from.
ORIGIN_TAG = "topicbench.bundle.origin_run_id"
#: Artifacts left out by default: large, and read only by the stability section.
LARGE_ARTIFACTS = ("matrices.npz",)
#: A parent run's rendered report (Markdown, HTML, plots): ``topicbench report --bundle`` writes it again.
RENDERED_REPORT = "report"
METRICS_PER_BATCH = 1000


def export_bundle(tracking_uri: str, experiment: str, out, *, with_matrices: bool = False,
                  replace: bool = False) -> dict:
    """Write the FINISHED runs of ``experiment`` at ``tracking_uri`` (one per run key, the latest)
    as a bundle in ``out``: a new or empty folder, or a bundle of ``experiment`` (updated; with
    ``replace``, what the new export does not hold is removed from it); the manifest (also written
    as ``manifest.json``)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise BundleError(f"the store at {tracking_uri} has no experiment {experiment!r}")
    check_export_target(out, experiment)
    every_run = search_runs(client, [found.experiment_id], status="FINISHED")
    ids = bundle_ids(every_run)
    runs = _one_run_per_key(every_run, ids)
    folder = make_output_folder(out, "--out")
    records = [_run_record(run, ids) for run in runs]
    fits = [run for run in runs if run.data.tags.get(ROLE_TAG) == FIT_ROLE]
    tables, report_columns = collect_tables(tracking_uri, experiment, fits, ids)
    stability = stability_records(tables["stability"])
    hashes, vocabularies = {}, {}
    for run in runs:
        pair = (run.data.tags.get("corpus"), run.data.tags.get("model"))
        extra = {STABILITY_ARTIFACT: stability[pair]} if run in fits and pair in stability else {}
        parent = run.data.tags.get(ROLE_TAG) == PARENT_ROLE
        hashes[ids[run.info.run_id]] = _pack_artifacts(
            client, run.info.run_id, archive_path(folder, ids[run.info.run_id]),
            skip=() if with_matrices else LARGE_ARTIFACTS, extra=extra, vocabularies=vocabularies,
            skip_folders=(RENDERED_REPORT,) if parent else ())
    tables["vocabularies"] = vocabularies_table(vocabularies)
    write_text_atomically(folder / RUNS_FILE, json_lines(records, sort_keys=True), "bundle runs")
    versions = package_versions()
    manifest = {
        "bundle_format": BUNDLE_FORMAT, "experiment": experiment, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "topicbench_version": versions.get("topicbench"), "commit": git_commit(), "packages": versions,
        "runs": len(records), "fits": sum(r["tags"].get(ROLE_TAG) != PARENT_ROLE for r in records),
        "run_keys": sorted(r["tags"][RUN_KEY] for r in records if RUN_KEY in r["tags"]),
        "matrices_included": with_matrices, ARCHIVES_KEY: hashes,
        **describe_runs(tracking_uri, experiment, fits, tables["scores"]),
        "report_columns": report_columns, "tables": write_tables(folder, tables),
        SCORES_MANIFEST_KEY: write_scores_file(folder, tables),
        DATA_SETTINGS_KEY: write_data_settings(folder, data_and_settings(fits)),  # report --bundle shows it
    }
    write_text_atomically(folder / MANIFEST, manifest_text(manifest), "bundle manifest")
    if replace:
        _remove_left_over(folder, manifest)
    return manifest


def check_export_target(folder, experiment: str) -> bool:
    """Whether ``folder`` holds a bundle of ``experiment`` (which an export may update); False for
    a new or empty folder; a :class:`BundleError` for a folder holding anything else, which an
    export never overwrites: the user's own files, another experiment's bundle."""
    import json

    folder = Path(folder).expanduser()
    if not folder.is_dir() or not any(folder.iterdir()):
        return False
    refused = f"--out {folder}: export into a new or empty folder, or one holding a bundle of {experiment!r}"
    try:
        manifest = json.loads(read_bundle_file(folder / MANIFEST, "TOPICBENCH_BUNDLE_MAX_MANIFEST_MB"))
    except (BundleError, ValueError, RecursionError) as error:
        raise BundleError(f"{refused}; it holds files but no result bundle ({error})") from None
    if not isinstance(manifest, dict) or type(manifest.get("bundle_format")) is not int:
        raise BundleError(f"{refused}; it holds files and a {MANIFEST} that is no bundle's (nothing replaced)")
    if manifest.get("experiment") != experiment:
        raise BundleError(f"{refused}; it holds the bundle of experiment {json.dumps(manifest.get('experiment'))[:100]} "
                          "(nothing replaced)")
    return True


def _remove_left_over(folder: Path, manifest: dict) -> None:
    """The archives and tables of the bundle in ``folder`` that ``manifest`` (just written) does
    not list: an earlier export's runs that are gone from the store, tables no longer made."""
    archives = {archive_path(folder, run_id).name for run_id in manifest[ARCHIVES_KEY]}
    for path in (folder / ARTIFACTS_FOLDER).glob("*.tar.gz"):
        if path.name not in archives:
            path.unlink()
    for path in (folder / TABLES_FOLDER).glob("*.parquet"):
        if path.stem not in manifest["tables"]:
            path.unlink()


def bundle_ids(runs) -> dict:
    """{run id: the run's id in bundles}: the id it had in the store it was first exported from
    (:data:`ORIGIN_TAG`, which an import keeps), else its own; so a bundle exported again from a
    store it was imported into (``topicbench paper --bundle``) names each run, and its archive, as before."""
    return {run.info.run_id: run.data.tags.get(ORIGIN_TAG, run.info.run_id) for run in runs}


def _one_run_per_key(runs, ids: dict) -> list:
    """``runs`` less every earlier attempt of a run key (of a parent: of a bundle id): a key fitted
    twice, or imported twice by a topicbench before the import lock, is one record and one archive
    (two would share its archive's name), the latest finished."""
    latest = {}
    for run in sorted(runs, key=lambda r: (r.info.end_time or 0, r.info.start_time or 0, r.info.run_id)):
        latest[run.data.tags.get(RUN_KEY) or ids[run.info.run_id]] = run
    by_bundle_id = {ids[run.info.run_id]: run.info.run_id for run in
                    sorted(latest.values(), key=lambda r: (r.info.end_time or 0, r.info.start_time or 0))}
    kept = set(by_bundle_id.values())
    return [run for run in runs if run.info.run_id in kept]


def _run_record(run, ids: dict) -> dict:
    tags = dict(run.data.tags)
    parent = tags.get("mlflow.parentRunId")
    if parent is not None:
        parent = tags["mlflow.parentRunId"] = ids.get(parent, parent)
    return {"run_id": ids[run.info.run_id], "parent_id": parent, "run_name": run.info.run_name,
            "status": run.info.status, "start_time": run.info.start_time, "end_time": run.info.end_time,
            "params": dict(run.data.params), "tags": tags, "metrics": dict(run.data.metrics)}


def _pack_artifacts(client, run_id: str, target: Path, skip, extra: dict, vocabularies: dict,
                    skip_folders=()) -> str:
    """The run's artifacts (less the files named ``skip`` and the top folders ``skip_folders``,
    with ``extra``: {name: text} in place of any it has, the vocabulary of ``output/output.json``
    moved into ``vocabularies``: {id: words}) as ``target``, written whole or not at all; its SHA-256."""
    with tempfile.TemporaryDirectory(prefix="topicbench-bundle-") as scratch:
        local = Path(client.download_artifacts(run_id, "", scratch))
        for name, text in extra.items():
            (local / name).write_text(text, encoding="utf-8")
        _move_vocabulary(local / OUTPUT_JSON, vocabularies)
        # the same run gives the same bytes (no times or owners kept): exporting again into a
        # committed bundle changes only the runs that changed
        with replaced_atomically(target, "bundle archive") as temporary:
            # gzip's header names the file: the target's, as ever, never the temporary one
            with open(temporary, "wb") as file, gzip.GzipFile(target.name, "wb", 6, file, mtime=0) as packed, \
                    tarfile.open(fileobj=packed, mode="w") as archive:
                for path in sorted(local.rglob("*")):
                    if path.is_file() and path.name not in skip and path.relative_to(local).parts[0] not in skip_folders:
                        archive.add(path, arcname=str(path.relative_to(local)), filter=_without_times_or_owners)
            digest = hashlib.sha256(temporary.read_bytes()).hexdigest()
    return digest


def _move_vocabulary(path: Path, vocabularies: dict) -> None:
    """``path`` (a fit's ``output.json``, where it has one) with its vocabulary replaced by a
    reference, the words kept in ``vocabularies`` (once per distinct vocabulary)."""
    if not path.is_file():
        return
    split = split_vocabulary(path.read_bytes())
    if split is not None:
        data, vocabulary, words = split
        vocabularies.setdefault(vocabulary, words)
        path.write_bytes(data)


def _without_times_or_owners(member: tarfile.TarInfo) -> tarfile.TarInfo:
    member.mtime, member.uid, member.gid, member.uname, member.gname = 0, 0, 0, "", ""
    return member


def read_manifest(folder) -> tuple:
    """(manifest, run records) of the bundle in ``folder``, all of it checked first
    (:func:`~topicbench.tasks.results.bundle_checks.check_bundle`); a :class:`BundleError` naming what is wrong."""
    checked = check_bundle(folder)
    return checked.manifest, checked.records


def import_bundle(folder, tracking_uri: str) -> dict:
    """Recreate the bundle's runs at ``tracking_uri`` (parents first, run keys kept); the numbers
    of runs imported and already there. All or nothing: the bundle is checked and its archives
    unpacked before the store is touched, and the runs are written under :func:`import_lock`."""
    from topicbench.tasks.store.tracking import Tracker

    checked = check_bundle(folder)
    histories = _metric_histories(checked)
    with tempfile.TemporaryDirectory(prefix="topicbench-import-") as staging:
        unpacked = {run_id: unpack_archive(path, Path(staging) / run_id) for run_id, path in checked.archives.items()}
        restore_vocabularies(unpacked, checked.tables.get("vocabularies"))  # the files as exported, before any write
        # the experiment as a run creates it: artifacts beside a sqlite store, never in the working folder
        tracker = Tracker(tracking_uri, checked.manifest["experiment"])
        with import_lock(tracking_uri, checked.manifest["experiment"]):
            return _write_runs(tracker.client, tracker.experiment_id, checked.records, histories, unpacked)


@contextlib.contextmanager
def import_lock(tracking_uri: str, experiment: str):
    """Held while an import reads what the store holds and writes what it lacks, so that two
    imports at once add each run once: on sqlite the store's lock file (``mlflow.db.lock``,
    :func:`~topicbench.tasks.store.locks.store_lock`), on PostgreSQL an advisory lock on a key of
    the experiment (the database drops it if the process dies); an MLflow server: none yet."""
    from topicbench.tasks.store.locks import store_wide_lock

    key = int.from_bytes(hashlib.sha256(f"topicbench import {experiment}".encode()).digest()[:8], "big", signed=True)
    with store_wide_lock(tracking_uri, key):
        yield


def _write_runs(client, experiment_id: str, records: list, histories: dict, unpacked: dict) -> dict:
    """The records' runs created in the experiment, parents first, each one the store lacks; on
    any failure the runs created so far are deleted again and the error goes on up."""
    from topicbench.tasks.store.tracking_error import TrackingError

    finished, left_over = _runs_in_store(client, experiment_id)
    new_ids, created, skipped = {}, [], 0
    try:
        for record in sorted(records, key=lambda r: r["parent_id"] is not None):  # parents first
            key = record["tags"].get(RUN_KEY) or record["run_id"]
            if key in finished:
                new_ids[record["run_id"]], skipped = finished[key], skipped + 1
                continue
            for run_id in left_over.get(key, ()):  # a run of an earlier import that stopped midway
                client.delete_run(run_id)
            tags = {**record["tags"], ORIGIN_TAG: record["run_id"]}
            if record["parent_id"]:
                tags["mlflow.parentRunId"] = new_ids.get(record["parent_id"], record["parent_id"])
            run = client.create_run(experiment_id, start_time=record["start_time"], tags=tags, run_name=record["run_name"])
            created.append(run.info.run_id)
            _fill_run(client, run.info.run_id, record, histories.get(record["run_id"], {}), unpacked[record["run_id"]])
            new_ids[record["run_id"]] = run.info.run_id
    except BaseException as error:
        kept = _delete_runs(client, created)
        if not isinstance(error, Exception) or isinstance(error, BundleError):
            raise
        raise TrackingError(f"the import stopped at run {record['run_id']} ({type(error).__name__}: {error}); "
                            f"{kept or 'the runs it had created were deleted again: the store holds what it held'}") from error
    return {"imported": len(created), "already_there": skipped}


def _fill_run(client, run_id: str, record: dict, history: dict, artifacts: Path) -> None:
    """The record's metrics (with their histories), params and artifacts logged into the new run
    ``run_id``, which then ends with the record's status."""
    from mlflow.entities import Metric, Param

    stamp = record["end_time"] or record["start_time"] or 0
    metrics = [Metric(k, v, stamp, 0) for k, v in record["metrics"].items() if k not in history]
    metrics += [Metric(k, v, stamp, step) for k, steps in history.items() for step, v in steps]
    for start in range(0, len(metrics), METRICS_PER_BATCH):  # MLflow takes at most 1000 a call
        client.log_batch(run_id, metrics=metrics[start:start + METRICS_PER_BATCH])
    client.log_batch(run_id, params=[Param(k, v) for k, v in record["params"].items()])
    if any(artifacts.iterdir()):
        client.log_artifacts(run_id, str(artifacts))
    client.set_terminated(run_id, record["status"], end_time=record["end_time"])


def _delete_runs(client, run_ids: list) -> str:
    """``run_ids`` deleted; a clause naming those the store refused to delete (none: empty)."""
    kept = []
    for run_id in reversed(run_ids):
        try:
            client.delete_run(run_id)
        except Exception:  # noqa: BLE001 - the store failing is why we are here: name what is left
            kept.append(run_id)
    return f"the store refused to delete {len(kept)} runs it had created ({', '.join(kept)}): delete them" if kept else ""


def _metric_histories(checked) -> dict:
    """{original run id: {metric: [(step, value), ...]}}: the training loss per step, which a
    bundle of format 2 keeps (``loss_curves``) and ``runs.jsonl`` (the latest value only) does not."""
    curves = checked.tables.get("loss_curves")
    if curves is None:
        return {}
    return {run_id: {"training_loss": list(zip(part.step.tolist(), part.value.tolist()))}
            for run_id, part in curves.groupby("run_id", sort=False)}


def _runs_in_store(client, experiment_id: str) -> tuple[dict, dict]:
    """What the experiment holds, whatever the status: {run key or original run id: run id} of
    its FINISHED runs, and {run key or original run id: [run id, ...]} of the imported runs that
    never finished (an earlier import stopped midway), which an import deletes before it imports
    that run again. A run a benchmark is fitting now carries no origin, so none of it is touched."""
    finished, left_over = {}, {}
    for run in search_runs(client, [experiment_id]):
        tags = run.data.tags
        if run.info.status == "FINISHED":
            for name in (tags.get(RUN_KEY), tags.get(ORIGIN_TAG), run.info.run_id):
                if name:
                    finished[name] = run.info.run_id
        elif ORIGIN_TAG in tags:
            left_over.setdefault(tags.get(RUN_KEY) or tags[ORIGIN_TAG], []).append(run.info.run_id)
    return finished, left_over
