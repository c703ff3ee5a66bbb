"""Speed of the policies on scikit-learn regressors, one round at a time.

SquareCB on its default ``SGDRegressor``, FALCON on ``Ridge`` and on
``HistGradientBoostingRegressor``: ``select`` then ``partial_fit`` of one row per
round, on the digits bandit (K = 10 arms, d = 64 standard-scaled features, reward 1
for the right class). The reference is the plainest loop a user would write with
the same scikit-learn models: one clone per arm, ``predict`` of every fitted arm
model, the inverse-gap weights in numpy, a draw, then the pulled arm's
``partial_fit`` (SquareCB) or a refit of every arm's clone on its rows when the
round count reaches a power of two (FALCON). It runs under scikit-learn's
``assume_finite`` and, for gradient boosting, on one OpenMP thread (both public
settings, and what skbandit does), so it is the strongest loop of those calls.
Both loops are timed alternately (best of ``--repeat``); the mistakes of each are
printed as a check that they learn alike.

Run::

    python benchmarks/speed/estimator_policies.py [--n-rounds 1000] [--repeat 2]
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

import numpy as np
import sklearn
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import Ridge, SGDRegressor
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from skbandit import datasets
from skbandit.policies import FALCON, SquareCB

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common.machine import best_alternating, print_machine  # noqa: E402

K = 10


def digits(n_rounds, seed=0):
    X, labels = datasets.load_digits_bandit(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(labels))[:n_rounds]
    X = StandardScaler().fit_transform(np.asarray(X, dtype=float)[order])
    return X, np.unique(labels, return_inverse=True)[1][order]


def inverse_gap(y, gamma):
    """The inverse-gap weights of one row's predictions ``y`` (ties to the first)."""
    best = int(np.argmax(y))
    p = 1.0 / (K + gamma * (y[best] - y))
    p[best] = 0.0
    p[best] = 1.0 - p.sum()
    return p


def falcon_gamma(n_seen, scale, delta=0.05):
    tau = 2 ** (max(n_seen, 1).bit_length() - 1) if n_seen >= 2 else 0
    return 1.0 if tau == 0 else scale * np.sqrt(K * tau / np.log(tau / delta))


def plain_loop(kind, estimator, X, labels, seed=0):
    """The same scikit-learn calls, nothing else; returns the mistakes."""
    rng = np.random.default_rng(seed)
    models = [None] * K
    rows, arms, rewards = [], [], []
    mistakes = 0
    with sklearn.config_context(assume_finite=True):
        for t in range(X.shape[0]):
            x = X[t : t + 1]
            y = np.array([0.0 if m is None else m.predict(x)[0] for m in models])
            gamma = 10.0 * np.sqrt(t + 1) if kind == "squarecb" else None
            gamma = falcon_gamma(t, 3.0) if gamma is None else gamma
            a = int(rng.choice(K, p=inverse_gap(y, gamma)))
            r = float(a == labels[t])
            mistakes += 1 - r
            if kind == "squarecb":
                models[a] = clone(estimator) if models[a] is None else models[a]
                models[a].partial_fit(x, [r])
                continue
            rows.append(X[t]), arms.append(a), rewards.append(r)
            n = t + 1
            if n >= 2 and n & (n - 1) == 0:  # a power of two: refit every arm
                Xs, As, Rs = np.array(rows), np.array(arms), np.array(rewards)
                for arm in np.unique(As):
                    models[arm] = clone(estimator).fit(Xs[As == arm], Rs[As == arm])
    return mistakes


def skbandit_loop(policy, X, labels):
    policy = clone(policy)
    mistakes = 0
    for t in range(X.shape[0]):
        x = X[t : t + 1]
        a = policy.select(x)
        r = (a == labels[t]).astype(float)
        mistakes += 1 - r[0]
        policy.partial_fit(x, a, r)
    return mistakes


CASES = {
    "SquareCB-SGD": (
        "squarecb",
        SGDRegressor(learning_rate="constant", eta0=0.05),
        SquareCB(n_actions=K, random_state=0),
    ),
    "FALCON-ridge": ("falcon", Ridge(), FALCON(n_actions=K, random_state=0)),
    "FALCON-HGB": (
        "falcon",
        HistGradientBoostingRegressor(max_iter=50),
        FALCON(
            n_actions=K,
            estimator=HistGradientBoostingRegressor(max_iter=50),
            random_state=0,
        ),
    ),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rounds", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    args = parser.parse_args()
    print_machine()
    X, labels = digits(args.n_rounds)
    print(f"digits bandit: {args.n_rounds} rounds, K = {K}, d = {X.shape[1]}")
    print("case          | plain rounds/s | skbandit rounds/s | plain / skbandit time")
    for name in args.cases:
        kind, estimator, policy = CASES[name]
        one_thread = name.endswith("HGB")

        def plain(kind=kind, estimator=estimator, one_thread=one_thread):
            with (
                threadpool_limits(1, user_api="openmp")
                if one_thread
                else contextlib.nullcontext()
            ):
                return plain_loop(kind, estimator, X, labels)

        def ours(policy=policy):
            return skbandit_loop(policy, X, labels)

        t_ref, m_ref, t_ours, m_ours = best_alternating(plain, ours, args.repeat)
        n = args.n_rounds
        print(
            f"{name:13} | {n / t_ref:14.1f} | {n / t_ours:17.1f} | "
            f"{t_ref / t_ours:5.2f}  (mistakes {m_ref:.0f} / {m_ours:.0f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
