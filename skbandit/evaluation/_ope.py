"""Off-policy value estimators as plain metric-style functions.

Every estimator here is the standard one, written as Open Bandit Pipeline (OBP)
documents it, and agrees with OBP's implementation to floating-point precision on
the same inputs (OBP's ``action_dist[:, :, 0]`` is our ``action_proba``). With the
importance weight ``w_i = pi(a_i | x_i) / p_i`` of logged round ``i``, a reward
model ``q(x, a)`` and ``q(x_i, pi) = sum_a pi(a | x_i) q(x_i, a)``:

=============  ===============================================================
``ips``        ``mean(w_i r_i)``, weights optionally clipped to ``min(w, clip)``
``snips``      ``sum(w_i r_i) / sum(w_i)``
``dm``         ``mean(q(x_i, pi))``
``dr``         ``mean(q(x_i, pi) + w_i (r_i - q(x_i, a_i)))``, clip as IPS
``sndr``       ``mean(q(x_i, pi)) + sum(w_i (r_i - q(x_i, a_i))) / sum(w_i)``
``switch-dr``  ``mean(q(x_i, pi) + 1{w_i <= tau} w_i (r_i - q(x_i, a_i)))``
``replay``     ``sum(pi(a_i | x_i) r_i) / sum(pi(a_i | x_i))`` (uniform logging)
=============  ===============================================================

Internally each estimator is the sum of a *direct* part and a *ratio* part,
``mean(d_i) + sum(c_i) / sum(m_i)`` (``m_i = 1`` for the unnormalised ones), which
gives one analytic standard error (the delta method) and one bootstrap for all.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import warnings
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import norm
from sklearn.utils import check_array, check_random_state

from skbandit.utils._param_validation import Interval, StrOptions, validate_params
from skbandit.utils.validation import check_bandit_data

__all__ = [
    "PolicyValue",
    "dm_value",
    "dr_value",
    "estimate_value",
    "ips_value",
    "replay_value",
    "snips_value",
    "sndr_value",
    "switch_dr_value",
]

#: Names accepted by ``estimate_value(method=...)``.
METHODS = ("ips", "snips", "dm", "dr", "sndr", "switch-dr", "replay")
_NEEDS_MODEL = ("dm", "dr", "sndr", "switch-dr")
_CLIPPED = ("ips", "dr")
#: Tolerance on ``action_proba`` rows summing to one.
_PROBA_ATOL = 1e-6

_THRESHOLD = [Interval(Real, 0, None, closed="both"), None]


# --------------------------------------------------------------------- validation
def _check_action_proba(action_proba: ArrayLike) -> NDArray:
    ndim = np.ndim(action_proba)
    if ndim != 2:
        hint = (
            "; for Open Bandit Pipeline's action_dist pass action_dist[:, :, 0]"
            if ndim == 3
            else ""
        )
        raise ValueError(
            "action_proba must be 2-D of shape (n_samples, n_actions), got shape "
            f"{np.shape(action_proba)}{hint}."
        )
    action_proba = check_array(
        action_proba, dtype=np.float64, input_name="action_proba"
    )
    if np.any(action_proba < 0):
        raise ValueError(
            f"action_proba must be non-negative, got {action_proba.min()!r}."
        )
    sums = action_proba.sum(axis=1)
    bad = np.abs(sums - 1.0) > _PROBA_ATOL
    if np.any(bad):
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(
            "Each row of action_proba must be a probability distribution summing "
            f"to 1; row {row} sums to {sums[row]!r}."
        )
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
    actions: ArrayLike,
    action_proba: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike | None,
) -> tuple[NDArray, NDArray, NDArray, NDArray | None]:
    """Validate logged data against the evaluated policy's ``action_proba``."""
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
    return actions, action_proba, rewards, propensities


# ------------------------------------------------------------------ the estimators
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


def _weights(actions, action_proba, propensities, clip=None):
    weights = action_proba[np.arange(actions.shape[0]), actions] / propensities
    if clip is not None:
        weights = np.minimum(weights, clip)
    return weights


def _terms(
    method: str,
    actions: ArrayLike,
    action_proba: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike | None,
    expected_rewards: ArrayLike | None = None,
    clip: float | None = None,
    tau: float | None = None,
) -> _Terms:
    """Validate the inputs of ``method`` and return its per-round terms."""
    if method == "dm":
        action_proba = _check_action_proba(action_proba)
        q = _check_expected_rewards(expected_rewards, action_proba.shape)
        direct = np.sum(action_proba * q, axis=1)
        return _Terms(direct, None, None, direct.shape[0])

    actions, action_proba, rewards, propensities = _check_logged(
        actions, action_proba, rewards, propensities
    )
    n = actions.shape[0]
    rows = np.arange(n)
    matched = int(np.count_nonzero(action_proba[rows, actions]))
    if method == "replay":
        match = action_proba[rows, actions]
        return _Terms(None, match * rewards, match, n, matched)
    weights = _weights(actions, action_proba, propensities, clip)
    if method == "ips":
        return _Terms(None, weights * rewards, None, n, matched)
    if method == "snips":
        return _Terms(None, weights * rewards, weights, n, matched)

    q = _check_expected_rewards(expected_rewards, action_proba.shape)
    direct = np.sum(action_proba * q, axis=1)
    residual = weights * (rewards - q[rows, actions])
    if method == "dr":
        return _Terms(direct, residual, None, n, matched)
    if method == "sndr":
        return _Terms(direct, residual, weights, n, matched)
    if method == "switch-dr":
        return _Terms(direct, np.where(weights <= tau, residual, 0.0), None, n, matched)
    raise ValueError(f"method must be one of {METHODS}, got {method!r}.")


@validate_params(
    {
        "actions": ["array-like"],
        "action_proba": ["array-like"],
        "rewards": ["array-like"],
        "propensities": ["array-like"],
        "clip": _THRESHOLD,
    },
    prefer_skip_nested_validation=True,
)
def ips_value(
    actions: ArrayLike,
    action_proba: ArrayLike,
    *,
    rewards: ArrayLike,
    propensities: ArrayLike,
    clip: float | None = None,
) -> float:
    """Inverse propensity scoring (IPS) estimate of a policy's value.

    .. math:: \\hat V_{IPS} = \\frac{1}{n} \\sum_i \\min(w_i, \\lambda)\\, r_i,
        \\qquad w_i = \\frac{\\pi(a_i \\mid x_i)}{p_i}

    Unbiased when the logging propensities are right and ``clip`` is None.

    Parameters
    ----------
    actions : array-like of shape (n_samples,)
        Logged actions.
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution, ``predict_action_proba(X)``.
    rewards : array-like of shape (n_samples,)
        Logged rewards.
    propensities : array-like of shape (n_samples,)
        Logging policy's probability of each logged action, in ``(0, 1]``.
    clip : float or None, default=None
        Upper bound ``lambda`` on the importance weights (OBP's ``lambda_``);
        clipping trades bias for variance.

    Returns
    -------
    value : float
        Estimated expected reward per round.

    See Also
    --------
    snips_value : Self-normalised IPS.
    estimate_value : The same estimate with a confidence interval.

    Examples
    --------
    >>> from skbandit.evaluation import ips_value
    >>> ips_value([0, 1], [[0.5, 0.5], [1.0, 0.0]], rewards=[1.0, 1.0],
    ...           propensities=[0.5, 0.5])
    0.5
    """
    terms = _terms("ips", actions, action_proba, rewards, propensities, clip=clip)
    return terms.value()


@validate_params(
    {
        "actions": ["array-like"],
        "action_proba": ["array-like"],
        "rewards": ["array-like"],
        "propensities": ["array-like"],
    },
    prefer_skip_nested_validation=True,
)
def snips_value(
    actions: ArrayLike,
    action_proba: ArrayLike,
    *,
    rewards: ArrayLike,
    propensities: ArrayLike,
) -> float:
    """Self-normalised inverse propensity scoring (SNIPS) estimate of a policy's value.

    .. math:: \\hat V_{SNIPS} = \\frac{\\sum_i w_i r_i}{\\sum_i w_i}

    Slightly biased but consistent, bounded by the rewards' range, and invariant to
    a common rescaling of the propensities.

    Parameters
    ----------
    actions : array-like of shape (n_samples,)
        Logged actions.
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution.
    rewards : array-like of shape (n_samples,)
        Logged rewards.
    propensities : array-like of shape (n_samples,)
        Logging policy's probability of each logged action, in ``(0, 1]``.

    Returns
    -------
    value : float
        Estimated expected reward per round (0 when no weight is positive).

    See Also
    --------
    ips_value : The unnormalised estimate.

    Examples
    --------
    >>> from skbandit.evaluation import snips_value
    >>> snips_value([0, 1], [[0.5, 0.5], [1.0, 0.0]], rewards=[1.0, 1.0],
    ...             propensities=[0.5, 0.5])
    1.0
    """
    terms = _terms("snips", actions, action_proba, rewards, propensities)
    return terms.value()


@validate_params(
    {"action_proba": ["array-like"], "expected_rewards": ["array-like"]},
    prefer_skip_nested_validation=True,
)
def dm_value(action_proba: ArrayLike, expected_rewards: ArrayLike) -> float:
    """Direct method (DM) estimate of a policy's value.

    .. math:: \\hat V_{DM} = \\frac{1}{n} \\sum_i \\sum_a \\pi(a \\mid x_i)\\,
        \\hat q(x_i, a)

    As good as the reward model: biased when it is. With the environment's true
    expected rewards (``collect_logged_data(...).expected_rewards``) it is the
    policy's true value on the logged contexts.

    Parameters
    ----------
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution.
    expected_rewards : array-like of shape (n_samples, n_actions)
        A reward model's expected reward of every arm in every logged round.

    Returns
    -------
    value : float
        Estimated expected reward per round.

    See Also
    --------
    dr_value : DM corrected by importance-weighted residuals.

    Examples
    --------
    >>> from skbandit.evaluation import dm_value
    >>> dm_value([[0.5, 0.5], [1.0, 0.0]], [[1.0, 0.0], [0.2, 0.4]])
    0.35
    """
    return _terms("dm", None, action_proba, None, None, expected_rewards).value()


_DR_PARAMS = {
    "actions": ["array-like"],
    "action_proba": ["array-like"],
    "rewards": ["array-like"],
    "propensities": ["array-like"],
    "expected_rewards": ["array-like"],
}


@validate_params({**_DR_PARAMS, "clip": _THRESHOLD}, prefer_skip_nested_validation=True)
def dr_value(
    actions: ArrayLike,
    action_proba: ArrayLike,
    *,
    rewards: ArrayLike,
    propensities: ArrayLike,
    expected_rewards: ArrayLike,
    clip: float | None = None,
) -> float:
    """Doubly robust (DR) estimate of a policy's value.

    .. math:: \\hat V_{DR} = \\frac{1}{n} \\sum_i \\Big[\\hat q(x_i, \\pi)
        + \\min(w_i, \\lambda) \\big(r_i - \\hat q(x_i, a_i)\\big)\\Big]

    Unbiased (without clipping) when either the propensities or the reward model
    are right; with a good reward model its variance is far below IPS's. A zero
    reward model gives IPS, a perfect one on noiseless rewards gives the truth.

    Parameters
    ----------
    actions : array-like of shape (n_samples,)
        Logged actions.
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution.
    rewards : array-like of shape (n_samples,)
        Logged rewards.
    propensities : array-like of shape (n_samples,)
        Logging policy's probability of each logged action, in ``(0, 1]``.
    expected_rewards : array-like of shape (n_samples, n_actions)
        A reward model's expected reward of every arm in every logged round
        (cross-fitted, ideally, so that it did not see the rewards it corrects).
    clip : float or None, default=None
        Upper bound ``lambda`` on the importance weights (OBP's ``lambda_``).

    Returns
    -------
    value : float
        Estimated expected reward per round.

    See Also
    --------
    sndr_value : Self-normalised DR.
    switch_dr_value : DR that falls back on DM where weights are large.

    Examples
    --------
    >>> from skbandit.evaluation import dr_value
    >>> dr_value([0, 1], [[0.5, 0.5], [1.0, 0.0]], rewards=[1.0, 1.0],
    ...          propensities=[0.5, 0.5], expected_rewards=[[0.5, 0.5], [0.5, 0.5]])
    0.75
    """
    terms = _terms(
        "dr", actions, action_proba, rewards, propensities, expected_rewards, clip
    )
    return terms.value()


@validate_params(_DR_PARAMS, prefer_skip_nested_validation=True)
def sndr_value(
    actions: ArrayLike,
    action_proba: ArrayLike,
    *,
    rewards: ArrayLike,
    propensities: ArrayLike,
    expected_rewards: ArrayLike,
) -> float:
    """Self-normalised doubly robust (SNDR) estimate of a policy's value.

    .. math:: \\hat V_{SNDR} = \\frac{1}{n} \\sum_i \\hat q(x_i, \\pi)
        + \\frac{\\sum_i w_i \\big(r_i - \\hat q(x_i, a_i)\\big)}{\\sum_i w_i}

    Parameters
    ----------
    actions : array-like of shape (n_samples,)
        Logged actions.
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution.
    rewards : array-like of shape (n_samples,)
        Logged rewards.
    propensities : array-like of shape (n_samples,)
        Logging policy's probability of each logged action, in ``(0, 1]``.
    expected_rewards : array-like of shape (n_samples, n_actions)
        A reward model's expected reward of every arm in every logged round.

    Returns
    -------
    value : float
        Estimated expected reward per round (DM's when no weight is positive).

    See Also
    --------
    dr_value : The unnormalised estimate.

    Examples
    --------
    >>> from skbandit.evaluation import sndr_value
    >>> sndr_value([0, 1], [[0.5, 0.5], [1.0, 0.0]], rewards=[1.0, 1.0],
    ...            propensities=[0.5, 0.5], expected_rewards=[[0.5, 0.5], [0.5, 0.5]])
    1.0
    """
    terms = _terms(
        "sndr", actions, action_proba, rewards, propensities, expected_rewards
    )
    return terms.value()


@validate_params(
    {**_DR_PARAMS, "tau": [Interval(Real, 0, None, closed="both")]},
    prefer_skip_nested_validation=True,
)
def switch_dr_value(
    actions: ArrayLike,
    action_proba: ArrayLike,
    *,
    rewards: ArrayLike,
    propensities: ArrayLike,
    expected_rewards: ArrayLike,
    tau: float,
) -> float:
    """Switch doubly robust (Switch-DR) estimate of a policy's value.

    .. math:: \\hat V_{Switch} = \\frac{1}{n} \\sum_i \\Big[\\hat q(x_i, \\pi)
        + \\mathbb{1}\\{w_i \\le \\tau\\}\\,
        w_i \\big(r_i - \\hat q(x_i, a_i)\\big)\\Big]

    DR where the importance weight is at most ``tau``, DM elsewhere, as Open Bandit
    Pipeline writes it (Wang et al.'s SWITCH with DR in place of IPS):
    ``tau=inf`` is DR and ``tau=0`` is DM.

    Parameters
    ----------
    actions : array-like of shape (n_samples,)
        Logged actions.
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution.
    rewards : array-like of shape (n_samples,)
        Logged rewards.
    propensities : array-like of shape (n_samples,)
        Logging policy's probability of each logged action, in ``(0, 1]``.
    expected_rewards : array-like of shape (n_samples, n_actions)
        A reward model's expected reward of every arm in every logged round.
    tau : float
        Switching threshold on the importance weight, in ``[0, inf]`` (OBP's
        ``lambda_``; ``tau`` in OBP 0.4).

    Returns
    -------
    value : float
        Estimated expected reward per round.

    See Also
    --------
    dr_value : Switch-DR with ``tau=inf``.
    dm_value : Switch-DR with ``tau=0``.

    References
    ----------
    .. [1] Wang, Agarwal, Dudik. "Optimal and adaptive off-policy evaluation in
       contextual bandits". ICML 2017.

    Examples
    --------
    >>> from skbandit.evaluation import switch_dr_value
    >>> switch_dr_value([0, 1], [[0.5, 0.5], [1.0, 0.0]], rewards=[1.0, 1.0],
    ...                 propensities=[0.5, 0.5],
    ...                 expected_rewards=[[0.5, 0.5], [0.5, 0.5]], tau=0.5)
    0.5
    """
    terms = _terms(
        "switch-dr",
        actions,
        action_proba,
        rewards,
        propensities,
        expected_rewards,
        tau=tau,
    )
    return terms.value()


def _warn_if_not_uniform(propensities: NDArray) -> None:
    if propensities is not None and np.ptp(propensities) > 1e-12 * propensities.max():
        warnings.warn(
            "replay assumes uniformly random logging, but the propensities vary "
            f"(from {propensities.min():.3g} to {propensities.max():.3g}); its "
            "estimate is biased. Use snips or dr instead.",
            UserWarning,
            stacklevel=3,
        )


@validate_params(
    {
        "actions": ["array-like"],
        "action_proba": ["array-like"],
        "rewards": ["array-like"],
        "propensities": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def replay_value(
    actions: ArrayLike,
    action_proba: ArrayLike,
    *,
    rewards: ArrayLike,
    propensities: ArrayLike | None = None,
) -> float:
    """Replay estimate (Li et al., 2011) of a policy's value on uniformly logged data.

    .. math:: \\hat V_{replay} = \\frac{\\sum_i \\pi(a_i \\mid x_i)\\, r_i}
        {\\sum_i \\pi(a_i \\mid x_i)}

    The average reward over the rounds where the evaluated policy would have
    played the logged arm. For a deterministic policy (one-hot ``action_proba``)
    the match weight ``pi(a_i | x_i)`` is the indicator of Li et al. and the value
    is Open Bandit Pipeline's ``ReplayMethod``. For a stochastic policy it is the
    expected match over the policy's own draws (the indicator's expectation, which
    removes the noise of sampling one action per round); to replay one sampled
    action per round instead, pass its one-hot encoding,
    ``np.eye(n_actions)[sampled]``. Under uniform logging this equals
    :func:`snips_value`.

    Parameters
    ----------
    actions : array-like of shape (n_samples,)
        Logged actions, drawn uniformly at random.
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution (one-hot for a deterministic one).
    rewards : array-like of shape (n_samples,)
        Logged rewards.
    propensities : array-like of shape (n_samples,), default=None
        Logging propensities, only checked: a warning says when they are not
        constant, since replay is then biased.

    Returns
    -------
    value : float
        Estimated expected reward per round (0 when no round matches).

    See Also
    --------
    snips_value : The estimate for any logging policy.

    References
    ----------
    .. [1] Li, Chu, Langford, Wang. "Unbiased offline evaluation of
       contextual-bandit-based news article recommendation algorithms".
       WSDM 2011.

    Examples
    --------
    >>> from skbandit.evaluation import replay_value
    >>> replay_value([0, 1, 1], [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]],
    ...              rewards=[1.0, 0.0, 1.0])
    0.5
    """
    terms = _terms("replay", actions, action_proba, rewards, propensities)
    if propensities is not None:
        _warn_if_not_uniform(check_array(propensities, ensure_2d=False))
    return terms.value()


# ----------------------------------------------------------- intervals: PolicyValue
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

    terms = _terms(
        method,
        actions,
        action_proba,
        rewards,
        propensities,
        expected_rewards if method in _NEEDS_MODEL else None,
        clip,
        tau,
    )
    if method == "dm":  # DM ignores the logged data; still check it matches
        _check_logged(actions, action_proba, rewards, propensities)
    if method == "replay":
        _warn_if_not_uniform(check_array(propensities, ensure_2d=False))
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
        phi = terms.influence()
        std_error = float(np.sqrt(np.sum(phi**2) / (n - 1) / n))
        z = norm.ppf(1 - alpha / 2)
        low, high = value - z * std_error, value + z * std_error
    else:
        rng = check_random_state(random_state)
        chunk = max(1, _BOOTSTRAP_CHUNK // n)
        pvals = np.full(n, 1.0 / n)
        stats = np.concatenate(
            [
                terms.bootstrap(
                    rng.multinomial(
                        n, pvals, size=min(chunk, n_bootstrap - start)
                    ).astype(np.float64)
                )
                for start in range(0, n_bootstrap, chunk)
            ]
        )
        std_error = float(np.std(stats, ddof=1))
        low, high = np.percentile(stats, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return PolicyValue(
        value=value,
        std_error=std_error,
        ci_low=float(low),
        ci_high=float(high),
        n_samples=int(n),
        method=method,
    )
