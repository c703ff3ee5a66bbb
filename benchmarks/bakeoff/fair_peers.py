"""The peers of the fair bake-off, run in their own environment (never skbandit
dependencies): Vowpal Wabbit in its action-dependent-features form, contextualbandits
and MABWiser, each at its defaults and at its documented best usage.

Run by ``fair_bakeoff.py`` with the peers' Python::

    python -m venv /tmp/peers
    /tmp/peers/bin/pip install vowpalwabbit contextualbandits mabwiser scikit-learn

It reads an ``.npz`` with ``X`` (n, d) raw rows, ``labels`` (n,) and ``n_actions``,
plays the named configurations one after the other on those rows (select, then learn
the pulled arm's reward: 1 for the right class), and prints one JSON line: per
configuration, the pulled arms' rewards and the seconds taken.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import json
import time

import numpy as np

#: Vowpal Wabbit's configurations. ``default`` is ``--cb_explore_adf`` alone (epsilon-
#: greedy at 0.05 on a linear model of the shared and the action features, no
#: interactions). The others cross the shared (``s``) and action (``a``) namespaces:
#: ``-quad`` ones quadratically only (``-q sa``, a linear model per action), the rest
#: also cubically (``-q sa --interactions ssa``, a quadratic model of the shared
#: features per action), the forms the bake-off of Bietti, Agarwal and Langford (2021)
#: runs, with each exploration at its defaults (bag and cover: their greedified and
#: no-uniform variants, that bake-off's best forms of each).
_EXPLORATION = {
    "epsilon": "",
    "bag": " --bag 4 --greedify",
    "cover": " --cover 4 --nounif",
    "squarecb": " --squarecb",
    "regcbopt": " --regcbopt",
}
VW_FLAGS = {
    "vw-default": "",
    **{f"vw-{k}": f"-q sa --interactions ssa{v}" for k, v in _EXPLORATION.items()},
    **{f"vw-{k}-quad": f"-q sa{v}" for k, v in _EXPLORATION.items()},
}


def vw_shared_line(x):
    """The shared context: one feature per nonzero coordinate, named ``x<j>``."""
    return "shared |s " + " ".join(f"x{j}:{v:.6g}" for j, v in enumerate(x) if v != 0)


def vw_adf_example(x, n_actions, label=None):
    """One multi-line ADF example: the shared line, then one line per action whose
    only feature is the action's indicator ``a<k>``. ``label`` is ``(action, cost,
    probability)`` of the pulled action, written before that action's features."""
    lines = [vw_shared_line(x)]
    for k in range(n_actions):
        head = ""
        if label is not None and label[0] == k:
            head = f"0:{label[1]:g}:{label[2]:.6g} "
        lines.append(f"{head}|a a{k}")
    return lines


def run_vw(flags, X, labels, n_actions, seed):
    """Pulled arms' rewards; the action is drawn from VW's PMF, cost = 1 - reward."""
    from vowpalwabbit import Workspace

    vw = Workspace(f"--cb_explore_adf {flags} --random_seed {seed} --quiet")
    rng = np.random.default_rng(seed)
    rewards = np.empty(len(labels))
    for t, (x, y) in enumerate(zip(X, labels, strict=True)):
        pmf = np.asarray(vw.predict(vw_adf_example(x, n_actions)), dtype=float)
        pmf /= pmf.sum()
        a = int(rng.choice(n_actions, p=pmf))
        rewards[t] = float(a == y)
        vw.learn(vw_adf_example(x, n_actions, (a, 1.0 - rewards[t], pmf[a])))
    vw.finish()
    return rewards


def _cb_policy(name, n_actions, seed):
    from contextualbandits.linreg import LinearRegression
    from contextualbandits.online import AdaptiveGreedy, LinUCB

    if name == "cb-LinUCB":  # its defaults: alpha=1, lambda_=1
        return LinUCB(nchoices=n_actions, random_state=seed + 1)
    # Its README's most promising method, on its exact online linear regression
    # (partial_fit equals fit), updated every round.
    base = LinearRegression(lambda_=1.0, fit_intercept=True, method="sm")
    return AdaptiveGreedy(base, nchoices=n_actions, batch_train=True,
                          random_state=seed + 1, njobs=1)  # fmt: skip


def play(X, labels, n_actions, seed, predict, learn):
    """Pulled arms' rewards, one round at a time: ``predict(row)`` picks the arm
    (uniformly at the first round, before any fit), then ``learn(first, row, arm,
    reward)`` learns it (``first``: a fit, else a partial fit)."""
    rng = np.random.default_rng(seed)
    rewards = np.empty(len(labels))
    for t, (x, y) in enumerate(zip(X, labels, strict=True)):
        row = x[None, :]
        a = int(predict(row)) if t else int(rng.integers(n_actions))
        rewards[t] = float(a == y)
        learn(t == 0, row, a, rewards[t : t + 1])
    return rewards


def run_contextualbandits(name, X, labels, n_actions, seed):
    policy = _cb_policy(name, n_actions, seed)

    def learn(first, row, a, reward):
        (policy.fit if first else policy.partial_fit)(row, np.array([a]), reward)

    return play(X, labels, n_actions, seed, lambda row: policy.predict(row)[0], learn)


#: MABWiser's configurations: LinUCB at its defaults; LinTS with its documented
#: feature scaling (``scale=True``) for raw features.
def _mab_policy(name, n_actions, seed):
    from mabwiser.mab import MAB, LearningPolicy

    learning = {
        "mab-LinUCB": LearningPolicy.LinUCB(),
        "mab-LinTS-scaled": LearningPolicy.LinTS(scale=True),
    }[name]
    return MAB(list(range(n_actions)), learning, seed=seed)


def run_mabwiser(name, X, labels, n_actions, seed):
    policy = _mab_policy(name, n_actions, seed)

    def learn(first, row, a, reward):
        (policy.fit if first else policy.partial_fit)([a], reward, row)

    return play(X, labels, n_actions, seed, policy.predict, learn)


def run_config(name, X, labels, n_actions, seed):
    if name in VW_FLAGS:
        return run_vw(VW_FLAGS[name], X, labels, n_actions, seed)
    if name.startswith("cb-"):
        return run_contextualbandits(name, X, labels, n_actions, seed)
    return run_mabwiser(name, X, labels, n_actions, seed)


def versions():
    from importlib.metadata import version

    return {p: version(p) for p in ("vowpalwabbit", "contextualbandits", "mabwiser")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data")
    parser.add_argument("seed", type=int)
    parser.add_argument("configs", nargs="+")
    args = parser.parse_args()
    with np.load(args.data) as data:
        X, labels, K = data["X"], data["labels"], int(data["n_actions"])
    out = {"versions": versions(), "runs": {}}
    for name in args.configs:
        start = time.process_time()
        rewards = run_config(name, X, labels, K, args.seed)
        seconds = time.process_time() - start
        out["runs"][name] = {
            "rewards": rewards.astype(int).tolist(),
            "seconds": seconds,
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
