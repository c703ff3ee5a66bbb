"""Neural Thompson Sampling (Zhang, Zhou, Li, Gu, ICLR 2021), Algorithm 1."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np

from skbandit.exceptions import _non_finite_scores
from skbandit.policies._core._neural_params import (
    NETWORK_PARAMETERS,
    neural_constraints,
    neural_docstring,
)
from skbandit.policies._core._neural_policy import NeuralPolicy

__all__ = ["NeuralTS"]


@neural_docstring("nu", "covariance")
class NeuralTS(NeuralPolicy):
    """Neural Thompson sampling (Zhang, Zhou, Li, Gu, ICLR 2021, Algorithm 1).

    Each round draws, independently per arm, ``r_k ~ N(f(x_k; theta), nu^2 sigma_k^2)``
    and plays the argmax, with ``sigma_k^2 = alpha phi_k^T U^{-1} phi_k`` on the
    neural tangent features ``phi_k = g(x_k; theta) / sqrt(m)`` of all layers. After
    the rewards arrive, the network is trained (``n_steps`` gradient steps on the
    papers' objective (2.3) over every observed round) and then ``U`` gains the pulled
    arms' ``phi phi^T`` at the *trained* parameters (Algorithm 1, line 10). A
    ``partial_fit`` batch of ``B`` rounds is one delayed update (Experiment II).
    Shared contexts ``(n, d)`` use the disjoint encoding, applied per arm block.

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
    NeuralUCB : The optimistic counterpart on the same network and ``U``.
    LinTS : Thompson sampling on a linear model.

    Notes
    -----
    ``nu``: Neural Thompson Sampling's grid is 1e-1 ... 1e-5 for a diagonal ``U``; do
    not reuse values between ``"diag"`` and ``"full"``. ``learning_rate``: the paper
    uses 1e-3 on the mean loss.

    References
    ----------
    .. [1] Zhang, Zhou, Li, Gu. "Neural Thompson Sampling". ICLR 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import NeuralTS
    >>> X = np.random.RandomState(0).normal(size=(8, 4))
    >>> policy = NeuralTS(n_actions=3, hidden_layer_sizes=(8,), n_steps=5,
    ...                   random_state=0)
    >>> a = policy.select(X[:4])
    >>> policy = policy.partial_fit(X[:4], a, np.ones(4))
    >>> policy.predict_scores(X).shape
    (8, 3)
    """

    _parameter_constraints = neural_constraints(
        "n_actions", "nu", "covariance", *NETWORK_PARAMETERS
    )

    def __init__(
        self,
        n_actions=None,
        *,
        nu=0.1,
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
        self.nu = nu
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

    def _scores(self, X, return_std):
        mean, sigma = self._mean_and_sigma(X, with_sigma=return_std)
        return mean, (None if sigma is None else self.nu * sigma)

    #: The sampler draws a stack at once when asked (``draw(rng, n_draws)``).
    _batched_draws = True
    #: The online fast path skips the snapshot: an update writes nothing until it
    #: has committed (the core's undo, U's increment applied last), and the
    #: sampler checks its scores before its first draw.
    _fails_cleanly = True

    def _score_sampler(self, X):
        if self.nu == 0:
            mean = self._scores(X, False)[0]
            return lambda rng: mean
        mean, std = self._scores(X, True)  # the network runs once for all draws
        if not (np.isfinite(mean).all() and np.isfinite(std).all()):
            # before any draw: the random state is untouched
            raise _non_finite_scores()

        def draw(rng, n_draws=None):  # n_draws: a stack, for the propensities
            size = mean.shape if n_draws is None else (n_draws, *mean.shape)
            return mean + std * rng.standard_normal(size)

        return draw

    @classmethod
    def _get_test_params(cls):
        return [
            *super()._get_test_params(),
            {
                "hidden_layer_sizes": (4, 4),
                "n_steps": 2,
                "learning_rate": 1e-6,
                "mirror_inputs": False,
                "standardize": False,
                "covariance": "full",
                "nu": 0.5,
                "random_state": 1,
            },
        ]
