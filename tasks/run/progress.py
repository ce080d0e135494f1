"""Where a fit's progress goes: to the benchmark's live display when the fit runs in the flow's
own process; from a Dask worker, to the task's run logger at most every ~10%, and as Dask events
(at most one a second) that the flow's display subscribes to
(:func:`topicbench.flows.worker_progress.showing_worker_progress`).

The flow registers its display with :func:`listening`; a fit task reports through
:func:`fit_progress` and names what it does while it has no step count with :func:`fit_phase`
("embedding documents", "fitting", "scoring npmi"). A listener has four methods:
``fit_started(label)``, ``fit_advanced(label, step, total, loss)``, ``fit_phase(label, phase)``
and ``fit_ended(label)``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time

from topicbench.tasks.store.abandoned import stop_if_abandoned

logger = logging.getLogger(__name__)

#: Fraction of a fit between two progress lines of a fit that no display in its process shows.
LOG_FRACTION = 0.10
#: The Dask event topic of the fits' progress on workers: messages ``{"event": "started" |
#: "advanced" | "phase" | "ended", "label", "step", "total", "loss", "phase"}``.
WORKER_PROGRESS_TOPIC = "topicbench-fit-progress"
#: Seconds between two progress events of one fit (its last step is always sent): a fit may
#: step thousands of times a second, and each event crosses the network twice.
EVENT_SECONDS = 1.0

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


def current_listener():
    """The display the flow of this process listens with (:func:`listening`), or None."""
    return _listener


@contextlib.contextmanager
def fit_progress(label: str):
    """The ``on_progress(step, total, loss)`` callback of the fit named ``label``, for the block.

    With a listener in this process it reports the fit's start, each step and its end there;
    otherwise it logs a line through the task's run logger each time the fit passes another
    :data:`LOG_FRACTION` of its steps (and at its last step), and stops the fit when its Dask task
    is cancelled (:func:`~topicbench.tasks.store.abandoned.stop_if_abandoned`).
    """
    listener = _listener
    if listener is None:  # a Dask worker's fit: it also stops when its run is gone
        with _published_to_the_flow(label, ThrottledProgressLog(label, _run_logger())) as on_progress:
            yield stop_if_abandoned(on_progress, label)
        return
    listener.fit_started(label)
    try:
        yield lambda step, total, loss=None: listener.fit_advanced(label, step, total, loss)
    finally:
        listener.fit_ended(label)


def fit_phase(label: str, phase: str) -> None:
    """Say that the fit ``label`` is in ``phase`` (a phase without a step count: "embedding
    documents", "fitting", "scoring npmi"), to this process's listener, or from a Dask worker as
    a "phase" event; nothing elsewhere (a model fitted directly)."""
    listener = _listener
    if listener is not None:
        listener.fit_phase(label, phase)
        return
    log_event = _worker_event_log()
    if log_event is not None:
        log_event({"event": "phase", "label": label, "phase": phase})


@contextlib.contextmanager
def _published_to_the_flow(label: str, on_progress):
    """``on_progress`` that also sends the fit's steps as :data:`WORKER_PROGRESS_TOPIC` events
    when it runs on a Dask worker (its start and end too); ``on_progress`` itself elsewhere."""
    log_event = _worker_event_log()
    if log_event is None:
        yield on_progress
        return
    log_event({"event": "started", "label": label})
    try:
        yield EventThrottle(label, log_event, on_progress)
    finally:
        log_event({"event": "ended", "label": label})


def _worker_event_log():
    """The Dask worker's ``log_event`` bound to :data:`WORKER_PROGRESS_TOPIC`; None outside a worker."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):  # no distributed, or not in a worker
        return None

    def send(message: dict) -> None:
        try:
            worker.log_event(WORKER_PROGRESS_TOPIC, message)
        except Exception as error:  # a closing worker's loop: the display misses a step, the fit goes on
            logger.debug("progress event not sent: %s", error)

    return send


class EventThrottle:
    """``on_progress(step, total, loss)`` that calls ``then`` and sends an "advanced" event through
    ``log_event`` at most once per ``seconds`` (and at the last step)."""

    def __init__(self, label: str, log_event, then, seconds: float = EVENT_SECONDS, clock=time.monotonic):
        self.label, self.log_event, self.then, self.seconds, self.clock = label, log_event, then, seconds, clock
        self._next = clock()

    def __call__(self, step: int, total: int, loss=None) -> None:
        self.then(step, total, loss)
        now = self.clock()
        if now >= self._next or step == total:
            self._next = now + self.seconds
            finite = loss is not None and math.isfinite(loss)
            self.log_event({"event": "advanced", "label": self.label, "step": int(step), "total": int(total),
                            "loss": float(loss) if finite else None})


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
