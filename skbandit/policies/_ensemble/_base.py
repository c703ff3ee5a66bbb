"""What the ensemble-sampling policies share: the members, their scores, the exact
action law, the stored perturbations, the parameters and their texts.

Algorithm 1 of Sun, Wang and Xu, "Provable anytime ensemble sampling algorithms in
nonlinear contextual bandits" (arXiv:2510.10730): ``m`` models are fitted to the history
with perturbed rewards ``Y_l + Z_l^j``, ``Z_l^j ~ N(0, sigma_R^2)`` drawn **once** per
member per observation and stored (never redrawn; no perturbation of the prior); each
round one member ``j_t ~ U[m]`` is drawn and its greedy arm is played.
``horizon=None`` runs the anytime (restarting) version of section 6, through
:mod:`skbandit.policies._core._anytime_schedule`. LinES (:mod:`._lin_es`) and
GLMES (:mod:`._glm_es`) put :class:`EnsemblePolicyMixin` over their members' update.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Real

import numpy as np

from skbandit._base._growing import GrowingRows
from skbandit._base._selection import greedy_proba
from skbandit.base import BasePolicy
from skbandit.policies._core._anytime_schedule import (
    ANYTIME_CONSTRAINTS,
    AnytimeEnsembleMixin,
)
from skbandit.policies._core._newton import LINKS
from skbandit.policies._core._ridge import (
    ArmBlocksMixin,
    BlockRows,
    add_intercept,
)
from skbandit.utils._param_validation import Interval


class EnsemblePolicyMixin(AnytimeEnsembleMixin, ArmBlocksMixin):
    """Members, their scores, the exact action law and the stored perturbations.

    The base of the ensemble-sampling policies (:class:`~skbandit.policies.LinES`,
    :class:`~skbandit.policies.GLMES`; Sun, Wang and Xu's Algorithm 1): ``m`` models
    fitted to the history with perturbed rewards, the perturbations drawn once per
    member and observation and stored; each round one member, drawn uniformly, plays
    its greedy arm. It fills in ``_init_state`` and ``_update`` (the phases of the
    anytime schedule: ``horizon="anytime"`` restarts everything after rounds
    ``floor(T0 b^i)``), ``_scores`` (the members' mean and spread),
    ``_score_sampler``, and the exact law of ``select`` (the mean of the members'
    greedy laws). A policy on it implements two family hooks:

    ``_start_phase()``
        build an empty ensemble of ``self.n_models_`` members (at the first fit and
        at every restart; ``self.perturbation_scale_`` and ``self._noise``, the
        phase's Generator, are set); start the store with ``self._empty_store()``;
    ``_update_phase(X, actions, rewards, sample_weight, perturbations)``
        learn from the rows of the current phase; ``perturbations`` has shape
        ``(n_rows, n_models_)``, one ``N(0, perturbation_scale_^2)`` draw per member
        and row, never drawn again: keep them with ``self._store(perturbations)``.
        Rebind, or write in place only after the last step that can fail.

    Both keep the member coefficients in ``self._coef``, shape
    ``(n_models_, n_blocks, d)`` (``d`` counts the intercept), scored through the
    link ``_link`` (default: the identity; GLMES: the logistic). A policy on it has
    the parameters ``n_models``, ``perturbation_scale``, ``horizon``,
    ``first_phase``, ``restart_base``, ``alpha`` and ``fit_intercept``, whose
    constraints are :data:`~skbandit.policies.base.ENSEMBLE_CONSTRAINTS`.

    See Also
    --------
    skbandit.policies.base.LinearPolicyMixin : One ridge model instead of ``m``.

    Examples
    --------
    >>> from skbandit.policies import GLMES, LinES
    >>> from skbandit.policies.base import EnsemblePolicyMixin
    >>> [issubclass(P, EnsemblePolicyMixin) for P in (LinES, GLMES)]
    [True, True]
    >>> policy = LinES(n_actions=2, n_models=4, random_state=0)
    >>> policy.fit([[1.0], [0.0]], [0, 1], [1.0, 0.0]).coef_.shape  # members, arms, d
    (4, 2, 1)
    """

    _blas_small_work = True

    _link = LINKS["identity"]
    #: select maximises a random member's scores: Monte Carlo is never needed, though.
    _samples_scores = True

    def _design(self, X):
        return add_intercept(X) if self.fit_intercept else X

    def _member_eta(self, Z, members):
        """``x_{t,k}^T theta^{j_t}``, each round ``t`` scored by its member
        ``members[t]``, shape (n, K), for design rows ``Z`` (n, d) shared or (n, K, d)
        per arm."""
        if Z.ndim == 3:  # one block: each round's coefficients, no (n, K, d) copy
            return np.einsum("nkd,nd->nk", Z, self._coef[members, 0])
        # Arm k on block k: one GEMM per member over its rounds, not a gathered
        # (n, K, d) copy of the coefficients (six times slower at n = 1,000).
        eta = np.empty((Z.shape[0], self.n_actions_))
        grouped = BlockRows(members)
        for j, rounds in zip(grouped.labels, grouped.groups(), strict=True):
            eta[rounds] = Z[rounds] @ self._coef[j].T
        return eta

    def _all_member_means(self, X):
        """Mean reward of every arm under every member, shape (n_models_, n, K)."""
        Xk = self._design(self._arm_features(X))
        eta = np.einsum("nkd,mkd->mnk", Xk, self._coef[:, self._arm_blocks])
        return self._link.mean(eta)

    def _scores(self, X, return_std):
        means = self._all_member_means(X)
        return means.mean(axis=0), (means.std(axis=0) if return_std else None)

    def _score_sampler(self, X):
        Z = self._design(X)

        def draw(rng):
            if rng is None:  # the members' mean
                return self._scores(X, False)[0]
            members = self._draw_members(X.shape[0], rng)  # Algorithm 1, line 4
            return self._link.mean(self._member_eta(Z, members))

        return draw

    def _decide_free(self, X, mask, with_proba):
        return self._closed_form_decision(X, mask, with_proba)

    def _action_proba_free(self, X, mask):
        # Exact: the member is uniform, its arm the random-tie argmax of its scores.
        means = self._all_member_means(X)
        proba = np.mean([greedy_proba(s, mask) for s in means], axis=0)
        rates = self._exploration_rates(X.shape[0])
        if rates is None:
            return proba
        uniform = greedy_proba(np.zeros_like(proba), mask)
        return rates[:, None] * uniform + (1 - rates[:, None]) * proba

    def _empty_store(self):
        """No stored ``Z_l^j`` yet: the store of a new phase of ``n_models_``."""
        return GrowingRows(self.n_models_)

    def _store(self, perturbations):
        """The stored ``Z_l^j`` with the new rows appended (a new holder over
        amortised storage: appending costs the new rows, not the history)."""
        if self._perturbations is None:  # fitted from Dask collections
            return None
        return self._perturbations.appended(perturbations)

    @property
    def perturbations_(self):
        """Perturbations ``Z_l^j`` of the current phase's observations.

        Shape ``(n_observations, n_models_)``: row ``l`` was drawn with observation
        ``l`` (rows of zero weight included) and is never redrawn. Not kept by a
        fit on Dask collections (its draws stay on the workers).
        """
        if self._perturbations is None:
            raise AttributeError(
                f"{type(self).__name__} was fitted from Dask collections: its "
                "perturbations were drawn, used and left on the workers."
            )
        return self._perturbations.rows

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


ENSEMBLE_CONSTRAINTS = {
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
