"""How a command stopped, and what an interrupt leaves behind: the chain of an error's causes, a
stop described in one line, and the release of the store sessions an interrupt cut short."""

from __future__ import annotations

import traceback


def exception_chain(error: BaseException | None):
    """``error``, then the exception it was raised from or while handling, and so on (each once)."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def describe_stop(error: BaseException) -> str:
    """``error`` as one line: 'SIGTERM' for Prefect's TerminationSignal, 'KeyboardInterrupt (SIGINT
    or SIGTERM)' for an interrupt, else 'Type: message'."""
    signal_number = getattr(error, "signal", None)
    if isinstance(signal_number, int):
        import signal

        return f"{signal.Signals(signal_number).name}"
    if isinstance(error, KeyboardInterrupt):
        return "KeyboardInterrupt (SIGINT or SIGTERM)"
    return f"{type(error).__name__}: {error}".rstrip(": ")


def release_interrupted_calls(error: BaseException) -> None:
    """Let go of what the calls that ``error`` (an interrupt) cut short still hold.

    An interrupt that lands inside a store call (a sqlite write in MLflow's ``log_batch``, say)
    can leave that call's database session alive in the frames of the exception's traceback, its
    write transaction open: the store then answers "database is locked" to every later call,
    ours included, until the process exits, so no open run could be marked. Clearing the locals
    of those finished frames (and of the exceptions chained to it) frees the session, and its
    connection rolls back as it returns to the pool. The traceback itself (files and lines) is
    kept for printing.
    """
    import gc

    for raised in exception_chain(error):
        traceback.clear_frames(raised.__traceback__)  # frames still running are left alone
    gc.collect()  # sessions sit in reference cycles


def raise_interrupt_behind(error: BaseException) -> None:
    """Raise the interrupt that ``error`` was raised while handling, if any.

    Logging runs Prefect tasks in this (the main) thread, so Ctrl-C can land inside Prefect's task
    engine before the task run exists; the engine's crash handler then fails with
    ``ValueError("Task run is not set")``, and the interrupt survives only as that error's context.
    Without this the interrupt would be recorded as one failed fit and the benchmark would go on.
    """
    from prefect.exceptions import TerminationSignal  # here: `topicbench elda` imports this module, never Prefect

    for cause in exception_chain(error):
        if isinstance(cause, (KeyboardInterrupt, SystemExit, TerminationSignal)):
            raise cause
