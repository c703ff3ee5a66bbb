"""A ``BanditPipeline`` over Dask partitions: its transformers fitted by their
``partial_fit``, and mapped over the partitions.

Each partition is transformed on its worker by the fitted transformers (a fitted
transformer maps each row alone, so a partition's rows come out as they would from
the whole array), and the policy then fits on, or scores, the transformed Dask
array by its own Dask path: the pipeline's ``select``, ``predict_scores`` and
``predict_action_proba`` return Dask arrays, as the policy's do. ``fit`` learns each
transformer from every row by its ``partial_fit`` over the partitions in order
(``StandardScaler``'s running moments: its ``fit`` on all rows to rounding). A
transformer without ``partial_fit`` whose ``fit`` learns nothing from the rows but
their shape (``PolynomialFeatures``; the pipeline's probe decides, on the first
rows of the first non-empty partition) is fitted on those rows, as the pipeline's
streaming ``partial_fit`` fits it on its first batch and its ``fit`` on all rows,
to the same state. Any other transformer without ``partial_fit`` that is not
stateless would need every row in one process, and is a clear error.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from skbandit._dask._ope import row_aligned
from skbandit._dask._parts import blocks
from skbandit._dask._sequence import in_turn

__all__ = ["fit_transformers", "transformed"]


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


def _learn(transformer, block):
    if block.shape[0]:
        transformer.partial_fit(block)
    return transformer


#: Rows of the first non-empty partition on which a shape-only step is probed and
#: fitted (its state is the same on any rows; a whole partition's transform, e.g.
#: PolynomialFeatures' of 250,000 rows, would cost hundreds of megabytes here).
_HEAD_ROWS = 256


def _head(block, n):
    return block[:n]


def _first_rows(X):
    """The first rows of the first non-empty partition of ``X`` (reading partitions
    in order until one has rows), or None when every partition is empty."""
    import dask

    for block in X.to_delayed().ravel():
        rows = dask.delayed(_head)(block, _HEAD_ROWS).compute()
        if rows.shape[0]:
            return rows
    return None


def fit_transformers(steps, X, reads_shape_alone):
    """Clones of the transformers ``[(name, step)]`` fitted from every row of ``X``,
    each on the output of those before it; returns them and ``X`` through them.
    ``reads_shape_alone(step, rows)`` is the pipeline's probe of a step without
    ``partial_fit`` (this backend imports nothing of the pipeline)."""
    fitted = []
    (X,) = row_aligned(X)
    for name, step in steps:
        model = clone(step)
        if hasattr(model, "partial_fit"):
            model = in_turn(_learn, model, blocks(X))
        try:  # a stateless step (FunctionTransformer) counts as fitted as it is
            Xt = transformed([(name, model)], X)
        except NotFittedError as exc:
            rows = _first_rows(X)
            if rows is None:
                raise ValueError(
                    "Found array with 0 sample(s): the logs are empty."
                ) from None
            if not reads_shape_alone(model, rows):
                raise TypeError(
                    f"Step {name!r} ({type(step).__name__}) has no partial_fit and "
                    "learns from the rows' values: its fit on Dask collections "
                    "would read every row into this process. Use a transformer with "
                    "partial_fit (StandardScaler, IncrementalPCA...), or fit the "
                    "pipeline in memory on a sample (a fitted pipeline scores Dask "
                    "collections)."
                ) from exc
            Xt = transformed([(name, model.fit(rows))], X)  # its shape, as in memory
        X = Xt
        fitted.append((name, model))
    return fitted, X
