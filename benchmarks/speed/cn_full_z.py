"""Seconds per round of CN-UCB / CN-TS with a full Z, against the arithmetic floor.

The setting of Hwang, Chai and Oh, "Combinatorial Neural Bandits" (ICML 2023),
Experiment 1: N = 20 arms with their own contexts of d = 80, slates of K = 4, one
hidden layer of m = 100, so p = d m + m = 8,100 parameters and a full p x p ``Z^{-1}``
(525 MB in float64).

What a round cannot avoid (the *floor*, timed here in plain torch at the same shapes
and dtype, float64): the N quadratic forms ``g_i^T Z^{-1} g_i`` as one GEMM
``(N, p) @ (p, p)``, and the rank-K update of ``Z^{-1}`` as one in-place
``Z^{-1} -= B B^T`` (``B`` of shape (p, K), from the GEMM's rows of the chosen arms).
The policy's round is ``select`` + ``partial_fit`` through the public API: network
forward pass and tangent features, the GEMM, top-K, the Woodbury factor, buffer and
the in-place update. Each policy round is followed by a floor round, and the ratio
is taken against that one, so that both see the same load on a shared machine.
Training is timed apart (``--train-every``, 100 steps on the last 100 rounds, as the
experiments) and reported amortised: the median over ``--periods`` training periods
of the period's mean round. Small torch work runs on
one thread and the two large products on ``--threads``
(``skbandit/networks/_threads.py``); numpy's own BLAS threads are not set here.

Also timed: the copying update (the Woodbury step into a new matrix, what an
immutable precision object costs). Runs::

    .venv/bin/python benchmarks/speed/cn_full_z.py --threads 1
    .venv/bin/python benchmarks/speed/cn_full_z.py --threads 2
    python3 benchmarks/speed/cn_full_z.py --device cuda   # on a lent GPU

The contexts are unit-norm rows, timed both ways (``--contexts``): with the policies'
default online standardisation, and read as given (``standardize=False``), as in the
experiments. Either way the update's features are ``select``'s rows at the same
parameters (under standardisation ``Z`` takes each round as ``select`` scaled it, by
the moments before the round), and ``Z^{-1} Phi^T`` is taken from ``select``'s GEMM.
(Before, ``Z`` took the learning row, scaled by moments that include its own round:
its features differed from ``select``'s and the factor cost one more pass over
``Z^{-1}``, about 1.5x the floor, which holds one pass to read ``Z^{-1}`` and one to
update it.)

With ``--device cuda`` the floor and the policies run on the GPU (the clock waits for
the device before every reading; the copying update stays a numpy row on the host).
"""
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import gc
import os
import platform
import sys
import time
from contextlib import contextmanager

import numpy as np
import torch

from skbandit.policies import CNTS, CNUCB

#: ``--contexts``: the values of the policies' ``standardize`` timed.
CONTEXTS = {"both": (True, False), "standardised": (True,), "given": (False,)}
#: Where the floor and the policies run (``--device``).
DEVICE = torch.device("cpu")


@contextmanager
def one_thread():
    """Run the block on one torch thread (the policies run their small steps so: an
    OpenMP region costs more than a few hundred microseconds of work saves)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _clock():
    """Wall and CPU (this process, all threads) seconds, once the device is idle."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize(DEVICE)
    return np.array([time.perf_counter(), time.process_time()])


def _time(fn, repeats):
    """Median wall and CPU seconds of ``fn``."""
    times = []
    for _ in range(repeats):
        start = _clock()
        fn()
        times.append(_clock() - start)
    return np.median(times, axis=0)


def floor_round(p, N, K, rng):
    """One round of the floor, as a function: the GEMM of the N quadratic forms
    plus the in-place rank-K update, in torch."""
    Zinv = torch.eye(p, dtype=torch.float64, device=DEVICE)
    G = torch.from_numpy(rng.normal(size=(N, p)) / np.sqrt(p)).to(DEVICE)

    def one():
        Q = G @ Zinv  # the N quadratic forms: one GEMM
        with one_thread():  # the small steps on one thread, as the policies do
            q = (Q * G).sum(1)
            chosen = torch.topk(q, K).indices
            P, CP = G[chosen], Q[chosen].T  # (K, p), (p, K)
            eye = torch.eye(K, dtype=torch.float64, device=DEVICE)
            L = torch.linalg.cholesky(eye + P @ CP)
            B = torch.linalg.solve_triangular(L, CP.T, upper=False).T.contiguous()
        Zinv.addmm_(B, B.T, alpha=-1.0)

    return one


def copying_update(p, K, repeats, rng):
    """The Woodbury update into a new p x p matrix (no in-place, no reuse)."""
    Zinv = np.eye(p)
    P = rng.normal(size=(K, p)) / np.sqrt(p)

    def one():
        CP = Zinv @ P.T
        return Zinv - CP @ np.linalg.solve(np.eye(K) + P @ CP, CP.T)

    return _time(one, repeats)


def policy_round(cls, args, rng, train, floor, standardize):
    """(wall, CPU) seconds of a policy's round, and its ratios to the floor.

    Each round of the policy (select + partial_fit) is followed by a round of the
    ``floor``, so that both see the same load on a shared machine. Without
    training: medians over ``repeats`` rounds. With training on its schedule:
    rounds are grouped in whole periods of ``train_every`` (one trains), and the
    medians are over ``periods`` period means. The garbage collector is off while
    timing (as in :mod:`timeit`), after a collection that frees the previous
    policies' 525 MB matrices. Returns ``(policy, floor, ratio)``, each (wall, CPU).
    """
    N, K, d = args.n_arms, args.slate_size, args.n_features
    policy = cls(
        slate_size=K,
        hidden_layer_sizes=(args.hidden,),
        n_steps=100 if train else 0,
        train_every=args.train_every,
        batch_size=None,  # full batches, as the experiments
        max_buffer_size=100 * K,
        standardize=standardize,
        device=DEVICE.type,
        random_state=0,
    )
    period = args.train_every if train else 1
    n_timed = period * (args.periods if train else args.repeats)
    # Warm up to a period boundary: timing starts right after a training round.
    warmup = period * -(-args.warmup // period)
    X = rng.normal(size=(warmup + n_timed, 1, N, d)).astype(np.float32)
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    times, floors = [], []
    gc.collect()
    gc.disable()
    try:
        for t in range(X.shape[0]):
            start = _clock()
            slate = policy.select(X[t])
            policy.partial_fit(X[t], slate, rng.normal(size=slate.shape) * 0.1)
            middle = _clock()
            floor()
            times.append(middle - start)
            floors.append(_clock() - middle)
    finally:
        gc.enable()
    times = np.array(times[warmup:]).reshape(-1, period, 2).mean(axis=1)
    floors = np.array(floors[warmup:]).reshape(-1, period, 2).mean(axis=1)
    return (
        np.median(times, axis=0),
        np.median(floors, axis=0),
        np.median(times / floors, axis=0),
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--n-arms", type=int, default=20)
    parser.add_argument("--slate-size", type=int, default=4)
    parser.add_argument("--n-features", type=int, default=80)
    parser.add_argument("--hidden", type=int, default=100)
    parser.add_argument("--train-every", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument(
        "--periods", type=int, default=5, help="training periods timed (with training)"
    )
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda on a GPU")
    parser.add_argument(
        "--contexts",
        choices=sorted(CONTEXTS),
        default="both",
        help="time the policies' default online standardisation, the contexts as "
        "given, or both (default)",
    )
    args = parser.parse_args(argv)
    global DEVICE
    DEVICE = torch.device(args.device)
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    p = args.n_features * args.hidden + args.hidden
    print(f"command : {' '.join(['python', *sys.argv])}")
    print(
        f"machine : {platform.platform()}, {platform.processor() or 'cpu'}, "
        f"{os.cpu_count()} cores, torch {torch.__version__}, "
        f"{args.threads} thread(s), device {DEVICE}"
        + (f" ({torch.cuda.get_device_name(DEVICE)})" if DEVICE.type == "cuda" else "")
    )
    print(
        f"setting : N = {args.n_arms}, K = {args.slate_size}, d = {args.n_features}, "
        f"m = {args.hidden}, p = {p}, full Z^-1 in float64, contexts "
        f"{args.contexts}; median of "
        f"{args.repeats} rounds after {args.warmup} (with training: of "
        f"{args.periods} periods of {args.train_every} rounds)"
    )
    floor_one = floor_round(p, args.n_arms, args.slate_size, rng)
    floor = _time(floor_one, args.repeats)
    copy = copying_update(p, args.slate_size, max(3, args.repeats // 4), rng)
    print()
    print(f"{'what':<46} {'wall s':>8} {'x floor':>7} {'CPU s':>8} {'x floor':>7}")

    def row(label, t, ratio):
        print(f"{label:<46} {t[0]:8.4f} {ratio[0]:7.2f} {t[1]:8.4f} {ratio[1]:7.2f}")

    row("floor: N-form GEMM + in-place rank-K update", floor, (1.0, 1.0))
    row("copying Woodbury update alone", copy, copy / floor)
    for cls in (CNUCB, CNTS):
        name = cls.__name__
        for train in (False, True):
            what = f"with training every {args.train_every}" if train else "no training"
            for standardize in CONTEXTS[args.contexts]:
                data = np.random.default_rng(1)  # both ways see the same rounds
                t, beside, ratio = policy_round(
                    cls, args, data, train, floor_one, standardize
                )
                how = "standardised" if standardize else "as given"
                row(f"{name}, {how}: {what}", t, ratio)
                row("  the floor, timed beside it", beside, beside / beside)
    return 0


if __name__ == "__main__":
    sys.exit(main())
