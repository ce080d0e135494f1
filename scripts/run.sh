#!/usr/bin/env bash
# Set up, then run the main job: E-LDA on the built-in corpus (gensim's Lee news corpus).
# Extra arguments go to `topicbench elda`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/topicbench elda --corpus lee "$@"
