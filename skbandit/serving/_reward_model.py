"""The reward model behind the doubly robust estimates of the gate and the reports.

Doubly robust (DR) off-policy evaluation adds to each round a model's prediction of
every arm's reward, ``q(x, a)``, and corrects it with the logged reward where the
evaluated policy played the logged arm, weighted by the inverse propensity. Its
value is unbiased when the propensities are right, whatever the model; a better
model only shrinks its variance. The model here is **cross-fitted**: the rounds are
split into ``n_folds`` folds, and each fold's predictions come from models fitted on
the other folds, so that no round's own reward enters its prediction (a model that
has memorised a round would cancel its correction term).

By default, one :class:`~sklearn.linear_model.Ridge` (``alpha=1.0``) per arm on
shared contexts, fitted on the rounds that played that arm; on per-arm contexts
``(n, n_actions, n_features)``, one ridge on the played arms' rows. An arm with
fewer than two rounds in the training folds is predicted by the folds' mean
reward. Any scikit-learn regressor may replace the ridge.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from sklearn.base import clone
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold

__all__ = ["cross_fitted_rewards", "describe"]


def describe(estimator, n_folds: int) -> str:
    """How the reward model is recorded beside a gate's figures."""
    model = "Ridge(alpha=1.0)" if estimator is None else repr(estimator)
    return f"{model} per arm, cross-fitted on {n_folds} folds"


def _fit_predict(estimator, X_fit, a_fit, r_fit, X_out, n_actions) -> NDArray:
    n_out = X_out.shape[0]
    out = np.full((n_out, n_actions), float(np.mean(r_fit)) if r_fit.size else 0.0)
    if X_fit.ndim == 3:  # per-arm contexts: one model on the played arms' rows
        rows = X_fit[np.arange(X_fit.shape[0]), a_fit]
        if rows.shape[0] >= 2:
            model = clone(estimator).fit(rows, r_fit)
            out = model.predict(X_out.reshape(n_out * n_actions, -1)).reshape(
                n_out, n_actions
            )
        return out
    for arm in range(n_actions):
        played = a_fit == arm
        if played.sum() >= 2:
            model = clone(estimator).fit(X_fit[played], r_fit[played])
            out[:, arm] = model.predict(X_out)
    return out


def cross_fitted_rewards(
    X,
    actions,
    rewards,
    n_actions: int,
    *,
    estimator=None,
    n_folds: int = 2,
    random_state=0,
) -> NDArray:
    """Cross-fitted predictions ``q(x_i, a)`` of every arm's reward, ``(n, n_actions)``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features) or \
            (n_samples, n_actions, n_features), or sparse
        Logged contexts.
    actions : array-like of shape (n_samples,)
        Logged arms.
    rewards : array-like of shape (n_samples,)
        Logged rewards.
    n_actions : int
        Number of arms.
    estimator : regressor, default=None
        Cloned per arm (per fold); ``Ridge(alpha=1.0)`` when None.
    n_folds : int, default=2
        Folds of the cross-fitting.
    random_state : int, default=0
        Shuffles the rounds into folds.

    Returns
    -------
    expected_rewards : ndarray of shape (n_samples, n_actions)
    """
    estimator = Ridge(alpha=1.0) if estimator is None else estimator
    actions = np.asarray(actions)
    rewards = np.asarray(rewards, dtype=np.float64)
    X = X if sp.issparse(X) else np.asarray(X)
    out = np.empty((actions.shape[0], n_actions))
    folds = KFold(n_splits=n_folds, shuffle=True, random_state=random_state)
    for fit, held in folds.split(actions):
        out[held] = _fit_predict(
            estimator, X[fit], actions[fit], rewards[fit], X[held], n_actions
        )
    return out
