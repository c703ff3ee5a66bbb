"""``skbandit evaluate``: a policy's value estimated off-policy on a logged-data file.

The columns (or .npz arrays) are named by options. The rows are shuffled with the
seed (or kept in time order: ``--split time``, or ``--time-column``) and split; the
policy, behind a :class:`~sklearn.preprocessing.StandardScaler` unless ``--scale
none``, is fitted on the first part and evaluated on the rest with
:func:`~skbandit.evaluation.estimate_value`: IPS, SNIPS, DR (with a per-arm ridge
reward model fitted on the first part) and replay, flagged as biased when the
logging was not uniform.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from pathlib import Path

from skbandit._cli_common import (
    CliError,
    add_command,
    add_param_option,
    make_policy,
    policy_label,
)
from skbandit._cli_logs import (
    add_column_options,
    context_columns,
    estimates,
    report_estimates,
)
from skbandit._cli_parquet import add_scheduler_options, cmd_evaluate_parquet


def _read_table(path):
    """The arrays (.npz) or columns (.csv) of a logged-data file, by name, in order."""
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise CliError(f"no logged-data file {str(path)!r}.")
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    if path.suffix == ".csv":
        import pandas as pd

        frame = pd.read_csv(path)
        return {str(c): frame[c].to_numpy() for c in frame.columns}
    raise CliError("the logged-data file must be .npz or .csv.")


def _load_logs(args):
    """``(X, actions, rewards, propensities, time)`` of the logged-data file, with
    the columns the options name (``time`` is None without ``--time-column``)."""
    import numpy as np

    data = _read_table(args.logs)
    names = {
        "--actions": args.actions,
        "--rewards": args.rewards,
        "--propensities": args.propensities,
    }
    if args.time_column is not None:
        names["--time-column"] = args.time_column
    missing = [f"{v} ({k})" for k, v in names.items() if v not in data]
    if missing:
        raise CliError(
            f"the logged data lack {', '.join(missing)}; the file has "
            f"{', '.join(data)}."
        )
    columns = context_columns(data, args, set(names.values()))
    X = np.column_stack(
        [np.asarray(data[c], dtype=float).reshape(len(data[c]), -1) for c in columns]
    )
    actions = np.asarray(data[args.actions])
    if not np.all(np.mod(actions, 1) == 0):
        raise CliError(f"the actions ({args.actions!r}) must be integer arm indices.")
    time = None if args.time_column is None else np.asarray(data[args.time_column])
    return (
        X,
        actions.astype(int),
        np.asarray(data[args.rewards], dtype=float),
        np.asarray(data[args.propensities], dtype=float),
        time,
    )


def _split(n, args, time):
    """Indices of the fitting and evaluation rows.

    ``shuffle`` permutes the rows with ``--seed`` first, so that a file sorted by
    time, user or arm does not put one kind of round in each part; ``time`` keeps
    the order (of ``--time-column`` if given, else of the file), fitting on the
    past and evaluating on the future, as a deployed policy would be.
    """
    import numpy as np

    if args.split == "shuffle":
        order = np.random.default_rng(args.seed).permutation(n)
    elif time is None:
        order = np.arange(n)
    else:
        order = np.argsort(time, kind="stable")
    n_fit = int(round(n * (1 - args.test_fraction)))
    if not 2 <= n_fit <= n - 2:
        raise CliError(
            f"--test-fraction {args.test_fraction} leaves {n_fit} of {n} rounds to "
            "fit on; each part needs at least 2."
        )
    return order[:n_fit], order[n_fit:]


def _ridge_reward_model(X_train, a_train, r_train, X_test, n_actions, alpha=1.0):
    """Per-arm ridge predictions of the reward; unseen arms get the mean reward."""
    import numpy as np
    from sklearn.linear_model import Ridge

    out = np.full((X_test.shape[0], n_actions), r_train.mean())
    for k in range(n_actions):
        mask = a_train == k
        if mask.sum() >= 2:
            out[:, k] = (
                Ridge(alpha=alpha).fit(X_train[mask], r_train[mask]).predict(X_test)
            )
    return out


def _check_split_and_scale(args):
    """``--split`` defaults to ``time`` with ``--time-column``; ``--scale`` to
    ``standard`` on a file (a Parquet directory is evaluated on raw columns)."""
    parquet = Path(args.logs).is_dir()
    if args.split is None:
        args.split = "time" if args.time_column is not None else "shuffle"
    elif args.split == "shuffle" and args.time_column is not None:
        raise CliError(
            "--time-column orders the rows for --split time; with --split shuffle "
            "it would be ignored. Drop one of them."
        )
    if args.scale is None:
        args.scale = "none" if parquet else "standard"
    elif args.scale == "standard" and parquet:
        raise CliError(
            "--scale standard needs a .npz or .csv file; Parquet logs "
            "are evaluated on their raw columns."
        )


def cmd_evaluate(args):
    _check_split_and_scale(args)
    if Path(args.logs).is_dir():  # a Parquet directory: on Dask, never gathered
        return cmd_evaluate_parquet(args)

    X, actions, rewards, propensities, time = _load_logs(args)
    n = X.shape[0]
    if n < 4:
        raise CliError("the logged data need at least 4 rounds.")
    n_actions = int(actions.max()) + 1
    fit_rows, test_rows = _split(n, args, time)
    policy = make_policy(args.policy, args.seed, params=args.param, n_actions=n_actions)
    label = policy_label(policy, hide=("random_state", "n_actions"))
    if args.scale == "standard":  # columns of unlike scales: the policy sees z-scores
        from sklearn.preprocessing import StandardScaler

        from skbandit.pipeline import make_bandit_pipeline

        policy = make_bandit_pipeline(StandardScaler(), policy)
        label = f"StandardScaler + {label}"
    X_fit, a_fit, r_fit = X[fit_rows], actions[fit_rows], rewards[fit_rows]
    policy.fit(X_fit, a_fit, rewards=r_fit)
    Xt, at, rt = X[test_rows], actions[test_rows], rewards[test_rows]
    pt = propensities[test_rows]
    proba = policy.predict_action_proba(Xt)
    q_hat = _ridge_reward_model(X_fit, a_fit, r_fit, Xt, n_actions)
    values = estimates(proba, at, rt, pt, q_hat, args.alpha)
    split = "shuffled" if args.split == "shuffle" else "split by time"
    title = (
        f"{label} fitted on {fit_rows.size} logged rounds, evaluated on "
        f"{test_rows.size} ({split}; logged mean reward {rt.mean():.4f})"
    )
    return report_estimates(values, title, args)


def add_evaluate(sub):
    ev = add_command(
        sub,
        "evaluate",
        help="off-policy evaluation of a policy on a logged-data file",
        description="Fit a policy on part of the logged data (.npz arrays or .csv "
        "columns: contexts, actions, rewards, propensities, named by the options "
        "below) and estimate its value on the rest with IPS, SNIPS, DR (ridge reward "
        "model) and replay (flagged when the logging was not uniform, which biases "
        "it). The policy sees standard-scaled contexts unless --scale none. The "
        "rows are shuffled (seeded by --seed) before the split, or split by time "
        "with --split time or --time-column.",
    )
    ev.add_argument("logs", help="logged data, .npz, .csv or a Parquet directory")
    ev.add_argument(
        "--policy",
        default="LinUCB",
        help="policy class name, or its repr with keyword literals, "
        "e.g. 'LinUCB(beta=0.3)'",
    )
    add_param_option(ev)
    add_column_options(ev)
    ev.add_argument(
        "--scale",
        choices=("standard", "none"),
        default=None,
        help="standard: the policy sees the contexts standard-scaled (a "
        "StandardScaler fitted on the fitting part, in a pipeline); none: raw "
        "(default: standard for a file, none for a Parquet directory)",
    )
    ev.add_argument(
        "--split",
        choices=("shuffle", "time"),
        default=None,
        help="shuffle: the rows are permuted (seeded by --seed) before the split; "
        "time: the earlier rows (file order, or --time-column's) fit, the later "
        "ones evaluate (default: time with --time-column, else shuffle)",
    )
    ev.add_argument(
        "--time-column",
        default=None,
        help="column ordering the rows; implies --split time",
    )
    ev.add_argument(
        "--test-fraction",
        type=float,
        default=0.5,
        help="fraction of the rows evaluated on (the rest fit the policy)",
    )
    ev.add_argument("--alpha", type=float, default=0.05, help="1 - CI level")
    ev.add_argument(
        "--seed", type=int, default=0, help="seed of the policy and of the shuffle"
    )
    ev.add_argument("--out", default=None, help="folder for evaluate.csv")
    add_scheduler_options(ev)
    ev.set_defaults(func=cmd_evaluate)
