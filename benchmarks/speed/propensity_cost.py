"""What ``select(X, return_propensities=True)`` costs beside ``select(X)``.

One context a call, the two calls interleaved in one process (``--repeat`` blocks
of ``--calls`` calls each; the median of each), for the sampling policies whose
propensity is a Monte Carlo estimate over 256 stacked draws of their scores, on two
settings: the policies of ``tests/policies/test_propensities.py`` (3 arms, 4
features, fitted on 40 rounds) and digits as a bandit (10 arms, 64 features, fitted
on 300 rounds). A draw of LinTS's or LogTS's scores is one Gaussian vector per arm
of the context's dimension, so the ratio grows with ``d``: 256 draws of 10 x 64
numbers against one.

Run::

    python benchmarks/speed/propensity_cost.py [--calls 200] [--repeat 5]
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from statistics import median
from time import process_time

import numpy as np
from sklearn.base import clone

from skbandit.datasets import load_digits_bandit
from skbandit.policies import LinTS, LogTS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common.machine import print_machine  # noqa: E402

POLICIES = [
    ("LinTS", LinTS(nu=1.0, random_state=0)),
    ("LogTS", LogTS(nu=1.0, random_state=0)),
]


def _settings():
    """``(name, X, n_actions, n_fit)``: the tests' small setting and digits."""
    small = np.random.default_rng(0).normal(size=(240, 4))
    X, _ = load_digits_bandit(return_X_y=True)
    return [
        ("tests' setting (K = 3, d = 4, 40 rounds)", small, 3, 40),
        ("digits (K = 10, d = 64, 300 rounds)", X, 10, 300),
    ]


def _fitted(policy, X, n_actions, n_fit):
    rng = np.random.default_rng(1)
    policy = clone(policy).set_params(n_actions=n_actions)
    actions = rng.integers(n_actions, size=n_fit)
    return policy.fit(X[:n_fit], actions, (rng.random(n_fit) < 0.5) * 1.0)


def _time_calls(call, rows):
    start = process_time()
    for x in rows:
        call(x)
    return (process_time() - start) / len(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print_machine()
    print(
        f"timing  : {args.repeat} blocks of {args.calls} one-context calls each, "
        "select and select with propensities interleaved; medians of CPU time"
    )
    print()
    header = f"{'setting':<44}{'policy':<8}{'select':>11}{'with p':>11}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    for name, X, n_actions, n_fit in _settings():
        rows = [X[i : i + 1] for i in range(n_fit, n_fit + args.calls)]
        for label, policy in POLICIES:
            fitted = _fitted(policy, X, n_actions, n_fit)
            alone, with_p = [], []
            for _ in range(args.repeat):
                alone.append(_time_calls(fitted.select, rows))
                with_p.append(
                    _time_calls(
                        lambda x, p=fitted: p.select(x, return_propensities=True),
                        rows,
                    )
                )
            a, b = median(alone), median(with_p)
            print(
                f"{name:<44}{label:<8}{1e6 * a:>9.0f}us{1e6 * b:>9.0f}us{b / a:>7.1f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
