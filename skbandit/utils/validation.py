"""Validation of the bandit-specific arrays: actions, rewards, propensities, masks.

Every verb of every policy goes through these helpers, so each error is raised in one
place with one wording: the argument, what was expected, and what came. A policy's
verb validates its whole call with one visit, :func:`check_policy_call`.

The parameter constraints a policy's ``_parameter_constraints`` is written with,
:class:`Interval`, :class:`StrOptions` and :class:`HasMethods`, are public here
(scikit-learn keeps its own in a private module), beside scikit-learn's string
constraints (``"boolean"``, ``"random_state"``, ...), types and ``None``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Real

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse
from sklearn.utils import check_array, check_consistent_length
from sklearn.utils.validation import _check_sample_weight, validate_data

from skbandit.utils._array_checks import (
    _check_actions,
    _check_rewards_given,
    _missing_rewards_error,  # noqa: F401 (read from here by the learners)
    _vector,
    check_action_mask,
)
from skbandit.utils._fast_path import contexts_fast_ok
from skbandit.utils._fast_path import feedback_fast_ok as _feedback_fast_ok
from skbandit.utils._param_validation import HasMethods, Interval, StrOptions
from skbandit.utils._slates import check_policy_slate_feedback, check_slates
from skbandit.utils._tags import is_slate_policy

__all__ = [
    "HasMethods",
    "Interval",
    "StrOptions",
    "check_action_mask",
    "check_bandit_data",
    "check_policy_call",
]


def check_bandit_data(
    actions: ArrayLike,
    rewards: ArrayLike,
    *,
    n_samples: int,
    n_actions: int | None,
    propensities: ArrayLike | None = None,
    sample_weight: ArrayLike | None = None,
    action_mask: ArrayLike | None = None,
    estimator_name: str = "the policy",
) -> tuple[NDArray, NDArray, NDArray | None, NDArray | None]:
    """Validate logged feedback against contexts of ``n_samples`` rows.

    Parameters
    ----------
    actions : array-like of shape (n_samples,)
        Pulled arms, integers in ``[0, n_actions)``.
    rewards : array-like of shape (n_samples,)
        Observed rewards; NaN and inf are rejected.
    n_samples : int
        Number of context rows the feedback must match.
    n_actions : int or None
        Number of arms, or None when it is still to be inferred.
    propensities : array-like of shape (n_samples,), default=None
        Logging probabilities of the pulled arms, in ``(0, 1]``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights of the rows.
    action_mask : array-like of shape (n_samples, n_actions), default=None
        Arms that were available; a pulled arm must be available.
    estimator_name : str, default="the policy"
        Name used in messages.

    Returns
    -------
    actions : ndarray of shape (n_samples,), int64
        Validated actions.
    rewards : ndarray of shape (n_samples,), float64
        Validated rewards.
    propensities : ndarray of shape (n_samples,) or None
        Validated propensities.
    sample_weight : ndarray of shape (n_samples,) or None
        Validated weights.

    See Also
    --------
    check_action_mask : Validate an availability mask.

    Examples
    --------
    >>> from skbandit.utils.validation import check_bandit_data
    >>> actions, rewards, _, _ = check_bandit_data([0, 2], [1.0, 0.0], n_samples=2,
    ...                                            n_actions=3)
    >>> actions, rewards
    (array([0, 2]), array([1., 0.]))
    >>> check_bandit_data([0, 3], [1.0, 0.0], n_samples=2, n_actions=3)
    Traceback (most recent call last):
    ...
    ValueError: ...
    """
    if (
        propensities is None
        and sample_weight is None
        and action_mask is None
        and _feedback_fast_ok(actions, rewards, n_samples, n_actions)
    ):
        return actions.astype(np.int64, copy=False), rewards, None, None
    _check_rewards_given(rewards, estimator_name)
    actions = _check_actions(actions, n_actions, estimator_name)
    rewards = _vector(rewards, "rewards")
    arrays = [actions, rewards]
    if propensities is not None:
        propensities = _vector(propensities, "propensities")
        # Two reductions, no temporary arrays; the mask only to name a bad value.
        if propensities.size and not (
            propensities.min() > 0 and propensities.max() <= 1
        ):
            bad = (propensities <= 0) | (propensities > 1)
            raise ValueError(
                f"propensities must be in (0, 1], got {propensities[bad][0]!r}."
            )
        arrays.append(propensities)
    named = [("actions", actions), ("rewards", rewards)]
    if propensities is not None:
        named.append(("propensities", propensities))
    for name, arr in named:
        if arr.shape[0] != n_samples:
            raise ValueError(
                f"X has {n_samples} rows but {name} has {arr.shape[0]}; "
                "they must have the same length."
            )
    check_consistent_length(*arrays)
    if sample_weight is not None:
        sample_weight = _check_weight(sample_weight, rewards)
    if action_mask is not None:
        action_mask = check_action_mask(action_mask, n_samples, n_actions)
        allowed = action_mask[np.arange(n_samples), actions]
        if not np.all(allowed):
            row = int(np.flatnonzero(~allowed)[0])
            raise ValueError(
                f"actions[{row}]={actions[row]} is masked out by action_mask; "
                "feedback must be for available arms."
            )
    return actions, rewards, propensities, sample_weight


def _check_weight(sample_weight, rewards):
    if not isinstance(sample_weight, Real) and np.asarray(sample_weight).ndim == 0:
        # sklearn broadcasts a number but raises TypeError on a 0-d array (and
        # np.ndim, unlike np.asarray, trips array-likes that refuse
        # __array_function__)
        raise ValueError(
            "sample_weight must be a number or 1-D of shape (n_samples,), got "
            f"{sample_weight!r}."
        )
    return _check_sample_weight(
        sample_weight, rewards, dtype=np.float64, ensure_non_negative=True
    )


# ------------------------------------------------------------- one policy call
def check_policy_call(
    policy, X, *, reset, action_mask=None, feedback=None, infer=False
) -> tuple:
    """Validate everything one verb of ``policy`` receives, in one place.

    Parameters
    ----------
    policy : BasePolicy
        The policy whose verb is called; its fitted shapes are read, never written,
        except ``n_features_in_`` (and ``feature_names_in_``) when ``reset``.
    X : array-like of shape (n_samples, n_features) or \
            (n_samples, n_actions, n_features)
        Contexts.
    reset : bool
        Whether the call fixes the context form (a policy's first call, or ``fit``).
    action_mask : array-like of shape (n_samples, n_actions), default=None
        Arms available in each round.
    feedback : tuple (actions, rewards, sample_weight), default=None
        The feedback of ``fit`` or ``partial_fit``.
    infer : bool, default=False
        Whether ``n_actions=None`` may be inferred from the logged actions (``fit``).

    Returns
    -------
    X : ndarray
        Validated contexts.
    n_actions : int
        The number of arms (resolved when ``reset``).
    mask : ndarray of shape (n_samples, n_actions) or None
        Validated mask (checked against the feedback when there is feedback).
    feedback : tuple (actions, rewards, sample_weight) or None
        Validated feedback; a slate policy's rewards are divided by its oracle's
        position weights and its weights multiplied by their squares.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import LinUCB
    >>> from skbandit.utils.validation import check_policy_call
    >>> feedback = (np.array([0, 2]), np.array([1.0, 0.0]), None)
    >>> X, n_actions, mask, (actions, rewards, weights) = check_policy_call(
    ...     LinUCB(n_actions=3), [[0.5, 1.0], [1.0, 0.0]], reset=True, feedback=feedback
    ... )
    >>> X.dtype, n_actions, mask, actions.tolist(), weights
    (dtype('float64'), 3, None, [0, 2], None)
    """
    slate = is_slate_policy(policy)
    X = _check_policy_contexts(policy, X, reset=reset)
    n, actions = X.shape[0], None if feedback is None else feedback[0]
    n_actions = (
        resolve_n_actions(policy, X, actions, infer, slate=slate)
        if reset
        else policy.n_actions_
    )
    if slate and reset and policy.slate_size > n_actions:  # before the feedback's
        raise ValueError(  # checks, which would read slates of the wrong size
            f"slate_size={policy.slate_size} exceeds the number of arms, "
            f"n_actions={n_actions}: a slate holds distinct arms. Set slate_size "
            f"to at most {n_actions} (every slate policy defaults to 4)."
        )
    mask = None
    if feedback is not None:
        actions, rewards, weight = feedback
        if slate:
            feedback = check_policy_slate_feedback(
                policy, actions, rewards, weight, action_mask, n, n_actions
            )
        else:
            actions, rewards, _, weight = check_bandit_data(
                actions, rewards, sample_weight=weight, action_mask=action_mask,
                n_samples=n, n_actions=n_actions, estimator_name=type(policy).__name__,
            )  # fmt: skip
            feedback = actions, rewards, weight
    if feedback is None and action_mask is not None:
        mask = check_action_mask(action_mask, n, n_actions)
        if slate:
            _check_slate_mask(mask, policy.slate_size)
    return X, n_actions, mask, feedback


def _check_slate_mask(mask, slate_size):
    short = mask.sum(axis=1) < slate_size
    if np.any(short):
        row = int(np.flatnonzero(short)[0])
        raise ValueError(
            f"action_mask row {row} allows {int(mask[row].sum())} arms, "
            f"fewer than slate_size={slate_size}."
        )


def resolve_n_actions(policy, X, actions, infer: bool, *, slate=False) -> int:
    """The number of arms of a first call: per-arm contexts' axis 1, ``n_actions``,
    or (``infer``) the largest logged action (or slate arm) plus one."""
    name = type(policy).__name__
    if X.ndim == 3:
        if policy.n_actions is not None and X.shape[1] != policy.n_actions:
            raise ValueError(
                f"X has {X.shape[1]} arms on axis 1, but {name} was built with "
                f"n_actions={policy.n_actions}."
            )
        return X.shape[1]
    if policy.n_actions is not None:
        return policy.n_actions
    if infer and actions is not None:
        if slate:
            arms = check_slates(
                actions, n_samples=X.shape[0], n_actions=None, slate_size=None
            )
        else:
            arms = check_bandit_data(
                actions, np.zeros(X.shape[0]), n_samples=X.shape[0], n_actions=None
            )[0]
        if arms.size:
            return int(arms.max()) + 1
    raise ValueError(
        "n_actions must be set when the first call is partial_fit or select "
        "with shared contexts of shape (n_samples, n_features); pass "
        f"{name}(n_actions=...) or per-arm contexts of shape "
        "(n_samples, n_actions, n_features)."
    )


def _check_policy_contexts(policy, X, *, reset):
    """Contexts the sklearn way; 3-D per-arm contexts are handled here."""
    if not reset and contexts_fast_ok(policy, X):
        return X
    if sparse.issparse(X):  # the policy's hook: accepted by some families only
        return policy._check_sparse_contexts(X, reset=reset)
    # np.asarray, not np.ndim: array-likes may refuse __array_function__.
    ndim = X.ndim if hasattr(X, "ndim") else np.asarray(X).ndim
    name = type(policy).__name__
    if not reset and hasattr(policy, "n_actions_"):
        form = 3 if policy._per_arm_contexts else 2
        # other ranks get scikit-learn's own message from validate_data below
        if ndim in (2, 3) and ndim != form:
            expected = (
                "per-arm contexts of shape (n_samples, n_actions, n_features)"
                if form == 3
                else "shared contexts of shape (n_samples, n_features)"
            )
            raise ValueError(
                f"{name} was fitted on {expected}; got X with {ndim} dimensions."
            )
    dtype = policy._context_dtype
    if ndim != 3:
        return validate_data(policy, X, reset=reset, dtype=dtype)
    X = check_array(X, allow_nd=True, dtype=dtype, input_name="X", estimator=policy)
    if reset:
        policy.n_features_in_ = X.shape[2]
        if hasattr(policy, "feature_names_in_"):
            del policy.feature_names_in_
        return X
    if X.shape[2] != policy.n_features_in_:
        raise ValueError(
            f"X has {X.shape[2]} features, but {name} is expecting "
            f"{policy.n_features_in_} features as input."
        )
    if X.shape[1] != policy.n_actions_:
        raise ValueError(
            f"X has {X.shape[1]} arms on axis 1, but {name} has "
            f"n_actions_={policy.n_actions_}; set_params(n_actions=...) adds "
            "arms to a fitted policy."
        )
    return X
