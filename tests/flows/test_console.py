"""The console filter: libraries' INFO hidden unless -v, warnings always shown, other handlers
(Prefect's run logs) still given every record."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys

import pytest

from topicbench.flows.console import CONSOLE, ConsoleHandler, configure_console, console_handler


class Kept(logging.Handler):
    """Keeps every record it is given (as Prefect's API handler would send them)."""

    def __init__(self):
        super().__init__(level=0)
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def restore_logging():
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def log_a_bit():
    logging.getLogger("gensim.models.ldamodel").info("PROGRESS: pass 0, at document #300/300")
    logging.getLogger("prefect").info("Starting temporary server on http://127.0.0.1:8593")
    logging.getLogger("topicbench.core.elda.greedy").info("E-LDA greedy: 6 of 6 links")
    logging.getLogger("tests.run_logger").info("3 runs: 3 to run", extra=CONSOLE)
    logging.getLogger("topicbench").info("corpus lee: 300 documents")
    logging.getLogger("gensim.utils").warning("a gensim warning")
    logging.getLogger("distributed.worker").error("a worker error")


@pytest.mark.usefixtures("restore_logging")
def test_library_info_is_hidden_by_default_and_warnings_always_show():
    stream = io.StringIO()
    configure_console(False, stream)
    log_a_bit()
    shown = stream.getvalue()
    assert "PROGRESS" not in shown and "temporary server" not in shown and "E-LDA greedy" not in shown
    assert "3 runs: 3 to run" in shown and "corpus lee" in shown
    assert "a gensim warning" in shown and "a worker error" in shown
    assert len(shown.splitlines()) == 4


@pytest.mark.usefixtures("restore_logging")
def test_verbose_shows_everything():
    stream = io.StringIO()
    configure_console(True, stream)
    log_a_bit()
    shown = stream.getvalue()
    assert len(shown.splitlines()) == 7 and "PROGRESS" in shown and "temporary server" in shown


@pytest.mark.usefixtures("restore_logging")
def test_the_filter_is_on_the_console_handler_only():
    configure_console(False, io.StringIO())
    kept = Kept()  # as Prefect's API handler on its run loggers
    logging.getLogger("tests.run_logs").addHandler(kept)
    try:
        logging.getLogger("tests.run_logs").info("Finished in state Completed()")
    finally:
        logging.getLogger("tests.run_logs").removeHandler(kept)
    assert [r.getMessage() for r in kept.records] == ["Finished in state Completed()"]
    assert isinstance(console_handler(), ConsoleHandler)


class Pausing:
    """A live line that records when it was taken away and drawn again."""

    def __init__(self, stream):
        self.stream = stream

    def paused(self):
        import contextlib

        @contextlib.contextmanager
        def pause():
            self.stream.write("<away>")
            yield
            self.stream.write("<back>")

        return pause()


@pytest.mark.usefixtures("restore_logging")
def test_a_record_takes_the_live_line_away_while_it_is_written():
    stream = io.StringIO()
    handler = configure_console(False, stream)
    handler.live = Pausing(stream)
    logging.getLogger("topicbench").warning("careful")
    assert stream.getvalue().startswith("<away>") and stream.getvalue().endswith("careful\n<back>")


def test_worker_processes_print_warnings_only_unless_verbose(monkeypatch):
    from topicbench.flows.console import WORKER_CONSOLE_LEVEL_SETTING, quiet_worker_consoles

    monkeypatch.delenv(WORKER_CONSOLE_LEVEL_SETTING, raising=False)
    quiet_worker_consoles(verbose=True)
    assert WORKER_CONSOLE_LEVEL_SETTING not in os.environ
    quiet_worker_consoles(verbose=False)
    assert os.environ[WORKER_CONSOLE_LEVEL_SETTING] == "WARNING"
    monkeypatch.setenv(WORKER_CONSOLE_LEVEL_SETTING, "DEBUG")  # the user's choice is kept
    quiet_worker_consoles(verbose=False)
    assert os.environ[WORKER_CONSOLE_LEVEL_SETTING] == "DEBUG"


@pytest.mark.parametrize("level, expected", [("WARNING", logging.WARNING), ("", 0)])
def test_a_process_started_with_the_setting_gets_a_quiet_prefect_console(level, expected):
    # what a local cluster's Dask worker does when it starts: Prefect sets up its logging from the
    # environment, so its console handler (on the root logger) takes the level; its API handler does not
    code = ("import logging; from prefect.logging.configuration import setup_logging; setup_logging(); "
            "print([h.level for h in logging.getLogger().handlers if type(h).__name__ == 'PrefectConsoleHandler'])")
    env = {**os.environ, "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": level}
    printed = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert printed.stdout.strip() == f"[{expected}]", printed.stderr[-2000:]
