"""What ``skbandit evaluate`` on a file and ``fit``/``evaluate`` on a Parquet directory
share: the options that name the logged data's columns, the choice of the context
columns, and the table of estimates.

``skbandit._cli_evaluate`` dispatches a Parquet directory to ``skbandit._cli_parquet``;
both import this module, so that neither imports the other's helpers.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import re
from pathlib import Path

from skbandit._cli_common import CliError, fmt_number, print_table

__all__ = [
    "BIASED_REPLAY",
    "METHODS",
    "add_column_options",
    "context_columns",
    "estimates",
    "report_estimates",
]

METHODS = {"ips": "IPS", "snips": "SNIPS", "dr": "DR", "replay": "replay"}


def add_column_options(parser):
    """The names of the logged data's columns (or .npz arrays)."""
    parser.add_argument(
        "--contexts",
        nargs="+",
        default=None,
        metavar="COLUMN",
        help="context columns, in order (default: every column starting with "
        "--context-prefix)",
    )
    parser.add_argument(
        "--context-prefix",
        default="X",
        help="prefix of the context columns; an .npz array of that exact name is "
        "the whole context matrix",
    )
    parser.add_argument("--actions", default="actions", help="column of the arms")
    parser.add_argument("--rewards", default="rewards", help="column of the rewards")
    parser.add_argument(
        "--propensities",
        default="propensities",
        help="column of the logging policy's probability of each logged arm",
    )


def _natural_key(name):
    """``X2`` before ``X10``: the digits in a column name compare as numbers."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def context_columns(data, args, named):
    """The context columns: ``--contexts`` as given, else those starting with
    ``--context-prefix`` (file order for .csv, natural order for .npz), leaving
    out the columns named by the other options."""
    if args.contexts:
        absent = [c for c in args.contexts if c not in data]
        if absent:
            raise CliError(
                f"no context column {absent[0]!r}; the file has {', '.join(data)}."
            )
        return list(args.contexts)
    prefix = args.context_prefix
    if prefix in data and prefix not in named:  # one 2-D array, the .npz "X"
        return [prefix]
    columns = [c for c in data if c.startswith(prefix) and c not in named]
    if not columns:
        raise CliError(
            f"the logged data have no column starting with {prefix!r}; name the "
            "context columns with --contexts or their prefix with --context-prefix."
        )
    return columns if args.logs.endswith(".csv") else sorted(columns, key=_natural_key)


#: The replay row's label when the logging was not uniform (replay is then biased).
BIASED_REPLAY = "replay (biased: the logging was not uniform)"


def estimates(proba, actions, rewards, propensities, expected_rewards, alpha):
    """Every method's :class:`~skbandit.evaluation.PolicyValue`, by its label; the
    replay row labelled :data:`BIASED_REPLAY` when ``estimate_value`` warns that the
    propensities vary."""
    import warnings

    from skbandit.evaluation import estimate_value

    out = {}
    for method, label in METHODS.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = estimate_value(
                proba,
                actions,
                rewards,
                propensities,
                method=method,
                alpha=alpha,
                **({"expected_rewards": expected_rewards} if method == "dr" else {}),
            )
        for w in caught:
            if method == "replay" and "replay assumes uniformly" in str(w.message):
                label = BIASED_REPLAY
            else:  # any other warning is the user's to see
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        out[label] = value
    return out


def report_estimates(values, title, args):
    """Print the estimates' table; write evaluate.csv into ``--out`` if given."""
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
