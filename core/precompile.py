"""Compile every numba kernel once per install (``topicbench compile``), so that no run compiles.

numba compiles a kernel on its first call and caches it on disk (``cache=True``); a later process
loads it in milliseconds (:mod:`._kernel_cache`). Without this step the first run after an install
paid for compiling: ``topicbench elda`` on the built-in corpus took 28 s instead of 1 s, the first
``--algorithm parallel`` run another 7 s, and every Dask worker of a fresh cluster compiled the
same shard kernels at once. ``scripts/setup.sh`` runs :func:`compile_kernels`.

Kernels are compiled for the argument types of their call sites, so they are reached through the
core's own entry points (every generator, exact greedy, the parallel rounds, out-of-sample
inference, topic tables, co-occurrence counts) on the built-in Lee corpus: the same array types as
any real run, which a hand-written list of signatures could silently drift from.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numba.core.registry import CPUDispatcher

from topicbench.core.elda.kernels import column_sort
from topicbench.core.elda.kernels import cooccurrence
from topicbench.core.elda.kernels import document_rounds
from topicbench.core.elda.kernels import first_round
from topicbench.core.elda.kernels import gains
from topicbench.core.elda.kernels import lazy_greedy
from topicbench.core.elda.kernels import readout
from topicbench.core.elda.kernels import segments
from topicbench.core.elda.generators import GENERATORS, keyword_candidates
from topicbench.core.elda.greedy import fast_greedy
from topicbench.core.elda.inference import freeze_topics, infer_topics
from .io import load_corpus
from topicbench.core.metrics import kernels as _metric_kernels
from topicbench.core.metrics import stability_kernels as _stability_kernels
from .metrics import stability as _stability
from .metrics.counts import CooccurrenceCounts, count_for_topics, topic_pairs
from topicbench.core.elda.parallel import LocalShards, parallel_elda
from topicbench.core.elda.shard_rounds import warm_up_kernels
from .preprocess import PreprocessConfig

#: The modules whose kernels :func:`compile_kernels` covers (every ``cache=True`` kernel of the package).
KERNEL_MODULES = (
    segments, cooccurrence, column_sort, gains, first_round, lazy_greedy, document_rounds, readout,
    _metric_kernels, _stability_kernels,
)
#: Window of the sliding-window co-occurrence count it makes (any size gives the same types).
_COUNT_WINDOW = 10


@dataclass
class KernelReport:
    """What :func:`compile_kernels` did, kernel by kernel (``module.kernel`` names)."""

    compiled: list = field(default_factory=list)  # compiled here, and written to the cache
    # loaded from the cache; a kernel called only by loaded kernels is not listed (it is inside them)
    loaded: list = field(default_factory=list)
    cache_folders: list = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        return (f"{len(self.compiled)} kernels compiled, {len(self.loaded)} loaded from the cache, "
                f"in {self.seconds:.1f} s; cache: {', '.join(self.cache_folders)}")


def kernel_dispatchers() -> dict:
    """{``module.kernel``: numba dispatcher} of every kernel in :data:`KERNEL_MODULES`, each under
    the module that defines it (not those that import it)."""
    found = {}
    for module in KERNEL_MODULES:
        short = module.__name__.removeprefix("topicbench.core.")
        for name, value in vars(module).items():
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == module.__name__:
                found[f"{short}.{name}"] = value
    return found


def compile_kernels(on_step=None) -> KernelReport:
    """Call every kernel through the core's entry points on the built-in corpus; report which
    were compiled and which were already cached. ``on_step(description)`` before each step."""
    step = on_step or (lambda description: None)
    started = time.perf_counter()
    step("reading the built-in corpus")
    corpus = load_corpus(None, PreprocessConfig())
    for generator in GENERATORS:
        step(f"{generator}: candidates, exact greedy, parallel rounds, inference")
        candidates = keyword_candidates(corpus, generator)
        solution = fast_greedy(corpus, candidates, 2.0)
        solution.topic_table()
        parallel_elda(corpus, candidates, 2.0, executor=LocalShards())
        infer_topics(corpus, freeze_topics(solution), topics_per_document=2)
    step("the Dask workers' warm-up instance")
    warm_up_kernels()  # also rebuilds a shard from its links: the recovery path no run above takes
    step("co-occurrence counts (whole documents and sliding windows, all pairs and listed pairs)")
    topics = np.arange(20).reshape(4, 5)  # four 5-word topics of word ids
    for window in (None, _COUNT_WINDOW):
        count_for_topics(corpus, window, topics)  # all pairs of a few words: one dense matrix
        CooccurrenceCounts.build(corpus, window, np.unique(topics), pairs=topic_pairs(topics))  # listed pairs
    step("topic stability across seeds: Jensen-Shannon kernels")
    _stability.warm_up_kernels()
    return _report(time.perf_counter() - started)


def _report(seconds: float) -> KernelReport:
    report = KernelReport(seconds=seconds)
    folders = set()
    for name, dispatcher in kernel_dispatchers().items():
        stats = dispatcher.stats
        if stats.cache_misses:
            report.compiled.append(name)
        elif stats.cache_hits:
            report.loaded.append(name)
        if stats.cache_path:
            folders.add(str(Path(stats.cache_path)))
    report.cache_folders = sorted(folders)
    return report
