"""The door check of policies whose model needs bounded rewards (clicks)."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["check_reward_range"]


def check_reward_range(
    rewards: NDArray,
    estimator_name: str,
    reason: str,
    low: float = 0.0,
    high: float = 1.0,
) -> None:
    """Raise ``ValueError`` naming ``rewards`` and the range if one lies outside it.

    Called before a policy learns anything from the batch, so that a reward its model
    cannot fit (a Bernoulli likelihood on a reward of 5) is refused at the door rather
    than diverging rounds later.

    Parameters
    ----------
    rewards : ndarray of shape (n_samples,)
        Validated rewards.
    estimator_name : str
        The policy's name, for the message.
    reason : str
        Why the policy needs the range, for the message.
    low, high : float, default=0.0, 1.0
        The closed range ``[low, high]``; ``high=np.inf`` bounds only from below.
    """
    # Two reductions and no temporaries on the common, valid path.
    if rewards.size == 0 or (rewards.min() >= low and rewards.max() <= high):
        return
    bad = np.flatnonzero(~((rewards >= low) & (rewards <= high)))[0]  # NaN too
    upper = "inf)" if np.isposinf(high) else f"{high:g}]"
    raise ValueError(
        f"{estimator_name} needs rewards in [{low:g}, {upper} ({reason}), got "
        f"rewards[{bad}] = {float(rewards[bad])!r}. Rescale the rewards into that "
        "range (e.g. (r - r_min) / (r_max - r_min)), or use a policy for real-valued "
        "rewards (LinUCB, NeuralTS)."
    )
