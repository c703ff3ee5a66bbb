"""The pages whose code blocks promise to run as they stand do run, in order."""
# SPDX-License-Identifier: BSD-3-Clause

import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
sys.path.insert(0, str(DOCS / "sphinxext"))

from run_pages import RUN_PAGES, python_blocks, run_blocks  # noqa: E402


@pytest.mark.parametrize("page", RUN_PAGES)
def test_page_blocks_run_in_order(page):
    text = (DOCS / f"{page}.md").read_text()
    assert len(python_blocks(text)) >= 8  # the eight steps of the road have code
    namespace = run_blocks(text, page)
    # The road ends on a served policy, its new logs, and a challenger's value.
    assert namespace["new_rewards"].shape == (200,)
    # SNIPS is a weighted mean of the logged 0/1 rewards: in [0, 1] exactly.
    assert namespace["v"].method == "snips" and 0 <= namespace["v"].value <= 1
