"""Prefect task: fit one model with one seed (runs on the flow's task runner, e.g. Dask)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

import numpy as np
from prefect import task
from prefect.cache_policies import NONE

from topicbench.baselines.registry import MODELS
from topicbench.core.corpus import Corpus
from topicbench.core.output import TopicModelOutput
from topicbench.core.threads import worker_threads
from topicbench.tasks.progress import fit_progress


@dataclass(frozen=True, eq=False)
class FitResult:
    """What a fit sends back to the flow: the output, the model's resolved values (tracked as
    ``resolved.<name>``), p(topic | document) of the held-out documents where the model can
    infer them, and where it was fitted (:func:`fit_location`, tracked as ``topicbench.fitted_on.*``
    tags)."""

    output: TopicModelOutput
    resolved: dict
    heldout_theta: np.ndarray | None = None
    fitted_on: dict = field(default_factory=dict)


@task(name="fit_model", retries=0, cache_policy=NONE)
def fit_model(
    corpus: Corpus, model: str, num_topics, settings: dict, seed: int, heldout: Corpus | None = None,
    label: str | None = None,
) -> FitResult:
    """``MODELS.get(model)(num_topics, random_state=seed, **settings).fit(corpus)``, plus
    p(topic | document) of the ``heldout`` documents for models that can infer them. numba and
    BLAS threads are held to the Dask worker's thread count when it runs inside one. Fits never
    retry. The fit's progress, under ``label`` (default "model@corpus seed N"), goes to the
    benchmark's live display or the run logs (:func:`~topicbench.tasks.progress.fit_progress`)."""
    label = label or f"{model}@{corpus.name} seed {seed}"
    with worker_threads(), fit_progress(label) as on_progress:
        estimator = MODELS.get(model)(num_topics, random_state=seed, **settings).fit(corpus, on_progress=on_progress)
        theta = None
        if heldout is not None and estimator.supports_transform:
            theta = estimator.transform(heldout)
        return FitResult(estimator.output_, dict(estimator.resolved_), theta, fit_location())


def fit_location() -> dict:
    """Where this code runs: ``host``, ``pid`` and, inside a Dask worker, ``dask_worker`` (its
    address), so a run on a shared cluster says which machine and process fitted it."""
    location = {"host": socket.gethostname(), "pid": str(os.getpid())}
    try:
        from distributed import get_worker  # imported here for its import cost, as in core.threads

        location["dask_worker"] = get_worker().address
    except (ImportError, ValueError):  # not inside a Dask worker
        pass
    return location
