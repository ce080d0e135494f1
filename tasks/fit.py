"""Prefect task: fit one model with one seed (runs on the flow's task runner, e.g. Dask)."""

from __future__ import annotations

import contextlib

import numpy as np
from prefect import task
from prefect.cache_policies import NONE

from topicbench.baselines.registry import MODELS
from topicbench.core.corpus import Corpus
from topicbench.core.output import TopicModelOutput


@task(name="fit_model", retries=0, cache_policy=NONE)
def fit_model(
    corpus: Corpus, model: str, num_topics, settings: dict, seed: int, heldout: Corpus | None = None,
) -> tuple[TopicModelOutput, np.ndarray | None]:
    """``MODELS.get(model)(**settings).fit(corpus, num_topics, seed)``, plus p(topic | document)
    of the ``heldout`` documents for models that can infer them. numba and BLAS threads are held
    to the Dask worker's thread count when it runs inside one. Fits never retry."""
    with worker_threads():
        estimator = MODELS.get(model)(**settings)
        output = estimator.fit(corpus, num_topics, seed)
        theta = None
        if heldout is not None and getattr(estimator, "supports_transform", False):
            theta = estimator.transform(heldout)
        return output, theta


@contextlib.contextmanager
def thread_limit(threads: int):
    """numba's and the BLAS/OpenMP pools' (torch's included) threads held to ``threads`` in the block."""
    import numba
    from threadpoolctl import threadpool_limits

    previous = numba.get_num_threads()
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    try:
        with threadpool_limits(limits=threads):
            yield
    finally:
        numba.set_num_threads(previous)


@contextlib.contextmanager
def worker_threads():
    """Inside a Dask worker, :func:`thread_limit` to the worker's threads; elsewhere nothing."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        yield
        return
    with thread_limit(getattr(getattr(worker, "state", worker), "nthreads", 1) or 1):
        yield
