"""Command line: ``skbandit demo|run|compare|evaluate|fit|serve`` (or ``-m skbandit``).

``skbandit demo`` runs the linear policies online on the digits data set turned into
a 10-armed bandit, prints a regret table and saves a regret plot. ``skbandit run``
runs one policy on a data set (any loader of :mod:`skbandit.datasets`) or on the
linear / logistic problems of Kveton et al. (2020). ``skbandit compare`` runs
several policies over several seeds and prints mean +- standard error of their
regret. ``skbandit evaluate`` estimates a policy's value off-policy on a logged-data
file (.npz or .csv) or a Parquet directory (on Dask). ``skbandit fit`` fits a policy
on a Parquet directory of logs, on Dask, and pickles it (``skbandit._cli_parquet``).
``skbandit serve`` serves a pickled policy over HTTP, logging every decision and reward
and learning from them (``skbandit._cli_serve``).

A policy is written as its class name or its repr, ``"LinTS(nu=0.1)"`` (keyword
literals only, read with :mod:`ast`, never evaluated); ``--param key=value`` sets
one more parameter. Every table names each policy with its non-default parameters.
A user error is one line on stderr and exit status 2.

The commands live in ``skbandit._cli_online`` (demo, run, compare) and
``skbandit._cli_evaluate``, the Parquet paths in ``skbandit._cli_parquet``; what they
share in ``skbandit._cli_common``, and what the two evaluate paths share (the logged
data's columns, the table of estimates) in ``skbandit._cli_logs``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import sys

from skbandit._cli_common import CliError
from skbandit._cli_evaluate import add_evaluate
from skbandit._cli_online import add_compare, add_demo, add_run
from skbandit._cli_parquet import add_fit
from skbandit._cli_serve import add_serve

__all__ = ["main"]


def _parser():
    parser = argparse.ArgumentParser(
        prog="skbandit",
        description="Contextual bandits as scikit-learn estimators.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (add_demo, add_run, add_compare, add_evaluate, add_fit, add_serve):
        add(sub)
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
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (CliError, ValueError) as exc:
        # A user error (InvalidParameterError is a ValueError): one line, status 2,
        # as argparse reports a bad option; no traceback.
        message = " ".join(str(exc).split())
        parser.exit(2, f"skbandit {args.command}: error: {message}\n")


if __name__ == "__main__":
    sys.exit(main())
