"""The real-data benchmark of Neural Thompson Sampling and of ensemble sampling.

Experiment I of Zhang, Zhou, Li and Gu ("Neural Thompson Sampling", ICLR 2021,
arXiv:2010.00827) and Fig. 5 of Sun, Wang and Xu ("Provable Anytime Ensemble
Sampling Algorithms in Nonlinear Contextual Bandits", arXiv:2510.10730) run the same
kind of bandit: a labelled data set, one row per round, one arm per class, reward 1
for the true class, so that the regret counts mistakes. Rows are l2-normalised
(Zhang et al., App. A.1), shown in an order shuffled per seed, each once before any
repeats (``ClassificationBandit``); contexts are shared and every model is the
disjoint one (the linear and kernel policies fit one block per arm, the networks
apply the disjoint encoding block by block); the neural policies see ``[x; x] /
sqrt 2`` (``MirrorNormalizer``), on which ``f(x; theta_0) = 0``.

Data (``skbandit.datasets``, offline): mushroom, shuttle, magic, Fashion-MNIST for
MNIST (pooled to 14 x 14 = 196 pixels), satimage for covertype and marketing (made
binary at >= $50k) for adult. The loaders read ``$SKBANDIT_DATA`` for the files no
package installs here (``Shuttle.rda``, Fashion-MNIST's idx files).
Policies: the 8 of Zhang et al. (LinUCB, LinTS, KernelUCB, KernelTS, NeuralUCB,
NeuralTS, neural epsilon-greedy, BootstrapNN) and the ensemble-sampling family
(LinES, GLMES, NeuralES, NeuralPHE). Each policy's key parameter is chosen on the
paper's grid by the best mean total regret (``--grid paper``); ``--grid small``
keeps three values of the wide grids. The networks are Zhang et al.'s (one hidden
layer of 100, 100 full-batch gradient steps per round on the whole history, mean
loss) and freeze after ``--max-train-rounds`` rounds (1000 as in Zhang et al.; the
kernel policies keep their first 1000 rows), for every neural policy.

The study is resumable: every finished (data set, policy, parameters, seed) run is
a small JSON file under ``--cache`` (default ``benchmarks/results/real_data/``,
tracked by git, so that the study accumulates over sessions on a fresh clone), and a
rerun of the same command skips it; ``--table-only`` prints the table of the cache.
Run the whole study (days on 2 CPU cores; ``--device cuda`` when a GPU is lent)::

    .venv/bin/python benchmarks/neural_thompson_sampling/real_data.py

and a slice, e.g. the one in the docs::

    .venv/bin/python benchmarks/neural_thompson_sampling/real_data.py \\
        --datasets mushroom --n-rounds 2000 --n-seeds 2 --grid small

The table gives the mean and standard deviation over seeds of each policy's total
regret at its best parameter, and its seconds per run; below it each paper's
claims are checked on these numbers.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy import stats
from sklearn.preprocessing import normalize
from tqdm.auto import tqdm

from skbandit import policies as P
from skbandit.datasets import (
    load_fashion_mnist,
    load_magic,
    load_marketing,
    load_mushroom,
    load_satimage,
    load_shuttle,
)
from skbandit.environments import ClassificationBandit
from skbandit.evaluation import simulate
from skbandit.pipeline import make_bandit_pipeline
from skbandit.preprocessing import MirrorNormalizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common.images import pool_14x14  # noqa: E402
from common.machine import machine  # noqa: E402

#: One JSON file per finished run, tracked by git (the study accumulates).
CACHE = Path(__file__).resolve().parents[1] / "results" / "real_data"


def load_fashion_mnist_14x14(*, return_X_y=True, **kw):
    """Fashion-MNIST with each image averaged in 2 x 2 blocks (196 pixels), as the
    neural logistic benchmark reads it: a quarter of the 784 inputs keeps the
    networks (K = 10 blocks of the disjoint encoding) and GLM-ES's per-arm Newton
    solve affordable on a CPU."""
    X, y = load_fashion_mnist(return_X_y=True, **kw)
    return pool_14x14(X), y


#: name -> (loader, the data set it stands in for)
DATASETS = {
    "mushroom": (load_mushroom, "mushroom"),
    "shuttle": (load_shuttle, "shuttle"),
    "magic": (load_magic, "magic telescope"),
    "fashion_mnist": (load_fashion_mnist_14x14, "MNIST"),
    "satimage": (load_satimage, "covertype"),
    "marketing": (lambda **kw: load_marketing(binary=True, **kw), "adult"),
}

LINEAR = ("LinUCB", "LinTS", "LinES", "GLMES")
KERNEL = ("KernelUCB", "KernelTS")
NEURAL = (
    "NeuralUCB",
    "NeuralTS",
    "NeuralEpsilonGreedy",
    "NeuralBootstrap",
    "NeuralES",
    "NeuralPHE",
)
PAPER_000 = (
    "LinUCB",
    "LinTS",
    "KernelUCB",
    "KernelTS",
    "NeuralUCB",
    "NeuralTS",
    "NeuralEpsilonGreedy",
    "NeuralBootstrap",
)
PAPER_001 = ("LinES", "GLMES", "NeuralES", "NeuralPHE")
POLICIES = PAPER_000 + PAPER_001

#: The key parameter of each policy and the paper's grid (Zhang et al. section 5.1
#: for theirs; Sun, Wang and Xu use one setting on these data, section F.2).
GRIDS = {
    "LinUCB": ("beta", [1.0, 0.1, 0.01]),
    "LinTS": ("nu", [1.0, 0.1, 0.01]),
    "KernelUCB": ("beta", [1.0, 0.1, 0.01]),
    "KernelTS": ("nu", [1.0, 0.1, 0.01]),
    "NeuralUCB": ("beta", [1e-1, 1e-2, 1e-3, 1e-4, 1e-5]),
    "NeuralTS": ("nu", [1e-1, 1e-2, 1e-3, 1e-4, 1e-5]),
    "NeuralEpsilonGreedy": ("epsilon", [0.01, 0.05, 0.1]),
    "NeuralBootstrap": (None, [None]),
    "LinES": (None, [None]),
    "GLMES": (None, [None]),
    "NeuralES": (None, [None]),
    "NeuralPHE": (None, [None]),
}
SMALL_GRIDS = {
    "KernelUCB": [1.0, 0.1],
    "KernelTS": [1.0, 0.1],
    "NeuralUCB": [1e-1, 1e-2, 1e-3],
    "NeuralTS": [1e-1, 1e-2, 1e-3],
    "NeuralEpsilonGreedy": [0.05],
}


# ------------------------------------------------------------------- policies
def make_policy(name, value, args, n_rounds, n_actions):
    """The policy ``name`` with its key parameter at ``value``."""
    key = GRIDS[name][0]
    own = {} if key is None else {key: value}
    cls = getattr(P, name, None)
    if cls is None:
        raise LookupError(f"{name} is not in this version of skbandit.policies")
    if name in ("LinUCB", "LinTS", "KernelUCB", "KernelTS"):
        extra = {"max_train_rounds": args.max_train_rounds} if name in KERNEL else {}
        if name in KERNEL:  # the paper's kernels read its normalised contexts as given
            extra["standardize"] = False
        return cls(alpha=1.0, **own, **extra)
    if name == "LinES":
        # The paper's fixed-horizon Lin-ES, pinned (the defaults perturb the prior)
        paper = {"perturbation_scale": "auto", "prior_perturbation": False}
        return cls(horizon=n_rounds, **{**paper, **own})
    if name == "GLMES":
        # The experiments' 500 warm-up pulls are for T = 10^4 and K = 50: here 20
        # round-robin pulls per arm (our choice); the paper's inputs, as given (the
        # default standardises them online).
        return cls(horizon=n_rounds, n_warmup=20 * n_actions, standardize=False, **own)
    network = dict(
        # full batches over the whole history, as the papers (and the runs cached
        # before the flat-cost defaults)
        batch_size=None,
        max_buffer_size=None,
        hidden_layer_sizes=tuple(args.hidden),
        standardize=False,  # the paper's inputs, as given
        n_steps=args.n_steps,
        learning_rate=args.learning_rate,
        alpha=args.alpha,
        max_train_rounds=args.max_train_rounds,
        train_every=args.train_every,
        device=args.device,
    )
    if name == "NeuralES":
        own["horizon"] = n_rounds
    return make_bandit_pipeline(MirrorNormalizer(), cls(**own, **network))


def settings(args):
    """What, beyond the policy and its key parameter, a cached run depends on."""
    return dict(
        hidden=list(args.hidden),
        n_steps=args.n_steps,
        learning_rate=args.learning_rate,
        alpha=args.alpha,
        max_train_rounds=args.max_train_rounds,
        train_every=args.train_every,
    )


# ---------------------------------------------------------------------- runs
def run_key(dataset, name, value, seed, n_rounds, args):
    spec = dict(
        dataset=dataset,
        policy=name,
        value=value,
        seed=seed,
        n_rounds=n_rounds,
        **settings(args),
    )
    digest = hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
    return spec, Path(args.cache) / dataset / name / f"{digest}.json"


def one_run(env, dataset, name, value, seed, n_rounds, args):
    spec, path = run_key(dataset, name, value, seed, n_rounds, args)
    if path.is_file():
        return json.loads(path.read_text())
    policy = make_policy(name, value, args, n_rounds, env.n_actions)
    policy.set_params(
        **{k: seed for k in policy.get_params() if k.endswith("random_state")}
    )
    start = time.perf_counter()
    res = simulate(policy, env, n_rounds, random_state=seed, progress=False)
    wall = time.perf_counter() - start
    cumulative = np.cumsum(res.regret)
    marks = np.unique(np.linspace(0, n_rounds - 1, 21).astype(int))
    out = dict(
        spec,
        total_regret=float(cumulative[-1]),
        curve=[[int(t + 1), float(cumulative[t])] for t in marks],
        select_s=float(res.select_time.sum()),
        update_s=float(res.update_time.sum()),
        wall_s=wall,
        machine=machine(args.device),
        finished=time.strftime("%Y-%m-%d %H:%M:%S"),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out))
    tmp.replace(path)  # atomic: a killed run leaves no half file
    return out


# --------------------------------------------------------------------- table
def summarise(results):
    """Per (dataset, policy): the best value's regrets and times."""
    table = {}
    for (dataset, name), by_value in results.items():
        means = {
            v: np.mean([r["total_regret"] for r in rs]) for v, rs in by_value.items()
        }
        best = min(means, key=means.get)
        runs = by_value[best]
        table[dataset, name] = dict(
            value=best,
            regrets=np.array([r["total_regret"] for r in runs]),
            seconds=np.mean([r["select_s"] + r["update_s"] for r in runs]),
            n_values=len(by_value),
        )
    return table


def fmt_value(name, value):
    key = GRIDS[name][0]
    return "" if key is None else f"{key}={value:g}"


def print_table(table, datasets, names, args):
    print(
        "\nTotal regret (mistakes) at the last round: mean +- std over the seeds "
        "[their number], at the best value of the key parameter; s = seconds per run"
        + ("; the lowest mean of each data set in bold" if args.markdown else "")
    )
    width = 34
    if args.markdown:
        print("\n| policy | " + " | ".join(datasets) + " |")
        print("|---" * (len(datasets) + 1) + "|")
    else:
        print(f"{'policy':<20}" + "".join(f"{d:>{width}}" for d in datasets))
    best = {
        d: min(
            (c["regrets"].mean() for (dd, _), c in table.items() if dd == d),
            default=None,
        )
        for d in datasets
    }
    for name in names:
        cells = []
        for d in datasets:
            cell = table.get((d, name))
            if cell is None:
                cells.append("-")
                continue
            r = cell["regrets"]
            mean = f"{r.mean():.1f}"
            if args.markdown and r.mean() == best[d]:
                mean = f"**{mean}**"
            cells.append(
                f"{mean} +- {r.std(ddof=1) if r.size > 1 else 0:.1f} [{r.size}] "
                f"{fmt_value(name, cell['value'])} {cell['seconds']:.0f}s"
            )
        if args.markdown:
            print(f"| {name} | " + " | ".join(cells).replace("+-", "±") + " |")
        else:
            print(f"{name:<20}" + "".join(f"{c:>{width}}" for c in cells))


def _worse(a, b, level=0.10):
    """One-sided Welch t-test: is ``a`` significantly larger than ``b``?"""
    if a.size < 2 or b.size < 2 or (a.std() == 0 and b.std() == 0):
        return a.mean() > b.mean()
    t, p = stats.ttest_ind(a, b, equal_var=False, alternative="greater")
    return p < level


def _verdict(mine, other):
    """``mine`` <= ``other``: a lower or equal mean holds; a higher mean that a
    one-sided Welch test (90 %) does not call significant is only "not rejected"."""
    if mine.mean() <= other.mean():
        return "holds"
    if _worse(mine, other):
        return "does not hold"
    return "not rejected (higher mean, not significant)"


def check_claims(table, datasets):
    print("\nClaims of the papers on these runs")
    for d in datasets:
        have = {n: c for (dd, n), c in table.items() if dd == d}
        if not have:
            continue
        print(f"[{d}]")
        lin = [have[n]["regrets"].mean() for n in ("LinUCB", "LinTS") if n in have]
        neu = [
            have[n]["regrets"].mean()
            for n in ("NeuralUCB", "NeuralTS", "NeuralBootstrap")
            if n in have
        ]
        if lin and neu:
            ok = min(neu) < min(lin)
            print(
                f"  000: neural < linear (best of NeuralUCB/TS/BootstrapNN "
                f"{min(neu):.1f} vs best of LinUCB/TS {min(lin):.1f}): "
                f"{'holds' if ok else 'does not hold'}"
            )
        mine = [n for n in PAPER_000 if n in have]
        if "NeuralTS" in have and len(mine) > 1:
            best = min(mine, key=lambda n: have[n]["regrets"].mean())
            verdict = _verdict(have["NeuralTS"]["regrets"], have[best]["regrets"])
            print(
                f"  000: NeuralTS among the best (best {best} "
                f"{have[best]['regrets'].mean():.1f}; NeuralTS "
                f"{have['NeuralTS']['regrets'].mean():.1f}; Welch 90 %): {verdict}"
            )
        if "NeuralES" in have:
            es = have["NeuralES"]
            for other in ("NeuralTS", "NeuralUCB", "NeuralPHE"):
                if other not in have:
                    continue
                o = have[other]
                ratio = es["seconds"] / max(o["seconds"], 1e-9)
                print(
                    f"  001: NeuralES <= {other} ({es['regrets'].mean():.1f} vs "
                    f"{o['regrets'].mean():.1f}; Welch 90 %): "
                    f"{_verdict(es['regrets'], o['regrets'])}; at lower compute: "
                    f"{'yes' if ratio < 1 else 'no'} ({es['seconds']:.0f}s vs "
                    f"{o['seconds']:.0f}s, x{ratio:.2f})"
                )
        ens = [n for n in ("NeuralES", "GLMES") if n in have]
        lins = [n for n in ("LinES", "LinTS", "LinUCB") if n in have]
        if ens and lins:
            worst = max(have[n]["regrets"].mean() for n in ens)
            best_lin = min(have[n]["regrets"].mean() for n in lins)
            print(
                f"  001: NeuralES/GLMES below Lin-ES/TS/UCB ({worst:.1f} vs "
                f"{best_lin:.1f}): {'holds' if worst < best_lin else 'does not hold'}"
            )


# ------------------------------------------------------------------ estimate
def full_protocol_cost(results, n_rows, n_seeds=8, n_rounds=10_000):
    """Core-hours of the whole study (the paper's grid, ``n_seeds`` seeds, T =
    ``n_rounds`` or the data set's size, 100 gradient steps every round), scaled
    from the cached runs' seconds, per data set.

    The scaling (a model, not a measurement): a network's update time is its
    training, which stops at round ``--max-train-rounds`` whatever T, so it grows
    with the gradient steps per round (``n_steps / train_every``); GLM-ES's exact
    Newton solve costs in proportion to the rows of its history, so its update grows
    as T^2; everything else (selection, the linear and kernel updates, the
    simulator) grows as T.
    """
    cost = {}
    for (dataset, name), by_value in results.items():
        T_full = min(n_rounds, n_rows[dataset])
        seconds = []
        for runs in by_value.values():
            for r in runs:
                grow = T_full / r["n_rounds"]
                rest = r["wall_s"] - r["update_s"]
                if name in NEURAL:
                    steps = 100 / (r["n_steps"] / r["train_every"])
                    update = r["update_s"] * steps
                elif name == "GLMES":
                    update = r["update_s"] * grow**2
                else:
                    update = r["update_s"] * grow
                seconds.append(rest * grow + update)
        n_values = len(GRIDS[name][1])
        cost[dataset] = cost.get(dataset, 0.0) + np.mean(seconds) * n_values * n_seeds
    return {d: c / 3600 for d, c in cost.items()}


def print_estimate(results, n_rows):
    cost = full_protocol_cost(results, n_rows)
    print(
        "\nEstimated cost of the full protocol (8 seeds, T = 10^4 or the data set's "
        "size, the paper's grid, 100 gradient steps every round), scaled from the "
        "cached runs:"
    )
    for dataset, hours in cost.items():
        print(f"  {dataset:<15}{hours:8.1f} core-hours")
    print(f"  {'total':<15}{sum(cost.values()):8.1f} core-hours")


# ---------------------------------------------------------------------- main
def load_env(dataset):
    loader, _ = DATASETS[dataset]
    X, y = loader(return_X_y=True)
    return ClassificationBandit(normalize(X), y, encoding="shared"), X.shape[0]


def _parser():
    """The command line's options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--datasets", nargs="+", choices=list(DATASETS), default=list(DATASETS)
    )
    parser.add_argument(
        "--policies", nargs="+", choices=list(POLICIES), default=list(POLICIES)
    )
    parser.add_argument(
        "--n-rounds",
        type=int,
        default=10_000,
        help="rounds per run, capped at the data set's size",
    )
    parser.add_argument("--n-seeds", type=int, default=8)
    parser.add_argument("--grid", choices=["paper", "small"], default="paper")
    parser.add_argument("--hidden", type=int, nargs="+", default=[100])
    parser.add_argument("--n-steps", type=int, default=100)
    parser.add_argument("--learning-rate", type=float, default=5e-3)
    parser.add_argument(
        "--alpha", type=float, default=0.01, help="lambda of the neural policies"
    )
    parser.add_argument("--max-train-rounds", type=int, default=1000)
    parser.add_argument(
        "--train-every",
        type=int,
        default=1,
        help="rounds between trainings of the networks (the papers: 1)",
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", default=str(CACHE))
    parser.add_argument("--markdown", action="store_true", help="table as Markdown")
    parser.add_argument(
        "--table-only",
        action="store_true",
        help="print the table of the cached runs, run nothing",
    )
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="also print the full protocol's cost, scaled from the cached runs",
    )
    return parser


def _jobs(args):
    """``(jobs, envs, n_rows_of)``: the runs asked for, seed by seed, and the
    environment and size of each data set that loads."""
    jobs, envs, n_rows_of = [], {}, {}
    for dataset in args.datasets:
        try:
            env, n_rows = load_env(dataset)
        except (ImportError, FileNotFoundError) as exc:
            print(f"skipping {dataset}: {exc}")
            continue
        envs[dataset], n_rows_of[dataset] = env, n_rows
        n_rounds = min(args.n_rounds, n_rows)
        for name in args.policies:
            key, values = GRIDS[name]
            if args.grid == "small":
                values = SMALL_GRIDS.get(name, values)
            for value in values:
                for seed in range(args.n_seeds):
                    jobs.append((dataset, name, value, seed, n_rounds))
    # Seed by seed (stable: data sets and policies in order within a seed), so that
    # an interrupted study has every data set and policy on its first seeds.
    jobs.sort(key=lambda job: job[3])
    return jobs, envs, n_rows_of


def _run_jobs(jobs, envs, args):
    """The results of the runs, by ``(dataset, policy)`` then value; cached runs
    are read, and only those with ``--table-only``."""
    results, skipped = {}, set()
    todo = [j for j in jobs if not run_key(*j[:4], j[4], args)[1].is_file()]
    print(f"{len(jobs)} runs, {len(jobs) - len(todo)} cached, {len(todo)} to run")
    bar = tqdm(jobs, desc="runs", disable=args.table_only or None)
    for dataset, name, value, seed, n_rounds in bar:
        path = run_key(dataset, name, value, seed, n_rounds, args)[1]
        if args.table_only and not path.is_file():
            continue
        if name in skipped:
            continue
        bar.set_postfix_str(f"{dataset} {name} {fmt_value(name, value)} seed {seed}")
        try:
            out = one_run(envs[dataset], dataset, name, value, seed, n_rounds, args)
        except LookupError as exc:
            print(f"skipping {name}: {exc}")
            skipped.add(name)
            continue
        results.setdefault((dataset, name), {}).setdefault(value, []).append(out)
    return results


def main(argv=None):
    args = _parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    print("command: python " + " ".join(sys.argv))
    print(
        f"machine: {machine(args.device)}; torch {torch.__version__}, "
        f"{args.threads} thread(s), device {args.device}"
    )
    jobs, envs, n_rows_of = _jobs(args)
    results = _run_jobs(jobs, envs, args)
    table = summarise(results)
    names = [n for n in args.policies if any((d, n) in table for d in envs)]
    print_table(table, list(envs), names, args)
    check_claims(table, list(envs))
    if args.estimate:
        print_estimate(results, n_rows_of)


if __name__ == "__main__":
    main()
