"""Time per round of Neural-ES against Neural-TS, Neural-UCB and Neural-PHE, and the
update time of Neural-ES against its ensemble size.

The quadratic bandit of Sun, Wang and Xu (2025, "Provable Anytime Ensemble Sampling
Algorithms in Nonlinear Contextual Bandits", section 7.1): K = 50 arms in R^20 on the
unit sphere, ``h(x) = 10^-2 x^T A^T A x`` with ``A`` i.i.d. N(0, 1), Gaussian noise
0.5 (``SyntheticBandit("quadratic_form")``; the paper keeps one arm set per instance,
the simulator draws new arms every round, which costs the policies the same). Every
policy has the paper's network (two hidden layers of 20, ``init="ntk"``), 100
full-batch gradient steps at learning rate 0.01 on the mean loss, ``alpha = 1``, and
trains after every round on the whole history (warm start):

- ``NeuralES``: 10 members, ``sigma_R = 0.1``, fixed horizon (Algorithm 1);
- ``NeuralPHE``: one network, the whole history's noise redrawn every training;
- ``NeuralTS`` / ``NeuralUCB``: diagonal ``U`` (Zhang et al. 2021), ``nu = beta =
  0.1``.

Part 1 times ``select`` and ``partial_fit`` per round over ``--n-rounds`` sequential
rounds (``skbandit.evaluation.simulate``) and reports the regret beside them. Part 2
times one update (a ``partial_fit`` of one round, i.e. one training of every member
on ``--buffer-rows`` rows) of Neural-ES for each ``--n-models``, against the reference
of ``M`` one-member updates run one after the other (what a Python loop over the
members costs), and Neural-PHE's update. Times in part 2 are the best of
``--repeats``. Run::

    .venv/bin/python benchmarks/speed/neural_es.py --threads 1
"""
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

from skbandit.environments import SyntheticBandit
from skbandit.evaluation import simulate
from skbandit.policies import NeuralES, NeuralPHE, NeuralTS, NeuralUCB

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common.machine import machine  # noqa: E402

NETWORK = dict(
    **NeuralES.PAPER_SCHEDULE,  # every round, full batch, the whole history
    hidden_layer_sizes=(20, 20),
    learning_rate=0.01,
    alpha=1.0,
)


def policies(n_rounds, device, seed):
    common = dict(random_state=seed, device=device, **NETWORK)
    return {
        "NeuralES (m=10)": NeuralES(
            n_models=10, perturbation_scale=0.1, horizon=n_rounds, **common
        ),
        "NeuralPHE": NeuralPHE(perturbation_scale=0.1, **common),
        "NeuralTS": NeuralTS(nu=0.1, **common),
        "NeuralUCB": NeuralUCB(beta=0.1, **common),
    }


def warm_up(args):
    """Pay the one-off costs (torch's first optimizer imports torch._dynamo, tens of
    seconds) before anything is timed."""
    env = SyntheticBandit("quadratic_form", n_actions=50, n_features=20, noise=0.5)
    for policy in policies(10, args.device, args.seed).values():
        simulate(policy, env, 3, random_state=args.seed, progress=False)


def per_round(args):
    env = SyntheticBandit("quadratic_form", n_actions=50, n_features=20, noise=0.5)
    rows = []
    for name, policy in policies(args.n_rounds, args.device, args.seed).items():
        res = simulate(
            policy, env, args.n_rounds, random_state=args.seed, progress=False
        )
        late = slice(-max(1, args.n_rounds // 10), None)
        rows.append(
            (
                name,
                1e3 * res.select_time.mean(),
                1e3 * res.update_time.mean(),
                1e3 * res.update_time[late].mean(),
                res.select_time.sum() + res.update_time.sum(),
                float(res.regret.sum()),
            )
        )
        print(f"  done {name}", file=sys.stderr, flush=True)
    print(
        f"\nPart 1: T = {args.n_rounds} sequential rounds of the quadratic bandit "
        "(K = 50, d = 20), ms per round"
    )
    print(
        f"{'policy':<17} {'select':>8} {'update':>8} {'update late':>12} "
        f"{'total s':>8} {'regret':>8}"
    )
    for name, sel, upd, late, total, regret in rows:
        print(
            f"{name:<17} {sel:8.2f} {upd:8.2f} {late:12.2f} {total:8.1f} {regret:8.1f}"
        )
    es = rows[0]
    for name, sel, upd, *_ in rows[1:]:
        print(
            f"  NeuralES / {name}: select x{es[1] / sel:.2f}, update x{es[2] / upd:.2f}"
        )


def _fitted(policy, X, a, r):
    return policy.fit(X, a, r)


def _best_update(policy, x, a, r, repeats):
    """Best time of ``repeats`` one-round updates (each grows the buffer by 1)."""
    best = np.inf
    for i in range(repeats):
        t0 = time.perf_counter()
        policy.partial_fit(x[i : i + 1], a[i : i + 1], r[i : i + 1])
        best = min(best, time.perf_counter() - t0)
    return best


def update_scaling(args):
    env = SyntheticBandit("quadratic_form", n_actions=50, n_features=20, noise=0.5)
    env.reset(args.seed)
    n = args.buffer_rows
    X = env.contexts(n + args.repeats)
    a = np.random.default_rng(args.seed).integers(50, size=X.shape[0])
    r = env.rewards(a)
    common = dict(n_actions=50, random_state=args.seed, device=args.device, **NETWORK)
    one = _fitted(NeuralES(n_models=1, horizon=10**9, **common), X[:n], a[:n], r[:n])
    t_one = _best_update(one, X[n:], a[n:], r[n:], args.repeats)
    phe = _fitted(NeuralPHE(**common), X[:n], a[:n], r[:n])
    t_phe = _best_update(phe, X[n:], a[n:], r[n:], args.repeats)
    print(
        f"\nPart 2: one update (100 gradient steps of every member on {n} rows), "
        f"best of {args.repeats}"
    )
    print(
        f"{'n_models':>8} {'stacked ms':>11} {'M x one ms':>11} {'ratio':>7} "
        f"{'per member ms':>14} {'PHE ms':>8}"
    )
    for M in args.n_models:
        es = _fitted(NeuralES(n_models=M, horizon=10**9, **common), X[:n], a[:n], r[:n])
        t = _best_update(es, X[n:], a[n:], r[n:], args.repeats)
        print(
            f"{M:8d} {1e3 * t:11.2f} {1e3 * M * t_one:11.2f} {t / (M * t_one):7.2f} "
            f"{1e3 * t / M:14.2f} {1e3 * t_phe:8.2f}"
        )
        print(f"  done n_models={M}", file=sys.stderr, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rounds", type=int, default=1000)
    parser.add_argument("--n-models", type=int, nargs="+", default=[1, 5, 10, 25])
    parser.add_argument("--buffer-rows", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-rounds", action="store_true", help="part 2 only")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print("command: python " + " ".join(sys.argv))
    print(
        f"machine: {machine(args.device)}; torch {torch.__version__}, "
        f"{args.threads} thread(s), device {args.device}"
    )
    warm_up(args)
    if not args.skip_rounds:
        per_round(args)
    update_scaling(args)


if __name__ == "__main__":
    main()
