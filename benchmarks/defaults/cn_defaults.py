"""CN-UCB and CN-TS at their defaults and at the paper's settings, on slate problems
smaller than the paper's, beside CombLinUCB, CombLinTS and a random slate.

Hwang, Chai and Oh, "Combinatorial Neural Bandits" (ICML 2023), section 5: every round
shows N contexts on the unit sphere of R^d, arm ``i`` scores ``h(x_i)`` plus noise, a
slate of K arms earns the sum of its scores and every chosen score is observed. Here
N = 20, d = 10 (the paper's d = 80), K = 4, on the paper's nonlinear form ``h3 =
cos(pi a^T x)`` (``cosine``) and ``h2 = (a^T x)^2`` (``quadratic``), and its linear one
``h1 = a^T x`` (``linear``).

Settings of CN-UCB and CN-TS:

- ``defaults``: the class's defaults (online standardisation of the contexts, the
  flat-cost schedule, ``learning_rate=0.3`` on the mean loss);
- ``paper``: ``CNUCB(**CNUCB.PAPER_SCHEDULE)``, the experiments' schedule and step
  (100 full-batch steps over the whole history every 10 rounds, at 0.01);
- ``paper-code``: the authors' runs, as the paper's benchmark runs them
  (``benchmarks/combinatorial_neural_bandits/regret.py --mode code``): that schedule on
  the last 100 rounds, their code's objective and network (``reduction="sum",
  anchor_penalty=False, init="uniform", alpha=100``; CN-TS's ``nu=0.1,
  sample_std="nu2_sigma2"``) on the contexts as given (``standardize=False``: the
  experiments' contexts lie on the unit sphere);
- ``--extra name=value ...`` adds a setting (the defaults but those values), to find
  what holds the defaults back.

CombLinUCB and CombLinTS run at their defaults. ``random`` is a uniformly random
slate's expected regret on the same rounds (the mean over all slates, exactly).

Every finished run is one JSON file under ``--cache`` (default: the tracked
``benchmarks/results/cn_defaults``) holding the policy's full parameters, the regret,
the curve every 50 rounds, the CPU seconds and the library's commit. A cached run
whose parameters differ from what the setting builds today (a default changed) is
stale: it is run again, so the table is always of today's defaults.

Run::

    nice python benchmarks/defaults/cn_defaults.py [--n-rounds 500] [--n-seeds 5]
        [--problems cosine quadratic linear] [--settings defaults paper]
        [--extra learning_rate=1.0 hidden_layer_sizes=(200,)] [--table-only]
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import sys
import warnings
from argparse import Namespace
from pathlib import Path
from time import process_time

import numpy as np

from skbandit import policies
from skbandit.environments import TopKBandit
from skbandit.evaluation import simulate
from skbandit.exceptions import NumericalError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common import runs  # noqa: E402
from common.machine import print_machine  # noqa: E402
from common.scripts import load_script  # noqa: E402

CACHE = Path(__file__).resolve().parents[1] / "results" / "cn_defaults"
PROBLEMS = {
    "cosine": lambda: TopKBandit(
        "cosine_pi", n_actions=20, n_features=10, slate_size=4
    ),
    "quadratic": lambda: TopKBandit(
        "quadratic", n_actions=20, n_features=10, slate_size=4
    ),
    "linear": lambda: TopKBandit("linear", n_actions=20, n_features=10, slate_size=4),
}
NEURAL = ("CNUCB", "CNTS")
LINEAR = ("CombLinUCB", "CombLinTS")
SETTINGS = ("defaults", "paper", "paper-code")
CURVE_STEP = 50
#: The commit this process runs, read once at import.
COMMIT = runs.library_commit()


def setting_params(name, setting):
    """The parameters a setting gives the policy ``name`` (beside ``random_state``)."""
    if setting == "defaults":
        return {}
    if setting == "paper":
        return dict(getattr(policies, name).PAPER_SCHEDULE)
    if setting == "paper-code":
        return authors_runs(name)
    return runs.parse_setting(setting)  # an --extra "k=v,k2=v2"


def authors_runs(name):
    """The parameters, beside the defaults, of the paper's benchmark's ``code`` mode
    (full ``Z``) for slates of 4."""
    regret = load_script("combinatorial_neural_bandits/regret.py")
    label = {"CNUCB": "CN-UCB", "CNTS": "CN-TS"}[name]
    built = regret.make_policy(label, Namespace(mode="code", covariance="full"), 4)
    defaults = getattr(policies, name)().get_params()
    return {k: v for k, v in built.get_params().items() if v != defaults[k]}


def full_params(name, setting):
    """Every parameter of the policy a setting builds (a cached run's key)."""
    return runs.policy_params(getattr(policies, name), setting_params(name, setting))


def cache_path(cache, problem, name, setting, n_rounds, seed):
    return Path(cache) / problem / name / f"{setting}__T{n_rounds}__seed{seed}.json"


def random_slate_regret(problem, n_rounds, seed):
    """A uniformly random slate's expected cumulative regret on the seed's rounds:
    the top-K value minus K times the mean score, round by round."""
    env = PROBLEMS[problem]().reset(seed)
    total = np.zeros(n_rounds)
    for t in range(n_rounds):
        env.contexts(1)
        mean = env.expected_rewards.mean(axis=1)
        total[t] = (env.optimal_value() - env.slate_size * mean)[0]
    return np.cumsum(total)


def run_one(problem, name, setting, n_rounds, seed):
    """One online run: its JSON record."""
    import torch

    torch.set_num_threads(1)
    params = setting_params(name, setting)
    policy = getattr(policies, name)(random_state=seed, **params)
    start, error = process_time(), ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a halved step shows in the regret
            result = simulate(
                policy, PROBLEMS[problem](), n_rounds, random_state=seed, progress=False
            )
        curve = result.cumulative_regret
    except NumericalError as exc:
        curve, error = np.full(n_rounds, np.nan), str(exc)
    return {
        "policy": name, "problem": problem, "setting": setting, "seed": seed,
        "n_rounds": n_rounds, "params": full_params(name, setting),
        "regret": float(curve[-1]),
        "curve": curve[CURVE_STEP - 1 :: CURVE_STEP].tolist(),
        "cpu_seconds": round(process_time() - start, 2), "error": error,
        "commit": COMMIT,
    }  # fmt: skip


def run_or_load(cache, problem, name, setting, n_rounds, seed, table_only=False):
    """The run's record: cached if it is of today's parameters, else run now (or
    None with ``table_only``)."""
    path = cache_path(cache, problem, name, setting, n_rounds, seed)
    record = runs.current_record(path, full_params(name, setting))
    if record is None and not table_only:
        record = run_one(problem, name, setting, n_rounds, seed)
        runs.write_record(path, record)
        print(problem, name, setting, seed, f"{record['regret']:.1f}",
              record["cpu_seconds"], record["error"][:60], flush=True)  # fmt: skip
    return record


def summary(records, random, n_seeds):
    """``mean ± s.e. (ratio to random) CPU s`` of one cell, or "-"."""
    if not records:
        return "-"
    regrets = np.array([r["regret"] for r in records])
    if np.isnan(regrets).any():
        return f"diverged {int(np.isnan(regrets).sum())}/{len(regrets)}"
    se = regrets.std(ddof=1) / np.sqrt(len(regrets)) if len(regrets) > 1 else 0.0
    cpu = np.mean([r["cpu_seconds"] for r in records])
    seeds = f" (n={len(regrets)})" if len(regrets) < n_seeds else ""
    mean = regrets.mean()
    return f"{mean:.0f} ± {se:.0f} ({mean / random:.2f}) {cpu:.1f} s{seeds}"


def print_table(table, random, problems, n_rounds, n_seeds):
    print(
        f"\nmean cumulative regret at T = {n_rounds} ± s.e. over seeds 0-{n_seeds - 1} "
        "(ratio to a random slate) and CPU seconds per run"
    )
    print("| policy | setting | " + " | ".join(problems) + " |")
    print("|---|---|" + "---|" * len(problems))
    print(
        "| random slate | - | "
        + " | ".join(f"{random[p]:.0f}" for p in problems)
        + " |"
    )
    for (name, setting), cells in table.items():
        row = [summary(cells.get(p, []), random[p], n_seeds) for p in problems]
        print(f"| {name} | `{setting}` | " + " | ".join(row) + " |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rounds", type=int, default=500)
    parser.add_argument("--n-seeds", type=int, default=5)
    parser.add_argument("--problems", nargs="*", default=list(PROBLEMS))
    parser.add_argument("--settings", nargs="*", default=list(SETTINGS))
    parser.add_argument("--extra", nargs="*", default=[], help="k=v[,k2=v2] settings")
    parser.add_argument("--policies", nargs="*", default=[*NEURAL, *LINEAR])
    parser.add_argument("--cache", default=str(CACHE))
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args(argv)
    print_machine()
    T, seeds = args.n_rounds, range(args.n_seeds)
    random = {
        p: np.mean([random_slate_regret(p, T, s)[-1] for s in seeds])
        for p in args.problems
    }
    table = {}
    for name in args.policies:
        settings = [*args.settings, *args.extra] if name in NEURAL else ["defaults"]
        for setting in settings:
            for problem in args.problems:
                for seed in seeds:
                    record = run_or_load(
                        args.cache, problem, name, setting, T, seed, args.table_only
                    )
                    if record is not None:
                        table.setdefault((name, setting), {}).setdefault(
                            problem, []
                        ).append(record)
    print_table(table, random, args.problems, T, args.n_seeds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
