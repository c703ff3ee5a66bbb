"""Off-policy value estimators as plain metric-style functions.

Formulas follow the Open Bandit Pipeline documentation: with importance weights
``w_i = pi(a_i | x_i) / p_i``, IPS is ``mean(w r)`` and SNIPS ``sum(w r) / sum(w)``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils import check_array

from skbandit.utils.validation import check_bandit_data

__all__ = ["ips_value", "snips_value"]


def _importance_weights(
    actions: ArrayLike,
    action_proba: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
    clip: float | None = None,
) -> tuple[NDArray, NDArray]:
    action_proba = check_array(action_proba, input_name="action_proba")
    actions, rewards, propensities, _ = check_bandit_data(
        actions,
        rewards,
        propensities=propensities,
        n_samples=action_proba.shape[0],
        n_actions=action_proba.shape[1],
    )
    weights = action_proba[np.arange(actions.shape[0]), actions] / propensities
    if clip is not None:
        weights = np.minimum(weights, clip)
    return weights, rewards


def ips_value(
    actions: ArrayLike,
    action_proba: ArrayLike,
    *,
    rewards: ArrayLike,
    propensities: ArrayLike,
    clip: float | None = None,
) -> float:
    """Inverse propensity scoring estimate of a policy's value.

    Parameters
    ----------
    actions : array-like of shape (n_samples,)
        Logged actions.
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution, ``predict_action_proba(X)``.
    rewards : array-like of shape (n_samples,)
        Logged rewards.
    propensities : array-like of shape (n_samples,)
        Logging policy's probability of each logged action, in ``(0, 1]``.
    clip : float or None, default=None
        Upper bound on the importance weights.

    Returns
    -------
    value : float
        Estimated expected reward per round.
    """
    weights, rewards = _importance_weights(
        actions, action_proba, rewards, propensities, clip
    )
    return float(np.mean(weights * rewards))


def snips_value(
    actions: ArrayLike,
    action_proba: ArrayLike,
    *,
    rewards: ArrayLike,
    propensities: ArrayLike,
) -> float:
    """Self-normalised inverse propensity scoring estimate of a policy's value.

    Parameters
    ----------
    actions : array-like of shape (n_samples,)
        Logged actions.
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution.
    rewards : array-like of shape (n_samples,)
        Logged rewards.
    propensities : array-like of shape (n_samples,)
        Logging policy's probability of each logged action, in ``(0, 1]``.

    Returns
    -------
    value : float
        Estimated expected reward per round (0 when no weight is positive).
    """
    weights, rewards = _importance_weights(actions, action_proba, rewards, propensities)
    total = weights.sum()
    return float(np.sum(weights * rewards) / total) if total > 0 else 0.0
