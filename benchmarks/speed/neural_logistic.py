"""Seconds per round of NeuralLog-UCB/TS (Bae and Lee, ICML 2025) against NeuralUCB and
NeuralTS at the same width, on the synthetic logistic problem of Fig. 1.

``NeuralLogisticBandit("h1")``: d = 20, K = 5 per-arm contexts from a pool of 2,500
vectors, Bernoulli rewards. Every policy runs the experiments' schedule on one
torch thread: one hidden layer of ``--hidden`` units, 100 full-batch gradient steps at
learning rate 0.01 every 50 rounds, diagonal matrices, one round per ``select`` and
``partial_fit``. NeuralUCB and NeuralTS are the reference: the same network and training
on the squared loss, with ``U`` updated every round. The neural logistic policies do
more per round: the pulled arm's gradient at the selection parameters, the effective
dimension's Gram beside the design matrix, and (variant 2) the pulled arm's logit
after the update for its variance weight.

The policies are run in turn, ``--repeats`` times in alternating order, and each one's
fastest repeat is kept (the machine may be shared). Prints select, update and round
milliseconds and the ratio of each neural logistic policy to the reference of its
kind (UCB to NeuralUCB, TS to NeuralTS). Run::

    python benchmarks/speed/neural_logistic.py
    python benchmarks/speed/neural_logistic.py --hidden 100 --n-rounds 1000
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np
import torch

from skbandit.environments import NeuralLogisticBandit
from skbandit.policies import NeuralLogTS, NeuralLogUCB, NeuralTS, NeuralUCB


def policies(hidden):
    common = dict(
        hidden_layer_sizes=(hidden,),
        **NeuralLogUCB.PAPER_SCHEDULE,  # every 50 rounds, full batch, all history
        learning_rate=0.01,
        alpha=1.0,
        covariance="diag",
        random_state=0,
    )
    return {
        "NeuralUCB": NeuralUCB(beta=1.0, **common),
        "NeuralLog-UCB-1": NeuralLogUCB(variant=1, nu=0.1, **common),
        "NeuralLog-UCB-2": NeuralLogUCB(variant=2, nu=0.01, **common),
        "NeuralTS": NeuralTS(nu=0.1, **common),
        "NeuralLog-TS-1": NeuralLogTS(variant=1, nu=0.01, **common),
        "NeuralLog-TS-2": NeuralLogTS(variant=2, nu=0.01, **common),
    }


def run(policy, n_rounds, seed=0):
    """Select and update milliseconds per round over a fresh run."""
    env = NeuralLogisticBandit("h1").reset(seed)
    t_select = t_update = 0.0
    for _ in range(n_rounds):
        X = env.contexts(1)
        t0 = time.perf_counter()
        a = policy.select(X)
        t1 = time.perf_counter()
        policy.partial_fit(X, a, env.rewards(a))
        t2 = time.perf_counter()
        t_select += t1 - t0
        t_update += t2 - t1
    return 1e3 * t_select / n_rounds, 1e3 * t_update / n_rounds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=20, help="m (paper: 20)")
    parser.add_argument("--n-rounds", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    from sklearn.base import clone

    pols = policies(args.hidden)
    run(clone(pols["NeuralUCB"]), 60)  # warm up torch
    best = {}
    for rep in range(args.repeats):
        order = list(pols) if rep % 2 == 0 else list(pols)[::-1]
        for name in order:
            s, u = run(clone(pols[name]), args.n_rounds)
            if name not in best or s + u < sum(best[name]):
                best[name] = (s, u)
    print("command :", " ".join([os.path.basename(sys.executable), *sys.argv]))
    print(
        f"machine : {platform.platform()}, {platform.processor() or 'cpu'}, "
        f"{os.cpu_count()} cores, load avg {os.getloadavg()[0]:.1f}, torch "
        f"{torch.__version__}, 1 thread, numpy {np.__version__}"
    )
    print(
        f"setting : h1, d=20, K=5, T={args.n_rounds}, m={args.hidden}, J=100, lr=0.01, "
        f"train every 50, diagonal, best of {args.repeats}"
    )
    print(
        f"\n{'policy':<18}{'select ms':>11}{'update ms':>11}{'round ms':>10}"
        f"{'ratio':>8}"
    )
    for name, (s, u) in best.items():
        ref = "NeuralUCB" if "UCB" in name else "NeuralTS"
        ratio = (s + u) / sum(best[ref])
        print(f"{name:<18}{s:>11.3f}{u:>11.3f}{s + u:>10.3f}{ratio:>7.2f}x")


if __name__ == "__main__":
    main()
