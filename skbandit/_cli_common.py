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

SIMULATORS = ("linear", "logistic", "topk", "cascade")
#: The simulators whose rounds are slates (per-arm contexts, top-K semi-bandit or
#: cascade feedback): the only ones a slate policy can play, and only slate policies.
SLATE_SIMULATORS = ("topk", "cascade")


class CliError(Exception):
    """A user error: ``main`` prints it as one line and exits with status 2."""


def datasets():
    """The data sets of :mod:`skbandit.datasets` and the simulators, in order."""
    from skbandit.datasets import CLASSIFICATION_LOADERS

    return (*CLASSIFICATION_LOADERS, *SIMULATORS)


# -- options -------------------------------------------------------------------


def add_command(sub, name, **kwargs):
    """A subcommand whose help shows every option's default."""
    return sub.add_parser(
        name, formatter_class=argparse.ArgumentDefaultsHelpFormatter, **kwargs
    )


def positive_int(text):
    """``type=`` of the options that count rounds, runs and batches."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


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


def add_param_option(parser, *, several=False):
    parser.add_argument(
        "--param",
        action="append",
        type=parse_param,
        metavar="KEY=VALUE",
        help="policy parameter (repeatable); values are Python literals"
        + ("; set on every policy that has the parameter" if several else ""),
    )


def add_env_option(parser):
    """``--dataset`` (or ``--env``) and ``--data-home``: the same choice everywhere."""
    parser.add_argument(
        "--dataset",
        "--env",
        dest="env",
        choices=datasets(),
        default="digits",
        metavar="NAME",
        help=f"a data set of skbandit.datasets or a simulator: {', '.join(datasets())}",
    )
    parser.add_argument(
        "--data-home", default=None, help="folder searched first for the data files"
    )


def add_online_options(parser, *, n_rounds, out):
    """Options of the commands that play policies online (demo, run, compare)."""
    parser.add_argument(
        "--n-rounds", type=positive_int, default=n_rounds, help="rounds to play"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of everything")
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=1,
        help="rounds per delayed-feedback batch",
    )
    parser.add_argument("--out", default=out, help="folder for the plot")
    parser.add_argument(
        "--no-progress", action="store_true", help="hide the progress bars"
    )


def add_simulator_options(parser, *, n_actions=10):
    parser.add_argument(
        "--n-actions",
        type=positive_int,
        default=n_actions,
        help="arms of the simulators (linear, logistic, topk, cascade)",
    )
    parser.add_argument(
        "--n-features",
        type=positive_int,
        default=5,
        help="dimension of the simulators' contexts",
    )
    parser.add_argument(
        "--slate-size",
        type=positive_int,
        default=4,
        help="arms per slate of topk and cascade, and of the slate policies",
    )


# -- policies and environments -------------------------------------------------


def policy_class(name):
    """The class of :mod:`skbandit.policies` called ``name``, in any case."""
    from skbandit import policies

    table = {n.lower(): n for n in policies.__all__}
    if name.lower() not in table:
        raise CliError(
            f"unknown policy {name!r}; choose from "
            f"{', '.join(sorted(policies.__all__))}."
        )
    return getattr(policies, table[name.lower()])


def parse_policy(text):
    """``"LinTS(nu=0.1)"`` (or ``"LinTS"``) as its class and keyword parameters.

    Read with :mod:`ast`, never evaluated: only a name called with keyword literals
    (numbers, quoted strings, True, False, None, tuples, lists, dicts) is accepted.
    """
    usage = "write a policy as Name or Name(key=value, ...), e.g. 'LinTS(nu=0.1)'"
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise CliError(
            f"cannot read the policy {text!r} ({exc.msg}); {usage}."
        ) from None
    if isinstance(node, ast.Name):
        return policy_class(node.id), {}
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        raise CliError(f"cannot read the policy {text!r}; {usage}.")
    cls = policy_class(node.func.id)
    if node.args or any(kw.arg is None for kw in node.keywords):
        raise CliError(f"{text}: parameters go by keyword; {usage}.")
    params = {}
    for kw in node.keywords:
        try:
            params[kw.arg] = ast.literal_eval(kw.value)
        except ValueError:
            raise CliError(
                f"{text}: the value of {cls.__name__}'s parameter {kw.arg!r} must be "
                "a literal (a number, a quoted string, True, False, None, a tuple), "
                f"got {ast.unparse(kw.value)}."
            ) from None
    return cls, params


def make_policy(
    spec,
    seed,
    *,
    params=None,
    simulator=False,
    n_actions=None,
    horizon=None,
    slate_size=None,
):
    """The policy ``spec`` (``"LinTS"`` or ``"LinTS(nu=0.1)"``) with ``params``
    (``--param``, which win), and defaults for what it has of:

    ``random_state`` (``seed``), ``fit_intercept`` (False on a simulator, whose
    features carry the bias already), ``n_actions``, and ``horizon`` (when its
    schedule is ``inverse_sqrt``). A parameter the class lacks, or a value it
    refuses, is a :class:`CliError` naming the parameter.
    """
    cls, given = parse_policy(spec)
    params = {**given, **dict(params or {})}
    defaults = cls().get_params(deep=False)
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise CliError(
            f"{cls.__name__} has no parameter {unknown[0]!r}; its parameters are "
            f"{', '.join(sorted(defaults))}."
        )
    if "random_state" in defaults:
        params.setdefault("random_state", seed)
    if simulator and "fit_intercept" in defaults:
        params.setdefault("fit_intercept", False)
    if n_actions is not None and "n_actions" in defaults:
        params.setdefault("n_actions", n_actions)
    if slate_size is not None and "slate_size" in defaults:
        params.setdefault("slate_size", slate_size)
    if (
        horizon is not None
        and "horizon" in defaults
        and params.get("schedule") == "inverse_sqrt"
    ):
        params.setdefault("horizon", horizon)
    policy = cls(**params)
    policy._validate_params()  # a bad value fails here, in one line, not mid-run
    return policy


def policy_label(policy, *, hide=("random_state",)):
    """``"LinTS(nu=0.1)"``: the class and its non-default parameters, as the command
    line reads them back; ``hide`` those the run sets (the seed is in the title)."""
    defaults = type(policy)().get_params(deep=False)
    changed = [
        f"{key}={value!r}"
        for key, value in policy.get_params(deep=False).items()
        if key not in hide and repr(value) != repr(defaults.get(key))
    ]
    name = type(policy).__name__
    return f"{name}({', '.join(changed)})" if changed else name


def check_policy_fits_env(policy, env_name):
    """A slate policy plays only the slate simulators, and only slate policies do."""
    from skbandit.utils._tags import is_slate_policy

    name = type(policy).__name__
    if is_slate_policy(policy) and env_name not in SLATE_SIMULATORS:
        raise CliError(
            f"{name} chooses slates of arms; run it on a slate simulator, "
            f"--dataset {' or '.join(SLATE_SIMULATORS)}, not {env_name!r}."
        )
    if not is_slate_policy(policy) and env_name in SLATE_SIMULATORS:
        raise CliError(
            f"{env_name} is a slate simulator: run a slate policy on it (CNUCB, "
            f"CNTS, CombLinUCB, CombLinTS), not {name}."
        )


def make_env(name, *, n_actions=10, n_features=5, slate_size=4, data_home=None):
    """A data set of :mod:`skbandit.datasets` as a bandit, or a simulator."""
    from skbandit.environments import (
        CascadeBandit,
        ClassificationBandit,
        LinearBandit,
        LogisticBandit,
        TopKBandit,
    )

    if name in SLATE_SIMULATORS:
        cls = TopKBandit if name == "topk" else CascadeBandit
        return cls(
            "linear", n_actions=n_actions, n_features=n_features, slate_size=slate_size
        )
    if name in SIMULATORS:
        cls = LinearBandit if name == "linear" else LogisticBandit
        return cls(n_actions=n_actions, n_features=n_features)
    from skbandit.datasets import CLASSIFICATION_LOADERS

    try:
        X, y = CLASSIFICATION_LOADERS[name](data_home=data_home, return_X_y=True)
    except (ImportError, FileNotFoundError) as exc:
        raise CliError(f"data set {name!r} unavailable: {exc}") from None
    if name not in ("digits", "fashion_mnist"):  # those are in [0, 1]
        from sklearn.preprocessing import StandardScaler

        X = StandardScaler().fit_transform(X)
    return ClassificationBandit(X, y)


# -- output --------------------------------------------------------------------


def fmt_number(value, spec):
    """``format(value, spec)``, or ``"n/a"`` where there is no number (NaN, inf)."""
    import math

    return format(value, spec) if math.isfinite(value) else "n/a"


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
        regret = fmt_number(s.regret_mean, ".1f")
        if several:
            regret += f" ± {fmt_number(s.regret_se, '.1f')}"
        rows.append(
            (name, regret, fmt_number(value, ".3f"), fmt_number(s.time_mean, ".2f"))
        )
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
