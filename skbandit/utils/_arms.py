"""How many arms a policy has: inferred at the first call, grown by ``set_params``.

A fitted policy adds arms when its ``n_actions`` parameter grows
(``policy.set_params(n_actions=K + 1)``): the next verb gives each new arm the prior
state through the policy's ``_add_arms`` hook, and leaves the old arms' state as it
was. Arms never leave the state; they leave the play through ``action_mask``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from skbandit.utils.validation import check_bandit_data

__all__ = ["grow_arms", "resolve_n_actions", "with_prior_rows"]


def resolve_n_actions(policy, X, actions, infer: bool) -> int:
    """The number of arms of a first call: per-arm contexts' axis 1, ``n_actions``,
    or (``infer``) the largest logged action plus one."""
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
        actions = check_bandit_data(
            actions, np.zeros(X.shape[0]), n_samples=X.shape[0], n_actions=None
        )[0]
        if actions.size:
            return int(actions.max()) + 1
    raise ValueError(
        "n_actions must be set when the first call is partial_fit or select "
        "with shared contexts of shape (n_samples, n_features); pass "
        f"{name}(n_actions=...) or per-arm contexts of shape "
        "(n_samples, n_actions, n_features)."
    )


def grow_arms(policy) -> None:
    """Give a fitted policy the arms its ``n_actions`` parameter added since.

    New state is built first and bound last (``_add_arms`` rebinds, never writes in
    place), so a failure leaves the policy as it was.
    """
    new, old = policy.n_actions, policy.n_actions_
    if new is None or new == old:
        return
    name = type(policy).__name__
    if not isinstance(new, (int, np.integer)) or new < old:
        raise ValueError(
            f"{name} was fitted with {old} arms and n_actions={new!r} now; a fitted "
            "policy's arms can only grow (set_params(n_actions=K + 1)). Arms leave "
            "through action_mask, or refit with fit()."
        )
    policy._add_arms(new - old)
    policy.action_counts_ = np.concatenate(
        [policy.action_counts_, np.zeros(new - old, dtype=np.int64)]
    )
    policy.n_actions_ = new


def with_prior_rows(array: NDArray, n_new: int, prior) -> NDArray:
    """``array`` with ``n_new`` copies of ``prior`` appended on axis 0 (a new array)."""
    prior = np.broadcast_to(np.asarray(prior, dtype=array.dtype), array.shape[1:])
    return np.concatenate([array, np.repeat(prior[None], n_new, axis=0)])
