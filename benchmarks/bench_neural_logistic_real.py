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

Each finished run is cached under ``--cache`` (one ``.npz`` per problem, policy,
configuration and seed), so an interrupted study resumes where it stopped; a
progress bar counts rounds (or events). One process, one torch thread, ``nice``
recommended. Example (the slice measured for the docs)::

    nice -n 10 python benchmarks/bench_neural_logistic_real.py classification \\
        --datasets mushroom shuttle magic phoneme --seeds 0 1 2
    nice -n 10 python benchmarks/bench_neural_logistic_real.py obd --seeds 0 1 2

The data loaders read ``$SKBANDIT_DATA`` (or ``--data-home``) for the files that
no package installs here (shuttle's ``Shuttle.rda``, Fashion-MNIST's idx files).
"""
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import functools
import hashlib
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _neural_logistic_common import (  # noqa: E402
    NAMES,
    classification_run,
    paper_policies,
    pool_14x14,
    random_category_codes,
    scale_features,
)

from skbandit.datasets import (  # noqa: E402
    CLASSIFICATION_LOADERS,
    make_open_bandit_replay,
)
from skbandit.datasets._loaders import _keel_frame  # noqa: E402
from skbandit.evaluation import online_replay  # noqa: E402

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


def cpu_name():
    """The CPU's model name (Linux), else what ``platform`` knows."""
    with open("/proc/cpuinfo") as f:
        names = [line.split(":", 1)[1].strip() for line in f if "model name" in line]
    return names[0] if names else platform.processor()


def load_problem(name, seed, data_home):
    """``(X, y)`` of a classification problem, preprocessed as the paper does."""
    if name == "mushroom":
        frame = _keel_frame("mushroom", data_home)
        X = random_category_codes(frame.iloc[:, :-1], seed)
        y = frame.iloc[:, -1].astype(str).str.strip().to_numpy()
    else:
        X, y = CLASSIFICATION_LOADERS[name](data_home=data_home, return_X_y=True)
        if name == "fashion_mnist":
            X = pool_14x14(X)
    _, y = np.unique(y, return_inverse=True)
    return scale_features(np.asarray(X, np.float64)).astype(np.float32), y


def run_tag(name, policy):
    """A cache name from the parameters the policy received: configurations that
    give a policy the same parameters share its runs (Logistic-UCB-1 and ECOLog do
    not see ``m``, ECOLog not ``kappa``; the tests check their runs are the same)."""
    params = sorted((k, repr(v)) for k, v in policy.get_params(deep=False).items())
    digest = hashlib.sha1(repr(params).encode()).hexdigest()[:10]
    return f"{name}_{digest}"


def cached(path, compute):
    """The cached array at ``path``, or ``compute()`` saved there."""
    if path.is_file():
        return np.load(path)["value"]
    value = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, value=value)
    return value


def run_classification(args):
    rows = []
    for name in args.datasets:
        try:
            load_problem(name, 0, args.data_home)
        except (ImportError, FileNotFoundError) as exc:
            print(f"{name}: skipped ({exc})")
            continue
        finals = {}
        for seed in args.seeds:
            X, y = load_problem(name, seed, args.data_home)
            policies = paper_policies(
                seed=seed, names=args.policies, n_actions=int(y.max()) + 1, nu=args.nu
            )
            for policy_name, policy in policies.items():
                tag = run_tag(policy_name, policy)
                path = (
                    args.cache
                    / "classification"
                    / name
                    / f"{tag}_T{args.rounds}_s{seed}.npz"
                )
                desc = f"{name} {policy_name} seed {seed}"
                with tqdm(
                    total=args.rounds, desc=desc, leave=False, disable=args.quiet
                ) as bar:
                    curve = cached(
                        path,
                        functools.partial(
                            classification_run,
                            policy,
                            X,
                            y,
                            args.rounds,
                            seed,
                            progress=bar.update,
                        ),
                    )
                finals.setdefault(policy_name, []).append(curve[-1])
        rows.append((name, finals))
    print_table("final cumulative regret (mistakes)", rows, args)


def run_obd(args):
    try:
        replay = make_open_bandit_replay(data_home=args.data_home)
    except FileNotFoundError as exc:
        print(f"obd: skipped ({exc})")
        return
    rows = []
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
                tag = run_tag(policy_name, policy)
                path = args.cache / "obd" / f"{tag}_A{args.accepted}_s{seed}.npz"
                desc = f"obd {config} {policy_name} seed {seed}"
                with tqdm(
                    total=len(logged), desc=desc, leave=False, disable=args.quiet
                ) as bar:
                    run = functools.partial(
                        online_replay,
                        policy,
                        X,
                        logged,
                        rewards,
                        n_accepted=args.accepted,
                        progress=bar.update,
                    )
                    clicks = cached(path, lambda run=run: run().rewards)
                finals.setdefault(policy_name, []).append(clicks.mean())
        rows.append((config, finals))
    print_table("final CTR over the accepted events", rows, args, fmt="{:.4f}")


def print_table(title, rows, args, fmt="{:.1f}"):
    present = [n for n in NAMES if any(n in finals for _, finals in rows)]
    print()
    print(f"# {title}: mean +- standard error over seeds {args.seeds}")
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
            v = np.asarray(finals.get(name, []), float)
            if v.size == 0:
                cells.append("")
                continue
            se = v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else float("nan")
            cells.append(f"{fmt.format(v.mean())} +- {fmt.format(se)}")
        print(f"| {problem} | " + " | ".join(cells) + " |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problem", choices=("classification", "obd"))
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument(
        "--configs", nargs="+", default=list(OBD_CONFIGS), choices=list(OBD_CONFIGS)
    )
    parser.add_argument("--policies", nargs="+", default=list(NAMES), choices=NAMES)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--accepted", type=int, default=2000)
    parser.add_argument("--cache", type=Path, default=Path("results/neural_logistic"))
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
    torch.set_num_threads(1)
    start = time.perf_counter()
    if args.problem == "classification":
        run_classification(args)
    else:
        run_obd(args)
    print(f"# wall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
