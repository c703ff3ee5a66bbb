"""Propensities: the probability of each arm that ``select`` chose, never 0.

:func:`chosen_propensities` reads them from an action distribution (public);
:func:`monte_carlo_proba` is the law of a sampling policy, which
``select(X, return_propensities=True)`` and ``predict_action_proba`` run through
the decision path (``skbandit._base._decision``).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import warnings

import numpy as np

from skbandit._base._selection import random_argmax

__all__ = ["chosen_propensities", "monte_carlo_proba", "needs_monte_carlo"]


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


# -- the law of a sampling policy ------------------------------------------------
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


def needs_monte_carlo(policy, rates):
    """Whether the law of ``select``'s arms needs Monte Carlo: its scores are random
    (``rates``: the policy's epsilon-mixture, which is exact, or None)."""
    stochastic = policy.__sklearn_tags__().policy_tags.stochastic_select
    return stochastic and (rates is None or policy._samples_scores)
