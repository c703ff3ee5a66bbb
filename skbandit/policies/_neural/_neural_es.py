"""Neural ensemble sampling (Sun, Wang, Xu, 2025), Algorithm 1 with the neural model.

``M`` networks start from one shared ``theta_0``; each fits the rewards plus its own
Gaussian perturbations, drawn once per observation and never redrawn; each round plays
the greedy arm of one member drawn uniformly. The members are one
``StackedBanditMLP`` trained by one vectorised computation.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np

from skbandit.policies._core._anytime_schedule import (
    ANYTIME_CONSTRAINTS,
    GOLDEN_RESTART_BASE,
    AnytimeEnsembleMixin,
)
from skbandit.policies._core._neural_params import (
    ENSEMBLE_PARAMETERS,
    neural_constraints,
    neural_docstring,
)
from skbandit.policies._core._neural_policy import EnsembleScoresMixin, NeuralPolicy

__all__ = ["NeuralES", "warmup_arms"]

#: The parameters of ensemble sampling and of its anytime schedule.
ES_PARAMETERS = (
    "n_models",
    "perturbation_scale",
    "horizon",
    "first_phase",
    "restart_base",
)

ES_TEXTS = {
    "n_models": """
        n_models : int or "auto", default="auto"
            Ensemble size ``m``. ``"auto"`` is the experiments' choice: 10 without
            restarts, ``ceil(2 ln tau_i)`` in anytime phase ``i`` of
            ``tau_i`` rounds (10, 11, 13, 15, 16, 18, ... for the default
            schedule).""",
    "perturbation_scale": """
        perturbation_scale : float or "auto", default="auto"
            Standard deviation ``sigma_R`` of the reward perturbations. ``"auto"`` is
            0.1 without restarts, ``0.02 ln tau_i`` in anytime phase ``i``.
            ``0`` makes every member the same greedy network.""",
    "horizon": """
        horizon : int, "anytime" or None, default=None
            ``None``: one phase that never ends, with the fixed-horizon settings (no
            restart throws the history away). ``T``: the fixed-horizon algorithm,
            one phase, never restarted (rounds past ``T`` continue it).
            ``"anytime"``: the paper's anytime version (section 6), opt-in, fully
            restarted after rounds ``T_i = floor(first_phase * restart_base^i)``.""",
    "first_phase": """
        first_phase : int, default=100
            ``T_0``, the first phase of the anytime schedule
            (``horizon="anytime"``).""",
    "restart_base": """
        restart_base : float, default=2.618033988749895
            ``b``, the growth of the anytime phases; the paper's ``(3 + sqrt 5) / 2``
            minimises its regret-loss factor.""",
}


def warmup_arms(local_rounds, n_actions, mask=None):
    """The arm of each warm-up round: arm ``t`` at round ``t`` of a phase (0-based).

    A masked arm passes its turn to the next available one, cyclically.

    Parameters
    ----------
    local_rounds : ndarray of shape (n,)
        Round indices counted from the start of their phase.
    n_actions : int
        Number of arms ``K``.
    mask : ndarray of shape (n, n_actions) or None
        Available arms.

    Returns
    -------
    arms : ndarray of shape (n,)
    """
    order = (local_rounds[:, None] + np.arange(n_actions)) % n_actions
    if mask is None:
        return order[:, 0]
    first = np.argmax(np.take_along_axis(mask, order, axis=1), axis=1)
    return order[np.arange(order.shape[0]), first]


@neural_docstring(*ES_PARAMETERS, shared=ENSEMBLE_PARAMETERS, texts=ES_TEXTS)
class NeuralES(AnytimeEnsembleMixin, EnsembleScoresMixin, NeuralPolicy):
    """Neural ensemble sampling (Neural-ES; Sun, Wang, Xu 2025, Algorithm 1).

    ``m`` networks of the papers' architecture share one mirrored initialisation
    ``theta_0``. Member ``j`` fits the perturbed history ``{(x_l, r_l + Z_l^j)}``,
    ``Z_l^j ~ N(0, sigma_R^2)``: one draw per member per observation, made when the
    observation arrives, stored and never redrawn; the rewards alone are perturbed
    (no prior perturbation). Each member's objective is ``sum_l (f_j(x_l) - r_l -
    Z_l^j)^2 / 2 + m_w alpha ||theta_j - theta_0||^2 / 2`` (``m_w`` the width, the
    paper's ``lambda N``), run for ``n_steps`` gradient steps; all members train as
    one ``StackedBanditMLP``, one vectorised computation.
    Each selected round plays ``argmax_k f_j(x_k)`` for ``j`` drawn uniformly.

    The first ``K`` rounds (of each phase) pull arms ``0, 1, ..., K-1`` once
    (line 2, the warm-up); the members are first fitted, on the perturbed warm-up
    rounds, when it ends. By default the policy never restarts (``horizon=None``,
    10 members, ``sigma_R = 0.1``). ``horizon="anytime"`` is the anytime version
    (section 6), opt-in: a full restart (new ``theta_0``, empty history, new
    perturbations, warm-up again) after rounds ``T_i = floor(first_phase *
    restart_base^i)``, phase ``i`` of length ``tau_i`` using ``ceil(2 ln tau_i)``
    members and ``sigma_R = 0.02 ln tau_i``, as the experiments did; every restart
    throws the history away, which costs more than it buys on problems of a few
    thousand rounds.

    Parameters
    ----------
    %(parameters)s

    Attributes
    ----------
    %(attributes)s
    n_models_ : int
        Members of the current phase.
    perturbation_scale_ : float
        ``sigma_R`` of the current phase.
    phase_ : int
        Index of the current phase (0 with a fixed ``horizon``).
    phase_start_ : int
        Rounds seen before the current phase began.
    perturbed_targets_ : ndarray of shape (n_rows, n_models_)
        Each buffered observation's targets ``r_l + Z_l^j``, one column per member.

    See Also
    --------
    NeuralBootstrap : Members from their own initialisations, on resampled rows.
    NeuralPHE : One network, its perturbations redrawn at every training.
    NeuralTS : Exploration from the network's tangent features.

    Notes
    -----
    The paper's neural experiment (section 7.2) is ``NeuralES(n_models=10,
    perturbation_scale=0.1, alpha=1, horizon=T, hidden_layer_sizes=(20, 20),
    n_steps=100, learning_rate=0.01)``; its anytime curve is the same with
    ``horizon="anytime"`` (``n_models`` and ``perturbation_scale`` at ``"auto"``).
    The defaults differ in the network (one hidden layer of 100 at
    ``learning_rate=1e-3``, the other neural policies') and in never restarting.
    The experiments update the members incrementally, hence
    ``warm_start=True``; the theory restarts gradient descent from ``theta_0``
    (``warm_start=False``). ``reduction="mean"`` divides the objective by the
    rows (same minimiser) so that a fixed step stays stable. Shared contexts use
    the disjoint encoding; the paper asks for mirrored inputs ``[x; x] / sqrt 2``
    so that ``f(x; theta_0) = 0``, which ``mirror_inputs="auto"`` (the default)
    feeds the network. ``sample_weight`` ``w`` counts a round ``w`` times:
    its perturbation is ``Z / sqrt(w)``, so that an integer weight equals repeating
    the round in distribution.

    References
    ----------
    .. [1] Sun, Wang, Xu. "Provable Anytime Ensemble Sampling Algorithms in
       Nonlinear Contextual Bandits". arXiv:2510.10730, 2025.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import NeuralES
    >>> X = np.random.RandomState(0).normal(size=(6, 4))
    >>> policy = NeuralES(n_actions=3, n_models=4, horizon=1000,
    ...                   hidden_layer_sizes=(8,), random_state=0)
    >>> policy.select(X[:3])  # the warm-up: each arm once
    array([0, 1, 2])
    >>> policy = policy.partial_fit(X[:3], [0, 1, 2], [1.0, 0.0, 0.5])
    >>> policy.perturbed_targets_.shape  # one stored target per row and member
    (3, 4)
    """

    _parameter_constraints = {
        **neural_constraints("n_actions", *ENSEMBLE_PARAMETERS),
        **ANYTIME_CONSTRAINTS,
    }
    #: ``"auto"`` with a fixed horizon: the experiments' values (section 7.2).
    _fixed_n_models = 10
    _fixed_perturbation_scale = 0.1

    def __init__(
        self,
        n_actions=None,
        *,
        n_models="auto",
        perturbation_scale="auto",
        horizon=None,
        first_phase=100,
        restart_base=GOLDEN_RESTART_BASE,
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
        self.perturbation_scale = perturbation_scale
        self.horizon = horizon
        self.first_phase = first_phase
        self.restart_base = restart_base
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

    # ------------------------------------------------------------ the phases
    def _start_phase(self):
        """A full restart: new ``theta_0``, empty history, no perturbations."""
        # A phase shorter than K warms up for all of it.
        self._n_warmup = min(self.n_actions_, self.phase_length_)
        NeuralPolicy._init_state(self)  # draws theta_0 from the policy's state

    def _net_options(self):
        return {"n_members": self.n_models_, "shared_init": True}

    @property
    def perturbed_targets_(self):
        return self._core.buffer.targets

    # ---------------------------------------------------------- the warm-up
    def _forced_actions(self, X, mask):
        # The current phase's first K rounds; a select batch is decided by the
        # current model, so rows past the phase's end are not the next one's.
        local = self._phase_rounds(X.shape[0])
        warm = local < self._n_warmup
        if not warm.any():
            return None
        return warm, warmup_arms(
            local[warm], self.n_actions_, None if mask is None else mask[warm]
        )

    # ------------------------------------------------------------ learning
    def _update_phase(self, X, actions, rewards, sample_weight, perturbations):
        # The rows are the last of the batch, and all in the current phase.
        seen = max(self.n_samples_seen_, self.phase_start_)
        self._perturbations = perturbations  # Z_l^j, (n_rows, n_models_)
        try:
            self._learn(X, actions, rewards, sample_weight, seen)
        finally:
            del self._perturbations

    def _training_due(self, n_seen, n_new):
        local = n_seen - self.phase_start_
        if local + n_new < self._n_warmup:
            return False  # still warming up: the members wait for all K pulls
        if local < self._n_warmup:
            return True  # the warm-up ends: fit every member (Algorithm 1, line 2)
        return None

    def _buffer_rows(self, X, actions, rewards, sample_weight):
        X, actions, _, weights = super()._buffer_rows(
            X, actions, rewards, sample_weight
        )
        # Lines 7-8: member j stores (x_t, r_t + Z_t^j); Z is never redrawn.
        noise = self._perturbations[: X.shape[0]]  # max_train_rounds may cut rows
        if sample_weight is not None:
            # Weight w counts the row w times: w copies with their own Z average
            # to one perturbation of variance sigma^2 / w (LinES scales alike).
            w = sample_weight[: X.shape[0], None].astype(np.float64)
            noise = noise / np.sqrt(np.where(w > 0, w, 1.0))
        targets = rewards.astype(np.float64)[:, None] + noise
        return X, actions, targets.astype(np.float32), weights

    @classmethod
    def _get_test_params(cls):
        return [
            {
                "n_actions": 3,
                "n_models": 2,
                "horizon": 100,
                "hidden_layer_sizes": (4,),
                "n_steps": 2,
                "learning_rate": 1e-6,  # sklearn checks feed X ~ N(100, 1)
                "mirror_inputs": False,
                "standardize": False,
                "random_state": 0,
            },
            {
                "hidden_layer_sizes": (4,),
                "n_steps": 2,
                "learning_rate": 1e-6,
                "mirror_inputs": False,
                "standardize": False,
                "horizon": "anytime",
                "first_phase": 5,
                "train_every": 3,
                "max_buffer_size": 40,
                "random_state": 1,
            },
        ]
