"""What the console shows.

At the default verbosity: warnings and errors from every logger, topicbench's own messages to the
user (the CLI's ``topicbench`` logger and records marked with :data:`CONSOLE`) and the live
progress; the INFO chatter of libraries (gensim, Prefect's "Finished in state ...", distributed,
numba, httpx, MLflow, ...) and of topicbench's internals only with ``-v``. The filter sits on the
console handler alone: loggers keep their levels, so Prefect's API handler (the run logs) still
receives every record.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys

#: ``extra=`` of a log record meant for the console at the default verbosity (e.g. the
#: benchmark's "N runs: ... to run" and its progress lines, logged through the run logger).
CONSOLE = {"topicbench_console": True}

#: Loggers whose INFO records always show: the CLI's own.
CONSOLE_LOGGERS = frozenset({"topicbench"})

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

#: Loggers too chatty even for -v (transport and database-migration detail).
QUIET_LOGGERS = ("httpx", "httpcore", "alembic", "mlflow.store", "distributed")


#: Prefect's console handler level, read from the environment by every process that sets up
#: Prefect's logging when it starts (a local cluster's Dask worker processes).
WORKER_CONSOLE_LEVEL_SETTING = "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"


def quiet_worker_consoles(verbose: bool) -> None:
    """At the default verbosity, the processes started from here (a local cluster's Dask workers)
    print warnings and errors only: without this each worker prints Prefect's "Finished in state"
    and every fit's progress lines, about a thousand lines for the paper's benchmark. Their run
    logs keep every record; a level the user set is kept."""
    if not verbose:
        os.environ.setdefault(WORKER_CONSOLE_LEVEL_SETTING, "WARNING")


#: The libraries' own switches of their progress bars, read from the environment when each library
#: is imported, by this process and by every process started from here (a local cluster's Dask
#: workers, which load the sentence-transformers models): huggingface_hub's (which transformers'
#: "Loading weights" bar reads too) and tqdm's, under every other library's bars.
PROGRESS_BAR_SETTINGS = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1"}


def quiet_library_progress_bars() -> None:
    """One progress display, topicbench's own: without this, each process that loads an embedding
    model draws transformers' "Loading weights" bar on stderr, across the live progress line and
    across each other's. A setting the user gave is kept. A library imported already has read its
    environment, so its own switch is turned too."""
    ours = {name for name, value in PROGRESS_BAR_SETTINGS.items() if os.environ.setdefault(name, value) == value}
    if "HF_HUB_DISABLE_PROGRESS_BARS" not in ours:
        return  # the user's choice: huggingface_hub and transformers follow it
    transformers_logging = sys.modules.get("transformers.utils.logging")
    if transformers_logging is not None:
        transformers_logging.disable_progress_bar()  # huggingface_hub's too
    elif "huggingface_hub.utils" in sys.modules:
        sys.modules["huggingface_hub.utils"].disable_progress_bars()


class ConsoleFilter(logging.Filter):
    """Pass warnings and errors, the user-facing INFO records, and with ``verbose`` everything."""

    def __init__(self, verbose: bool = False):
        super().__init__()
        self.verbose = verbose

    def filter(self, record: logging.LogRecord) -> bool:
        if self.verbose or record.levelno >= logging.WARNING:
            return True
        return record.name in CONSOLE_LOGGERS or bool(getattr(record, "topicbench_console", False))


class ConsoleHandler(logging.StreamHandler):
    """The console's stream handler, with :class:`ConsoleFilter`. While a live progress line is
    on the screen (``live``, with a ``paused()`` context manager), a record is written with the
    line taken away and drawn again after it, so that lines and the live display never mix."""

    def __init__(self, stream=None, verbose: bool = False):
        super().__init__(stream if stream is not None else sys.stderr)
        self.addFilter(ConsoleFilter(verbose))
        self.live = None

    def emit(self, record: logging.LogRecord) -> None:
        live = self.live
        with live.paused() if live is not None else contextlib.nullcontext():
            super().emit(record)


def configure_console(verbose: bool, stream=None) -> ConsoleHandler:
    """Log to ``stream`` (default stderr) through one :class:`ConsoleHandler` on the root logger,
    replacing its handlers; the root takes every INFO record (DEBUG with ``verbose``)."""
    handler = ConsoleHandler(stream, verbose)
    handler.setFormatter(logging.Formatter(LOG_FORMAT, datefmt="%H:%M:%S"))
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        handlers=[handler],
        force=True,  # this call's stream, also when main runs more than once in a process (tests)
    )
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    return handler


def console_handler() -> ConsoleHandler | None:
    """The root logger's :class:`ConsoleHandler`, if :func:`configure_console` set one."""
    return next((h for h in logging.getLogger().handlers if isinstance(h, ConsoleHandler)), None)
