"""List the functions longer than the style's limit of 80 lines, and the modules
longer than its 600.

A function's length counts its code from the ``def`` (decorators included) to its
last line; ``--with-docstrings`` counts its docstring too (a public function's
numpydoc text alone can pass 80 lines). A module's length is its number of lines.

Run::

    python scripts/long_functions.py [--limit 80] [--module-limit 600]
        [--with-docstrings] [paths ...]

Exits 1 when one is found, so that it can guard a change; ``tests/test_code_size.py``
runs the same check over ``skbandit/`` and ``benchmarks/``.
"""
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import ast
import sys
from pathlib import Path


def _docstring_lines(node):
    body = node.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
    ):
        if isinstance(body[0].value.value, str):
            return body[0].end_lineno - body[0].lineno + 1
    return 0


def python_files(paths):
    """The ``.py`` files of ``paths`` (files, or folders searched recursively)."""
    for root in paths:
        yield from [root] if root.is_file() else sorted(root.rglob("*.py"))


def long_modules(paths, limit):
    """``(path, n_lines)`` of every module over ``limit`` lines."""
    found = []
    for path in python_files(paths):
        n_lines = len(path.read_text().splitlines())
        if n_lines > limit:
            found.append((str(path), n_lines))
    return found


def long_functions(paths, limit, *, with_docstrings=False):
    """``(path, line, name, n_lines)`` of every function over ``limit`` lines."""
    found = []
    for path in python_files(paths):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                n_lines = node.end_lineno - first + 1
                if not with_docstrings:
                    n_lines -= _docstring_lines(node)
                if n_lines > limit:
                    found.append((str(path), node.lineno, node.name, n_lines))
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[Path("skbandit")])
    parser.add_argument("--limit", type=int, default=80)
    parser.add_argument("--module-limit", type=int, default=600)
    parser.add_argument("--with-docstrings", action="store_true")
    args = parser.parse_args(argv)
    found = long_functions(args.paths, args.limit, with_docstrings=args.with_docstrings)
    for path, line, name, n_lines in found:
        print(f"{path}:{line}: {name} has {n_lines} lines")
    modules = long_modules(args.paths, args.module_limit)
    for path, n_lines in modules:
        print(f"{path}: the module has {n_lines} lines")
    return 1 if found or modules else 0


if __name__ == "__main__":
    sys.exit(main())
