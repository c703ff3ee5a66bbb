"""Experiment 1 of "Combinatorial Neural Bandits" (ICML 2023): the linear baselines.

Hwang, Chai and Oh compare CN-UCB/CN-TS with CombLinUCB and CombLinTS (Wen, Kveton and
Ashkan, ICML 2015) on the top-K semi-bandit with N = 20 arms, K = 4, d = 80, noise
0.01, contexts and ``a`` on the unit sphere, and the scores

- h1 = x^T a (T = 2000), h2 = (x^T a)^2 (T = 2000), h3 = cos(pi x^T a) (T = 4000).

This script runs, on the same environments and seeds (``TopKBandit.reset(seed)``):

- skbandit's ``CombLinUCB(alpha=1, beta=1)`` and ``CombLinTS(alpha=1, nu=1)``, the
  paper's settings (lambda = 1, alpha = 1, nu = 1), as Wen et al. define them
  (``--policies "CombLinTS nu=0.1"`` runs another posterior scale);
- ``official UCB`` / ``official TS``: a numpy transcription of the authors' baseline
  (``Lin`` class of ``github.com/DurianFarmer/cnb``, commit 3ec871a): shared ridge,
  the target update ``b += sum_i v[t, i] x[t, S_t[i]]`` that pairs the score of arm
  *index* i with the i-th *chosen* arm, TS drawing each arm's score with the variance
  passed as the standard deviation, theta initialised U(-1, 1)^d;
- a uniformly random slate (its exact expected regret).

It prints the cumulative expected regret at T (mean +- std, median over seeds) beside
the official arrays' numbers (mean +- std over 20 runs, from the paper's repository).
Every finished run is one small JSON file (final regret, the curve every 50 rounds,
seconds) under the tracked folder ``benchmarks/results/combinatorial_linear/``, so seeds
accumulate over sessions on a fresh clone; ``--table-only`` prints the table from the
cache alone.

Run::

    python benchmarks/combinatorial_neural_bandits/linear_baselines.py  # 10 seeds
    python benchmarks/combinatorial_neural_bandits/linear_baselines.py --n-seeds 20
    python benchmarks/combinatorial_neural_bandits/linear_baselines.py --table-only
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path
from time import perf_counter

import numpy as np

from skbandit.environments import TopKBandit
from skbandit.evaluation import simulate
from skbandit.policies import CombLinTS, CombLinUCB

N, K, D = 20, 4, 80
PROBLEMS = {
    "h1": ("linear", 2000),
    "h2": ("quadratic", 2000),
    "h3": ("cosine_pi", 4000),
}
#: Cumulative regret at T of the official arrays (regrets/exp1_*.npy), mean +- std.
OFFICIAL = {
    "CombLinUCB": {"h1": (852.9, 72.5), "h2": (230.7, 5.9), "h3": (995.5, 20.0)},
    "CombLinTS": {"h1": (981.0, 58.3), "h2": (232.5, 2.3), "h3": (993.3, 18.6)},
    "CN-UCB": {"h1": (29.6, 3.1), "h2": (90.6, 15.2), "h3": (509.3, 49.4)},
}
CACHE = Path(__file__).resolve().parents[1] / "results" / "combinatorial_linear"
#: Rounds between two stored points of a cached regret curve.
CURVE_STEP = 50


def official_baseline(env, n_rounds, seed, *, ts, lam=1.0, gamma=1.0, nu=1.0):
    """The authors' linear baseline, bugs included, on a skbandit environment."""
    rng = np.random.default_rng(seed)
    A_inv = np.eye(D) / lam
    b = np.zeros(D)
    theta = rng.uniform(-1, 1, D)
    first_arms = np.arange(K)[None]
    regret = np.empty(n_rounds)
    for t in range(n_rounds):
        X = env.contexts(1)[0]
        mu = X @ theta
        q = np.einsum("nd,de,ne->n", X, A_inv, X)
        if ts:  # per-arm score draws; the variance nu^2 sigma^2 passed as the std
            score = rng.normal(mu, nu**2 * lam * q)
        else:
            score = mu + gamma * np.sqrt(q)
        S = np.argsort(-score)[:K]
        regret[t] = env.regret(S[None])[0]
        v_first = env.rewards(first_arms)[0]  # scores of arms 0..K-1 (the bug)
        b += v_first @ X[S]  # paired with the contexts of the chosen arms
        for x in X[S]:  # Sherman-Morrison with every chosen context
            u = A_inv @ x
            A_inv -= np.outer(u, u) / (1.0 + x @ u)
        theta = A_inv @ b
    return regret


def random_slates(env, n_rounds):
    """Exact expected regret of a uniformly random slate."""
    regret = np.empty(n_rounds)
    for t in range(n_rounds):
        env.contexts(1)
        regret[t] = env.optimal_value()[0] - K * env.expected_rewards[0].mean()
    return regret


def run(name, problem, seed, *, table_only=False):
    """(final regret, seconds) of one run, from the cache or run and cached.

    With ``table_only``, ``None`` for a run that is not cached.
    """
    path = CACHE / f"{name.replace(' ', '_').replace('=', '')}-{problem}-s{seed}.json"
    if path.exists():
        record = json.loads(path.read_text())
        return record["final_regret"], record["seconds"]
    if table_only:
        return None
    reward, n_rounds = PROBLEMS[problem]
    env = TopKBandit(reward, n_actions=N, n_features=D, slate_size=K, noise=0.01)
    env.reset(seed)
    start = perf_counter()
    if name == "CombLinUCB":
        policy = CombLinUCB(slate_size=K, alpha=1.0, beta=1.0, random_state=seed)
        regret = simulate(
            policy, env, n_rounds, random_state=seed, progress=False
        ).regret
    elif name.startswith("CombLinTS"):  # "CombLinTS" (nu = 1) or "CombLinTS nu=0.1"
        nu = float(name.split("nu=")[1]) if "nu=" in name else 1.0
        policy = CombLinTS(slate_size=K, alpha=1.0, nu=nu, random_state=seed)
        regret = simulate(
            policy, env, n_rounds, random_state=seed, progress=False
        ).regret
    elif name.startswith("official"):
        regret = official_baseline(env, n_rounds, seed, ts=name.endswith("TS"))
    else:
        regret = random_slates(env, n_rounds)
    seconds = perf_counter() - start
    curve = np.cumsum(regret)
    record = {
        "policy": name,
        "problem": problem,
        "T": n_rounds,
        "seed": seed,
        "final_regret": float(curve[-1]),
        "curve_step": CURVE_STEP,
        "curve": [round(float(v), 4) for v in curve[CURVE_STEP - 1 :: CURVE_STEP]],
        "seconds": round(seconds, 2),
        "numpy": np.__version__,
    }
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(path)  # atomic: an interrupted run leaves no half file
    return record["final_regret"], seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-seeds", type=int, default=10)
    parser.add_argument(
        "--policies",
        nargs="+",
        default=["CombLinUCB", "CombLinTS", "official UCB", "official TS", "random"],
    )
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument(
        "--table-only", action="store_true", help="the table of the cache, run nothing"
    )
    args = parser.parse_args(argv)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:  # pragma: no cover
        pass
    print(f"# {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"numpy {np.__version__}, 1 BLAS thread")  # fmt: skip
    print(f"# N={N}, K={K}, d={D}, noise 0.01, seeds 0..{args.n_seeds - 1}")
    print("| policy | h | seeds | regret at T, mean ± std | median "
          "| official (mean ± std) | ms / round |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name in args.policies:
        for problem in args.problems:
            n_rounds = PROBLEMS[problem][1]
            done = [
                run(name, problem, seed, table_only=args.table_only)
                for seed in range(args.n_seeds)
            ]
            done = [d for d in done if d is not None]
            if not done:
                continue
            finals, secs = np.array(done).T
            key = {"official UCB": "CombLinUCB", "official TS": "CombLinTS"}.get(
                name, name
            )
            off = OFFICIAL.get(key, {}).get(problem)
            off = "—" if off is None else f"{off[0]:.1f} ± {off[1]:.1f}"
            ms = 1000 * np.mean(secs) / n_rounds
            print(
                f"| {name} | {problem} (T={n_rounds}) | {len(finals)} | "
                f"{finals.mean():.1f} ± "
                f"{finals.std(ddof=1):.1f} | {np.median(finals):.1f} | {off} | "
                f"{ms:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
