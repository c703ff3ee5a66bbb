"""Epsilon-greedy on a neural network, a baseline of Neural Thompson Sampling."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np

from skbandit.policies._core._neural_params import (
    NETWORK_PARAMETERS,
    neural_constraints,
    neural_docstring,
)
from skbandit.policies._core._neural_policy import NeuralPolicy

__all__ = ["NeuralEpsilonGreedy"]


@neural_docstring("epsilon")
class NeuralEpsilonGreedy(NeuralPolicy):
    """Epsilon-greedy on the neural network (Neural Thompson Sampling's baseline).

    With probability ``epsilon`` plays a uniformly random available arm, otherwise
    ``argmax_k f(x_k; theta)``; the network is trained as in :class:`NeuralTS`.

    Parameters
    ----------
    %(parameters)s

    Attributes
    ----------
    %(attributes)s

    See Also
    --------
    NeuralTS : Directed, posterior-driven exploration.
    EpsilonGreedy : The same on a ridge model.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import NeuralEpsilonGreedy
    >>> X = np.random.RandomState(0).normal(size=(5, 4))
    >>> NeuralEpsilonGreedy(n_actions=3, hidden_layer_sizes=(8,),
    ...                     random_state=0).select(X).shape
    (5,)
    """

    _parameter_constraints = neural_constraints(
        "n_actions", "epsilon", *NETWORK_PARAMETERS
    )

    def __init__(
        self,
        n_actions=None,
        *,
        epsilon=0.05,
        hidden_layer_sizes=(100,),
        alpha=1.0,
        n_steps=50,
        learning_rate=1e-3,
        batch_size=64,
        reduction="mean",
        init="ntk",
        mirror_inputs="auto",
        standardize="auto",
        module=None,
        net=None,
        train_every=10,
        max_train_rounds=None,
        max_buffer_size=1000,
        warm_start=True,
        device="cpu",
        random_state=None,
        verbose=0,
    ):
        self.n_actions = n_actions
        self.epsilon = epsilon
        self.hidden_layer_sizes = hidden_layer_sizes
        self.alpha = alpha
        self.n_steps = n_steps
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.reduction = reduction
        self.init = init
        self.mirror_inputs = mirror_inputs
        self.standardize = standardize
        self.module = module
        self.net = net
        self.train_every = train_every
        self.max_train_rounds = max_train_rounds
        self.max_buffer_size = max_buffer_size
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _scores(self, X, return_std):
        return self._mean_and_sigma(X, with_sigma=False)

    def _exploration_rates(self, n_rows):
        return np.full(n_rows, float(self.epsilon))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.exact_action_proba = True
        return tags

    @classmethod
    def _get_test_params(cls):
        return [
            *super()._get_test_params(),
            {
                "hidden_layer_sizes": (4,),
                "n_steps": 2,
                "learning_rate": 1e-6,
                "mirror_inputs": False,
                "standardize": False,
                "epsilon": 0.5,
            },
        ]
