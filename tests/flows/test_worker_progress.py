"""The progress of fits on Dask workers reaches the flow's live display: sent as Dask events at
most once a second, received by the flow's Dask client, passed to the display."""

from __future__ import annotations

import time

import pytest

from topicbench.flows.progress import BenchmarkProgress
from topicbench.flows.worker_progress import forward_event, showing_worker_progress
from topicbench.tasks.run.progress import EventThrottle, fit_progress

from progress_listener import Recorder


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_fit_sends_at_most_one_event_a_second_and_always_its_last_step():
    sent, passed, clock = [], [], Clock()
    on_progress = EventThrottle("m@c seed 0", sent.append, lambda *a: passed.append(a), clock=clock)
    for step in range(1, 6):
        on_progress(step, 10, 2.0)
        clock.now += 0.3
    on_progress(10, 10, float("nan"))
    assert len(passed) == 6  # the fit's own callback sees every step
    assert [(m["step"], m["loss"]) for m in sent] == [(1, 2.0), (5, 2.0), (10, None)]  # 0 s, 1.2 s, last
    assert sent[0] == {"event": "advanced", "label": "m@c seed 0", "step": 1, "total": 10, "loss": 2.0}


def test_events_reach_the_display_and_a_late_one_does_not_bring_back_an_ended_fit():
    progress = BenchmarkProgress(2)
    forward_event(progress, {"event": "started", "label": "ctm@reuters seed 0"})
    forward_event(progress, {"event": "advanced", "label": "ctm@reuters seed 0", "step": 40, "total": 100, "loss": 512.0})
    assert "fitting ctm@reuters seed 0 40/100 loss 512" in progress.status_line()
    progress.run_done("ctm@reuters seed 0")
    forward_event(progress, {"event": "advanced", "label": "ctm@reuters seed 0", "step": 100, "total": 100, "loss": None})
    forward_event(progress, {"event": "ended", "label": "ctm@reuters seed 0"})
    assert progress.running == {} and "fitting" not in progress.status_line()
    forward_event(progress, {"event": "advanced", "label": "x"})  # malformed: dropped, not raised
    forward_event(progress, "not a dict")
    assert progress.running == {}


# module-level: a task's function is pickled by reference
def stepping_fit(label: str, steps: int) -> int:
    """Report ``steps`` progress steps of 10 ms as a fit on a worker does."""
    with fit_progress(label) as on_progress:
        for step in range(1, steps + 1):
            on_progress(step, steps, 1.0 / step)
            time.sleep(0.01)
    return steps


def test_a_fit_on_a_dask_worker_process_is_shown_by_the_flows_display(monkeypatch):
    """A real local cluster with one worker process: its fit's start, steps and end arrive in
    order, through the scheduler, at the client the flow's task runner holds."""
    distributed = pytest.importorskip("distributed")
    from topicbench.flows import worker_progress

    recorder = Recorder()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        monkeypatch.setattr(worker_progress, "_flow_dask_client", lambda: client)
        with showing_worker_progress(recorder):
            assert client.submit(stepping_fit, "gibbs@toy seed 0", 150, pure=False).result(timeout=120) == 150
            deadline = time.monotonic() + 30
            while ("ended", "gibbs@toy seed 0") not in recorder.events and time.monotonic() < deadline:
                time.sleep(0.05)
    kinds = [event[0] for event in recorder.events]
    assert kinds[0] == "started" and kinds[-1] == "ended", recorder.events
    steps = [event[2] for event in recorder.events if event[0] == "step"]
    assert steps[0] == 1 and steps[-1] == 150 and steps == sorted(steps)
    assert len(steps) <= 5, steps  # 1.5 s of steps: about one event a second, not 150


def test_without_a_dask_task_runner_nothing_is_subscribed():
    recorder = Recorder()
    with showing_worker_progress(recorder):  # no flow runs here
        stepping_fit("local@toy seed 0", 3)  # no listener and no worker: run-logger lines only
    assert recorder.events == []


def test_a_phase_event_reaches_the_display_and_a_malformed_one_is_dropped():
    recorder = Recorder()
    forward_event(recorder, {"event": "phase", "label": "bertopic@lee seed 0", "phase": "embedding documents"})
    forward_event(recorder, {"event": "phase", "label": "bertopic@lee seed 0"})  # no phase: dropped
    assert recorder.events == [("phase", "bertopic@lee seed 0", "embedding documents")]
