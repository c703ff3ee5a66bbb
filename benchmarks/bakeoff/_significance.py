"""The fair bake-off's statistics: the paired test between two methods on one problem,
and the wins minus losses over the problems.

Bietti, Agarwal and Langford ("A Contextual Bandit Bake-off", 2021) call a method
better than another on a data set when the difference of their progressive validation
losses is significant at α = 0.05 under an approximate Z-test, and count, per method,
its wins minus its losses over the data sets. Here every method sees the same rows in
the same order for a seed, so the test is paired: the per-round differences of the two
methods' 0/1 losses, pooled over the seeds, their mean divided by its standard error.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

ALPHA = 0.05


class Paired(NamedTuple):
    """The paired comparison of method ``a`` against ``b`` on one problem."""

    diff: float  # mean per-round loss of a minus b (negative: a makes fewer mistakes)
    z: float
    p: float  # two-sided
    n: int  # paired rounds (seeds x rounds)

    def verdict(self, alpha=ALPHA):
        """+1 when ``a`` is significantly better (fewer mistakes), -1 when worse."""
        if self.p >= alpha:
            return 0
        return 1 if self.diff < 0 else -1


def paired_test(loss_a, loss_b):
    """The paired Z-test of two methods' per-round losses on the same rounds.

    ``loss_a`` and ``loss_b`` are arrays of the same shape (seeds x rounds, or one
    flat run), the losses of the two methods on the same rows in the same order.
    Identical losses give ``z = 0`` and ``p = 1``."""
    a = np.asarray(loss_a, dtype=float).ravel()
    b = np.asarray(loss_b, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"paired losses differ in shape: {a.shape} and {b.shape}")
    d = a - b
    n = d.size
    mean = float(d.mean())
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    if sd == 0.0:
        # All differences equal: none (no evidence), or the same nonzero one on
        # every round (as strong as evidence gets).
        return Paired(mean, 0.0 if mean == 0 else math.copysign(math.inf, mean),
                      1.0 if mean == 0 else 0.0, n)  # fmt: skip
    z = mean / (sd / math.sqrt(n))
    return Paired(mean, z, math.erfc(abs(z) / math.sqrt(2.0)), n)


def verdicts(losses, alpha=ALPHA):
    """Every ordered pair's verdict on one problem: ``{(a, b): +1, 0 or -1}``.

    ``losses`` maps a method to its losses (seeds x rounds); only the methods given
    are compared."""
    names = list(losses)
    out = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            v = paired_test(losses[a], losses[b]).verdict(alpha)
            out[a, b], out[b, a] = v, -v
    return out


def wins_minus_losses(per_problem, methods=None):
    """Per method: (wins, losses) summed over the problems and the opponents.

    ``per_problem`` is a list of :func:`verdicts` dicts, one per problem. A pair is
    counted on a problem only where both methods ran. ``methods`` restricts both the
    rows and the opponents."""
    totals = {}
    for table in per_problem:
        for (a, b), v in table.items():
            if methods is not None and (a not in methods or b not in methods):
                continue
            wins, losses = totals.get(a, (0, 0))
            totals[a] = (wins + (v > 0), losses + (v < 0))
    return totals


def pairwise_matrix(per_problem, methods):
    """``matrix[a][b]``: the problems where ``a`` beats ``b`` minus those where it
    loses, ``a`` and ``b`` in ``methods``."""
    matrix = {a: dict.fromkeys(methods, 0) for a in methods}
    for table in per_problem:
        for (a, b), v in table.items():
            if a in matrix and b in matrix[a]:
                matrix[a][b] += v
    return matrix
