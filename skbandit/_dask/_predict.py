"""Batch scoring over Dask collections: ``select``, ``predict_scores`` and
``predict_action_proba`` map over the partitions and return Dask arrays.

The fitted policy enters the graph once (a single key that each worker fetches
once), and each partition works on its own copy of it, so that tasks running side
by side on one worker never share a random state or a cache.

Random draws (``select``): one call draws a root seed from the policy's own random
state (the policy's state advances once per call, as a numpy ``select`` advances
it), and partition ``k`` draws from ``numpy.random.default_rng([root, k])``. The
arms are thus reproducible given the policy's state and the partitioning; they are
the in-memory ``select``'s for a policy whose choice draws nothing (LinUCB's
argmax away from exact ties, the greedy arm of an ε-greedy policy at ε = 0) and
otherwise the same in law, not draw for draw. ``predict_scores`` and
``predict_action_proba`` draw nothing from the policy (its Monte Carlo
propensities use a fixed seed): they equal the in-memory values row for row.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy

import dask
import dask.array as da
import numpy as np

from skbandit._dask._ope import row_aligned

__all__ = ["dask_predict"]


def _partition(method, policy, X, action_mask, *, n_out, root, kwargs, block_id):
    own = copy.deepcopy(policy)  # tasks side by side never share state
    n = X.shape[0]
    if n == 0:
        return np.zeros((0, n_out))
    if method == "select":
        own._rng = np.random.default_rng([root, block_id[0]])
        actions, propensities = own.select(
            X, action_mask=action_mask, return_propensities=True
        )
        return np.column_stack([actions, propensities])
    if method == "predict_scores":
        out = own.predict_scores(X, **kwargs)
        return np.hstack(out) if isinstance(out, tuple) else out
    return own.predict_action_proba(X, action_mask=action_mask)


def dask_predict(policy, method, X, *, action_mask=None, **kwargs):
    """``policy.<method>(X)`` over Dask partitions; see the module docstring."""
    from sklearn.utils.validation import check_is_fitted

    if method != "select" or policy._is_initialized():
        check_is_fitted(policy)
    else:  # select from the prior needs n_features_in_: fit it on data first
        raise ValueError(
            f"{type(policy).__name__}.select on a Dask collection needs a fitted "
            "policy (its state is broadcast to the workers); fit it first."
        )
    X, mask = row_aligned(X, action_mask)
    X = X.rechunk({i: -1 for i in range(1, X.ndim)})
    n_actions = policy.n_actions_
    root = None
    if method == "select":
        root = int(policy._rng.integers(np.iinfo(np.int64).max))
        n_out = 2
    elif method == "predict_scores" and kwargs.get("return_std"):
        n_out = 2 * n_actions
    else:
        n_out = n_actions
    shared = dask.delayed(policy, traverse=False)  # one key, fetched once per worker
    out = da.map_blocks(
        _partition,
        method,
        shared,
        X,
        mask,
        n_out=n_out,
        root=root,
        kwargs=kwargs,
        chunks=(X.chunks[0], (n_out,)),
        drop_axis=list(range(2, X.ndim)),
        dtype=np.float64,
        meta=np.empty((0, 0)),
    )
    if method == "select":
        actions = out[:, 0].astype(np.int64)
        if kwargs.get("return_propensities"):
            return actions, out[:, 1]
        return actions
    if n_out == 2 * n_actions:
        return out[:, :n_actions], out[:, n_actions:]
    return out
