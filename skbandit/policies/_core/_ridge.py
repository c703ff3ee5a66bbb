"""Incremental ridge regression in parameter blocks, the state of every linear policy.

Shared contexts give one block per arm (disjoint models, never a dense ``(K d)^2``
matrix); per-arm contexts give one block shared by all arms. Each block keeps its
precision ``A = alpha I + sum w x x^T``, its inverse, and ``b = sum w y x``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy
import math
from numbers import Real

import numpy as np
from numpy.typing import NDArray

from skbandit._base._arms import with_prior_rows
from skbandit.base import BasePolicy
from skbandit.exceptions import NumericalError
from skbandit.utils._param_validation import Interval

__all__ = [
    "LINEAR_CONSTRAINTS",
    "ArmBlocksMixin",
    "BlockRows",
    "RidgeBlocks",
    "add_intercept",
    "gaussian_score_sampler",
    "rows_times_blocks",
]

#: Parameters of every policy on ridge blocks (the linear family, the logistic
#: policies that keep a ridge state beside their Newton fit).
LINEAR_CONSTRAINTS = {
    **BasePolicy._parameter_constraints,
    "alpha": [Interval(Real, 0, None, closed="neither")],
    "fit_intercept": ["boolean"],
}


class ArmBlocksMixin:
    """Which parameter block scores each arm, for policies with per-block models.

    Shared contexts give one block per arm (disjoint models); per-arm contexts give
    one block shared by all arms.
    """

    @property
    def _n_blocks(self):
        return 1 if self._per_arm_contexts else self.n_actions_

    @property
    def _arm_blocks(self):
        """Index of the parameter block each arm is scored with."""
        if self._per_arm_contexts:
            return np.zeros(self.n_actions_, dtype=np.intp)
        return np.arange(self.n_actions_)


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

    #: Whether the arrays are shared with another state (:meth:`shared_copy`), so
    #: that the next update writes new arrays instead of these.
    _shared = False
    #: Rows ``(block, x, w)`` whose ``w x x^T`` the stored precision still lacks:
    #: the copy-on-write update defers them (the precision is read only by batch
    #: updates, never by an online round) and :attr:`precision` adds them.
    _pending = ()
    #: Deferred rows before they are added, by one product per block.
    _MAX_PENDING = 64

    @property
    def precision(self) -> NDArray:
        """``A = alpha I + sum w x x^T`` of every block, shape (n_blocks, d, d)."""
        if self._pending:
            self._precision = self._with_pending()
            self._pending = ()
        return self._precision

    @precision.setter
    def precision(self, value: NDArray) -> None:
        self._precision = value
        self._pending = ()

    def _with_pending(self) -> NDArray:
        """A new array: the stored precision plus the deferred rows' products (the
        stored one may be shared with another state, so it is never written)."""
        blocks, rows, weights = zip(*self._pending, strict=True)
        blocks, rows = np.asarray(blocks), np.stack(rows)
        out = self._precision.copy()
        for block in np.unique(blocks):
            mine = blocks == block
            out[block] += (np.asarray(weights)[mine, None] * rows[mine]).T @ rows[mine]
        return out

    def __setstate__(self, state):
        # states pickled before the precision was deferred hold it as "precision"
        if "precision" in state:
            state["_precision"] = state.pop("precision")
        self.__dict__.update(state)

    def __init__(self, n_blocks: int, n_dims: int, alpha: float):
        eye = np.eye(n_dims)
        self.precision = np.repeat((alpha * eye)[None], n_blocks, axis=0)
        self.covariance = np.repeat((eye / alpha)[None], n_blocks, axis=0)
        self.moment = np.zeros((n_blocks, n_dims))
        self._chol = None
        self._coef = None

    def grown(self, n_new: int, alpha: float) -> RidgeBlocks:
        """A copy with ``n_new`` prior blocks (precision ``alpha I``) appended."""
        eye = np.eye(self.moment.shape[1])
        out = RidgeBlocks.__new__(RidgeBlocks)
        out.precision = with_prior_rows(self.precision, n_new, alpha * eye)
        out.covariance = with_prior_rows(self.covariance, n_new, eye / alpha)
        out.moment = with_prior_rows(self.moment, n_new, 0.0)
        out._chol = None
        coef = self._coef
        out._coef = None if coef is None else with_prior_rows(coef, n_new, 0.0)
        return out

    def shared_copy(self) -> RidgeBlocks:
        """A copy that shares this state's arrays until its first update (copy on
        write): the update then writes new arrays and leaves these untouched.

        The rollback copy of a model updated one row at a time (SquareCB's online
        ridge): the one-row update of one block computes its new matrices in new
        buffers anyway, so it rebinds them; copying the ``d x d`` matrices first
        (two of them, 0.7 MB each for 300 random features) cost a third of it.
        """
        new = copy.copy(self)
        new._shared = True
        return new

    def _own_arrays(self) -> None:
        """Copy the shared arrays before an update writes into them."""
        if self._shared:
            if self._pending:  # adding the deferred rows writes a new array
                self.precision = self._with_pending()
            else:
                self.precision = self._precision.copy()
            self.covariance = self.covariance.copy()
            self.moment = self.moment.copy()
            if self._coef is not None:
                self._coef = self._coef.copy()
            self._shared = False

    @property
    def coef(self) -> NDArray:
        """Ridge solutions ``A^{-1} b`` of all blocks, shape (n_blocks, n_dims)."""
        if self._coef is None:
            self._coef = np.matmul(self.covariance, self.moment[:, :, None])[:, :, 0]
        return self._coef

    def perturbed_coef(self, extra: NDArray) -> NDArray:
        """Solutions ``A^{-1} (b + extra)`` of ridge problems with perturbed targets.

        ``extra`` of shape (n, n_blocks, n_dims) adds ``sum_l x_l z_l`` to the moment of
        each block, once per replicate; the precision is shared. This is the
        perturbed-history estimate of LinPHE (redrawn every round) and the ensemble
        members of LinES (drawn once per observation). Returns (n, n_blocks, n_dims).
        """
        return np.einsum("bij,nbj->nbi", self.covariance, self.moment + extra)

    def update(
        self,
        blocks: NDArray,
        X: NDArray,
        y: NDArray,
        weight: NDArray | None = None,
        *,
        rank_k: bool = False,
        co_targets: NDArray | None = None,
        intercept: bool = False,
    ) -> NDArray | None:
        """Add rows ``X`` with targets ``y`` and weights to their blocks.

        Computes every new value first and writes only once all are finite, so a
        failure leaves the state unchanged. ``rank_k=True`` updates a block that
        gets fewer rows than its dimension by one Woodbury step (a slate's K arms)
        instead of re-inverting it. ``intercept=True``: the rows are ``[X, 1]``,
        ``X`` without its constant last column, which a large batch's gather
        writes itself (:func:`add_intercept` would copy ``X`` once more first).

        Returns ``sum_l x_l c_l^T`` of each block for the rows ``c_l`` of
        ``co_targets`` (n, q), shape (n_blocks, n_dims, q), from the same pass over
        the rows (LinES's perturbed moments); None without them.
        """
        if intercept and X.shape[0] == 1:
            X, intercept = add_intercept(X), False
        if X.shape[0] == 1:  # the online round: no batch machinery
            if self.moment.shape[0] > 1:
                self._own_arrays()  # one block of several is written in place
            w = 1.0 if weight is None else float(weight[0])
            try:  # without np.errstate (a tenth of the round): overflow warns
                self._update_one(int(blocks[0]), X[0], float(y[0]), w)
            except RuntimeWarning:  # warnings are errors: report as NumericalError
                with np.errstate(all="ignore"):
                    self._update_one(int(blocks[0]), X[0], float(y[0]), w)
            if co_targets is None:
                return None
            co_moments = np.zeros((*self.moment.shape, co_targets.shape[1]))
            co_moments[int(blocks[0])] = X[0][:, None] * co_targets[0]
            return co_moments
        self._own_arrays()
        co = np.zeros((X.shape[0], 0)) if co_targets is None else co_targets
        co_moments = np.zeros((*self.moment.shape, co.shape[1]))
        unit = weight is None  # the products need no weighted copy of X
        w = np.ones(X.shape[0]) if unit else weight
        with np.errstate(all="ignore"):  # overflow is reported as NumericalError
            self._update_batch(
                blocks, X, y, w, rank_k, (co, co_moments), unit, intercept
            )
        return None if co_targets is None else co_moments

    def _update_batch(
        self,
        blocks: NDArray,
        X: NDArray,
        y: NDArray,
        w: NDArray,
        rank_k: bool,
        co_targets: tuple[NDArray, NDArray],
        unit_weights: bool = False,
        intercept: bool = False,
    ) -> None:
        # co_targets: the rows c_l and the (n_blocks, d, q) output of update's
        # sum_l x_l c_l^T, written here (the state is not, until all is checked);
        # unit_weights: w is all ones (no sample_weight given); intercept: X lacks
        # the design's constant last column
        wy = w * y
        co, co_moments = co_targets
        grouped = BlockRows(blocks)
        touched = grouped.labels
        d_moment = np.zeros_like(self.moment)
        d = X.shape[1] + int(intercept)
        one_each = touched.size == blocks.size
        woodbury = rank_k and touched.size == 1 and blocks.size < d
        if intercept and (one_each or woodbury):  # the small batches' branches
            X, intercept = add_intercept(X), False
        if one_each:
            # Each block gets one row: vectorised Sherman-Morrison.
            Ainv = self.covariance[blocks]
            u = np.einsum("nij,nj->ni", Ainv, X)
            denom = 1.0 + w * np.einsum("ni,ni->n", X, u)
            new_cov = Ainv - (w / denom)[:, None, None] * u[:, :, None] * u[:, None, :]
            new_prec = self.precision[blocks] + w[:, None, None] * (
                X[:, :, None] * X[:, None, :]
            )
            d_moment[blocks] = wy[:, None] * X
            co_moments[blocks] = X[:, :, None] * co[:, None, :]
            ok = np.all(denom > 0)
        elif woodbury:
            # Several rows in one block (a slate's K arms): one rank-m Woodbury
            # update, A^-1 - A^-1 X^T (W^-1 + X A^-1 X^T)^-1 X A^-1, in O(m d^2).
            b = int(touched[0])
            Ainv, sw = self.covariance[b], np.sqrt(w)
            U = sw[:, None] * X @ Ainv  # (m, d): rows sqrt(w_i) x_i^T A^-1
            inner = np.eye(X.shape[0]) + U @ (sw[:, None] * X).T
            try:
                new_cov = (Ainv - U.T @ np.linalg.solve(inner, U))[None]
            except np.linalg.LinAlgError:
                new_cov = np.full((1, *Ainv.shape), np.nan)  # reported just below
            new_prec = self.precision[touched] + (w[:, None] * X).T @ X
            d_moment[b] = wy @ X
            co_moments[b] = X.T @ co
            blocks, ok = touched, True
        else:
            sums = _block_sums(grouped, X, y, w, co, unit_weights, intercept)
            new_prec = self.precision[touched] + sums[:, :, :d]
            d_moment[touched] = sums[:, :, d]
            co_moments[touched] = sums[:, :, d + 1 :]
            try:
                new_cov = np.linalg.inv(new_prec)
            except np.linalg.LinAlgError:
                new_cov = np.full_like(new_prec, np.nan)  # reported just below
            blocks = touched
            ok = True
        new_moment = self.moment + d_moment
        if not (
            ok and np.all(np.isfinite(new_cov)) and np.all(np.isfinite(new_moment))
        ):
            raise NumericalError(
                "The ridge update produced non-finite values (is alpha > 0 and are the "
                "features bounded?); the policy was left unchanged."
            )
        self.precision[blocks] = new_prec
        self.covariance[blocks] = new_cov
        self.moment = new_moment
        self._chol = self._coef = None

    def _update_one(self, block: int, x: NDArray, y: float, w: float) -> None:
        # The online loop's case, kept free of batch machinery: O(d^2), every value
        # computed and checked before the first write.
        # Overflow and NaN are reported as NumericalError (a numpy warning may
        # precede it: the caller sets np.errstate only where warnings are errors).
        # ``.dot``, not ``@``: the same BLAS calls at half the call overhead.
        cov = self.covariance[block]
        u = cov.dot(x)
        denom = 1.0 + w * float(x.dot(u))
        # the new covariance in the outer product's own buffer: no temporary
        new_cov = u[:, None] * u
        if w == 1.0:
            new_cov /= denom
        else:
            new_cov *= w / denom
        np.subtract(cov, new_cov, out=new_cov)
        new_moment = self.moment[block] + (w * y) * x
        coef = new_cov.dot(new_moment)
        # A NaN or infinity in new_cov or new_moment reaches coef, then coef.x;
        # x.x bounds the precision's rank-one term: two dots check everything
        # (cautiously only beyond 1e154).
        finite = math.isfinite(coef.dot(x) + w * x.dot(x))
        if not (denom > 0 and finite):
            raise NumericalError(
                "The ridge update produced non-finite values (is alpha > 0 and are the "
                "features bounded?); the policy was left unchanged."
            )
        self._chol = None
        if self._shared:  # one block (update): rebind new arrays, write none
            self._pending = (*self._pending, (block, x.copy(), w))  # x: the caller's
            if len(self._pending) >= self._MAX_PENDING:
                self._precision, self._pending = self._with_pending(), ()
            self.covariance = new_cov[None]
            self.moment = new_moment[None]
            self._coef = None if self._coef is None else coef[None]
            self._shared = False
            return
        self.precision[block] += (x if w == 1.0 else w * x)[:, None] * x
        cov[...] = new_cov
        self.moment[block] = new_moment
        if self._coef is not None:  # only this block's solution moved
            self._coef[block] = coef

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

    def means(self, X: NDArray, arm_blocks: NDArray | None) -> NDArray:
        """``x_{t,k}^T theta_{block(k)}``, shape (n, K).

        ``X`` is shared (n, d), scored by every block, or per-arm (n, K, d).
        ``arm_blocks=None`` means arm ``k`` is block ``k`` (no gathered copy).
        """
        coef = self.coef if arm_blocks is None else self.coef[arm_blocks]
        if X.ndim == 2:
            return X @ coef.T
        return np.einsum("nkd,kd->nk", X, coef)

    def widths(self, X: NDArray, arm_blocks: NDArray | None) -> NDArray:
        """``||x_{t,k}||_{A^{-1}}`` of every arm, shape (n, K); as in means."""
        if X.ndim == 2:
            cov = self.covariance if arm_blocks is None else self.covariance[arm_blocks]
            if X.shape[0] == 1:  # the online round: no side-by-side copy of A^-1
                # one GEMV per block (arms in the same state tie exactly), summed
                # per row: not one GEMV over all blocks, which rounds rows apart
                quad = (np.matmul(cov, X[0]) * X[0]).sum(axis=-1)[None]
            else:  # .sum(axis=-1) over a short last axis is five times slower
                quad = np.einsum("nkd,nd->nk", rows_times_blocks(X, cov), X)
        elif self.covariance.shape[0] == 1:
            quad = np.einsum("nkd,nkd->nk", X @ self.covariance[0], X)
        else:
            blocks = slice(None) if arm_blocks is None else arm_blocks
            quad = np.einsum("nkd,kde,nke->nk", X, self.covariance[blocks], X)
        return np.sqrt(np.maximum(quad, 0.0))


def _block_sums(grouped, X, y, w, co, unit_weights, intercept):
    """``sum w x x^T``, ``sum w y x`` and the co-targets' moments of each block, side
    by side, shape (n_blocks, d, d + 1 + q), for the design rows ``x = [X, 1]``
    (``intercept``) or ``X``.

    One GEMM per block, ``X_b^T [w X_b, w y_b, C_b]``; with unit weights ``X_b^T
    [X_b, y_b, C_b]``, whose left factor is the right's first d columns: the rows
    are gathered once, d fewer columns moved. The intercept's column of ones (and
    of weights) is written by the gather, not gathered from a copy of X with it.
    """
    d = X.shape[1] + int(intercept)
    ones = (1.0,) if intercept else ()
    if unit_weights:
        return grouped.leading_products(d, X, *ones, y, co)
    weighted = (w[:, None] * X, w) if intercept else (w[:, None] * X,)
    return grouped.split_products(d, X, *ones, *weighted, w * y, co)


class BlockRows:
    """The rows of a batch grouped by the block they update.

    Sorting the rows by block once, then one GEMM per block (``products``), is what
    a numpy batch LinUCB does: ``np.add.at`` over the batch's (n, d, d) per-row
    outer products cost five times that whole batch reference.

    Parameters
    ----------
    blocks : ndarray of shape (n,)
        Block of each row.
    """

    def __init__(self, blocks: NDArray):
        self._order = np.argsort(blocks, kind="stable")
        in_order = blocks[self._order]
        self._starts = np.flatnonzero(np.r_[True, in_order[1:] != in_order[:-1]])
        self.labels = in_order[self._starts]  # the blocks present, ascending
        self._ends = [*self._starts[1:], blocks.size]

    def groups(self) -> list[NDArray]:
        """The rows of each block (indices into the batch), in ``labels``' order."""
        return [self._order[a:b] for a, b in zip(self._starts, self._ends, strict=True)]

    def sorted_rows(self, *parts: NDArray | float) -> NDArray:
        """The ``parts`` (each (n, q_i), or (n,) as one column, or a number as a
        constant column) side by side, rows in block order: one buffer, each part
        gathered straight into its columns (no side-by-side copy gathered again)."""
        widths = [1 if np.ndim(p) < 2 else p.shape[1] for p in parts]
        out = np.empty((self._order.size, sum(widths)))
        start = 0
        for part, width in zip(parts, widths, strict=True):
            if np.ndim(part) == 0:  # a constant: nothing to gather
                out[:, start] = part
                start += 1
                continue
            # mode="clip": the order is a permutation (in range); "raise" would
            # gather into a temporary buffer first
            target = out[:, start] if part.ndim == 1 else out[:, start : start + width]
            np.take(part, self._order, axis=0, out=target, mode="clip")
            start += width
        return out

    def leading_products(self, p: int, *parts: NDArray) -> NDArray:
        """``R_b[:, :p]^T R_b`` over each block's rows ``R_b`` of ``parts`` side by
        side: shape (len(labels), p, q) for ``q`` columns in all. A Gram matrix
        and its cross-products whose left factor is the first ``p`` columns."""
        rows = self.sorted_rows(*parts)
        spans = zip(self._starts, self._ends, strict=True)
        return np.stack([rows[a:b, :p].T @ rows[a:b] for a, b in spans])

    def products(self, left: NDArray, *right: NDArray) -> NDArray:
        """``left_b^T [right...]_b`` over each block's rows, shape (len(labels), p,
        q) for ``left`` (n, p) and the ``right`` parts side by side, (n, q) in all
        (a part of shape (n,) is one column)."""
        return self.split_products(left.shape[1], left, *right)

    def split_products(self, p: int, *parts: NDArray | float) -> NDArray:
        """``R_b[:, :p]^T R_b[:, p:]`` over each block's rows ``R_b`` of ``parts``
        side by side (as ``sorted_rows`` takes them): ``products`` with a left
        factor of several parts."""
        rows = self.sorted_rows(*parts)
        spans = zip(self._starts, self._ends, strict=True)
        return np.stack([rows[a:b, :p].T @ rows[a:b, p:] for a, b in spans])


def rows_times_blocks(X: NDArray, blocks: NDArray) -> NDArray:
    """``x^T M_k`` for every row of ``X`` (n, d) and matrix of ``blocks`` (K, d, e).

    One GEMM against the matrices side by side, (d, K e), rather than K small ones
    or a batched matmul: shape (n, K, e).
    """
    n_blocks, n_dims, n_out = blocks.shape
    side_by_side = blocks.transpose(1, 0, 2).reshape(n_dims, n_blocks * n_out)
    return (X @ side_by_side).reshape(X.shape[0], n_blocks, n_out)


def gaussian_score_sampler(Z, coef, chol, blocks, nu, link=None):
    """Draws of ``link(x^T theta~)`` for ``theta~ ~ N(coef_b, nu^2 L_b L_b^T)`` per
    round and block: the sampler of LinTS (identity link) and LogTS (logistic).

    ``x^T theta~ = x^T coef + nu (L^T x)^T z`` with ``z ~ N(0, I)``: the means and
    ``L^T x`` are the same for every draw and computed here, once (for shared
    contexts by one GEMM, ``rows_times_blocks``); a draw is then one product with
    the noise. ``draw(rng)`` returns one draw, shape (n, K), from noise of shape
    (n, n_blocks, d), the stream of a draw of theta per round and block;
    ``draw(rng, n_draws)`` returns ``n_draws`` stacked, shape (n_draws, n, K), for
    the Monte Carlo propensities (the policy's ``_batched_draws`` flag).

    Parameters: ``Z`` the design rows, shared (n, d) with arm ``k`` on block ``k``
    or per-arm (n, K, d); ``coef`` (n_blocks, d); ``chol`` (n_blocks, d, d);
    ``blocks`` (K,) the block of each arm.
    """
    if Z.ndim == 2:
        mean = Z @ coef.T
        factor = nu * rows_times_blocks(Z, chol)
        blocks = slice(None)  # arm k reads block k: no gather
    else:
        mean = np.einsum("nkd,kd->nk", Z, coef[blocks])
        factor = nu * np.einsum("nki,kij->nkj", Z, chol[blocks])
    shape = (Z.shape[0], *coef.shape)

    def draw(rng, n_draws=None):
        size = shape if n_draws is None else (n_draws, *shape)
        noise = rng.standard_normal(size)[..., blocks, :]
        scores = mean + np.einsum("nkj,...nkj->...nk", factor, noise)
        return scores if link is None else link(scores)

    return draw
