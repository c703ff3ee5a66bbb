"""Validation of slate feedback: ``(n_rounds, slate_size)`` actions and rewards.

Used by the slate policies (:mod:`skbandit.policies._core._slate`) and the slate
off-policy estimators, so that each error is worded once.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils import check_array
from sklearn.utils.validation import _check_sample_weight

from skbandit.utils._array_checks import (
    _check_action_range,
    _check_rewards_given,
    _numeric_actions,
    check_action_mask,
)

__all__ = ["check_policy_slate_feedback", "check_slate_feedback", "check_slates"]


def check_slates(
    actions: ArrayLike,
    *,
    n_samples: int,
    n_actions: int | None,
    slate_size: int | None,
    estimator_name: str = "the policy",
) -> NDArray[np.int64]:
    """Validate slates: integer arms, distinct within a row, in ``[0, n_actions)``."""
    if not (type(actions) is np.ndarray and actions.dtype.kind == "i"):
        # sklearn's validation costs about 100 us, more than a linear round
        actions = check_array(
            actions,
            ensure_2d=False,
            dtype=None,
            input_name="actions",
            ensure_min_samples=0,
        )
    width = "slate_size" if slate_size is None else slate_size
    if actions.ndim != 2 or (slate_size is not None and actions.shape[1] != slate_size):
        raise ValueError(
            f"actions must be 2-D of shape (n_samples, slate_size)=(n_samples, "
            f"{width}) for {estimator_name}, got shape {actions.shape}."
        )
    if actions.shape[0] != n_samples:
        raise ValueError(
            f"X has {n_samples} rows but actions has {actions.shape[0]}; "
            "they must have the same length."
        )
    actions = _numeric_actions(actions)  # strings, complex: a clear ValueError
    integral = actions.dtype.kind in "iu"
    if actions.size and not integral and not np.all(np.mod(actions, 1) == 0):
        raise ValueError("actions must be integers in [0, n_actions).")
    actions = actions.astype(np.int64)
    _check_action_range(actions, n_actions, estimator_name)
    if actions.shape[1] > 1:
        repeated = np.any(np.diff(np.sort(actions, axis=1), axis=1) == 0, axis=1)
        if np.any(repeated):
            row = int(np.flatnonzero(repeated)[0])
            raise ValueError(
                f"actions[{row}]={actions[row].tolist()} repeats an arm; a slate "
                "holds distinct arms."
            )
    return actions


def check_slate_feedback(
    actions: ArrayLike,
    rewards: ArrayLike,
    *,
    n_samples: int,
    n_actions: int | None,
    slate_size: int,
    sample_weight: ArrayLike | None = None,
    action_mask: ArrayLike | None = None,
    estimator_name: str = "the policy",
) -> tuple[NDArray, NDArray, NDArray | None]:
    """Validate semi-bandit feedback; ``NaN`` rewards mark unobserved slots.

    Returns ``(actions, rewards, sample_weight)``: int64 and float64 arrays of
    shape ``(n_samples, slate_size)`` and the per-round weights (or None).
    """
    actions = check_slates(
        actions,
        n_samples=n_samples,
        n_actions=n_actions,
        slate_size=slate_size,
        estimator_name=estimator_name,
    )
    _check_rewards_given(rewards, estimator_name)
    if not (type(rewards) is np.ndarray and rewards.dtype == np.float64):
        rewards = check_array(
            rewards,
            ensure_2d=False,
            dtype=np.float64,
            input_name="rewards",
            ensure_min_samples=0,
            ensure_all_finite="allow-nan",
        )
    elif np.isinf(rewards).any():
        raise ValueError("Input rewards contains infinity.")
    if rewards.shape != actions.shape:
        raise ValueError(
            f"rewards must have the shape of actions, {actions.shape} (one score per "
            f"chosen arm, NaN where unobserved), got {rewards.shape}."
        )
    if sample_weight is not None:
        sample_weight = _check_sample_weight(
            sample_weight, rewards[:, 0], dtype=np.float64, ensure_non_negative=True
        )
    if action_mask is not None:
        mask = check_action_mask(action_mask, n_samples, n_actions)
        allowed = mask[np.arange(n_samples)[:, None], actions]
        if not np.all(allowed):
            row = int(np.flatnonzero(~allowed.all(axis=1))[0])
            raise ValueError(
                f"actions[{row}]={actions[row].tolist()} holds an arm masked out by "
                "action_mask; feedback must be for available arms."
            )
    return actions, rewards, sample_weight


def check_policy_slate_feedback(
    policy, actions, rewards, sample_weight, mask, n, n_actions
):
    """A slate policy's validated feedback, on the scale its model learns.

    Weights become ``(n, slate_size)``. Position ``k`` of a position-weighted oracle
    shows ``w_k v``: the rewards become ``r / w_k``, and, where the policy's
    ``_slot_weighted`` says so, the weights ``w_k^2`` (least squares on
    ``(w_k x, r)`` equals least squares on ``(x, r / w_k)`` with weight ``w_k^2``).
    """
    actions, rewards, weight = check_slate_feedback(
        actions,
        rewards,
        n_samples=n,
        n_actions=n_actions,
        slate_size=policy.slate_size,
        sample_weight=sample_weight,
        action_mask=mask,
        estimator_name=type(policy).__name__,
    )
    if weight is not None:
        weight = np.repeat(weight[:, None], policy.slate_size, axis=1)
    slot = getattr(policy._oracle, "slot_weights", None)
    slot = None if slot is None else slot(policy.slate_size)
    if slot is not None:  # position k shows w_k v: the policy learns v from r / w_k
        rewards = rewards / slot
        if policy._slot_weighted:
            weight = (1.0 if weight is None else weight) * slot**2
            weight = np.broadcast_to(weight, rewards.shape)
    return actions, rewards, weight
