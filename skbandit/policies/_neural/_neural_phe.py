"""Neural perturbed-history exploration (Neural-PHE, the NPR of Jia et al., ICLR 2022),
the baseline of Neural ensemble sampling (Sun, Wang, Xu, 2025)."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np

from skbandit.policies._core._neural_params import (
    NETWORK_PARAMETERS,
    neural_constraints,
    neural_docstring,
)
from skbandit.policies._core._neural_policy import NeuralPolicy
from skbandit.utils._tags import DeterministicSelectMixin

__all__ = ["NeuralPHE"]

_SCALE_TEXT = {
    "perturbation_scale": """
        perturbation_scale : float, default=0.1
            Standard deviation of the pseudo-noise added to every reward at every
            training; ``0`` is greedy on the network.""",
}


@neural_docstring("perturbation_scale", texts=_SCALE_TEXT)
class NeuralPHE(DeterministicSelectMixin, NeuralPolicy):
    """Neural perturbed-history exploration (Neural-PHE / NPR, Jia et al. 2022).

    One network of the papers' architecture. At every training each observed reward
    gets fresh pseudo-noise, ``r_l + Z_l`` with ``Z_l ~ N(0, perturbation_scale^2)``
    for every ``l <= t``, and the network takes ``n_steps`` gradient steps of the
    papers' proximal objective on those perturbed targets; each round then plays
    ``argmax_k f(x_k; theta)``. The exploration lives in the training: ``select``
    is greedy, and the cost of the noise grows with the history (``t`` draws per
    training, against ``m`` for :class:`NeuralES`, whose perturbations are stored).
    A round of ``sample_weight`` ``w`` gets ``Z / sqrt(w)``, the mean of the ``w``
    perturbations of ``w`` copies of it.

    Parameters
    ----------
    %(parameters)s

    Attributes
    ----------
    %(attributes)s

    See Also
    --------
    NeuralES : Ensemble sampling: ``m`` networks with stored perturbations.
    LinPHE : Perturbed-history exploration in a linear model.

    Notes
    -----
    Sun, Wang and Xu (2025) describe Neural-PHE by these rules only: the same
    network, the whole perturbation sequence redrawn every round, the regularised
    squared loss fitted by gradient descent and greedy play. Their experiments
    share the network of Neural-ES (``hidden_layer_sizes=(20, 20)``).

    References
    ----------
    .. [1] Jia, Zhang, Li, Wang. "Learning Neural Contextual Bandits through
       Perturbed Rewards". ICLR 2022.
    .. [2] Sun, Wang, Xu. "Provable Anytime Ensemble Sampling Algorithms in
       Nonlinear Contextual Bandits". arXiv:2510.10730, 2025.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import NeuralPHE
    >>> X = np.random.RandomState(0).normal(size=(6, 4))
    >>> policy = NeuralPHE(n_actions=3, hidden_layer_sizes=(8,), random_state=0)
    >>> policy = policy.partial_fit(X[:3], [0, 1, 2], [1.0, 0.0, 0.5])
    >>> policy.select(X[3:]).shape
    (3,)
    """

    _parameter_constraints = neural_constraints(
        "n_actions", "perturbation_scale", *NETWORK_PARAMETERS
    )

    def __init__(
        self,
        n_actions=None,
        *,
        perturbation_scale=0.1,
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
        self.perturbation_scale = perturbation_scale
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

    def _training_targets(self):
        scale = float(self.perturbation_scale)

        def perturbed(buffer):
            # Fresh Z_l for every stored reward, l <= t; the buffer keeps r_l. A row
            # of weight w counts as w copies of its round, whose w perturbations
            # average to Z / sqrt(w) (as NeuralES and LinES scale theirs).
            w = buffer.weights.astype(np.float64)
            noise = self._data_rng.standard_normal(len(buffer))
            noise /= np.sqrt(np.where(w > 0, w, 1.0))
            return buffer.targets + scale * noise

        return perturbed

    def _scores(self, X, return_std):
        return self._mean_and_sigma(X, with_sigma=False)

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
                "perturbation_scale": 0.5,
                "train_every": 2,
            },
        ]
