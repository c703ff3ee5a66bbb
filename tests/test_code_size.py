"""The style's sizes, read from the source with ``ast``: no function over 80 lines of
code (its docstring aside) and no module over 600 lines, in ``skbandit/`` and
``benchmarks/``.

The check is ``scripts/long_functions.py``'s, which lists the offenders from the
command line; the tests below also show that it finds them.
"""
# SPDX-License-Identifier: BSD-3-Clause

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKED = (ROOT / "skbandit", ROOT / "benchmarks")
FUNCTION_LIMIT = 80
MODULE_LIMIT = 600


def _script():
    spec = importlib.util.spec_from_file_location(
        "long_functions", ROOT / "scripts" / "long_functions.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()


def test_no_function_over_the_limit():
    found = SCRIPT.long_functions(CHECKED, FUNCTION_LIMIT)
    assert not found, "split these functions:\n" + "\n".join(
        f"{path}:{line}: {name} has {n} lines" for path, line, name, n in found
    )


def test_no_module_over_the_limit():
    found = SCRIPT.long_modules(CHECKED, MODULE_LIMIT)
    assert not found, "split these modules:\n" + "\n".join(
        f"{path} has {n} lines" for path, n in found
    )


def _function(name, n_code_lines, *, docstring_lines=0, indent=""):
    """The source of a function whose ``def`` and body make ``n_code_lines``."""
    lines = [f"{indent}@staticmethod", f"{indent}def {name}():"]
    if docstring_lines:
        lines += (
            [f'{indent}    """Doc.']
            + [f"{indent}    more"] * (docstring_lines - 2)
            + [f'{indent}    """']
        )
    lines += [f"{indent}    x = {i}" for i in range(n_code_lines - 2)]
    return "\n".join(lines) + "\n"


def test_the_check_finds_a_function_one_line_over(tmp_path):
    # The decorator counts, the docstring does not; a method is found in its class.
    (tmp_path / "at_limit.py").write_text(
        _function("fits", FUNCTION_LIMIT, docstring_lines=30)
    )
    (tmp_path / "over.py").write_text(
        "class Holder:\n" + _function("too_long", FUNCTION_LIMIT + 1, indent="    ")
    )
    found = SCRIPT.long_functions([tmp_path], FUNCTION_LIMIT)
    assert [(Path(p).name, name, n) for p, _, name, n in found] == [
        ("over.py", "too_long", FUNCTION_LIMIT + 1)
    ]
    with_doc = SCRIPT.long_functions([tmp_path], FUNCTION_LIMIT, with_docstrings=True)
    assert {name for _, _, name, _ in with_doc} == {"fits", "too_long"}


def test_the_check_finds_a_module_one_line_over(tmp_path):
    (tmp_path / "at_limit.py").write_text("x = 1\n" * MODULE_LIMIT)
    (tmp_path / "over.py").write_text("x = 1\n" * (MODULE_LIMIT + 1))
    found = SCRIPT.long_modules([tmp_path], MODULE_LIMIT)
    assert [(Path(p).name, n) for p, n in found] == [("over.py", MODULE_LIMIT + 1)]
