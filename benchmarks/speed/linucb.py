"""LinUCB speed: skbandit's online loop against a hand-written numpy loop.

Disjoint LinUCB (shared contexts, one ridge model per arm) with d = 20 features and
K = 10 arms, one row per round: ``select`` then ``partial_fit``. The reference is the
same maths written directly in numpy with Sherman-Morrison updates and the same
random tie-breaking, on the same data; the benchmark asserts both make identical
choices. PERFORMANCE.md's target: skbandit within 1.5x of the numpy loop per round.
Also times batch ``fit`` + batch ``select`` of 10,000 rows against the per-row loop.
Both BLAS settings are timed beside ``--busy`` busy-looping processes: one BLAS
thread set by the user (``threadpool_limits(1)``) and the machine's default.

Run::

    python benchmarks/speed/linucb.py [--n-rounds 5000] [--repeat 3] [--busy 1]
        [--profile]
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from pathlib import Path
from time import perf_counter, process_time

import numpy as np

from skbandit.policies import LinUCB

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common.load import add_busy_argument, blas_settings, busy_machine  # noqa: E402
from common.machine import best_alternating, print_machine  # noqa: E402

D, K, ALPHA, BETA = 20, 10, 1.0, 1.0


def make_data(n_rounds, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n_rounds, D)) / np.sqrt(D)
    theta = rng.standard_normal((K, D))
    R = X @ theta.T + 0.1 * rng.standard_normal((n_rounds, K))
    return X, R


def numpy_loop(X, R, seed=0):
    """Disjoint LinUCB with Sherman-Morrison, written out in numpy."""
    # skbandit's policy RNG: a Generator seeded once from random_state.
    rng = np.random.default_rng(np.random.RandomState(seed).randint(2**31 - 1))
    Ainv = np.repeat(np.eye(D)[None] / ALPHA, K, axis=0)
    b = np.zeros((K, D))
    choices = np.empty(X.shape[0], dtype=np.int64)
    for t in range(X.shape[0]):
        x = X[t]
        theta = np.einsum("kij,kj->ki", Ainv, b)
        # einsum, not matmul (`Ainv @ x`, `Ax @ x`): BLAS rounds the last block
        # differently, so arms in the same prior state would not tie exactly.
        Ax = np.einsum("kij,j->ki", Ainv, x)
        quad = np.einsum("ki,i->k", Ax, x)
        scores = np.einsum("ki,i->k", theta, x) + BETA * np.sqrt(np.maximum(quad, 0.0))
        a = int(np.argmax(scores))
        ties = scores >= scores[a]
        if np.count_nonzero(ties) > 1:  # uniform among tied maxima
            a = int(np.argmax(np.where(ties, rng.random(K), -1.0)))
        r = R[t, a]
        u = Ax[a]
        Ainv[a] -= np.outer(u, u) / (1.0 + x @ u)
        b[a] += r * x
        choices[t] = a
    return choices


def skbandit_loop(X, R, seed=0):
    policy = LinUCB(
        n_actions=K, alpha=ALPHA, beta=BETA, fit_intercept=False, random_state=seed
    )
    choices = np.empty(X.shape[0], dtype=np.int64)
    for t in range(X.shape[0]):
        x = X[t : t + 1]
        a = policy.select(x)
        policy.partial_fit(x, a, R[t, a])
        choices[t] = a[0]
    return choices


def batch_run(n_rows, seed=0):
    X, R = make_data(n_rows, seed + 1)
    actions = np.random.RandomState(seed).randint(K, size=n_rows)
    rewards = R[np.arange(n_rows), actions]
    policy = LinUCB(
        n_actions=K, alpha=ALPHA, beta=BETA, fit_intercept=False, random_state=seed
    )
    t0 = perf_counter()
    policy.fit(X, actions, rewards)
    t1 = perf_counter()
    policy.select(X)
    t2 = perf_counter()
    return t1 - t0, t2 - t1


def _timed_table(X, R, args):
    """Time both loops (alternating) and the batch verbs, print the table and return
    skbandit's per-round ratio to the numpy loop."""
    t_np, c_np, t_sk, c_sk = best_alternating(
        numpy_loop, skbandit_loop, args.repeat, X, R, clock=process_time
    )
    n_diff = int(np.sum(c_np != c_sk))
    assert n_diff == 0, f"the loops chose differently in {n_diff} rounds"

    fit_s, sel_s = batch_run(args.n_batch_rows)
    n = args.n_rounds
    rows = [
        ("numpy Sherman-Morrison loop", n / t_np, 1e6 * t_np / n, "1.00"),
        ("skbandit LinUCB loop", n / t_sk, 1e6 * t_sk / n, f"{t_sk / t_np:.2f}"),
        (
            f"skbandit fit, {args.n_batch_rows} rows",
            args.n_batch_rows / fit_s,
            1e6 * fit_s / args.n_batch_rows,
            "",
        ),
        (
            f"skbandit select, {args.n_batch_rows} rows",
            args.n_batch_rows / sel_s,
            1e6 * sel_s / args.n_batch_rows,
            "",
        ),
    ]
    print(f"{'implementation':<34}{'rows/s':>12}{'us/row':>10}{'x numpy':>9}")
    print("-" * 65)
    for name, rate, us, ratio in rows:
        print(f"{name:<34}{rate:>12,.0f}{us:>10.1f}{ratio:>9}")
    print("-" * 65)
    print(f"identical choices in all {n} rounds: yes")
    batch_rate = args.n_batch_rows / (fit_s + sel_s)
    print(
        f"batch fit+select: {batch_rate:,.0f} rows/s = "
        f"{batch_rate / (n / t_sk):.0f}x the skbandit per-row loop, "
        f"{batch_rate / (n / t_np):.0f}x the numpy per-row loop"
    )
    return t_sk / t_np


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rounds", type=int, default=5000)
    parser.add_argument("--n-batch-rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile the skbandit loop and print the top entries",
    )
    add_busy_argument(parser)
    args = parser.parse_args(argv)

    import torch

    print_machine(torch=torch.__version__)
    print(
        f"problem : disjoint LinUCB, d={D}, K={K}, alpha={ALPHA}, beta={BETA}, "
        f"{args.n_rounds} rounds, best of {args.repeat} (CPU time), "
        f"{args.busy} busy process(es) beside"
    )
    print()

    X, R = make_data(args.n_rounds)
    ratios = {}
    with busy_machine(args.busy):
        for setting, limit in blas_settings():
            print(f"{setting}:")
            with limit():
                ratios[setting] = _timed_table(X, R, args)
            print()
    for setting, ratio in ratios.items():
        verdict = "PASS" if ratio <= 1.5 else "FAIL"
        print(
            f"{setting}: per-round ratio skbandit/numpy = {ratio:.2f} "
            f"(target <= 1.5): {verdict}"
        )

    if args.profile:
        print("\ncProfile of the skbandit loop (top 25 by total time):")
        prof = cProfile.Profile()
        prof.runcall(skbandit_loop, X, R)
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
