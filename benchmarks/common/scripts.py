"""Import a benchmark script by its path, for the caches' tests.

Two folders may hold scripts of the same name (``synthetic_regret.py`` measures the
synthetic regret of two papers), so a script is imported under a name made of its
folder and file, with its folder on ``sys.path`` for the helpers beside it.
"""
# SPDX-License-Identifier: BSD-3-Clause

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1]


def load_script(relative_path: str):
    """The module of ``benchmarks/<relative_path>``, imported once per process."""
    path = BENCHMARKS / relative_path
    name = "benchmarks_" + "_".join(path.relative_to(BENCHMARKS).with_suffix("").parts)
    if name in sys.modules:
        return sys.modules[name]
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
