"""Propensities: the probability of each arm that ``select`` chose, never 0.

:func:`chosen_propensities` reads them from an action distribution (public);
:func:`select_with_proba` and :func:`monte_carlo_proba` are what
``select(X, return_propensities=True)`` and ``predict_action_proba`` run.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import warnings

import numpy as np

from skbandit.utils._selection import greedy_proba, random_argmax, uniform_arms

__all__ = [
    "chosen_propensities",
    "decide",
    "monte_carlo_proba",
    "needs_monte_carlo",
    "select_with_proba",
]


def chosen_propensities(action_proba, actions, *, n_draws=None, warn=False):
    """Probability of each chosen arm under ``action_proba``, never 0 for a drawn arm.

    What :meth:`~skbandit.base.BasePolicy.select` returns with
    ``return_propensities=True`` and what
    :func:`~skbandit.evaluation.collect_logged_data` records. Where ``action_proba``
    is exact, a chosen arm of probability 0 is a contradiction and raises. Where it
    is a Monte Carlo estimate over ``n_draws`` draws (sampling policies, see
    :meth:`~skbandit.base.BasePolicy.predict_action_proba`), an arm that no draw
    picked has an estimate of 0 even though ``select`` just drew it; its propensity
    becomes ``1 / (2 n_draws)``, halfway between the 0 that the draw refutes and
    ``1 / n_draws``, the estimate's smallest non-zero value (a continuity
    correction). The importance weight ``1 / p`` of such a round is then at most
    ``2 n_draws``; it is a rough figure, as every weight of an arm the policy
    seldom plays.

    Parameters
    ----------
    action_proba : array-like of shape (n_samples, n_actions)
        Probability of each arm per round (for slates: of each arm being in the
        slate).
    actions : array-like of shape (n_samples,) or (n_samples, slate_size)
        The chosen arm of each round, or the arms of each round's slate.
    n_draws : int or None, default=None
        Draws of the Monte Carlo estimate; ``None`` when ``action_proba`` is exact.
    warn : bool, default=False
        Warn (``UserWarning``) when a zero estimate is repaired.

    Returns
    -------
    propensities : ndarray of shape (n_samples,) or (n_samples, slate_size)
        Each chosen arm's probability, in ``(0, 1]``.

    Raises
    ------
    ValueError
        If ``n_draws`` is None and a chosen arm has probability 0.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.evaluation import chosen_propensities
    >>> proba = np.array([[0.75, 0.25, 0.0]])
    >>> chosen_propensities(proba, [1])
    array([0.25])
    >>> chosen_propensities(proba, [2], n_draws=256)  # drawn, but never in 256 draws
    array([0.00195312])
    """
    proba = np.asarray(action_proba, dtype=np.float64)
    actions = np.asarray(actions)
    rows = np.arange(proba.shape[0]).reshape(-1, *([1] * (actions.ndim - 1)))
    chosen = proba[rows, actions]
    zero = chosen <= 0
    if not np.any(zero):
        return chosen
    if n_draws is None:
        row = int(np.flatnonzero(zero.reshape(zero.shape[0], -1).any(axis=1))[0])
        raise ValueError(
            f"Arm(s) {actions[row]} chosen in round {row} have probability 0 under "
            "the action distribution, which is exact: the two disagree, so the "
            "propensities cannot be recorded."
        )
    if warn:
        warnings.warn(
            f"The action distribution is a Monte Carlo estimate over {n_draws} draws "
            f"and gave probability 0 to {int(zero.sum())} chosen arm(s); their "
            f"propensity is set to 1 / (2 * {n_draws}). Importance weights of these "
            "rounds are rough.",
            UserWarning,
            stacklevel=3,
        )
    return np.where(zero, 0.5 / n_draws, chosen)


# -- what select(X, return_propensities=True) runs -------------------------------
#: Score entries a Monte Carlo batch of draws may hold at once (8 MiB of float64):
#: the draws are stacked so that one argmax serves them all.
_DRAW_BUDGET = 2**20


def monte_carlo_proba(
    sampler, n_rows, n_actions, n_draws, mask, *, batched=False, choose=random_argmax
):
    """Frequencies of each arm over ``n_draws`` draws of ``sampler``, shape (n, K).

    The draws come from a generator of fixed seed 0, so that the estimate is a
    deterministic function of the policy's state (the policy's own random state is
    not advanced); they are stacked in groups so that one random-tie argmax serves
    a group. A ``batched`` sampler (a policy's ``_batched_draws`` flag) draws a
    group in one call, ``sampler(rng, size)`` of shape (size, n, K): no Python loop
    over the draws. ``choose(scores, rng, mask)`` turns scores into arms (the
    argmax) or slates (a slate policy's oracle, row by row); for slates the
    frequencies are each arm's probability of being in the slate.
    """
    rng = np.random.default_rng(0)
    counts = np.zeros(n_rows * n_actions)
    offsets = (np.arange(n_rows) * n_actions)[None, :, None]
    group = max(1, _DRAW_BUDGET // max(1, n_rows * n_actions))
    for start in range(0, n_draws, group):
        size = min(group, n_draws - start)
        if batched:
            scores = sampler(rng, size).reshape(size * n_rows, n_actions)
        else:
            scores = np.concatenate([sampler(rng) for _ in range(size)])
        tiled = None if mask is None else np.tile(mask, (size, 1))
        arms = np.asarray(choose(scores, rng, tiled)).reshape(size, n_rows, -1)
        counts += np.bincount((arms + offsets).ravel(), minlength=counts.size)
    return counts.reshape(n_rows, n_actions) / n_draws


def decide(policy, X, mask, return_propensities):
    """``select`` on validated input: the arms, and their propensities if asked."""
    if not return_propensities:
        with policy._blas_scope(X.shape[0]):
            return policy._select(X, mask).astype(np.int64, copy=False)
    with policy._blas_scope(X.shape[0]):
        actions, proba, n_draws = select_with_proba(policy, X, mask)
    actions = actions.astype(np.int64, copy=False)
    return actions, chosen_propensities(proba, actions, n_draws=n_draws)


def needs_monte_carlo(policy, rates):
    """Whether the law of ``select``'s arms needs Monte Carlo: its scores are random
    (``rates``: the policy's epsilon-mixture, which is exact, or None)."""
    stochastic = policy.__sklearn_tags__().policy_tags.stochastic_select
    return stochastic and (rates is None or policy._samples_scores)


def select_with_proba(policy, X, mask):
    """``(actions, proba, n_draws)``: ``select``'s arms, the distribution they were
    drawn from (``predict_action_proba``'s) and its Monte Carlo draws (None where
    exact), for :meth:`~skbandit.base.BasePolicy.select` with
    ``return_propensities=True``.

    The arms are those ``select`` alone draws (the same use of the policy's random
    state); the score sampler is built once for the arms and the distribution.
    """
    from skbandit.base import BasePolicy

    own = type(policy)
    if own._action_proba is not BasePolicy._action_proba or (
        own._action_proba_free is not BasePolicy._action_proba_free
    ):  # the family's own closed form (random, ensembles): computed apart
        actions = policy._select(X, mask)
        exact = policy.__sklearn_tags__().policy_tags.exact_action_proba
        return (
            actions,
            policy._action_proba(X, mask),
            (None if exact else policy._n_proba_draws),
        )
    forced = policy._forced_actions(X, mask)
    if forced is None:
        return _select_with_proba_free(policy, X, mask)
    forced, arms = forced
    actions = np.empty(X.shape[0], dtype=np.int64)
    proba = np.zeros((X.shape[0], policy.n_actions_))
    actions[forced], n_draws = arms, None
    proba[np.flatnonzero(forced), arms] = 1.0  # a forced round plays its arm surely
    if not forced.all():
        free = ~forced
        actions[free], proba[free], n_draws = _select_with_proba_free(
            policy, X[free], None if mask is None else mask[free]
        )
    return actions, proba, n_draws


def _select_with_proba_free(policy, X, mask):
    """``select_with_proba`` on rounds that are not forced (``_select_free``'s
    draws, in its order)."""
    n_rows, n_actions = X.shape[0], policy.n_actions_
    rng = policy._rng
    sampler = policy._score_sampler(X)
    scores = sampler(rng)
    choice = random_argmax(scores, rng, mask)
    rates = policy._exploration_rates(n_rows)
    if needs_monte_carlo(policy, rates):
        n_draws = policy._n_proba_draws
        proba = monte_carlo_proba(
            sampler, n_rows, n_actions, n_draws, mask, batched=policy._batched_draws
        )
    else:  # the scores are not random: select's argmax, ties shared
        proba, n_draws = greedy_proba(scores, mask), None
    if rates is None:
        return choice, proba, n_draws
    uniform = uniform_arms(n_rows, n_actions, rng, mask)
    explore = rng.random(n_rows) < rates
    uniform_proba = greedy_proba(np.zeros((n_rows, n_actions)), mask)
    proba = rates[:, None] * uniform_proba + (1 - rates[:, None]) * proba
    return np.where(explore, uniform, choice), proba, n_draws
