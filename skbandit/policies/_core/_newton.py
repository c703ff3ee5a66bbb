"""Newton (IRLS) solver for L2-penalised canonical-link GLMs on grouped, counted rows.

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

:func:`fit_glm_newton` solves the same problems for any canonical link (``LINKS``):
row ``g`` has a total weight ``count[g]`` and a target sum ``target[i, g]`` (any real
number: perturbed targets of ensemble sampling leave the mean's range), and problem
``(i, b)`` minimises the negative log-likelihood

    sum_{g in b} count[g] b(x_g^T theta) - target[i, g] x_g^T theta
        + (l2 / 2) ||theta||^2

with ``b`` the link's cumulant (``b' = mu``, the mean function); the logistic case with
``target = pos`` and ``count = pos + neg`` is the problem above.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.special import expit

from skbandit.exceptions import NumericalError

__all__ = ["LINKS", "BlockSum", "Link", "fit_glm_newton", "fit_logistic_newton"]


@dataclass(frozen=True)
class Link:
    """A canonical GLM link: the cumulant ``b``, the mean ``mu = b'`` and ``mu' = b''``.

    ``loss(eta, target, count, rest)`` is ``count b(eta) - target eta`` per row, written
    in a numerically stable form (``rest = count - target``); ``weight(mean, count)`` is
    ``count mu'(eta)`` given ``mean = mu(eta)``.
    """

    name: str
    mean: Callable[[NDArray], NDArray]
    weight: Callable[[NDArray, NDArray], NDArray]
    loss: Callable[[NDArray, NDArray, NDArray, NDArray], NDArray]


def _logistic_loss(eta, target, count, rest):
    # count softplus(eta) - target eta, as the cross-entropy of the counts.
    return target * np.logaddexp(0.0, -eta) + rest * np.logaddexp(0.0, eta)


#: The canonical links: Bernoulli (logistic), Gaussian (identity), Poisson (log).
LINKS = {
    "logistic": Link(
        "logistic", expit, lambda p, count: count * p * (1.0 - p), _logistic_loss
    ),
    "identity": Link(
        "identity",
        lambda eta: eta,
        lambda mean, count: np.broadcast_to(count, mean.shape),
        lambda eta, target, count, rest: 0.5 * count * eta**2 - target * eta,
    ),
    "poisson": Link(
        "poisson",
        np.exp,
        lambda mean, count: count * mean,
        lambda eta, target, count, rest: count * np.exp(eta) - target * eta,
    ),
}


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


def _objective(link, X, rows_of, target, count, rest, coef, sum_ones, l2, size=False):
    """The penalised objective per problem and block; ``size``: also the sum of its
    terms' magnitudes, times the rows, times the float64 epsilon (a bound on the
    rounding error of the sum, which cancelling terms leave far above ``|f|``)."""
    eta = np.einsum("gd,ngd->ng", X, coef[:, rows_of])
    loss = link.loss(eta, target, count, rest)
    penalty = 0.5 * l2 * np.einsum("nbd,nbd->nb", coef, coef)
    f = sum_ones(loss)[..., 0] + penalty
    if not size:
        return f
    magnitude = sum_ones(np.abs(loss))[..., 0] + penalty
    return f, X.shape[0] * np.finfo(np.float64).eps * magnitude


def fit_logistic_newton(
    X: NDArray, pos: NDArray, neg: NDArray, l2: float, **options
) -> tuple[NDArray, NDArray]:
    """Solve the penalised logistic problems of the module docstring by Newton's method.

    :func:`fit_glm_newton` with the logistic link, ``target = pos`` and
    ``count = pos + neg``: ``pos`` and ``neg``, of shape ``(n_rows,)`` or
    ``(n_problems, n_rows)``, are the non-negative label-1 and label-0 counts of each
    row, per replicate; the other arguments (``options``: ``blocks``, ``n_blocks``,
    ``coef_init``, ``tol``, ``max_iter``), the results and the errors are
    :func:`fit_glm_newton`'s. (A paper penalty ``lambda ||theta||^2`` is
    ``l2 = 2 lambda``; scikit-learn's ``C`` is ``1 / l2``.) ``neg`` is passed as it
    is, not as ``count - pos``, so that no rounding enters the label-0 loss.
    """
    pos = np.asarray(pos, dtype=np.float64)
    neg = np.asarray(neg, dtype=np.float64)
    return _solve(LINKS["logistic"], X, pos, pos + neg, neg, l2, **options)


def fit_glm_newton(
    X: NDArray,
    target: NDArray,
    count: NDArray,
    l2: float,
    *,
    link: str | Link = "logistic",
    blocks: NDArray | None = None,
    n_blocks: int = 1,
    coef_init: NDArray | None = None,
    tol: float = 1e-6,
    max_iter: int = 100,
) -> tuple[NDArray, NDArray]:
    """Solve the penalised canonical-link GLMs of the module docstring by Newton.

    Full Newton steps, with backtracking (Armijo) where a full step does not decrease
    the objective enough; converged once a full Newton step with every coordinate at
    most ``tol`` has been taken. Warm starts (the previous solution) usually
    converge in 2-5 iterations.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_dims)
        Distinct feature rows.
    target : ndarray of shape (n_rows,) or (n_problems, n_rows)
        Weighted sum of the (possibly perturbed) targets of each row, per replicate.
    count : ndarray of shape (n_rows,) or (n_problems, n_rows)
        Non-negative total weight of each row.
    l2 : float
        Penalty ``(l2 / 2) ||theta||^2``; must be positive.
    link : {"logistic", "identity", "poisson"} or Link, default="logistic"
        The canonical link.
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
        Solutions; 2-D when ``target`` was 1-D.
    hessian : ndarray of shape (n_problems, n_blocks, n_dims, n_dims) or \
            (n_blocks, n_dims, n_dims)
        Hessian of the objective (penalty included) at the solutions.

    Raises
    ------
    NumericalError
        If the iterates become non-finite or do not converge within ``max_iter``.
    """
    link = LINKS[link] if isinstance(link, str) else link
    target = np.asarray(target, dtype=np.float64)
    count = np.broadcast_to(np.asarray(count, dtype=np.float64), target.shape)
    return _solve(
        link,
        X,
        target,
        count,
        count - target,
        l2,
        blocks=blocks,
        n_blocks=n_blocks,
        coef_init=coef_init,
        tol=tol,
        max_iter=max_iter,
    )


def _solve(
    link,
    X,
    target,
    count,
    rest,
    l2,
    *,
    blocks=None,
    n_blocks=1,
    coef_init=None,
    tol=1e-6,
    max_iter=100,
):
    squeeze = np.ndim(target) == 1
    target = np.atleast_2d(target)
    count = np.atleast_2d(count)
    rest = np.atleast_2d(rest)
    n, d = target.shape[0], X.shape[1]
    rows_of = np.zeros(X.shape[0], np.intp) if blocks is None else np.asarray(blocks)
    sum_x = BlockSum(X, rows_of, n_blocks)
    sum_xx = BlockSum(
        np.einsum("gi,gj->gij", X, X).reshape(-1, d * d), rows_of, n_blocks
    )
    sum_ones = BlockSum(np.ones((X.shape[0], 1)), rows_of, n_blocks)
    coef = np.zeros((n, n_blocks, d))
    if coef_init is not None:
        coef[...] = coef_init
    penalty = l2 * np.eye(d)
    f, rounding = _objective(
        link, X, rows_of, target, count, rest, coef, sum_ones, l2, size=True
    )
    converged = False
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(max_iter):
            p = link.mean(np.einsum("gd,ngd->ng", X, coef[:, rows_of]))
            grad = sum_x(count * p - target) + l2 * coef
            hess = sum_xx(link.weight(p, count)).reshape(n, n_blocks, d, d) + penalty
            if not (np.all(np.isfinite(grad)) and np.all(np.isfinite(hess))):
                break
            step = np.linalg.solve(hess, grad[..., None])[..., 0]
            decrement = np.einsum("nbd,nbd->nb", grad, step)
            t = np.ones((n, n_blocks))
            # f's rounding error: its terms can be large and cancel to about 0, and
            # how they round depends on the BLAS kernel (Prescott's read a converged
            # step's decrease of 1e-10 on terms of 1e5 as an increase)
            slack = np.maximum(1e-12 * (1.0 + np.abs(f)), rounding)
            # A step within tol is taken in full, unjudged: the decrease it makes is
            # below the rounding error of f, whose terms can be large and cancel to
            # about 0 (perturbed targets far outside mu's range, as in ensemble
            # sampling with a large sigma_R), which ``slack`` does not cover; the
            # Armijo test would then halve it for ever and never converge.
            tiny = np.max(np.abs(step), axis=-1) <= tol
            for _ in range(60):  # backtracking where a full step is not enough
                new = coef - t[..., None] * step
                f_new, rounding_new = _objective(
                    link, X, rows_of, target, count, rest, new, sum_ones, l2, size=True
                )
                bad = ~(f_new <= f - 1e-4 * t * decrement + slack) & ~tiny
                if not bad.any():
                    break
                t = np.where(bad, 0.5 * t, t)
            coef, f, rounding = new, f_new, rounding_new
            if not np.all(np.isfinite(coef)):
                break
            # Converged when the full Newton step was small and has been taken.
            if np.max(np.abs(step), initial=0.0) <= tol and np.all(t == 1.0):
                converged = True
                break
    if not converged:
        raise NumericalError(
            f"The {link.name} Newton solver did not converge to finite coefficients "
            f"within max_iter={max_iter} iterations; increase max_iter or alpha. The "
            "policy was left unchanged."
        )
    p = link.mean(np.einsum("gd,ngd->ng", X, coef[:, rows_of]))
    hess = sum_xx(link.weight(p, count)).reshape(n, n_blocks, d, d) + penalty
    if squeeze:
        return coef[0], hess[0]
    return coef, hess
