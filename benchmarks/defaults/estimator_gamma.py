"""FALCON's and SquareCB's ``gamma_scale``: progressive mistakes over a small grid.

The bake-off's problems (``benchmarks/bakeoff/progressive_regret.py``: digits, magic
and the synthetic ``quadratic``, standard-scaled rows in each seed's order), one
round at a time (``select``, then ``partial_fit``), T = 1,000, seeds 0-2: FALCON on
``Ridge()`` at ``gamma_scale`` 1, 3, 10 and 30, SquareCB on its default SGD model at
10 and 100. Prints each run and the mean over the seeds (the user guide's table).

Run::

    python benchmarks/defaults/estimator_gamma.py [--n-rounds 1000] [--seeds 0 1 2]
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from skbandit.policies import FALCON, SquareCB

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bakeoff"))
from common.machine import print_machine  # noqa: E402
from progressive_regret import problem  # noqa: E402

GRID = {
    **{f"FALCON-ridge {g:g}": (FALCON, g) for g in (1.0, 3.0, 10.0, 30.0)},
    **{f"SquareCB-SGD {g:g}": (SquareCB, g) for g in (10.0, 100.0)},
}


def mistakes(policy, X, labels):
    total = 0.0
    for t in range(X.shape[0]):
        a = policy.select(X[t : t + 1])
        r = (a == labels[t]).astype(float)
        total += 1.0 - r[0]
        policy.partial_fit(X[t : t + 1], a, r)
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rounds", type=int, default=1000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--problems", nargs="+", default=["digits", "magic", "quadratic"]
    )
    args = parser.parse_args()
    print_machine()
    for name in args.problems:
        runs = {key: [] for key in GRID}
        for seed in args.seeds:
            X, labels, n_actions = problem(name, args.n_rounds, seed)
            for key, (Policy, gamma) in GRID.items():
                policy = Policy(
                    n_actions=n_actions, gamma_scale=gamma, random_state=seed
                )
                runs[key].append(mistakes(policy, X, labels))
                print(name, seed, key, runs[key][-1], flush=True)
        for key, values in runs.items():
            print(f"{name:10} {key:18} mean {np.mean(values):6.1f}  {values}")


if __name__ == "__main__":
    main()
