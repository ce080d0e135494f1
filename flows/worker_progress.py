"""The fits running on Dask workers, in the benchmark's live progress.

A fit on a worker process (a local cluster's or a remote scheduler's) sends its start, its steps
(at most one a second) and its end as Dask events
(:data:`~topicbench.tasks.run.progress.WORKER_PROGRESS_TOPIC`); the flow's Dask client subscribes to
them and passes them to the display, so that the status line names the fits running there and
their step, and the estimate of the time left counts their share done, as for fits in the flow's
own process.
"""

from __future__ import annotations

import contextlib
import logging

from topicbench.tasks.run.progress import WORKER_PROGRESS_TOPIC

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def showing_worker_progress(listener):
    """For the block, pass the progress events of the fits on the flow's Dask workers to
    ``listener`` (``fit_started``, ``fit_advanced``, ``fit_phase``, ``fit_ended``); nothing where the flow's task
    runner is not Dask."""
    client = _flow_dask_client()
    if client is None:
        yield
        return
    client.subscribe_topic(WORKER_PROGRESS_TOPIC, lambda event: forward_event(listener, event[1]))
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # a client already closed (an interrupt) has nothing to stop
            client.unsubscribe_topic(WORKER_PROGRESS_TOPIC)


def forward_event(listener, message) -> None:
    """Pass one event message to ``listener``; a malformed one (another sender on the topic) is
    logged and dropped, never raised into the client's event loop."""
    try:
        event, label = message["event"], message["label"]
        if event == "started":
            listener.fit_started(label)
        elif event == "advanced":
            listener.fit_advanced(label, int(message["step"]), int(message["total"]), message.get("loss"))
        elif event == "phase":
            listener.fit_phase(label, str(message["phase"]))
        elif event == "ended":
            listener.fit_ended(label)
    except (KeyError, TypeError, ValueError) as error:
        logger.debug("dropped a malformed progress event %r: %s", message, error)


def _flow_dask_client():
    """The Dask client of the running flow's task runner; None when it is not a DaskTaskRunner
    (or no flow runs)."""
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    runner = getattr(context, "task_runner", None)
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        return None
    return runner.client if isinstance(runner, DaskTaskRunner) else None
