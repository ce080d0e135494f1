"""A fit's progress: to a listener in this process (the live display), else logged every ~10%."""

from __future__ import annotations

import logging

import pytest

from topicbench.tasks.run.fit import fit_model
from topicbench.tasks.run.progress import ThrottledProgressLog, fit_progress, listening

from progress_listener import Recorder


class Messages:
    def __init__(self):
        self.lines = []

    def info(self, message, *args):
        self.lines.append(message % args)


def test_a_fit_without_a_display_logs_every_tenth_and_its_last_step():
    log = Messages()
    on_progress = ThrottledProgressLog("gibbs_lda@lee seed 0", log)
    for step in range(0, 1001, 10):  # tomotopy's callback: every 10 sweeps of 1000, from 0
        on_progress(step, 1000, 8.5)
    assert len(log.lines) == 10
    assert log.lines[0] == "gibbs_lda@lee seed 0: 100/1000 (10%), loss 8.5"
    assert log.lines[-1].startswith("gibbs_lda@lee seed 0: 1000/1000 (100%)")


def test_a_short_fit_logs_each_step_it_has_but_never_more():
    log = Messages()
    on_progress = ThrottledProgressLog("gensim_lda@lee seed 0", log)
    for step in (1, 2, 3):
        on_progress(step, 3)
    assert log.lines == [f"gensim_lda@lee seed 0: {s}/3 ({p}%)" for s, p in ((1, 33), (2, 67), (3, 100))]


def test_the_throttle_rejects_a_meaningless_fraction():
    with pytest.raises(ValueError, match="fraction must be in"):
        ThrottledProgressLog("x", Messages(), fraction=0)


def test_a_fit_task_reports_to_the_listener_of_its_process(make_random_corpus):
    recorder = Recorder()
    with listening(recorder):
        fit_model.fn(make_random_corpus(6), "gibbs_lda", 2, {"iterations": 20, "top_words": 3}, 0, label="g@tiny seed 0")
    steps = [event for event in recorder.events if event[0] == "step"]
    assert recorder.events[0] == ("started", "g@tiny seed 0") and recorder.events[-1] == ("ended", "g@tiny seed 0")
    assert [step[2] for step in steps] == [0, 10, 20] and {step[3] for step in steps} == {20}
    # before its first step, the fit names its phases: its one-time work, then the fit itself
    phases = [event[2] for event in recorder.events if event[0] == "phase"]
    assert phases == ["preparing", "fitting"]
    assert recorder.events.index(("phase", "g@tiny seed 0", "fitting")) < recorder.events.index(steps[0])


def test_without_a_listener_the_fit_logs_through_its_logger(caplog):
    with caplog.at_level(logging.INFO, logger="topicbench.tasks.run.progress"):
        with fit_progress("m@c seed 0") as on_progress:
            on_progress(5, 5, 1.0)
    assert [r.getMessage() for r in caplog.records if r.name == "topicbench.tasks.run.progress"] == ["m@c seed 0: 5/5 (100%), loss 1"]
