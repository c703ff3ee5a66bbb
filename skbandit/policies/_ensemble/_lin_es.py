"""Ensemble sampling for linear bandits: LinES.

Algorithm 1 of Sun, Wang and Xu, "Provable anytime ensemble sampling algorithms in
nonlinear contextual bandits" (arXiv:2510.10730) with a linear model class: all members
share one Gram matrix and keep an ``(m, d)`` matrix of perturbed moments, updated in
closed form. The perturbations, the member draw and the anytime restarts are those of
:mod:`skbandit.policies._ensemble._base`.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np

from skbandit.base import BasePolicy
from skbandit.policies._core._anytime_schedule import (
    GOLDEN_RESTART_BASE,
)
from skbandit.policies._core._ridge import (
    RidgeBlocks,
)
from skbandit.policies._ensemble._base import (
    ENSEMBLE_CONSTRAINTS,
    EnsemblePolicyMixin,
    _fill_docstring,
)
from skbandit.utils._tags import ExactPartialFitMixin

__all__ = ["LinES"]


class LinES(ExactPartialFitMixin, EnsemblePolicyMixin, BasePolicy):
    """Linear ensemble sampling (Lin-ES), exact and vectorised over the members.

    Member ``j`` is the ridge estimate of the history with perturbed rewards,

    ``theta^j = (lambda I + sum_l x_l x_l^T)^{-1} sum_l x_l (Y_l + Z_l^j)``,

    with ``Z_l^j ~ N(0, sigma_R^2)`` drawn once per member per observation and stored
    (Algorithm 1 of Sun, Wang and Xu with the identity link, section 2.4 of their
    paper's experiments). Each :meth:`select` round draws ``j_t ~ U[m]`` and plays
    ``argmax_k x_{t,k}^T theta^{j_t}`` (ties at random, which matters in the first
    round, where every member is 0). The Gram matrix is shared: an update costs one
    Sherman-Morrison step and an ``(m, d)`` rank-one update of the perturbed moments,
    ``O(d^2 + m d^2)`` in all, whatever ``t`` -- no loop over members.

    **Relation to LinPHE.** :class:`LinPHE` solves the same perturbed ridge problem
    (the two share ``RidgeBlocks.perturbed_coef``) but redraws every
    perturbation every round (``Theta(t)`` draws per round, against ``m`` here).
    Lee and Oh (NeurIPS 2024) show that LinPHE is linear ensemble sampling with
    ``m = T`` members each used once; with ``m`` fixed, members are reused and
    their perturbations are correlated across rounds. Lee and Oh's linear ensemble
    sampling also perturbs the prior (a random ``theta_0^j``); Sun, Wang and Xu's
    framework, followed here, perturbs only the rewards.

    :meth:`predict_scores` is the mean over members of ``x^T theta^j`` (the ridge
    estimate plus the mean perturbation term), and ``return_std`` their standard
    deviation across members; :meth:`predict_action_proba` is exact (the average of
    the members' greedy choices).

    The paper's linear experiment (section 7.1, Figure 1) is ``n_models=25,
    perturbation_scale=0.1, alpha=1, prior_perturbation=False`` with
    ``horizon=10_000``; its anytime curves "DT100" / "DT300" are
    ``horizon="anytime", perturbation_scale="auto", prior_perturbation=False`` with
    ``first_phase=100`` / ``300``. The defaults differ in three ways, each for
    defaults that learn without tuning: a perturbed prior, ``sigma_R = 0.3``
    (0.1 with the prior perturbed leaves a seed in three stuck on fixed-arm
    Bernoulli problems), and no restarts: the anytime schedule throws the history
    away at rounds 100, 261, 685, ..., which costs more than it buys on problems
    of a few thousand rounds (the user guide's defaults table).

    Read more in the :ref:`User Guide <policies>`.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    {parameters}
    prior_perturbation : bool, default=True
        Also perturb the prior, as Lu and Van Roy's and Lee and Oh's linear ensemble
        sampling do: member ``j`` starts from ``theta_0^j ~ N(0, sigma_R^2 / lambda
        I)`` (the moment gets ``sqrt(lambda) sigma_R U^j``, ``U^j ~ N(0, I_d)``, drawn
        once per phase), so that unexplored arms keep random scores. Sun, Wang and
        Xu's framework has no prior perturbation (``False``, their experiments);
        without one, members agree on every arm the history does not reach, and on
        problems whose rewards all have one sign the first arm pulled can keep
        every member's vote: on a fixed-arm Bernoulli problem (``LinearBandit``)
        the defaults without it play worse than random.
    random_state : int, RandomState instance or None, default=None
        Seeds the member draws in :meth:`select` and, through a stream of its own,
        the perturbations.

    Attributes
    ----------
    {attributes}

    See Also
    --------
    GLMES : Ensemble sampling in a generalised linear model.
    LinPHE : Perturbed history, redrawn every round.
    LinTS : Gaussian posterior sampling in the same model.

    Notes
    -----
    ``sample_weight`` ``w_l`` counts observation ``l`` as ``w_l`` observations:
    ``sum w_l x_l x_l^T`` and ``sum x_l (w_l Y_l + sqrt(w_l) Z_l^j)``, so that an
    integer weight equals repeating the row in distribution (``w`` copies carry
    ``w`` independent perturbations, whose sum is ``N(0, w sigma_R^2)``), not draw
    by draw. Perturbations come from a generator of the policy's own, seeded per
    phase, so ``partial_fit`` in chunks equals one ``fit``.

    References
    ----------
    .. [1] Sun, Wang, Xu. "Provable anytime ensemble sampling algorithms in nonlinear
       contextual bandits". arXiv:2510.10730, 2025.
    .. [2] Lee, Oh. "Improved regret of linear ensemble sampling". NeurIPS 2024.
    .. [3] Lu, Van Roy. "Ensemble sampling". NeurIPS 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import LinES
    >>> arms = np.random.RandomState(0).normal(size=(1, 4, 3))
    >>> X = np.repeat(arms, 6, axis=0)
    >>> policy = LinES(n_models=5, perturbation_scale=0.1, horizon=100, random_state=0)
    >>> policy = policy.fit(X, [0, 1, 2, 3, 0, 1], [1.0, 0.0, 0.5, 0.2, 0.9, 0.1])
    >>> policy.coef_.shape
    (5, 1, 3)
    >>> policy.perturbations_.shape
    (6, 5)
    >>> policy.select(arms).shape
    (1,)
    """

    _parameter_constraints = {**ENSEMBLE_CONSTRAINTS, "prior_perturbation": ["boolean"]}
    _fixed_n_models = 25

    def __init__(
        self,
        n_actions=None,
        *,
        n_models="auto",
        perturbation_scale=0.3,
        alpha=1.0,
        horizon=None,
        first_phase=100,
        restart_base=GOLDEN_RESTART_BASE,
        fit_intercept=False,
        prior_perturbation=True,
        random_state=None,
    ):
        self.n_actions = n_actions
        self.n_models = n_models
        self.perturbation_scale = perturbation_scale
        self.alpha = alpha
        self.horizon = horizon
        self.first_phase = first_phase
        self.restart_base = restart_base
        self.fit_intercept = fit_intercept
        self.prior_perturbation = prior_perturbation
        self.random_state = random_state

    def _start_phase(self):
        d = self.n_features_in_ + int(self.fit_intercept)
        m, n_blocks = self.n_models_, self._n_blocks
        self._ridge = RidgeBlocks(n_blocks, d, self.alpha)
        # sum_l w_l x_l Z_l^j, from the prior term sqrt(lambda) sigma_R U^j if any
        self._noise_moment = np.zeros((m, n_blocks, d))
        if self.prior_perturbation:
            self._noise_moment = (
                np.sqrt(self.alpha) * self.perturbation_scale_
            ) * self._noise.standard_normal((m, n_blocks, d))
        self._coef = self._ridge.perturbed_coef(self._noise_moment)
        self._perturbations = self._empty_store()

    def _update_phase(self, X, actions, rewards, sample_weight, perturbations):
        w = np.ones(actions.shape[0]) if sample_weight is None else sample_weight
        rows = self._chosen_features(X, actions)  # the intercept: in the gather
        blocks = self._arm_blocks[actions]
        wz = np.sqrt(w)[:, None] * perturbations  # (n, m); see Notes
        # sum_l w_l x_l Z_l^j per block, from the ridge update's pass over the rows
        # (one GEMM per block for both); the update is the only step that may raise
        moments = self._ridge.update(
            blocks, rows, rewards, w, co_targets=wz, intercept=self.fit_intercept
        )
        noise_moment = self._noise_moment + moments.transpose(2, 0, 1)
        self._noise_moment = noise_moment
        self._coef = self._ridge.perturbed_coef(noise_moment)
        self._perturbations = self._store(perturbations)

    @classmethod
    def _get_test_params(cls):
        return [
            {"n_actions": 3, "random_state": 0},
            # Weights equal repeated rows in distribution, not draw by draw: the
            # sample-weight check compares the two fits' choices, which a random
            # prior of scale 0.5 flips; without it they agree.
            {
                "n_models": 4,
                "perturbation_scale": 0.5,
                "horizon": 40,
                "prior_perturbation": False,
            },
            {"first_phase": 7, "n_models": 3, "fit_intercept": True},
            {"prior_perturbation": True, "horizon": 30, "n_models": 5},
        ]


_fill_docstring(LinES, 25, "0.3")
