#!/usr/bin/env bash
# Installs what `make docs` needs into .venv (made by scripts/setup.sh): the `docs`
# extra of pyproject.toml (Sphinx, numpydoc, sphinx-gallery, MyST, the theme and an
# offline copy of MathJax). Everything comes from PyPI; the build itself is offline.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m pip install -q -e ".[docs]"
