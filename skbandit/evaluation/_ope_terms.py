"""Validation and per-round terms shared by the off-policy value estimators.

Every estimator of :mod:`skbandit.evaluation._ope` is the sum of a *direct* part and a
*ratio* part, ``mean(d_i) + sum(c_i) / sum(m_i)`` (``m_i = 1`` for the unnormalised
ones). :class:`_Terms` holds those per-round terms, so that the point estimate, the
analytic standard error (the delta method) and the bootstrap of
:func:`~skbandit.evaluation.estimate_value` are written once for all estimators.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import warnings
from dataclasses import dataclass
from numbers import Real

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils import check_array

from skbandit._dask import any_dask
from skbandit.utils._param_validation import Interval
from skbandit.utils.validation import check_bandit_data

#: Names accepted by ``estimate_value(method=...)``.
METHODS = ("ips", "snips", "dm", "dr", "sndr", "switch-dr", "replay")
_NEEDS_MODEL = ("dm", "dr", "sndr", "switch-dr")
_CLIPPED = ("ips", "dr")
#: Tolerance on ``action_proba`` rows summing to one.
_PROBA_ATOL = 1e-6

_THRESHOLD = [Interval(Real, 0, None, closed="both"), None]


# --------------------------------------------------------------------- validation
#: How the OPE functions take their arguments, quoted by the errors.
_ORDER = (
    "the off-policy estimators take (action_proba, actions, rewards, "
    "propensities): the evaluated policy's action probabilities first, then the "
    "logged actions, rewards and propensities"
)


def _check_action_proba(action_proba: ArrayLike) -> NDArray:
    """Validate ``action_proba`` in two passes over it (it is the largest input).

    The row sums (one pass) must be within ``_PROBA_ATOL`` of 1, which also rejects
    every row holding NaN or an infinity; the minimum (a second pass) must be
    non-negative. sklearn's finiteness check would be a third pass, so it is off.
    """
    ndim = np.ndim(action_proba)
    if ndim != 2:
        hint = ""
        if ndim == 3:
            hint = "; for Open Bandit Pipeline's action_dist pass action_dist[:, :, 0]"
        elif ndim == 1:
            hint = f" ({_ORDER})"
        raise ValueError(
            "action_proba must be 2-D of shape (n_samples, n_actions), got shape "
            f"{np.shape(action_proba)}{hint}."
        )
    action_proba = check_array(
        action_proba,
        dtype=np.float64,
        input_name="action_proba",
        ensure_all_finite=False,
    )
    sums = np.einsum("ij->i", action_proba)
    # min and max rather than a mask: no temporaries; a NaN fails both comparisons.
    if sums.size and not (
        sums.min() >= 1.0 - _PROBA_ATOL and sums.max() <= 1.0 + _PROBA_ATOL
    ):
        row = int(np.flatnonzero(~(np.abs(sums - 1.0) <= _PROBA_ATOL))[0])
        if not np.isfinite(action_proba[row]).all():
            raise ValueError(
                f"action_proba must be finite; row {row} holds NaN or infinity."
            )
        raise ValueError(
            "Each row of action_proba must be a probability distribution summing "
            f"to 1; row {row} sums to {sums[row]!r}."
        )
    low = action_proba.min()
    if low < 0:
        raise ValueError(f"action_proba must be non-negative, got {float(low)!r}.")
    return action_proba


def _check_expected_rewards(expected_rewards: ArrayLike, shape: tuple) -> NDArray:
    if expected_rewards is None:
        raise ValueError(
            "expected_rewards is required: pass a reward model's predictions of "
            "shape (n_samples, n_actions)."
        )
    if np.ndim(expected_rewards) != 2:
        raise ValueError(
            "expected_rewards must be 2-D of shape (n_samples, n_actions), got shape "
            f"{np.shape(expected_rewards)}."
        )
    expected_rewards = check_array(
        expected_rewards, dtype=np.float64, input_name="expected_rewards"
    )
    if expected_rewards.shape != shape:
        raise ValueError(
            f"expected_rewards must have the shape of action_proba, {shape}; got "
            f"{expected_rewards.shape}."
        )
    return expected_rewards


def _check_logged(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike | None,
) -> tuple[NDArray, NDArray, NDArray, NDArray | None]:
    """Validate logged data against the evaluated policy's ``action_proba``."""
    if np.ndim(action_proba) == 1 and np.ndim(actions) == 2:
        raise ValueError(
            "action_proba is 1-D and actions is 2-D: the arguments look swapped; "
            f"{_ORDER}."
        )
    action_proba = _check_action_proba(action_proba)
    n, n_actions = action_proba.shape
    for name, arr in (
        ("actions", actions),
        ("rewards", rewards),
        ("propensities", propensities),
    ):
        if arr is None:
            continue
        shape = np.shape(arr)
        if len(shape) != 1 or shape[0] != n:
            raise ValueError(
                f"{name} must have shape ({n},), one entry per row of action_proba; "
                f"got shape {shape}."
            )
    actions, rewards, propensities, _ = check_bandit_data(
        actions,
        rewards,
        propensities=propensities,
        n_samples=n,
        n_actions=n_actions,
        estimator_name="the evaluated policy (action_proba)",
    )
    return action_proba, actions, rewards, propensities


# ------------------------------------------------------------------ per-round terms
@dataclass(frozen=True)
class _Terms:
    """An estimate as ``mean(direct) + sum(ratio_num) / sum(ratio_den)``.

    ``direct`` None means 0; ``ratio_den`` None means a plain mean of ``ratio_num``.
    """

    direct: NDArray | None
    ratio_num: NDArray | None
    ratio_den: NDArray | None
    n_samples: int
    n_matched: int | None = None  # rounds where pi(a_i | x_i) > 0; None for DM

    def value(self) -> float:
        out = 0.0 if self.direct is None else float(np.mean(self.direct))
        if self.ratio_num is None:
            return out
        if self.ratio_den is None:
            return out + float(np.mean(self.ratio_num))
        total = self.ratio_den.sum()
        return out + (float(self.ratio_num.sum() / total) if total > 0 else 0.0)

    def influence(self) -> NDArray:
        """Per-round influence terms (mean zero): the linearised estimator."""
        phi = np.zeros(self.n_samples)
        if self.direct is not None:
            phi += self.direct - self.direct.mean()
        if self.ratio_num is not None:
            if self.ratio_den is None:
                phi += self.ratio_num - self.ratio_num.mean()
            else:
                mean_den = self.ratio_den.mean()
                if mean_den > 0:
                    ratio = self.ratio_num.sum() / self.ratio_den.sum()
                    phi += (self.ratio_num - ratio * self.ratio_den) / mean_den
        return phi

    def sum_squared_influence(self) -> float:
        """``sum phi_i^2``, the analytic variance's numerator."""
        return float(np.sum(self.influence() ** 2))

    def bootstrap(self, counts: NDArray) -> NDArray:
        """The estimate on each resample, ``counts`` of shape (n_resamples, n)."""
        n = self.n_samples
        out = np.zeros(counts.shape[0])
        if self.direct is not None:
            out += counts @ self.direct / n
        if self.ratio_num is not None:
            num = counts @ self.ratio_num
            den = (
                np.full(counts.shape[0], n)
                if self.ratio_den is None
                else (counts @ self.ratio_den)
            )
            out += np.divide(num, den, out=np.zeros_like(num), where=den > 0)
        return out


def _terms(
    method: str,
    action_proba: ArrayLike,
    actions: ArrayLike | None,
    rewards: ArrayLike | None,
    propensities: ArrayLike | None,
    expected_rewards: ArrayLike | None = None,
    clip: float | None = None,
    tau: float | None = None,
) -> _Terms:
    """Validate the inputs of ``method`` and return its per-round terms.

    DM uses no logged data; ``actions=None`` skips their validation (``dm_value``),
    given actions are still checked against ``action_proba`` (``estimate_value``).
    Dask collections are reduced on their workers to the moments of the terms.
    """
    if any_dask(action_proba, actions, rewards, propensities, expected_rewards):
        from skbandit._dask._ope import dask_terms

        return dask_terms(
            method, action_proba, actions, rewards, propensities,
            expected_rewards, clip, tau, in_memory=_terms, methods=METHODS,
        )  # fmt: skip
    if method == "dm":
        if actions is None:
            action_proba = _check_action_proba(action_proba)
        else:
            logged = _check_logged(action_proba, actions, rewards, propensities)
            action_proba = logged[0]
        q = _check_expected_rewards(expected_rewards, action_proba.shape)
        direct = np.einsum("ij,ij->i", action_proba, q)
        return _Terms(direct, None, None, direct.shape[0])

    action_proba, actions, rewards, propensities = _check_logged(
        action_proba, actions, rewards, propensities
    )
    n = actions.shape[0]
    # pi(a_i | x_i), gathered once: the match weight of replay, the numerator of w_i.
    match = np.take_along_axis(action_proba, actions[:, None], axis=1)[:, 0]
    matched = int(np.count_nonzero(match))
    if method == "replay":
        return _Terms(None, match * rewards, match, n, matched)
    weights = match / propensities
    if clip is not None:
        weights = np.minimum(weights, clip)
    if method == "ips":
        return _Terms(None, weights * rewards, None, n, matched)
    if method == "snips":
        return _Terms(None, weights * rewards, weights, n, matched)

    q = _check_expected_rewards(expected_rewards, action_proba.shape)
    direct = np.einsum("ij,ij->i", action_proba, q)
    q_logged = np.take_along_axis(q, actions[:, None], axis=1)[:, 0]
    residual = weights * (rewards - q_logged)
    if method == "dr":
        return _Terms(direct, residual, None, n, matched)
    if method == "sndr":
        return _Terms(direct, residual, weights, n, matched)
    if method == "switch-dr":
        return _Terms(direct, np.where(weights <= tau, residual, 0.0), None, n, matched)
    raise ValueError(f"method must be one of {METHODS}, got {method!r}.")


def _warn_if_not_uniform(propensities: ArrayLike | None) -> None:
    if propensities is None:
        return
    if any_dask(propensities):
        from skbandit._dask._ope import propensity_range

        low, high = propensity_range(propensities)
    else:
        propensities = check_array(propensities, ensure_2d=False)
        low, high = propensities.min(), propensities.max()
    if high - low > 1e-12 * high:
        warnings.warn(
            "replay assumes uniformly random logging, but the propensities vary "
            f"(from {low:.3g} to {high:.3g}); its "
            "estimate is biased. Use snips or dr instead.",
            UserWarning,
            stacklevel=3,
        )
