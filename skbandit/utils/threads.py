"""The BLAS threads of a policy's small dense work.

The linear, GLM, ensemble and estimator policies run a verb's small dense work (a
round's scores, a batch's ridge blocks: below about 8 million multiply-adds) on one
BLAS thread by default. OpenBLAS wakes its thread pool for products of a few
hundred thousand multiply-adds, and on a machine whose cores are busy the other
threads wait for a time slice: LinUCB in batches of 1,000 rows ran 5-13x slower
on OpenBLAS's default threads than on one. Large work (a fit of a million rows)
keeps BLAS's own count.

A count you choose is obeyed as it is, small work included: a
``threadpoolctl.threadpool_limits`` block or ``OPENBLAS_NUM_THREADS`` (or
``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``) in the environment. To give small work
more threads, or to leave it to BLAS's own count, use :func:`set_blas_threads` or,
for a block of code, :func:`blas_threads`. The neural policies' torch threads are
set with ``torch.set_num_threads``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from contextlib import contextmanager
from numbers import Integral

from skbandit.utils._blas_threads import (
    BLOCK_THREADS,
    PROCESS_THREADS,
    configured_threads,
)

__all__ = ["blas_threads", "get_blas_threads", "set_blas_threads"]


def _checked(n_threads):
    if n_threads is None:
        return None
    if isinstance(n_threads, bool) or not isinstance(n_threads, Integral):
        raise TypeError(f"n_threads must be an int >= 1 or None, got {n_threads!r}.")
    if n_threads < 1:
        raise ValueError(f"n_threads must be an int >= 1 or None, got {n_threads}.")
    return int(n_threads)


def get_blas_threads():
    """The BLAS threads of a policy's small dense work.

    Returns
    -------
    n_threads : int or None
        1 by default; None when small work keeps BLAS's own count.

    Examples
    --------
    >>> from skbandit.utils.threads import get_blas_threads
    >>> get_blas_threads()
    1
    """
    return configured_threads()


def set_blas_threads(n_threads):
    """Set the BLAS threads of a policy's small dense work, for the whole process.

    Parameters
    ----------
    n_threads : int >= 1 or None
        The thread count of small work; None leaves it to BLAS's own count (the
        machine's cores, or your own limit).

    Returns
    -------
    previous : int or None
        The process's count before the call.

    Examples
    --------
    >>> from skbandit.utils.threads import set_blas_threads
    >>> previous = set_blas_threads(None)  # small work on BLAS's own threads
    >>> _ = set_blas_threads(previous)  # back to one thread
    """
    previous = PROCESS_THREADS["threads"]
    PROCESS_THREADS["threads"] = _checked(n_threads)
    return previous


@contextmanager
def blas_threads(n_threads):
    """Run a block with ``n_threads`` BLAS threads for policies' small dense work.

    The setting holds in the thread (or asyncio task) that enters the block.

    Parameters
    ----------
    n_threads : int >= 1 or None
        The thread count of small work inside the block; None leaves it to BLAS's
        own count.

    Yields
    ------
    None
        The previous setting is restored on exit.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import LinUCB
    >>> from skbandit.utils.threads import blas_threads
    >>> X = np.random.default_rng(0).standard_normal((1000, 20))
    >>> policy = LinUCB(n_actions=10, random_state=0)
    >>> with blas_threads(2):
    ...     actions = policy.select(X)
    """
    token = BLOCK_THREADS.set(_checked(n_threads))
    try:
        yield
    finally:
        BLOCK_THREADS.reset(token)
