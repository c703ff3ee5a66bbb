"""Paper 000 (Zhang, Zhou, Li, Gu, ICLR 2021), Experiment II: total regret of NeuralTS
and NeuralUCB against the reward delay.

A delay of B rounds: the policy selects on B rounds with its current model, then
learns from those B rows in one ``partial_fit`` (``compare(..., batch_size=B)``), so
the network and U change only every B rounds. NeuralTS still draws fresh samples on
every round of a batch; NeuralUCB plays its stale index. The paper (section 5.3,
Fig. 2) finds that "Neural TS degrades much more gracefully than Neural UCB when the
reward delay increases"; note 000's check 16 asks for NeuralTS's relative increase
R_B/R_1 to be smaller than NeuralUCB's at the largest B.

Problems, policies and settings are those of ``neural_thompson_sampling/regret.py``
(shared in ``benchmarks/neural_thompson_sampling/_experiment_one.py``): the digits
classification bandit (K = 10, d = 64, T = 1797, rows l2-normalised and shuffled per
seed) by default, the synthetic cos(3 a^T x) problem with ``--problems digits
synthetic``; one hidden layer of 100, J = 100 gradient steps per training, diagonal U,
alpha = 0.01, learning rate 5e-3, mirrored inputs, training stopped after round 1000
(one setting per policy: pass single values). nu = 0.1 and beta = 1 by default, the top
of the regret benchmark's grids: with too little exploration both policies play the
greedy arm and the experiment cannot tell sampling from optimism. B runs
over {1, 10, 50, 100, 250, 500} by default, 4 seeds, the same seeds for every B and
both policies.

Prints a table per problem: B, NeuralTS and NeuralUCB total regret (mean +- std over
seeds) and their R_B/R_1 (R_1: the smallest B run), then the PASS/FAIL line of check
16, and saves regret against B (mean +- standard error) to ``--plot``.

Run::

    # a smoke test; then 4 seeds on digits
    python benchmarks/neural_thompson_sampling/training_delay.py --quick
    python benchmarks/neural_thompson_sampling/training_delay.py --n-jobs 2
    python benchmarks/neural_thompson_sampling/training_delay.py --n-seeds 8 \
        --problems digits synthetic
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from time import perf_counter

import numpy as np
from _experiment_one import (
    Checks,
    add_common_arguments,
    compare_options,
    describe_problem,
    family,
    make_env,
    mean_std,
    neural_policies,
    parallel_context,
    print_header,
    resolve_arguments,
    settings_line,
)

from skbandit.evaluation import compare

FAMILIES = ("NeuralTS", "NeuralUCB")
DELAYS = (1, 10, 50, 100, 250, 500)
QUICK_DELAYS = (1, 10, 50)


def run_problem(problem, policies, args):
    """Total regret per family, delay and seed: ``{family: {B: array}}``, and the
    mean seconds per run."""
    env = make_env(problem)
    T = args.rounds[problem]
    finals = {family(name): {} for name in policies}
    seconds = {family(name): {} for name in policies}
    for B in args.delays:
        start = perf_counter()
        with parallel_context(args):
            result = compare(
                policies,
                env,
                T,
                n_runs=args.n_seeds,
                batch_size=B,
                **compare_options(args),
                random_state=args.seed,  # same seeds for every B: paired runs
                progress=args.progress,
            )
        for k, name in enumerate(result.policies):
            runs = result.results[k * result.n_runs : (k + 1) * result.n_runs]
            finals[family(name)][B] = np.array([res.total_regret for res in runs])
            seconds[family(name)][B] = float(np.mean([res.total_time for res in runs]))
        print(
            f"  {problem}: B = {B} done in {perf_counter() - start:.0f} s",
            flush=True,
        )
    return finals, seconds


def print_table(problem, finals, seconds, args):
    ref = args.delays[0]
    print(
        f"\n{problem}: T = {args.rounds[problem]}, {args.n_seeds} seeds; total regret "
        f"(mean +- std over seeds), R_B/R_{ref}, seconds per run"
    )
    head = f"{'B':>5}" + "".join(
        f"{fam + ' R(T)':>22}{f'R_B/R_{ref}':>10}{'s/run':>8}" for fam in FAMILIES
    )
    print(head)
    print("-" * len(head))
    for B in args.delays:
        cells = []
        for fam in FAMILIES:
            r = finals[fam][B]
            rel = r.mean() / max(finals[fam][ref].mean(), 1e-12)
            cells.append(f"{mean_std(r):>22}{rel:>10.2f}{seconds[fam][B]:>8.1f}")
        print(f"{B:>5}" + "".join(cells))


def check_delay(problem, finals, args, check):
    ref, big = args.delays[0], args.delays[-1]
    rel = {
        fam: finals[fam][big].mean() / max(finals[fam][ref].mean(), 1e-12)
        for fam in FAMILIES
    }
    check(
        f"16 ({problem}) NeuralTS degrades less than NeuralUCB: "
        f"R_{big}/R_{ref}(TS) < R_{big}/R_{ref}(UCB)",
        rel["NeuralTS"] < rel["NeuralUCB"],
        f"{rel['NeuralTS']:.2f} vs {rel['NeuralUCB']:.2f}",
    )


def plot(results, args, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        1, len(results), figsize=(5.2 * len(results), 4.0), squeeze=False
    )
    delays = np.array(args.delays)
    for ax, (problem, finals) in zip(axes[0], results.items(), strict=True):
        for fam in FAMILIES:
            runs = np.array([finals[fam][B] for B in args.delays])  # (n_B, n_seeds)
            mean = runs.mean(axis=1)
            se = runs.std(axis=1, ddof=1) / np.sqrt(runs.shape[1])
            ax.errorbar(delays, mean, yerr=se, marker="o", capsize=3, label=fam)
        ax.set_xscale("symlog", linthresh=1)
        ax.set_xticks(delays)
        ax.set_xticklabels([str(B) for B in args.delays])
        ax.set_xlabel("Delay (batch size B)")
        ax.set_ylabel("Total regret")
        ax.set_title(
            f"{problem}, T = {args.rounds[problem]}, {args.n_seeds} seeds "
            "(mean +- s.e.)"
        )
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(
        parser, n_seeds=4, problems=("digits",), nu=(0.1,), beta=(1.0,)
    )
    parser.add_argument(
        "--delays",
        type=int,
        nargs="+",
        default=None,
        help=f"batch sizes B (default {' '.join(map(str, DELAYS))}; --quick "
        f"{' '.join(map(str, QUICK_DELAYS))})",
    )
    parser.add_argument("--plot", default="results/neural_delay.png")
    args = resolve_arguments(parser, parser.parse_args(argv), n_seeds=4)
    for name in ("alpha", "nu", "beta"):
        if len(getattr(args, name)) != 1:
            parser.error(f"--{name} takes one value here (one setting per policy)")
    if args.delays is None:
        args.delays = list(QUICK_DELAYS if args.quick else DELAYS)
    args.delays = sorted(set(args.delays))
    if args.delays[0] < 1:
        parser.error("--delays must be positive")

    print_header(args)
    print(
        f"settings: {args.n_seeds} seeds (compare random_state={args.seed}), "
        f"delays B in {args.delays}, problems {args.problems}"
        f"{' (--quick)' if args.quick else ''}"
    )
    print(settings_line(args))
    for problem in args.problems:
        print("problem :", describe_problem(problem, args.rounds[problem]))
        if args.delays[-1] >= args.rounds[problem]:
            print(f"  note: B = {args.delays[-1]} >= T: a single batch, no learning")
    if args.delays[0] != 1:
        print(f"  note: R_1 stands for the smallest delay run, B = {args.delays[0]}")

    policies = neural_policies(args)
    results = {}
    start = perf_counter()
    for problem in args.problems:
        finals, seconds = run_problem(problem, policies, args)
        results[problem] = finals
        print_table(problem, finals, seconds, args)
    print(f"\nwall time {perf_counter() - start:.0f} s")

    print("\nchecks (note 000, section 6):")
    check = Checks()
    for problem, finals in results.items():
        check_delay(problem, finals, args, check)
    check.report()
    path = plot(results, args, Path(args.plot))
    print(f"regret against delay saved to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
