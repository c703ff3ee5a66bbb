"""Off-policy estimates with confidence intervals: :func:`estimate_value`.

The point estimate is that of the matching ``*_value`` function of
:mod:`skbandit.evaluation._ope`; the interval comes from the same per-round terms
(:class:`~skbandit.evaluation._ope_terms._Terms`), analytically (the delta method)
or by a bootstrap that recomputes the whole estimator on each resample.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import warnings
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import norm
from sklearn.utils import check_random_state

from skbandit._dask import NO_BOOTSTRAP_ON_DASK, any_dask
from skbandit.evaluation._ope_terms import (
    _CLIPPED,
    _NEEDS_MODEL,
    _THRESHOLD,
    METHODS,
    _terms,
    _warn_if_not_uniform,
)
from skbandit.utils._param_validation import Interval, StrOptions, validate_params

__all__ = ["PolicyValue", "estimate_value"]


@dataclass(frozen=True)
class PolicyValue:
    """An off-policy estimate of a policy's value with its confidence interval.

    Parameters
    ----------
    value : float
        Estimated expected reward per round.
    std_error : float
        Standard error of ``value``.
    ci_low : float
        Lower end of the confidence interval.
    ci_high : float
        Upper end of the confidence interval.
    n_samples : int
        Number of logged rounds.
    method : str
        The estimator, one of ``"ips"``, ``"snips"``, ``"dm"``, ``"dr"``,
        ``"sndr"``, ``"switch-dr"``, ``"replay"``.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.evaluation import estimate_value
    >>> proba = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> v = estimate_value(proba, [0, 1], [1.0, 0.0], [0.5, 0.5], method="ips")
    >>> v.value
    1.0
    """

    value: float
    std_error: float
    ci_low: float
    ci_high: float
    n_samples: int
    method: str

    def __float__(self) -> float:
        return self.value


#: Bootstrap count matrix entries drawn per chunk (bounds memory).
_BOOTSTRAP_CHUNK = 2_000_000


def _check_method_options(method, expected_rewards, clip, tau):
    """Raise unless the method's own options are given, and only those."""
    if method in _NEEDS_MODEL and expected_rewards is None:
        raise ValueError(
            f"method={method!r} needs expected_rewards, a reward model's "
            "predictions of shape (n_samples, n_actions)."
        )
    if clip is not None and method not in _CLIPPED:
        raise ValueError(
            f"clip is only used by the methods {_CLIPPED}; got method={method!r}."
        )
    if method == "switch-dr" and tau is None:
        raise ValueError('method="switch-dr" needs tau, the switching threshold.')
    if tau is not None and method != "switch-dr":
        raise ValueError(f'tau is only used by method="switch-dr"; got {method!r}.')


@validate_params(
    {
        "action_proba": ["array-like"],
        "actions": ["array-like"],
        "rewards": ["array-like"],
        "propensities": ["array-like"],
        "method": [StrOptions(set(METHODS))],
        "expected_rewards": ["array-like", None],
        "clip": _THRESHOLD,
        "tau": _THRESHOLD,
        "ci": [StrOptions({"analytic", "bootstrap"})],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "n_bootstrap": [Interval(Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def estimate_value(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
    *,
    method: str = "snips",
    expected_rewards: ArrayLike | None = None,
    clip: float | None = None,
    tau: float | None = None,
    ci: str = "analytic",
    alpha: float = 0.05,
    n_bootstrap: int = 2000,
    random_state=None,
) -> PolicyValue:
    """Estimate a policy's value off-policy, with a confidence interval.

    The point estimate is exactly that of the matching ``*_value`` function
    (:func:`ips_value`, :func:`snips_value`, :func:`dm_value`, :func:`dr_value`,
    :func:`sndr_value`, :func:`switch_dr_value`, :func:`replay_value`).

    ``ci="analytic"`` is the normal interval ``value +- z_{1-alpha/2} std_error``.
    The standard error comes from the per-round terms: their sample standard
    deviation over ``sqrt(n)`` for the plain means (IPS, DM, DR, Switch-DR), and the
    delta method for the self-normalised ratios (SNIPS, SNDR, replay), whose
    linearised terms are ``w_i (r_i - V) / mean(w)``. DM's interval reflects only
    the sampling of contexts, not the reward model's error.

    ``ci="bootstrap"`` resamples the rounds ``n_bootstrap`` times, recomputes the
    estimator on each resample (self-normalisation included, unlike Open Bandit
    Pipeline, which resamples its already-normalised per-round terms), and reports
    the percentile interval and the resamples' standard deviation.

    Parameters
    ----------
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution, ``predict_action_proba(X)``.
    actions : array-like of shape (n_samples,)
        Logged actions.
    rewards : array-like of shape (n_samples,)
        Logged rewards.
    propensities : array-like of shape (n_samples,)
        Logging policy's probability of each logged action, in ``(0, 1]``.
    method : {"ips", "snips", "dm", "dr", "sndr", "switch-dr", "replay"}, \
            default="snips"
        The estimator.
    expected_rewards : array-like of shape (n_samples, n_actions), default=None
        A reward model's predictions; required by ``"dm"``, ``"dr"``, ``"sndr"``
        and ``"switch-dr"``, ignored by the others.
    clip : float or None, default=None
        Importance-weight clipping of ``"ips"`` and ``"dr"``; an error with the
        other methods.
    tau : float or None, default=None
        Switching threshold of ``"switch-dr"``, required by it; an error with the
        other methods.
    ci : {"analytic", "bootstrap"}, default="analytic"
        How the confidence interval is computed.
    alpha : float, default=0.05
        One minus the confidence level of the interval.
    n_bootstrap : int, default=2000
        Number of bootstrap resamples (``ci="bootstrap"`` only).
    random_state : int, RandomState instance or None, default=None
        Controls the bootstrap resampling. Pass an int for reproducible output
        across multiple function calls.
        See :term:`sklearn:Glossary <random_state>`.

    Returns
    -------
    result : PolicyValue
        ``value``, ``std_error``, ``ci_low``, ``ci_high``, ``n_samples`` and
        ``method``.

    See Also
    --------
    collect_logged_data : Log a policy on a simulator, with the true expected
        rewards.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.evaluation import estimate_value
    >>> rng = np.random.default_rng(0)
    >>> actions = rng.integers(3, size=1000)
    >>> rewards = (actions == 2).astype(float)
    >>> target = np.tile([0.1, 0.1, 0.8], (1000, 1))
    >>> v = estimate_value(target, actions, rewards, np.full(1000, 1 / 3))
    >>> bool(v.ci_low < 0.8 < v.ci_high)
    True
    """
    _check_method_options(method, expected_rewards, clip, tau)
    if ci == "bootstrap" and any_dask(
        action_proba, actions, rewards, propensities, expected_rewards
    ):
        raise ValueError(NO_BOOTSTRAP_ON_DASK)
    # DM ignores the logged data; _terms still checks that it matches action_proba.
    terms = _terms(
        method,
        action_proba,
        actions,
        rewards,
        propensities,
        expected_rewards if method in _NEEDS_MODEL else None,
        clip,
        tau,
    )
    if method == "replay":
        _warn_if_not_uniform(propensities)
    n = terms.n_samples
    if n < 2:
        raise ValueError(
            f"A confidence interval needs at least 2 logged rounds; got {n}."
        )
    if terms.n_matched == 0:
        warnings.warn(
            "The evaluated policy gives probability 0 to every logged action: the "
            "logged rewards carry no information about it, and the interval is "
            "meaningless.",
            UserWarning,
            stacklevel=2,
        )
    value = terms.value()
    if ci == "analytic":
        std_error, low, high = _analytic_interval(terms, value, alpha)
    else:
        std_error, low, high = _bootstrap_interval(
            terms, alpha, n_bootstrap, random_state
        )
    return PolicyValue(
        value=value,
        std_error=std_error,
        ci_low=float(low),
        ci_high=float(high),
        n_samples=int(n),
        method=method,
    )


def _analytic_interval(terms, value, alpha):
    """``(std_error, low, high)`` of the normal interval on the influence terms."""
    n = terms.n_samples
    std_error = float(np.sqrt(terms.sum_squared_influence() / (n - 1) / n))
    z = norm.ppf(1 - alpha / 2)
    return std_error, value - z * std_error, value + z * std_error


def _bootstrap_interval(terms, alpha, n_bootstrap, random_state):
    """``(std_error, low, high)`` of the percentile bootstrap over the rounds, the
    resamples drawn as multinomial counts in chunks of bounded memory."""
    n = terms.n_samples
    rng = check_random_state(random_state)
    chunk = max(1, _BOOTSTRAP_CHUNK // n)
    pvals = np.full(n, 1.0 / n)
    stats = np.concatenate(
        [
            terms.bootstrap(
                rng.multinomial(n, pvals, size=min(chunk, n_bootstrap - start)).astype(
                    np.float64
                )
            )
            for start in range(0, n_bootstrap, chunk)
        ]
    )
    std_error = float(np.std(stats, ddof=1))
    low, high = np.percentile(stats, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return std_error, low, high
