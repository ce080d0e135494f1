"""topicbench server start|stop|status: a Prefect API server kept running for later commands.

``run``, ``search`` and the other commands that run flows use it instead of starting a temporary
server each (seconds off every start), and Prefect's UI on it shows their flow and task runs.
"""

from __future__ import annotations

from topicbench.flows.checks import port_number
from topicbench.flows.prefect_server import DEFAULT_SERVER_PORT, SERVER_HOST


def add_server_command(commands) -> None:
    """The ``server`` sub-command and its actions."""
    server = commands.add_parser(
        "server", help="start, stop or show a Prefect server on 127.0.0.1 that later commands use",
        description="Keep a Prefect API server running (on 127.0.0.1 only) so that `run`, `search`, `report` and "
        "`paper` use it instead of starting a temporary one each time: their start takes seconds less, and "
        "Prefect's UI at its address shows their flow and task runs. Its URL and process id are kept in "
        "PREFECT_HOME/topicbench-server.json. A PREFECT_API_URL of yours takes precedence over it.",
    )
    server.add_argument("action", choices=("start", "stop", "status"),
                        help="start one (or report the running one), stop it, or say whether one runs")
    server.add_argument("--port", type=port_number, default=DEFAULT_SERVER_PORT,
                        help=f"the port on {SERVER_HOST} a new server listens on")
    server.set_defaults(handler=run_server_command)


def run_server_command(args) -> int:
    """Exit status 0; ``status`` with no server running: 1 (scripts test it)."""
    from topicbench.flows.prefect_server import running_server, start_server, state_file, stop_server

    if args.action == "start":
        state = start_server(args.port)
        verb = "started" if state["started"] else "already running"
        print(f"Prefect server {verb} at {state['api_url']} (pid {state['pid']}; UI at "
              f"{state['api_url'].removesuffix('/api')}); later commands use it. `topicbench server stop` stops it.")
        return 0
    if args.action == "stop":
        state = stop_server()
        print(f"stopped the Prefect server at {state['api_url']} (pid {state['pid']})" if state is not None
              else f"no Prefect server of topicbench runs (no {state_file()})")
        return 0
    url = running_server()
    print(f"Prefect server running at {url}" if url is not None else "no Prefect server of topicbench runs")
    return 0 if url is not None else 1
