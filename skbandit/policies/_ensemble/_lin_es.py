"""Ensemble sampling for linear bandits: LinES, and the machinery GLMES shares.

Algorithm 1 of Sun, Wang and Xu, "Provable anytime ensemble sampling algorithms in
nonlinear contextual bandits" (arXiv:2510.10730): ``m`` models are fitted to the history
with perturbed rewards ``Y_l + Z_l^j``, ``Z_l^j ~ N(0, sigma_R^2)`` drawn **once** per
member per observation and stored (never redrawn; no perturbation of the prior); each
round one member ``j_t ~ U[m]`` is drawn and its greedy arm is played. All members are
updated at once: LinES shares one Gram matrix and keeps an ``(m, d)`` matrix of
perturbed moments, GLMES solves the ``m`` penalised likelihoods as one batched Newton
(or gradient-descent) problem. ``horizon="anytime"`` runs the anytime (restarting)
version of section 6, through :mod:`skbandit.policies._ensemble._anytime_schedule`; by
default no phase ever restarts.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Real

import numpy as np

from skbandit.base import BasePolicy
from skbandit.policies._ensemble._anytime_schedule import (
    ANYTIME_CONSTRAINTS,
    GOLDEN_RESTART_BASE,
    AnytimeEnsembleMixin,
)
from skbandit.policies._glm._newton import LINKS
from skbandit.policies._linear._ridge import (
    ArmBlocksMixin,
    BlockRows,
    RidgeBlocks,
    add_intercept,
)
from skbandit.utils._param_validation import Interval
from skbandit.utils._selection import greedy_proba

__all__ = ["LinES"]


class _EnsembleMixin(AnytimeEnsembleMixin, ArmBlocksMixin):
    """Members, their scores, the exact action law and the stored perturbations.

    Subclasses keep the member coefficients in ``self._coef`` (n_models_, n_blocks, d)
    and name their link in ``_link``.
    """

    _link = LINKS["identity"]
    #: select maximises a random member's scores: Monte Carlo is never needed, though.
    _samples_scores = True

    def _design(self, X):
        return add_intercept(X) if self.fit_intercept else X

    def _member_eta(self, Xk, coef):
        """``x_{t,k}^T theta^j`` for coefficients ``coef`` of shape (n, n_blocks, d)."""
        return np.einsum("nkd,nkd->nk", Xk, coef[:, self._arm_blocks])

    def _all_member_means(self, X):
        """Mean reward of every arm under every member, shape (n_models_, n, K)."""
        Xk = self._design(self._arm_features(X))
        eta = np.einsum("nkd,mkd->mnk", Xk, self._coef[:, self._arm_blocks])
        return self._link.mean(eta)

    def _scores(self, X, return_std):
        means = self._all_member_means(X)
        return means.mean(axis=0), (means.std(axis=0) if return_std else None)

    def _sample_scores(self, X, rng):
        if rng is None:
            return self._scores(X, False)[0]
        members = self._draw_members(X.shape[0], rng)  # Algorithm 1, line 3
        Xk = self._design(self._arm_features(X))
        return self._link.mean(self._member_eta(Xk, self._coef[members]))

    def _action_proba_free(self, X, mask):
        # Exact: the member is uniform, its arm the random-tie argmax of its scores.
        means = self._all_member_means(X)
        proba = np.mean([greedy_proba(s, mask) for s in means], axis=0)
        rates = self._exploration_rates(X.shape[0])
        if rates is None:
            return proba
        uniform = greedy_proba(np.zeros_like(proba), mask)
        return rates[:, None] * uniform + (1 - rates[:, None]) * proba

    def _store(self, perturbations):
        """The stored ``Z_l^j`` with the new rows appended (a new array)."""
        return np.concatenate([self._perturbations, perturbations])

    @property
    def perturbations_(self):
        """Perturbations ``Z_l^j`` of the current phase's observations.

        Shape ``(n_observations, n_models_)``: row ``l`` was drawn with observation
        ``l`` (rows of zero weight included) and is never redrawn.
        """
        return self._perturbations

    @property
    def coef_(self):
        """Member coefficients, shape ``(n_models_, n_blocks, n_features_in_)``."""
        return self._coef[..., : self.n_features_in_]

    @property
    def intercept_(self):
        """Member intercepts, shape ``(n_models_, n_blocks)``; zeros without one."""
        if self.fit_intercept:
            return self._coef[..., -1].copy()
        return np.zeros(self._coef.shape[:2])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        one = self.n_models == 1 or (
            isinstance(self.perturbation_scale, Real) and self.perturbation_scale == 0
        )
        tags.policy_tags.stochastic_select = not one
        tags.policy_tags.exact_action_proba = True
        return tags


_ES_CONSTRAINTS = {
    **BasePolicy._parameter_constraints,
    **ANYTIME_CONSTRAINTS,
    "alpha": [Interval(Real, 0, None, closed="neither")],
    "fit_intercept": ["boolean"],
}

_ES_DOC_PARAMETERS = """n_models : int or "auto", default="auto"
        Ensemble size ``m``. ``"auto"`` is the experiments' choice: {fixed_m} without
        restarts (section 7.2), ``ceil(2 ln tau_i)`` in anytime phase ``i`` of
        ``tau_i`` rounds (10, 11, 13, 15, 16, 18, ... for the default schedule).
    perturbation_scale : float or "auto", default={scale_default}
        Standard deviation ``sigma_R`` of the reward perturbations. ``"auto"`` is
        0.1 without restarts, ``0.02 ln tau_i`` in anytime phase ``i``. 0 is
        greedy.
    alpha : float, default=1.0
        Penalty ``(lambda / 2) ||theta||^2`` (the paper's ``lambda``; 1 in the
        experiments).
    horizon : int, "anytime" or None, default=None
        ``T`` of the fixed-horizon algorithm (rounds past it continue its last
        state); ``None``: the same algorithm without an end, never restarted (the
        default: no data are thrown away); ``"anytime"``: the paper's anytime
        version (section 6, opt-in), fully restarted (history, ensemble and
        perturbations discarded) after rounds ``T_i = floor(T0 b^i)``, 100, 261,
        685, ... by default.
    first_phase : int, default=100
        ``T0``, the first anytime phase (the experiments' "DT100"; "DT300" is 300).
        Used only with ``horizon="anytime"``.
    restart_base : float, default=(3 + sqrt 5) / 2
        ``b > 1`` of the anytime schedule; the paper's value minimises its regret
        factor ``l(T0, b)`` (about 3.3).
    fit_intercept : bool, default=False
        Append a constant feature (penalised like the others). The paper's models
        have none."""


_ES_DOC_ATTRIBUTES = """n_actions_ : int
        Number of arms.
    n_features_in_ : int
        Number of context features.
    n_samples_seen_ : int
        Rounds of feedback learnt from (all phases).
    action_counts_ : ndarray of shape (n_actions_,)
        Feedback rounds per arm.
    n_models_ : int
        Ensemble size of the current phase.
    perturbation_scale_ : float
        ``sigma_R`` of the current phase.
    phase_ : int
        Index of the current anytime phase (0 with a fixed horizon).
    phase_start_ : int
        Rounds before the current phase.
    phase_length_ : int
        Rounds of the current phase (the horizon when fixed).
    coef_ : ndarray of shape (n_models_, n_blocks, n_features_in_)
        Member coefficients: one block per arm for shared contexts, one block for
        per-arm contexts.
    perturbations_ : ndarray of shape (n_observations, n_models_)
        Stored perturbations of the current phase."""


def _fill_docstring(cls, fixed_m, scale_default='"auto"'):
    parameters = _ES_DOC_PARAMETERS.replace("{fixed_m}", str(fixed_m))
    parameters = parameters.replace("{scale_default}", scale_default)
    cls.__doc__ = cls.__doc__.replace("{parameters}", parameters).replace(
        "{attributes}", _ES_DOC_ATTRIBUTES
    )


class LinES(_EnsembleMixin, BasePolicy):
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

    _parameter_constraints = {**_ES_CONSTRAINTS, "prior_perturbation": ["boolean"]}
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
        self._perturbations = np.zeros((0, m))

    def _update_phase(self, X, actions, rewards, sample_weight, perturbations):
        w = np.ones(actions.shape[0]) if sample_weight is None else sample_weight
        rows = self._design(self._chosen_features(X, actions))
        blocks = self._arm_blocks[actions]
        wz = np.sqrt(w)[:, None] * perturbations  # (n, m); see Notes
        noise_moment = self._noise_moment.copy()
        if noise_moment.shape[1] == 1:
            noise_moment[:, 0] += wz.T @ rows
        else:  # sum_l w_l x_l Z_l^j per block, a GEMM per block (not np.add.at)
            grouped = BlockRows(blocks)
            noise_moment[:, grouped.labels] += grouped.products(wz, rows).swapaxes(0, 1)
        self._ridge.update(blocks, rows, rewards, w)  # the only step that may raise
        self._noise_moment = noise_moment
        self._coef = self._ridge.perturbed_coef(noise_moment)
        self._perturbations = self._store(perturbations)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.exact_partial_fit = True
        return tags

    @classmethod
    def _get_test_params(cls):
        return [
            {"n_actions": 3, "random_state": 0},
            {"n_models": 4, "perturbation_scale": 0.5, "horizon": 40},
            {"first_phase": 7, "n_models": 3, "fit_intercept": True},
            {"prior_perturbation": True, "horizon": 30, "n_models": 5},
        ]


_fill_docstring(LinES, 25, "0.3")
