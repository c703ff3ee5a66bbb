"""NCBF-UCB: the binary-feedback neural UCB of Verma, Dai, Lin, Jaillet, Low (ICLR
2025), streamlined as the neural logistic bandits paper runs it (a baseline of Bae and
Lee, ICML 2025)."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Real

import numpy as np
from scipy.special import expit

from skbandit._docstrings import Substitution, parameter_block
from skbandit.networks import TangentPrecision
from skbandit.policies._core._neural_params import (
    ATTRIBUTES,
    LOGISTIC_PAPER_SCHEDULE,
    NETWORK_PARAMETERS,
    TEXTS,
    neural_constraints,
)
from skbandit.policies._core._neural_policy import NeuralPolicy
from skbandit.utils._param_validation import Interval
from skbandit.utils._reward_range import check_reward_range
from skbandit.utils._tags import DeterministicSelectMixin

__all__ = ["NCBFUCB"]

#: The neural logistic paper's practical settings (its section 7 and appendix A),
#: where they differ from the other neural policies' defaults.
_PAPER_TEXTS = {
    "hidden_layer_sizes": """
        hidden_layer_sizes : tuple of int, default=(20,)
            Hidden widths ``m``; the neural logistic paper: one layer of 20.""",
    "learning_rate": """
        learning_rate : float, default=0.01
            The gradient-descent step (the paper's 0.01, on the mean loss).""",
    "init": """
        init : {"ntk", "default"}, default="default"
            ``"default"``: PyTorch's layers, the paper's practical runs (gradients
            ``g`` without the ``1 / sqrt(m)``, penalty
            ``alpha ||theta - theta_0||^2 / 2``). ``"ntk"``: the theory's network,
            tangent features ``g / sqrt(m)``.""",
    "train_every": """
        train_every : int, default=50
            Train when the rounds seen cross a multiple of this (the paper: every
            50 rounds); ``V`` gains every chosen arm at once. The defaults train on
            mini-batches of a bounded buffer (``batch_size``,
            ``max_buffer_size``), so that a round's cost stays flat as the history
            grows; ``NCBFUCB(**NCBFUCB.PAPER_SCHEDULE)`` trains as the paper, on
            the whole history.""",
    "n_steps": """
        n_steps : int, default=100
            Gradient steps per training (the paper: 100).""",
}

_OWN = ("nu", "kappa", "norm_bound", "delta", "covariance")

_OWN_TEXTS = {
    "nu": """
        nu : float, default=1e-3
            Multiplier of the width (the paper tunes it over {0.01, 0.1, 1, 10,
            100}); ``nu=0`` is greedy. The width's multiplier
            ``kappa sqrt(d_eff + 2 log(1/delta)) + ...`` is in the hundreds (the
            diagonal effective dimension of every parameter): at ``nu=1`` the bonus
            outweighs the network, and the deterministic index keeps playing the
            arm it knows least, worse than random on a two-arm problem
            (standard-scaled breast_cancer: 566 mistakes of 1,000 where random
            makes 500); 1e-3 makes 67, like the greedy network (66).""",
    "kappa": """
        kappa : float, default=10.0
            The paper's kappa (10 in its synthetic and classification runs, 50 on the
            Open Bandit Dataset): ``V``'s ridge is ``kappa alpha`` and the width
            grows like ``kappa``.""",
    "norm_bound": """
        norm_bound : float, default=1.0
            ``S`` of the width (the paper uses 1).""",
    "delta": """
        delta : float, default=0.05
            Confidence level of the width.""",
}


@Substitution(
    parameters=parameter_block(
        {**TEXTS, **_PAPER_TEXTS, **_OWN_TEXTS},
        ("n_actions", *_OWN, *NETWORK_PARAMETERS),
    ),
    attributes=ATTRIBUTES,
)
class NCBFUCB(DeterministicSelectMixin, NeuralPolicy):
    """Neural UCB for binary feedback (NCBF-UCB, Verma et al., ICLR 2025).

    A network ``f`` trained on the penalised binary cross-entropy of the clicks
    (``f`` is the logit), and the optimistic logit::

        f(x; theta) + nu (kappa sqrt(d_eff + 2 log(1/delta)) + S sqrt(kappa alpha) + 1)
                      * ||g(x; theta)||_{V^{-1}}
        V = sum g g^T + kappa alpha I,   d_eff = logdet(I + sum g g^T / (kappa alpha))

    with ``g`` the tangent features at the parameters each arm is scored with (the
    chosen arms' ``g`` enter ``V`` before training, as in Neural UCB). This is the
    streamlined form the neural logistic bandits paper (Bae and Lee, ICML 2025) runs
    as its baseline (1): a fixed ``alpha`` and a tuned ``nu``, a diagonal ``V``, the
    current gradient, 100 gradient steps at learning rate 0.01 every 50 rounds. The
    ``kappa`` in front of ``sqrt(d_eff)`` (against ``sqrt(kappa)`` for
    NeuralLog-UCB-1) is what gives NCBF-UCB its ``kappa d sqrt(T)`` regret, and
    makes its choices change with ``kappa`` (that paper's Table 2). The width is
    in logit space, like the mean. :meth:`predict_scores` is in probability space,
    as for every neural logistic policy: the mean ``mu(f)`` and, with
    ``return_std=True``, the logit-space bonus ``b`` carried there exactly,
    ``mu(f + b) - mu(f)`` (``mean + std`` orders the arms as the selection does).

    Read more in the :ref:`User Guide <policies>`.

    Parameters
    ----------
    %(parameters)s

    Attributes
    ----------
    %(attributes)s
    covariance_ : ndarray of shape (p,) or (p, p)
        ``V^{-1}``, or its diagonal approximation.
    effective_dimension_ : float
        ``logdet(I + sum g g^T / (kappa alpha))`` (of the diagonal, if ``"diag"``).

    See Also
    --------
    NeuralUCB : The squared-loss neural UCB.
    LogisticUCB1 : The linear baseline with a ``sqrt(kappa)`` width.

    References
    ----------
    .. [1] Verma, Dai, Lin, Jaillet, Low. "Neural dueling bandits: preference-based
       optimization with human feedback". ICLR 2025.
    .. [2] Bae, Lee. "Neural logistic bandits". ICML 2025 (arXiv:2505.02069).

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import NCBFUCB
    >>> X = np.random.RandomState(0).uniform(-1, 1, size=(6, 2, 4))
    >>> policy = NCBFUCB(hidden_layer_sizes=(8,), train_every=3, random_state=0)
    >>> policy = policy.fit(X, [0, 1, 0, 1, 0, 1], [1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    >>> policy.select(X[:2]).shape
    (2,)
    """

    _loss = "logistic"
    _covariance_before_training = True
    PAPER_SCHEDULE = LOGISTIC_PAPER_SCHEDULE
    _parameter_constraints = {
        **neural_constraints("n_actions", "nu", "covariance", *NETWORK_PARAMETERS),
        "kappa": [Interval(Real, 1, None, closed="left")],
        "norm_bound": [Interval(Real, 0, None, closed="left")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(
        self,
        n_actions=None,
        *,
        nu=1e-3,
        kappa=10.0,
        norm_bound=1.0,
        delta=0.05,
        covariance="diag",
        hidden_layer_sizes=(20,),
        alpha=1.0,
        n_steps=100,
        learning_rate=0.01,
        batch_size=64,
        reduction="mean",
        init="default",
        mirror_inputs="auto",
        standardize="auto",
        module=None,
        net=None,
        train_every=50,
        max_train_rounds=None,
        max_buffer_size=1000,
        warm_start=True,
        device="cpu",
        random_state=None,
        verbose=0,
    ):
        self.n_actions = n_actions
        self.nu = nu
        self.kappa = kappa
        self.norm_bound = norm_bound
        self.delta = delta
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

    def _initial_precision(self, kind):
        # V_0 = kappa alpha I: the kappa-inflated ridge of the design matrix.
        return TangentPrecision(
            self.n_parameters_, float(self.kappa * self.alpha), kind
        )

    @property
    def effective_dimension_(self):
        """``logdet(I + sum g g^T / (kappa alpha))``, from ``V``."""
        ridge = self.kappa * self.alpha
        cov = self._precision.covariance
        if cov.ndim == 1:
            return float(-np.log(cov * ridge).sum())
        _, logdet_inv = np.linalg.slogdet(cov * ridge)
        return float(-logdet_inv)

    def _width_multiplier(self):
        """``nu (kappa sqrt(d_eff + 2 log(1/delta)) + S sqrt(kappa alpha) + 1)``."""
        d_eff = self.effective_dimension_
        root = np.sqrt(d_eff + 2.0 * np.log(1.0 / self.delta))
        return self.nu * (
            self.kappa * root + self.norm_bound * np.sqrt(self.kappa * self.alpha) + 1.0
        )

    def _update(self, X, actions, rewards, sample_weight):
        # At the door: a target outside [0, 1] makes the cross-entropy unbounded
        # below, and the training diverges rounds later (a NumericalError).
        check_reward_range(rewards, type(self).__name__, "the cross-entropy's clicks")
        super()._update(X, actions, rewards, sample_weight)

    def _logit_and_bonus(self, X, with_bonus):
        """The logit ``f`` and the logit-space bonus per arm (``None`` without)."""
        logits, sigma = self._mean_and_sigma(X, with_sigma=with_bonus)
        if sigma is None:
            return logits, None
        # _mean_and_sigma gives sqrt(alpha g^T V^{-1} g); the width needs ||g||_{V^-1}.
        return logits, self._width_multiplier() * sigma / np.sqrt(self.alpha)

    def _scores(self, X, return_std):
        logits, bonus = self._logit_and_bonus(X, return_std)
        mean = expit(logits)
        return mean, (None if bonus is None else expit(logits + bonus) - mean)

    def _score_sampler(self, X):
        # The index in logit space: mu would round large optimistic logits to 1.0
        # and turn them into ties.
        logits, bonus = self._logit_and_bonus(X, self.nu != 0)
        ucb = logits if bonus is None else logits + bonus
        return lambda rng: ucb

    @classmethod
    def _get_test_params(cls):
        return [
            {**params, "train_every": 1} for params in super()._get_test_params()
        ] + [
            {
                "hidden_layer_sizes": (4,),
                "n_steps": 2,
                "learning_rate": 1e-6,
                "covariance": "full",
                "kappa": 50.0,
                "standardize": False,  # as estimator_check_params
                "random_state": 1,
            },
        ]
