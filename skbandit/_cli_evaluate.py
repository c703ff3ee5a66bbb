"""``skbandit evaluate``: a policy's value estimated off-policy on a logged-data file.

The policy is fitted on the first half of the logs and evaluated on the second
half with :func:`~skbandit.evaluation.estimate_value`: IPS, SNIPS, DR (with a
per-arm ridge reward model fitted on the first half) and replay.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from pathlib import Path

from skbandit._cli_common import (
    CliError,
    add_command,
    add_param_option,
    fmt_number,
    make_policy,
    policy_label,
    print_table,
)

METHODS = {"ips": "IPS", "snips": "SNIPS", "dr": "DR", "replay": "replay"}


def _load_logs(path):
    """Logged data from .npz or .csv: X (or X* arrays/columns), actions, rewards,
    propensities."""
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise CliError(f"no logged-data file {str(path)!r}.")
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as f:
            data = {k: f[k] for k in f.files}
        if "X" in data:
            X = data["X"]
        else:
            keys = sorted(k for k in data if k.startswith("X"))
            if not keys:
                raise CliError("the .npz file has no X array.")
            X = np.column_stack([data[k] for k in keys])
    elif path.suffix == ".csv":
        import pandas as pd

        frame = pd.read_csv(path)
        xcols = [c for c in frame.columns if str(c).startswith("X")]
        if not xcols:
            raise CliError("the .csv file has no X* column.")
        X = frame[xcols].to_numpy(dtype=float)
        data = {c: frame[c].to_numpy() for c in frame.columns}
    else:
        raise CliError("the logged-data file must be .npz or .csv.")
    missing = [k for k in ("actions", "rewards", "propensities") if k not in data]
    if missing:
        raise CliError(f"the logged data lack {', '.join(missing)}.")
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    return (
        X,
        np.asarray(data["actions"]).astype(int),
        np.asarray(data["rewards"], dtype=float),
        np.asarray(data["propensities"], dtype=float),
    )


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


def cmd_evaluate(args):
    from skbandit.evaluation import estimate_value

    X, actions, rewards, propensities = _load_logs(args.logs)
    n = X.shape[0]
    if n < 4:
        raise CliError("the logged data need at least 4 rounds.")
    n_actions = int(actions.max()) + 1
    half = n // 2
    policy = make_policy(args.policy, args.seed, params=args.param, n_actions=n_actions)
    policy.fit(X[:half], actions[:half], rewards[:half])
    Xt, at, rt, pt = X[half:], actions[half:], rewards[half:], propensities[half:]
    proba = policy.predict_action_proba(Xt)
    q_hat = _ridge_reward_model(X[:half], actions[:half], rewards[:half], Xt, n_actions)
    values = {
        label: estimate_value(
            proba,
            at,
            rt,
            pt,
            method=method,
            alpha=args.alpha,
            **({"expected_rewards": q_hat} if method == "dr" else {}),
        )
        for method, label in METHODS.items()
    }
    rows = [
        (
            label,
            fmt_number(v.value, ".4f"),
            fmt_number(v.std_error, ".4f"),
            f"[{fmt_number(v.ci_low, '.4f')}, {fmt_number(v.ci_high, '.4f')}]",
        )
        for label, v in values.items()
    ]
    level = f"{100 * (1 - args.alpha):g}% CI"
    label = policy_label(policy, hide=("random_state", "n_actions"))
    title = (
        f"{label} fitted on {half} logged rounds, evaluated on "
        f"{n - half} (logged mean reward {rt.mean():.4f})"
    )
    print()
    print_table(("estimator", "value", "s.e.", level), rows, title)
    if args.out is not None:
        path = Path(args.out) / "evaluate.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = ["estimator,value,std_error,ci_low,ci_high"] + [
            f"{label},{v.value:.4f},{v.std_error:.4f},{v.ci_low:.4f},{v.ci_high:.4f}"
            for label, v in values.items()
        ]
        path.write_text("\n".join(lines) + "\n")
        print(f"estimates saved to {path}")
    return 0


def add_evaluate(sub):
    ev = add_command(
        sub,
        "evaluate",
        help="off-policy evaluation of a policy on a logged-data file",
        description="Fit a policy on the first half of logged data (.npz or .csv "
        "with X* arrays/columns, actions, rewards, propensities) and estimate its "
        "value on the second half with IPS, SNIPS, DR (ridge reward model) and "
        "replay.",
    )
    ev.add_argument("logs", help="logged data, .npz or .csv")
    ev.add_argument(
        "--policy",
        default="LinUCB",
        help="policy class name, or its repr with keyword literals, "
        "e.g. 'LinUCB(beta=0.3)'",
    )
    add_param_option(ev)
    ev.add_argument("--alpha", type=float, default=0.05, help="1 - CI level")
    ev.add_argument("--seed", type=int, default=0, help="seed of the policy")
    ev.add_argument("--out", default=None, help="folder for evaluate.csv")
    ev.set_defaults(func=cmd_evaluate)
