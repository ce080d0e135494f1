"""``python -m topicbench.flows.ui_server ARGS...``: ``mlflow ui ARGS`` with its web server in this
process, for ``topicbench ui``.

``mlflow ui`` imports MLflow's server (about 5 s of CPU), prepares the store, then starts uvicorn
in a new process that imports it all again before it answers: on a 2-core machine the second
import was half of the UI's wait. Here MLflow's own command runs unchanged up to that point (its
checks, the store's preparation, the settings it hands the server in the environment); the
uvicorn command it would spawn is run in this process instead, where MLflow is imported already.
Only a one-worker uvicorn command is taken over; any other (several workers, gunicorn) is spawned
as MLflow does. Should MLflow stop spawning its server through ``mlflow.server._exec_cmd``, the
replacement is never called and the server starts as ``mlflow ui`` starts it.
"""

from __future__ import annotations

import os
import sys


def is_single_uvicorn(command: list) -> bool:
    """Whether ``command`` is ``python -m uvicorn ... --workers 1 ...`` (one server process)."""
    if list(command[1:3]) != ["-m", "uvicorn"]:
        return False
    return "--workers" in command and command[command.index("--workers") + 1] == "1"


def run_mlflow_ui(arguments: list) -> None:
    """Run ``mlflow ui arguments``, its one-worker uvicorn server in this process; returns (or
    exits) when the server stops."""
    import mlflow.server
    from mlflow.cli import cli

    spawn = mlflow.server._exec_cmd

    def serve_here(command, extra_env=None, **options):
        if not is_single_uvicorn(command):
            return spawn(command, extra_env=extra_env, **options)
        from uvicorn.main import main as uvicorn_main

        os.environ.update(extra_env or {})  # what the spawned server would have been given
        uvicorn_main.main(args=list(command[3:]), prog_name="uvicorn")  # exits when the server stops
        raise SystemExit(0)

    mlflow.server._exec_cmd = serve_here
    cli.main(args=["ui", *arguments], prog_name="mlflow")


if __name__ == "__main__":
    run_mlflow_ui(sys.argv[1:])
