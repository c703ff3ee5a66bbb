"""Baseline: RandomPolicy.

The uniform random policy, the floor every other policy must beat.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np

from skbandit._base._selection import greedy_proba
from skbandit.base import BasePolicy

__all__ = ["RandomPolicy"]


class RandomPolicy(BasePolicy):
    """Choose an available arm uniformly at random, whatever the context.

    Read more in the :ref:`User Guide <policies>`.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    random_state : int, RandomState instance or None, default=None
        Controls the draws in :meth:`select`.

    Attributes
    ----------
    n_actions_ : int
        Number of arms.
    n_features_in_ : int
        Number of context features.
    n_samples_seen_ : int
        Rounds of feedback seen.
    action_counts_ : ndarray of shape (n_actions_,)
        Feedback rounds per arm.

    See Also
    --------
    EpsilonGreedy : Random with probability epsilon, greedy otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import RandomPolicy
    >>> RandomPolicy(n_actions=3, random_state=0).select(np.zeros((4, 2)))
    array([2, 1, 0, 2])
    """

    def __init__(self, n_actions=None, *, random_state=None):
        self.n_actions = n_actions
        self.random_state = random_state

    def _add_arms(self, n_new):
        pass  # no state: a new arm is drawn like the others

    def _init_state(self):
        pass

    def _update(self, X, actions, rewards, sample_weight):
        pass

    def _scores(self, X, return_std):
        # No model: every arm scores 0, so predict is arm 0 and select is uniform.
        return np.zeros((X.shape[0], self.n_actions_)), None

    def _decide_free(self, X, mask, with_proba):
        return self._closed_form_decision(X, mask, with_proba)

    def _action_proba_free(self, X, mask):
        return greedy_proba(self._scores(X, False)[0], mask)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.exact_partial_fit = True
        tags.policy_tags.exact_action_proba = True
        return tags

    @classmethod
    def _get_test_params(cls):
        return [{"n_actions": 3, "random_state": 0}]
