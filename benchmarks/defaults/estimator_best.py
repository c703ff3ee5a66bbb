"""Is an estimator policy the best skbandit policy on a nonlinear problem? Every
skbandit policy that takes plain contexts, at its defaults, on the nonlinear problems,
T = 2,000: progressive mistakes, CPU seconds per 1,000 rounds, and the paired test of
the best policy against every other.

Problems (the fair bake-off's, ``benchmarks/bakeoff/fair_bakeoff.py``: raw rows in each
seed's order, one round at a time: ``select``, then ``partial_fit``): KEEL's ``ring``
(Breiman's ring norm, two Gaussians of different spreads, K = 2, d = 20) and ``banana``
(K = 2, d = 2, two interleaved curved clusters), where no linear score separates the
classes; the synthetic ``quadratic`` and ``absolute`` (K = 5, d = 10); KEEL's ``magic``
and ``phoneme`` (K = 2). The policies: every public policy of ``skbandit.policies``
except the slate policies (CombLinUCB, CombLinTS, CN-UCB, CN-TS: their arms are
slates), each built with ``random_state`` and ``n_actions`` only, and ``RandomPolicy``
as the floor. A run that raises stops there, as a user's loop would: its remaining
rounds count as mistakes and the table marks it with †.

"Best" is read two ways: the fewest mean mistakes, and a margin that holds on every
seed (fewer mistakes than every other policy on each seed), with the paired Z-test of
the bake-off (per-round 0/1 losses, pooled over the seeds, α = 0.05) against the
runner-up.

The runs of ``FALCON`` and ``BootstrappedTS`` at their current defaults are those of
``FALCON(RFF, gamma_scale=3)`` and ``BootstrappedTS(RFF)``, made before those became the
defaults and filed under both names (``copied_from``): the same computation, checked
bit for bit on ring's seed 0.

Every finished run is one JSON file under
``benchmarks/results/defaults/estimator_best/`` (its per-round rewards bit-packed, its
CPU seconds, the library commit it ran on); a rerun reads it, ``--table-only`` prints
the tables from that cache and ``--rerun`` runs the named policies again.

Run::

    OPENBLAS_NUM_THREADS=1 python benchmarks/defaults/estimator_best.py \\
        [--n-rounds 2000] [--seeds 0 1 2] [--problems ring banana ...] \\
        [--policies SquareCB KernelUCB ...] [--table-only] [--rerun NAME ...]
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import Ridge

from skbandit import policies
from skbandit.exceptions import NumericalError
from skbandit.policies import FALCON, BootstrappedTS
from skbandit.policies._core._online_ridge import OnlineRidge
from skbandit.policies._core._random_features import RandomFeatureRidge

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bakeoff"))
from _significance import paired_test  # noqa: E402
from common.machine import print_machine  # noqa: E402
from fair_bakeoff import SKBANDIT_COMMIT, pack, problem, unpack  # noqa: E402

CACHE = Path(__file__).resolve().parents[1] / "results" / "defaults" / "estimator_best"
PROBLEMS = ("ring", "banana", "quadratic", "absolute", "magic", "phoneme")
ESTIMATOR = ("SquareCB", "FALCON", "BootstrappedTS")
SLATE = ("CombLinUCB", "CombLinTS", "CNUCB", "CNTS")
#: Every policy of plain contexts at its defaults: the estimator family first.
DEFAULTS = (
    *ESTIMATOR,
    *sorted(set(policies.__all__) - set(ESTIMATOR) - set(SLATE)
            - {"optimistic_samples", "theoretical_n_draws"}),
)  # fmt: skip


def factory(name):
    """The policy of ``name`` at its defaults, a function of the seed."""
    return lambda seed: getattr(policies, name)(random_state=seed)


def _rff():
    return RandomFeatureRidge()


#: Candidate defaults of FALCON and BootstrappedTS (issue 33), run on ``--policies``
#: only: their former defaults by name (FALCON's ``Ridge()`` at ``gamma_scale=3``,
#: BootstrappedTS's exact online ridge), and the random-feature kernel ridge of
#: SquareCB's default (``standardize=True``: the online standardisation it needs).
VARIANTS = {
    "FALCON(Ridge, gamma_scale=3)": lambda s: FALCON(
        estimator=Ridge(), gamma_scale=3.0, random_state=s
    ),
    "FALCON(RFF, gamma_scale=3)": lambda s: FALCON(
        estimator=_rff(), standardize=True, gamma_scale=3.0, random_state=s
    ),
    "FALCON(RFF, gamma_scale=10)": lambda s: FALCON(
        estimator=_rff(), standardize=True, gamma_scale=10.0, random_state=s
    ),
    "FALCON(RFF, gamma_scale=30)": lambda s: FALCON(
        estimator=_rff(), standardize=True, gamma_scale=30.0, random_state=s
    ),
    "BootstrappedTS(OnlineRidge)": lambda s: BootstrappedTS(
        estimator=OnlineRidge(), random_state=s
    ),
    "BootstrappedTS(RFF)": lambda s: BootstrappedTS(
        estimator=_rff(), standardize=True, random_state=s
    ),
    "BootstrappedTS(RFF, n_components=100)": lambda s: BootstrappedTS(
        estimator=RandomFeatureRidge(100), standardize=True, random_state=s
    ),
}
POLICIES = {name: factory(name) for name in DEFAULTS} | VARIANTS


def play(policy, X, labels):
    """Per-round rewards, CPU seconds and the error (``None`` if none) of one online
    run; a raise stops the run, its remaining rounds counted as mistakes."""
    rewards = np.zeros(len(labels))
    start = time.process_time()
    for t in range(len(labels)):
        x = X[t : t + 1]
        try:
            action = policy.select(x)
            rewards[t] = float(action[0] == labels[t])
            policy.partial_fit(x, action, rewards[t : t + 1])
        except (NumericalError, ValueError, FloatingPointError) as exc:
            rewards[t:] = 0.0
            return rewards, time.process_time() - start, f"round {t}: {exc}"
    return rewards, time.process_time() - start, None


def cache_path(problem_name, policy, seed, n_rounds):
    safe = re.sub(r"[^A-Za-z0-9]+", "_", policy).strip("_")
    return CACHE / problem_name / f"T{n_rounds}" / f"{safe}_seed{seed}.json"


def run_one(problem_name, policy, seed, n_rounds, table_only=False, rerun=False):
    """The cached record of one run (with its per-round ``losses``), running it
    first unless ``table_only``; ``None`` when it is not cached and not run."""
    path = cache_path(problem_name, policy, seed, n_rounds)
    if rerun or not path.exists():
        if table_only:
            return None
        X, labels, n_actions = problem(problem_name, n_rounds, seed)
        model = POLICIES[policy](seed).set_params(n_actions=n_actions)
        rewards, seconds, error = play(model, X, labels)
        record = {
            "problem": problem_name, "policy": policy, "seed": seed,
            "n_rounds": len(labels), "mistakes": float(len(labels) - rewards.sum()),
            "cpu_seconds": round(seconds, 3), "library": SKBANDIT_COMMIT,
            "rewards": pack(rewards), "error": error,
        }  # fmt: skip
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record) + "\n")
    record = json.loads(path.read_text())
    record["losses"] = 1.0 - unpack(record["rewards"], record["n_rounds"])
    return record


def summarise(records):
    """Per policy: mean and standard deviation of the mistakes, CPU s per 1,000
    rounds, the per-seed mistakes and whether a run raised."""
    rows = {}
    for name, runs in records.items():
        mistakes = np.array([r["mistakes"] for r in runs])
        rows[name] = {
            "mean": mistakes.mean(), "sd": mistakes.std(), "seeds": mistakes,
            "cpu": np.mean([r["cpu_seconds"] * 1000 / r["n_rounds"] for r in runs]),
            "error": any(r["error"] for r in runs),
        }  # fmt: skip
    return rows


def best_verdict(records, rows):
    """The best policy by mean, whether it beats every other on every seed, and its
    paired test against the runner-up."""
    order = sorted(rows, key=lambda n: rows[n]["mean"])
    best, second = order[0], order[1]
    every_seed = all(
        np.all(rows[best]["seeds"] < rows[other]["seeds"]) for other in order[1:]
    )
    losses = {n: np.stack([r["losses"] for r in records[n]]) for n in (best, second)}
    return best, second, every_seed, paired_test(losses[best], losses[second])


def print_table(problem_name, records, n_rounds):
    """One problem's rows, best mean first, and the verdict on the best."""
    rows = summarise(records)
    print(f"\n{problem_name}, T = {n_rounds}")
    print(f"  {'policy':22s} {'mistakes':>15s} {'per seed':>18s} {'CPU s/1k':>9s}")
    for name in sorted(rows, key=lambda n: rows[n]["mean"]):
        row = rows[name]
        seeds = " ".join(f"{m:5.0f}" for m in row["seeds"])
        mark = " †" if row["error"] else ""
        print(f"  {name:22s} {row['mean']:7.1f} ± {row['sd']:5.1f} {seeds:>18s} "
              f"{row['cpu']:9.2f}{mark}")  # fmt: skip
    best, second, every_seed, test = best_verdict(records, rows)
    print(f"  best: {best}; fewer mistakes than every other on every seed: "
          f"{every_seed}; against {second}: {-test.diff * n_rounds:+.1f} mistakes "
          f"per run, z = {test.z:.2f}, p = {test.p:.2g}")  # fmt: skip


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rounds", type=int, default=2000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--policies", nargs="+", default=list(DEFAULTS))
    parser.add_argument("--table-only", action="store_true")
    parser.add_argument("--rerun", nargs="+", default=[], metavar="POLICY")
    args = parser.parse_args(argv)
    print_machine()
    print("mistakes: mean ± standard deviation over the seeds, then each seed's; CPU")
    print("seconds of select and partial_fit per 1,000 rounds (process time)")
    for problem_name in args.problems:
        records = {
            policy: runs
            for policy in args.policies
            if (runs := _cached_runs(problem_name, policy, args))
        }
        if len(records) > 1:
            print_table(problem_name, records, args.n_rounds)


def _cached_runs(problem_name, policy, args):
    """The policy's records on the problem, one per seed run or cached."""
    again = policy in args.rerun
    runs = (
        run_one(problem_name, policy, seed, args.n_rounds, args.table_only, again)
        for seed in args.seeds
    )
    return [record for record in runs if record is not None]


if __name__ == "__main__":
    main()
