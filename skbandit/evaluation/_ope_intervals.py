"""Intervals that hold without a normal approximation, and a choice among estimators.

:func:`betting_interval` is the betting confidence sequence of Waudby-Smith, Wu,
Ramdas, Karampatziakis and Mineiro for the IPS value: valid at every sample size and
at every time at once (so logs may be monitored as they arrive and stopped at will),
for logging policies that learn as they log, as long as each logged propensity is
the one the logger used. :func:`slope_value` chooses among clipped estimators by
SLOPE's interval-intersection rule.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import norm

from skbandit._docstrings import Substitution
from skbandit.evaluation._ope_terms import _check_logged
from skbandit.evaluation._ope_weighted import LOGGED_PARAMS
from skbandit.evaluation._policy_value import PolicyValue, estimate_value
from skbandit.utils._param_validation import Interval, StrOptions, validate_params

__all__ = ["betting_interval", "slope_value"]

#: Candidate means of the betting test: a grid of the unit interval.
_GRID = 1000
#: Candidates tested at once.
_CHUNK = 100


def _lower_bounds(x, alpha, anytime, n_grid=_GRID):
    """Running lower confidence bounds of ``E[x]`` for ``x >= 0``, by betting.

    For each candidate mean ``m``, the capital ``prod_i (1 + lam_i (x_i - m))``
    with predictable bets ``0 <= lam_i <= 1/(2m)`` is a non-negative
    supermartingale when ``E[x_i | past] <= m``; Ville's inequality rejects ``m``
    once it reaches ``1 / alpha``. The bets are the predictable plug-in of
    Waudby-Smith & Ramdas (2023): ``sqrt(2 log(1/alpha) / (s_{i-1}^2 c_i))``, with
    ``c_i = i log(i + 1)`` (anytime) or ``c_i = n`` (fixed ``n``).
    """
    n = x.shape[0]
    grid = np.linspace(0.0, 1.0, n_grid + 1)[1:]
    t = np.arange(1, n + 1)
    running_mean = np.cumsum(x) / t
    # s_{i-1}^2: the variance of the earlier rounds around their mean, with a
    # prior of 1/4 as one pseudo-round (bounded predictable bets from round 1).
    prev_mean = np.r_[0.5, running_mean[:-1]]
    sq = np.r_[0.25, (x[:-1] - prev_mean[1:]) ** 2]
    variance = np.cumsum(sq) / t
    scale = t * np.log(t + 1.0) if anytime else np.full(n, float(n))
    bet = np.sqrt(2.0 * np.log(1.0 / alpha) / (variance * scale))
    threshold = np.log(1.0 / alpha)
    kept = np.empty((n, n_grid), dtype=bool)
    for start in range(0, n_grid, _CHUNK):  # (n, chunk) arrays bound the memory
        m = grid[start : start + _CHUNK]
        bets = np.minimum(bet[:, None], 0.5 / m[None, :])
        log_capital = np.cumsum(np.log1p(bets * (x[:, None] - m[None, :])), axis=0)
        kept[:, start : start + _CHUNK] = ~np.maximum.accumulate(
            log_capital >= threshold, axis=0
        )
    # The bound is the grid point just below the smallest candidate kept so far
    # (0 when the first one is kept, 1 when none is).
    first = np.where(kept.any(axis=1), kept.argmax(axis=1), n_grid)
    return np.where(first > 0, grid[np.maximum(first - 1, 0)], 0.0)


def unit_reward_logs(name, action_proba, actions, rewards, propensities):
    """Validated logs with rewards in [0, 1], and the importance weights."""
    proba, actions, rewards, propensities = _check_logged(
        action_proba, actions, rewards, propensities
    )
    if rewards.size and (rewards.min() < 0 or rewards.max() > 1):
        raise ValueError(
            f"{name} needs rewards in [0, 1]; rescale them first (got values from "
            f"{rewards.min()!r} to {rewards.max()!r})."
        )
    w = proba[np.arange(actions.shape[0]), actions] / propensities
    return proba, actions, rewards, propensities, w


@validate_params(
    {
        "action_proba": ["array-like"],
        "actions": ["array-like"],
        "rewards": ["array-like"],
        "propensities": ["array-like"],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "anytime": ["boolean"],
        "return_sequence": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def betting_interval(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
    *,
    alpha: float = 0.05,
    anytime: bool = True,
    return_sequence: bool = False,
):
    """Betting confidence interval (or sequence) of a policy's value, IPS-based.

    Rewards must lie in ``[0, 1]``. The lower bound bets against candidate values
    of ``w_i r_i`` (non-negative), the upper bound against those of
    ``w_i (1 - r_i)``, whose mean is ``1 - V`` (the weights average one when the
    logging policy covers the evaluated one); each side gets ``alpha / 2``. No
    normal approximation, no bound on the weights: the interval holds at every
    sample size, including for logs of a policy that learned as it logged (the
    rounds' terms are then a martingale, which is all Ville's inequality needs).

    With ``anytime=True`` (default) the rounds are taken in their logged order and
    the interval holds simultaneously at every prefix of the logs: a monitor may
    look after every round and stop when it likes. ``anytime=False`` tunes the bets
    to the whole sample: narrower, valid for this ``n`` only.

    Parameters
    ----------
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution.
    actions : array-like of shape (n_samples,)
        Logged actions, in the order they were logged.
    rewards : array-like of shape (n_samples,)
        Logged rewards, in ``[0, 1]``.
    propensities : array-like of shape (n_samples,)
        The probability the logger gave each logged action when it chose it.
    alpha : float, default=0.05
        One minus the confidence level.
    anytime : bool, default=True
        A confidence sequence (valid at every prefix), or an interval for ``n``.
    return_sequence : bool, default=False
        Also return the bounds after each round, shape (n_samples,) each (the
        running intersection).

    Returns
    -------
    result : PolicyValue
        The IPS estimate, its analytic standard error, and the betting bounds
        (``method="ips-betting"``).
    lows, highs : ndarray of shape (n_samples,)
        The bounds after each round; only with ``return_sequence=True``.

    References
    ----------
    .. [1] Waudby-Smith, Wu, Ramdas, Karampatziakis, Mineiro. "Anytime-valid
       off-policy inference for contextual bandits". ACM/IMS Journal of Data
       Science, 2024 (arXiv:2210.10768, 2022).
    .. [2] Waudby-Smith, Ramdas. "Estimating means of bounded random variables by
       betting". JRSS B, 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.evaluation import betting_interval
    >>> rng = np.random.default_rng(0)
    >>> actions = rng.integers(3, size=2000)
    >>> rewards = (rng.random(2000) < np.where(actions == 2, 0.7, 0.2)) * 1.0
    >>> target = np.tile([0.0, 0.0, 1.0], (2000, 1))
    >>> v = betting_interval(target, actions, rewards, np.full(2000, 1 / 3))
    >>> bool(v.ci_low < 0.7 < v.ci_high), v.method
    (True, 'ips-betting')
    """
    proba, actions, rewards, propensities, w = unit_reward_logs(
        "betting_interval", action_proba, actions, rewards, propensities
    )
    lows = _lower_bounds(w * rewards, alpha / 2, anytime)
    highs = 1.0 - _lower_bounds(w * (1.0 - rewards), alpha / 2, anytime)
    lows, highs = np.maximum.accumulate(lows), np.minimum.accumulate(highs)
    highs = np.maximum(highs, lows)  # an empty intersection: report the point
    ips = estimate_value(proba, actions, rewards, propensities, method="ips")
    result = PolicyValue(
        value=ips.value,
        std_error=ips.std_error,
        ci_low=float(lows[-1]),
        ci_high=float(highs[-1]),
        n_samples=ips.n_samples,
        method="ips-betting",
    )
    return (result, lows, highs) if return_sequence else result


@Substitution(logged=LOGGED_PARAMS)
@validate_params(
    {
        "action_proba": ["array-like"],
        "actions": ["array-like"],
        "rewards": ["array-like"],
        "propensities": ["array-like"],
        "expected_rewards": ["array-like", None],
        "method": [StrOptions({"ips", "dr"})],
        "clips": ["array-like", None],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "n_clips": [Interval(Integral, 1, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def slope_value(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
    *,
    expected_rewards: ArrayLike | None = None,
    method: str = "ips",
    clips: ArrayLike | None = None,
    alpha: float = 0.05,
    n_clips: int = 10,
) -> PolicyValue:
    """Clipped IPS or DR with the clipping threshold chosen by SLOPE.

    The candidates, from the unclipped (unbiased, widest) to the most clipped
    (most biased, narrowest), are walked in that order; each one's analytic
    interval at level ``alpha`` is intersected with those of the candidates
    before it, and the last candidate whose interval still meets all of theirs is
    chosen: the bias it adds is then below the noise of the less biased ones
    (Lepski's principle).

    The returned interval is the chosen candidate's own analytic one; it does
    not account for the selection, and clipped estimators are biased: read it as
    a guide, not a guarantee.

    Parameters
    ----------
    %(logged)s
    expected_rewards : array-like of shape (n_samples, n_actions), default=None
        A reward model's predictions; required by ``method="dr"``.
    method : {"ips", "dr"}, default="ips"
        The estimator whose weights are clipped.
    clips : array-like of float, default=None
        The candidate thresholds; None takes ``n_clips`` thresholds halving from
        the largest importance weight.
    alpha : float, default=0.05
        One minus the level of the candidates' intervals.
    n_clips : int, default=10
        Number of default thresholds.

    Returns
    -------
    result : PolicyValue
        The chosen candidate's estimate and interval; ``method`` names it, e.g.
        ``"slope:ips(clip=12.5)"``.

    References
    ----------
    .. [1] Su, Srinath, Krishnamurthy. "Adaptive estimator selection for
       off-policy evaluation". ICML 2020.
    .. [2] Tucker, Lee. "Improved estimator selection for off-policy evaluation".
       2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.evaluation import slope_value
    >>> rng = np.random.default_rng(0)
    >>> actions = rng.integers(3, size=500)
    >>> rewards = (actions == 2).astype(float)
    >>> target = np.tile([0.1, 0.1, 0.8], (500, 1))
    >>> slope_value(target, actions, rewards, np.full(500, 1 / 3)).method
    'slope:ips(clip=None)'
    """
    proba, actions, rewards, propensities = _check_logged(
        action_proba, actions, rewards, propensities
    )
    if clips is None:
        w_max = float(
            np.max(proba[np.arange(actions.shape[0]), actions] / propensities)
        )
        clips = w_max / 2.0 ** np.arange(1, n_clips + 1)
    candidates = [None, *sorted(np.asarray(clips, dtype=float), reverse=True)]
    z = norm.ppf(1 - alpha / 2)
    low, high, chosen = -np.inf, np.inf, None
    for clip in candidates:
        v = estimate_value(proba, actions, rewards, propensities, method=method,
                           expected_rewards=expected_rewards, clip=clip)  # fmt: skip
        lo, hi = v.value - z * v.std_error, v.value + z * v.std_error
        if lo > high or hi < low:
            break
        low, high, chosen = max(low, lo), min(high, hi), (clip, v)
    clip, v = chosen
    name = "None" if clip is None else f"{clip:.4g}"
    return PolicyValue(v.value, v.std_error, v.ci_low, v.ci_high, v.n_samples,
                       f"slope:{method}(clip={name})")  # fmt: skip
