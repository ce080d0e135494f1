#!/usr/bin/env bash
# Create .venv (if missing) and install topicbench with its pinned dependencies and test tools.
# Idempotent: a second run only checks that everything is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade "pip>=24"
.venv/bin/python -m pip install --quiet -c constraints.txt -e ".[test]"
