"""Run the Python blocks of the pages that promise to run as they stand.

For each page of ``RUN_PAGES``, every fenced ```` ```python ```` block is executed, in
the page's order and in one namespace, in a temporary working folder, when Sphinx
reads the page; an exception is a warning, hence an error under ``-W``. The test
``tests/test_docs_pages.py`` runs the same blocks with :func:`run_blocks`.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
import traceback

from sphinx.util import logging

logger = logging.getLogger(__name__)

#: Pages (docnames) whose Python blocks must run in order.
RUN_PAGES = ["user_guide/production"]

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks(text: str) -> list[str]:
    """The page's fenced Python blocks, in order."""
    return _BLOCK.findall(text)


def run_blocks(text: str, name: str) -> dict:
    """Execute the blocks in one namespace in a temporary folder; return it."""
    namespace = {"__name__": "__page__"}
    previous = os.getcwd()
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        try:
            for i, block in enumerate(python_blocks(text), start=1):
                exec(compile(block, f"{name}, block {i}", "exec"), namespace)
        finally:
            os.chdir(previous)
    return namespace


def _run(app, docname, source):
    if docname not in RUN_PAGES:
        return
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            run_blocks(source[0], docname)
    except Exception:
        logger.warning(
            "a code block of %s fails:\n%s", docname, traceback.format_exc(limit=3)
        )


def setup(app):
    app.connect("source-read", _run)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
