"""Low-adaptivity parallel E-LDA: valid solutions, the threshold invariant, closeness to greedy,
shard and executor independence, and recovery from a lost Dask worker."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

import naive
from conftest import random_corpus
from topicbench.core.elda.model import ELDA
from topicbench.core.elda.generators import keyword_candidates, topic_matrix_candidates
from topicbench.core.elda.greedy import fast_greedy
from topicbench.core.elda.parallel import Borrowed, LocalShards, parallel_elda
from topicbench.core.validation import InputError


def instance(seed: int, source: str):
    rng = np.random.default_rng([seed, 3])
    corpus = random_corpus(rng, n_documents=(8, 40), n_words=(6, 40), doc_length=(1, 30))
    if source == "matrix":
        log_phi = rng.normal(size=(int(rng.integers(3, 12)), corpus.n_words)) * 3.0
        return corpus, topic_matrix_candidates(log_phi, vocabulary=corpus.vocabulary)
    return corpus, keyword_candidates(corpus, source)


def max_feasible_kappa(corpus, candidates) -> float:
    return float(min(3.0, candidates.n_topics))


def split_rounds(solution):
    """The links of each round (the ledger is rounds in order)."""
    counts = solution.stats["links_per_round"]
    bounds = np.concatenate([[0], np.cumsum(counts)])
    return [solution.links[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


@pytest.mark.parametrize("source", ["raw_umass", "cooccurrence", "matrix"])
@pytest.mark.parametrize("seed", range(12))
def test_parallel_solution_is_valid(seed, source):
    corpus, candidates = instance(seed, source)
    kappa = max_feasible_kappa(corpus, candidates)
    solution = parallel_elda(corpus, candidates, kappa, epsilon=0.2, seed=seed, n_shards=3)
    budget = math.floor(kappa * corpus.n_documents)
    assert solution.n_links == budget
    assert len({(int(d), int(t)) for d, t in solution.links}) == budget
    assert all(len(topics) >= 1 for topics in solution.doc_topics)
    L = candidates.to_dense()
    reference = naive.objective(L, corpus, solution.links)
    assert solution.log_posterior == pytest.approx(reference, rel=1e-9)
    # the gains recorded are the true marginal gains: F recomputed from the links = the trace
    assert solution.objective_trace[-1] == pytest.approx(solution.log_posterior, rel=1e-9)
    assert solution.stats["adaptive_rounds"] == 2 + len(solution.stats["thresholds"])
    stats = solution.stats
    assert stats["gain_evaluations"] == stats["document_evaluations"] * candidates.n_topics + stats["topic_evaluations"]


@pytest.mark.parametrize("epsilon", [0.3, 0.1])
@pytest.mark.parametrize("seed", range(8))
def test_every_link_is_within_one_minus_epsilon_of_the_best_gain(seed, epsilon):
    """The invariant behind the 1 - 1/e - eps guarantee: when a round starts, every link it adds
    has marginal gain >= (1 - eps) x the largest gain of any (document, topic) at that time."""
    corpus, candidates = instance(seed, "raw_umass")
    solution = parallel_elda(corpus, candidates, 3, epsilon=epsilon, seed=seed)
    L = candidates.to_dense()
    rounds = split_rounds(solution)
    made = [tuple(link) for link in rounds[0]]
    for links in rounds[1:]:
        best_gain = max(naive_all_gains(L, corpus, made))
        for d, t in links:
            gain = naive_marginal(L, corpus, made, int(d), int(t))
            assert gain >= (1 - epsilon) * best_gain - 1e-9 * abs(best_gain)
            made.append((int(d), int(t)))


def naive_marginal(L, corpus, links, d, t) -> float:
    before = naive.objective(L, corpus, links)
    return naive.objective(L, corpus, links + [(d, t)]) - before


def naive_all_gains(L, corpus, links):
    linked = set(links)
    doc = lambda d: corpus.document(d)
    for d in range(corpus.n_documents):
        topics = [t for dd, t in links if dd == d]
        scores = naive.best_scores(L, doc(d), topics)
        gains = naive.gains(L, doc(d), scores)
        for t in range(L.shape[0]):
            if (d, t) not in linked:
                yield gains[t]


@pytest.mark.parametrize("seed", range(10))
def test_small_epsilon_nearly_matches_greedy(seed):
    corpus, candidates = instance(seed, "raw_umass")
    greedy = fast_greedy(corpus, candidates, 3)
    start = greedy.objective_trace[corpus.n_documents - 1]  # FastInitialize: the same in both
    for epsilon in (0.01, 0.2):
        parallel = parallel_elda(corpus, candidates, 3, epsilon=epsilon, seed=seed)
        assert parallel.objective_trace[corpus.n_documents - 1] == pytest.approx(start, rel=1e-12)
        improvement = greedy.log_posterior - start
        if improvement > 0:
            # each step is (1 - eps)-greedy; allow eps-proportional slack on the improvement
            assert parallel.log_posterior - start >= (1 - 3 * epsilon) * improvement


def test_shards_and_seed_do_not_change_a_tie_free_result():
    corpus, candidates = instance(5, "matrix")
    one = parallel_elda(corpus, candidates, 3, n_shards=1, seed=1)
    three = parallel_elda(corpus, candidates, 3, n_shards=3, seed=1)
    again = parallel_elda(corpus, candidates, 3, n_shards=3, seed=1)
    np.testing.assert_array_equal(three.links, again.links)
    assert sorted(map(tuple, one.links.tolist())) == sorted(map(tuple, three.links.tolist()))
    assert one.log_posterior == pytest.approx(three.log_posterior, rel=1e-12)


def test_bad_parameters_are_clear_errors():
    corpus, candidates = instance(0, "raw_umass")
    with pytest.raises(InputError, match="epsilon must lie in"):
        parallel_elda(corpus, candidates, 2, epsilon=0)
    with pytest.raises(InputError, match="kappa must be >= 1"):
        parallel_elda(corpus, candidates, 0.5)


@pytest.fixture(scope="module")
def dask_shards():
    pytest.importorskip("distributed")
    from topicbench.core.elda.dask_shards import DaskShards

    executor = DaskShards(n_workers=2)
    yield executor
    executor.close()




@pytest.mark.slow
def test_dask_executor_gives_the_local_result(dask_shards):
    corpus, candidates = instance(2, "raw_umass")
    local = parallel_elda(corpus, candidates, 3, n_shards=2, seed=4, executor=LocalShards())
    remote = parallel_elda(corpus, candidates, 3, n_shards=2, seed=4, executor=Borrowed(dask_shards))
    np.testing.assert_array_equal(local.links, remote.links)
    assert local.log_posterior == remote.log_posterior


def _worker_settings(*names):
    import dask

    return [dask.config.get(name) for name in names]


@pytest.mark.slow
def test_local_workers_run_without_the_profiler_and_keep_the_other_settings(dask_shards):
    """The local cluster's workers get LOCAL_WORKER_CONFIG merged over this process's settings."""
    import dask

    names = ("distributed.worker.profile.enabled", "distributed.worker.profile.interval", "distributed.nanny.pre-spawn-environ")
    here = _worker_settings(*names)
    assert here[0] is True  # the library's default in this process
    for settings in dask_shards.client.run(_worker_settings, *names).values():
        assert settings == [False, *here[1:]]
    assert dask.config.get("distributed.worker.profile.enabled") is True  # this process unchanged


def _kernel_warm_ups_here() -> int:
    from topicbench.core.elda import shard_rounds

    return shard_rounds._KERNEL_WARM_UPS


@pytest.mark.slow
def test_every_worker_warms_its_kernels_up_once_before_the_rounds(dask_shards):
    corpus, candidates = instance(9, "raw_umass")
    reference = parallel_elda(corpus, candidates, 2, n_shards=2, seed=3)
    for _ in range(2):
        solution = parallel_elda(corpus, candidates, 2, n_shards=2, seed=3, executor=Borrowed(dask_shards))
        np.testing.assert_array_equal(solution.links, reference.links)
        assert solution.stats["start_seconds"] >= dask_shards.warm_up_seconds >= 0
        assert solution.stats["rounds_seconds"] > 0 and solution.stats["shard_cpu_seconds"] >= 0
    # a lambda travels by value (a test module is not importable on the workers)
    counts = dask_shards.client.run(lambda: __import__("topicbench.core.elda.shard_rounds", fromlist=["_"])._KERNEL_WARM_UPS)
    assert len(counts) == 2 and set(counts.values()) == {1}, counts


def test_the_kernel_warm_up_runs_once_per_process(monkeypatch):
    from topicbench.core.elda import shard_rounds

    monkeypatch.setattr(shard_rounds, "_KERNEL_WARM_UPS", 0)
    assert shard_rounds.warm_up_kernels() > 0
    assert _kernel_warm_ups_here() == 1
    assert shard_rounds.warm_up_kernels() == 0.0
    assert _kernel_warm_ups_here() == 1


def test_the_kernel_warm_up_imports_no_scipy_sparse():
    """A worker's warm-up is on the first run's critical path, once per worker: its tiny instance
    is built without ``scipy.sparse`` (whose import, with scipy's array-API layer, took 0.2 s)."""
    import subprocess
    import sys

    probe = "import sys; from topicbench.core.elda.shard_rounds import warm_up_kernels; warm_up_kernels(); print('scipy.sparse' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"


@pytest.mark.slow
def test_a_worker_killed_mid_run_does_not_corrupt_the_result(dask_shards):
    from topicbench.core.io import load_corpus

    corpus = load_corpus()
    candidates = keyword_candidates(corpus, "raw_umass")
    reference = parallel_elda(corpus, candidates, 2, n_shards=2, seed=0)
    client = dask_shards.client
    rounds = []

    def kill_a_worker_in_round_4(made, budget, log_posterior):
        rounds.append(made)
        if len(rounds) == 4:
            victim = sorted(client.scheduler_info()["workers"])[0]
            try:
                client.run(os._exit, 1, workers=[victim])
            except Exception:  # the worker dies before it can answer
                pass

    solution = parallel_elda(
        corpus, candidates, 2, n_shards=2, seed=0, executor=Borrowed(dask_shards),
        on_progress=kill_a_worker_in_round_4,
    )
    assert len(rounds) > 4, "the run must have gone past the round where the worker was killed"
    assert solution.log_posterior == reference.log_posterior
    np.testing.assert_array_equal(solution.links, reference.links)
    assert solution.stats["recovered_shards"] >= 1


@pytest.mark.slow
@pytest.mark.parametrize("lost", ["_forget_states", "_forget_run"])
def test_a_lost_shard_state_is_rebuilt_from_the_ledger(dask_shards, lost):
    """A worker that keeps its address but loses its memory between rounds: the shard states
    (``_forget_states``), or the states and the shards' documents (``_forget_run``)."""
    from topicbench.core.elda import dask_shards as distributed

    corpus, candidates = instance(5, "raw_umass")
    reference = parallel_elda(corpus, candidates, 3, n_shards=2, seed=1)
    rounds = []

    def forget_in_round_3(made, budget, log_posterior):
        rounds.append(made)
        if len(rounds) == 3:
            dask_shards.client.run(getattr(distributed, lost), dask_shards._token)

    solution = parallel_elda(
        corpus, candidates, 3, n_shards=2, seed=1, executor=Borrowed(dask_shards),
        on_progress=forget_in_round_3,
    )
    assert len(rounds) > 3
    np.testing.assert_array_equal(solution.links, reference.links)
    assert solution.stats["recovered_shards"] == 2


def _sleep_then_count(candidates, shard, state, seconds):
    import time

    time.sleep(seconds)
    return state, len(shard.documents)


@pytest.mark.slow
def test_a_long_round_leaves_the_workers_answering(dask_shards):
    """A round runs on each worker's task thread, not its event loop: while a shard function
    works for seconds, the worker still answers other requests (heartbeats, Client.run) at once."""
    import threading
    import time

    from topicbench.core.elda.shard_rounds import split_shards
    from topicbench.core.elda.solution import DocumentArrays

    corpus, candidates = instance(3, "raw_umass")
    shards = split_shards(DocumentArrays.from_corpus(corpus), 2)
    dask_shards.start(candidates, shards)
    try:
        answers = []
        round_ = threading.Thread(target=lambda: answers.append(dask_shards.run(_sleep_then_count, 3.0)))
        round_.start()
        time.sleep(0.5)
        asked = time.perf_counter()
        pids = dask_shards.client.run(os.getpid)
        answered = time.perf_counter() - asked
        round_.join()
    finally:
        dask_shards._forget()
    assert len(pids) == 2 and answered < 2.0, answered
    assert answers == [[len(s.documents) for s in shards]]


def _states_on_worker(token) -> int:
    from topicbench.core.elda import dask_shards as distributed

    return sum(key[0] == token for key in list(distributed._SHARD_STATES) + list(distributed._PLACED))


@pytest.mark.slow
def test_a_run_dropped_while_its_round_runs_leaves_nothing_on_the_workers(dask_shards):
    """Ctrl-C during a round: the driver drops the run (``close`` does) while the workers still
    work; the round's states are not stored after that."""
    import threading
    import time

    from topicbench.core.elda.shard_rounds import split_shards
    from topicbench.core.elda.solution import DocumentArrays

    corpus, candidates = instance(4, "raw_umass")
    dask_shards.start(candidates, split_shards(DocumentArrays.from_corpus(corpus), 2))
    token = dask_shards._token
    round_ = threading.Thread(target=lambda: dask_shards.run(_sleep_then_count, 2.0))
    round_.start()
    time.sleep(0.5)
    dask_shards._forget()  # what close() does first
    round_.join()
    assert set(dask_shards.client.run(_states_on_worker, token).values()) == {0}


@pytest.mark.slow
def test_memory_mapped_and_scattered_candidates_give_the_same_result(dask_shards):
    corpus, candidates = instance(6, "cooccurrence")
    assert dask_shards.memory_map  # the local cluster started here shares one mapped copy
    mapped = parallel_elda(corpus, candidates, 2, n_shards=3, seed=0, executor=Borrowed(dask_shards))
    dask_shards.memory_map = False
    try:
        scattered = parallel_elda(corpus, candidates, 2, n_shards=3, seed=0, executor=Borrowed(dask_shards))
    finally:
        dask_shards.memory_map = True
    np.testing.assert_array_equal(mapped.links, scattered.links)
    assert mapped.log_posterior == scattered.log_posterior


def test_candidates_go_to_shared_memory_only_while_it_has_room(tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    import psutil

    from topicbench.core.elda.mapped_candidates import SHARED_MEMORY_SHARE, candidates_folder

    assert candidates_folder(1000, tmp_path) == tmp_path
    free = shutil.disk_usage(tmp_path).free
    assert candidates_folder(int(free * SHARED_MEMORY_SHARE * 1.01), tmp_path) is None  # not its free space
    assert candidates_folder(1000, tmp_path / "absent") is None
    memory = namedtuple("memory", "available")
    monkeypatch.setattr(psutil, "virtual_memory", lambda: memory(4000))
    assert candidates_folder(1000, tmp_path) == tmp_path
    assert candidates_folder(1001, tmp_path) is None  # more than a quarter of the available memory


@pytest.mark.slow
def test_mapped_candidates_are_written_where_chosen_and_removed_with_the_executors_maps(dask_shards, tmp_path, monkeypatch):
    from topicbench.core.elda import mapped_candidates as module

    monkeypatch.setattr(module, "SHARED_MEMORY", tmp_path)
    corpus, candidates = instance(9, "raw_umass")
    solution = parallel_elda(corpus, candidates, 2, n_shards=2, seed=0, executor=Borrowed(dask_shards))
    directory = Path(dask_shards._mapped[1].directory)
    assert directory.parent == tmp_path
    assert sorted(p.name for p in directory.iterdir()) == sorted(f"{name}.npy" for name in module._MAPPED_ARRAYS)
    np.testing.assert_array_equal(solution.links, parallel_elda(corpus, candidates, 2, n_shards=2, seed=0).links)
    dask_shards._remove_mapped_files()
    assert not directory.exists()


def test_mapped_candidates_round_trip_through_pickle(tmp_path):
    import pickle

    from topicbench.core.elda.mapped_candidates import MappedCandidates

    _, candidates = instance(7, "raw_umass")
    handle = pickle.loads(pickle.dumps(MappedCandidates(candidates, tmp_path / "map")))
    loaded = handle.load()
    assert pickle.loads(pickle.dumps(handle)).load() is loaded  # one map per process, whatever copy of the handle
    np.testing.assert_array_equal(loaded.to_dense(), candidates.to_dense())
    for mine, theirs in zip(loaded.columns, candidates.columns):
        np.testing.assert_array_equal(mine, theirs)
    np.testing.assert_array_equal(loaded.constants_descending, candidates.constants_descending)
    assert loaded.labels == candidates.labels
    assert len(pickle.dumps(handle)) < 10_000  # a handle, not the arrays


def test_shards_hold_every_document_once_and_the_same_mix_of_lengths():
    from topicbench.core.elda.solution import DocumentArrays
    from topicbench.core.elda.shard_rounds import split_shards

    corpus, _ = instance(8, "raw_umass")
    docs = DocumentArrays.from_corpus(corpus)
    shards = split_shards(docs, 3)
    assert sorted(np.concatenate([s.documents for s in shards]).tolist()) == list(range(corpus.n_documents))
    for shard in shards:
        for local, document in enumerate(shard.documents):
            span = slice(shard.docs.indptr[local], shard.docs.indptr[local + 1])
            whole = slice(docs.indptr[document], docs.indptr[document + 1])
            np.testing.assert_array_equal(shard.docs.words[span], docs.words[whole])
            np.testing.assert_array_equal(shard.docs.counts[span], docs.counts[whole])
    # dealt longest first in snake order: the shards' total lengths differ by at most the longest document
    lengths = [int(np.diff(s.docs.indptr).sum()) for s in shards]
    assert max(lengths) - min(lengths) <= int(np.diff(docs.indptr).max())
    assert all(np.all(np.diff(s.documents) > 0) for s in shards)  # each in id order


@pytest.mark.slow
def test_runs_on_an_existing_scheduler_by_address():
    from distributed import LocalCluster

    from topicbench.core.elda.dask_shards import DaskShards

    corpus, candidates = instance(3, "raw_umass")
    local = parallel_elda(corpus, candidates, 2, n_shards=2, seed=2)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        solution = parallel_elda(
            corpus, candidates, 2, n_shards=2, seed=2, executor=DaskShards(cluster.scheduler_address)
        )
    np.testing.assert_array_equal(solution.links, local.links)


def test_an_unreachable_scheduler_is_a_clear_error():
    pytest.importorskip("distributed")
    from topicbench.core.elda.dask_shards import DaskShards

    with pytest.raises(ConnectionError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        DaskShards("tcp://127.0.0.1:9", connect_timeout=2)


class RecordingExecutor(LocalShards):
    """LocalShards that counts its starts and closes."""

    def __init__(self):
        self.starts = self.closes = 0

    def start(self, candidates, shards):
        self.starts += 1
        super().start(candidates, shards)

    def close(self):
        self.closes += 1
        super().close()


@pytest.mark.parametrize("seed", range(4))
def test_the_estimator_runs_the_parallel_algorithm_on_the_executor_it_is_given(seed):
    corpus, candidates = instance(seed, "raw_umass")
    direct = parallel_elda(corpus, candidates, 3, epsilon=0.2, seed=seed)
    executor = RecordingExecutor()
    model = ELDA(3, generator="raw_umass", executor=executor, epsilon=0.2, seed=seed)
    for _ in range(2):  # the estimator borrows the executor: it stays usable for the next fit
        model.fit(corpus)
        np.testing.assert_array_equal(model.links_, direct.links)
        assert model.log_posterior_ == direct.log_posterior
        assert model.solution_.stats["algorithm"] == "parallel"
    assert executor.starts == 2 and executor.closes == 0
    owned = RecordingExecutor()
    parallel_elda(corpus, candidates, 3, epsilon=0.2, seed=seed, executor=owned)
    assert owned.starts == 1 and owned.closes == 1  # what parallel_elda is given, it closes
    greedy = ELDA(3, generator="raw_umass").fit(corpus)
    np.testing.assert_array_equal(greedy.links_, fast_greedy(corpus, candidates, 3).links)
    assert greedy.solution_.stats["algorithm"] == "greedy"


def test_the_estimator_checks_epsilon_only_for_the_parallel_algorithm():
    corpus, _ = instance(1, "raw_umass")
    ELDA(2, epsilon=5).fit(corpus)  # exact greedy has no epsilon
    with pytest.raises(InputError, match="epsilon must lie in"):
        ELDA(2, epsilon=5, executor=LocalShards()).fit(corpus)


def test_local_cluster_options_are_single_threaded_local_processes():
    from topicbench.core.dask_cluster import local_cluster_options

    options = local_cluster_options(3)
    assert options["n_workers"] == 3 and options["threads_per_worker"] == 1
    assert options["processes"] is True and options["host"] == "127.0.0.1"
    assert options["dashboard_address"] == "127.0.0.1:0"  # no fixed port: two clusters on one machine
    assert local_cluster_options()["n_workers"] == (os.cpu_count() or 1)


@pytest.mark.slow
def test_the_estimator_on_a_local_dask_cluster_from_the_factory():
    pytest.importorskip("distributed")
    from topicbench.core.elda.dask_shards import dask_executor

    corpus, candidates = instance(4, "raw_umass")
    local = parallel_elda(corpus, candidates, 2, epsilon=0.2, seed=1, n_shards=1)
    with dask_executor(workers=1) as executor:
        assert "local cluster" in repr(executor) and executor.n_workers == 1
        model = ELDA(2, generator="raw_umass", executor=executor, epsilon=0.2, seed=1)
        first = model.fit(corpus).links_
        second = model.fit(corpus).links_  # the cluster outlives a fit
    np.testing.assert_array_equal(first, local.links)
    np.testing.assert_array_equal(second, local.links)
