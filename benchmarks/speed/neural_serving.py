"""NeuralTS serving latency: threads; the paper schedule against a production one.

Two measurements, one request at a time (``select`` of one row, then ``partial_fit`` of
its reward), on the public API:

- ``--what threads``: ``select`` latency with the neural policies' default (small work
  on one torch thread) against torch's threads chosen explicitly
  (``OMP_NUM_THREADS`` and ``torch.set_num_threads(n)``, which the policies obey),
  interleaved in blocks of 50 requests;
- ``--what schedule``: per-round ``select`` and ``partial_fit`` latency (median, p99,
  and the median over the last fifth of the run, where the paper schedule's cost has
  grown with the history) and mistakes, for the paper schedule (train every round,
  ``n_steps=100`` full-batch steps on all history) against a production schedule
  (``train_every=10``, ``n_steps=20`` mini-batches of 64 rows, ``max_buffer_size=500``),
  on digits and wine (classification bandits: reward 1 for the true class).

Runs::

    python benchmarks/speed/neural_serving.py --what threads --threads 2
    python benchmarks/speed/neural_serving.py --what schedule --n-rounds 600
"""
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import os
import platform
import sys
import time

import numpy as np
import torch
from sklearn.datasets import load_digits, load_wine
from sklearn.preprocessing import StandardScaler, normalize

from skbandit.policies import NeuralTS

SCHEDULES = {
    "paper": dict(NeuralTS.PAPER_SCHEDULE),
    "production": {
        "n_steps": 20,
        "train_every": 10,
        "batch_size": 64,
        "max_buffer_size": 500,
    },
}


def bandit(name, n_rounds, seed=0):
    """Normalised float32 rows of a classification data set, shuffled and cycled."""
    X, y = (load_digits if name == "digits" else load_wine)(return_X_y=True)
    if name == "wine":  # features on very different scales
        X = StandardScaler().fit_transform(X)
    X = normalize(X).astype(np.float32)
    order = np.resize(np.random.RandomState(seed).permutation(len(X)), n_rounds)
    return X[order], y[order], int(y.max()) + 1


def make_policy(n_actions, **schedule):
    return NeuralTS(
        n_actions=n_actions,
        alpha=1e-3,
        nu=1.0,
        learning_rate=1e-2,
        random_state=0,
        **schedule,
    )


def threads(args):
    X, y, K = bandit("digits", 300 + 50 * args.blocks)
    policy = make_policy(K, n_steps=5).partial_fit(X[:300], y[:300], np.ones(300))
    default = torch.get_num_threads()
    times = {"one thread for small work (default)": [], "threads set by the user": []}
    for block in range(args.blocks):
        rows = range(300 + 50 * block, 350 + 50 * block)
        for label, chosen in zip(times, (None, args.threads), strict=True):
            if chosen is not None:
                # The user's choice, obeyed as it is (set_num_threads alone is not
                # seen as one when it equals torch's default).
                os.environ["OMP_NUM_THREADS"] = str(chosen)
                torch.set_num_threads(chosen)
            for t in rows:
                start = time.perf_counter()
                policy.select(X[t : t + 1])
                times[label].append(time.perf_counter() - start)
            torch.set_num_threads(default)
            os.environ.pop("OMP_NUM_THREADS", None)
    print(
        f"NeuralTS select, one row, fitted on 300 digits rows; torch {default} threads"
    )
    for label, seconds in times.items():
        ms = np.array(seconds) * 1e3
        print(
            f"{label:<40} median {np.median(ms):7.2f} ms  p99 "
            f"{np.percentile(ms, 99):7.2f} ms  ({ms.size} requests)"
        )


def schedule(args):
    for name in ("digits", "wine"):
        X, y, K = bandit(name, args.n_rounds)
        for label, settings in SCHEDULES.items():
            policy, times, mistakes = make_policy(K, **settings), [], 0
            for t in range(args.n_rounds):
                start = time.perf_counter()
                a = int(policy.select(X[t : t + 1])[0])
                chosen = time.perf_counter()
                reward = float(a == y[t])
                mistakes += reward == 0
                policy.partial_fit(X[t : t + 1], np.array([a]), np.array([reward]))
                times.append((chosen - start, time.perf_counter() - chosen))
            ms = np.array(times[1:]) * 1e3  # the first round builds the network
            late = ms[-max(1, args.n_rounds // 5) :, 1]
            select_ms, update_ms = ms[:, 0], ms[:, 1]
            print(
                f"{name:<7}{label:<11} T={args.n_rounds}  mistakes {mistakes:>4}  "
                f"select median {np.median(select_ms):6.2f} "
                f"p99 {np.percentile(select_ms, 99):6.2f} ms  "
                f"update median {np.median(update_ms):7.2f} "
                f"p99 {np.percentile(update_ms, 99):7.2f} ms  "
                f"last fifth {np.median(late):7.2f} ms",
                flush=True,
            )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--what", choices=["threads", "schedule"], required=True)
    parser.add_argument("--threads", type=int, default=2, help="the user's setting")
    parser.add_argument("--blocks", type=int, default=6, help="blocks of 50 requests")
    parser.add_argument("--n-rounds", type=int, default=600)
    args = parser.parse_args(argv)
    print(f"command : {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(
        f"machine : {platform.platform()}, {os.cpu_count()} cores, torch "
        f"{torch.__version__}, load avg {os.getloadavg()[0]:.1f}"
    )
    if args.what == "threads":
        threads(args)
    else:
        schedule(args)


if __name__ == "__main__":
    main()
