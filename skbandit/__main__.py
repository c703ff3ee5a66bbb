"""Command line: ``skbandit demo|run|compare|evaluate`` (or ``python -m skbandit``).

``skbandit demo`` runs the linear policies online on the digits data set turned into
a 10-armed bandit, prints a regret table and saves a regret plot. ``skbandit run``
runs one policy, configured with ``--param key=value``, on the digits bandit or on
the linear / logistic problems of Kveton et al. (2020). ``skbandit compare`` runs
several policies over several seeds on a data set (any loader of
:mod:`skbandit.datasets`) or environment and prints mean +- standard error of their
regret. ``skbandit evaluate`` estimates a policy's value off-policy on a logged-data
file (.npz or .csv).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import ast
import sys
import time
from pathlib import Path

__all__ = ["main"]

ENVIRONMENTS = ("digits", "linear", "logistic")


def _digits_env(encoding="shared"):
    from sklearn.datasets import load_digits

    from skbandit.environments import ClassificationBandit

    X, y = load_digits(return_X_y=True)
    # Pixel intensities are 0..16: dividing keeps features in [0, 1] with no leak.
    return ClassificationBandit(X / 16.0, y, encoding=encoding)


def _make_env(args):
    from skbandit.environments import LinearBandit, LogisticBandit

    if args.env == "digits":
        return _digits_env()
    cls = LinearBandit if args.env == "linear" else LogisticBandit
    return cls(n_actions=args.n_actions, n_features=args.n_features)


def _demo_policies(seed, n_rounds):
    from skbandit import policies

    out = {
        "LinUCB": policies.LinUCB(beta=0.3, random_state=seed),
        "LinTS": policies.LinTS(nu=0.1, random_state=seed),
    }
    if hasattr(policies, "LinPHE"):
        out["LinPHE"] = policies.LinPHE(perturbation_scale=0.5, random_state=seed)
    out["EpsilonGreedy"] = policies.EpsilonGreedy(epsilon=0.05, random_state=seed)
    out["Random"] = policies.RandomPolicy(random_state=seed)
    return out


def _print_table(results, title, file=None):
    file = file or sys.stdout
    rows = [
        (
            name,
            f"{res.total_regret:.1f}",
            f"{res.mean_reward:.3f}",
            f"{res.total_time:.2f}",
        )
        for name, res in results.items()
    ]
    header = ("policy", "cumulative regret", "mean reward", "seconds")
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(4)]
    line = "  ".join("-" * w for w in widths)
    print(title, file=file)
    print(line, file=file)
    print(
        "  ".join(
            h.ljust(w) if i == 0 else h.rjust(w)
            for i, (h, w) in enumerate(zip(header, widths, strict=True))
        ),
        file=file,
    )
    print(line, file=file)
    for r in rows:
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            ),
            file=file,
        )
    print(line, file=file)


def _plot(results, title, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, res in results.items():
        res.plot(ax=ax, label=name, linewidth=1.8)
    ax.set_title(title)
    ax.legend(title="policy", loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _run_all(policies, env, args):
    from skbandit.evaluation import simulate

    results = {}
    for name, policy in policies.items():
        results[name] = simulate(
            policy,
            env,
            args.n_rounds,
            batch_size=args.batch_size,
            random_state=args.seed,
            progress=not args.no_progress,
            name=name,
        )
    return results


def _cmd_demo(args):
    env = _digits_env()
    start = time.perf_counter()
    results = _run_all(_demo_policies(args.seed, args.n_rounds), env, args)
    title = (
        f"digits as a {env.n_actions}-armed bandit: {args.n_rounds} rounds, "
        f"seed {args.seed}"
    )
    print()
    _print_table(results, f"{title} (mean reward = accuracy; regret = mistakes)")
    path = _plot(results, title, Path(args.out) / "demo_digits_regret.png")
    print(f"regret curves saved to {path}")
    print(f"total {time.perf_counter() - start:.1f} s")
    return 0


def _parse_param(text):
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--param expects key=value, got {text!r}.")
    key, value = text.split("=", 1)
    try:
        value = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        pass  # a bare string such as schedule=inverse_sqrt
    return key.strip(), value


def _policy_class(name):
    from skbandit import policies

    table = {n.lower(): n for n in policies.__all__}
    if name.lower() not in table:
        raise SystemExit(
            f"skbandit: unknown policy {name!r}; choose from "
            f"{', '.join(sorted(policies.__all__))}."
        )
    return getattr(policies, table[name.lower()])


def _cmd_run(args):
    cls = _policy_class(args.policy)
    params = dict(args.param or [])
    if "random_state" in cls().get_params() and "random_state" not in params:
        params["random_state"] = args.seed
    if args.env != "digits" and "fit_intercept" in cls().get_params():
        # The linear problems' features carry the bias already.
        params.setdefault("fit_intercept", False)
    if "horizon" in cls().get_params() and params.get("schedule") == "inverse_sqrt":
        params.setdefault("horizon", args.n_rounds)
    policy = cls(**params)
    env = _make_env(args)
    results = _run_all({cls.__name__: policy}, env, args)
    title = f"{args.env}: {args.n_rounds} rounds, seed {args.seed}"
    print()
    print(repr(policy))
    _print_table(results, title)
    if args.out is not None:
        path = _plot(results, title, Path(args.out) / f"run_{args.env}_regret.png")
        print(f"regret curve saved to {path}")
    return 0


def _common(parser, *, n_rounds, out):
    parser.add_argument("--n-rounds", type=int, default=n_rounds, help="rounds to play")
    parser.add_argument("--seed", type=int, default=0, help="seed of everything")
    parser.add_argument(
        "--batch-size", type=int, default=1, help="rounds per delayed-feedback batch"
    )
    parser.add_argument("--out", default=out, help="folder for the plot")
    parser.add_argument(
        "--no-progress", action="store_true", help="hide the progress bars"
    )


def _parser():
    parser = argparse.ArgumentParser(
        prog="skbandit",
        description="Contextual bandits as scikit-learn estimators.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser(
        "demo",
        help="linear policies online on the digits bandit, with a regret plot",
        description="Run LinUCB, LinTS, LinPHE, epsilon-greedy and the random "
        "policy online on digits as a 10-armed bandit.",
    )
    _common(demo, n_rounds=3000, out="results")
    demo.set_defaults(func=_cmd_demo)

    run = sub.add_parser(
        "run",
        help="one policy on one environment",
        description="Run one policy online, e.g. "
        "'skbandit run LinUCB --env linear --param beta=2.0'.",
    )
    run.add_argument("policy", help="policy class name, e.g. LinUCB (any case)")
    run.add_argument(
        "--param",
        action="append",
        type=_parse_param,
        metavar="KEY=VALUE",
        help="policy parameter (repeatable); values are Python literals",
    )
    run.add_argument("--env", choices=ENVIRONMENTS, default="digits")
    run.add_argument(
        "--n-actions", type=int, default=100, help="arms of linear/logistic"
    )
    run.add_argument(
        "--n-features", type=int, default=5, help="dimension of linear/logistic"
    )
    _common(run, n_rounds=2000, out=None)
    run.set_defaults(func=_cmd_run)

    comp = sub.add_parser(
        "compare",
        help="several policies over several seeds, mean ± s.e. of regret",
        description="Compare policies by name, e.g. 'skbandit compare LinUCB LinTS "
        "RandomPolicy --dataset magic --n-runs 8'.",
    )
    comp.add_argument("policies", nargs="+", help="policy class names (any case)")
    comp.add_argument(
        "--dataset",
        choices=DATASET_CHOICES,
        default="digits",
        help="a data set of skbandit.datasets, or a linear/logistic simulator",
    )
    comp.add_argument(
        "--data-home", default=None, help="folder searched first for the data files"
    )
    comp.add_argument("--n-runs", type=int, default=4, help="seeds per policy")
    comp.add_argument(
        "--n-actions", type=int, default=10, help="arms of linear/logistic"
    )
    comp.add_argument(
        "--n-features", type=int, default=5, help="dimension of linear/logistic"
    )
    _common(comp, n_rounds=2000, out="results")
    comp.set_defaults(func=_cmd_compare)

    ev = sub.add_parser(
        "evaluate",
        help="off-policy evaluation of a policy on a logged-data file",
        description="Fit a policy on the first half of logged data (.npz or .csv "
        "with X* arrays/columns, actions, rewards, propensities) and estimate its "
        "value on the second half with IPS, SNIPS, DR (ridge reward model) and "
        "replay.",
    )
    ev.add_argument("logs", help="logged data, .npz or .csv")
    ev.add_argument("--policy", default="LinUCB", help="policy class name")
    ev.add_argument(
        "--param",
        action="append",
        type=_parse_param,
        metavar="KEY=VALUE",
        help="policy parameter (repeatable); values are Python literals",
    )
    ev.add_argument("--alpha", type=float, default=0.05, help="1 - CI level")
    ev.add_argument("--seed", type=int, default=0, help="seed of the policy")
    ev.add_argument("--out", default=None, help="folder for evaluate.csv")
    ev.set_defaults(func=_cmd_evaluate, n_rounds=1, batch_size=1)
    return parser


DATASET_CHOICES = (
    "digits",
    "shuttle",
    "magic",
    "mushroom",
    "letter",
    "satimage",
    "fashion_mnist",
    "linear",
    "logistic",
)


def _dataset_env(args):
    """The environment of ``--dataset``: a loader's data as a bandit, or a simulator."""
    from skbandit.environments import ClassificationBandit, LinearBandit, LogisticBandit

    if args.dataset in ("linear", "logistic"):
        cls = LinearBandit if args.dataset == "linear" else LogisticBandit
        return cls(n_actions=args.n_actions, n_features=args.n_features)
    from skbandit.datasets import CLASSIFICATION_LOADERS

    try:
        X, y = CLASSIFICATION_LOADERS[args.dataset](
            data_home=args.data_home, return_X_y=True
        )
    except (ImportError, FileNotFoundError) as exc:
        raise SystemExit(
            f"skbandit: data set {args.dataset!r} unavailable: {exc}"
        ) from None
    if args.dataset not in ("digits", "fashion_mnist"):  # those are in [0, 1]
        from sklearn.preprocessing import StandardScaler

        X = StandardScaler().fit_transform(X)
    return ClassificationBandit(X, y)


def _make_policy(name, seed, *, params=None, linear_env=False, n_actions=None):
    cls = _policy_class(name)
    params = dict(params or {})
    defaults = cls().get_params()
    if "random_state" in defaults:
        params.setdefault("random_state", seed)
    if linear_env and "fit_intercept" in defaults:
        params.setdefault("fit_intercept", False)
    if n_actions is not None and "n_actions" in defaults:
        params.setdefault("n_actions", n_actions)
    return cls(**params)


def _format_table(header, rows, title, file=None):
    file = file or sys.stdout
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    line = "  ".join("-" * w for w in widths)

    def fmt(r):
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )

    print(title, file=file)
    print(line, file=file)
    print(fmt(header), file=file)
    print(line, file=file)
    for r in rows:
        print(fmt(r), file=file)
    print(line, file=file)


def _compare_runs(policies, env, args):
    """Final regret, time and regret curves per policy: ``compare`` or a loop."""
    import numpy as np

    try:
        from skbandit.evaluation import compare
    except ImportError:  # pragma: no cover - compare is optional
        compare = None
    out = {}
    if compare is not None:
        res = compare(
            policies,
            env,
            args.n_rounds,
            n_runs=args.n_runs,
            batch_size=args.batch_size,
            random_state=args.seed,
            progress=not args.no_progress,
        )
        for name in policies:
            runs = res._runs(name) if hasattr(res, "_runs") else None
            curves = res.cumulative_regret(name)
            times = [r.total_time for r in runs] if runs else [np.nan]
            out[name] = (curves, np.asarray(times))
        return out
    from skbandit.evaluation import simulate

    for name, policy in policies.items():
        runs = [
            simulate(
                policy.set_params(random_state=args.seed + i)
                if "random_state" in policy.get_params()
                else policy,
                env,
                args.n_rounds,
                batch_size=args.batch_size,
                random_state=args.seed + i,
                progress=False,
                name=name,
            )
            for i in range(args.n_runs)
        ]
        curves = np.stack([r.cumulative_regret for r in runs])
        out[name] = (curves, np.array([r.total_time for r in runs]))
    return out


def _cmd_compare(args):
    import numpy as np

    if args.n_runs < 1:
        raise SystemExit("skbandit: --n-runs must be positive.")
    env = _dataset_env(args)
    linear = args.dataset in ("linear", "logistic")
    policies = {}
    for name in args.policies:
        policy = _make_policy(name, args.seed, linear_env=linear)
        policies[type(policy).__name__] = policy
    runs = _compare_runs(policies, env, args)
    rows = []
    for name, (curves, times) in runs.items():
        final = curves[:, -1]
        se = final.std(ddof=1) / np.sqrt(final.size) if final.size > 1 else np.nan
        rows.append(
            (
                name,
                f"{final.mean():.1f} ± {se:.1f}",
                f"{1 - final.mean() / args.n_rounds:.3f}"
                if not linear
                else f"{final.mean() / args.n_rounds:.3f}",
                f"{np.nanmean(times):.2f}",
            )
        )
    header = (
        "policy",
        "cumulative regret (mean ± s.e.)",
        "accuracy" if not linear else "regret/round",
        "seconds/run",
    )
    title = (
        f"{args.dataset}: {len(policies)} policies, {args.n_runs} runs of "
        f"{args.n_rounds} rounds, seed {args.seed}"
    )
    print()
    _format_table(header, rows, title)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, (curves, _) in runs.items():
        mean = curves.mean(axis=0)
        t = np.arange(1, mean.size + 1)
        ax.plot(t, mean, label=name)
        if curves.shape[0] > 1:
            se = curves.std(axis=0, ddof=1) / np.sqrt(curves.shape[0])
            ax.fill_between(t, mean - se, mean + se, alpha=0.2)
    ax.set_xlabel("round")
    ax.set_ylabel("cumulative regret")
    ax.set_title(title)
    ax.legend(title="policy", loc="upper left")
    fig.tight_layout()
    path = Path(args.out) / f"compare_{args.dataset}_regret.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"regret curves saved to {path}")
    return 0


def _load_logs(path):
    """Logged data from .npz or .csv: X (or X* arrays/columns), actions, rewards,
    propensities."""
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise SystemExit(f"skbandit: no logged-data file {str(path)!r}.")
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as f:
            data = {k: f[k] for k in f.files}
        if "X" in data:
            X = data["X"]
        else:
            keys = sorted(k for k in data if k.startswith("X"))
            if not keys:
                raise SystemExit("skbandit: the .npz file has no X array.")
            X = np.column_stack([data[k] for k in keys])
    elif path.suffix == ".csv":
        import pandas as pd

        frame = pd.read_csv(path)
        xcols = [c for c in frame.columns if str(c).startswith("X")]
        if not xcols:
            raise SystemExit("skbandit: the .csv file has no X* column.")
        X = frame[xcols].to_numpy(dtype=float)
        data = {c: frame[c].to_numpy() for c in frame.columns}
    else:
        raise SystemExit("skbandit: the logged-data file must be .npz or .csv.")
    missing = [k for k in ("actions", "rewards", "propensities") if k not in data]
    if missing:
        raise SystemExit(f"skbandit: the logged data lack {', '.join(missing)}.")
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


def _cmd_evaluate(args):
    from skbandit.evaluation import estimate_value

    X, actions, rewards, propensities = _load_logs(args.logs)
    n = X.shape[0]
    if n < 4:
        raise SystemExit("skbandit: the logged data need at least 4 rounds.")
    n_actions = int(actions.max()) + 1
    half = n // 2
    policy = _make_policy(
        args.policy, args.seed, params=dict(args.param or []), n_actions=n_actions
    )
    policy.fit(X[:half], actions[:half], rewards[:half])
    Xt, at, rt, pt = X[half:], actions[half:], rewards[half:], propensities[half:]
    proba = policy.predict_action_proba(Xt)
    q_hat = _ridge_reward_model(X[:half], actions[:half], rewards[:half], Xt, n_actions)
    rows = []
    for method in ("ips", "snips", "dr", "replay"):
        kwargs = {"expected_rewards": q_hat} if method == "dr" else {}
        v = estimate_value(proba, at, rt, pt, method=method, alpha=args.alpha, **kwargs)
        rows.append(
            (
                method.upper() if method != "replay" else "replay",
                f"{v.value:.4f}",
                f"{v.std_error:.4f}",
                f"[{v.ci_low:.4f}, {v.ci_high:.4f}]",
            )
        )
    level = f"{100 * (1 - args.alpha):g}% CI"
    title = (
        f"{type(policy).__name__} fitted on {half} logged rounds, evaluated on "
        f"{n - half} (logged mean reward {rt.mean():.4f})"
    )
    print()
    _format_table(("estimator", "value", "s.e.", level), rows, title)
    if args.out is not None:
        path = Path(args.out) / "evaluate.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = ["estimator,value,std_error,ci_low,ci_high"] + [
            f"{r[0]},{r[1]},{r[2]},{r[3][1:-1].replace(' ', '')}" for r in rows
        ]
        path.write_text("\n".join(lines) + "\n")
        print(f"estimates saved to {path}")
    return 0


def main(argv=None):
    """Entry point of the ``skbandit`` command.

    Parameters
    ----------
    argv : list of str, default=None
        Arguments; ``sys.argv[1:]`` by default.

    Returns
    -------
    status : int
        Exit status, 0 on success.
    """
    args = _parser().parse_args(argv)
    if args.n_rounds < 1 or args.batch_size < 1:
        raise SystemExit("skbandit: --n-rounds and --batch-size must be positive.")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
