"""The empirical-likelihood interval of a policy's IPS-type value.

Empirical likelihood (Owen) treats the logs as draws from an unknown discrete law
``Q`` of the pairs ``(w, r)`` (importance weight, reward) and keeps the laws that
are nearly as likely as the best one. Karampatziakis, Langford and Mineiro add the
one thing known about every correctly logged data set, ``E_Q[w] = 1``, and let
``Q`` put mass where no round was observed: at ``w = 0`` (any reward) and at the
largest possible weight ``w_max`` (with the reward that is worst for the bound).
The value is ``V = E_Q[w r]``.

Both problems solved here are convex, and small in their duals:

- the best law: ``max sum_i log q_i`` under ``sum_i q_i <= 1`` (the rest sits at
  ``w = 0``) and ``sum_i q_i w_i + q_+ w_max = 1``; its dual is one scalar ``beta``
  with ``q_i = 1 / (n + beta (w_i - 1))``;
- the lower bound: ``min sum_i q_i w_i r_i`` over the laws whose log-likelihood is
  at least the best one's less ``c / 2`` (``c`` the calibration quantile); with
  ``kappa`` the likelihood constraint's multiplier eliminated in closed form, its
  dual is ``max_{mu, beta} A * GM_i(mu + beta w_i + w_i r_i) - mu - beta`` with
  ``A = n exp(L0 / n)``, ``L0`` the required log-likelihood, ``GM`` the geometric
  mean, under ``mu >= 0`` and ``mu + beta w_max >= 0``. It is concave; it is
  maximised over ``mu`` for each ``beta`` and then over ``beta``, each a root of a
  monotone derivative.

The upper bound is one minus the lower bound of ``E_Q[w (1 - r)]`` (which is
``1 - V`` under ``E_Q[w] = 1``).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Real

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import brentq
from scipy.stats import chi2, f

from skbandit._docstrings import Substitution
from skbandit.evaluation._ope_intervals import unit_reward_logs
from skbandit.evaluation._ope_weighted import LOGGED_PARAMS
from skbandit.evaluation._policy_value import PolicyValue, estimate_value
from skbandit.utils._param_validation import Interval, StrOptions, validate_params

__all__ = ["empirical_likelihood_interval"]

#: Relative distance kept from an open end of a root's bracket: masses stay at most
#: one, so no root of these problems lies closer than about 1e-2 / n of such an end.
_NUDGE = 1e-12
#: Doublings allowed when a root's bracket is searched for.
_MAX_DOUBLINGS = 400


def _compress(w, r):
    """The distinct ``(w, r)`` pairs and their counts: all the problems depend on."""
    pairs, counts = np.unique(np.column_stack([w, r]), axis=0, return_counts=True)
    return pairs[:, 0], pairs[:, 1], counts.astype(float)


def _decreasing_root(fun, lo, hi, lo_open=False, hi_open=False):
    """The root of a decreasing ``fun`` on ``[lo, hi]``, or the end where it binds.

    ``lo`` or ``hi`` may be None (unbounded: the bracket is grown by doubling);
    an open end is one where ``fun`` tends to an infinity of the right sign.
    """
    if lo is not None and not lo_open and fun(lo) <= 0:
        return lo
    if hi is not None and not hi_open and fun(hi) >= 0:
        return hi
    if lo is None or hi is None:  # the scale of the known end, so that lo + nudge > lo
        width = max(1.0, abs(lo if lo is not None else hi or 0.0))
    else:
        width = hi - lo
    a = None if lo is None else lo + (_NUDGE * width if lo_open else 0.0)
    b = None if hi is None else hi - (_NUDGE * width if hi_open else 0.0)
    if a is None:
        a = (b if b is not None else 0.0) - 1.0
        for _ in range(_MAX_DOUBLINGS):
            if fun(a) > 0:
                break
            a -= 2.0 * abs(a) + 1.0
    if b is None:
        b = a + max(1.0, abs(a))
        for _ in range(_MAX_DOUBLINGS):
            if fun(b) < 0:
                break
            b = a + 2.0 * (b - a)
    if fun(a) <= 0:  # a degenerate law with its root inside the nudge
        return a
    if fun(b) >= 0:
        return b
    return brentq(fun, a, b, xtol=1e-14 * max(1.0, abs(a), abs(b)), maxiter=500)


def _best_law(w, counts, w_max):
    """The maximum-likelihood masses of the distinct pairs, and its log-likelihood."""
    n = counts.sum()
    if np.all(w == 1.0):  # on-policy logs: the empirical law
        return np.full(w.shape, 1.0 / n), float(n * np.log(1.0 / n))
    # Dual: minimise -sum_i c_i log(n + beta (w_i - 1)) over beta, with mu = n -
    # beta >= 0 and mu + beta w_max >= 0; its slope increases in beta.
    minus_slope = lambda beta: np.sum(counts * (w - 1) / (n + beta * (w - 1)))  # noqa: E731
    lo, lo_open = (-n / (w_max - 1), False) if np.isfinite(w_max) else (0.0, False)
    if np.isfinite(w_max) and w.max() >= w_max:  # a logged weight at w_max
        lo_open = True
    hi_open = bool(w.min() == 0.0)  # at beta = n a zero weight has infinite mass
    beta = _decreasing_root(minus_slope, lo, float(n), lo_open, hi_open)
    q = 1.0 / (n - beta + beta * w)
    return q, float(np.sum(counts * np.log(q)))


def _lower_bound(w, r, counts, w_max, log_lik):
    """``min E_Q[w r]`` over the laws of log-likelihood at least ``log_lik``."""
    n = counts.sum()
    scale = n * np.exp(log_lik / n)
    wr = w * r

    def parts(mu, beta):
        d = mu + beta * w + wr
        gm = np.exp(np.sum(counts * np.log(d)) / n)
        return d, gm

    def best_mu(beta):
        c = beta * w + wr
        floor = max(0.0, -beta * w_max) if np.isfinite(w_max) else 0.0
        edge = -c.min()  # every mu + c_i must stay positive

        def slope(mu):
            return scale * parts(mu, beta)[1] * np.sum(counts / (mu + c)) / n - 1.0

        mu = _decreasing_root(slope, max(floor, edge), None, edge >= floor)
        pinned = np.isfinite(w_max) and floor > 0 and edge < floor and mu == floor
        return mu, pinned

    def beta_slope(beta):
        mu, pinned = best_mu(beta)
        d, gm = parts(mu, beta)
        g_beta = scale * gm * np.sum(counts * w / d) / n - 1.0
        if not pinned:  # the envelope theorem: mu's own slope is zero
            return g_beta
        # mu sits on mu = -beta w_max and moves with beta.
        return g_beta - w_max * (scale * gm * np.sum(counts / d) / n - 1.0)

    beta = _decreasing_root(beta_slope, None if np.isfinite(w_max) else 0.0, None)
    mu, _ = best_mu(beta)
    return float(scale * parts(mu, beta)[1] - mu - beta)


def _el_bounds(w, r, w_max, quantile):
    """The maximum-likelihood value and the interval's ends, for ``r`` in [0, 1]."""
    w, r, counts = _compress(w, r)
    q, best = _best_law(w, counts, w_max)
    weighted = np.sum(counts * q * w)
    observed = np.sum(counts * q * w * r)
    # The weight mass the logs lack (at w_max) takes the self-normalised reward of
    # the mass they hold: with no bound on the weights this is SNIPS.
    fill = observed / weighted if weighted > 0 else 0.5
    value = observed + max(0.0, 1.0 - weighted) * fill
    required = best - quantile / 2.0
    low = _lower_bound(w, r, counts, w_max, required)
    high = 1.0 - _lower_bound(w, 1.0 - r, counts, w_max, required)
    return value, min(max(low, 0.0), value), max(min(high, 1.0), value)


@Substitution(logged=LOGGED_PARAMS)
@validate_params(
    {
        "action_proba": ["array-like"],
        "actions": ["array-like"],
        "rewards": ["array-like"],
        "propensities": ["array-like"],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "max_weight": [Interval(Real, 1, None, closed="left"), None],
        "calibration": [StrOptions({"f", "chi2"})],
    },
    prefer_skip_nested_validation=True,
)
def empirical_likelihood_interval(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
    *,
    alpha: float = 0.05,
    max_weight: float | None = None,
    calibration: str = "f",
) -> PolicyValue:
    """Empirical-likelihood estimate and interval of a policy's value.

    The logs' pairs ``(w_i, r_i)`` (importance weight, reward in ``[0, 1]``) are
    read as draws from an unknown law ``Q`` whose mean weight is one, as it is
    for any correctly logged data; ``Q`` may also put mass where no round was
    seen, at ``w = 0`` and at the largest possible weight ``max_weight``. The
    interval holds every value ``E_Q[w r]`` of the laws whose likelihood ratio to
    the most likely one passes the calibration quantile:

    .. math:: \\Big\\{ E_Q[w r] :\\; 2 \\Big(\\max_{E_{Q'}[w] = 1} \\sum_i
        \\log Q'_i - \\sum_i \\log Q_i\\Big) \\le c,\\; E_Q[w] = 1 \\Big\\}

    Like the self-normalised estimator it uses ``E[w] = 1`` and so adapts to the
    weights the logs happen to hold, but it is not a normal approximation: the
    interval is skewed where the weights' tail is, and its ends stay in
    ``[0, 1]``. Its guarantee is asymptotic (Wilks' theorem for empirical
    likelihood), with the ``F`` calibration a small-sample correction; the
    point estimate (the most likely law's value) lies between IPS and SNIPS.

    Parameters
    ----------
    %(logged)s
    alpha : float, default=0.05
        One minus the confidence level.
    max_weight : float or None, default=None
        The largest importance weight the logging and evaluated policies can
        produce (for example the largest ``pi(a | x) / mu(a | x)`` over the
        support); None takes no bound, which widens the interval where the logs'
        mean weight falls short of one. At least every logged weight, and at
        least 1 (1 only for logs of the evaluated policy itself).
    calibration : {"f", "chi2"}, default="f"
        The quantile ``c``: of ``F(1, n)`` (wider at small ``n``) or of the
        chi-squared law with one degree of freedom (the asymptotic one).

    Returns
    -------
    result : PolicyValue
        The empirical-likelihood estimate and interval (``method="el"``); its
        ``std_error`` is that of the IPS estimate, for reference.

    Notes
    -----
    The two problems (the most likely law, and each end of the interval) are
    convex and are solved through their duals, of one and two scalars; the
    computation depends on the logs only through their distinct ``(w, r)``
    pairs, so discrete propensities and rewards make it fast at any ``n``.

    References
    ----------
    .. [1] Karampatziakis, Langford, Mineiro. "Empirical likelihood for contextual
       bandits". NeurIPS 2020 (arXiv:1906.03323).
    .. [2] Owen. "Empirical likelihood". Chapman & Hall/CRC, 2001.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.evaluation import empirical_likelihood_interval
    >>> rng = np.random.default_rng(0)
    >>> actions = rng.integers(3, size=500)
    >>> rewards = (rng.random(500) < np.where(actions == 2, 0.7, 0.2)) * 1.0
    >>> target = np.tile([0.0, 0.0, 1.0], (500, 1))
    >>> v = empirical_likelihood_interval(target, actions, rewards, np.full(500, 1 / 3))
    >>> bool(v.ci_low < 0.7 < v.ci_high), v.method
    (True, 'el')
    """
    proba, actions, rewards, propensities, w = unit_reward_logs(
        "empirical_likelihood_interval", action_proba, actions, rewards, propensities
    )
    w_max = np.inf if max_weight is None else float(max_weight)
    if w.size and w.max() > w_max:
        raise ValueError(
            f"max_weight={max_weight!r} is below a logged importance weight "
            f"({w.max()!r}): it must bound every weight the policies can produce."
        )
    if w_max == 1.0 and np.any(w != 1.0):
        raise ValueError(
            "max_weight=1 says the logs are the evaluated policy's own (every "
            "weight 1), but some logged weights differ from 1."
        )
    n = actions.shape[0]
    quantile = f.ppf(1 - alpha, 1, n) if calibration == "f" else chi2.ppf(1 - alpha, 1)
    value, low, high = _el_bounds(w, rewards, w_max, quantile)
    ips = estimate_value(proba, actions, rewards, propensities, method="ips")
    return PolicyValue(float(value), ips.std_error, float(low), float(high), n, "el")
