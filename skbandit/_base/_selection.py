"""Choosing arms from scores: the random-tie argmax of ``select`` and its exact law."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from skbandit.exceptions import _non_finite_scores

__all__ = ["draw_from", "greedy_proba", "random_argmax", "uniform_arms"]


def random_argmax(
    scores: NDArray, rng: np.random.Generator, mask: NDArray | None = None
) -> NDArray[np.int64]:
    """Row-wise argmax over available arms, ties broken uniformly at random."""
    if mask is None and scores.shape[0] == 1:  # the online loop's one round
        row = scores[0]
        k = int(row.argmax())
        best = row[k]
        # list.count: a third of the cost of counting a comparison's array
        if math.isfinite(best) and row.tolist().count(best) == 1:
            return np.array([k])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    first = np.argmax(scores, axis=1)
    # Fancy indexing, not take_along_axis: the same values at a third of the cost,
    # which shows on a batch of cheap scores (epsilon-greedy).
    best = scores[np.arange(scores.shape[0]), first][:, None]
    if not np.isfinite(best).all():
        raise _non_finite_scores()
    ties = scores >= best
    if np.count_nonzero(ties) == scores.shape[0]:  # no ties: the common case
        return first
    # Uniform among the tied maxima: the tie-break paper 003 allows ("any rule", P15).
    return np.argmax(np.where(ties, rng.random(scores.shape), -1.0), axis=1)


def uniform_arms(
    n_rows: int, n_actions: int, rng: np.random.Generator, mask: NDArray | None = None
) -> NDArray[np.int64]:
    """A uniformly random available arm per row: ``random_argmax`` of equal scores,
    from the same draws, without scoring (epsilon-greedy's exploration)."""
    if mask is not None or n_actions == 1:  # ties it may break without a draw
        return random_argmax(np.zeros((n_rows, n_actions)), rng, mask)
    return np.argmax(rng.random((n_rows, n_actions)), axis=1)


def greedy_proba(scores: NDArray, mask: NDArray | None = None) -> NDArray:
    """Exact action distribution of a random-tie argmax: uniform over the maxima."""
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    ties = (scores >= scores.max(axis=1, keepdims=True)).astype(np.float64)
    return ties / ties.sum(axis=1, keepdims=True)


def draw_from(proba: NDArray, rng: np.random.Generator) -> NDArray[np.int64]:
    """One arm per row drawn from the rows of ``proba`` (one uniform per row)."""
    cumulative = np.cumsum(proba, axis=1)
    u = rng.random(proba.shape[0])[:, None] * cumulative[:, -1:]
    return np.argmax(cumulative > u, axis=1).astype(np.int64)
