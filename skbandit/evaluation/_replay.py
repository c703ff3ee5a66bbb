"""Online replay of logged bandit data (Li, Chu, Langford, Wang, WSDM 2011).

A learning policy walks through logged events; it learns only from the events where
its choice equals the logged action (the others are skipped, their reward unknown).
Under a uniformly random logging policy the accepted events are an unbiased sample of
what the policy would have met online. The neural logistic bandits paper replays the
Open Bandit Dataset this way (Bae and Lee, ICML 2025, appendix J.1).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from sklearn.utils import Bunch

__all__ = ["online_replay"]


def online_replay(policy, X, logged, rewards, *, n_accepted=None, progress=None):
    """Run a learning policy through logged events by rejection (Li et al., 2011).

    For each event in order, the policy selects an arm; if it is the logged one, the
    event is accepted: its reward is recorded and the policy learns from it
    (``partial_fit`` with that one round). Other events are skipped.

    Parameters
    ----------
    policy : BasePolicy
        The policy, fitted or not; it is updated in place.
    X : ndarray of shape (n_events, n_features) or (n_events, n_actions, n_features)
        Contexts of the events.
    logged : array-like of shape (n_events,)
        The logged action of each event.
    rewards : array-like of shape (n_events,)
        The logged rewards.
    n_accepted : int or None, default=None
        Stop after this many accepted events; ``None`` walks through all events.
    progress : callable or None, default=None
        Called with the number of events just consumed (for a progress bar).

    Returns
    -------
    result : :class:`~sklearn.utils.Bunch`
        ``rewards`` (of the accepted events, in order), ``events`` (their indices),
        ``n_events`` (events walked through) and ``ctr`` (mean accepted reward;
        NaN when none was accepted).

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.evaluation import online_replay
    >>> from skbandit.policies import RandomPolicy
    >>> rng = np.random.RandomState(0)
    >>> X, logged = rng.normal(size=(200, 3)), rng.randint(2, size=200)
    >>> result = online_replay(RandomPolicy(n_actions=2, random_state=0), X, logged,
    ...                        logged.astype(float), n_accepted=50)
    >>> len(result.rewards)
    50
    """
    logged = np.asarray(logged)
    rewards = np.asarray(rewards, dtype=np.float64)
    limit = len(logged) if n_accepted is None else int(n_accepted)
    accepted, events, i = [], [], 0
    while i < len(logged) and len(accepted) < limit:
        context = X[i : i + 1]
        if int(policy.select(context)[0]) == logged[i]:
            policy.partial_fit(context, logged[i : i + 1], rewards[i : i + 1])
            accepted.append(rewards[i])
            events.append(i)
        i += 1
        if progress is not None:
            progress(1)
    rewards_out = np.asarray(accepted)
    return Bunch(
        rewards=rewards_out,
        events=np.asarray(events, dtype=np.intp),
        n_events=i,
        ctr=float(rewards_out.mean()) if len(rewards_out) else float("nan"),
    )
