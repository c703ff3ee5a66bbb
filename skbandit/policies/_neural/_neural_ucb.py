"""Neural UCB (Zhou, Li, Gu, ICML 2020), a baseline of Neural Thompson Sampling."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from skbandit.policies._core._neural_params import (
    NETWORK_PARAMETERS,
    neural_constraints,
    neural_docstring,
)
from skbandit.policies._core._neural_policy import NeuralPolicy
from skbandit.utils._tags import DeterministicSelectMixin

__all__ = ["NeuralUCB"]


@neural_docstring("beta", "covariance")
class NeuralUCB(DeterministicSelectMixin, NeuralPolicy):
    """Neural upper confidence bound (Zhou, Li, Gu, ICML 2020).

    Plays ``argmax_k f(x_k; theta) + beta * sigma_k`` with the same ``sigma`` as
    :class:`NeuralTS`. Following NeuralUCB's Algorithm 1, ``U`` gains the pulled arms'
    ``phi phi^T`` at the parameters they were *selected* with, before training.
    ``warm_start=False`` restarts each training from ``theta_0``, as its TrainNN does.

    Parameters
    ----------
    %(parameters)s

    Attributes
    ----------
    %(attributes)s
    covariance_ : ndarray of shape (p,) or (p, p)
        ``U^{-1}``, or its diagonal approximation.

    See Also
    --------
    NeuralTS : Sampling instead of optimism.

    References
    ----------
    .. [1] Zhou, Li, Gu. "Neural contextual bandits with UCB-based exploration".
       ICML 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import NeuralUCB
    >>> X = np.random.RandomState(0).normal(size=(6, 2, 4))
    >>> policy = NeuralUCB(hidden_layer_sizes=(8,), n_steps=5, random_state=0)
    >>> policy.select(X).shape
    (6,)
    """

    _covariance_before_training = True
    _parameter_constraints = neural_constraints(
        "n_actions", "beta", "covariance", *NETWORK_PARAMETERS
    )

    def __init__(
        self,
        n_actions=None,
        *,
        beta=0.1,
        covariance="diag",
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
        self.beta = beta
        self.covariance = covariance
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

    #: The online fast path skips the snapshot: an update writes nothing until it
    #: has committed (the core's undo, U's increment applied last), and the
    #: argmax checks its scores before it draws a tie-break.
    _fails_cleanly = True

    def _scores(self, X, return_std):
        return self._mean_and_sigma(X, with_sigma=return_std)

    def _score_sampler(self, X):
        if self.beta == 0:
            ucb = self._scores(X, False)[0]
        else:
            mean, sigma = self._scores(X, True)
            ucb = mean + self.beta * sigma
        return lambda rng: ucb

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
                "covariance": "full",
                "beta": 1.0,
                "random_state": 1,
            },
        ]
