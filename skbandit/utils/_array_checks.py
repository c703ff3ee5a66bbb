"""Array checks of actions, rewards and masks, below both ``validation`` and
``_slates`` (the slates' feedback reads them as the single-arm feedback does).

``check_action_mask`` is public through :mod:`skbandit.utils.validation`.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils import check_array

__all__ = ["check_action_mask"]


def _vector(values: ArrayLike, name: str, dtype=np.float64) -> NDArray:
    """``values`` as a 1-D array of any length, or a ValueError that names them."""
    values = check_array(
        values, ensure_2d=False, dtype=dtype, input_name=name, ensure_min_samples=0
    )
    if values.ndim != 1:
        raise ValueError(
            f"{name} must be 1-D of shape (n_samples,), got shape {values.shape}."
        )
    return values


def _check_action_range(actions: NDArray, n_actions: int | None, name: str) -> None:
    """Raise unless every arm in the integer ``actions`` is in ``[0, n_actions)``."""
    if actions.size and actions.min() < 0:
        raise ValueError(
            f"actions must be in [0, n_actions), got {actions.min()} (negative)."
        )
    if n_actions is not None and actions.size and actions.max() >= n_actions:
        raise ValueError(
            f"actions contains {actions.max()}, but {name} has n_actions_={n_actions}; "
            f"actions must be in [0, {n_actions})."
        )


def _check_actions(
    actions: ArrayLike, n_actions: int | None, name: str
) -> NDArray[np.int64]:
    actions = _numeric_actions(_vector(actions, "actions", dtype=None))
    integral = actions.dtype.kind in "iu"  # no fractional part to look for
    if actions.size and not integral and not np.all(np.mod(actions, 1) == 0):
        raise ValueError(
            f"actions must be integers in [0, n_actions), got non-integer values "
            f"such as {actions[np.mod(actions, 1) != 0][0]!r}."
        )
    actions = actions.astype(np.int64, copy=False)
    _check_action_range(actions, n_actions, name)
    return actions


def _missing_rewards_error(name: str) -> ValueError:
    """The error of ``fit(X, actions)``, as scikit-learn's Pipeline calls it."""
    return ValueError(
        f"{name}.fit needs rewards: fit(X, actions, rewards). scikit-learn's "
        "Pipeline passes only (X, y) to its last step and has no select or "
        "partial_fit: use skbandit.pipeline.make_bandit_pipeline (BanditPipeline). "
        "To run scikit-learn's check_estimator, check "
        "skbandit.utils.estimator_checks.supervised_view(<Policy>)() instead."
    )


def _check_rewards_given(rewards, name: str) -> None:
    """Say that ``rewards=None`` is missing rewards (check_array reads it as NaN)."""
    if rewards is None:
        raise ValueError(
            f"{name} got rewards=None: the rewards are missing. Pass the observed "
            "reward of each pulled arm, e.g. partial_fit(X, actions, rewards)."
        )


def _numeric_actions(actions):
    """Actions as numbers; labels (strings) get an error that says what to do."""
    if actions.dtype.kind in "biuf":
        return actions
    try:
        if actions.dtype.kind != "O":  # strings, bytes, dates: labels, not indices
            raise TypeError
        return actions.astype(np.float64)
    except (TypeError, ValueError):
        example = actions[:1].tolist()[0] if actions.size else None
        raise ValueError(
            f"actions must be integer arm indices in [0, n_actions), got dtype "
            f"{actions.dtype} (values such as {example!r}). Encode the labels as "
            "integers first: actions = LabelEncoder().fit_transform(labels), with "
            "sklearn.preprocessing.LabelEncoder."
        ) from None


def check_action_mask(
    action_mask: ArrayLike, n_samples: int, n_actions: int | None
) -> NDArray[np.bool_]:
    """Validate a boolean availability mask of shape ``(n_samples, n_actions)``.

    Parameters
    ----------
    action_mask : array-like of shape (n_samples, n_actions)
        True where an arm is available. Each row needs at least one True.
    n_samples : int
        Expected number of rows.
    n_actions : int or None
        Expected number of columns (not checked when None).

    Returns
    -------
    action_mask : ndarray of shape (n_samples, n_actions), bool
        The validated mask.

    See Also
    --------
    check_bandit_data : Validate the logged feedback.

    Examples
    --------
    >>> from skbandit.utils.validation import check_action_mask
    >>> check_action_mask([[1, 0], [1, 1]], n_samples=2, n_actions=2)
    array([[ True, False],
           [ True,  True]])
    """
    mask = np.asarray(action_mask)
    if mask.dtype != np.bool_:
        if not np.isin(mask, (0, 1)).all():
            raise ValueError(
                f"action_mask must be boolean, got dtype {mask.dtype} with values "
                "other than 0 and 1."
            )
        mask = mask.astype(bool)
    expected = (n_samples, n_actions if n_actions is not None else mask.shape[-1])
    if mask.shape != expected:
        raise ValueError(
            f"action_mask must have shape (n_samples, n_actions)={expected}, "
            f"got {mask.shape}."
        )
    empty = ~mask.any(axis=1)
    if np.any(empty):
        raise ValueError(
            f"action_mask row {int(np.flatnonzero(empty)[0])} allows no action; "
            "every round needs at least one available arm."
        )
    return mask
