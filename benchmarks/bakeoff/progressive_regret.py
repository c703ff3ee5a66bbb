"""A contextual bandit bake-off: skbandit's policies on scikit-learn models against
Vowpal Wabbit's and contextualbandits' exploration, on classification data sets.

In the spirit of Bietti, Agarwal and Langford, "A Contextual Bandit Bake-off" (JMLR
2021): each data set is a bandit whose arms are its classes; a round shows one row,
the policy picks a class and observes reward 1 if it is the right one, else 0, and the
score is the **progressive** number of mistakes (online, one round at a time: select,
then learn). Every policy sees the same rows in the same order per seed (a fixed
permutation of the data set, features standard-scaled). Each policy's key parameter
is tuned on a grid on seed 0, as the bake-off does, and the chosen point alone is
rerun on the other seeds; the tables report its mean and standard deviation over
the seeds run.

Problems: digits, magic, letter, phoneme, satimage and marketing (those that install
offline: scikit-learn's digits and the KEEL copies of ``scripts/setup.sh``),
and two nonlinear synthetic classifications (``quadratic``: the class maximising
``x^T A_k x``; ``absolute``: the class maximising ``|a_k^T x|``, d = 10, K = 5; a
linear classifier reaches 37 % and 35 % accuracy on them, gradient boosting 70 %;
``--ceilings`` prints what each reward model reaches with full information). They
run over T = 3,000 rounds (``--n-rounds 3000``): at 1,000 the nonlinear models have
seen too few rows per arm. The generator draws the rows before the arms'
parameters, so T = 1,000 and T = 3,000 are two draws of the same law.

The peers run in their own environment (never skbandit dependencies)::

    python -m venv /tmp/peers
    /tmp/peers/bin/pip install vowpalwabbit contextualbandits
    python benchmarks/bakeoff/progressive_regret.py \
        --peers-python /tmp/peers/bin/python \
        --problems digits magic letter phoneme satimage marketing
    python benchmarks/bakeoff/progressive_regret.py \
        --peers-python /tmp/peers/bin/python \
        --problems quadratic absolute --n-rounds 3000

Every finished run is one tracked JSON file under ``benchmarks/results/bakeoff/``;
a rerun reads it. ``--table-only`` prints the tables from the cache.
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
from typing import NamedTuple

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
from sklearn.linear_model import Ridge, SGDRegressor
from sklearn.neural_network import MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from skbandit import datasets
from skbandit.policies import FALCON, BootstrappedTS, LinUCB, NeuralUCB, SquareCB

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir))
from common.machine import print_machine  # noqa: E402

CACHE = Path(__file__).resolve().parents[1] / "results" / "bakeoff"

REAL = {
    "digits": datasets.load_digits_bandit,
    "magic": datasets.load_magic,
    "letter": datasets.load_letter,
    "phoneme": datasets.load_phoneme,
    "satimage": datasets.load_satimage,
    "marketing": datasets.load_marketing,
}
SYNTHETIC = ("quadratic", "absolute")
NONLINEAR_PROBLEMS = SYNTHETIC
#: Models built on the synthetic problems' known form (a degree-2 polynomial): on
#: those the claims also name the best policy without them.
FORM_MATCHED = ("FALCON-poly2",)


def synthetic(name, n_rows, seed, n_features=10, n_actions=5):
    """Rows and the class of each: the argmax over the arms of a nonlinear score."""
    rng = np.random.default_rng(10_000 + seed)
    X = rng.normal(size=(n_rows, n_features))
    if name == "quadratic":
        A = rng.normal(size=(n_actions, n_features, n_features))
        scores = np.einsum("ni,kij,nj->nk", X, A + A.transpose(0, 2, 1), X)
    else:  # the class whose direction is the most aligned with x, up to its sign
        a = rng.normal(size=(n_actions, n_features)) / np.sqrt(n_features)
        scores = np.abs(X @ a.T)
    return X, scores.argmax(axis=1), n_actions


def problem(name, n_rounds, seed):
    """Standard-scaled rows in the seed's order, their labels, and the arm count."""
    if name in SYNTHETIC:
        X, labels, n_actions = synthetic(name, n_rounds, seed)
    else:
        X, labels = REAL[name](return_X_y=True)
        classes, labels = np.unique(labels, return_inverse=True)
        n_actions = len(classes)
        order = np.random.default_rng(seed).permutation(len(labels))[:n_rounds]
        X, labels = np.asarray(X, dtype=float)[order], labels[order]
    return StandardScaler().fit_transform(X), labels, n_actions


def _hgb():
    return HistGradientBoostingRegressor(max_iter=50)


def _forest():
    return RandomForestRegressor(n_estimators=30, min_samples_leaf=3, n_jobs=1)


def _poly_ridge():
    # Degree 2 is the quadratic synthetic's form and makes ``absolute`` monotone in a
    # quadratic: a model that suits the problem, named as such in the guide.
    return make_pipeline(PolynomialFeatures(2), StandardScaler(), Ridge(alpha=10.0))


def _sgd():
    # SquareCB's default model when the cached runs were made; its default is now
    # the random-feature ridge, so the runs' model is named, not left to the default.
    return SGDRegressor(learning_rate="constant", eta0=0.05)


def _mlp(seed):
    # One row per partial_fit: Adam's default step of 1e-3 barely moves in a pass.
    return MLPRegressor(hidden_layer_sizes=(32,), learning_rate_init=0.01,
                        random_state=seed)  # fmt: skip


#: skbandit's policies: a factory of (grid value, seed), and the key parameter's grid.
SKBANDIT = {
    "FALCON-HGB": (
        lambda v, s: FALCON(estimator=_hgb(), gamma_scale=v, random_state=s),
        [1.0, 3.0, 10.0, 30.0, 100.0, 300.0],
    ),
    "FALCON-forest": (
        lambda v, s: FALCON(estimator=_forest(), gamma_scale=v, random_state=s),
        [1.0, 3.0, 10.0, 30.0, 100.0, 300.0],
    ),
    "FALCON-ridge": (
        lambda v, s: FALCON(estimator=Ridge(), gamma_scale=v, random_state=s),
        [1.0, 3.0, 10.0, 30.0, 100.0, 300.0],
    ),
    "FALCON-poly2": (
        lambda v, s: FALCON(estimator=_poly_ridge(), gamma_scale=v, random_state=s),
        [10.0, 30.0, 100.0, 300.0],
    ),
    "SquareCB-SGD": (
        lambda v, s: SquareCB(estimator=_sgd(), gamma_scale=v, random_state=s),
        [10.0, 100.0, 1000.0],
    ),
    "SquareCB-MLP": (
        lambda v, s: SquareCB(estimator=_mlp(s), gamma_scale=v, random_state=s),
        [10.0, 100.0, 1000.0],
    ),
    # Ridge() refit on the doubling schedule: BootstrappedTS's default when the
    # cached runs were made (they were filed as "BootstrappedTS-SGD", a misnomer).
    "BootstrappedTS-ridge": (
        lambda v, s: BootstrappedTS(estimator=Ridge(), n_models=int(v), random_state=s),
        [3, 10],
    ),
    "LinUCB": (lambda v, s: LinUCB(beta=v, random_state=s), [0.1, 1.0]),
    "NeuralUCB": (
        # the schedule of the cached runs: 100 full-batch steps over the whole
        # history, every 20 rounds (before the flat-cost defaults)
        lambda v, s: NeuralUCB(
            beta=v,
            **{**NeuralUCB.PAPER_SCHEDULE, "train_every": 20},
            random_state=s,
        ),
        [0.1],
    ),
}
#: The library default of each skbandit policy's key parameter (read, not copied).
DEFAULTS = {
    name: {
        "FALCON": FALCON().gamma_scale,
        "SquareCB": SquareCB().gamma_scale,
        "BootstrappedTS": BootstrappedTS().n_models,
        "LinUCB": LinUCB().beta,
        "NeuralUCB": NeuralUCB().beta,
    }[name.split("-")[0]]
    for name in SKBANDIT
}
#: The peers: grids of VW's exploration parameters and contextualbandits' settings.
PEERS = {
    "vw-squarecb": [1.0, 10.0, 100.0, 1000.0],
    "vw-bag": [2, 4, 8],
    "vw-cover": [2, 4, 8],
    "vw-epsilon": [0.02, 0.05, 0.1],
    "cb-BootstrappedTS": [10],
    "cb-AdaptiveGreedy": [0.9997],
}
#: Every policy's grid, skbandit's and the peers'.
GRIDS = {**{name: grid for name, (_, grid) in SKBANDIT.items()}, **PEERS}
ESTIMATOR_POLICIES = tuple(
    name
    for name in SKBANDIT
    if name.split("-")[0] in ("FALCON", "SquareCB", "BootstrappedTS")
)


def run_skbandit(name, value, X, labels, n_actions, seed):
    """Pulled arms' rewards and seconds of one online run, one round at a time."""
    policy = SKBANDIT[name][0](value, seed).set_params(n_actions=n_actions)
    rewards = np.empty(len(labels))
    start = time.perf_counter()
    for t in range(len(labels)):
        x = X[t : t + 1]
        a = policy.select(x)
        rewards[t] = float(a[0] == labels[t])
        policy.partial_fit(x, a, rewards[t : t + 1])
    return rewards, time.perf_counter() - start


def run_peer(name, value, X, labels, n_actions, seed, python):
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "rows.npz")
        np.savez(data, X=X, labels=labels, n_actions=n_actions)
        script = os.path.join(os.path.dirname(__file__), "peers.py")
        out = subprocess.run(
            [python, script, data, name, str(value), str(seed)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
    record = json.loads(out.stdout.strip().splitlines()[-1])
    return np.asarray(record["rewards"]), record["seconds"]


def cache_path(problem_name, policy, value, seed, n_rounds):
    return CACHE / problem_name / f"T{n_rounds}" / policy / f"{value:g}_seed{seed}.json"


def run_one(problem_name, policy, value, seed, n_rounds, peers_python=None):
    """Run (or read) one cached run; returns its path, or None if a peer is missing."""
    path = cache_path(problem_name, policy, value, seed, n_rounds)
    if path.exists():
        return path
    X, labels, n_actions = problem(problem_name, n_rounds, seed)
    if policy in SKBANDIT:
        rewards, seconds = run_skbandit(policy, value, X, labels, n_actions, seed)
    elif peers_python is None:
        return None
    else:
        rewards, seconds = run_peer(policy, value, X, labels, n_actions, seed,
                                    peers_python)  # fmt: skip
    curve = np.cumsum(1.0 - rewards)
    step = max(len(curve) // 20, 1)  # 20 points of the progressive curve
    record = {
        "problem": problem_name, "policy": policy, "value": value, "seed": seed,
        "n_rounds": len(labels), "mistakes": float(curve[-1]), "seconds": seconds,
        "curve": curve[step - 1 :: step].tolist(),
    }  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return path


class Point(NamedTuple):
    """A policy's best grid point on one problem."""

    mean: float  # progressive mistakes, mean over the seeds run at this point
    std: float  # their standard deviation over those seeds (ddof 0)
    seconds: float  # seconds of one run, mean over those seeds
    speed: float  # rounds per second over those runs
    value: float  # the grid value
    n_seeds: int
    n_tried: int  # grid points run on the tuning seed
    tuned: float  # mistakes on the tuning seed: what picks a point, and a family's best


def _record(problem_name, policy, value, seed, n_rounds):
    path = cache_path(problem_name, policy, value, seed, n_rounds)
    return json.loads(path.read_text()) if path.exists() else None


def best_points(problem_name, n_rounds, seeds):
    """Per policy, its :class:`Point`: the key parameter is tuned on the first seed
    over the grid points run on it (all of the grid or a part, ``n_tried``), then
    the chosen point is reported over every seed cached for it. Only the tuning
    seed picks the point: the other seeds measure it free of the selection's bias."""
    tuning, table = seeds[0], {}
    for policy, grid in GRIDS.items():
        tried = {
            value: record["mistakes"]
            for value in grid
            if (record := _record(problem_name, policy, value, tuning, n_rounds))
        }
        if not tried:
            continue
        value = min(tried, key=tried.get)
        runs = [_record(problem_name, policy, value, s, n_rounds) for s in seeds]
        runs = [r for r in runs if r is not None]
        mistakes = np.array([r["mistakes"] for r in runs])
        seconds = np.array([r["seconds"] for r in runs])
        speed = sum(r["n_rounds"] for r in runs) / seconds.sum()
        table[policy] = Point(mistakes.mean(), mistakes.std(), seconds.mean(), speed,
                              value, len(runs), len(tried), tried[value])  # fmt: skip
    return table


def print_problem(name, table, n_rounds, tuning_seed):
    """One problem's table, best policy first; ``run`` counts the grid points run
    on the tuning seed, ``default`` is the tuning seed's mistakes at the library
    default (``-`` where that run is not cached)."""
    print(
        f"\n{name}\n  {'policy':<20} {'mistakes':>16} {'seconds':>8} {'rounds/s':>9}"
        f"  {'value':<7} run  seeds  default"
    )
    for policy, point in sorted(table.items(), key=lambda kv: kv[1].mean):
        grid = f"{point.n_tried}/{len(GRIDS[policy])}"
        default = policy in DEFAULTS and _record(
            name, policy, DEFAULTS[policy], tuning_seed, n_rounds
        )
        default = f"{default['mistakes']:.0f}" if default else "-"
        print(
            f"  {policy:<20} {point.mean:9.1f} ± {point.std:5.1f} {point.seconds:8.1f} "
            f"{point.speed:9.0f}  {point.value:<7g} {grid:<4} {point.n_seeds:<6} "
            f"{default:>7}"
        )


def print_claims(tables):
    """The issue's two claims: the best estimator-based policy against VW's best
    exploration (every problem) and against LinUCB (the nonlinear problems)."""
    print("\nclaims (mean ± standard deviation over the seeds run)")
    for name, table in tables.items():
        ours = [p for p in ESTIMATOR_POLICIES if p in table]
        if not ours:
            continue
        # A family's best policy is picked on the tuning seed, as its grid point.
        best = min(ours, key=lambda p: table[p].tuned)
        rivals = [p for p in PEERS if p.startswith("vw-") and p in table]
        rivals = [min(rivals, key=lambda p: table[p].tuned)] if rivals else []
        if name in NONLINEAR_PROBLEMS and "LinUCB" in table:
            rivals.append("LinUCB")
        for rival in rivals:
            _print_claim(name, table, best, rival)
        generic = [p for p in ours if p not in FORM_MATCHED]
        if name in NONLINEAR_PROBLEMS and best in FORM_MATCHED and generic:
            generic_best = min(generic, key=lambda p: table[p].tuned)
            for rival in rivals:
                _print_claim(name, table, generic_best, rival)


def _print_claim(name, table, ours, rival):
    verdict = "beats" if table[ours].mean < table[rival].mean else "does not beat"
    print(
        f"  {name:<10} {ours} ({table[ours].mean:.1f} ± {table[ours].std:.1f}) "
        f"{verdict} {rival} ({table[rival].mean:.1f} ± {table[rival].std:.1f})"
    )


def _cell(table, policies, label=True):
    """The best of ``policies`` in ``table`` (picked on the tuning seed) as a markdown
    cell: mean ± sd (seeds), the policy if ``label``, and its grid value."""
    policies = [p for p in policies if p in table]
    if not policies:
        return "not run"
    best = min(policies, key=lambda p: table[p].tuned)
    point = table[best]
    name = f" {best}" if label else ""
    return (
        f"{point.mean:.0f} ± {point.std:.0f} ({point.n_seeds}){name} at {point.value:g}"
    )


def _columns(name):
    """The guide's columns: (header, policies, whether to name the best)."""
    vw = [p for p in PEERS if p.startswith("vw-")]
    cb = [p for p in PEERS if p.startswith("cb-")]
    if name in NONLINEAR_PROBLEMS:  # the form-matched model apart from the others
        ours = [
            ("FALCON-poly2 (form-matched)", ["FALCON-poly2"], False),
            ("SquareCB-MLP", ["SquareCB-MLP"], False),
            ("FALCON-HGB", ["FALCON-HGB"], False),
        ]
    else:
        ours = [("best skbandit on a scikit-learn model", ESTIMATOR_POLICIES, True)]
    return [
        *ours,
        ("best VW", vw, True),
        ("best contextualbandits", cb, True),
        ("LinUCB", ["LinUCB"], False),
        ("NeuralUCB", ["NeuralUCB"], False),
    ]


def print_markdown(tables):
    """The guide's summary, one row per problem: mean ± sd (seeds) at the best point,
    then each policy's seconds per run and rounds per second over the problems."""
    for nonlinear in (False, True):
        names = [n for n in tables if (n in NONLINEAR_PROBLEMS) == nonlinear]
        if not names:
            continue
        columns = _columns(names[0])
        print("\n| data set (K) | " + " | ".join(c[0] for c in columns) + " |")
        print("|---" * (len(columns) + 1) + "|")
        for name in names:
            n_actions = problem(name, 1, 0)[2]
            cells = [
                _cell(tables[name], policies, label) for _, policies, label in columns
            ]
            print(f"| {name} ({n_actions}) | " + " | ".join(cells) + " |")
    print("\n| policy | seconds per run | rounds per second |\n|---|---|---|")
    for policy in GRIDS:
        points = [t[policy] for t in tables.values() if policy in t]
        if points:
            seconds = [p.seconds for p in points]
            speeds = [p.speed for p in points]
            print(
                f"| {policy} | {min(seconds):.1f}–{max(seconds):.1f} "
                f"| {min(speeds):.0f}–{max(speeds):.0f} |"
            )


def print_tables(problems, n_rounds, seeds, markdown=False):
    print(
        f"progressive mistakes, T = {n_rounds}: each policy's key parameter tuned on "
        f"seed {seeds[0]}, then mean ± standard deviation over the seeds run there"
    )
    tables = {name: best_points(name, n_rounds, seeds) for name in problems}
    tables = {name: table for name, table in tables.items() if table}
    for name, table in tables.items():
        print_problem(name, table, n_rounds, seeds[0])
    print_claims(tables)
    if markdown:
        print_markdown(tables)


#: Reward models of the nonlinear problems' full-information check (``--ceilings``).
CEILING_MODELS = {
    "ridge": Ridge,
    "poly2-ridge": _poly_ridge,
    "HGB": _hgb,
    "forest": _forest,
    "MLP": lambda: MLPRegressor(hidden_layer_sizes=(32,), max_iter=500, random_state=0),
}


def full_information_accuracy(name, make_model, n_train, seed=0, n_test=2000):
    """How often the arm whose model predicts the highest reward is the right class,
    each arm's model fit on that arm's reward on *every* training row (the full
    information a bandit never gets): what a policy's model can reach at best."""
    X, labels, n_actions = synthetic(name, n_train + n_test, seed)
    train, test = slice(0, n_train), slice(n_train, None)
    predictions = np.column_stack(
        [
            make_model()
            .fit(X[train], (labels[train] == a).astype(float))
            .predict(X[test])
            for a in range(n_actions)
        ]
    )
    return float(np.mean(predictions.argmax(axis=1) == labels[test]))


def print_ceilings(sizes=(600, 3000)):
    print("full-information accuracy of the per-arm reward models (2,000 test rows)")
    for name in SYNTHETIC:
        for model, make_model in CEILING_MODELS.items():
            row = [full_information_accuracy(name, make_model, n) for n in sizes]
            cells = "  ".join(
                f"{n} rows {acc:.2f}" for n, acc in zip(sizes, row, strict=True)
            )
            print(f"  {name:<10} {model:<12} {cells}", flush=True)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", nargs="+", default=[*REAL, *SYNTHETIC])
    parser.add_argument("--policies", nargs="+", default=[*SKBANDIT, *PEERS])
    parser.add_argument("--n-rounds", type=int, default=1000)
    parser.add_argument("--n-seeds", type=int, default=3)
    parser.add_argument(
        "--peers-python",
        default=None,
        help="Python of the peers' environment (VW, contextualbandits)",
    )
    parser.add_argument("--table-only", action="store_true")
    parser.add_argument(
        "--markdown", action="store_true", help="also print the guide's summary table"
    )
    parser.add_argument(
        "--ceilings",
        action="store_true",
        help="print the nonlinear problems' full-information accuracies and exit",
    )
    return parser.parse_args(argv)


def run_study(problems, policies, n_rounds, seeds, peers_python):
    """The grid on the first seed, then each policy's best point on the others:
    problem by problem, so an interrupted study still has full tables."""
    for name in problems:
        for policy in policies:
            for value in GRIDS[policy]:
                run_one(name, policy, value, seeds[0], n_rounds, peers_python)
        table = best_points(name, n_rounds, seeds[:1])
        for seed in seeds[1:]:
            for policy in policies:
                if policy in table:
                    value = table[policy].value
                    run_one(name, policy, value, seed, n_rounds, peers_python)
        print(f"{name} done", flush=True)


def main(argv=None):
    args = parse_args(argv)
    print_machine()
    if args.ceilings:
        print_ceilings()
        return
    seeds = range(args.n_seeds)
    if not args.table_only:
        run_study(args.problems, args.policies, args.n_rounds, seeds, args.peers_python)
    print_tables(args.problems, args.n_rounds, seeds, args.markdown)


if __name__ == "__main__":
    main()
