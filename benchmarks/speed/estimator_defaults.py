"""CPU seconds per 1,000 rounds of each policy on a scikit-learn estimator, at its
defaults and at its former defaults, beside Vowpal Wabbit's nearest configuration.

One round at a time (``select``, then ``partial_fit`` of its reward) on the digits
bandit (K = 10 arms, d = 64 standard-scaled features, reward 1 for the right class),
1,000 rounds, CPU time of this process (``time.process_time``, all threads), best of
``--repeat``; mistakes printed beside. Former defaults: SquareCB's
``SGDRegressor(learning_rate="constant", eta0=0.05)`` and then its exact online
ridge (before the random-feature kernel ridge), FALCON's ``Ridge()``,
BootstrappedTS's ``Ridge()`` refit on the doubling schedule and then its exact
online ridge (FALCON and BootstrappedTS now default to the random-feature kernel
ridge too). ``--cases`` runs the named cases only. Vowpal Wabbit runs in its own
environment (``--peers-python``, never a dependency): ``--cb_explore_adf`` with one
action feature per arm and ``-q sa`` (its standard form), ``--squarecb`` for
SquareCB and FALCON, ``--bag 10`` for BootstrappedTS, ``--epsilon 0.05`` for
EpsilonGreedy; its CPU time is measured the same way inside its process, examples
built there.

Run::

    python benchmarks/speed/estimator_defaults.py [--repeat 2] \\
        [--peers-python PEERS/bin/python]
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import Ridge, SGDRegressor
from sklearn.preprocessing import StandardScaler

from skbandit import datasets
from skbandit.policies import FALCON, BootstrappedTS, EpsilonGreedy, SquareCB
from skbandit.policies._core._online_ridge import OnlineRidge

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common.machine import print_machine  # noqa: E402
from common.scripts import load_script  # noqa: E402

K, N_ROUNDS = 10, 1000

CASES = {
    "SquareCB()": SquareCB(n_actions=K, random_state=0),
    "SquareCB(former SGD)": SquareCB(
        n_actions=K,
        estimator=SGDRegressor(learning_rate="constant", eta0=0.05),
        random_state=0,
    ),
    "SquareCB(former OnlineRidge)": SquareCB(
        n_actions=K, estimator=OnlineRidge(), random_state=0
    ),
    "FALCON()": FALCON(n_actions=K, random_state=0),
    "FALCON(former Ridge)": FALCON(n_actions=K, estimator=Ridge(), random_state=0),
    "BootstrappedTS()": BootstrappedTS(n_actions=K, random_state=0),
    "BootstrappedTS(former OnlineRidge)": BootstrappedTS(
        n_actions=K, estimator=OnlineRidge(), random_state=0
    ),
    "BootstrappedTS(former Ridge)": BootstrappedTS(
        n_actions=K, estimator=Ridge(), random_state=0
    ),
    "EpsilonGreedy(OnlineRidge)": EpsilonGreedy(
        n_actions=K, estimator=OnlineRidge(), random_state=0
    ),
}

VW_CASES = {
    "vw --squarecb": "--squarecb",
    "vw --bag 10": "--bag 10",
    "vw --epsilon 0.05": "--epsilon 0.05",
}

VW_SCRIPT = r"""
import json, sys, time
import numpy as np
import vowpalwabbit
data = np.load(sys.argv[1])
X, y, flags = data["X"], data["y"].tolist(), sys.argv[3]
K = int(max(y)) + 1
def lines(x, label=None):
    shared = "shared |s " + " ".join(f"f{j}:{v:.6g}" for j, v in enumerate(x) if v)
    out = [shared]
    for a in range(K):
        head = f"0:{label[1]}:{label[2]} " if label and label[0] == a else ""
        out.append(f"{head}|a arm{a}")
    return out
best = None
for _ in range(int(sys.argv[4])):
    options = f"--cb_explore_adf -q sa {flags} --quiet --random_seed 0"
    vw = vowpalwabbit.Workspace(options)
    rng, mistakes = np.random.default_rng(0), 0
    start = time.process_time()
    for x, label in zip(X, y):
        p = np.asarray(vw.predict(lines(x)), dtype=float)
        a = int(rng.choice(K, p=p / p.sum()))
        cost = 0.0 if a == label else 1.0
        mistakes += cost
        vw.learn(lines(x, (a, cost, p[a])))
    elapsed = time.process_time() - start
    vw.finish()
    best = elapsed if best is None else min(best, elapsed)
print(json.dumps([best, mistakes]))
"""


def digits():
    X, labels = datasets.load_digits_bandit(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(labels))[:N_ROUNDS]
    X = StandardScaler().fit_transform(np.asarray(X, dtype=float)[order])
    return X, np.unique(labels, return_inverse=True)[1][order]


def cpu_seconds(policy, X, labels, repeat):
    """Best CPU seconds of ``repeat`` runs of the online loop of
    ``estimator_policies.py`` (select, then partial_fit), and the mistakes."""
    online_loop = load_script("speed/estimator_policies.py").skbandit_loop
    best = None
    for _ in range(repeat):
        start = time.process_time()
        mistakes = online_loop(policy, X, labels)
        elapsed = time.process_time() - start
        best = elapsed if best is None else min(best, elapsed)
    return best, mistakes


def _row(name, seconds, mistakes):
    print(f"{name:30} | {seconds * 1000 / N_ROUNDS:20.2f} | {mistakes:.0f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--peers-python", default=None)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    args = parser.parse_args()
    print_machine()
    X, labels = digits()
    print(f"digits bandit: {N_ROUNDS} rounds, K = {K}, d = {X.shape[1]}")
    print("policy                         | CPU s / 1,000 rounds | mistakes")
    for name in args.cases:
        seconds, mistakes = cpu_seconds(CASES[name], X, labels, args.repeat)
        print(
            f"{name:30} | {seconds * 1000 / N_ROUNDS:20.2f} | {mistakes:.0f}",
            flush=True,
        )
    if args.peers_python is None:
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "digits.npz"
        np.savez(path, X=X, y=labels)
        for name, flags in VW_CASES.items():
            command = [args.peers_python, "-c", VW_SCRIPT, str(path), "", flags]
            out = subprocess.run(
                [*command, str(args.repeat)], capture_output=True, text=True, check=True
            )
            seconds, mistakes = json.loads(out.stdout.strip().splitlines()[-1])
            _row(name, seconds, mistakes)


if __name__ == "__main__":
    main()
