"""The regret and the CPU cost of the neural defaults' flat-cost schedule.

Every single-arm neural policy runs online (``simulate``, one row per round) twice
with its defaults: as they are (``train_every=10``, ``n_steps=50`` mini-batches of
``batch_size=64`` rows drawn from the latest ``max_buffer_size=1000``; the logistic
ones every 50 rounds, 100 steps) and on its paper's schedule (the class attribute
``PAPER_SCHEDULE``: full batches over the whole history, after every round; the
logistic ones every 50 rounds). Nothing else changes. Problems: scikit-learn's digits
(K = 10) and wine (K = 3), standard-scaled, as classification bandits (reward 1 for
the true class, so the regret counts mistakes).

The table gives the mean mistakes over the seeds, their ratio (defaults over
paper), and the mean CPU seconds per run of each.

Resumable: every finished run is one JSON file under ``--cache`` (default: the
tracked ``benchmarks/results/neural_schedule``), named by problem, policy, schedule,
horizon and seed; a rerun skips them. ``--table-only`` prints the cached runs.

Run::

    nice python benchmarks/defaults/neural_schedule.py [--n-seeds 2]
        [--rounds digits=500 wine=500] [--policies NeuralTS NeuralUCB]
        [--extra learning_rate=0.01 train_every=5] [--table-only]

``--extra`` runs further settings beside the two (the defaults but those values).
Every record holds the policy's full parameters and the library's commit; a cached
record whose parameters differ from what its schedule builds today (a default
changed) is stale and runs again; ``--table-only`` shows it, marked "stale".
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from time import process_time

import numpy as np
from sklearn.datasets import load_digits, load_wine
from sklearn.preprocessing import StandardScaler

from skbandit import policies
from skbandit.environments import ClassificationBandit
from skbandit.evaluation import simulate
from skbandit.exceptions import NumericalError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common.machine import print_machine  # noqa: E402
from common.runs import (  # noqa: E402
    current_record,
    library_commit,
    parse_setting,
    policy_params,
    write_record,
)

POLICIES = (
    "NeuralTS", "NeuralUCB", "NeuralEpsilonGreedy", "NeuralLinear",
    "NeuralBootstrap", "NeuralPHE", "NeuralES", "NeuralLogUCB", "NeuralLogTS",
    "NCBFUCB",
)  # fmt: skip
SCHEDULES = ("defaults", "paper")
ROUNDS = {"digits": 500, "wine": 500}
CACHE = Path(__file__).resolve().parents[1] / "results" / "neural_schedule"
#: The commit this process runs, read once at import.
COMMIT = library_commit()


def make_env(problem):
    X, y = (load_digits if problem == "digits" else load_wine)(return_X_y=True)
    X = X[:, X.std(axis=0) > 0]
    return ClassificationBandit(StandardScaler().fit_transform(X), y)


def schedule_params(name, schedule):
    """The parameters a schedule gives the policy ``name``: none for its defaults,
    its ``PAPER_SCHEDULE`` for the paper's, else an ``--extra`` ``"k=v,k2=v2"``."""
    if schedule == "defaults":
        return {}
    cls = getattr(policies, name)
    return dict(cls.PAPER_SCHEDULE) if schedule == "paper" else parse_setting(schedule)


def full_params(name, schedule):
    """Every parameter of the policy a schedule builds (a cached run's key)."""
    return policy_params(getattr(policies, name), schedule_params(name, schedule))


def run_one(name, schedule, env, n_rounds, seed):
    """``(mistakes or "diverged", CPU seconds)`` of one online run."""
    import torch

    torch.set_num_threads(1)
    cls = getattr(policies, name)
    params = schedule_params(name, schedule)
    start = process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # halved steps are counted in the regret
            result = simulate(
                cls(random_state=seed, **params),
                env,
                n_rounds,
                random_state=seed,
                progress=False,
            )
        regret = float(result.cumulative_regret[-1])
    except NumericalError:
        regret = "diverged"
    return regret, round(process_time() - start, 2)


def run_and_save(path, name, schedule, problem, envs, n_rounds, seed):
    """Run one configuration and write its JSON record, with the policy's full
    parameters and the library's commit (a record of other parameters is stale)."""
    regret, seconds = run_one(name, schedule, envs[problem], n_rounds, seed)
    record = {
        "policy": name, "problem": problem, "schedule": schedule,
        "n_rounds": n_rounds, "seed": seed, "regret": regret, "cpu_seconds": seconds,
        "params": full_params(name, schedule), "commit": COMMIT,
    }  # fmt: skip
    write_record(path, record)
    print(problem, name, schedule, seed, regret, seconds, flush=True)
    return record


def cache_path(cache, problem, name, schedule, n_rounds, seed):
    return Path(cache) / problem / name / f"{schedule}__T{n_rounds}__seed{seed}.json"


def print_table(records, problems, names):
    print(
        "\nmean mistakes over the seeds: defaults (flat-cost schedule) / paper "
        "schedule, their ratio; mean CPU seconds per run (defaults / paper)"
    )
    head = f"{'policy':<20}" + "".join(f"{p:>44}" for p in problems)
    print(head)
    print("-" * len(head))
    for name in names:
        cells = []
        for problem in problems:
            runs = {s: records.get((problem, name, s), []) for s in SCHEDULES}
            if not all(runs.values()):
                cells.append(f"{'-':>44}")
                continue
            # paired: the seeds both schedules ran
            seeds = set.intersection(*({r["seed"] for r in v} for v in runs.values()))
            mean = {}
            for s, v in runs.items():
                regrets = [r["regret"] for r in v if r["seed"] in seeds]
                ok = all(not isinstance(x, str) for x in regrets)
                mean[s] = (
                    (np.mean(regrets) if ok else "div"),
                    np.mean([r["cpu_seconds"] for r in v if r["seed"] in seeds]),
                )
            (d, dt), (p, pt) = mean["defaults"], mean["paper"]
            if isinstance(d, str) or isinstance(p, str):  # a run diverged
                text = f"{d} / {p} ({dt:.0f} / {pt:.0f} s) n={len(seeds)}"
            else:
                ratio = f"{d / p:.2f}x" if p else "-"
                text = (
                    f"{d:.0f} / {p:.0f} {ratio} ({dt:.0f} / {pt:.0f} s) n={len(seeds)}"
                )
            stale = any(r.get("stale") for v in runs.values() for r in v)
            cells.append(f"{text + (' stale' if stale else ''):>44}")
        print(f"{name:<20}" + "".join(cells))


def _extra_cell(mine, paper):
    """``mean (ratio to the paper's schedule on the same seeds) CPU s n=...``."""
    regrets = [r["regret"] for r in mine]
    if not mine or any(isinstance(x, str) for x in regrets):
        return "diverged" if mine else "-"
    base = [paper.get(r["seed"], "missing") for r in mine]
    ok = not any(isinstance(x, str) for x in base)
    ratio = f" ({np.mean(regrets) / np.mean(base):.2f})" if ok else ""
    cpu = np.mean([r["cpu_seconds"] for r in mine])
    return f"{np.mean(regrets):.0f}{ratio} {cpu:.1f} s n={len(mine)}"


def print_extra_table(records, problems, names, extras):
    """Each ``--extra`` setting beside the defaults: mean mistakes, their ratio to
    the paper's schedule on the same seeds, and the mean CPU seconds per run."""
    if not extras:
        return
    print("\n--extra settings: mean mistakes (ratio to the paper's schedule) CPU s")
    print("| policy | setting | " + " | ".join(problems) + " |")
    print("|---|---|" + "---|" * len(problems))
    for name in names:
        for extra in ["defaults", *extras]:
            cells = [
                _extra_cell(
                    records.get((problem, name, extra), []),
                    {r["seed"]: r["regret"]
                     for r in records.get((problem, name, "paper"), [])},
                )  # fmt: skip
                for problem in problems
            ]
            print(f"| {name} | `{extra}` | " + " | ".join(cells) + " |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-seeds", type=int, default=2)
    parser.add_argument(
        "--rounds",
        nargs="*",
        default=[f"{k}={v}" for k, v in ROUNDS.items()],
        help="problem=T pairs (digits, wine)",
    )
    parser.add_argument("--policies", nargs="*", default=list(POLICIES))
    parser.add_argument("--schedules", nargs="*", default=list(SCHEDULES))
    parser.add_argument(
        "--extra", nargs="*", default=[], help="k=v[,k2=v2] settings beside them"
    )
    parser.add_argument("--cache", default=str(CACHE))
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args(argv)
    print_machine()
    rounds = {k: int(v) for k, v in (item.split("=") for item in args.rounds)}
    envs = {p: make_env(p) for p in rounds}
    records = {}
    for name in args.policies:  # policy by policy: each finishes paired
        for problem, T in rounds.items():
            for schedule in [*args.schedules, *args.extra]:
                for seed in range(args.n_seeds):
                    path = cache_path(args.cache, problem, name, schedule, T, seed)
                    record = current_record(path, full_params(name, schedule))
                    if record is None and not args.table_only:
                        record = run_and_save(
                            path, name, schedule, problem, envs, T, seed
                        )
                    elif record is None and path.exists():  # shown, marked stale
                        record = {**json.loads(path.read_text()), "stale": True}
                    if record is not None:
                        records.setdefault((problem, name, schedule), []).append(record)
    print_table(records, list(rounds), args.policies)
    print_extra_table(records, list(rounds), args.policies, args.extra)
    print("\ncommand: python " + " ".join(sys.argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
