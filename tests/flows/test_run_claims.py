"""One run per run key: claims, stale claims of dead processes, and concurrent processes on one store.

The claims are tested on a :class:`Tracker` directly, with owners made up of real processes (a
live ``sleep``, a finished one); the concurrent case runs two real ``topicbench run`` processes.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest
from mlflow.tracking import MlflowClient

from topicbench.tasks.store.claims import Owner
from topicbench.tasks.store.locks import store_lock
from topicbench.tasks.store.checks import check_tracking_uri, tracking_store_exists
from topicbench.tasks.store.tracking_error import TrackingError
from topicbench.tasks.store.tracking import Tracker


class JobStub(SimpleNamespace):
    __hash__ = object.__hash__  # a key of {job: claim}, by identity, as a benchmark Job


def job(key: str = "k1", seed: int = 0):
    """What :meth:`Tracker.claim` reads of a benchmark Job."""
    return JobStub(
        key=key, seed=seed, corpus=SimpleNamespace(name="tiny"), model=SimpleNamespace(name="elda", model="elda"),
    )


@pytest.fixture
def store(tmp_path):
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


@pytest.fixture
def other_process():
    """A live process of this host standing in for another topicbench run (killed after the test)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield process
    process.kill()
    process.wait()


def owner_of(process) -> Owner:
    return Owner(socket.gethostname(), process.pid, round(psutil.Process(process.pid).create_time(), 3))


def tracker_of(store: str, owner: Owner) -> Tracker:
    tracker = Tracker(store, "claims")
    tracker.owner = owner
    return tracker


def runs_by_status(store: str, key: str = "k1") -> dict:
    client = MlflowClient(store)
    experiment = client.get_experiment_by_name("claims").experiment_id
    runs = client.search_runs([experiment], f"tags.`topicbench.run_key` = '{key}'")
    found = {}
    for run in runs:
        found.setdefault(run.info.status, []).append(run)
    return found


def test_a_live_claim_of_another_process_is_not_claimed_again(store, other_process):
    theirs = tracker_of(store, owner_of(other_process))
    ours = Tracker(store, "claims")
    won = theirs.claim("p", job())
    assert won.run_id
    lost = ours.claim("p", job())
    assert lost.run_id is None and lost.held_by == f"pid {other_process.pid} on host {socket.gethostname()}"
    assert [r.info.run_id for r in runs_by_status(store)["RUNNING"]] == [won.run_id]
    # once it finished, the key is done for everyone
    theirs.client.set_terminated(won.run_id, "FINISHED")
    assert ours.claim("p", job()).finished_by == won.run_id


def test_the_claim_of_a_dead_process_is_marked_killed_and_claimed_again(store, other_process):
    dead = tracker_of(store, owner_of(other_process))
    stale = dead.claim("p", job()).run_id
    other_process.kill()
    other_process.wait()
    ours = Tracker(store, "claims")
    assert ours.kill_stale_runs() == [stale]
    claim = ours.claim("p", job())
    assert claim.run_id and claim.run_id != stale
    runs = runs_by_status(store)
    assert [r.info.run_id for r in runs["KILLED"]] == [stale]
    assert f"pid {other_process.pid}" in runs["KILLED"][0].data.tags["topicbench.end_reason"]
    assert [r.info.run_id for r in runs["RUNNING"]] == [claim.run_id]


def test_a_reused_pid_does_not_keep_a_claim_alive(store):
    """Same pid as a live process (this one) but another start time: the owner is gone."""
    me = Owner.current()
    impostor = tracker_of(store, Owner(me.host, me.pid, me.started - 3600))
    stale = impostor.claim("p", job()).run_id
    ours = Tracker(store, "claims")
    assert ours.kill_stale_runs() == [stale]


def test_claims_of_another_host_go_stale_when_their_heartbeat_stops(store, monkeypatch):
    far = tracker_of(store, Owner("another-host", 1, 0.0))
    claim = far.claim("p", job()).run_id
    ours = Tracker(store, "claims")
    assert ours.kill_stale_runs() == []  # its heartbeat is fresh
    monkeypatch.setenv("TOPICBENCH_STALE_RUN_SECONDS", "0.5")
    time.sleep(1.0)
    assert ours.kill_stale_runs() == [claim]
    assert "no heartbeat from pid 1 on host another-host" in runs_by_status(store)["KILLED"][0].data.tags["topicbench.end_reason"]


def test_the_heartbeat_keeps_a_claim_of_another_host_alive(store, monkeypatch):
    far = tracker_of(store, Owner("another-host", 1, 0.0))
    claim = far.claim("p", job()).run_id
    monkeypatch.setenv("TOPICBENCH_STALE_RUN_SECONDS", "1.5")
    with far.heartbeat(seconds=0.2):
        time.sleep(2.0)
        assert Tracker(store, "claims").kill_stale_runs() == []
    assert runs_by_status(store)["RUNNING"][0].info.run_id == claim


def test_a_race_without_a_lock_is_won_by_the_earliest_claim(store, other_process, monkeypatch):
    """Both processes create their claim before either checks (a store without a lock): the later
    one withdraws (KILLED, deleted), the earlier one keeps it."""
    first = tracker_of(store, owner_of(other_process))
    second = Tracker(store, "claims")
    made = {}
    create_run = second.client.create_run

    def first_creates_meanwhile(*args, **kwargs):
        made["first"] = first.client.create_run(
            first.experiment_id, tags={**kwargs["tags"], **first.owner.tags()}, start_time=int(time.time() * 1000) - 1000,
        ).info.run_id
        return create_run(*args, **kwargs)

    monkeypatch.setattr(second.client, "create_run", first_creates_meanwhile)
    lost = second.claim("p", job())
    assert lost.run_id is None and lost.held_by == str(first.owner)
    runs = runs_by_status(store)
    assert set(runs) == {"RUNNING"} and [r.info.run_id for r in runs["RUNNING"]] == [made["first"]]
    assert second.open_runs == set()


def test_an_earlier_claim_that_reached_the_store_late_gives_way_to_a_later_one_that_won(store, other_process,
                                                                                       monkeypatch):
    """The race CI met on an MLflow server: the second claim's start time is the earlier one, but
    its request reached the store after the first claim's check had found nothing and kept it. The
    second's check sees a later claim that has won: it withdraws (KILLED, deleted)."""
    first = tracker_of(store, owner_of(other_process))
    won = first.claim("p", job()).run_id
    assert MlflowClient(store).get_run(won).data.tags["topicbench.claim_decision"] == "won"
    second = Tracker(store, "claims")
    create_run = second.client.create_run
    sent_before = MlflowClient(store).get_run(won).info.start_time - 1000
    monkeypatch.setattr(second.client, "create_run", lambda *a, **kw: create_run(*a, **{**kw, "start_time": sent_before}))
    monkeypatch.setattr(second, "_decisive_runs", _unseen_once(second._decisive_runs))
    lost = second.claim("p", job())
    assert lost.run_id is None and lost.held_by == str(first.owner)
    runs = runs_by_status(store)
    assert set(runs) == {"RUNNING"} and [r.info.run_id for r in runs["RUNNING"]] == [won]
    assert second.open_runs == set()


def _unseen_once(decisive_runs):
    """The first look (before the creation) finds nothing: the rival's claim is not in the store yet."""
    looks = []

    def look(key):
        looks.append(key)
        return [] if len(looks) == 1 else decisive_runs(key)
    return look


def test_an_earlier_claim_keeps_the_key_when_the_later_rival_withdraws(store, other_process, monkeypatch):
    """A later rival seen undecided is waited for: once it withdraws (KILLED), the earlier claim
    keeps the key and records that it won."""
    rival = tracker_of(store, owner_of(other_process))
    ours = Tracker(store, "claims")
    create_run = ours.client.create_run
    made = {}

    def rival_creates_meanwhile(*args, **kwargs):
        run = create_run(*args, **kwargs)
        made["rival"] = rival.client.create_run(
            rival.experiment_id, tags={**kwargs["tags"], **rival.owner.tags()}, start_time=run.info.start_time + 1000,
        ).info.run_id
        threading.Timer(0.6, rival.client.set_terminated, (made["rival"], "KILLED")).start()
        return run

    monkeypatch.setattr(ours.client, "create_run", rival_creates_meanwhile)
    started = time.monotonic()
    claim = ours.claim("p", job())
    assert claim.run_id and time.monotonic() - started >= 0.5  # it waited for the rival's decision
    assert MlflowClient(store).get_run(claim.run_id).data.tags["topicbench.claim_decision"] == "won"


def test_a_later_rival_that_never_decides_is_given_way_to(store, other_process, monkeypatch):
    """A later claim left undecided (made by an older topicbench, or its owner died deciding on
    another host) wins after CLAIM_DECISION_SECONDS: giving way is the safe side."""
    monkeypatch.setattr("topicbench.tasks.store.claims.CLAIM_DECISION_SECONDS", 0.5)
    rival = tracker_of(store, owner_of(other_process))
    ours = Tracker(store, "claims")
    create_run = ours.client.create_run

    def rival_creates_meanwhile(*args, **kwargs):
        run = create_run(*args, **kwargs)
        rival.client.create_run(rival.experiment_id, tags={**kwargs["tags"], **rival.owner.tags()},
                                start_time=run.info.start_time + 1000)
        return run

    monkeypatch.setattr(ours.client, "create_run", rival_creates_meanwhile)
    lost = ours.claim("p", job())
    assert lost.run_id is None and lost.held_by == str(rival.owner)
    assert ours.open_runs == set()


def test_two_jobs_of_one_config_with_one_key_both_get_their_run(store):
    """Two labels with the same settings share a run key: one process fits both, as before."""
    ours = Tracker(store, "claims")
    assert ours.claim("p", job()).run_id and ours.claim("p", job()).run_id


def test_the_store_lock_serialises_processes(tmp_path):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    script = (
        "import sys, time; from topicbench.tasks.store.locks import store_lock\n"
        f"with store_lock({store!r}):\n    print('held', flush=True); time.sleep(3)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    started = time.monotonic()
    with store_lock(store):
        waited = time.monotonic() - started
    holder.wait(timeout=30)
    assert waited > 1.0


# -- the store's checks -------------------------------------------------------------------------


def test_a_database_in_an_unwritable_place_is_refused_at_once(tmp_path):
    started = time.monotonic()
    with pytest.raises(TrackingError, match=r"cannot create the tracking database /proc/topicbench/mlflow.db"):
        check_tracking_uri("sqlite:////proc/topicbench/mlflow.db")
    afile = tmp_path / "afile"
    afile.write_text("not a database\n" * 100)
    with pytest.raises(TrackingError, match=f"cannot create the tracking database {afile}/mlflow.db: {afile} is not a writable folder"):
        check_tracking_uri(f"sqlite:///{afile}/mlflow.db")
    with pytest.raises(TrackingError, match="cannot be opened: file is not a database"):
        check_tracking_uri(f"sqlite:///{afile}")
    with pytest.raises(TrackingError, match="is a folder"):
        check_tracking_uri(f"sqlite:///{tmp_path}")
    assert time.monotonic() - started < 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # nothing created


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(TrackingError, match="is not a writable folder"):
            check_tracking_uri(f"sqlite:///{folder / 'mlflow.db'}")
    finally:
        folder.chmod(0o700)


@pytest.mark.parametrize(
    "uri, message",
    [
        ("file:///tmp/mlruns", "MLflow 3 refuses unless MLFLOW_ALLOW_FILE_STORE=true"),
        ("/tmp/mlruns", "MLflow 3 refuses unless MLFLOW_ALLOW_FILE_STORE=true"),
        ("ftp://example.org/x", "unsupported tracking URI"),
        ("sqlite://", "names no database file"),
        ("http://127.0.0.1:9", "tracking server at http://127.0.0.1:9 is unreachable"),
    ],
)
def test_unsupported_or_unreachable_stores_are_refused(uri, message, monkeypatch):
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    with pytest.raises(TrackingError, match=message):
        check_tracking_uri(uri, timeout=2)


def test_store_existence_is_told_without_creating_one(tmp_path):
    database = tmp_path / "store" / "mlflow.db"
    assert not tracking_store_exists(f"sqlite:///{database}")
    assert not (tmp_path / "store").exists()
    Tracker(f"sqlite:///{database}", "claims")
    assert tracking_store_exists(f"sqlite:///{database}")
    assert not tracking_store_exists("http://127.0.0.1:9", timeout=2)


# -- two real processes on one store -------------------------------------------------------------


TINY_MODELS = (
    "  - {model: elda, settings: {kappa: 2.0, generator: cooccurrence, top_words: 10}}\n"
    "  - {model: gensim_lda, num_topics: 4, settings: {passes: 2, iterations: 20, top_words: 10}}\n"
)


def write_config(folder: Path, corpus: Path, models: str = TINY_MODELS, seeds=(0, 1)) -> Path:
    path = folder / "bench.yaml"
    path.write_text(
        f"experiment: tiny\ncorpora:\n  - {{name: tiny, source: {corpus}, preprocessing: {{preprocessed: true}}}}\n"
        f"models:\n{models}seeds: {list(seeds)}\nmetrics: [umass, topic_diversity]\ntop_n: [5]\n"
    )
    return path


def topicbench_env(prefect_home: Path, api_url: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    # a patient server start: these tests run beside others on two cores
    env.update(PREFECT_HOME=str(prefect_home), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="600",
               TOPICBENCH_SPOOL=str(prefect_home.parent / "spool"))  # fits a store could not take: the test's own
    if api_url:
        env["PREFECT_API_URL"] = api_url
    return env


def topicbench(*arguments) -> list:
    return [str(Path(sys.executable).with_name("topicbench")), *arguments]


def fit_runs(store: str, experiment: str = "tiny") -> list:
    client = MlflowClient(store)
    found = client.get_experiment_by_name(experiment)
    return client.search_runs([found.experiment_id], "tags.`topicbench.role` = 'fit'", max_results=1000)


@pytest.mark.slow
def test_two_processes_on_one_fresh_store_fit_each_run_once(tiny_octis, tmp_path):
    """Two `topicbench run` at once on one new sqlite store and one new PREFECT_HOME: both start
    their Prefect server (no migration race there) and their store (none in MLflow's either), and
    each (corpus, model, seed) is fitted and tracked once."""
    store = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    config = write_config(tmp_path, tiny_octis)
    env = topicbench_env(tmp_path / "prefect")
    processes = [
        subprocess.Popen(topicbench("run", str(config), "--tracking-uri", store, "--no-report"), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path)
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=900)[0] for process in processes]
    assert [p.returncode for p in processes] == [0, 0], "\n\n".join(o[-3000:] for o in outputs)
    runs = fit_runs(store)
    keys = [r.data.tags["topicbench.run_key"] for r in runs]
    assert len(runs) == 4 and len(set(keys)) == 4, [(r.info.run_name, r.info.status) for r in runs]
    assert {r.info.status for r in runs} == {"FINISHED"}
    # fitted once, by one or the other: each process's summary line counts the runs it fitted and logged
    assert sum(int(n) for o in outputs for n in re.findall(r"(\d+) runs logged", o)) == 4, outputs


def test_an_interrupt_inside_a_store_write_does_not_keep_the_store_locked(store, monkeypatch):
    """Ctrl-C inside a write (MLflow's log_batch on sqlite, seen under load) left the write's
    connection, its transaction open, alive in the interrupt's traceback: every later call of the
    process found the store locked, so abandon() could mark no run. It lets that call go first."""
    import sqlite3

    from topicbench.tasks.store import claims as run_claims

    monkeypatch.setattr(run_claims, "ABANDON_RETRY_SECONDS", 2.0)
    tracker = Tracker(store, "claims")
    runs = [tracker.claim("p", job(key)).run_id for key in ("k1", "k2")]

    def interrupted_write():
        connection = sqlite3.connect(store.removeprefix("sqlite:///"), timeout=0.1)
        connection.execute("BEGIN IMMEDIATE")  # the store's write lock, as a write in progress holds it
        raise KeyboardInterrupt

    try:
        interrupted_write()
    except KeyboardInterrupt as error:
        interrupt = error
    tracker.abandon(interrupt)
    assert [MlflowClient(store).get_run(r).info.status for r in runs] == ["KILLED", "KILLED"]
    assert not tracker.open_runs
    assert interrupt.__traceback__ is not None  # still printable


def test_an_interrupted_benchmark_marks_its_runs_killed_once_a_busy_store_frees(store, monkeypatch):
    """abandon() tries again while the store answers "database is locked" (another connection
    holds it), and gives up at once on any other failure (the next run's sweep marks them)."""
    from mlflow.exceptions import MlflowException

    from topicbench.tasks.store import claims as run_claims

    monkeypatch.setattr(run_claims, "ABANDON_RETRY_PAUSE", 0.01)
    tracker = Tracker(store, "claims")
    runs = [tracker.claim("p", job(key)).run_id for key in ("k1", "k2")]
    real_set_terminated = tracker.client.set_terminated
    refusals = {"left": 3}

    def busy_then_free(run_id, status):
        if refusals["left"]:
            refusals["left"] -= 1
            raise MlflowException("(sqlite3.OperationalError) database is locked")
        return real_set_terminated(run_id, status)

    monkeypatch.setattr(tracker.client, "set_terminated", busy_then_free)
    tracker.abandon(KeyboardInterrupt())
    assert refusals["left"] == 0
    assert [MlflowClient(store).get_run(r).info.status for r in runs] == ["KILLED", "KILLED"]
    assert not tracker.open_runs

    gone = Tracker(store, "claims")
    run = gone.claim("p", job("k3")).run_id
    calls = []

    def unreachable(run_id, status):
        calls.append(run_id)
        raise MlflowException("API request failed: connection refused")

    monkeypatch.setattr(gone.client, "set_terminated", unreachable)
    gone.abandon(KeyboardInterrupt())
    assert calls == [run]  # tried once: no retries against a store that is not merely busy
    assert MlflowClient(store).get_run(run).info.status == "RUNNING" and gone.open_runs == {run}


# -- races on stores without a lock --------------------------------------------------------------


def corpus_job(key: str = "k1"):
    """A job whose corpus :meth:`Tracker._log_corpus_input` logs as a dataset."""
    corpus = SimpleNamespace(name="tiny", source="/data/tiny", fingerprint=lambda: "f" * 64)
    return JobStub(**vars(job(key)), corpus_data=corpus)


def test_a_dataset_insert_lost_to_another_process_is_tried_again(store, monkeypatch):
    """Two processes logging one new corpus at once: MLflow's store looks the dataset up, finds
    none, and both insert it; the loser's insert fails on the unique constraint (seen on an
    MLflow server as "UNIQUE constraint failed: datasets..."). Its next try finds the row."""
    from mlflow.exceptions import MlflowException

    tracker = Tracker(store, "claims")
    run_id = tracker.claim("p", job()).run_id
    real_log_inputs = tracker.client.log_inputs
    tries = []

    def lost_once(*args, **kwargs):
        tries.append(1)
        if len(tries) == 1:
            raise MlflowException("BAD_REQUEST: (sqlite3.IntegrityError) UNIQUE constraint failed: datasets.experiment_id, "
                                  "datasets.name, datasets.digest")
        return real_log_inputs(*args, **kwargs)

    monkeypatch.setattr(tracker.client, "log_inputs", lost_once)
    tracker._log_corpus_input(run_id, corpus_job())
    assert len(tries) == 2
    (logged,) = MlflowClient(store).get_run(run_id).inputs.dataset_inputs
    assert logged.dataset.name == "tiny"

    def refused(*args, **kwargs):
        tries.append(1)
        raise MlflowException("INVALID_PARAMETER_VALUE: something else")

    monkeypatch.setattr(tracker.client, "log_inputs", refused)
    tries.clear()
    with pytest.raises(MlflowException, match="something else"):
        tracker._log_corpus_input(run_id, corpus_job())
    assert len(tries) == 1  # any other error is not retried


def test_claim_states_tell_finished_held_and_free_keys(store, other_process):
    theirs = tracker_of(store, owner_of(other_process))
    ours = Tracker(store, "claims")
    jobs = {key: job(key) for key in ("done", "held", "failed", "never")}
    theirs.client.set_terminated(theirs.claim("p", jobs["done"]).run_id, "FINISHED")
    theirs.claim("p", jobs["held"])
    theirs.client.set_terminated(theirs.claim("p", jobs["failed"]).run_id, "FAILED")
    states = ours.claim_states(jobs.values())
    assert {key: states[j] for key, j in jobs.items()} == {"done": "finished", "held": "held", "failed": None, "never": None}
    other_process.kill()
    other_process.wait()
    assert ours.claim_states([jobs["held"]]) == {jobs["held"]: None}  # its owner is gone: free again


def test_a_malformed_stale_run_setting_is_refused_before_any_work(store, monkeypatch):
    monkeypatch.setenv("TOPICBENCH_STALE_RUN_SECONDS", "abc")
    with pytest.raises(TrackingError, match=r"TOPICBENCH_STALE_RUN_SECONDS='abc' is not a number >= 0 \(seconds without "
                                            r"a heartbeat .*\): set it to e.g. 600.0, or unset it"):
        check_tracking_uri(store)
