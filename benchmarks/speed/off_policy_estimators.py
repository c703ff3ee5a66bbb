"""Off-policy estimators' speed: validated skbandit against the plain numpy expression.

Over ``n`` logged rows and ``K`` actions (default 10**7 x 10, as in issue 11), each
estimator is timed twice on the same float64 arrays: skbandit's function, which
validates every input (shapes, non-negative probabilities whose rows sum to one,
integer actions in range, finite rewards, propensities in ``(0, 1]``), and the bare
numpy expression of the same estimate, which checks nothing. The values must agree
to 1e-12; the ratio is the price of the validation. Target: IPS within 3x of numpy.

Run::

    python benchmarks/speed/off_policy_estimators.py [--n-rows 10000000] [--repeat 3]
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from skbandit.evaluation import (
    dr_value,
    estimate_value,
    ips_value,
    replay_value,
    snips_value,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common.machine import best_alternating, print_machine  # noqa: E402


def make_logs(n, k, seed=0):
    rng = np.random.default_rng(seed)
    proba = rng.random((n, k))
    proba /= proba.sum(axis=1, keepdims=True)
    actions = rng.integers(k, size=n)
    rewards = rng.random(n)
    propensities = np.full(n, 1.0 / k)
    q = rng.random((n, k))
    return proba, actions, rewards, propensities, q


def numpy_ips(proba, actions, rewards, propensities, q):
    return float(
        np.mean(proba[np.arange(actions.shape[0]), actions] / propensities * rewards)
    )


def numpy_snips(proba, actions, rewards, propensities, q):
    w = proba[np.arange(actions.shape[0]), actions] / propensities
    return float(np.sum(w * rewards) / np.sum(w))


def numpy_replay(proba, actions, rewards, propensities, q):
    m = proba[np.arange(actions.shape[0]), actions]
    return float(np.sum(m * rewards) / np.sum(m))


def numpy_dr(proba, actions, rewards, propensities, q):
    rows = np.arange(actions.shape[0])
    w = proba[rows, actions] / propensities
    direct = np.einsum("ij,ij->i", proba, q)
    return float(np.mean(direct + w * (rewards - q[rows, actions])))


CASES = [
    ("ips_value", numpy_ips, lambda p, a, r, s, q: ips_value(p, a, r, s)),
    ("snips_value", numpy_snips, lambda p, a, r, s, q: snips_value(p, a, r, s)),
    ("replay_value", numpy_replay, lambda p, a, r, s, q: replay_value(p, a, r)),
    (
        "dr_value",
        numpy_dr,
        lambda p, a, r, s, q: dr_value(p, a, r, s, expected_rewards=q),
    ),
    (
        "estimate_value(ips)",
        numpy_ips,
        lambda p, a, r, s, q: estimate_value(p, a, r, s, method="ips").value,
    ),
]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rows", type=int, default=10_000_000)
    parser.add_argument("--n-actions", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    print_machine()
    print(
        f"problem : {args.n_rows:,} logged rows x {args.n_actions} actions, float64, "
        f"best of {args.repeat}"
    )
    print()
    logs = make_logs(args.n_rows, args.n_actions)
    print(f"{'estimator':<22}{'numpy s':>10}{'skbandit s':>12}{'x numpy':>9}")
    print("-" * 53)
    ratios = {}
    for name, ref, ours in CASES:
        t_np, v_np, t_sk, v_sk = best_alternating(ref, ours, args.repeat, *logs)
        assert abs(v_np - v_sk) <= 1e-12 * max(1.0, abs(v_np)), (name, v_np, v_sk)
        ratios[name] = t_sk / t_np
        print(f"{name:<22}{t_np:>10.3f}{t_sk:>12.3f}{t_sk / t_np:>9.2f}")
    print("-" * 53)
    verdict = "PASS" if ratios["ips_value"] <= 3.0 else "FAIL"
    print(f"ips_value / numpy = {ratios['ips_value']:.2f} (target <= 3): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
