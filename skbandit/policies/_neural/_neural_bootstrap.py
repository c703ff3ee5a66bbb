"""Bootstrapped neural networks (Osband et al. 2016), a baseline of Neural Thompson
Sampling, on one batch of networks trained as a single computation."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np

from skbandit.policies._core._neural_params import (
    ENSEMBLE_PARAMETERS,
    estimator_check_params,
    neural_constraints,
    neural_docstring,
)
from skbandit.policies._core._neural_policy import EnsembleScoresMixin, NeuralPolicy

__all__ = ["NeuralBootstrap"]


@neural_docstring("n_models", "bootstrap_prob", shared=ENSEMBLE_PARAMETERS)
class NeuralBootstrap(EnsembleScoresMixin, NeuralPolicy):
    """Bootstrapped neural networks (Osband et al. 2016; BootstrapNN).

    ``n_models`` networks of the papers' architecture, each trained on the rounds it
    keeps: each fed-back round is kept by each network with probability
    ``bootstrap_prob``, drawn from ``random_state`` when the round arrives (a stream
    of its own, apart from ``select``'s draws, so the same on every device)
    and stored as that network's 0/1 row weight. Each selected round plays the
    greedy arm of one network drawn uniformly. The networks are one
    ``StackedBanditMLP`` trained by one vectorised
    computation (``net_.module_``), not a loop over models: every network trains,
    on all the rows it kept so far, when the rounds seen cross a multiple of
    ``train_every``, and they all freeze after ``max_train_rounds`` rounds. Each
    network has its own ``theta_0``, the centre of its own penalty.

    Parameters
    ----------
    %(parameters)s

    Attributes
    ----------
    %(attributes)s
    kept_counts_ : ndarray of shape (n_models,)
        Rounds each network kept.

    See Also
    --------
    NeuralEpsilonGreedy : One network, exploring uniformly.
    NeuralTS : Exploration from the network's tangent features.

    Notes
    -----
    ``max_buffer_size`` keeps the most recent rounds, whichever networks kept them.
    A custom ``module`` or ``net`` is not offered: the networks are stacked, which
    needs the papers' architecture.

    References
    ----------
    .. [1] Osband, Blundell, Pritzel, Van Roy. "Deep Exploration via Bootstrapped
       DQN". NeurIPS 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import NeuralBootstrap
    >>> X = np.random.RandomState(0).normal(size=(5, 4))
    >>> NeuralBootstrap(n_actions=3, n_models=2, hidden_layer_sizes=(8,),
    ...                 random_state=0).select(X).shape
    (5,)
    """

    _parameter_constraints = neural_constraints(
        "n_actions", "n_models", "bootstrap_prob", *ENSEMBLE_PARAMETERS
    )

    def __init__(
        self,
        n_actions=None,
        *,
        n_models=10,
        bootstrap_prob=0.8,
        hidden_layer_sizes=(100,),
        alpha=1.0,
        n_steps=50,
        learning_rate=1e-3,
        batch_size=64,
        reduction="mean",
        init="ntk",
        mirror_inputs="auto",
        standardize="auto",
        train_every=10,
        max_train_rounds=None,
        max_buffer_size=1000,
        warm_start=True,
        device="cpu",
        random_state=None,
        verbose=0,
    ):
        self.n_actions = n_actions
        self.n_models = n_models
        self.bootstrap_prob = bootstrap_prob
        self.hidden_layer_sizes = hidden_layer_sizes
        self.alpha = alpha
        self.n_steps = n_steps
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.reduction = reduction
        self.init = init
        self.mirror_inputs = mirror_inputs
        self.standardize = standardize
        self.train_every = train_every
        self.max_train_rounds = max_train_rounds
        self.max_buffer_size = max_buffer_size
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _init_state(self):
        super()._init_state()
        self.kept_counts_ = np.zeros(self.n_models, dtype=np.int64)

    def _buffer_rows(self, X, actions, rewards, sample_weight):
        X, actions, rewards, weights = super()._buffer_rows(
            X, actions, rewards, sample_weight
        )
        # Each network keeps each round with probability bootstrap_prob, once.
        draws = self._data_rng.random((X.shape[0], self.n_models))
        keep = draws < self.bootstrap_prob
        self._kept = keep.sum(axis=0)
        return X, actions, rewards, weights[:, None] * keep.astype(np.float32)

    def _commit_update(self, before, after):
        self.kept_counts_ = self.kept_counts_ + self.__dict__.pop("_kept")

    @classmethod
    def _get_test_params(cls):
        return [
            estimator_check_params(n_actions=3, n_models=2, random_state=0),
            estimator_check_params(
                n_models=3,
                bootstrap_prob=0.5,
                train_every=3,
                max_buffer_size=40,
                random_state=1,
            ),
        ]
