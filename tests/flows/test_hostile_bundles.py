"""Issue 46: result bundles are untrusted input. Each crafted bundle below (a hostile prober's
findings) is refused by ``import``, ``report --bundle`` and ``leaderboard`` alike: exit status 2,
one last stderr line naming the file, and for ``import`` a store holding no run afterwards. Import
stages everything before it writes (a store failure midway leaves nothing), holds a lock (two
imports at once add each run once) and clears what an earlier, broken import left; export writes
one run per run key and never into a folder it does not own."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
import threading
from pathlib import Path

import pandas as pd
import pytest
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient

from servers import postgres_server  # noqa: F401 (a fixture)
from topicbench.flows.cli.main import main
from topicbench.tasks.results.bundle import ORIGIN_TAG, export_bundle, import_bundle
from topicbench.tasks.store.claims import FIT_ROLE, PARENT_ROLE, ROLE_TAG, RUN_KEY
from topicbench.tasks.store.tracking import Tracker

EXPERIMENT = "hostile"
#: The bundle's run keys: seed 0 was fitted twice in the store (an earlier attempt, then the latest).
RUN_KEYS = ["lda-0", "lda-1"]
#: Long enough for a command that reads a small bundle; a FIFO read would block for ever.
COMMAND_SECONDS = 90


def _store(folder: Path) -> str:
    """A sqlite store of a parent and two finished fits of ``lda`` on ``toy`` (seeds 0 and 1), seed
    0 fitted twice (two finished runs of run key ``lda-0``, the later one scored 0.3)."""
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    tracker = Tracker(uri, EXPERIMENT)
    client = tracker.client
    parent = client.create_run(tracker.experiment_id, tags={ROLE_TAG: PARENT_ROLE}, run_name="bench")
    artifacts = folder / "fit-artifacts"
    artifacts.mkdir(parents=True)
    (artifacts / "topics.json").write_text(json.dumps([{"words": "tax vote"}, {"words": "war troops"}]))
    for seed, ended, score in ((0, 1_000, 0.1), (0, 2_000, 0.3), (1, 3_000, 0.2)):
        fit = client.create_run(tracker.experiment_id, run_name=f"lda seed {seed}", start_time=ended - 500, tags={
            ROLE_TAG: FIT_ROLE, RUN_KEY: f"lda-{seed}", "mlflow.parentRunId": parent.info.run_id,
            "model": "lda", "corpus": "toy", "seed": str(seed)})
        client.log_batch(fit.info.run_id, metrics=[Metric("npmi_top10", score, ended, 0)], params=[
            Param("seed", str(seed)), Param("corpus_fingerprint", "f" * 64), Param("corpus_source", "/data/toy"),
            Param("preprocessing.lowercase", "True")])
        client.log_artifacts(fit.info.run_id, str(artifacts))
        client.set_terminated(fit.info.run_id, "FINISHED", end_time=ended)
    client.set_terminated(parent.info.run_id, "FINISHED")
    return uri


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[str, Path]:
    """(store URI, the folder of its exported bundle), made once: each test copies the bundle."""
    folder = tmp_path_factory.mktemp("hostile")
    uri = _store(folder / "store")
    export_bundle(uri, EXPERIMENT, folder / "bundle")
    return uri, folder / "bundle"


@pytest.fixture
def bundle(exported, tmp_path) -> Path:
    """A copy of the good bundle, for a test to spoil."""
    return Path(shutil.copytree(exported[1], tmp_path / "bundle"))


def _manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())


def _rewrite_manifest(bundle: Path, change) -> None:
    manifest = _manifest(bundle)
    change(manifest)
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=1))


def _records(bundle: Path) -> list:
    return [json.loads(line) for line in (bundle / "runs.jsonl").read_text().splitlines() if line]


def _write_records(bundle: Path, records: list) -> None:
    (bundle / "runs.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    _rewrite_manifest(bundle, lambda manifest: manifest.update(runs=len(records)))


def _fit_id(bundle: Path) -> str:
    return next(r["run_id"] for r in _records(bundle) if r["tags"].get(RUN_KEY) == "lda-0")


def _set_archive(bundle: Path, run_id: str, data: bytes) -> Path:
    """``data`` as the run's archive, its SHA-256 the manifest's: only its content can be refused."""
    path = bundle / "artifacts" / f"{run_id}.tar.gz"
    path.write_bytes(data)

    def with_its_hash(manifest):
        if "archive_sha256" in manifest:  # absent from bundles of a topicbench before archive hashes
            manifest["archive_sha256"][run_id] = hashlib.sha256(data).hexdigest()

    _rewrite_manifest(bundle, with_its_hash)
    return path


def _tar_gz(*members) -> bytes:
    """A .tar.gz of ``members``: (TarInfo, bytes or None)."""
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb") as zipped, tarfile.open(fileobj=zipped, mode="w") as archive:
        for member, data in members:
            archive.addfile(member, io.BytesIO(data) if data is not None else None)
    return packed.getvalue()


def _member(name: str, data: bytes = b"x", kind=tarfile.REGTYPE, link: str = "") -> tuple:
    member = tarfile.TarInfo(name)
    member.type, member.linkname, member.size = kind, link, len(data) if kind == tarfile.REGTYPE else 0
    return member, data if kind == tarfile.REGTYPE else None


def _archive_with(*members):
    def spoil(bundle: Path) -> str:
        return _set_archive(bundle, _fit_id(bundle), _tar_gz(*members)).name
    return spoil


def _cut_archive(bundle: Path) -> str:
    run_id = _fit_id(bundle)
    whole = (bundle / "artifacts" / f"{run_id}.tar.gz").read_bytes()
    return _set_archive(bundle, run_id, whole[: len(whole) // 2]).name


def _fifo_for(relative: str):
    def spoil(bundle: Path) -> str:
        path = bundle / relative.format(fit=_fit_id(bundle))
        path.unlink()
        os.mkfifo(path)
        return path.name
    return spoil


def _missing_archive(bundle: Path) -> str:
    path = bundle / "artifacts" / f"{_fit_id(bundle)}.tar.gz"
    path.unlink()
    return path.name


def _other_hash(bundle: Path) -> str:
    run_id = _fit_id(bundle)
    _rewrite_manifest(bundle, lambda m: m.get("archive_sha256", {}).update({run_id: "0" * 64}))
    return f"{run_id}.tar.gz"


def _oversize_archive(bundle: Path) -> str:
    os.environ["TOPICBENCH_BUNDLE_MAX_ARCHIVE_MB"] = "1"  # restored by the test's monkeypatch
    return _set_archive(bundle, _fit_id(bundle), _tar_gz(_member("output/big.bin", b"\0" * (2 << 20)))).name


def _many_members(bundle: Path) -> str:
    """One member more than every other archive of the bundle has, and the limit at their most."""
    most = max(len(tarfile.open(path).getnames()) for path in (bundle / "artifacts").iterdir())
    os.environ["TOPICBENCH_BUNDLE_MAX_ARCHIVE_MEMBERS"] = str(most)  # restored by the test's monkeypatch
    members = [_member(f"{number}.txt") for number in range(most + 1)]
    return _set_archive(bundle, _fit_id(bundle), _tar_gz(*members)).name


def _format_true(bundle: Path) -> str:
    _rewrite_manifest(bundle, lambda m: m.update(bundle_format=True))
    return "manifest.json"


def _running_record(bundle: Path) -> str:
    records = _records(bundle)
    records[-1]["status"] = "RUNNING"
    _write_records(bundle, records)
    return "runs.jsonl"


def _key_twice(bundle: Path) -> str:
    """A second record of run key lda-0 under another run id, with an archive of its own."""
    records = _records(bundle)
    copy = {**next(r for r in records if r["tags"].get(RUN_KEY) == "lda-0"), "run_id": "f" * 32}
    _write_records(bundle, [*records, copy])
    _set_archive(bundle, copy["run_id"], (bundle / "artifacts" / f"{_fit_id(bundle)}.tar.gz").read_bytes())
    return "runs.jsonl"


def _run_id_leaving(bundle: Path) -> str:
    records = _records(bundle)
    records[-1]["run_id"] = "../../outside"
    _write_records(bundle, records)
    return "runs.jsonl"


def _table_name_leaving(bundle: Path) -> str:
    (bundle.parent / "outside.parquet").write_bytes((bundle / "tables" / "stability.parquet").read_bytes())
    _rewrite_manifest(bundle, lambda m: m["tables"].update({"../../outside": m["tables"].pop("stability")}))
    return "manifest.json"


def _infinite_score(bundle: Path) -> str:
    path = bundle / "tables" / "scores.parquet"
    scores = pd.read_parquet(path)
    scores.loc[0, "value"] = float("inf")
    scores.to_parquet(path, index=False)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    _rewrite_manifest(bundle, lambda m: m["tables"]["scores"].update(sha256=digest))
    return "scores.parquet"


VARIANTS = {
    "traversal member": _archive_with(_member("../../escaped.txt")),
    "absolute member": _archive_with(_member("/tmp/topicbench-escaped.txt")),
    "symlink member": _archive_with(_member("topics.json", kind=tarfile.SYMTYPE, link="/etc/passwd")),
    "device member": _archive_with(_member("null", kind=tarfile.CHRTYPE)),
    "truncated gzip": _cut_archive,
    "not gzip": lambda bundle: _set_archive(bundle, _fit_id(bundle), b"plain text, no gzip").name,
    "duplicate member": _archive_with(_member("topics.json", b"[]"), _member("topics.json", b"[{}]")),
    "FIFO manifest.json": _fifo_for("manifest.json"),
    "FIFO runs.jsonl": _fifo_for("runs.jsonl"),
    "FIFO table": _fifo_for("tables/scores.parquet"),
    "FIFO archive": _fifo_for("artifacts/{fit}.tar.gz"),
    "missing archive": _missing_archive,
    "archive hash mismatch": _other_hash,
    "oversize archive": _oversize_archive,
    "too many members": _many_members,
    "bundle_format true": _format_true,
    "RUNNING record": _running_record,
    "duplicate run keys": _key_twice,
    "run id with ../": _run_id_leaving,
    "table name with ../": _table_name_leaving,
    "inf score": _infinite_score,
}


def _store_runs(database: Path) -> list:
    """Every run of every experiment in the sqlite store at ``database`` (none where there is no store)."""
    if not database.exists():
        return []
    client = MlflowClient(f"sqlite:///{database}")
    return client.search_runs([e.experiment_id for e in client.search_experiments()])


def _refused(argv: list, capsys, named: str) -> str:
    assert main(argv) == 2, argv
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("topicbench: error: ") and named in last, last
    return last


@pytest.mark.timeout(COMMAND_SECONDS, func_only=True)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_hostile_bundle_is_one_line_and_status_2_from_every_reader(variant, bundle, tmp_path, capsys, monkeypatch):
    for variable in ("TOPICBENCH_BUNDLE_MAX_ARCHIVE_MB", "TOPICBENCH_BUNDLE_MAX_ARCHIVE_MEMBERS"):
        monkeypatch.setenv(variable, "")  # empty: the default; recorded, so a variant's own limit is undone after it
    named = VARIANTS[variant](bundle)
    database = tmp_path / "store" / "mlflow.db"
    _refused(["import", str(bundle), "--tracking-uri", f"sqlite:///{database}"], capsys, named)
    assert _store_runs(database) == []  # nothing imported, not even a run left RUNNING
    _refused(["report", "--bundle", str(bundle), "--out", str(tmp_path / "report")], capsys, named)
    _refused(["leaderboard", str(bundle), "--out", str(tmp_path / "board")], capsys, named)
    assert not list(tmp_path.rglob("escaped.txt")) and not Path("/tmp/topicbench-escaped.txt").exists()


@pytest.mark.timeout(600)
def test_the_untouched_bundle_imports_reports_and_ranks(bundle, tmp_path, capsys):
    """The crafted variants are refused for what was spoiled: the bundle they start from is read."""
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    assert main(["import", str(bundle), "--tracking-uri", uri]) == 0
    assert main(["leaderboard", str(bundle), "--out", str(tmp_path / "board")]) == 0
    assert main(["report", "--bundle", str(bundle), "--out", str(tmp_path / "report")]) == 0
    assert "has no archive hashes" not in capsys.readouterr().err


@pytest.mark.timeout(COMMAND_SECONDS, func_only=True)
def test_a_limit_that_is_no_whole_number_is_one_line(bundle, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TOPICBENCH_BUNDLE_MAX_ARCHIVE_MB", "2GB")
    _refused(["import", str(bundle), "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"], capsys,
             "TOPICBENCH_BUNDLE_MAX_ARCHIVE_MB='2GB': give a whole number above 0")


@pytest.mark.timeout(300)
def test_export_writes_one_run_per_run_key_the_latest_and_each_archive_s_hash(exported):
    _, folder = exported
    records, manifest = _records(folder), _manifest(folder)
    assert sorted(r["tags"][RUN_KEY] for r in records if RUN_KEY in r["tags"]) == RUN_KEYS == manifest["run_keys"]
    [seed_0] = [r for r in records if r["tags"].get(RUN_KEY) == "lda-0"]
    assert seed_0["metrics"]["npmi_top10"] == 0.3  # the later of the two finished attempts
    assert manifest["archive_sha256"] == {
        r["run_id"]: hashlib.sha256((folder / "artifacts" / f"{r['run_id']}.tar.gz").read_bytes()).hexdigest()
        for r in records}


@pytest.mark.timeout(300)
def test_a_store_failing_midway_keeps_nothing_of_the_import(bundle, tmp_path, monkeypatch):
    from topicbench.tasks.store.tracking_error import TrackingError

    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    logged = MlflowClient.log_artifacts
    calls = []

    def fail_the_second(self, *args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return logged(self, *args, **kwargs)

    monkeypatch.setattr(MlflowClient, "log_artifacts", fail_the_second)
    with pytest.raises(TrackingError, match="No space left on device.*deleted again"):
        import_bundle(bundle, uri)
    assert _store_runs(tmp_path / "store" / "mlflow.db") == []
    monkeypatch.setattr(MlflowClient, "log_artifacts", logged)
    assert import_bundle(bundle, uri) == {"imported": 3, "already_there": 0}


@pytest.mark.timeout(300)
def test_a_run_an_earlier_import_left_running_is_replaced_not_doubled(bundle, tmp_path):
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    tracker = Tracker(uri, EXPERIMENT)
    fit_id = _fit_id(bundle)
    tracker.client.create_run(tracker.experiment_id, tags={RUN_KEY: "lda-0", ORIGIN_TAG: fit_id, ROLE_TAG: FIT_ROLE})
    assert import_bundle(bundle, uri) == {"imported": 3, "already_there": 0}
    runs = _store_runs(tmp_path / "store" / "mlflow.db")
    assert sorted(r.data.tags[RUN_KEY] for r in runs if RUN_KEY in r.data.tags) == RUN_KEYS
    assert {r.info.status for r in runs} == {"FINISHED"}
    assert import_bundle(bundle, uri) == {"imported": 0, "already_there": 3}


def _import_twice_at_once(bundle: Path, uri: str) -> list:
    """The counts of two imports of ``bundle`` into ``uri`` started at once, in two threads."""
    start, counts, errors = threading.Barrier(2), [], []

    def one_import():
        start.wait()
        try:
            counts.append(import_bundle(bundle, uri))
        except Exception as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=one_import) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(240)
    assert not errors, errors
    return sorted(count["imported"] for count in counts)


@pytest.mark.timeout(300)
def test_two_imports_at_once_add_each_run_once(bundle, tmp_path):
    assert _import_twice_at_once(bundle, f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}") == [0, 3]
    runs = _store_runs(tmp_path / "store" / "mlflow.db")
    assert len(runs) == 3 and sorted(r.data.tags[RUN_KEY] for r in runs if RUN_KEY in r.data.tags) == RUN_KEYS


@pytest.mark.timeout(600)
def test_two_imports_at_once_into_postgresql_add_each_run_once(bundle, postgres_server):
    uri = postgres_server.extra["new_database"]("imports")
    assert _import_twice_at_once(bundle, uri) == [0, 3]
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name(EXPERIMENT).experiment_id])
    assert len(runs) == 3 and sorted(r.data.tags[RUN_KEY] for r in runs if RUN_KEY in r.data.tags) == RUN_KEYS


@pytest.mark.timeout(COMMAND_SECONDS, func_only=True)
def test_the_leaderboard_refuses_one_seed_fitted_twice(bundle, tmp_path, capsys):
    path = bundle / "tables" / "runs.parquet"
    runs = pd.read_parquet(path)
    twice = pd.concat([runs, runs.iloc[[0]].assign(run_id="again", run_key="lda-0-again")], ignore_index=True)
    twice.to_parquet(path, index=False)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    _rewrite_manifest(bundle, lambda m: m["tables"]["runs"].update(sha256=digest, rows=len(twice)))
    last = _refused(["leaderboard", str(bundle), "--out", str(tmp_path / "board")], capsys, "runs.parquet")
    assert "2 fits of model lda on toy with seed" in last


@pytest.mark.timeout(300)
@pytest.mark.parametrize("held", ["own manifest.json", "another experiment's bundle", "notes"])
def test_export_never_writes_into_a_folder_it_does_not_own(exported, tmp_path, capsys, held):
    uri, good = exported
    out = tmp_path / "out"
    if held == "notes":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    else:
        shutil.copytree(good, out)
        kept = {"bundle_format": 2, "experiment": "other"} if held.startswith("another") else {"name": "my web app"}
        (out / "manifest.json").write_text(json.dumps(kept))
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    for replace in ([], ["--replace"]):
        _refused(["export", "--experiment", EXPERIMENT, "--tracking-uri", uri, "--out", str(out), *replace], capsys,
                 str(out))
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before


@pytest.mark.timeout(300)
def test_export_updates_its_own_bundle_and_replace_clears_what_it_no_longer_holds(exported, tmp_path):
    uri, good = exported
    out = Path(shutil.copytree(good, tmp_path / "out"))
    stale = out / "artifacts" / f"{'e' * 32}.tar.gz"
    stale.write_bytes(b"an archive of a run no longer in the store")
    argv = ["export", "--experiment", EXPERIMENT, "--tracking-uri", uri, "--out", str(out)]
    assert main(argv) == 0 and stale.exists()  # updated in place: what it does not hold is left
    assert main([*argv, "--replace"]) == 0 and not stale.exists()
    assert sorted(path.name for path in (out / "artifacts").iterdir()) == sorted(
        f"{run_id}.tar.gz" for run_id in _manifest(out)["archive_sha256"])


@pytest.mark.timeout(300)
def test_a_bundle_without_archive_hashes_still_reads_with_one_warning(bundle, caplog):
    from topicbench.tasks.results.bundle_checks import check_bundle

    _rewrite_manifest(bundle, lambda m: m.pop("archive_sha256"))
    checked = check_bundle(bundle)
    assert len(checked.archives) == 3
    assert [r.message for r in caplog.records if "no archive hashes" in r.message] != []


@pytest.mark.timeout(300)
def test_the_committed_paper_bundle_still_reads():
    """results/paper/bundle is format 2 without archive hashes: read (and reported) as before."""
    from topicbench.tasks.results.bundle_source import BundleSource

    folder = Path(__file__).resolve().parents[2] / "results" / "paper" / "bundle"
    if not (folder / "manifest.json").is_file():
        pytest.skip("no committed paper bundle in this checkout")
    source = BundleSource(folder)
    assert source.experiment == "paper" and len(source.runs()) == source.manifest["fits"]
