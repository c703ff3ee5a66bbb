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

__all__ = ["grow_arms", "with_prior_rows"]


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
