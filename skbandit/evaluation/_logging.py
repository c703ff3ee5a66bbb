"""Logged bandit data from a simulator: the input of off-policy evaluation."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy
from numbers import Integral

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import Bunch
from sklearn.utils.validation import check_is_fitted

from skbandit._base._propensities import chosen_propensities
from skbandit.utils._param_validation import HasMethods, Interval, validate_params

__all__ = ["collect_logged_data"]


def _copy_policy(policy, n_actions):
    """An independent copy: a clone if unfitted, a deep copy (state kept) if fitted."""
    try:
        check_is_fitted(policy)
        return copy.deepcopy(policy)
    except NotFittedError:
        policy = clone(policy)
    params = policy.get_params(deep=False) if hasattr(policy, "get_params") else {}
    if "n_actions" in params and params["n_actions"] is None:
        policy.set_params(n_actions=n_actions)
    return policy


def _is_fitted(policy) -> bool:
    try:
        check_is_fitted(policy)
    except NotFittedError:
        return False
    return True


def _propensities(policy, proba, actions):
    """Probability the policy gave each chosen arm, repaired (with a warning) where
    Monte Carlo estimated 0 for an arm that ``select`` did draw."""
    tags = getattr(policy, "__sklearn_tags__", None)
    policy_tags = getattr(tags(), "policy_tags", None) if callable(tags) else None
    exact = policy_tags is not None and policy_tags.exact_action_proba
    n_draws = None if exact else getattr(policy, "_n_proba_draws", None)
    return chosen_propensities(proba, actions, n_draws=n_draws, warn=True)


@validate_params(
    {
        "logging_policy": [
            HasMethods(["select", "partial_fit", "predict_action_proba"])
        ],
        "env": [HasMethods(["reset", "contexts", "rewards"])],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "update": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def collect_logged_data(
    logging_policy, env, n_rounds, *, batch_size=1, update=False, random_state=None
):
    """Run a logging policy on an environment and record logged bandit data.

    Each batch of ``batch_size`` rounds draws contexts from ``env``, records the
    logging policy's action distribution ``predict_action_proba(X)`` in its current
    state, lets it ``select`` an arm per round, realises the rewards, and, with
    ``update=True``, feeds the batch to ``partial_fit`` (delayed feedback, as in
    :func:`simulate`). The propensity of a round is the probability its chosen arm
    had under the state the policy selected from, so it is exact for every policy
    whose ``predict_action_proba`` is (deterministic-in-state ones: LinUCB,
    epsilon-greedy, random), and a Monte Carlo estimate for sampling policies
    (LinTS...), see :meth:`~skbandit.base.BasePolicy.predict_action_proba`. A chosen
    arm that the estimate gave probability 0 gets ``1 / (2 n_draws)`` and a warning,
    as :func:`chosen_propensities` repairs it.

    The policy passed in is never modified. An unfitted one is cloned
    (:func:`sklearn.base.clone`; ``n_actions=None`` becomes the environment's) and
    logs from its prior; a fitted one is deep-copied and logs from its learnt state,
    the usual set-up of a deployed policy. Before the first ``select`` of an
    unfitted copy (which initialises its prior) the action distribution is read
    just after that ``select``, which changes only the random state.

    Parameters
    ----------
    logging_policy : policy estimator
        Any object with ``select``, ``partial_fit`` and ``predict_action_proba``
        (each accepting ``action_mask=``).
    env : environment
        A simulator from :mod:`skbandit.environments` (``reset``, ``contexts``,
        ``expected_rewards``, ``action_mask``, ``rewards``).
    n_rounds : int
        Number of rounds to log.
    batch_size : int, default=1
        Rounds decided with the same policy state. Larger batches are faster; with
        ``update=False`` the logs do not depend on it.
    update : bool, default=False
        Let the policy learn from its own feedback (``partial_fit`` after every
        batch), so that the logging distribution changes over time.
    random_state : int, RandomState instance or None, default=None
        Seed of the environment (it is reset); ``None`` uses the environment's own.
        The policy's draws follow its own ``random_state``, as in :func:`simulate`.

    Returns
    -------
    logs : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes:

        X : ndarray of shape (n_rounds, n_features) or \
                (n_rounds, n_actions, n_features)
            Contexts.
        actions : ndarray of shape (n_rounds,)
            Logged arms.
        rewards : ndarray of shape (n_rounds,)
            Realised rewards.
        propensities : ndarray of shape (n_rounds,)
            Logging probability of each logged arm, in ``(0, 1]``.
        expected_rewards : ndarray of shape (n_rounds, n_actions)
            The environment's true expected reward of every arm in every round:
            ``dm_value(action_proba, expected_rewards=logs.expected_rewards)`` is a
            policy's true value on these contexts.
        action_mask : ndarray of shape (n_rounds, n_actions) or None
            Available arms, None when the environment has no mask.
        logging_proba : ndarray of shape (n_rounds, n_actions)
            The logging policy's whole action distribution in each round.
        logging_policy : policy estimator
            The policy copy in its state after the last round.

    See Also
    --------
    estimate_value : Off-policy value with a confidence interval.
    simulate : The online loop, with regret.

    Examples
    --------
    >>> from skbandit.environments import LinearBandit
    >>> from skbandit.evaluation import collect_logged_data
    >>> from skbandit.policies import RandomPolicy
    >>> env = LinearBandit(n_actions=4, n_features=3)
    >>> logs = collect_logged_data(RandomPolicy(random_state=0), env, 100,
    ...                            random_state=0)
    >>> logs.X.shape, logs.expected_rewards.shape, float(logs.propensities[0])
    ((100, 4, 3), (100, 4), 0.25)
    """
    policy = _copy_policy(logging_policy, env.n_actions)
    env.reset(random_state)
    n_actions = env.n_actions

    X_all = None
    actions = np.empty(n_rounds, dtype=np.int64)
    rewards = np.empty(n_rounds)
    propensities = np.empty(n_rounds)
    expected_all = np.empty((n_rounds, n_actions))
    proba_all = np.empty((n_rounds, n_actions))
    mask_all = None

    for start in range(0, n_rounds, batch_size):
        stop = min(start + batch_size, n_rounds)
        X = env.contexts(stop - start)
        mask = env.action_mask
        mask_kw = {} if mask is None else {"action_mask": mask}
        if _is_fitted(policy):
            proba = np.asarray(policy.predict_action_proba(X, **mask_kw))
            a = np.asarray(policy.select(X, **mask_kw))
        else:
            a = np.asarray(policy.select(X, **mask_kw))
            proba = np.asarray(policy.predict_action_proba(X, **mask_kw))
        r = np.asarray(env.rewards(a), dtype=np.float64)
        if update:
            policy.partial_fit(X, a, r, **mask_kw)

        if X_all is None:
            X_all = np.empty((n_rounds, *np.shape(X)[1:]), dtype=np.asarray(X).dtype)
        X_all[start:stop] = X
        if mask is not None:
            if mask_all is None:
                mask_all = np.ones((n_rounds, n_actions), dtype=bool)
            mask_all[start:stop] = mask
        actions[start:stop] = a
        rewards[start:stop] = r
        propensities[start:stop] = _propensities(policy, proba, a)
        expected_all[start:stop] = env.expected_rewards
        proba_all[start:stop] = proba

    return Bunch(
        X=X_all,
        actions=actions,
        rewards=rewards,
        propensities=propensities,
        expected_rewards=expected_all,
        action_mask=mask_all,
        logging_proba=proba_all,
        logging_policy=policy,
    )
