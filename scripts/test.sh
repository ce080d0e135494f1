#!/usr/bin/env bash
# Set up (with the headless browser the report test needs), then run the whole test suite.
# Extra arguments go to pytest, after ours (`-n 0`: in one process).
# Two pytest-xdist workers, each module on one worker (--dist loadfile), so that a module's servers
# and fixtures start once; most of the suite waits on servers, subprocesses and sockets, so two
# workers overlap that waiting even on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
export PREFECT_SERVER_ANALYTICS_ENABLED=false
exec .venv/bin/python -m pytest -n "${TOPICBENCH_TEST_WORKERS:-2}" --dist loadfile --durations=20 "$@"
