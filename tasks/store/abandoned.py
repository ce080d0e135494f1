"""A fit whose driver is gone stops at its next progress step.

A Dask worker keeps running a task whose client died (a ``topicbench search`` killed while its
fits run): a thread cannot be stopped from outside. The orphan's result has nowhere to go (the
flow that would log it is gone, and the resumed run claims and fits that seed again), so it only
keeps a worker from the resumed study, for as long as the fit has left. The scheduler releases a
dead client's keys and the worker marks their running tasks ``cancelled``; the fit's progress
callback (:func:`stop_if_abandoned`) reads that and stops the fit.
"""

from __future__ import annotations

import time

#: Seconds between two looks at the worker's state (a dict lookup, but progress may tick often).
CHECK_SECONDS = 1.0

#: Worker task states that mean nobody waits for the result any more.
ABANDONED_STATES = frozenset({"cancelled", "released", "forgotten"})


class FitAbandoned(Exception):
    """The Dask task running this fit was cancelled (its client is gone): the fit stopped."""


def dask_task_abandoned() -> bool:
    """Whether this thread runs a Dask task its scheduler has released; False outside a worker."""
    try:
        from distributed import get_worker
        from distributed.worker import thread_state
    except ImportError:
        return False
    key = getattr(thread_state, "key", None)
    if key is None:
        return False
    try:
        worker = get_worker()
    except ValueError:  # not in a worker
        return False
    task = worker.state.tasks.get(key)
    return task is None or task.state in ABANDONED_STATES


def stop_if_abandoned(on_progress, label: str, is_abandoned=dask_task_abandoned, clock=time.monotonic):
    """``on_progress`` that first raises :class:`FitAbandoned` (at most one look per
    :data:`CHECK_SECONDS`) when ``is_abandoned()``: the fit named ``label`` stops there."""
    next_look = clock()

    def checked(step, total, loss=None):
        nonlocal next_look
        if clock() >= next_look:
            next_look = clock() + CHECK_SECONDS
            if is_abandoned():
                raise FitAbandoned(f"{label}: stopped at step {step}/{total}: its Dask task was cancelled "
                                   "(the run that asked for it is gone; a resumed run fits it again)")
        on_progress(step, total, loss)

    return checked
