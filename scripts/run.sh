#!/usr/bin/env bash
# Set up, then run the main job: the benchmark flow on the built-in corpus (gensim's Lee news):
# E-LDA, gensim LDA and Gibbs LDA, scored, tracked in MLflow and reported. Extra arguments go to `topicbench run`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/topicbench run "$@"
