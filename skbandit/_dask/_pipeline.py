"""A fitted ``BanditPipeline``'s transformers mapped over Dask partitions, for scoring.

Each partition is transformed on its worker by the fitted transformers (a fitted
transformer maps each row alone, so a partition's rows come out as they would from
the whole array), and the policy then scores the transformed Dask array by its own
Dask path (``_predict``): the pipeline's ``select``, ``predict_scores`` and
``predict_action_proba`` return Dask arrays, as the policy's do.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from skbandit._dask._ope import row_aligned

__all__ = ["transformed"]


def _apply(block, steps, width):
    if block.shape[0] == 0:  # an empty partition (a filtered DataFrame's)
        return np.empty((0, width))
    for _, step in steps:
        block = step.transform(block)
    return block


def transformed(steps, X):
    """``X`` (a Dask collection) through the fitted ``steps`` ``[(name, step)]``."""
    (X,) = row_aligned(X)
    if X.ndim != 2:
        raise ValueError(
            f"BanditPipeline transforms contexts of shape (n_samples, n_features); "
            f"got a Dask array of {X.ndim} dimensions."
        )
    for name, step in steps:
        try:
            check_is_fitted(step)
        except NotFittedError as exc:
            raise NotFittedError(
                f"Step {name!r} ({type(step).__name__}) is not fitted. On Dask "
                "collections a BanditPipeline decides with fitted transformers only "
                "(a partition transformed alone would learn its own statistics): "
                "fit the pipeline first, in memory (on the logs that fit, or a "
                "sample)."
            ) from exc
    probe = _apply(np.zeros((1, X.shape[1])), steps, 0)
    if sparse.issparse(probe) or probe.ndim != 2:
        raise TypeError(
            "BanditPipeline on Dask collections needs transformers that return "
            f"dense 2-D arrays; got {type(probe).__name__} of shape {probe.shape}."
        )
    width = probe.shape[1]
    return X.map_blocks(
        _apply,
        steps,
        width,
        dtype=probe.dtype,
        chunks=(X.chunks[0], (width,)),
        meta=np.empty((0, width), dtype=probe.dtype),
    )
