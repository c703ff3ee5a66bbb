"""The real-data experiments of "Neural logistic bandits" (Bae and Lee, ICML 2025,
arXiv:2505.02069): the classification bandits of its Fig. 2 and Fig. 5, and the Open
Bandit Dataset replay of its Table 2.

``classification``
    Each data set as a binary-reward bandit (the paper's section 7 and appendix A):
    features min-max scaled to [-1, 1] per feature, the rows of a run drawn without
    replacement (``--rounds``, the paper's T = 2000), one row per round, reward 1 for
    the true class, regret = number of mistakes. Shared contexts: the linear policies
    fit one block per arm and the networks read the disjoint encoding, which is the
    paper's ``[0, .., x, .., 0]``. mushroom: each category coded by a value drawn from
    U(-1, 1) per run (the paper's encoding, on KEEL's 5644 complete rows); shuttle:
    mlbench's 58000 x 9, 7 classes; magic, phoneme: KEEL; Fashion-MNIST stands in for
    MNIST (not installable offline), pooled to 14 x 14 = 196 (the paper's "7 x 7 ...
    196-dim" read as 14 x 14). banknote is not installable offline and is left out.
``obd``
    The replay of Table 2 on the Open Bandit Dataset sample bundled with ``obp``
    0.4.1 (``random/all``, 10000 events): K = 5 reduced action sets, 42 features per
    (event, item) (:func:`skbandit.datasets.make_open_bandit_replay`), the events
    walked through in an order shuffled per run, rejection replay
    (:func:`skbandit.evaluation.online_replay`) up to ``--accepted`` accepted events
    (the paper's 2000), final CTR over the accepted events. Configurations: the
    paper's sweeps ``m`` in {20, 50, 100}, ``kappa`` in {50, 100, 200}, ``S`` in {1,
    10, 100} around (m, kappa, S) = (20, 50, 1).

Each finished run is a small JSON file under ``benchmarks/results/neural_logistic/``
(``classification/<data set>/`` and ``obd/``; tracked in git, ``--cache`` for
another folder): one per problem, policy, parameters and seed, so a later session
continues the study where this one stopped. Past ``--budget`` CPU minutes no new run
starts; ``--table-only`` prints the tables from the cache alone, each cell with its
number of seeds. A progress bar counts rounds (or events). One process, one torch
thread, ``nice`` recommended. Example (the slice measured for the docs)::

    nice -n 15 python benchmarks/neural_logistic_bandits/real_data.py classification \\
        --datasets shuttle mushroom magic phoneme --seeds 0 1 2 3 --budget 20
    nice -n 15 python benchmarks/neural_logistic_bandits/real_data.py classification \\
        --datasets fashion_mnist --seeds 0 1 --budget 8
    nice -n 15 python benchmarks/neural_logistic_bandits/real_data.py obd \\
        --seeds 0 1 2 3 4
    python benchmarks/neural_logistic_bandits/real_data.py classification \\
        --table-only --seeds 0 1 2 3

The data loaders read ``$SKBANDIT_DATA`` (or ``--data-home``) for the files that
no package installs here (shuttle's ``Shuttle.rda``, Fashion-MNIST's idx files).
"""
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import os
import shlex
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch
from _experiments import (  # beside this script
    CACHE,
    NAMES,
    classification_run,
    cpu_name,
    mean_se,
    paired_verdict,
    paper_policies,
    params_digest,
    random_category_codes,
    read_records,
    run_record,
    scale_features,
    thin_curve,
)
from tqdm import tqdm

from skbandit.datasets import (
    CLASSIFICATION_LOADERS,
    load_mushroom,
    make_open_bandit_replay,
)
from skbandit.evaluation import online_replay

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common.images import pool_14x14  # noqa: E402

DATASETS = ("mushroom", "shuttle", "magic", "phoneme", "fashion_mnist")
#: The paper's Table 2 configurations (m, kappa, S).
OBD_CONFIGS = {
    "m=20": (20, 50.0, 1.0),
    "m=50": (50, 50.0, 1.0),
    "m=100": (100, 50.0, 1.0),
    "kappa=100": (20, 100.0, 1.0),
    "kappa=200": (20, 200.0, 1.0),
    "S=10": (20, 50.0, 10.0),
    "S=100": (20, 50.0, 100.0),
}


def load_problem(name, seed, data_home):
    """``(X, y)`` of a classification problem, preprocessed as the paper does."""
    if name == "mushroom":
        categories, y = load_mushroom(
            data_home=data_home, return_X_y=True, one_hot=False
        )
        X = random_category_codes(categories, seed)
    else:
        X, y = CLASSIFICATION_LOADERS[name](data_home=data_home, return_X_y=True)
        if name == "fashion_mnist":
            X = pool_14x14(X)
    _, y = np.unique(y, return_inverse=True)
    return scale_features(np.asarray(X, np.float64)).astype(np.float32), y


def run_classification(args):
    rows, paired = [], {}
    for name in args.datasets:
        try:
            load_problem(name, 0, args.data_home)
        except (ImportError, FileNotFoundError) as exc:
            print(f"{name}: skipped ({exc})")
            continue
        finals, by_seed = {}, defaultdict(dict)
        for seed in args.seeds:
            X, y = load_problem(name, seed, args.data_home)
            policies = paper_policies(
                seed=seed, names=args.policies, n_actions=int(y.max()) + 1, nu=args.nu
            )
            for policy_name, policy in policies.items():
                digest = params_digest(policy)
                path = (
                    args.cache
                    / "classification"
                    / name
                    / f"{policy_name}_{digest}_T{args.rounds}_s{seed}.json"
                )
                if not path.is_file() and time.process_time() > args.budget * 60:
                    continue  # out of budget: only what is cached
                desc = f"{name} {policy_name} seed {seed}"
                with tqdm(
                    total=args.rounds, desc=desc, leave=False, disable=args.quiet
                ) as bar:

                    def compute(policy=policy, bar=bar, X=X, y=y, seed=seed):
                        curve = classification_run(
                            policy, X, y, args.rounds, seed, progress=bar.update
                        )
                        return dict(
                            final_regret=float(curve[-1]),
                            curve_every=20,
                            curve=thin_curve(curve, 20),
                        )

                    rec = run_record(
                        path,
                        compute,
                        problem=name,
                        policy=policy_name,
                        nu=policy.get_params()["nu"],
                        seed=seed,
                        n_rounds=args.rounds,
                        digest=digest,
                    )
                finals.setdefault(policy_name, []).append(rec["final_regret"])
                by_seed[policy_name][seed] = rec["final_regret"]
        rows.append((name, finals))
        paired[name] = by_seed
    print_table("final cumulative regret (mistakes)", rows, args)
    print_ordering(paired)


#: The paper's claims of Figs. 2 and 5 as paired comparisons (first minus second).
CLAIMS = (
    ("NeuralLog-UCB-1", "Logistic-UCB-1"),
    ("NeuralLog-UCB-1", "ada-OFU-ECOLog"),
    ("NeuralLog-UCB-2", "Logistic-UCB-1"),
    ("NeuralLog-UCB-2", "ada-OFU-ECOLog"),
    ("NeuralLog-UCB-2", "NCBF-UCB"),
    ("NeuralLog-UCB-2", "NeuralLog-UCB-1"),
)


def print_ordering(paired):
    """Per data set, the paired difference of final regrets (same rows and seed) for
    each of ``CLAIMS``: mean +- standard error and the verdict of
    :func:`paired_verdict` ("holds": the first makes fewer mistakes)."""
    names = [n for n in paired if paired[n]]
    if not names:
        return
    print("\n# the paper's ordering: paired differences over the seeds both ran")
    print("| first minus second | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for a, b in CLAIMS:
        cells = []
        for name in names:
            m, se, n, verdict = paired_verdict(
                paired[name].get(a, {}), paired[name].get(b, {})
            )
            cells.append(f"{m:+.1f} +- {se:.1f} {verdict}" if n else "")
        print(f"| {a} - {b} | " + " | ".join(cells) + " |")


def run_obd(args):
    try:
        replay = make_open_bandit_replay(data_home=args.data_home)
    except FileNotFoundError as exc:
        print(f"obd: skipped ({exc})")
        return
    rows, clicks = [], {}
    for config in args.configs:
        m, kappa, S = OBD_CONFIGS[config]
        finals = {}
        for seed in args.seeds:
            order = np.random.RandomState(seed).permutation(len(replay.logged))
            X = replay.X[order].astype(np.float32)
            logged, rewards = replay.logged[order], replay.rewards[order]
            policies = paper_policies(
                m=m, kappa=kappa, S=S, seed=seed, names=args.policies, nu=args.nu
            )
            for policy_name, policy in policies.items():
                digest = params_digest(policy)
                path = (
                    args.cache / "obd" / f"{policy_name}_{digest}_A{args.accepted}"
                    f"_s{seed}.json"
                )
                if not path.is_file() and time.process_time() > args.budget * 60:
                    continue
                desc = f"obd {config} {policy_name} seed {seed}"
                with tqdm(
                    total=len(logged), desc=desc, leave=False, disable=args.quiet
                ) as bar:

                    def compute(
                        policy=policy, bar=bar, X=X, logged=logged, rewards=rewards
                    ):
                        clicks = online_replay(
                            policy,
                            X,
                            logged,
                            rewards,
                            n_accepted=args.accepted,
                            progress=bar.update,
                        ).rewards
                        return dict(
                            accepted=int(clicks.size),
                            clicks=int(clicks.sum()),
                            ctr=float(clicks.mean()),
                        )

                    rec = run_record(
                        path,
                        compute,
                        problem=f"obd {config}",
                        policy=policy_name,
                        nu=policy.get_params()["nu"],
                        seed=seed,
                        accepted=args.accepted,
                        digest=digest,
                    )
                finals.setdefault(policy_name, []).append(rec["ctr"])
                clicks.setdefault((config, policy_name), []).append(rec["clicks"])
        rows.append((config, finals))
    print_table(
        "final CTR over the accepted events", rows, args, fmt="{:.4f}", clicks=clicks
    )


def print_table(title, rows, args, fmt="{:.1f}", clicks=None):
    """Markdown table, a cell per (problem, policy): mean +- standard error and the
    number of seeds; with ``clicks`` (OBD), each seed's clicks instead of the seeds."""
    present = [n for n in NAMES if any(n in finals for _, finals in rows)]
    print()
    print(f"# {title}: mean +- standard error (seeds) over seeds {args.seeds}")
    print(
        f"# machine: {cpu_name()}, {os.cpu_count()} cores, torch {torch.__version__}, "
        "1 thread"
    )
    print(f"# command: python {' '.join(shlex.quote(a) for a in sys.argv)}")
    print("| problem | " + " | ".join(present) + " |")
    print("|---" * (len(present) + 1) + "|")
    for problem, finals in rows:
        cells = []
        for name in present:
            v = finals.get(name, [])
            if not v:
                cells.append("")
                continue
            m, se = mean_se(v)
            if clicks is None:
                note = f"({len(v)})"
            else:
                note = f"({'+'.join(map(str, clicks[problem, name]))} clicks)"
            cells.append(f"{fmt.format(m)} +- {fmt.format(se)} {note}")
        print(f"| {problem} | " + " | ".join(cells) + " |")


def print_tuning(args):
    """The cached classification runs at ``--seeds`` and ``--rounds``, per policy and
    ``nu``: the mean final regret over ``--datasets`` (only the ``nu`` that every data
    set ran); the smallest in bold. Runs nothing."""
    runs = defaultdict(dict)
    for rec in read_records(args.cache / "classification"):
        if rec["seed"] in args.seeds and rec["n_rounds"] == args.rounds:
            key = rec["policy"], rec["nu"]
            runs[key].setdefault(rec["problem"], []).append(rec["final_regret"])
    print(
        f"# mean final regret over {' '.join(args.datasets)}, seeds {args.seeds}, "
        f"T = {args.rounds}"
    )
    for name in args.policies:
        table = {
            nu: [np.mean(by[d]) for d in args.datasets]
            for (n, nu), by in sorted(runs.items(), key=lambda kv: kv[0][1])
            if n == name and all(d in by for d in args.datasets)
        }
        best = min(table, key=lambda nu: np.mean(table[nu])) if table else None
        cells = ", ".join(
            f"{'**' if nu == best else ''}{nu:g}: {np.mean(v):.1f}"
            f"{'**' if nu == best else ''} ({' / '.join(f'{x:.0f}' for x in v)})"
            for nu, v in table.items()
        )
        print(f"- {name}: {cells}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problem", choices=("classification", "obd", "tuning"))
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument(
        "--configs", nargs="+", default=list(OBD_CONFIGS), choices=list(OBD_CONFIGS)
    )
    parser.add_argument("--policies", nargs="+", default=list(NAMES), choices=NAMES)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--accepted", type=int, default=2000)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument(
        "--budget",
        type=float,
        default=20.0,
        help="CPU minutes: past them only cached runs are read",
    )
    parser.add_argument(
        "--table-only", action="store_true", help="run nothing: the cached runs"
    )
    parser.add_argument("--data-home", default=None)
    parser.add_argument(
        "--nu",
        nargs="+",
        default=[],
        metavar="NAME=VALUE",
        help="override a policy's width multiplier, e.g. NCBF-UCB=0.1",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    args.nu = {k: float(v) for k, v in (item.split("=") for item in args.nu)}
    if args.table_only:
        args.budget = -1.0
    torch.set_num_threads(1)
    start = time.perf_counter()
    if args.problem == "classification":
        run_classification(args)
    elif args.problem == "tuning":
        print_tuning(args)
    else:
        run_obd(args)
    print(f"# wall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
