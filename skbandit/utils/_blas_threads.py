"""A policy's small dense work on one BLAS thread, scoped to the call.

OpenBLAS wakes its thread pool for a product of a few hundred thousand
multiply-adds. On a machine whose cores are busy the second thread waits for a
time slice, and the ridge blocks of a batch make many such products: LinUCB in
batches of 1,000 rows ran 5-13x slower than a plain numpy loop on OpenBLAS's two
threads, and 1.2x on one. So the linear, GLM, ensemble and estimator families run
a verb's small dense work (below :data:`SMALL_WORK` multiply-adds) on
:func:`~skbandit.utils.threads.get_blas_threads` BLAS threads, one by default, and
leave large work (a fit of a million rows) to BLAS's own count.

The scope is cheap enough for a one-row round: the libraries' thread setters are
found once, and a call reads each library's count and sets it twice through
ctypes (a few microseconds; ``threadpoolctl.threadpool_limits`` rescans the
loaded libraries and took 2.5 ms a call). Work below :data:`SERIAL_BY_ITSELF`
multiply-adds is not scoped at all: OpenBLAS runs calls that small on one thread
by itself.

A count the user chose is obeyed: a library whose count differs from the one it
had when skbandit was imported (``threadpoolctl.threadpool_limits``, or the
library's own setter), or any count set in ``OPENBLAS_NUM_THREADS``,
``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` or ``BLIS_NUM_THREADS``, is left as it is.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import ctypes
import itertools
import os
import threading
from contextlib import nullcontext
from contextvars import ContextVar

from threadpoolctl import ThreadpoolController

__all__ = [
    "BLOCK_THREADS",
    "NO_SCOPE",
    "SCOPE",
    "PROCESS_THREADS",
    "SERIAL_BY_ITSELF",
    "SMALL_WORK",
    "UNSET",
    "blas_scope",
    "configured_threads",
]

#: Multiply-adds below which a verb's dense work runs on the configured threads.
SMALL_WORK = 1 << 23
#: Multiply-adds below which OpenBLAS uses one thread by itself (its GEMM splits
#: a GEMM above 2^18 multiply-adds, a GEMV above 9,216): no scope needed.
SERIAL_BY_ITSELF = 1 << 15
#: The BLAS threads of small work for the whole process
#: (:func:`skbandit.utils.threads.set_blas_threads`); None leaves BLAS's own count.
PROCESS_THREADS = {"threads": 1}
#: The same inside a :func:`skbandit.utils.threads.blas_threads` block (per thread
#: and per task): ``UNSET`` outside any.
UNSET = object()
BLOCK_THREADS: ContextVar = ContextVar("skbandit_blas_threads", default=UNSET)
#: The environment variables through which a user sets BLAS's thread count.
_THREAD_VARIABLES = (
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
)
#: The scope of work that needs none.
NO_SCOPE = nullcontext()


def configured_threads():
    """The BLAS threads of small work here: the block's, else the process's."""
    threads = BLOCK_THREADS.get()
    return PROCESS_THREADS["threads"] if threads is UNSET else threads


def _raw_openblas(lib):
    """``(get, set)`` of an OpenBLAS on its own threads, as bare ctypes functions.

    threadpoolctl's setter lets only one Python thread set OpenBLAS's count (the
    first to call it, until a ``threadpool_limits`` block ends); calling it here
    would make that thread ours for good and silence the user's own limits.
    """
    if lib.internal_api != "openblas" or lib.threading_layer == "openmp":
        return None
    try:
        dynlib = ctypes.CDLL(lib.filepath)
    except OSError:  # the library is then left alone
        return None
    for prefix, suffix in itertools.product(("", "scipy_"), ("", "64_", "_64")):
        get = getattr(dynlib, f"{prefix}openblas_get_num_threads{suffix}", None)
        put = getattr(dynlib, f"{prefix}openblas_set_num_threads{suffix}", None)
        if get is not None and put is not None:
            put.argtypes = [ctypes.c_int]
            return get, put
    return None


class _Pools:
    """The BLAS libraries loaded when skbandit was imported: ``(get, set, count at
    import)`` of each, and whether the environment sets their count."""

    def __init__(self):
        self.libraries = []
        self.user_set = any(os.environ.get(v) for v in _THREAD_VARIABLES)
        try:
            libraries = ThreadpoolController().select(user_api="blas").lib_controllers
        except Exception:  # no control of BLAS is no reason to fail an import
            libraries = []
        for lib in libraries:
            raw = _raw_openblas(lib)
            pooled = lib.internal_api == "openblas" and lib.threading_layer != "openmp"
            if raw is None and pooled:
                continue  # no bare setter: left alone (see _raw_openblas)
            get, put = raw if raw else (lib.get_num_threads, lib.set_num_threads)
            count = get()
            if count is not None:
                self.libraries.append((get, put, count))


class _Scope:
    """Sets the small-work count on the first entry of any thread, and restores the
    counts on the last exit (BLAS's pool is shared by the process)."""

    def __init__(self, pools):
        self._pools = pools
        self._lock = threading.Lock()
        self._depth = 0
        self._saved = []

    def __enter__(self):
        with self._lock:
            self._depth += 1
            if self._depth == 1:
                self._saved = self._lower()

    def __exit__(self, *exc):
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                for put, count in self._saved:
                    put(count)
                self._saved = []

    def _lower(self):
        threads, pools = configured_threads(), self._pools
        if threads is None or pools.user_set:
            return []
        saved = []
        for get, put, default in pools.libraries:
            count = get()
            if count == default and count != threads:  # not the user's choice
                put(threads)
                saved.append((put, count))
        return saved


#: The one scope of the process (BLAS's pool is the process's).
SCOPE = _Scope(_Pools())


def blas_scope(work):
    """The context a verb's dense work runs in: the configured BLAS threads when
    ``work`` multiply-adds are small, else nothing.

    Parameters
    ----------
    work : int
        An estimate of the verb's multiply-adds.

    Returns
    -------
    scope : context manager
        Restores the counts on exit, also when the block raises.
    """
    if SERIAL_BY_ITSELF <= work < SMALL_WORK:
        return SCOPE
    return NO_SCOPE
