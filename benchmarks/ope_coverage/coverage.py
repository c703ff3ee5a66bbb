"""Monte Carlo coverage of the off-policy intervals on a problem with a known value.

Problem: contexts ``x ~ N(0, I_5)``, ``K = 6`` arms, Bernoulli rewards of mean
``q(x, a) = sigmoid(2 x . theta_a)``. Each data set is a fresh draw of ``n`` logged
rounds; the estimand is the target policy's value over the context distribution,
``V = E_x sum_a pi(a | x) q(x, a)``, computed once on 200,000 fresh contexts (its
Monte Carlo error, about 1e-3, is a fifth of the smallest standard error here).

Loggers:

- ``uniform``: every arm with probability 1/6;
- ``learning``: epsilon-greedy (epsilon = 0.1, smallest propensity 1/60, as in the
  issue's check) over a per-arm ridge model that it refits on its own logs every
  ``n / 50`` rounds: the logs are not i.i.d., the propensities are the ones it used;
- ``fixed``: the same epsilon-greedy over a ridge model fitted once on 300 separate
  uniform rounds (the issue's "constant epsilon = 0.1 logger").

Targets (fixed before the logs are drawn, from a perturbed ``theta``):
``deterministic`` (its argmax) and ``stochastic`` (a softmax of twice its scores).
``learned`` and ``learned-elsewhere`` are the issue's check: a greedy ridge policy
(DMLearner) fitted on the very logs it is evaluated on, or on an independent set of
logs from the same logger.

Each estimator's analytic interval (and, with ``--bootstrap``, its percentile
bootstrap) is recorded as covering or not; the script prints each coverage with its
Monte Carlo standard error. DR and friends use a per-arm ridge reward model
cross-fitted over 2 folds (misspecified: the rewards are logistic).

Run (about 4 minutes on 2 cores at the default size)::

    python benchmarks/ope_coverage/coverage.py
    python benchmarks/ope_coverage/coverage.py --sets 1000 --bootstrap
    python benchmarks/ope_coverage/coverage.py --methods el ips snips --sizes 200 1000
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common.machine import print_machine  # noqa: E402

from skbandit.evaluation import (  # noqa: E402
    betting_interval,
    empirical_likelihood_interval,
    estimate_value,
    slope_value,
)
from skbandit.evaluation._ope_weighted import (  # noqa: E402
    dros_terms,
    interval_of,
    subgaussian_terms,
)
from skbandit.offpolicy import DMLearner  # noqa: E402
from skbandit.offpolicy._models import cross_fitted_rewards  # noqa: E402

N_ARMS, N_FEATURES, EPSILON = 6, 5, 0.1
#: (method, options) of every interval recorded.
METHODS = {
    "ips": {},
    "snips": {},
    "dr": {"model": True},
    "sndr": {"model": True},
    "switch-dr": {"model": True, "tau": 10.0},
    "dm": {"model": True},
    "ips-clip10": {"method": "ips", "clip": 10.0},
    "dros": {"model": True, "own": "dros"},
    "subgaussian-ips": {"own": "subgaussian"},
    "subgaussian-ips-auto": {"own": "subgaussian-auto"},
    "slope-ips": {"own": "slope"},
    "ips-betting": {"own": "betting"},
    "ips-betting-fixed-n": {"own": "betting-n"},
    "el": {"own": "el"},
    "el-bounded": {"own": "el-bounded"},
}


def own_interval(kind, proba, actions, rewards, propensities, q_hat, max_weight):
    """The interval of an estimator that estimate_value does not hold."""
    args = (proba, actions, rewards, propensities)
    if kind == "el-bounded":  # told the largest weight the loggers can produce
        return empirical_likelihood_interval(*args, max_weight=max_weight)
    if kind == "betting":
        return betting_interval(*args)
    if kind == "betting-n":
        return betting_interval(*args, anytime=False)
    if kind == "el":
        return empirical_likelihood_interval(*args)
    if kind == "slope":
        return slope_value(*args)
    if kind == "dros":
        terms = dros_terms(*args, q_hat, 1.0)
    else:
        terms = subgaussian_terms(*args, "auto" if kind.endswith("auto") else 0.1)
    return interval_of(terms)


def problem(seed=0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(N_FEATURES, N_ARMS))
    target_theta = theta + 0.7 * rng.normal(size=theta.shape)
    return theta, target_theta


def mean_rewards(X, theta):
    return 1.0 / (1.0 + np.exp(-2.0 * X @ theta))


def target_proba(X, target_theta, kind):
    scores = X @ target_theta
    if kind == "deterministic":
        return np.eye(N_ARMS)[scores.argmax(axis=1)]
    z = np.exp(2.0 * (scores - scores.max(axis=1, keepdims=True)))
    return z / z.sum(axis=1, keepdims=True)


def _ridge_greedy(X, actions, rewards):
    """Per-arm ridge (alpha 1) coefficients of the logged rewards."""
    coef = np.zeros((X.shape[1], N_ARMS))
    for k in range(N_ARMS):
        rows = actions == k
        A = X[rows].T @ X[rows] + np.eye(X.shape[1])
        coef[:, k] = np.linalg.solve(A, X[rows].T @ rewards[rows])
    return coef


def log_rounds(rng, theta, n, logger):
    """One data set of ``n`` logged rounds: X, actions, rewards, propensities."""
    X = rng.normal(size=(n, N_FEATURES))
    u_reward, u_action = rng.random(n), rng.random(n)
    explore = rng.integers(N_ARMS, size=n)
    q = mean_rewards(X, theta)
    if logger == "uniform":
        actions = explore
        rewards = (u_reward < q[np.arange(n), actions]).astype(float)
        return X, actions, rewards, np.full(n, 1.0 / N_ARMS)
    if logger == "fixed":
        Xw = rng.normal(size=(300, N_FEATURES))
        aw = rng.integers(N_ARMS, size=300)
        rw = (rng.random(300) < mean_rewards(Xw, theta)[np.arange(300), aw]) * 1.0
        coef = _ridge_greedy(Xw, aw, rw)
        greedy = (X @ coef).argmax(axis=1)
        actions = np.where(u_action < EPSILON, explore, greedy)
    else:  # learning: refits on its own logs every n / 50 rounds
        actions, greedy = np.empty(n, dtype=int), np.empty(n, dtype=int)
        coef = np.zeros((N_FEATURES, N_ARMS))
        step = max(1, n // 50)
        for start in range(0, n, step):
            rows = np.arange(start, min(n, start + step))
            # Ties (the all-zero start) go to the first arm: a deterministic
            # greedy, so the propensities below are exact.
            greedy[rows] = (X[rows] @ coef).argmax(axis=1)
            actions[rows] = np.where(
                u_action[rows] < EPSILON, explore[rows], greedy[rows]
            )
            seen = np.arange(rows[-1] + 1)
            logged = (u_reward[seen] < q[seen, actions[seen]]).astype(float)
            coef = _ridge_greedy(X[seen], actions[seen], logged)
    rewards = (u_reward < q[np.arange(n), actions]).astype(float)
    propensities = EPSILON / N_ARMS + (1 - EPSILON) * (actions == greedy)
    return X, actions, rewards, propensities


def run(setting, n, n_sets, bootstrap, seed=0, methods=None):
    logger, target = setting
    methods = METHODS if methods is None else {m: METHODS[m] for m in methods}
    theta, target_theta = problem()
    rng = np.random.default_rng([seed, n, SETTINGS.index(setting)])
    X_truth = np.random.default_rng(123).normal(size=(200_000, N_FEATURES))
    q_truth = mean_rewards(X_truth, theta)
    fixed_truth = None
    if target in ("deterministic", "stochastic"):
        proba = target_proba(X_truth, target_theta, target)
        fixed_truth = float(np.mean(np.sum(proba * q_truth, axis=1)))
    hits = {m: 0 for m in methods}
    hits.update({f"{m} (bootstrap)": 0 for m in ("ips", "snips", "dr")} if bootstrap
                else {})  # fmt: skip
    widths = dict.fromkeys(methods, 0.0)
    needs_model = bootstrap or any(o.get("model") for o in methods.values())
    # The largest pi / mu: 1 / (1/6) on uniform logs, 1 / (epsilon / 6) otherwise.
    max_weight = N_ARMS if logger == "uniform" else N_ARMS / EPSILON
    for _ in range(n_sets):
        X, actions, rewards, propensities = log_rounds(rng, theta, n, logger)
        if fixed_truth is not None:
            proba, truth = target_proba(X, target_theta, target), fixed_truth
        else:
            if target == "learned":
                train = (X, actions, rewards)
            else:
                train = log_rounds(rng, theta, n, logger)[:3]
            policy = DMLearner().fit(*train)
            proba = policy.predict_action_proba(X)
            p_truth = policy.predict_action_proba(X_truth)
            truth = float(np.mean(np.sum(p_truth * q_truth, axis=1)))
        q_hat = None
        if needs_model:
            q_hat = cross_fitted_rewards(
                _Ridge(), X, actions, rewards, None, N_ARMS, "per_arm", 2, 0
            )
        for name, opts in methods.items():
            kw = {k: v for k, v in opts.items() if k in ("clip", "tau")}
            if opts.get("model"):
                kw["expected_rewards"] = q_hat
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if "own" in opts:
                    v = own_interval(opts["own"], proba, actions, rewards,
                                     propensities, q_hat, max_weight)  # fmt: skip
                else:
                    method = opts.get("method", name)
                    v = estimate_value(
                        proba, actions, rewards, propensities, method=method, **kw
                    )
            hits[name] += v.ci_low <= truth <= v.ci_high
            widths[name] += (v.ci_high - v.ci_low) / n_sets
        if bootstrap:
            for name in ("ips", "snips", "dr"):
                kw = {"expected_rewards": q_hat} if name == "dr" else {}
                v = estimate_value(proba, actions, rewards, propensities,
                                   method=name, ci="bootstrap", n_bootstrap=400,
                                   random_state=0, **kw)  # fmt: skip
                hits[f"{name} (bootstrap)"] += v.ci_low <= truth <= v.ci_high
    return {m: h / n_sets for m, h in hits.items()}, widths


class _Ridge:
    """A tiny closed-form ridge regressor (alpha 1): the reward model, fast."""

    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self

    def fit(self, X, y, sample_weight=None):
        A = X.T @ X + np.eye(X.shape[1])
        self.mean_ = y.mean()
        self.coef_ = np.linalg.solve(A, X.T @ (y - self.mean_))
        return self

    def predict(self, X):
        return X @ self.coef_ + self.mean_


SETTINGS = [
    ("uniform", "deterministic"),
    ("uniform", "stochastic"),
    ("learning", "deterministic"),
    ("learning", "stochastic"),
    ("fixed", "learned-elsewhere"),
    ("fixed", "learned"),
]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", type=int, default=200, help="data sets per cell")
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000, 20_000])
    parser.add_argument("--bootstrap", action="store_true")
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=None,
                        help="record only these intervals (default: all)")  # fmt: skip
    parser.add_argument("--settings", nargs="+", type=int, default=None,
                        help="indices of SETTINGS to run (default: all)")  # fmt: skip
    args = parser.parse_args(argv)
    print_machine()
    se = np.sqrt(0.95 * 0.05 / args.sets)
    print(f"data sets per cell: {args.sets}; coverage standard error {se:.3f}")
    for n in args.sizes:
        picked = args.settings if args.settings is not None else range(len(SETTINGS))
        for setting in (SETTINGS[i] for i in picked):
            coverage, widths = run(
                setting, n, args.sets, args.bootstrap, methods=args.methods
            )
            cells = "  ".join(
                f"{m} {c:.3f} (width {widths[m]:.3f})" for m, c in coverage.items()
            )
            print(f"n={n:>6} {setting[0]:>8} {setting[1]:>17}: {cells}")


if __name__ == "__main__":
    main()
