"""Cascade doubly robust off-policy evaluation of ranked slates.

Kiyohara, Saito, Matsuhiro, Narita, Shimizu and Yamamoto, "Doubly robust off-policy
evaluation for ranking policies under the cascade behavior model" (WSDM 2022). Under
the cascade model the reward at position ``k`` depends on the arms shown at
positions ``1..k`` only, so its importance weight is that of the slate's top-``k``
prefix, ``w_{i,k} = prod_{j <= k} pi(a_{ij} | x_i, a_{i,<j}) / mu(a_{ij} | x_i,
a_{i,<j})``, and

.. math::

    \\hat V_{CascadeDR} = \\frac{1}{n} \\sum_i \\sum_k \\alpha_k \\Big[
    w_{i,k} \\big(r_{ik} - \\hat q_k(x_i, a_{i,\\le k})\\big)
    + w_{i,k-1} \\sum_a \\pi(a \\mid x_i, a_{i,<k})\\,
    \\hat q_k(x_i, a_{i,<k}, a)\\Big], \\qquad w_{i,0} = 1.

Without a reward model it is the reward-interaction IPS (RIPS, Open Bandit
Pipeline's ``SlateRewardInteractionIPS``); with one slot it is DR.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils import check_array

from skbandit.evaluation._ope_terms import _PROBA_ATOL, _Terms
from skbandit.utils._param_validation import validate_params

__all__ = ["cascade_dr_value"]


def _checked(action_proba, actions, rewards, propensities, expected_rewards,
             position_weights):  # fmt: skip
    proba = check_array(action_proba, allow_nd=True, input_name="action_proba")
    if proba.ndim != 3:
        raise ValueError(
            "action_proba must be 3-D of shape (n_samples, slate_size, n_actions): "
            "the evaluated policy's law at each position given the logged "
            f"prefix; got shape {proba.shape}."
        )
    n, k, n_arms = proba.shape
    if np.any(proba < 0) or np.any(np.abs(proba.sum(axis=2) - 1) > _PROBA_ATOL):
        raise ValueError("Each action_proba[i, k] must be a probability distribution.")
    actions = check_array(actions, dtype=np.int64, input_name="actions")
    rewards = check_array(rewards, input_name="rewards")
    propensities = check_array(propensities, input_name="propensities")
    for name, arr in (("actions", actions), ("rewards", rewards),
                      ("propensities", propensities)):  # fmt: skip
        if arr.shape != (n, k):
            raise ValueError(f"{name} must have shape {(n, k)}; got {arr.shape}.")
    if actions.min() < 0 or actions.max() >= n_arms:
        raise ValueError(f"actions must be in [0, {n_arms}).")
    if propensities.min() <= 0 or propensities.max() > 1:
        raise ValueError("propensities must be in (0, 1].")
    q = np.zeros_like(proba)
    if expected_rewards is not None:
        q = check_array(expected_rewards, allow_nd=True, input_name="expected_rewards")
        if q.shape != proba.shape:
            raise ValueError(
                f"expected_rewards must have the shape of action_proba, "
                f"{proba.shape}; got {q.shape}."
            )
    alpha = np.ones(k) if position_weights is None else check_array(
        position_weights, ensure_2d=False, input_name="position_weights"
    )  # fmt: skip
    if alpha.shape != (k,):
        raise ValueError(f"position_weights must have shape ({k},).")
    return proba, actions, rewards, propensities, q, alpha


def cascade_dr_terms(action_proba, actions, rewards, propensities,
                     expected_rewards=None, position_weights=None):  # fmt: skip
    proba, actions, rewards, propensities, q, alpha = _checked(
        action_proba, actions, rewards, propensities, expected_rewards,
        position_weights,
    )  # fmt: skip
    n, k, _ = proba.shape
    rows, slots = np.arange(n)[:, None], np.arange(k)[None, :]
    chosen = proba[rows, slots, actions] / propensities  # per-position ratios
    w = np.cumprod(chosen, axis=1)  # w_{i,k}
    w_before = np.hstack([np.ones((n, 1)), w[:, :-1]])  # w_{i,k-1}
    q_logged = q[rows, slots, actions]
    q_policy = np.einsum("ika,ika->ik", proba, q)
    per_round = (w * (rewards - q_logged) + w_before * q_policy) @ alpha
    return _Terms(None, per_round, None, n)


@validate_params(
    {
        "action_proba": ["array-like"],
        "actions": ["array-like"],
        "rewards": ["array-like"],
        "propensities": ["array-like"],
        "expected_rewards": ["array-like", None],
        "position_weights": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def cascade_dr_value(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
    *,
    expected_rewards: ArrayLike | None = None,
    position_weights: ArrayLike | None = None,
) -> float:
    """Cascade doubly robust estimate of a ranking policy's value.

    Unbiased under the cascade model (each position's reward depends on the arms
    shown at and above it) when the logging probabilities are right, whatever
    the reward model; the reward model lowers the variance. See
    :mod:`skbandit.evaluation` for the formula.

    Parameters
    ----------
    action_proba : array-like of shape (n_samples, slate_size, n_actions)
        The evaluated policy's law of the arm at each position, given the context
        and the **logged** arms above it (a Plackett-Luce policy: its softmax over
        the arms not yet shown).
    actions : array-like of shape (n_samples, slate_size)
        Logged slates, best position first.
    rewards : array-like of shape (n_samples, slate_size)
        Logged reward at each position.
    propensities : array-like of shape (n_samples, slate_size)
        The logging policy's probability of each logged arm at its position,
        given the logged arms above it.
    expected_rewards : array-like of shape (n_samples, slate_size, n_actions), \
            default=None
        ``q_k(x_i, a_{i,<k}, a)``: a reward model's expected reward at position
        ``k`` of each arm placed after the logged prefix. None: zeros (RIPS).
    position_weights : array-like of shape (slate_size,), default=None
        Weight of each position's reward in the slate's value; None: ones.

    Returns
    -------
    value : float
        Estimated expected (weighted) sum of the slate's rewards per round.

    References
    ----------
    .. [1] Kiyohara, Saito, Matsuhiro, Narita, Shimizu, Yamamoto. "Doubly robust
       off-policy evaluation for ranking policies under the cascade behavior
       model". WSDM 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.evaluation import cascade_dr_value
    >>> proba = np.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    >>> cascade_dr_value(proba, [[0, 1]], [[1.0, 0.0]], [[1 / 3, 1 / 2]])
    3.0
    """
    return cascade_dr_terms(
        action_proba, actions, rewards, propensities, expected_rewards,
        position_weights,
    ).value()  # fmt: skip
