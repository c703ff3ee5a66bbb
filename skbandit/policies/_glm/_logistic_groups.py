"""The history of the logistic policies as grouped rows, their penalised MAP fit
and its Hessian: the mixin GLM-UCB, UCB-GLM, LogTS and LogPHE share.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from skbandit._base._arms import with_prior_rows
from skbandit.exceptions import _as_numerical_error
from skbandit.policies._core._grouped_rows import GroupedRows, pseudo_counts
from skbandit.policies._core._newton import fit_logistic_newton
from skbandit.policies._core._ridge import (
    LINEAR_CONSTRAINTS,
    ArmBlocksMixin,
    RidgeBlocks,
    add_intercept,
)
from skbandit.utils._param_validation import Interval
from skbandit.utils._reward_range import check_reward_range
from skbandit.utils._standardize import STANDARDIZE_CONSTRAINT, grouping_rows
from skbandit.utils._tags import ExactPartialFitMixin

__all__ = ["LogisticGroupsMixin"]


_GLM_CONSTRAINTS = {
    **LINEAR_CONSTRAINTS,
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="neither")],
    **STANDARDIZE_CONSTRAINT,
}


_NO_HISTORY = (
    "{name} was fitted from Dask collections and holds no history of rows, which its "
    "partial_fit refits the MAP on; fit it again on the old and new logs together "
    "(e.g. dask.array.concatenate), or fit it in memory. The policy was left unchanged."
)


class LogisticGroupsMixin(ExactPartialFitMixin, ArmBlocksMixin):
    """Grouped history, penalised logistic MAP and its Hessian, shared by the GLMs.

    The base of the logistic policies of the GLM family
    (:class:`~skbandit.policies.GLMUCB`, :class:`~skbandit.policies.UCBGLM`,
    :class:`~skbandit.policies.LogTS`, :class:`~skbandit.policies.LogPHE`): rewards
    in ``[0, 1]``, the history stored as groups of equal rows, and the penalised
    maximum a posteriori fit by Newton's method, per arm for shared contexts, shared
    for per-arm contexts. It fills in the hooks ``_init_state``, ``_update`` and
    ``_add_arms``, and gives a policy ``_linear_scores(Xk)`` (``x_k^T theta`` at the
    fit) and ``_hess_widths(Xk)`` (``||x_k||_{H^{-1}}``), of the per-arm design rows
    ``Xk = self._design(self._arm_features(X))``; a policy on it writes
    ``_scores`` (the mean ``sigmoid(x^T theta)``) and ``_score_sampler``.

    A policy on it has the parameters ``alpha``, ``fit_intercept``, ``max_iter`` and
    ``tol``, and may set the family hooks ``_l2`` (the solver's penalty
    ``(l2 / 2)||theta||^2`` as a function of ``alpha``; default ``2 alpha``),
    ``_keeps_gram`` (maintain ``V = alpha I + sum x x^T`` for a UCB width; default
    False) and ``_pseudo_scale`` (PHE's ``a``; 0 for the GLMs). With ``a > 0`` the
    stored fit is PHE's mean-replaced problem: every group's ``M_g`` pseudo-rewards
    count as ``M_g/2`` positives and ``M_g/2`` negatives.

    See Also
    --------
    skbandit.policies.base.LinearPolicyMixin : The same on ridge blocks.

    Examples
    --------
    >>> from skbandit.policies import GLMUCB, LogTS
    >>> from skbandit.policies.base import LogisticGroupsMixin
    >>> issubclass(GLMUCB, LogisticGroupsMixin), issubclass(LogTS, LogisticGroupsMixin)
    (True, True)
    >>> policy = LogTS(n_actions=2).fit([[1.0], [1.0]], [0, 1], [1.0, 0.0])
    >>> policy.coef_.shape  # one MAP fit per arm
    (2, 1)
    """

    _blas_small_work = True
    _blas_history = True  # Newton steps over the grouped history
    #: The penalty is load-bearing: an early history is separable, where the
    #: likelihood alone has no maximiser, and a penalty sized for unit-scale
    #: features is negligible on raw ones (see the raw-features guide).
    _standardize_auto = True

    _keeps_gram = False

    @property
    def _pseudo_scale(self):
        return 0.0

    @property
    def _l2(self):
        return 2.0 * self.alpha

    def _init_state(self):
        d = self.n_features_in_ + int(self.fit_intercept)
        n_blocks = self._n_blocks
        eye = np.eye(d)
        self._groups = GroupedRows(d)
        self._coef = np.zeros((n_blocks, d))
        self._hess_inv = np.repeat((eye / self._l2)[None], n_blocks, axis=0)
        self._hess_inv_chol = np.linalg.cholesky(self._hess_inv)
        self._weight_seen = np.zeros(self.n_actions_)
        self._pseudo_gram = np.zeros((n_blocks, d, d))
        self._gram = RidgeBlocks(n_blocks, d, self.alpha) if self._keeps_gram else None
        self._max_norm = 0.0

    def _design(self, X):
        return add_intercept(X) if self.fit_intercept else X

    def _add_arms(self, n_new):
        # As _init_state for the new arms only: no history, and with shared
        # contexts a block at the prior (theta = 0, H^{-1} = I / l2).
        self._weight_seen = with_prior_rows(self._weight_seen, n_new, 0.0)
        if self._per_arm_contexts:
            return
        prior = np.eye(self._coef.shape[1]) / self._l2
        self._coef = with_prior_rows(self._coef, n_new, 0.0)
        self._hess_inv = with_prior_rows(self._hess_inv, n_new, prior)
        chol = np.linalg.cholesky(prior)
        self._hess_inv_chol = with_prior_rows(self._hess_inv_chol, n_new, chol)
        self._pseudo_gram = with_prior_rows(self._pseudo_gram, n_new, 0.0)
        if self._gram is not None:
            self._gram = self._gram.grown(n_new, self.alpha)

    def _check_rewards(self, rewards):
        check_reward_range(
            rewards, type(self).__name__, "Bernoulli rewards or their probabilities"
        )

    def _observations(self, X, actions, rewards, sample_weight):
        """The rows that carry weight, as the MAP reads them: ``(blocks, rows,
        actions, rewards, w)``, rewards checked (the Dask fit's per-partition step)."""
        self._check_rewards(rewards)
        w = np.ones(actions.shape[0]) if sample_weight is None else sample_weight
        keep = w > 0
        rows = self._design(grouping_rows(self, self._chosen_features(X, actions)))
        rows = rows[keep]
        actions, rewards, w = actions[keep], rewards[keep], w[keep]
        return self._arm_blocks[actions], rows, actions, rewards, w

    def _update(self, X, actions, rewards, sample_weight):
        if self._groups is None:
            raise ValueError(_NO_HISTORY.format(name=type(self).__name__))
        blocks, rows, actions, rewards, w = self._observations(
            X, actions, rewards, sample_weight
        )
        if rows.shape[0] == 0:
            return
        a = self._pseudo_scale
        if a > 0:
            m, weight_seen = pseudo_counts(actions, w, self._weight_seen, a)
        else:
            m = np.zeros(actions.shape[0], dtype=np.int64)
            weight_seen = self._weight_seen + np.bincount(
                actions, w, minlength=self.n_actions_
            )
        groups = self._groups
        plan = groups.plan(blocks, rows)
        touched = np.unique(blocks)
        g_block, g_X, g_count, g_reward, g_pseudo = groups.preview(
            plan, blocks, rows, w, w * rewards, m, touched
        )
        coef, hess = fit_logistic_newton(
            g_X,
            g_reward + 0.5 * g_pseudo,
            g_count - g_reward + 0.5 * g_pseudo,
            self._l2,
            blocks=np.searchsorted(touched, g_block),
            n_blocks=touched.shape[0],
            coef_init=self._coef[touched],
            tol=self.tol,
            max_iter=self.max_iter,
        )
        with _as_numerical_error(
            "The logistic Hessian is not positive definite; increase alpha. The "
            "policy was left unchanged."
        ):
            hess_inv = np.linalg.inv(hess)
            chol = np.linalg.cholesky(hess_inv)
        if self._gram is not None:  # last step that may raise; writes only on success
            self._gram.update(blocks, rows, np.zeros(rows.shape[0]), w)
        # Nothing below can fail: commit.
        groups.commit(plan, blocks, rows, w, w * rewards, m)
        self._coef[touched] = coef
        self._hess_inv[touched] = hess_inv
        self._hess_inv_chol[touched] = chol
        self._weight_seen = weight_seen
        if a > 0:
            np.add.at(
                self._pseudo_gram,
                blocks,
                m[:, None, None] * rows[:, :, None] * rows[:, None, :],
            )
        self._max_norm = max(
            self._max_norm, float(np.max(np.linalg.norm(rows, axis=1)))
        )

    def _linear_scores(self, Xk):
        """``x_{t,k}^T theta_{block(k)}`` of the stored MAP, shape (n, K)."""
        return np.einsum("nkd,kd->nk", Xk, self._coef[self._arm_blocks])

    def _hess_widths(self, Xk):
        """``||x_{t,k}||_{H^{-1}}`` at the MAP, shape (n, K)."""
        quad = np.einsum("nkd,kde,nke->nk", Xk, self._hess_inv[self._arm_blocks], Xk)
        return np.sqrt(np.maximum(quad, 0.0))

    @property
    def coef_(self):
        """MAP coefficients per block, shape ``(n_blocks, n_features_in_)``."""
        return self._coef[:, : self.n_features_in_]

    @property
    def intercept_(self):
        """MAP intercept per block, shape (n_blocks,); zero without an intercept."""
        if self.fit_intercept:
            return self._coef[:, -1].copy()
        return np.zeros(self._coef.shape[0])

    @property
    def n_groups_(self):
        """Number of distinct (block, feature row) groups of the stored history.

        0 when fitted from Dask collections: no history is kept.
        """
        return 0 if self._groups is None else self._groups.n_groups
