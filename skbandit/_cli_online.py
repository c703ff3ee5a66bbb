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
    SIMULATORS,
    CliError,
    add_command,
    add_env_option,
    add_online_options,
    add_param_option,
    add_simulator_options,
    check_policy_fits_env,
    make_env,
    make_policy,
    policy_label,
    positive_int,
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


def _labelled(policies):
    """``{label: policy}``, each label the policy's class and non-default parameters."""
    out = {}
    for policy in policies:
        label = policy_label(policy)
        if label in out:
            raise CliError(f"{label} is given twice; give each policy once.")
        out[label] = policy
    return out


def _env(args):
    return make_env(
        args.env,
        n_actions=args.n_actions,
        n_features=args.n_features,
        slate_size=args.slate_size,
        data_home=args.data_home,
    )


def _policies_for(specs, args, **kwargs):
    """The policies of ``specs``, each checked against the environment's kind."""
    policies = [
        make_policy(
            spec,
            args.seed,
            simulator=args.env in SIMULATORS,
            slate_size=args.slate_size,
            **kwargs,
        )
        for spec in specs
    ]
    for policy in policies:
        check_policy_fits_env(policy, args.env)
    return policies


def _rate(env_name):
    """The per-round column: accuracy on a classification bandit (regret = mistakes)."""
    return "regret/round" if env_name in SIMULATORS else "accuracy"


# -- demo ----------------------------------------------------------------------

#: The demo's policies: tuned on digits, shown with their parameters in the table,
#: so that ``skbandit compare "LinTS(nu=0.1)"`` runs the demo's LinTS.
DEMO_POLICIES = (
    "LinUCB(beta=0.3)",
    "LinTS(nu=0.1)",
    "LinPHE(perturbation_scale=0.5)",
    "EpsilonGreedy(epsilon=0.05, schedule='constant')",
    "RandomPolicy",
)


def cmd_demo(args):
    env = _env(args)
    start = time.perf_counter()
    policies = _labelled(_policies_for(DEMO_POLICIES, args))
    result = _simulate_each(policies, env, args)
    title = (
        f"{args.env} as a {env.n_actions}-armed bandit: {args.n_rounds} rounds, "
        f"seed {args.seed}"
    )
    print()
    print_regret_table(result, title, _rate(args.env))
    path = save_regret_plot(
        result, title, Path(args.out) / f"demo_{args.env}_regret.png"
    )
    print(f"regret curves saved to {path}")
    print(f"total {time.perf_counter() - start:.1f} s")
    return 0


def add_demo(sub):
    demo = add_command(
        sub,
        "demo",
        help="linear policies online on the digits bandit, with a regret plot",
        description="Run " + ", ".join(DEMO_POLICIES) + " online on digits as a "
        "10-armed bandit (or on --dataset), print their regret and save the plot.",
    )
    add_env_option(demo)
    add_simulator_options(demo)
    add_online_options(demo, n_rounds=3000, out="results")
    demo.set_defaults(func=cmd_demo)


# -- run -----------------------------------------------------------------------


def cmd_run(args):
    (policy,) = _policies_for(
        [args.policy], args, params=args.param, horizon=args.n_rounds
    )
    env = _env(args)
    result = _simulate_each(_labelled([policy]), env, args)
    title = f"{args.env}: {args.n_rounds} rounds, seed {args.seed}"
    print()
    print_regret_table(result, title, _rate(args.env))
    if args.out is not None:
        path = save_regret_plot(
            result, title, Path(args.out) / f"run_{args.env}_regret.png"
        )
        print(f"regret curve saved to {path}")
    return 0


def add_run(sub):
    run = add_command(
        sub,
        "run",
        help="one policy on one environment",
        description="Run one policy online, e.g. "
        "'skbandit run \"LinUCB(beta=2.0)\" --dataset linear' or "
        "'skbandit run LinUCB --dataset linear --param beta=2.0'.",
    )
    run.add_argument(
        "policy",
        help="policy class name (any case), or its repr with keyword literals, "
        "e.g. 'LinTS(nu=0.1)'",
    )
    add_param_option(run)
    add_env_option(run)
    add_simulator_options(run)
    add_online_options(run, n_rounds=2000, out=None)
    run.set_defaults(func=cmd_run)


# -- compare -------------------------------------------------------------------


def _set_shared_params(policies, params):
    """``--param`` of ``compare``: set on every policy that has the parameter."""
    for key, value in params or ():
        owners = [p for p in policies if key in p.get_params(deep=False)]
        if not owners:
            names = " or ".join(sorted({type(p).__name__ for p in policies}))
            raise CliError(f"--param {key}: {names} has no parameter {key!r}.")
        for policy in owners:
            policy.set_params(**{key: value})._validate_params()


def cmd_compare(args):
    from skbandit.evaluation import compare

    env = _env(args)
    policies = _policies_for(args.policies, args)
    _set_shared_params(policies, args.param)
    policies = _labelled(policies)
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
        f"{args.env}: {len(policies)} policies, {args.n_runs} "
        f"run{'s' if args.n_runs > 1 else ''} of "
        f"{args.n_rounds} rounds, seed {args.seed}"
    )
    print()
    print_regret_table(result, title, _rate(args.env))
    path = Path(args.out) / f"compare_{args.env}_regret.png"
    print(f"regret curves saved to {save_regret_plot(result, title, path)}")
    return 0


def add_compare(sub):
    comp = add_command(
        sub,
        "compare",
        help="several policies over several seeds, mean ± s.e. of regret",
        description='Compare policies, e.g. \'skbandit compare "LinTS(nu=0.1)" '
        '"LinUCB(beta=0.3)" RandomPolicy --dataset magic --n-runs 8\'.',
    )
    comp.add_argument(
        "policies",
        nargs="+",
        help="policy class names (any case), or reprs with keyword literals, "
        "e.g. 'LinTS(nu=0.1)'",
    )
    add_param_option(comp, several=True)
    add_env_option(comp)
    comp.add_argument("--n-runs", type=positive_int, default=4, help="seeds per policy")
    add_simulator_options(comp)
    add_online_options(comp, n_rounds=2000, out="results")
    comp.set_defaults(func=cmd_compare)
