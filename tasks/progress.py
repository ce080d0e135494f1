"""Where a fit's progress goes: to the benchmark's live display when the fit runs in the flow's
own process, else (a Dask worker process) to the task's run logger, at most every ~10%.

The flow registers its display with :func:`listening`; a fit task reports through
:func:`fit_progress`. A listener has three methods: ``fit_started(label)``,
``fit_advanced(label, step, total, loss)`` and ``fit_ended(label)``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading

from .abandoned import stop_if_abandoned

logger = logging.getLogger(__name__)

#: Fraction of a fit between two progress lines of a fit that no display in its process shows.
LOG_FRACTION = 0.10

_listener = None
_listener_lock = threading.Lock()


@contextlib.contextmanager
def listening(listener):
    """Send the progress of the fits that run in this process to ``listener`` for the block."""
    global _listener
    with _listener_lock:
        previous, _listener = _listener, listener
    try:
        yield listener
    finally:
        with _listener_lock:
            _listener = previous


@contextlib.contextmanager
def fit_progress(label: str):
    """The ``on_progress(step, total, loss)`` callback of the fit named ``label``, for the block.

    With a listener in this process it reports the fit's start, each step and its end there;
    otherwise it logs a line through the task's run logger each time the fit passes another
    :data:`LOG_FRACTION` of its steps (and at its last step), and stops the fit when its Dask task
    is cancelled (:func:`~topicbench.tasks.abandoned.stop_if_abandoned`).
    """
    listener = _listener
    if listener is None:  # a Dask worker's fit: it also stops when its run is gone
        yield stop_if_abandoned(ThrottledProgressLog(label, _run_logger()), label)
        return
    listener.fit_started(label)
    try:
        yield lambda step, total, loss=None: listener.fit_advanced(label, step, total, loss)
    finally:
        listener.fit_ended(label)


class ThrottledProgressLog:
    """``on_progress(step, total, loss)`` that logs "label: step/total (p%), loss x" once per
    ``fraction`` of the steps and at the last step: at most 1/fraction + 1 lines per fit."""

    def __init__(self, label: str, log, fraction: float = LOG_FRACTION):
        if not 0 < fraction <= 1:
            raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
        self.label, self.log, self.fraction = label, log, fraction
        self._next_mark = fraction  # the next share of the fit that earns a line

    def __call__(self, step: int, total: int, loss=None) -> None:
        if total <= 0:
            return
        done = step / total
        if done < self._next_mark and step != total:
            return
        self._next_mark = (math.floor(done / self.fraction + 1e-9) + 1) * self.fraction
        if step == total:
            self._next_mark = math.inf  # the last line of this fit
        self.log.info("%s: %d/%d (%.0f%%)%s", self.label, step, total, 100 * done,
                      "" if loss is None else f", loss {loss:.4g}")


def _run_logger():
    """The task's run logger (its lines reach Prefect's run logs), or this module's logger when
    no task runs (a model fitted directly)."""
    from prefect import get_run_logger
    from prefect.exceptions import MissingContextError

    try:
        return get_run_logger()
    except MissingContextError:
        return logger
