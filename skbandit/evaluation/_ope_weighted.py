"""Off-policy estimators that reshape or re-estimate the importance weights.

Each takes ``(action_proba, actions, rewards, propensities, *, ...)``, the order of
:func:`~skbandit.evaluation.dr_value`, and is a mean of per-round terms (so
:class:`~skbandit.evaluation._ope_terms._Terms` gives its standard error):

=================  ===============================================================
``dros``           ``mean(q(x_i, pi) + lam w_i / (w_i^2 + lam) (r_i - q(x_i, a_i)))``
``subgaussian``    IPS or DR with ``w_i / (1 - lam + lam w_i)``
``mips``           IPS with the weight of the logged action's embedding
``balanced_ipw``   IPS with weights from a classifier of target against logged
                   (context, action) pairs, for logs without propensities
=================  ===============================================================
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import brentq
from scipy.stats import norm
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold
from sklearn.utils import check_array, check_random_state

from skbandit._docstrings import Substitution
from skbandit.evaluation._ope_terms import (
    _check_action_proba,
    _check_expected_rewards,
    _check_logged,
    _Terms,
)
from skbandit.evaluation._policy_value import PolicyValue
from skbandit.utils._param_validation import (
    HasMethods,
    Interval,
    StrOptions,
    validate_params,
)

#: The four logged arguments' docstring (``%(logged)s``).
LOGGED_PARAMS = """
action_proba : array-like of shape (n_samples, n_actions)
    Evaluated policy's action distribution.
actions : array-like of shape (n_samples,)
    Logged actions.
rewards : array-like of shape (n_samples,)
    Logged rewards.
propensities : array-like of shape (n_samples,)
    Logging policy's probability of each logged action, in ``(0, 1]``.
"""

__all__ = [
    "balanced_ipw_value",
    "dros_value",
    "mips_value",
    "subgaussian_dr_value",
    "subgaussian_ips_value",
]


def interval_of(terms, alpha=0.05, method="") -> PolicyValue:
    """The analytic (normal) interval of an estimate's per-round terms."""
    n = terms.n_samples
    value = terms.value()
    std_error = float(np.sqrt(np.sum(terms.influence() ** 2) / (n - 1) / n))
    z = norm.ppf(1 - alpha / 2)
    return PolicyValue(value, std_error, value - z * std_error,
                       value + z * std_error, n, method)  # fmt: skip


def _weights(action_proba, actions, rewards, propensities):
    """Validated logs and the importance weights ``pi(a_i | x_i) / p_i``."""
    action_proba, actions, rewards, propensities = _check_logged(
        action_proba, actions, rewards, propensities
    )
    match = action_proba[np.arange(actions.shape[0]), actions]
    return action_proba, actions, rewards, match / propensities, match


def _dr_terms(action_proba, actions, rewards, weights, match, expected_rewards):
    q = _check_expected_rewards(expected_rewards, action_proba.shape)
    direct = np.einsum("ij,ij->i", action_proba, q)
    residual = weights * (rewards - q[np.arange(actions.shape[0]), actions])
    return _Terms(
        direct, residual, None, actions.shape[0], int(np.count_nonzero(match))
    )


def dros_terms(action_proba, actions, rewards, propensities, expected_rewards, lam):
    proba, actions, rewards, w, match = _weights(
        action_proba, actions, rewards, propensities
    )
    shrunk = w if np.isinf(lam) else lam * w / (w**2 + lam)
    return _dr_terms(proba, actions, rewards, shrunk, match, expected_rewards)


def data_driven_shrinkage(weights, delta):
    """Metelli et al.'s ``lambda``: the root of ``lambda^2 mean(w_lambda^2) = rhs``.

    ``w_lambda = w / (1 - lambda + lambda w)`` and ``rhs = 2 log(1/delta) / (3 n)``.
    ``lambda w_lambda`` increases in ``lambda`` (its derivative is
    ``w / (1 - lambda + lambda w)^2``), from 0 to 1 for every positive weight, so the
    root is unique; past the fraction of positive weights it is 1.
    """
    n = weights.shape[0]
    rhs = 2.0 * np.log(1.0 / delta) / (3.0 * n)
    positive = weights[weights > 0]  # a zero weight adds 0 (0 / 0 at lambda = 1)

    def excess(lam):
        return np.sum((lam * positive / (1.0 - lam + lam * positive)) ** 2) / n - rhs

    if excess(1.0) <= 0:
        return 1.0
    return float(brentq(excess, 0.0, 1.0, xtol=1e-15))


def subgaussian_terms(action_proba, actions, rewards, propensities, lam,
                      expected_rewards=None, delta=0.05):  # fmt: skip
    proba, actions, rewards, w, match = _weights(
        action_proba, actions, rewards, propensities
    )
    if lam == "auto":
        lam = data_driven_shrinkage(w, delta)
    corrected = w / (1.0 - lam + lam * w)
    if expected_rewards is None:
        return _Terms(None, corrected * rewards, None, actions.shape[0])
    return _dr_terms(proba, actions, rewards, corrected, match, expected_rewards)


_LOGGED = {
    "action_proba": ["array-like"],
    "actions": ["array-like"],
    "rewards": ["array-like"],
    "propensities": ["array-like"],
}


@Substitution(logged=LOGGED_PARAMS)
@validate_params(
    {
        **_LOGGED,
        "expected_rewards": ["array-like"],
        "shrinkage": [Interval(Real, 0, None, closed="right")],
    },
    prefer_skip_nested_validation=True,
)
def dros_value(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
    *,
    expected_rewards: ArrayLike,
    shrinkage: float,
) -> float:
    """Doubly robust with optimistic shrinkage (DRos) estimate of a policy's value.

    .. math:: \\hat V_{DRos} = \\frac{1}{n} \\sum_i \\Big[\\hat q(x_i, \\pi)
        + \\frac{\\lambda w_i}{w_i^2 + \\lambda} \\big(r_i - \\hat q(x_i, a_i)\\big)
        \\Big]

    The shrunk weight minimises a bound on the mean squared error: large weights
    shrink towards 0 (DM), small ones are nearly kept. ``shrinkage=inf`` is DR;
    small values approach DM. As Open Bandit Pipeline's
    ``DoublyRobustWithShrinkage(lambda_=shrinkage)``.

    Parameters
    ----------
    %(logged)s
    expected_rewards : array-like of shape (n_samples, n_actions)
        A reward model's expected reward of every arm in every logged round.
    shrinkage : float
        The shrinkage ``lambda > 0`` (``inf`` for DR).

    Returns
    -------
    value : float
        Estimated expected reward per round.

    References
    ----------
    .. [1] Su, Dimakopoulou, Krishnamurthy, Dudik. "Doubly robust off-policy
       evaluation with shrinkage". ICML 2020.

    Examples
    --------
    >>> from skbandit.evaluation import dros_value
    >>> dros_value([[0.5, 0.5], [1.0, 0.0]], [0, 1], [1.0, 1.0], [0.5, 0.5],
    ...            expected_rewards=[[0.5, 0.5], [0.5, 0.5]], shrinkage=1.0)
    0.625
    """
    return dros_terms(
        action_proba, actions, rewards, propensities, expected_rewards, shrinkage
    ).value()


_SUBGAUSSIAN = {
    **_LOGGED,
    "shrinkage": [Interval(Real, 0, 1, closed="both"), StrOptions({"auto"})],
    "delta": [Interval(Real, 0, 1, closed="neither")],
}

#: The ``shrinkage`` and ``delta`` parameters' docstring (``%(shrinkage)s``).
SHRINKAGE_PARAMS = """shrinkage : float or "auto", default="auto"
    The correction ``lambda`` in ``[0, 1]`` (0: no correction). ``"auto"`` is the
    paper's data-driven choice, the root of
    ``lambda^2 mean(w_lambda^2) = 2 log(1 / delta) / (3 n)`` with
    ``w_lambda = w / (1 - lambda + lambda w)`` (about
    ``sqrt(2 log(1 / delta) / (3 n E[w^2]))``: it vanishes as the logs grow).
delta : float, default=0.05
    The confidence ``delta`` of the bound the automatic ``lambda`` is tuned for;
    used only with ``shrinkage="auto"``."""


@Substitution(logged=LOGGED_PARAMS, shrinkage=SHRINKAGE_PARAMS)
@validate_params(_SUBGAUSSIAN, prefer_skip_nested_validation=True)
def subgaussian_ips_value(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
    *,
    shrinkage: float | str = "auto",
    delta: float = 0.05,
) -> float:
    """Sub-Gaussian IPS: IPS with harmonically corrected importance weights.

    .. math:: \\hat V = \\frac{1}{n} \\sum_i \\frac{w_i}{1 - \\lambda + \\lambda w_i}
        r_i

    The corrected weight is at most ``1 / lambda``, which makes the estimate's
    deviations sub-Gaussian (light-tailed) at the price of a bias towards 0;
    ``shrinkage=0`` is IPS. By default ``lambda`` is the paper's data-driven
    choice, from the number of rounds, the confidence ``delta`` and the corrected
    weights' second moment; a number fixes it.

    Parameters
    ----------
    %(logged)s
    %(shrinkage)s

    Returns
    -------
    value : float
        Estimated expected reward per round.

    See Also
    --------
    subgaussian_dr_value : The same correction of DR's weights.

    References
    ----------
    .. [1] Metelli, Russo, Restelli. "Subgaussian and differentiable importance
       sampling for off-policy evaluation and learning". NeurIPS 2021.

    Examples
    --------
    >>> from skbandit.evaluation import subgaussian_ips_value
    >>> subgaussian_ips_value([[0.5, 0.5], [1.0, 0.0]], [0, 1], [1.0, 1.0],
    ...                       [0.5, 0.5], shrinkage=0.5)
    0.5
    """
    return subgaussian_terms(
        action_proba, actions, rewards, propensities, shrinkage, delta=delta
    ).value()


@Substitution(logged=LOGGED_PARAMS, shrinkage=SHRINKAGE_PARAMS)
@validate_params(
    {**_SUBGAUSSIAN, "expected_rewards": ["array-like"]},
    prefer_skip_nested_validation=True,
)
def subgaussian_dr_value(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
    *,
    expected_rewards: ArrayLike,
    shrinkage: float | str = "auto",
    delta: float = 0.05,
) -> float:
    """Sub-Gaussian DR: DR with harmonically corrected importance weights.

    .. math:: \\hat V = \\frac{1}{n} \\sum_i \\Big[\\hat q(x_i, \\pi)
        + \\frac{w_i}{1 - \\lambda + \\lambda w_i}
        \\big(r_i - \\hat q(x_i, a_i)\\big)\\Big]

    Parameters
    ----------
    %(logged)s
    expected_rewards : array-like of shape (n_samples, n_actions)
        A reward model's expected reward of every arm in every logged round.
    %(shrinkage)s

    Returns
    -------
    value : float
        Estimated expected reward per round.

    References
    ----------
    .. [1] Metelli, Russo, Restelli. "Subgaussian and differentiable importance
       sampling for off-policy evaluation and learning". NeurIPS 2021.

    Examples
    --------
    >>> from skbandit.evaluation import subgaussian_dr_value
    >>> subgaussian_dr_value([[0.5, 0.5], [1.0, 0.0]], [0, 1], [1.0, 1.0],
    ...                      [0.5, 0.5], expected_rewards=[[0.5, 0.5], [0.5, 0.5]],
    ...                      shrinkage=0.0)
    0.75
    """
    return subgaussian_terms(
        action_proba, actions, rewards, propensities, shrinkage, expected_rewards,
        delta,
    ).value()  # fmt: skip


def mips_terms(action_proba, actions, rewards, propensities, logging_proba,
               action_embeddings, embeddings=None):  # fmt: skip
    proba, actions, rewards, _, _ = _weights(
        action_proba, actions, rewards, propensities
    )
    logging_proba = _check_action_proba(logging_proba)
    if logging_proba.shape != proba.shape:
        raise ValueError(
            f"logging_proba must have the shape of action_proba, {proba.shape}; "
            f"got {logging_proba.shape}."
        )
    P = check_array(action_embeddings, ensure_2d=False, input_name="action_embeddings")
    if P.ndim == 1:  # one category per action
        P = np.eye(int(P.max()) + 1)[P.astype(np.int64)]
    if P.shape[0] != proba.shape[1] or np.any(P < 0):
        raise ValueError(
            "action_embeddings must be (n_actions,) categories or an (n_actions, "
            f"n_categories) matrix of p(e | a); got shape {P.shape}."
        )
    if embeddings is None:
        embeddings = P[actions].argmax(axis=1)
    embeddings = check_array(embeddings, ensure_2d=False, dtype=np.int64)
    columns = P[:, embeddings].T  # p(e_i | a) for every a, shape (n, n_actions)
    target = np.einsum("ij,ij->i", proba, columns)
    logging = np.einsum("ij,ij->i", logging_proba, columns)
    weights = target / logging
    return _Terms(None, weights * rewards, None, actions.shape[0])


@validate_params(
    {
        **_LOGGED,
        "logging_proba": ["array-like"],
        "action_embeddings": ["array-like"],
        "embeddings": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def mips_value(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike,
    *,
    logging_proba: ArrayLike,
    action_embeddings: ArrayLike,
    embeddings: ArrayLike | None = None,
) -> float:
    """Marginalised IPS (MIPS) with action embeddings, for large action spaces.

    .. math:: \\hat V_{MIPS} = \\frac{1}{n} \\sum_i
        \\frac{p(e_i \\mid x_i, \\pi)}{p(e_i \\mid x_i, \\mu)}\\, r_i, \\qquad
        p(e \\mid x, \\pi) = \\sum_a \\pi(a \\mid x)\\, p(e \\mid a)

    The weight is that of the logged action's embedding ``e_i`` (a category), not
    of the action: actions sharing an embedding share their probability mass, so
    the weights stay small when many actions have few logs. Unbiased when the
    reward depends on the action only through its embedding (no direct effect)
    and the logging policy covers every embedding the target uses.

    Parameters
    ----------
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution.
    actions : array-like of shape (n_samples,)
        Logged actions.
    rewards : array-like of shape (n_samples,)
        Logged rewards.
    propensities : array-like of shape (n_samples,)
        Logging policy's probability of each logged action (validated; the
        weights use ``logging_proba``).
    logging_proba : array-like of shape (n_samples, n_actions)
        The logging policy's whole action distribution in each logged round.
    action_embeddings : array-like of shape (n_actions,) or \
            (n_actions, n_categories)
        Each action's embedding category, or each action's distribution over the
        categories, ``p(e | a)``.
    embeddings : array-like of shape (n_samples,), default=None
        The logged embedding categories; None takes each logged action's (most
        likely) category.

    Returns
    -------
    value : float
        Estimated expected reward per round.

    References
    ----------
    .. [1] Saito, Joachims. "Off-policy evaluation for large action spaces via
       embeddings". ICML 2022.

    Examples
    --------
    >>> from skbandit.evaluation import mips_value
    >>> proba = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    >>> logging = [[1 / 3, 1 / 3, 1 / 3]] * 2
    >>> mips_value(proba, [1, 2], [1.0, 0.5], [1 / 3, 1 / 3], logging_proba=logging,
    ...            action_embeddings=[0, 0, 1])
    0.75
    """
    return mips_terms(
        action_proba, actions, rewards, propensities, logging_proba,
        action_embeddings, embeddings,
    ).value()  # fmt: skip


def _pair_features(X, arms, n_actions):
    """``[one_hot(a) (x) x, one_hot(a)]``: a linear model on it has a logit per arm."""
    one_hot = np.eye(n_actions)[arms]
    return np.hstack([(one_hot[:, :, None] * X[:, None, :]).reshape(len(X), -1),
                      one_hot])  # fmt: skip


def balanced_weights(X, action_proba, actions, estimator, cv, random_state):
    """Cross-fitted ``pi(a_i | x_i) / mu(a_i | x_i)`` from a pair classifier."""
    n, n_actions = action_proba.shape
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    weights = np.empty(n)
    for train, test in KFold(cv, shuffle=True, random_state=seed).split(X):
        # Class 1: the target's pairs (x, a), weight pi(a | x); class 0: logged.
        every = np.repeat(train, n_actions)
        arms = np.tile(np.arange(n_actions), train.size)
        sw = np.concatenate([action_proba[train].ravel(), np.ones(train.size)])
        keep = sw > 0
        features = np.vstack([
            _pair_features(X[every], arms, n_actions),
            _pair_features(X[train], actions[train], n_actions),
        ])[keep]  # fmt: skip
        labels = np.r_[np.ones(every.size), np.zeros(train.size)][keep]
        model = clone(estimator).fit(features, labels, sample_weight=sw[keep])
        p = model.predict_proba(_pair_features(X[test], actions[test], n_actions))
        p1 = np.clip(p[:, list(model.classes_).index(1.0)], 1e-12, 1 - 1e-12)
        weights[test] = p1 / (1 - p1)
    return weights


@validate_params(
    {
        "action_proba": ["array-like"],
        "actions": ["array-like"],
        "rewards": ["array-like"],
        "propensities": ["array-like", None],
        "X": ["array-like"],
        "estimator": [None, HasMethods(["fit", "predict_proba"])],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "self_normalize": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def balanced_ipw_value(
    action_proba: ArrayLike,
    actions: ArrayLike,
    rewards: ArrayLike,
    propensities: ArrayLike | None = None,
    *,
    X: ArrayLike,
    estimator=None,
    cv: int = 2,
    self_normalize: bool = True,
    random_state=None,
) -> float:
    """Balanced IPW: IPS with weights learned by a classifier, for unknown logging.

    A classifier tells the target's (context, action) pairs, ``a ~ pi(. | x)``
    weighted by ``pi(a | x)``, from the logged pairs; its odds at a logged pair
    estimate the importance weight ``pi(a | x) / mu(a | x)`` directly, without a
    model of the logging policy. Cross-fitted over ``cv`` folds. It assumes, as any
    estimate without recorded propensities, that ``X`` holds everything the logging
    policy used (no unmeasured confounding) and that it covered the target's
    actions (overlap).

    Parameters
    ----------
    action_proba : array-like of shape (n_samples, n_actions)
        Evaluated policy's action distribution.
    actions : array-like of shape (n_samples,)
        Logged actions.
    rewards : array-like of shape (n_samples,)
        Logged rewards.
    propensities : None, default=None
        Unused (the logging policy is unknown); in the signature for the order
        of the other estimators.
    X : array-like of shape (n_samples, n_features)
        The logged contexts.
    estimator : classifier or None, default=None
        A classifier with ``predict_proba`` and ``sample_weight`` on the pairs'
        features ``[one_hot(a) (x) x, one_hot(a)]``. None:
        :class:`~sklearn.linear_model.LogisticRegression` (a logit per arm).
    cv : int, default=2
        Folds of the cross-fitting.
    self_normalize : bool, default=True
        Divide by the sum of the learned weights rather than by ``n`` (their
        mean is one for a well-calibrated classifier): robust to a classifier
        whose odds are off by a common factor.
    random_state : int, RandomState instance or None, default=None
        Seeds the folds.

    Returns
    -------
    value : float
        Estimated expected reward per round.

    Notes
    -----
    The classifier must be able to represent ``log pi(a | x) - log mu(a | x)``.
    The default, a logit linear in the context per arm, suits smooth (softmax)
    policies; a deterministic target makes the log-odds a step in ``x``, which
    it can only approximate (a flexible classifier whose probabilities are
    calibrated is then needed; an over-confident one, such as boosted trees
    without calibration, gives exploding weights).

    References
    ----------
    .. [1] Sondhi, Arbour, Dimmery. "Balanced off-policy evaluation in general
       action spaces". AISTATS 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.evaluation import balanced_ipw_value
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 2))
    >>> actions = rng.integers(2, size=2000)
    >>> rewards = (actions == 1).astype(float)
    >>> target = np.tile([0.2, 0.8], (2000, 1))
    >>> v = balanced_ipw_value(target, actions, rewards, X=X, random_state=0)
    >>> bool(abs(v - 0.8) < 0.05)
    True
    """
    proba, actions, rewards, _ = _check_logged(
        action_proba, actions, rewards, propensities
    )
    X = check_array(X, input_name="X")
    if X.shape[0] != actions.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but actions has {actions.shape[0]}.")
    model = LogisticRegression(max_iter=1000) if estimator is None else estimator
    w = balanced_weights(X, proba, actions, model, cv, random_state)
    return _Terms(
        None, w * rewards, w if self_normalize else None, actions.shape[0]
    ).value()
