"""Newton (IRLS) solver for L2-penalised logistic regression on grouped, counted rows.

One call solves many independent problems at once: problem ``(i, b)`` is replicate ``i``
(e.g. one perturbed history per round of ``select``) of parameter block ``b`` (one block
per arm for shared contexts). Row ``g`` is a distinct feature vector ``x_g`` of block
``blocks[g]`` observed ``pos[i, g]`` times with label 1 and ``neg[i, g]`` times with
label 0; counts may be fractional (soft targets), so a weighted row ``(w, y)`` is
``pos = w y``, ``neg = w (1 - y)``. Problem ``(i, b)`` minimises

    sum_{g in b} pos[i, g] softplus(-x_g^T theta) + neg[i, g] softplus(x_g^T theta)
        + (l2 / 2) ||theta||^2,

strictly convex for ``l2 > 0``. Each Newton iteration costs ``O(n G d^2 + n B d^3)``,
independent of how many observations the counts summarise.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.special import expit

from skbandit.exceptions import NumericalError

__all__ = ["BlockSum", "fit_logistic_newton"]


class BlockSum:
    """Sum per-row weights times fixed row features into parameter blocks.

    ``BlockSum(F, blocks, n_blocks)(W)[i, b] = sum_{g: blocks[g] = b} W[i, g] F[g]``,
    vectorised as one sparse-times-dense product (no loop over blocks).

    Parameters
    ----------
    F : ndarray of shape (n_rows, n_values)
        Fixed features of the rows.
    blocks : ndarray of shape (n_rows,)
        Block of each row.
    n_blocks : int
        Number of blocks.
    """

    def __init__(self, F: NDArray, blocks: NDArray, n_blocks: int):
        self.n_rows, self.n_values = F.shape
        self.n_blocks = n_blocks
        if n_blocks == 1:
            self._dense = F
            return
        self._dense = None
        p = self.n_values
        cols = (np.asarray(blocks, dtype=np.int64)[:, None] * p + np.arange(p)).ravel()
        indptr = np.arange(0, self.n_rows * p + 1, p)
        self._sparse_t = sparse.csr_matrix(
            (F.ravel(), cols, indptr), shape=(self.n_rows, n_blocks * p)
        ).T.tocsr()

    def __call__(self, W: NDArray) -> NDArray:
        """Return the block sums, shape (n, n_blocks, n_values), for ``W`` of (n, G)."""
        n = W.shape[0]
        if self._dense is not None:
            return (W @ self._dense)[:, None, :]
        out = np.asarray(self._sparse_t @ W.T).T
        return out.reshape(n, self.n_blocks, self.n_values)


def _objective(X, rows_of, pos, neg, coef, sum_ones, l2):
    eta = np.einsum("gd,ngd->ng", X, coef[:, rows_of])
    loss = pos * np.logaddexp(0.0, -eta) + neg * np.logaddexp(0.0, eta)
    return sum_ones(loss)[..., 0] + 0.5 * l2 * np.einsum("nbd,nbd->nb", coef, coef)


def fit_logistic_newton(
    X: NDArray,
    pos: NDArray,
    neg: NDArray,
    l2: float,
    *,
    blocks: NDArray | None = None,
    n_blocks: int = 1,
    coef_init: NDArray | None = None,
    tol: float = 1e-6,
    max_iter: int = 100,
) -> tuple[NDArray, NDArray]:
    """Solve the penalised logistic problems of the module docstring by Newton's method.

    Full Newton steps, with backtracking (Armijo) where a full step does not decrease
    the objective enough; converged once a full Newton step with every coordinate at
    most ``tol`` has been taken. Warm starts (the previous solution) usually
    converge in 2-5 iterations.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_dims)
        Distinct feature rows.
    pos, neg : ndarray of shape (n_rows,) or (n_problems, n_rows)
        Non-negative label-1 and label-0 counts of each row, per replicate.
    l2 : float
        Penalty ``(l2 / 2) ||theta||^2``; must be positive. (A paper penalty
        ``lambda ||theta||^2`` is ``l2 = 2 lambda``; scikit-learn's ``C`` is
        ``1 / l2``.)
    blocks : ndarray of shape (n_rows,), default=None
        Block of each row; ``None`` puts every row in block 0.
    n_blocks : int, default=1
        Number of blocks.
    coef_init : ndarray broadcastable to (n_problems, n_blocks, n_dims), default=None
        Warm start; zeros when None.
    tol : float, default=1e-6
        Largest coordinate of the final Newton step.
    max_iter : int, default=100
        Maximum number of Newton iterations.

    Returns
    -------
    coef : ndarray of shape (n_problems, n_blocks, n_dims) or (n_blocks, n_dims)
        Solutions; 2-D when ``pos`` was 1-D.
    hessian : ndarray of shape (n_problems, n_blocks, n_dims, n_dims) or \
            (n_blocks, n_dims, n_dims)
        Hessian of the objective (penalty included) at the solutions.

    Raises
    ------
    NumericalError
        If the iterates become non-finite or do not converge within ``max_iter``.
    """
    squeeze = np.ndim(pos) == 1
    pos = np.atleast_2d(np.asarray(pos, dtype=np.float64))
    neg = np.atleast_2d(np.asarray(neg, dtype=np.float64))
    n, d = pos.shape[0], X.shape[1]
    rows_of = np.zeros(X.shape[0], np.intp) if blocks is None else np.asarray(blocks)
    sum_x = BlockSum(X, rows_of, n_blocks)
    sum_xx = BlockSum(
        np.einsum("gi,gj->gij", X, X).reshape(-1, d * d), rows_of, n_blocks
    )
    sum_ones = BlockSum(np.ones((X.shape[0], 1)), rows_of, n_blocks)
    coef = np.zeros((n, n_blocks, d))
    if coef_init is not None:
        coef[...] = coef_init
    total = pos + neg
    penalty = l2 * np.eye(d)
    f = _objective(X, rows_of, pos, neg, coef, sum_ones, l2)
    converged = False
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(max_iter):
            p = expit(np.einsum("gd,ngd->ng", X, coef[:, rows_of]))
            grad = sum_x(total * p - pos) + l2 * coef
            hess = sum_xx(total * p * (1.0 - p)).reshape(n, n_blocks, d, d) + penalty
            if not (np.all(np.isfinite(grad)) and np.all(np.isfinite(hess))):
                break
            step = np.linalg.solve(hess, grad[..., None])[..., 0]
            decrement = np.einsum("nbd,nbd->nb", grad, step)
            t = np.ones((n, n_blocks))
            slack = 1e-12 * (1.0 + np.abs(f))
            for _ in range(60):  # backtracking where a full step is not enough
                new = coef - t[..., None] * step
                f_new = _objective(X, rows_of, pos, neg, new, sum_ones, l2)
                bad = ~(f_new <= f - 1e-4 * t * decrement + slack)
                if not bad.any():
                    break
                t = np.where(bad, 0.5 * t, t)
            coef, f = new, f_new
            if not np.all(np.isfinite(coef)):
                break
            # Converged when the full Newton step was small and has been taken.
            if np.max(np.abs(step), initial=0.0) <= tol and np.all(t == 1.0):
                converged = True
                break
    if not converged:
        raise NumericalError(
            "The logistic Newton solver did not converge to finite coefficients within "
            f"max_iter={max_iter} iterations; increase max_iter or alpha. The policy "
            "was left unchanged."
        )
    p = expit(np.einsum("gd,ngd->ng", X, coef[:, rows_of]))
    hess = sum_xx(total * p * (1.0 - p)).reshape(n, n_blocks, d, d) + penalty
    if squeeze:
        return coef[0], hess[0]
    return coef, hess
