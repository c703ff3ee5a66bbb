"""Incremental ridge regression in parameter blocks, the state of every linear policy.

Shared contexts give one block per arm (disjoint models, never a dense ``(K d)^2``
matrix); per-arm contexts give one block shared by all arms. Each block keeps its
precision ``A = alpha I + sum w x x^T``, its inverse, and ``b = sum w y x``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from skbandit.exceptions import NumericalError

__all__ = ["RidgeBlocks", "add_intercept"]


def add_intercept(X: NDArray) -> NDArray:
    """Append a constant-1 feature on the last axis (penalised like the others)."""
    ones = np.ones((*X.shape[:-1], 1), dtype=X.dtype)
    return np.concatenate([X, ones], axis=-1)


class RidgeBlocks:
    """Ridge regression state for ``n_blocks`` independent blocks of ``n_dims``.

    Single observations (or batches touching each block at most once) update the
    inverse by Sherman-Morrison in O(d^2); larger batches accumulate ``A`` with one
    segmented sum and re-invert only the touched blocks, O(n d^2 + B d^3).

    Parameters
    ----------
    n_blocks : int
        Number of parameter blocks.
    n_dims : int
        Dimension of each block.
    alpha : float
        Ridge strength; the prior precision is ``alpha * I``.
    """

    def __init__(self, n_blocks: int, n_dims: int, alpha: float):
        eye = np.eye(n_dims)
        self.precision = np.repeat((alpha * eye)[None], n_blocks, axis=0)
        self.covariance = np.repeat((eye / alpha)[None], n_blocks, axis=0)
        self.moment = np.zeros((n_blocks, n_dims))
        self._chol = None

    @property
    def coef(self) -> NDArray:
        """Ridge solutions ``A^{-1} b`` of all blocks, shape (n_blocks, n_dims)."""
        return np.einsum("bij,bj->bi", self.covariance, self.moment)

    def update(
        self, blocks: NDArray, X: NDArray, y: NDArray, weight: NDArray | None = None
    ) -> None:
        """Add rows ``X`` with targets ``y`` and weights to their blocks.

        Computes every new value first and writes only once all are finite, so a
        failure leaves the state unchanged.
        """
        w = np.ones(X.shape[0]) if weight is None else weight
        d_moment = _segment_sum((w * y)[:, None] * X, blocks, self.moment.shape[0])
        touched = np.unique(blocks)
        if touched.size == blocks.size:
            # Each block gets one row: vectorised Sherman-Morrison (eq. 4 of paper 003).
            Ainv = self.covariance[blocks]
            u = np.einsum("nij,nj->ni", Ainv, X)
            denom = 1.0 + w * np.einsum("ni,ni->n", X, u)
            new_cov = Ainv - (w / denom)[:, None, None] * u[:, :, None] * u[:, None, :]
            new_prec = self.precision[blocks] + w[:, None, None] * (
                X[:, :, None] * X[:, None, :]
            )
            ok = np.all(denom > 0)
        else:
            outer = (w[:, None, None] * X[:, :, None]) * X[:, None, :]
            new_prec = (
                self.precision[touched]
                + _segment_sum(outer, blocks, self.precision.shape[0])[touched]
            )
            new_cov = np.linalg.inv(new_prec)
            blocks = touched
            ok = True
        new_moment = self.moment + d_moment
        if not (ok and np.all(np.isfinite(new_cov)) and np.all(np.isfinite(new_moment))):
            raise NumericalError(
                "The ridge update produced non-finite values (is alpha > 0 and are the "
                "features bounded?); the policy was left unchanged."
            )
        self.precision[blocks] = new_prec
        self.covariance[blocks] = new_cov
        self.moment = new_moment
        self._chol = None

    def covariance_cholesky(self) -> NDArray:
        """Cholesky factors of ``A^{-1}`` per block, cached until the next update."""
        if self._chol is None:
            try:
                self._chol = np.linalg.cholesky(self.covariance)
            except np.linalg.LinAlgError as exc:
                raise NumericalError(
                    "The posterior covariance is not positive definite; the policy's "
                    "state has lost precision. Refit it or increase alpha."
                ) from exc
        return self._chol

    def means(self, Xk: NDArray, arm_blocks: NDArray) -> NDArray:
        """``x_{t,k}^T theta_{block(k)}`` for arm features of shape (n, K, d)."""
        return np.einsum("nkd,kd->nk", Xk, self.coef[arm_blocks])

    def widths(self, Xk: NDArray, arm_blocks: NDArray) -> NDArray:
        """``||x_{t,k}||_{A^{-1}}`` of every arm, shape (n, K)."""
        if self.covariance.shape[0] == 1:
            quad = np.einsum("nkd,de,nke->nk", Xk, self.covariance[0], Xk)
        else:
            quad = np.einsum("nkd,kde,nke->nk", Xk, self.covariance[arm_blocks], Xk)
        return np.sqrt(np.maximum(quad, 0.0))


def _segment_sum(values: NDArray, segments: NDArray, n_segments: int) -> NDArray:
    """Sum ``values`` (n, ...) into ``n_segments`` bins by ``segments`` (n,)."""
    out = np.zeros((n_segments, *values.shape[1:]))
    np.add.at(out, segments, values)
    return out
