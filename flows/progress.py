"""The live progress of a benchmark: runs done of total, the fits running now with their step (in
this process, or on Dask workers through :mod:`.worker_progress`), the runs being scored, the time
elapsed and an estimate of the time left.

On a terminal it is one line redrawn in place (:class:`TerminalLine`); elsewhere (CI, nohup, a
pipe) a log line at most every :data:`PLAIN_INTERVAL_SECONDS` (:class:`PeriodicLogLines`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
import time

from .console import CONSOLE, console_handler

#: Seconds between two redraws of the terminal line.
REFRESH_SECONDS = 0.5
#: Seconds between two progress lines when the console is not a terminal.
PLAIN_INTERVAL_SECONDS = 30.0
_ERASE_LINE = "\r\x1b[2K"
#: The state of a run whose fit has ended and which is being scored and logged.
SCORING = "scoring"


class BenchmarkProgress:
    """How far a benchmark of ``total`` runs is; the fits report to it from their own thread
    (it is a :mod:`topicbench.tasks.run.progress` listener), the flow as each run ends.

    The estimate of the time left is the pace so far (runs finished, plus the share of its steps
    each running fit has made, per second elapsed) applied to the work left: with concurrent
    fits it is the pace of the whole pool; it assumes the runs left take as long as those done.
    """

    def __init__(self, total: int, *, clock=time.monotonic):
        self.total, self.done, self.failed = int(total), 0, 0
        # label -> (step, total, loss); a phase's name before the first step (or while scoring); None
        self.running: dict = {}
        self._clock = clock
        self._started = clock()
        self._lock = threading.Lock()

    def fit_started(self, label: str) -> None:
        with self._lock:
            self.running[label] = None

    def fit_advanced(self, label: str, step: int, total: int, loss=None) -> None:
        with self._lock:
            if label in self.running:  # not a late event of a fit whose run has ended
                self.running[label] = (step, total, loss)

    def fit_phase(self, label: str, phase: str) -> None:
        """The fit is in ``phase`` (no step count: "embedding documents", "fitting", or, once
        trained, "scoring <metric>"), shown in place of its step."""
        with self._lock:
            if label in self.running:  # not a late event of a run that has ended
                self.running[label] = str(phase)

    def fit_ended(self, label: str) -> None:
        """The fit is trained; its run is being scored and logged until :meth:`run_done`."""
        with self._lock:
            if label in self.running:  # not a late event of a run that has ended
                self.running[label] = SCORING

    def run_done(self, label: str, *, failed: bool = False) -> None:
        """A run has ended (scored and logged, or failed)."""
        with self._lock:
            self.running.pop(label, None)
            self.done += 1
            self.failed += bool(failed)

    def elapsed(self) -> float:
        return self._clock() - self._started

    def seconds_left(self) -> float | None:
        """(elapsed / work done) x work left, where the work done counts each finished run as 1
        and each running fit as the share of its steps made; 0 when all runs are done, None
        before any work is done."""
        if self.done >= self.total:
            return 0.0
        with self._lock:
            shares = [_share_done(state) for state in self.running.values()]
        work_done = self.done + sum(share for share in shares if share is not None)
        if work_done <= 0:
            return None
        return self.elapsed() / work_done * max(self.total - work_done, 0.0)

    def status_line(self) -> str:
        """E.g. "runs 1/3 done | fitting gibbs_lda@lee seed 0 300/1000 loss 8.55 | 12 s elapsed, ~24 s left"."""
        with self._lock:
            running = dict(self.running)
        parts = [f"runs {self.done}/{self.total} done" + (f" ({self.failed} failed)" if self.failed else "")]
        fitting = {label: state for label, state in running.items() if not _scoring(state)}
        if fitting:
            parts.append("fitting " + ", ".join(_fit_text(label, state) for label, state in fitting.items()))
        if len(fitting) < len(running):
            parts.append("scoring " + ", ".join(label + ("" if state == SCORING else f" ({state[len(SCORING):].strip()})")
                                                 for label, state in running.items() if _scoring(state)))
        left = self.seconds_left()
        parts.append(f"{format_duration(self.elapsed())} elapsed, "
                     + ("time left unknown until some work is done" if left is None else f"~{format_duration(left)} left"))
        return " | ".join(parts)

    def final_line(self) -> str:
        return (f"{self.done} of {self.total} runs done" + (f", {self.failed} failed" if self.failed else "")
                + f" in {format_duration(self.elapsed())}")


def _share_done(state) -> float | None:
    """A running run's share of its work done: its fit's steps, all of it once it is scored;
    None before the fit's first step."""
    if _scoring(state):
        return 1.0
    if state is None or isinstance(state, str) or state[1] <= 0:
        return None
    return min(state[0] / state[1], 1.0)


def _scoring(state) -> bool:
    """Whether a run's state is its scoring: :data:`SCORING`, or the phase "scoring <metric>"."""
    return isinstance(state, str) and (state == SCORING or state.startswith(SCORING + " "))


def _fit_text(label: str, state) -> str:
    if state is None:
        return label
    if isinstance(state, str):  # a phase without a step count yet
        return f"{label} {state}"
    step, total, loss = state
    return f"{label} {step}/{total}" + ("" if loss is None else f" loss {loss:.4g}")


def format_duration(seconds: float) -> str:
    """"42 s", "3 min 05 s", "2 h 07 min"."""
    seconds = int(round(max(seconds, 0.0)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class TerminalLine:
    """One status line on a terminal, redrawn in place (carriage return, erase line) and cut to
    the terminal's width; :meth:`paused` takes it away while a log record is written."""

    def __init__(self, stream, width: int | None = None):
        self.stream, self.width = stream, width
        self._shown = ""
        self._lock = threading.RLock()

    def draw(self, text: str) -> None:
        width = self.width or shutil.get_terminal_size().columns
        with self._lock:
            self._shown = text if len(text) < width else text[: max(width - 2, 0)] + "…"
            self._write(_ERASE_LINE + self._shown)

    @contextlib.contextmanager
    def paused(self):
        with self._lock:
            if self._shown:
                self._write(_ERASE_LINE)
            try:
                yield
            finally:
                if self._shown:
                    self._write(self._shown)

    def close(self) -> None:
        with self._lock:
            if self._shown:
                self._write(_ERASE_LINE)
            self._shown = ""

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


class PeriodicLogLines:
    """The status as a log line (marked for the console) at most once per ``interval`` seconds."""

    def __init__(self, log, interval: float = PLAIN_INTERVAL_SECONDS, *, clock=time.monotonic):
        self.log, self.interval, self._clock = log, interval, clock
        self._last = clock()

    def draw(self, text: str) -> None:
        now = self._clock()
        if now - self._last >= self.interval:
            self._last = now
            self.log.info(text, extra=CONSOLE)

    def paused(self):
        return contextlib.nullcontext()

    def close(self) -> None:
        """Nothing on the screen to take away."""


def is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty()) and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):  # no isatty, or a closed stream: not a terminal to draw on
        return False


@contextlib.contextmanager
def live_progress(total: int, log, *, renderer=None, clock=time.monotonic, refresh_seconds: float = REFRESH_SECONDS):
    """A :class:`BenchmarkProgress` of ``total`` runs, shown for the block and redrawn every
    ``refresh_seconds`` by a background thread; at its end the final line ("3 of 3 runs done in
    42 s") is logged, unless the block raised (an interrupt's message stays the last line).

    ``renderer``: default a :class:`TerminalLine` on the console's stream when that is a
    terminal, else :class:`PeriodicLogLines` through ``log``.
    """
    handler = console_handler()
    stream = handler.stream if handler is not None else sys.stderr
    if renderer is None:
        renderer = TerminalLine(stream) if is_terminal(stream) else PeriodicLogLines(log, clock=clock)
    progress = BenchmarkProgress(total, clock=clock)
    stop = threading.Event()
    ticker = threading.Thread(target=_redraw_until, args=(stop, renderer, progress, refresh_seconds),
                              name="topicbench-progress", daemon=True)
    if handler is not None and isinstance(renderer, TerminalLine):
        handler.live = renderer
    ticker.start()
    try:
        yield progress
    finally:
        stop.set()
        ticker.join()
        renderer.close()
        if handler is not None and handler.live is renderer:
            handler.live = None
    log.info(progress.final_line(), extra=CONSOLE)


def _redraw_until(stop: threading.Event, renderer, progress: BenchmarkProgress, seconds: float) -> None:
    while not stop.is_set():
        renderer.draw(progress.status_line())
        stop.wait(seconds)
