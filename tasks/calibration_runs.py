"""The judge's calibrations as tracked runs: the experiment they are kept in, the tag naming the
judged LLM, and the newest calibration of a model (the report states it beside the LLM scores)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

CALIBRATION_EXPERIMENT = "judge-calibration"
#: The tag naming the judged model on a calibration run (the report looks it up by it).
MODEL_TAG = "topicbench.llm_model"


def latest_calibration(tracking_uri: str, model: str) -> dict | None:
    """The newest finished calibration of ``model`` in the store, as its ``calibration.json``
    (with ``run_id`` and ``when``); None when there is none."""
    from mlflow.tracking import MlflowClient

    from topicbench.tasks.store_filters import search_runs

    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(CALIBRATION_EXPERIMENT)
    if found is None:
        return None
    runs = search_runs(client, [found.experiment_id], tags={MODEL_TAG: model}, status="FINISHED",
                       order_by=["attributes.start_time DESC"], max_results=1)
    if not runs:
        return None
    with tempfile.TemporaryDirectory() as folder:
        path = client.download_artifacts(runs[0].info.run_id, "calibration.json", folder)
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    data.update(run_id=runs[0].info.run_id, when=runs[0].info.start_time)
    return data
