"""The online standardisation of a fit over Dask collections, for the Newton fits
(GLM-UCB, UCB-GLM, LogTS, GLMES) whose every pass reads all partitions.

A standardising policy (``standardize``, :mod:`skbandit.utils._standardize`) scales a
learning row by the moments of the rows up to its round. Over partitions: a first
pass sums every partition's raw contexts (``ContextMoments`` of its rows, each about
its own first row), and partition ``k`` then scales its rows prequentially from the
moments of partitions ``0 .. k-1`` (``ContextMoments.followed_by``), the rows the
in-memory fit scales (to the rounding of the sums' order); the fitted policy keeps
the moments of all rows.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import dask
from sklearn.base import clone

from skbandit._dask._fuse import compute_fused
from skbandit.utils._standardize import ContextMoments, standardizes

__all__ = ["partition_moments", "validated"]


def validated(template, before, X, actions, rewards, weight, mask):
    """A copy of the policy, initialised, and the partition's inputs validated:
    ``(policy, X, n_actions, (actions, rewards, weight))``, contexts scaled from the
    moments ``before`` this partition (``None``: as given)."""
    policy = clone(template).set_params(standardize=False)
    X, n_actions, _, feedback = policy._validated(
        X, True, mask, (actions, rewards, weight)
    )
    policy.set_params(standardize=template.standardize)
    policy._initialize(X, n_actions)
    if before is not None:
        X, policy._context_moments = before.learn(X, policy._context_dtype)
    return policy, X, n_actions, feedback


def _raw_moments(template, X, actions, rewards, weight, mask):
    """The moments of a partition's raw contexts (``None`` if it has no rows)."""
    if X.shape[0] == 0:
        return None
    policy, X, _, _ = validated(template, None, X, actions, rewards, weight, mask)
    return ContextMoments.empty(X.shape[-1]).learn(X, policy._context_dtype)[1]


def partition_moments(template, partitions, n_features):
    """The moments each partition starts from, and those of all rows (``None``s
    when the policy reads its contexts as given)."""
    if not standardizes(template):
        return [None] * len(partitions), None
    shared = dask.delayed(template)
    delayed = [dask.delayed(_raw_moments)(shared, *part) for part in partitions]
    parts = compute_fused(dask.delayed(list)(delayed), delayed)
    befores, moments = [], ContextMoments.empty(n_features)
    for part in parts:
        befores.append(moments)
        if part is not None:
            moments = moments.followed_by(part)
    return befores, moments
