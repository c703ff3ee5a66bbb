"""The linear logistic baselines of the neural logistic bandits paper: shared state.

Bae and Lee, "Neural logistic bandits" (ICML 2025, arXiv:2505.02069), run two linear
logistic bandits on the raw features: Logistic-UCB-1 (Faury et al., ICML 2020) and
ada-OFU-ECOLog (Faury et al., AISTATS 2022). Both are "streamlined" there (its
section 7): the estimate is refitted by gradient descent on the penalised log-loss of
all the data, ``n_steps`` full-batch steps every ``train_every`` rounds, the
projections onto ``{||theta|| <= S}`` are dropped, and the width is the theory's
shape times a tuned multiplier ``nu``. This module keeps what the two share:

* the history of chosen rows (a buffer that only grows, so a failed call, which
  restores the row count, leaves it consistent);
* the estimate, refitted by gradient descent (the paper's runs) or by the exact
  penalised maximum-likelihood estimate of the shared Newton solver; both minimise
  ``sum_i w_i BCE(x_i^T theta, r_i) + alpha ||theta||^2`` (gradient descent on that
  objective divided by the total weight, the same minimiser, so that a fixed
  learning rate is stable);
* the unweighted Gram ``G = sum w x x^T`` and its data-adaptive effective dimension
  ``logdet(I + R G / alpha)`` with ``R = 1/4`` (the paper's section 7, item 4).

Shared contexts give each arm its own parameter block, which is exactly the paper's
disjoint encoding ``[0, ..., x, ..., 0]``: its design matrices are block diagonal and
its log-determinants add up over the blocks, so the widths use the sums over blocks
and the total dimension.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from scipy.special import expit

from skbandit.exceptions import NumericalError
from skbandit.policies._core._newton import BlockSum, fit_logistic_newton
from skbandit.policies._core._ridge import ArmBlocksMixin
from skbandit.utils._param_validation import Interval, StrOptions
from skbandit.utils._reward_range import check_reward_range
from skbandit.utils._standardize import STANDARDIZE_CONSTRAINT
from skbandit.utils._tags import DeterministicSelectMixin

__all__ = ["LOGISTIC_LINEAR_CONSTRAINTS", "LinearLogisticMixin", "RowHistory"]

#: ``R = sup mu'``, the sigmoid's largest slope (the paper's ``R = 1/4``).
R_SLOPE = 0.25

LOGISTIC_LINEAR_CONSTRAINTS = {
    "n_actions": [Interval(Integral, 1, None, closed="left"), None],
    "nu": [Interval(Real, 0, None, closed="left")],
    "alpha": [Interval(Real, 0, None, closed="neither")],
    "norm_bound": [Interval(Real, 0, None, closed="left")],
    "delta": [Interval(Real, 0, 1, closed="neither")],
    "n_steps": [Interval(Integral, 0, None, closed="left")],
    "learning_rate": [Interval(Real, 0, None, closed="left")],
    "train_every": [Interval(Integral, 1, None, closed="left")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="neither")],
    "random_state": ["random_state"],
    **STANDARDIZE_CONSTRAINT,
}

#: Solvers of the estimate: the paper's gradient descent, or the exact MLE.
SOLVERS = StrOptions({"gradient", "newton"})


class RowHistory:
    """The chosen rows so far: block, features, reward and weight.

    ``appended`` writes past the current count and returns a new object, so an
    object kept by a failed call still sees exactly its own rows.
    """

    def __init__(self, n_dims, capacity=64):
        self.n = 0
        self._block = np.zeros(capacity, np.intp)
        self._X = np.zeros((capacity, n_dims))
        self._y = np.zeros(capacity)
        self._w = np.zeros(capacity)

    def appended(self, blocks, X, y, w):
        """A history with the rows added (the buffer grows by doubling)."""
        new = object.__new__(RowHistory)
        n, k = self.n, X.shape[0]
        arrays = (self._block, self._X, self._y, self._w)
        if n + k > self._X.shape[0]:
            size = max(2 * self._X.shape[0], n + k)
            grown = []
            for a in arrays:
                b = np.zeros((size, *a.shape[1:]), a.dtype)
                b[:n] = a[:n]
                grown.append(b)
            arrays = grown
        for a, v in zip(arrays, (blocks, X, y, w), strict=True):
            a[n : n + k] = v
        new._block, new._X, new._y, new._w = arrays
        new.n = n + k
        return new

    def rows(self, start=0):
        """``(blocks, X, rewards, weights)`` of rows ``start`` to the end."""
        s = slice(start, self.n)
        return self._block[s], self._X[s], self._y[s], self._w[s]


class LinearLogisticMixin(DeterministicSelectMixin, ArmBlocksMixin):
    """History, estimate and effective dimension of a linear logistic bandit.

    Subclasses have ``nu``, ``alpha``, ``norm_bound``, ``delta``, ``solver``,
    ``n_steps``, ``learning_rate``, ``train_every``, ``max_iter``, ``tol`` and define
    ``_learn`` (the update of their own design matrix, the last step that may raise).
    """

    #: Gradient steps and a kernel's length scale depend on the features' scales.
    _standardize_auto = True
    _blas_small_work = True
    _blas_history = True  # refits over the history

    def _init_state(self):
        d, n_blocks = self.n_features_in_, self._n_blocks
        self._history = RowHistory(d)
        self._coef = np.zeros((n_blocks, d))
        self._gram = np.zeros((n_blocks, d, d))
        self._logdet = np.zeros(n_blocks)

    @property
    def coef_(self):
        """The estimate per parameter block, shape ``(n_blocks, n_features_in_)``."""
        return self._coef

    @property
    def effective_dimension_(self):
        """``logdet(I + R G / alpha)``, summed over the blocks (``R = 1/4``)."""
        return float(self._logdet.sum())

    @property
    def _dimension(self):
        """Total dimension of the model (blocks times features: the disjoint ``dK``)."""
        return self._coef.size

    def _rows(self, X, actions, rewards, sample_weight):
        check_reward_range(
            rewards, type(self).__name__, "clicks or their probabilities"
        )
        w = np.ones(actions.shape[0]) if sample_weight is None else sample_weight
        keep = w > 0
        rows = self._chosen_features(X, actions).astype(np.float64)
        return self._arm_blocks[actions][keep], rows[keep], rewards[keep], w[keep]

    def _update(self, X, actions, rewards, sample_weight):
        blocks, rows, y, w = self._rows(X, actions, rewards, sample_weight)
        seen = self.n_samples_seen_
        trains = (seen + X.shape[0]) // self.train_every > seen // self.train_every
        if rows.shape[0] == 0 and not trains:
            return
        history = self._history.appended(blocks, rows, y, w)
        gram, logdet = self._gram_with(blocks, rows, w)
        # The policy's own matrix and estimate; its in-place writes come last.
        coef = self._learn(history, blocks, rows, y, w, trains)
        # Nothing below can fail: commit.
        self._history, self._gram, self._logdet, self._coef = (
            history,
            gram,
            logdet,
            coef,
        )

    def _gram_with(self, blocks, rows, w):
        touched = np.unique(blocks)
        gram = self._gram.copy()
        np.add.at(gram, blocks, w[:, None, None] * rows[:, :, None] * rows[:, None, :])
        logdet = self._logdet.copy()
        if touched.size:
            eye = np.eye(rows.shape[1])
            sign, value = np.linalg.slogdet(
                eye + (R_SLOPE / self.alpha) * gram[touched]
            )
            if not (np.all(sign > 0) and np.all(np.isfinite(value))):
                raise NumericalError(
                    "The Gram matrix became non-finite (are the features bounded?); "
                    "the policy was left unchanged."
                )
            logdet[touched] = value
        return gram, logdet

    def _fit(self, history, coef):
        """The estimate refitted on the whole history (gradient descent or Newton)."""
        blocks, X, y, w = history.rows()
        if X.shape[0] == 0:
            return coef
        n_blocks = coef.shape[0]
        with np.errstate(over="ignore", invalid="ignore"):
            if self.solver == "newton":
                coef, _ = fit_logistic_newton(
                    X,
                    w * y,
                    w * (1.0 - y),
                    2.0 * self.alpha,  # the solver's (l2 / 2)||theta||^2
                    blocks=blocks,
                    n_blocks=n_blocks,
                    coef_init=coef,
                    tol=self.tol,
                    max_iter=self.max_iter,
                )
            else:
                coef = _gradient_descent(
                    coef, X, blocks, y, w, self.alpha, self.learning_rate, self.n_steps
                )
        if not np.all(np.isfinite(coef)):
            raise NumericalError(
                "Gradient descent diverged to non-finite coefficients; lower "
                "learning_rate. The policy was left unchanged."
            )
        return coef

    def _log_term(self):
        """``log(1 / delta)``."""
        return float(np.log(1.0 / self.delta))

    def _linear_scores(self, Xk):
        """``x_{t,k}^T theta_{block(k)}``, shape (n, K)."""
        return np.einsum("nkd,kd->nk", Xk, self._coef[self._arm_blocks])

    def _score_sampler(self, X):
        """The optimistic score: ``_scores``'s mean plus its bonus."""
        mean, bonus = self._scores(X, True)
        ucb = mean + bonus
        return lambda rng: ucb

    def _all_arms(self, X):
        return self._arm_features(X).astype(np.float64)


def _gradient_descent(coef, X, blocks, y, w, alpha, learning_rate, n_steps):
    """``n_steps`` full-batch steps on ``(sum w BCE + alpha ||theta||^2) / sum w``."""
    n_blocks = coef.shape[0]
    block_sum = BlockSum(X, blocks, n_blocks)
    scale = learning_rate / w.sum()
    for _ in range(n_steps):
        z = np.einsum("nd,nd->n", X, coef[blocks])
        residual = w * (expit(z) - y)
        grad = block_sum(residual[None])[0] + 2.0 * alpha * coef
        coef = coef - scale * grad
    return coef
