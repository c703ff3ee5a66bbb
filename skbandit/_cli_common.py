"""What the commands of ``skbandit`` share: options, policies, environments, output.

Tables and plots of online runs come from
:class:`~skbandit.evaluation.ComparisonResult` (``summary()`` and ``plot()``);
what is left here is the text layout of a table, which :mod:`skbandit.evaluation`
does not offer.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

SIMULATORS = ("linear", "logistic")
DATASETS = (
    "digits",
    "shuttle",
    "magic",
    "mushroom",
    "letter",
    "satimage",
    "fashion_mnist",
)


# -- options -------------------------------------------------------------------


def parse_param(text):
    """``key=value`` of ``--param``; the value is a Python literal or a bare string."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--param expects key=value, got {text!r}.")
    key, value = text.split("=", 1)
    try:
        value = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        pass  # a bare string such as schedule=inverse_sqrt
    return key.strip(), value


def add_param_option(parser):
    parser.add_argument(
        "--param",
        action="append",
        type=parse_param,
        metavar="KEY=VALUE",
        help="policy parameter (repeatable); values are Python literals",
    )


def add_online_options(parser, *, n_rounds, out):
    """Options of the commands that play policies online (demo, run, compare)."""
    parser.add_argument("--n-rounds", type=int, default=n_rounds, help="rounds to play")
    parser.add_argument("--seed", type=int, default=0, help="seed of everything")
    parser.add_argument(
        "--batch-size", type=int, default=1, help="rounds per delayed-feedback batch"
    )
    parser.add_argument("--out", default=out, help="folder for the plot")
    parser.add_argument(
        "--no-progress", action="store_true", help="hide the progress bars"
    )


def add_simulator_options(parser, *, n_actions):
    parser.add_argument(
        "--n-actions", type=int, default=n_actions, help="arms of linear/logistic"
    )
    parser.add_argument(
        "--n-features", type=int, default=5, help="dimension of linear/logistic"
    )


# -- policies and environments -------------------------------------------------


def policy_class(name):
    """The class of :mod:`skbandit.policies` called ``name``, in any case."""
    from skbandit import policies

    table = {n.lower(): n for n in policies.__all__}
    if name.lower() not in table:
        raise SystemExit(
            f"skbandit: unknown policy {name!r}; choose from "
            f"{', '.join(sorted(policies.__all__))}."
        )
    return getattr(policies, table[name.lower()])


def make_policy(
    name, seed, *, params=None, simulator=False, n_actions=None, horizon=None
):
    """The policy ``name`` with ``params``, and defaults for what it has of:

    ``random_state`` (``seed``), ``fit_intercept`` (False on a simulator, whose
    features carry the bias already), ``n_actions``, and ``horizon`` (when its
    schedule is ``inverse_sqrt``).
    """
    cls = policy_class(name)
    params = dict(params or {})
    defaults = cls().get_params()
    if "random_state" in defaults:
        params.setdefault("random_state", seed)
    if simulator and "fit_intercept" in defaults:
        params.setdefault("fit_intercept", False)
    if n_actions is not None and "n_actions" in defaults:
        params.setdefault("n_actions", n_actions)
    if (
        horizon is not None
        and "horizon" in defaults
        and params.get("schedule") == "inverse_sqrt"
    ):
        params.setdefault("horizon", horizon)
    return cls(**params)


def make_env(name, *, n_actions=10, n_features=5, data_home=None):
    """A data set of :mod:`skbandit.datasets` as a bandit, or a simulator."""
    from skbandit.environments import ClassificationBandit, LinearBandit, LogisticBandit

    if name in SIMULATORS:
        cls = LinearBandit if name == "linear" else LogisticBandit
        return cls(n_actions=n_actions, n_features=n_features)
    from skbandit.datasets import CLASSIFICATION_LOADERS

    try:
        X, y = CLASSIFICATION_LOADERS[name](data_home=data_home, return_X_y=True)
    except (ImportError, FileNotFoundError) as exc:
        raise SystemExit(f"skbandit: data set {name!r} unavailable: {exc}") from None
    if name not in ("digits", "fashion_mnist"):  # those are in [0, 1]
        from sklearn.preprocessing import StandardScaler

        X = StandardScaler().fit_transform(X)
    return ClassificationBandit(X, y)


# -- output --------------------------------------------------------------------


def print_table(header, rows, title, file=None):
    """Columns padded to their widest cell, the first left-aligned, between rules."""
    file = file or sys.stdout
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    rule = "  ".join("-" * w for w in widths)

    def fmt(row):
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )

    print(title, file=file)
    print(rule, file=file)
    print(fmt(header), file=file)
    print(rule, file=file)
    for row in rows:
        print(fmt(row), file=file)
    print(rule, file=file)


def print_regret_table(result, title, rate="mean reward"):
    """One row per policy of ``result.summary()``.

    The final cumulative regret (mean ± s.e. when there are several runs), a
    per-round figure ``rate`` (``"mean reward"``, ``"accuracy"`` as one minus the
    regret per round, or ``"regret/round"``) and the seconds per run.
    """
    import numpy as np

    several = result.n_runs > 1
    rows = []
    for name, s in result.summary().iterrows():
        runs = [r for r in result.results if r.name == name]
        per_round = s.regret_mean / runs[0].n_rounds
        value = {
            "mean reward": np.mean([r.mean_reward for r in runs]),
            "accuracy": 1 - per_round,
            "regret/round": per_round,
        }[rate]
        regret = f"{s.regret_mean:.1f}"
        if several:
            regret += f" ± {s.regret_se:.1f}"
        rows.append((name, regret, f"{value:.3f}", f"{s.time_mean:.2f}"))
    header = (
        "policy",
        "cumulative regret (mean ± s.e.)" if several else "cumulative regret",
        rate,
        "seconds/run" if several else "seconds",
    )
    print_table(header, rows, title)


def save_regret_plot(result, title, path):
    """``result.plot()`` with a title, saved as a PNG at ``path``; returns ``path``."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5))
    ax = fig.subplots()
    result.plot(ax=ax)
    ax.set_title(title)
    ax.legend(title="policy", loc="upper left")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path
