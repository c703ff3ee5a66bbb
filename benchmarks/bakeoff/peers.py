"""The peers of the bake-off: Vowpal Wabbit's and contextualbandits' exploration on the
rows and order skbandit's policies see.

Run by ``progressive_regret.py`` with the Python of the peers' own environment (they
are never dependencies of skbandit)::

    python -m venv /tmp/peers
    /tmp/peers/bin/pip install vowpalwabbit contextualbandits

It reads an ``.npz`` with ``X`` (n, d), ``labels`` (n,) and ``n_actions``, plays one
round at a time (select, then learn the pulled arm's reward, 1 for the right class),
and prints one JSON line: the pulled arms' rewards and the seconds taken.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import json
import time

import numpy as np

#: Rounds per contextualbandits update (a delayed batch; the others learn every round).
CB_BATCH = 10


def _vw_features(x):
    return "| " + " ".join(f"{j}:{v:.6g}" for j, v in enumerate(x) if v != 0.0)


def run_vw(X, labels, K, exploration, value, seed):
    """VW's ``--cb_explore K`` with one exploration; cost = 1 - reward."""
    from vowpalwabbit import Workspace

    flag = {
        "squarecb": f"--squarecb --gamma_scale {value}",
        "bag": f"--bag {int(value)}",
        "cover": f"--cover {int(value)}",
        "epsilon": f"--epsilon {value}",
    }[exploration]
    vw = Workspace(f"--cb_explore {K} {flag} --random_seed {seed} --quiet")
    rng = np.random.default_rng(seed)
    rewards = np.empty(len(labels))
    for t, (x, y) in enumerate(zip(X, labels, strict=True)):
        features = _vw_features(x)
        pmf = np.asarray(vw.predict(features), dtype=float)
        pmf /= pmf.sum()
        a = int(rng.choice(K, p=pmf))
        rewards[t] = float(a == y)
        vw.learn(f"{a + 1}:{1.0 - rewards[t]}:{pmf[a]} {features}")
    vw.finish()
    return rewards


def run_contextualbandits(X, labels, K, name, value, seed):
    """contextualbandits' BootstrappedTS / AdaptiveGreedy on a logistic regression
    learned online (``batch_train=True``), in batches of ``CB_BATCH`` rounds: its
    ``partial_fit`` refits every arm's replicas: 10x the others' cost a round."""
    from contextualbandits.online import AdaptiveGreedy, BootstrappedTS
    from sklearn.linear_model import SGDClassifier

    base = SGDClassifier(loss="log_loss", random_state=seed)
    # contextualbandits asks for a positive seed.
    common = dict(nchoices=K, batch_train=True, random_state=seed + 1)
    if name == "BootstrappedTS":
        policy = BootstrappedTS(base, nsamples=int(value), **common)
    else:
        policy = AdaptiveGreedy(base, decay=float(value), **common)
    rng = np.random.default_rng(seed)
    rewards = np.empty(len(labels))
    actions = np.empty(len(labels), dtype=int)
    for t, (x, y) in enumerate(zip(X, labels, strict=True)):
        fitted = t >= CB_BATCH
        actions[t] = policy.predict(x[None, :])[0] if fitted else rng.integers(K)
        rewards[t] = float(actions[t] == y)
        if (t + 1) % CB_BATCH == 0:
            rows = slice(t + 1 - CB_BATCH, t + 1)
            policy.partial_fit(X[rows], actions[rows], rewards[rows])
    return rewards


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data")
    parser.add_argument("policy")  # vw-squarecb, vw-bag, ..., cb-BootstrappedTS
    parser.add_argument("value", type=float)
    parser.add_argument("seed", type=int)
    args = parser.parse_args()
    with np.load(args.data) as data:
        X, labels, K = data["X"], data["labels"], int(data["n_actions"])
    family, name = args.policy.split("-", 1)
    start = time.perf_counter()
    if family == "vw":
        rewards = run_vw(X, labels, K, name, args.value, args.seed)
    else:
        rewards = run_contextualbandits(X, labels, K, name, args.value, args.seed)
    seconds = time.perf_counter() - start
    print(json.dumps({"rewards": rewards.tolist(), "seconds": seconds}))


if __name__ == "__main__":
    main()
