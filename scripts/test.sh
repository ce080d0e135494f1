#!/usr/bin/env bash
# Set up (with the headless browser the report test needs), then run the whole test suite.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
export PREFECT_SERVER_ANALYTICS_ENABLED=false
exec .venv/bin/python -m pytest "$@"
