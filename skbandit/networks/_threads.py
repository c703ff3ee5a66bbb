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

Every other neural policy runs each verb under :func:`policy_threads`: small work
(serving one request, training on a short buffer) on one thread, unless the user
chose torch's thread count. A count is the user's choice when it was set after
skbandit was imported (``torch.set_num_threads``), or through ``OMP_NUM_THREADS`` or
``MKL_NUM_THREADS``; it is then obeyed as it is, for small work too. That is the way
to raise it: ``torch.set_num_threads(4)`` after ``import skbandit``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import os
from contextlib import contextmanager

import torch

__all__ = ["SERIAL_WORK", "policy_threads", "serial_below", "threads_chosen_by_user"]

#: Multiply-adds below which a block runs on one thread (about a millisecond).
SERIAL_WORK = 1 << 23

#: torch's thread count when skbandit was imported: torch's default, or the user's.
_THREADS_AT_IMPORT = torch.get_num_threads()
#: The environment variables through which a user sets torch's thread count.
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def threads_chosen_by_user():
    """Whether torch's thread count is the user's choice rather than its default.

    Returns
    -------
    chosen : bool
        True when the count changed since skbandit was imported, or is set in
        ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS``.
    """
    if any(os.environ.get(name) for name in _THREAD_VARIABLES):
        return True
    return torch.get_num_threads() != _THREADS_AT_IMPORT


@contextmanager
def policy_threads(work):
    """Run a neural policy's verb on one thread when its work is small.

    :func:`serial_below`, unless :func:`threads_chosen_by_user`: then torch runs
    on the threads the user set.

    Parameters
    ----------
    work : int
        An estimate of the verb's multiply-adds per pass over its rows.

    Yields
    ------
    None
        The thread count is restored on exit.
    """
    if threads_chosen_by_user():
        yield
        return
    with serial_below(work):
        yield


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
