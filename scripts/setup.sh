#!/usr/bin/env bash
# Creates .venv with the CPU build of torch pinned (a plain `torch` would pull a
# multi-GB CUDA build) and installs skbandit in editable mode with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[tests,lint]"
