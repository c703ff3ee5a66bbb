"""What one decision is, and the checks of what a caller hands the log.

:class:`Event` is what :meth:`~skbandit.serving.DecisionLog.decide` returns; the
errors name an event id the log has never seen or already holds; the helpers shape
one round for ``select`` and check a caller's arm, propensity and reward before
anything is written.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = [
    "DuplicateEventError",
    "Event",
    "UnknownEventError",
    "check_caller_choice",
    "check_reward",
    "final_step",
    "first",
    "one_round",
    "seconds",
]


class UnknownEventError(LookupError):
    """A reward or an activation names an event id that the log has never seen.

    See Also
    --------
    DuplicateEventError : A decision reuses an event id.

    Examples
    --------
    >>> from skbandit.serving import UnknownEventError
    >>> issubclass(UnknownEventError, LookupError)
    True
    """


class DuplicateEventError(ValueError):
    """A decision names an event id that the log already holds.

    See Also
    --------
    UnknownEventError : A reward names an event id the log has never seen.

    Examples
    --------
    >>> from skbandit.serving import DuplicateEventError
    >>> issubclass(DuplicateEventError, ValueError)
    True
    """


@dataclass(frozen=True)
class Event:
    """One logged decision, as :meth:`DecisionLog.decide` returns it.

    Parameters
    ----------
    event_id : str
        The id that rewards name.
    time : float
        When the decision was made, in seconds since the epoch (the log's clock).
    policy_version : str
        Content hash of the deciding policy's pickle.
    action : int or ndarray of shape (slate_size,)
        The chosen arm, or the slate.
    propensity : float or ndarray of shape (slate_size,)
        Its probability under the logging policy (a slate: each arm's inclusion
        probability). In apprentice mode, the caller's.
    policy_action : int, ndarray or None, default=None
        Apprentice mode: the policy's own choice, logged beside the caller's.
    policy_propensity : float, ndarray or None, default=None
        Apprentice mode: the policy's propensity of its own choice.

    Examples
    --------
    >>> from skbandit.serving import Event
    >>> Event("e1", 0.0, "abc", 2, 0.5).action
    2
    """

    event_id: str
    time: float
    policy_version: str
    action: Any
    propensity: Any
    policy_action: Any = None
    policy_propensity: Any = None


def seconds(wait) -> float:
    value = wait.total_seconds() if isinstance(wait, timedelta) else float(wait)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"wait must be a non-negative duration; got {wait!r}.")
    return value


def final_step(policy):
    """The policy at the end of a pipeline, or the policy itself."""
    steps = getattr(policy, "steps", None)
    return steps[-1][1] if steps else policy


def one_round(x, mask):
    """``x`` and ``mask`` of one round as the ``(1, ...)`` arrays ``select`` takes."""
    if type(x) is not np.ndarray and sp.issparse(x):
        X = sp.csr_matrix(x)
        if X.shape[0] != 1:
            raise ValueError(f"x must be one round; got a sparse matrix {X.shape}.")
    else:
        x = np.asarray(x)
        if x.ndim not in (1, 2):
            raise ValueError(
                "x must be one round: shape (n_features,), or (n_actions, "
                f"n_features) for per-arm contexts; got shape {x.shape}."
            )
        X = x[None]
    if mask is None:
        return X, None
    mask = np.asarray(mask)
    if mask.ndim != 1 or mask.dtype != bool:
        raise ValueError(
            "mask must be a boolean array of shape (n_actions,); got "
            f"{mask.dtype} of shape {mask.shape}."
        )
    return X, mask[None]


def first(values):
    """A single arm's entry as a Python scalar, a slate's as a vector."""
    if type(values) in (np.int64, np.float64):  # what select returns: fast
        return values.item()
    values = np.asarray(values)
    return values.item() if values.ndim == 0 else values


def check_caller_choice(policy, action, propensity, mask):
    """The caller's arm (slate) and propensity as arrays, checked before ``select``."""
    final = final_step(policy)
    n_actions = getattr(final, "n_actions_", None) or getattr(final, "n_actions", None)
    slate_size = getattr(final, "slate_size", None)
    chosen = np.asarray(action)
    expected = () if slate_size is None else (slate_size,)
    if chosen.shape != expected or not np.issubdtype(chosen.dtype, np.integer):
        raise ValueError(
            f"action must be {f'{slate_size} ints' if expected else 'an int'} "
            f"(the shape {expected} of the policy's choice); got {action!r:.80}."
        )
    if np.any(chosen < 0) or (n_actions is not None and np.any(chosen >= n_actions)):
        raise ValueError(f"action must be in [0, {n_actions}); got {action!r:.80}.")
    if len(np.unique(chosen)) != chosen.size:
        raise ValueError(f"action must not repeat an arm; got {action!r:.80}.")
    if mask is not None and not np.all(np.asarray(mask)[chosen]):
        raise ValueError(f"action {action!r:.80} is masked out by mask.")
    props = (
        np.ones(chosen.shape)
        if propensity is None
        else np.asarray(propensity, dtype=np.float64)
    )
    if props.shape != chosen.shape or not np.all((props > 0) & (props <= 1)):
        raise ValueError(
            "propensity must be in (0, 1] with the shape of action; got "
            f"{propensity!r:.80}."
        )
    return chosen.astype(np.int64), props


def check_reward(value, is_slate: bool, slate_size: int):
    """``(total, slate vector bytes or None)`` of a reward, or a clear ValueError."""
    if not is_slate:
        try:
            total = float(value)
        except (TypeError, ValueError):
            raise ValueError(
                f"value must be a number for a single-arm event; got {value!r:.80}."
            ) from None
        if not math.isfinite(total):
            raise ValueError(f"value must be finite; got {total}.")
        return total, None
    vector = np.asarray(value, dtype=np.float64)
    if vector.shape != (slate_size,):
        raise ValueError(
            f"value of a slate event must have shape ({slate_size},), one reward per "
            f"slate position (nan: unobserved); got shape {vector.shape}."
        )
    if np.any(np.isinf(vector)) or np.all(np.isnan(vector)):
        raise ValueError("value must hold finite rewards (nan only where unobserved).")
    return float(np.nansum(vector)), vector.tobytes()
