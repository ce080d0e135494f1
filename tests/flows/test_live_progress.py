"""The benchmark's live progress: its arithmetic (done/total, time left) and both renderers, on a
fake clock."""

from __future__ import annotations

import io
import logging

import pytest

from topicbench.flows.progress import (
    BenchmarkProgress, PeriodicLogLines, TerminalLine, format_duration, live_progress,
)


class FakeClock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(level=0)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture
def log():
    logger = logging.getLogger("tests.progress")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = Lines()
    logger.addHandler(handler)
    yield logger
    logger.removeHandler(handler)


def test_done_of_total_and_the_time_left_from_finished_runs():
    clock = FakeClock()
    progress = BenchmarkProgress(4, clock=clock)
    assert progress.seconds_left() is None
    assert progress.status_line() == "runs 0/4 done | 0 s elapsed, time left unknown until some work is done"
    clock.advance(30)
    progress.run_done("a")
    assert progress.seconds_left() == pytest.approx(90.0)  # 30 s a run, 3 runs left
    clock.advance(30)
    progress.run_done("b", failed=True)
    assert (progress.done, progress.failed) == (2, 1)
    assert progress.seconds_left() == pytest.approx(60.0)
    assert progress.status_line() == "runs 2/4 done (1 failed) | 1 min 00 s elapsed, ~1 min 00 s left"
    clock.advance(60)
    progress.run_done("c")
    progress.run_done("d")
    assert progress.seconds_left() == 0.0
    assert progress.final_line() == "4 of 4 runs done, 1 failed in 2 min 00 s"


def test_running_fits_show_their_step_and_loss():
    progress = BenchmarkProgress(3, clock=FakeClock())
    progress.fit_started("gibbs_lda@lee seed 0")
    progress.fit_started("elda@lee seed 0")
    progress.fit_advanced("gibbs_lda@lee seed 0", 300, 1000, 8.5476)
    assert "fitting gibbs_lda@lee seed 0 300/1000 loss 8.548, elda@lee seed 0 |" in progress.status_line()
    progress.fit_ended("elda@lee seed 0")
    progress.run_done("gibbs_lda@lee seed 0")
    line = progress.status_line()
    assert "fitting" not in line and "| scoring elda@lee seed 0 |" in line  # trained, not yet scored and logged
    progress.run_done("elda@lee seed 0")
    assert "scoring" not in progress.status_line()


def test_a_fit_without_a_step_yet_shows_its_phase_and_scoring_names_its_metric():
    progress = BenchmarkProgress(2, clock=FakeClock())
    progress.fit_started("bertopic@lee seed 0")
    progress.fit_phase("bertopic@lee seed 0", "embedding documents")
    line = progress.status_line()
    assert "fitting bertopic@lee seed 0 embedding documents |" in line
    assert progress.seconds_left() is None  # a phase is no share of the work
    progress.fit_phase("bertopic@lee seed 0", "fitting")
    assert "fitting bertopic@lee seed 0 fitting |" in progress.status_line()
    progress.fit_ended("bertopic@lee seed 0")
    progress.fit_phase("bertopic@lee seed 0", "scoring npmi")
    line = progress.status_line()
    assert "| scoring bertopic@lee seed 0 (npmi) |" in line and "fitting" not in line
    assert progress.seconds_left() is not None  # trained: its whole share counts while it is scored
    progress.run_done("bertopic@lee seed 0")
    progress.fit_phase("bertopic@lee seed 0", "scoring cv")  # a late event of an ended run changes nothing
    assert "bertopic" not in progress.status_line()


def test_the_time_left_counts_the_share_a_running_fit_has_made():
    clock = FakeClock()
    progress = BenchmarkProgress(2, clock=clock)
    progress.fit_started("a")
    clock.advance(10)
    assert progress.seconds_left() is None  # no step reported yet: nothing to go by
    progress.fit_advanced("a", 250, 1000, None)  # a quarter of one run in 10 s
    assert progress.seconds_left() == pytest.approx(70.0)  # 1.75 runs left at 40 s a run
    progress.fit_advanced("a", 1000, 1000, None)
    progress.fit_ended("a")
    assert progress.seconds_left() == pytest.approx(10.0)  # trained: its share stays while it is scored
    progress.run_done("a")
    assert progress.seconds_left() == pytest.approx(10.0)
    assert "fitting" not in progress.status_line()


@pytest.mark.parametrize("seconds, text", [(0, "0 s"), (59.4, "59 s"), (65, "1 min 05 s"), (7500, "2 h 05 min")])
def test_durations_read_as_a_person_says_them(seconds, text):
    assert format_duration(seconds) == text


def test_the_terminal_line_is_redrawn_in_place_and_cut_to_the_width():
    stream = io.StringIO()
    line = TerminalLine(stream, width=20)
    line.draw("runs 0/3 done")
    line.draw("runs 1/3 done | fitting a very long label")
    assert stream.getvalue() == "\r\x1b[2Kruns 0/3 done\r\x1b[2Kruns 1/3 done | fi…"
    assert "\n" not in stream.getvalue()
    with line.paused():
        stream.write("a log record\n")
    assert stream.getvalue().endswith("\r\x1b[2Ka log record\nruns 1/3 done | fi…")
    line.close()
    assert stream.getvalue().endswith("\r\x1b[2K")


def test_plain_lines_come_at_most_once_an_interval(log):
    clock = FakeClock()
    lines = PeriodicLogLines(log, interval=30, clock=clock)
    for _ in range(100):  # a redraw every half second for 50 s: one line, at 30 s
        clock.advance(0.5)
        lines.draw(f"status at {clock.now - 1000:.1f}")
    assert log.handlers[0].lines == ["status at 30.0"]


def test_live_progress_logs_the_final_line_and_only_periodic_lines(log):
    clock = FakeClock()
    with live_progress(2, log, renderer=PeriodicLogLines(log, interval=30, clock=clock), clock=clock,
                       refresh_seconds=0.01) as progress:
        clock.advance(10)
        progress.run_done("a")
        clock.advance(10)
        progress.run_done("b")
    assert log.handlers[0].lines == ["2 of 2 runs done in 20 s"]


def test_an_interrupted_block_ends_without_a_final_line(log):
    stream = io.StringIO()
    line = TerminalLine(stream, width=80)
    with pytest.raises(KeyboardInterrupt):
        with live_progress(2, log, renderer=line, refresh_seconds=0.01):
            line.draw("runs 0/2 done")
            raise KeyboardInterrupt
    assert log.handlers[0].lines == [] and stream.getvalue().endswith("\r\x1b[2K")
