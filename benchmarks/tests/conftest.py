"""Fixtures of the benchmark caches' tests."""
# SPDX-License-Identifier: BSD-3-Clause

import pytest


@pytest.fixture
def one_torch_thread():
    """Replay a cached neural run on one torch thread, as it was recorded."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
