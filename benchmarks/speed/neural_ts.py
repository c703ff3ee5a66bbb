"""Seconds per round of NeuralTS / NeuralUCB with paper 000's settings, on digits.

The digits data set (sklearn.datasets.load_digits: 1797 rows, d = 64, K = 10) as a
bandit: one row per round, rows l2-normalised (paper 000, App. A.1) and shuffled, the
shared context used through the block-aware disjoint encoding, reward 1 for the true
class. Settings: one hidden layer of m = 100, J = 100 full-batch gradient steps per
round on the whole history, diagonal U (PERFORMANCE.md's NeuralTS row).

Reports select and update times early (first 10 % of rounds) and late (last 10 %), the
total, the regret (mistakes), the share of time spent inside skorch's code (cProfile
over a late window), and the arithmetic floor on this machine: the two GEMMs each
gradient step cannot avoid (forward ``X W`` and backward ``X^T delta`` over the
buffer, one weight block per arm), timed alone at the same shapes. Runs::

    # PERFORMANCE.md's digits row: training every round on all 1797 rows
    .venv/bin/python benchmarks/speed/neural_ts.py --n-rounds 1797 --threads 1
    # the issue's 10,000-round run with the paper's cut-off (training stops at 1000)
    .venv/bin/python benchmarks/speed/neural_ts.py --n-rounds 10000 \
        --max-train-rounds 1000 --threads 1
    # the mirrored inputs of the regret benchmark (d = 128): twice the arithmetic
    .venv/bin/python benchmarks/speed/neural_ts.py --n-rounds 1797 --threads 1 \
        --mirror
"""
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import cProfile
import os
import platform
import pstats
import sys
import time

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.preprocessing import normalize

from skbandit.datasets import load_fashion_mnist
from skbandit.networks import _jstep
from skbandit.policies import NeuralTS, NeuralUCB
from skbandit.preprocessing import MirrorNormalizer


def _parser():
    """The command line's options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rounds", type=int, default=1797)
    parser.add_argument("--policy", choices=["ts", "ucb"], default="ts")
    parser.add_argument("--hidden", type=int, default=100)
    parser.add_argument("--n-steps", type=int, default=100)
    parser.add_argument("--covariance", choices=["diag", "full"], default="diag")
    parser.add_argument("--alpha", type=float, default=0.01)
    parser.add_argument("--nu", type=float, default=1e-2, help="nu (TS) or beta (UCB)")
    # 1e-2 as in neural_thompson_sampling/regret.py: the largest step that stays stable
    # on digits (docs/user_guide/neural.md); the speed does not depend on it.
    parser.add_argument("--learning-rate", type=float, default=1e-2)
    parser.add_argument(
        "--mirror",
        action="store_true",
        help="feed [x; x]/sqrt(2) (MirrorNormalizer), so d = 128 and f(x; theta0) = 0",
    )
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--profile-rounds", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--max-train-rounds",
        type=int,
        default=None,
        help="stop training after this many rounds (the paper: 1000)",
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--defaults",
        action="store_true",
        help="the flat-cost defaults' schedule (mini-batches every few rounds from "
        "the latest rows) instead of the papers'; --n-steps is then ignored and no "
        "floor is printed (it assumes full-batch steps every round)",
    )
    parser.add_argument(
        "--dataset",
        choices=["digits", "fashion_mnist"],
        default="digits",
        help="fashion_mnist: 70,000 x 784 (Debian's dataset-fashion-mnist), "
        "PERFORMANCE.md's GPU target",
    )
    parser.add_argument(
        "--data-home", default=None, help="folder of the Fashion-MNIST files"
    )
    return parser


def _rounds(args):
    """The contexts and labels of the rounds, in the order played, as float32."""
    if args.dataset == "digits":
        X, y = load_digits(return_X_y=True)
    else:
        X, y = load_fashion_mnist(data_home=args.data_home, return_X_y=True)
    X = normalize(X).astype(np.float32)
    if args.mirror:
        X = MirrorNormalizer().transform(X).astype(np.float32)
    order = np.random.RandomState(args.seed).permutation(len(X))
    order = np.resize(order, args.n_rounds)  # cycles past 1797 rounds
    return X[order], y[order]


def _policy(args):
    """NeuralTS or NeuralUCB on the papers' schedule, with the options' settings."""
    # every round, full batch, the whole history; or the defaults' flat cost
    schedule = {} if args.defaults else NeuralTS.PAPER_SCHEDULE
    common = dict(
        **{**schedule, **({} if args.defaults else {"n_steps": args.n_steps})},
        n_actions=10,
        standardize=False,  # l2-normalised rows, the papers' input
        hidden_layer_sizes=(args.hidden,),
        alpha=args.alpha,
        learning_rate=args.learning_rate,
        covariance=args.covariance,
        max_train_rounds=args.max_train_rounds,
        device=args.device,
        random_state=args.seed,
    )
    if args.policy == "ts":
        return NeuralTS(nu=args.nu, **common)
    return NeuralUCB(beta=args.nu, **common)


def _play(policy, X, y, profile_rounds):
    """Play every round; ``(t_select, t_update, mistakes, total, profile)``, the
    last ``profile_rounds`` rounds profiled."""
    T = len(X)
    t_select = np.zeros(T)
    t_update = np.zeros(T)
    mistakes = 0
    profiler = cProfile.Profile()
    prof_start = max(0, T - profile_rounds)
    start = time.perf_counter()
    for t in range(T):
        if t == prof_start:
            profiler.enable()
        x = X[t : t + 1]
        t0 = time.perf_counter()
        a = policy.select(x)
        t1 = time.perf_counter()
        r = (a == y[t : t + 1]).astype(np.float64)
        policy.partial_fit(x, a, r)
        t2 = time.perf_counter()
        t_select[t], t_update[t] = t1 - t0, t2 - t1
        mistakes += int(r[0] == 0)
        if (t + 1) % 1000 == 0:
            print(f"  round {t + 1}: {time.perf_counter() - start:.1f} s", flush=True)
    profiler.disable()
    total = time.perf_counter() - start
    return t_select, t_update, mistakes, total, pstats.Stats(profiler)


def _print_setting(policy, args, X):
    """The command, the machine and the setting."""
    print(f"command : {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(
        f"machine : {platform.platform()}, {platform.processor() or 'cpu'}, "
        f"{os.cpu_count()} cores, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads), load avg "
        f"{os.getloadavg()[0]:.1f}"
    )
    if args.device.startswith("cuda"):
        print(f"gpu     : {torch.cuda.get_device_name()}")
    print(
        f"setting : {type(policy).__name__}, {args.dataset} K=10 d={X.shape[1]}, "
        f"T={len(X)}, device={args.device}, "
        f"m={args.hidden}, "
        f"J={policy.n_steps}, batch={policy.batch_size}, every {policy.train_every} "
        f"rounds, covariance={args.covariance}, alpha={args.alpha}, "
        f"nu/beta={args.nu}, lr={args.learning_rate}"
    )


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    X, y = _rounds(args)
    policy = _policy(args)
    T = args.n_rounds
    t_select, t_update, mistakes, total, stats = _play(
        policy, X, y, args.profile_rounds
    )
    prof_total = sum(v[2] for v in stats.stats.values())  # tottime
    in_skorch = sum(
        v[2] for k, v in stats.stats.items() if f"{os.sep}skorch{os.sep}" in k[0]
    )
    window = max(1, T // 10)
    rows = [
        ("early (first 10%)", slice(0, window)),
        ("late (last 10%)", slice(T - window, T)),
        ("all rounds", slice(0, T)),
    ]
    _print_setting(policy, args, X)
    print()
    print(f"{'rounds':<20}{'select ms':>12}{'update ms':>12}{'round ms':>12}")
    for name, sl in rows:
        s, u = 1e3 * t_select[sl].mean(), 1e3 * t_update[sl].mean()
        print(f"{name:<20}{s:>12.3f}{u:>12.3f}{s + u:>12.3f}")
    print()
    trained = min(T, args.max_train_rounds or T)
    print(f"total wall time : {total:.1f} s  (PERFORMANCE.md target <= 30 s at T=1797)")
    if not args.defaults:
        floor = arithmetic_floor(
            trained, args.hidden, args.n_steps, args.device, d=X.shape[1]
        )
        print(
            f"arithmetic floor: {floor:.1f} s  (two GEMMs per step, {trained} "
            f"trainings, this machine) -> total / floor = {total / floor:.2f}"
        )
    print(f"regret (mistakes): {mistakes} / {T}")
    counts = dict(_jstep.COUNTS)  # trainings whose J steps ran as one function
    print(
        f"J-step trainings : {counts or 'none'} (captured, replayed as a graph, eager)"
    )
    print(
        f"time inside skorch code (cProfile, last {min(T, args.profile_rounds)} "
        f"rounds): {100 * in_skorch / max(prof_total, 1e-12):.2f} %"
    )


def arithmetic_floor(n_trainings, hidden, n_steps, device, d=64, K=10, points=12):
    """Seconds for the GEMMs alone: ``n_steps`` x (forward + backward) per training.

    Training ``t`` runs over ``t`` rows in ``K`` balanced tiles; the cost is timed
    at a few buffer sizes and integrated over ``t = 1 .. n_trainings``.
    """
    sizes = np.unique(np.linspace(1, n_trainings, points).astype(int))
    per_step = []
    for n in sizes:
        size = -(-n // K)
        X = torch.randn(K, size, d, device=device)
        Xt = X.transpose(1, 2)
        W = torch.randn(K, d, hidden, device=device)
        delta = torch.randn(K, size, hidden, device=device)
        for _ in range(3):  # warm-up
            torch.bmm(X, W), torch.bmm(Xt, delta)
        reps = max(5, int(2e7 / max(n * d * hidden, 1)))
        if device != "cpu":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(reps):
            torch.bmm(X, W)
            torch.bmm(Xt, delta)
        if device != "cpu":
            torch.cuda.synchronize()
        per_step.append((time.perf_counter() - start) / reps)
    all_n = np.arange(1, n_trainings + 1)
    return float(np.interp(all_n, sizes, per_step).sum() * n_steps)


if __name__ == "__main__":
    main()
