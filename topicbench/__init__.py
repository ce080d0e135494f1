"""topicbench: an evaluation suite for E-LDA and established topic models.

The code lives in the repository's top-level folders, installed as sub-packages:
``core`` -> ``topicbench.core`` (pure algorithms), ``baselines`` -> ``topicbench.baselines``
(model adapters), ``tasks`` -> ``topicbench.tasks`` (Prefect tasks) and ``flows`` ->
``topicbench.flows`` (flows and the command line).
"""

__version__ = "0.1.0"

import os as _os

# MLflow's telemetry thread sets and unsets an environment variable (_MLFLOW_TELEMETRY_SESSION_ID)
# while Prefect reads os.environ, which can fail a run with a KeyError; and nothing here phones
# home. A user who wants it back sets MLFLOW_DISABLE_TELEMETRY=false.
_os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
