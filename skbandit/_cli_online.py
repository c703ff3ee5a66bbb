"""``skbandit demo``, ``run`` and ``compare``: policies played online, regret shown.

``demo`` and ``run`` play each policy once (:func:`~skbandit.evaluation.simulate`,
with a progress bar per policy); ``compare`` plays several seeds per policy
(:func:`~skbandit.evaluation.compare`). All three print the regret table and save
the regret plot of a :class:`~skbandit.evaluation.ComparisonResult`.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import time
from pathlib import Path

from skbandit._cli_common import (
    DATASETS,
    SIMULATORS,
    add_online_options,
    add_param_option,
    add_simulator_options,
    make_env,
    make_policy,
    print_regret_table,
    save_regret_plot,
)


def _simulate_each(policies, env, args):
    """One run of each policy, environment seeded by ``--seed``, as a
    :class:`~skbandit.evaluation.ComparisonResult` of one run per policy."""
    import numpy as np

    from skbandit.evaluation import ComparisonResult, simulate

    results = [
        simulate(
            policy,
            env,
            args.n_rounds,
            batch_size=args.batch_size,
            random_state=args.seed,
            progress=not args.no_progress,
            name=name,
        )
        for name, policy in policies.items()
    ]
    seeds = np.array([args.seed])
    return ComparisonResult(
        results=results,
        policies=list(policies),
        n_runs=1,
        env_seeds=seeds,
        policy_seeds=seeds,
    )


# -- demo ----------------------------------------------------------------------


def _demo_policies(seed):
    from skbandit import policies

    return {
        "LinUCB": policies.LinUCB(beta=0.3, random_state=seed),
        "LinTS": policies.LinTS(nu=0.1, random_state=seed),
        "LinPHE": policies.LinPHE(perturbation_scale=0.5, random_state=seed),
        "EpsilonGreedy": policies.EpsilonGreedy(epsilon=0.05, random_state=seed),
        "Random": policies.RandomPolicy(random_state=seed),
    }


def cmd_demo(args):
    env = make_env("digits")
    start = time.perf_counter()
    result = _simulate_each(_demo_policies(args.seed), env, args)
    title = (
        f"digits as a {env.n_actions}-armed bandit: {args.n_rounds} rounds, "
        f"seed {args.seed}"
    )
    print()
    print_regret_table(result, f"{title} (mean reward = accuracy; regret = mistakes)")
    path = save_regret_plot(result, title, Path(args.out) / "demo_digits_regret.png")
    print(f"regret curves saved to {path}")
    print(f"total {time.perf_counter() - start:.1f} s")
    return 0


def add_demo(sub):
    demo = sub.add_parser(
        "demo",
        help="linear policies online on the digits bandit, with a regret plot",
        description="Run LinUCB, LinTS, LinPHE, epsilon-greedy and the random "
        "policy online on digits as a 10-armed bandit.",
    )
    add_online_options(demo, n_rounds=3000, out="results")
    demo.set_defaults(func=cmd_demo)


# -- run -----------------------------------------------------------------------


def cmd_run(args):
    policy = make_policy(
        args.policy,
        args.seed,
        params=args.param,
        simulator=args.env in SIMULATORS,
        horizon=args.n_rounds,
    )
    env = make_env(args.env, n_actions=args.n_actions, n_features=args.n_features)
    result = _simulate_each({type(policy).__name__: policy}, env, args)
    title = f"{args.env}: {args.n_rounds} rounds, seed {args.seed}"
    print()
    print(repr(policy))
    print_regret_table(result, title)
    if args.out is not None:
        path = save_regret_plot(
            result, title, Path(args.out) / f"run_{args.env}_regret.png"
        )
        print(f"regret curve saved to {path}")
    return 0


def add_run(sub):
    run = sub.add_parser(
        "run",
        help="one policy on one environment",
        description="Run one policy online, e.g. "
        "'skbandit run LinUCB --env linear --param beta=2.0'.",
    )
    run.add_argument("policy", help="policy class name, e.g. LinUCB (any case)")
    add_param_option(run)
    run.add_argument("--env", choices=("digits", *SIMULATORS), default="digits")
    add_simulator_options(run, n_actions=100)
    add_online_options(run, n_rounds=2000, out=None)
    run.set_defaults(func=cmd_run)


# -- compare -------------------------------------------------------------------


def cmd_compare(args):
    from skbandit.evaluation import compare

    if args.n_runs < 1:
        raise SystemExit("skbandit: --n-runs must be positive.")
    env = make_env(
        args.dataset,
        n_actions=args.n_actions,
        n_features=args.n_features,
        data_home=args.data_home,
    )
    simulator = args.dataset in SIMULATORS
    policies = {}
    for name in args.policies:
        policy = make_policy(name, args.seed, simulator=simulator)
        policies[type(policy).__name__] = policy
    result = compare(
        policies,
        env,
        args.n_rounds,
        n_runs=args.n_runs,
        batch_size=args.batch_size,
        random_state=args.seed,
        progress=not args.no_progress,
    )
    title = (
        f"{args.dataset}: {len(policies)} policies, {args.n_runs} runs of "
        f"{args.n_rounds} rounds, seed {args.seed}"
    )
    print()
    print_regret_table(result, title, "regret/round" if simulator else "accuracy")
    path = Path(args.out) / f"compare_{args.dataset}_regret.png"
    print(f"regret curves saved to {save_regret_plot(result, title, path)}")
    return 0


def add_compare(sub):
    comp = sub.add_parser(
        "compare",
        help="several policies over several seeds, mean ± s.e. of regret",
        description="Compare policies by name, e.g. 'skbandit compare LinUCB LinTS "
        "RandomPolicy --dataset magic --n-runs 8'.",
    )
    comp.add_argument("policies", nargs="+", help="policy class names (any case)")
    comp.add_argument(
        "--dataset",
        choices=(*DATASETS, *SIMULATORS),
        default="digits",
        help="a data set of skbandit.datasets, or a linear/logistic simulator",
    )
    comp.add_argument(
        "--data-home", default=None, help="folder searched first for the data files"
    )
    comp.add_argument("--n-runs", type=int, default=4, help="seeds per policy")
    add_simulator_options(comp, n_actions=10)
    add_online_options(comp, n_rounds=2000, out="results")
    comp.set_defaults(func=cmd_compare)
