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

Every estimator takes its arguments in one order, that of
:func:`~skbandit.evaluation.estimate_value`: ``(action_proba, actions, rewards,
propensities, *, ...)`` -- the evaluated policy's action probabilities first, then
the logged actions, rewards and propensities; a reward model's ``expected_rewards``,
``clip`` and ``tau`` are keywords. The ``*_value`` functions' former order,
``(actions, action_proba, *, rewards, propensities)``, is rejected with an error that
names this one, never misread.

Internally each estimator is the sum of a *direct* part and a *ratio* part,
``mean(d_i) + sum(c_i) / sum(m_i)`` (``m_i = 1`` for the unnormalised ones; see
:mod:`skbandit.evaluation._ope_terms`), which gives one analytic standard error (the
delta method) and one bootstrap for all (:mod:`skbandit.evaluation._policy_value`).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Real

from numpy.typing import ArrayLike

from skbandit.evaluation._ope_terms import (
    _THRESHOLD,
    _terms,
    _warn_if_not_uniform,
)
from skbandit.utils._param_validation import Interval, validate_params

__all__ = [
    "dm_value",
    "dr_value",
    "ips_value",
    "replay_value",
    "snips_value",
    "sndr_value",
    "switch_dr_value",
]


@validate_params(
    {
        "action_proba": ["array-like"],
        "actions": ["array-like"],
        "rewards": ["array-like"],
        "propensities": ["array-like"],
        "clip": _THRESHOLD,
    },
    prefer_skip_nested_validation=True,
)
def ips_value(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
    *,
    clip: float | None = None,
) -> float:
    """Inverse propensity scoring (IPS) estimate of a policy's value.

    .. math:: \\hat V_{IPS} = \\frac{1}{n} \\sum_i \\min(w_i, \\lambda)\\, r_i,
        \\qquad w_i = \\frac{\\pi(a_i \\mid x_i)}{p_i}

    Unbiased when the logging propensities are right and ``clip`` is None.

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
    >>> ips_value([[0.5, 0.5], [1.0, 0.0]], [0, 1], [1.0, 1.0], [0.5, 0.5])
    0.5
    """
    terms = _terms("ips", action_proba, actions, rewards, propensities, clip=clip)
    return terms.value()


@validate_params(
    {
        "action_proba": ["array-like"],
        "actions": ["array-like"],
        "rewards": ["array-like"],
        "propensities": ["array-like"],
    },
    prefer_skip_nested_validation=True,
)
def snips_value(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
) -> float:
    """Self-normalised inverse propensity scoring (SNIPS) estimate of a policy's value.

    .. math:: \\hat V_{SNIPS} = \\frac{\\sum_i w_i r_i}{\\sum_i w_i}

    Slightly biased but consistent, bounded by the rewards' range, and invariant to
    a common rescaling of the propensities.

    Parameters
    ----------
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution.
    actions : array-like of shape (n_samples,)
        Logged actions.
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
    >>> snips_value([[0.5, 0.5], [1.0, 0.0]], [0, 1], [1.0, 1.0], [0.5, 0.5])
    1.0
    """
    terms = _terms("snips", action_proba, actions, rewards, propensities)
    return terms.value()


@validate_params(
    {"action_proba": ["array-like"], "expected_rewards": ["array-like"]},
    prefer_skip_nested_validation=True,
)
def dm_value(action_proba: ArrayLike, *, expected_rewards: ArrayLike) -> float:
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
    >>> dm_value([[0.5, 0.5], [1.0, 0.0]], expected_rewards=[[1.0, 0.0], [0.2, 0.4]])
    0.35
    """
    return _terms("dm", action_proba, None, None, None, expected_rewards).value()


_DR_PARAMS = {
    "action_proba": ["array-like"],
    "actions": ["array-like"],
    "rewards": ["array-like"],
    "propensities": ["array-like"],
    "expected_rewards": ["array-like"],
}


@validate_params({**_DR_PARAMS, "clip": _THRESHOLD}, prefer_skip_nested_validation=True)
def dr_value(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
    *,
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
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution.
    actions : array-like of shape (n_samples,)
        Logged actions.
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
    >>> dr_value([[0.5, 0.5], [1.0, 0.0]], [0, 1], [1.0, 1.0], [0.5, 0.5],
    ...          expected_rewards=[[0.5, 0.5], [0.5, 0.5]])
    0.75
    """
    terms = _terms(
        "dr", action_proba, actions, rewards, propensities, expected_rewards, clip
    )
    return terms.value()


@validate_params(_DR_PARAMS, prefer_skip_nested_validation=True)
def sndr_value(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
    *,
    expected_rewards: ArrayLike,
) -> float:
    """Self-normalised doubly robust (SNDR) estimate of a policy's value.

    .. math:: \\hat V_{SNDR} = \\frac{1}{n} \\sum_i \\hat q(x_i, \\pi)
        + \\frac{\\sum_i w_i \\big(r_i - \\hat q(x_i, a_i)\\big)}{\\sum_i w_i}

    Parameters
    ----------
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution.
    actions : array-like of shape (n_samples,)
        Logged actions.
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
    >>> sndr_value([[0.5, 0.5], [1.0, 0.0]], [0, 1], [1.0, 1.0], [0.5, 0.5],
    ...            expected_rewards=[[0.5, 0.5], [0.5, 0.5]])
    1.0
    """
    terms = _terms(
        "sndr", action_proba, actions, rewards, propensities, expected_rewards
    )
    return terms.value()


@validate_params(
    {**_DR_PARAMS, "tau": [Interval(Real, 0, None, closed="both")]},
    prefer_skip_nested_validation=True,
)
def switch_dr_value(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
    *,
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
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution.
    actions : array-like of shape (n_samples,)
        Logged actions.
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
    >>> switch_dr_value([[0.5, 0.5], [1.0, 0.0]], [0, 1], [1.0, 1.0], [0.5, 0.5],
    ...                 expected_rewards=[[0.5, 0.5], [0.5, 0.5]], tau=0.5)
    0.5
    """
    terms = _terms(
        "switch-dr",
        action_proba,
        actions,
        rewards,
        propensities,
        expected_rewards,
        tau=tau,
    )
    return terms.value()


@validate_params(
    {
        "action_proba": ["array-like"],
        "actions": ["array-like"],
        "rewards": ["array-like"],
        "propensities": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def replay_value(
    action_proba: ArrayLike,
    actions: ArrayLike,
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
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution (one-hot for a deterministic one).
    actions : array-like of shape (n_samples,)
        Logged actions, drawn uniformly at random.
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
    >>> replay_value([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], [0, 1, 1],
    ...              [1.0, 0.0, 1.0])
    0.5
    """
    terms = _terms("replay", action_proba, actions, rewards, propensities)
    if propensities is not None:
        _warn_if_not_uniform(propensities)
    return terms.value()
