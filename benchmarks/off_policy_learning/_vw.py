"""Vowpal Wabbit's ``--cb K --cb_type dr`` on logs saved by ``learn_from_logs.py``.

Run in the benchmark environment that has ``vowpalwabbit`` (never a dependency of
skbandit): ``python _vw.py logs.npz predictions.npy``. Reads ``X``, ``actions``,
``rewards``, ``propensities``, ``X_test``, ``n_actions`` and ``passes``; learns
online over ``passes`` shuffled passes (cost = -reward), then writes the greedy
action of every test row.
"""
# SPDX-License-Identifier: BSD-3-Clause

import sys

import numpy as np
import vowpalwabbit


def _features(row):
    return " ".join(f"f{j}:{value:.6g}" for j, value in enumerate(row))


def main(source, target):
    data = np.load(source)
    k = int(data["n_actions"])
    vw = vowpalwabbit.Workspace(f"--cb {k} --cb_type dr --quiet")
    rng = np.random.default_rng(0)
    X, actions = data["X"], data["actions"]
    rewards, propensities = data["rewards"], data["propensities"]
    for _ in range(int(data["passes"])):
        for i in rng.permutation(X.shape[0]):
            vw.learn(
                f"{actions[i] + 1}:{-rewards[i]:.6g}:{propensities[i]:.6g} "
                f"| {_features(X[i])}"
            )
    predictions = [vw.predict(f"| {_features(row)}") - 1 for row in data["X_test"]]
    np.save(target, np.asarray(predictions, dtype=np.int64))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
