"""A loaded machine and both BLAS thread settings, for the speed benchmarks that
compare numpy work: the claims are about a machine whose cores are busy, and about
one BLAS thread as well as the machine's default."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import multiprocessing
import time
from contextlib import contextmanager, nullcontext

from threadpoolctl import threadpool_info, threadpool_limits


def _spin(stop_at):
    while time.monotonic() < stop_at:
        pass


@contextmanager
def busy_machine(n_processes=1, limit_s=3600.0):
    """Run the block beside ``n_processes`` busy-looping processes (each stops by
    itself after ``limit_s`` seconds, should the block's process die)."""
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_spin, args=(time.monotonic() + limit_s,), daemon=True)
        for _ in range(n_processes)
    ]
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join(timeout=10)


def add_busy_argument(parser):
    """``--busy N``: the busy-looping processes beside the timings."""
    parser.add_argument(
        "--busy",
        type=int,
        default=1,
        help="busy-looping processes beside the timings (a loaded machine; 0: none)",
    )


def blas_settings():
    """``(name, context)`` of the two settings timed: one BLAS thread set by the
    user (``threadpool_limits(1)``, obeyed by skbandit) and the machine's default
    (skbandit's own choice for its small work)."""
    default = {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
    return [
        ("one BLAS thread (threadpool_limits(1))", lambda: threadpool_limits(1)),
        (f"default BLAS threads ({sorted(default)})", nullcontext),
    ]
