"""Small torch work on one thread.

An OpenMP parallel region synchronises all of torch's threads. For a product of a
few hundred microseconds that costs more than it saves, and on a machine whose cores
are busy it costs far more: every region waits until each thread gets a time slice.
Measured on the shared two-core machine of the combinatorial benchmark: a
``(400, 80) @ (80, 100)`` product took 0.2 ms on one thread and 31 ms on two. The
combinatorial neural policies therefore run their small steps (tangent features of
one round, the Woodbury factor, training on a window of a few hundred rows) on one
thread and keep the configured threads for the two large products of a round (the
quadratic forms against ``Z^{-1}`` and its rank-``K`` update).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from contextlib import contextmanager

import torch

__all__ = ["SERIAL_WORK", "serial_below"]

#: Multiply-adds below which a block runs on one thread (about a millisecond).
SERIAL_WORK = 1 << 23


@contextmanager
def serial_below(work):
    """Run the block on one torch thread when ``work`` multiply-adds are few.

    Parameters
    ----------
    work : int
        An estimate of the block's multiply-adds (rows times parameters).

    Yields
    ------
    None
        The thread count is restored on exit, also when the block raises.
    """
    threads = torch.get_num_threads()
    if threads == 1 or work >= SERIAL_WORK:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
