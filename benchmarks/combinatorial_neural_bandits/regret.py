"""Experiments 1 and 2 of "Combinatorial Neural Bandits" (Hwang, Chai, Oh, ICML 2023).

The synthetic top-K semi-bandit of the paper's section 5
(:class:`~skbandit.environments.TopKBandit`): every round shows N = 20 contexts uniform
on the unit sphere of R^d, arm ``i`` scores ``h(x_i) + 0.01 N(0, 1)``, a slate of
K = 4 arms earns the sum of its scores and every chosen score is observed.

* Experiment 1 (the paper's Figure 1): d = 80, h1 = a^T x (T = 2000),
  h2 = (a^T x)^2 (T = 2000), h3 = cos(pi a^T x) (T = 4000).
* Experiment 2 (Figure 2): h2 with d = 40 (T = 2000), 80 (T = 2000), 120 (T = 4000).

Policies: CN-UCB, CN-TS (M = 10) and CN-TS(M = 1). The regret is the expected one
(eq. 3: top-K sum of ``h`` minus the slate's), cumulated; ``a`` is drawn per seed.

Modes (``--mode``):

``code``
    what the authors' runs did, mapped onto our parameters: PyTorch's
    initialisation without biases (``init="uniform"``), no
    penalty gradient (``anchor_penalty=False``), ``Z_0 = lambda m I`` on ``g`` (the
    same ``Z`` as theirs, ``lambda I`` on ``g / sqrt(m)``: ``alpha = 100``),
    ``beta = 1``; TS with ``sample_std="nu2_sigma2"`` and ``nu = 0.1`` (their
    ``sigma^2 = lambda g^T Z^{-1} g / m`` with ``lambda = 1``, ``nu = 1``); SGD at
    0.01 on the summed loss, 100 steps every 10 rounds on the last 100 rounds.
``paper``
    the paper's network and eq. (4): ``init="ntk"``, ``anchor_penalty=True``,
    ``alpha = 1``, ``sample_std="nu_sigma"``, with ``--beta``/``--nu`` (tuned: the
    paper's values are for the other parameterisation), same schedule,
    ``reduction="mean"`` at ``learning_rate=0.01``.

Every finished run is cached as one small JSON file under the tracked folder
``benchmarks/results/combinatorial/`` (final regret, the curve every 50 rounds, its CPU
time), one file per (panel, policy, mode, covariance, seed): a sweep resumes, sessions
accumulate seeds, and ``--table-only`` prints the table from the cache alone (every
cached seed). The panel h2, d = 80 belongs to both experiments and is run once. Runs::

    # Experiment 1, full Z (the paper's), 10 seeds -- hours on one core
    python benchmarks/combinatorial_neural_bandits/regret.py --experiment 1 --seeds 10
    # the subsets of docs/papers/combinatorial_neural_bandits.md
    python benchmarks/combinatorial_neural_bandits/regret.py --experiment 1 --seeds 10 \
        --covariance diag
    python benchmarks/combinatorial_neural_bandits/regret.py --experiment 1 --seeds 3 \
        --horizon-fraction 0.25
    # one problem (that of seed 0) for ten network initialisations
    python benchmarks/combinatorial_neural_bandits/regret.py --experiment 1 --panels 1 \
        --policies CN-UCB --seeds 10 --covariance diag --env-seed 0
    # the table of whatever the cache holds
    python benchmarks/combinatorial_neural_bandits/regret.py --experiment 1 \
        --covariance diag --table-only
"""
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from skbandit.environments import TopKBandit
from skbandit.policies import CNTS, CNUCB

RESULTS = Path(__file__).resolve().parents[1] / "results" / "combinatorial"
#: Rounds between two stored points of a cached regret curve.
CURVE_STEP = 50
#: (h, d, T) of each panel.
EXPERIMENTS = {
    "1": [("linear", 80, 2000), ("quadratic", 80, 2000), ("cosine_pi", 80, 4000)],
    "2": [("quadratic", 40, 2000), ("quadratic", 80, 2000), ("quadratic", 120, 4000)],
}
NAMES = {"linear": "h1", "quadratic": "h2", "cosine_pi": "h3"}
POLICIES = ("CN-UCB", "CN-TS", "CN-TS(M=1)")
#: The authors' saved arrays (mean +- std over 20 runs at T), as the paper's
#: figures show them.
OFFICIAL = {
    ("h1", 80): ("29.6 +- 3.1", "30.6 +- 2.6", "33.0 +- 2.6"),
    ("h2", 80): ("90.6 +- 15.2 (median 84.2)", "88.1 +- 8.4 (median 88.3)",
                 "94.3 +- 14.2 (median 91.0)"),
    ("h3", 80): ("509.3 +- 49.4", "538.7 +- 90.8", "556.6 +- 89.0"),
    ("h2", 40): ("63.7 +- 18.6", "62.5 +- 18.6", "62.1 +- 9.7"),
    ("h2", 120): ("174.0 +- 14.9", "165.1 +- 16.0", "169.6 +- 9.8"),
}  # fmt: skip
#: ... and at T / 4 (Experiment 1; the note's table of the arrays).
OFFICIAL_QUARTER = {
    ("h1", 80): ("21.7 +- 2.9", "21.8 +- 2.4", "23.3 +- 2.3"),
    ("h2", 80): ("46.6 +- 3.6", "47.6 +- 2.3", "45.8 +- 2.7"),
    ("h3", 80): ("218.4 +- 6.6", "220.0 +- 5.1", "219.8 +- 6.2"),
}


def make_policy(name, args, K):
    """The policy of ``name`` under ``args.mode``, on the experiments' schedule."""
    common = dict(
        slate_size=K,
        hidden_layer_sizes=(100,),
        standardize=False,  # the paper's inputs, as given
        covariance=args.covariance,
        train_every=10,
        n_steps=100,
        batch_size=None,  # full batches, as the experiments
        max_buffer_size=100 * K,
        learning_rate=0.01,
    )
    if args.mode == "code":
        common.update(
            init="uniform", anchor_penalty=False, alpha=100.0, reduction="sum"
        )
        ts = dict(nu=0.1, sample_std="nu2_sigma2")
        ucb = dict(beta=1.0)
    else:
        common.update(init="ntk", anchor_penalty=True, alpha=1.0, reduction="mean")
        ts = dict(nu=args.nu, sample_std="nu_sigma")
        ucb = dict(beta=args.beta)
    if name == "CN-UCB":
        return CNUCB(**common, **ucb)
    return CNTS(**common, **ts, n_draws=10 if name == "CN-TS" else 1)


def run_key(args, name, h, d, T, seed):
    tag = f"{args.mode}-{args.covariance}"
    if args.mode == "paper":
        tag += f"-b{args.beta:g}-nu{args.nu:g}"
    if args.env_seed is not None:
        tag += f"-env{args.env_seed}"
    slug = name.replace("(M=1)", "-M1")  # CN-TS(M=1): no brackets in file names
    return f"{tag}-{NAMES[h]}-d{d}-T{T}-{slug}-s{seed}"


def run_one(args, name, h, d, T_full, T, seed):
    """Run one (panel, policy, seed) unless cached; the cache file's record."""
    path = RESULTS / (run_key(args, name, h, d, T, seed) + ".json")
    if path.exists():
        return json.loads(path.read_text())
    env = TopKBandit(h, n_actions=20, n_features=d, slate_size=4, noise=0.01)
    env.reset(seed if args.env_seed is None else args.env_seed)
    policy = make_policy(name, args, 4).set_params(random_state=seed)
    regret = np.empty(T)
    start, cpu = time.perf_counter(), time.process_time()
    for t in range(T):
        X = env.contexts(1)
        slate = policy.select(X)
        regret[t] = env.regret(slate)[0]
        policy.partial_fit(X, slate, env.rewards(slate))
    curve = np.cumsum(regret)
    record = {
        "experiment": args.experiment,
        "h": NAMES[h],
        "d": d,
        "T": T,
        "T_full": T_full,
        "policy": name,
        "mode": args.mode,
        "covariance": args.covariance,
        "beta": args.beta if args.mode == "paper" else None,
        "nu": args.nu if args.mode == "paper" else None,
        "seed": seed,
        "env_seed": args.env_seed,
        "final_regret": float(curve[-1]),
        "curve_step": CURVE_STEP,
        "curve": [round(float(v), 4) for v in curve[CURVE_STEP - 1 :: CURVE_STEP]],
        "cpu_seconds": round(time.process_time() - cpu, 1),
        "wall_seconds": round(time.perf_counter() - start, 1),
        "threads": args.threads,
        "torch": torch.__version__,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(path)  # atomic: an interrupted run leaves no half file
    return record


def load_cache(args):
    """Every cached record of this mode and covariance."""
    records = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))]
    keep = []
    for r in records:
        if r["mode"] != args.mode or r["covariance"] != args.covariance:
            continue
        if args.mode == "paper" and (r["beta"], r["nu"]) != (args.beta, args.nu):
            continue
        if r.get("env_seed") != args.env_seed:
            continue
        keep.append(r)
    return keep


def summarise(args, panels):
    """The table of the cache alone, beside the official numbers."""
    records = load_cache(args)
    print()
    print(f"{'panel':<16} {'policy':<11} {'t':>5} {'seeds':>5} {'mean +- std':>15} "
          f"{'median':>7} {'[min, max]':>16}   official at t (20 runs)")  # fmt: skip
    for h, d, T_full in panels:
        horizons = sorted(
            {r["T"] for r in records if (r["h"], r["d"]) == (NAMES[h], d)},
            reverse=True,
        )
        for T in horizons:
            for name in args.policies:
                final = np.array(
                    [
                        r["final_regret"]
                        for r in records
                        if (r["h"], r["d"], r["T"], r["policy"])
                        == (NAMES[h], d, T, name)
                    ]
                )
                if not final.size:
                    continue
                column = POLICIES.index(name)
                official = OFFICIAL.get((NAMES[h], d), ("-",) * 3)[column]
                if 4 * T == T_full and (NAMES[h], d) in OFFICIAL_QUARTER:
                    official = OFFICIAL_QUARTER[(NAMES[h], d)][column]
                elif T != T_full:
                    official += f" (at T = {T_full})"
                print(
                    f"{NAMES[h] + f', d = {d}':<16} {name:<11} {T:>5} "
                    f"{len(final):>5} {final.mean():7.1f} +- {final.std():5.1f} "
                    f"{np.median(final):7.1f} "
                    f"[{final.min():6.1f}, {final.max():6.1f}]   {official}"
                )


def parse_args(argv=None):
    """The options of a run (``argv``, or the command line's)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", choices=sorted(EXPERIMENTS), default="1")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--mode", choices=["code", "paper"], default="code")
    parser.add_argument("--covariance", choices=["full", "diag"], default="full")
    parser.add_argument("--beta", type=float, default=0.1, help="CN-UCB, paper mode")
    parser.add_argument("--nu", type=float, default=0.1, help="CN-TS, paper mode")
    parser.add_argument("--policies", nargs="+", choices=POLICIES, default=POLICIES)
    parser.add_argument("--panels", nargs="+", type=int, default=None,
                        help="indices (0, 1, 2) of the panels to run")  # fmt: skip
    parser.add_argument(
        "--horizon-fraction", type=float, default=1.0, help="run T * this rounds"
    )
    parser.add_argument(
        "--env-seed",
        type=int,
        default=None,
        help="one problem (a, contexts, noise) for every seed, as the authors' runs "
        "share one a; by default each seed draws its own",
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--table-only",
        "--summary-only",
        action="store_true",
        help="print the table of the cache, run nothing",
    )
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    panels = EXPERIMENTS[args.experiment]
    if args.panels is not None:
        panels = [panels[i] for i in args.panels]
    print(f"command : {' '.join(['python', *sys.argv])}")
    print(
        f"machine : {platform.platform()}, {platform.processor() or 'cpu'}, "
        f"{os.cpu_count()} cores, torch {torch.__version__}, {args.threads} thread(s)"
    )
    print(
        f"setting : mode={args.mode}, covariance={args.covariance}, N = 20, K = 4, "
        f"m = 100, noise 0.01"
        + ("" if args.table_only else f", seeds {args.first_seed}..{args.seeds - 1}")
        + ("" if args.env_seed is None else f", problem of seed {args.env_seed}")
    )
    if not args.table_only:
        jobs = [
            (name, h, d, T, int(round(T * args.horizon_fraction)), seed)
            for seed in range(args.first_seed, args.seeds)
            for h, d, T in panels
            for name in args.policies
        ]
        for job in tqdm(jobs, desc="runs"):
            run_one(args, *job)
    summarise(args, panels)
    return 0


if __name__ == "__main__":
    sys.exit(main())
