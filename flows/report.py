"""The report flow: tracked runs of one experiment -> results/<experiment>/report.{md,html}."""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from topicbench.tasks.report import collect_runs, render_report_task



@flow(name="report", validate_parameters=False)
def report(experiment: str, tracking_uri: str, folder: str | None = None, command: str = "", notes: str = "") -> dict:
    frame = collect_runs(tracking_uri, experiment)
    folder = folder or str(Path.cwd() / "results" / experiment)
    command = command or f"topicbench report --experiment {experiment} --tracking-uri {tracking_uri}"
    return render_report_task(frame, folder, experiment, command, notes)
