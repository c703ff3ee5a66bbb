"""Command line: ``skbandit demo`` and ``skbandit run`` (also ``python -m skbandit``).

``skbandit demo`` runs the linear policies online on the digits data set turned into
a 10-armed bandit, prints a regret table and saves a regret plot. ``skbandit run``
runs one policy, configured with ``--param key=value``, on the digits bandit or on
the linear / logistic problems of Kveton et al. (2020).
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
    return parser


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
