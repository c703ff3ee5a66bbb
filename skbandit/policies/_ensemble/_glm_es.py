"""Ensemble sampling for generalised linear bandits: GLMES.

Algorithm 1 of Sun, Wang and Xu, "Provable anytime ensemble sampling algorithms in
nonlinear contextual bandits" (arXiv:2510.10730), with a GLM as the model class: the
``m`` members' penalised likelihoods of the perturbed history are solved as one batched
Newton (or, as the experiments ran, gradient-descent) problem. The perturbations, the
member draw and the anytime restarts are the ones of
:mod:`skbandit.policies._ensemble._base`, which LinES shares.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from skbandit._docstrings import Substitution
from skbandit.base import BasePolicy
from skbandit.exceptions import NumericalError
from skbandit.policies._core._anytime_schedule import (
    GOLDEN_RESTART_BASE,
)
from skbandit.policies._core._grouped_rows import GroupedRows
from skbandit.policies._core._newton import LINKS, BlockSum, fit_glm_newton
from skbandit.policies._ensemble._base import (
    ENSEMBLE_CONSTRAINTS,
    EnsemblePolicyMixin,
    _fill_docstring,
)
from skbandit.policies._ensemble._g_optimal_design import warmup_sequence
from skbandit.utils._param_validation import Interval, StrOptions
from skbandit.utils._reward_range import check_reward_range
from skbandit.utils._standardize import (
    STANDARDIZE_CONSTRAINT,
    grouping_rows,
    standardize_doc,
)

__all__ = ["GLMES"]


def _gradient_descent(link, X, target, count, l2, blocks, n_blocks, coef, n_steps, lr):
    """The experiments' solver: ``n_steps`` of full-batch GD on the mean loss.

    The loss of each member is divided by its block's total weight ``n_b`` (the same
    minimiser: the penalty is divided too); the sum loss at the paper's step 0.01
    diverges once ``0.25 t`` exceeds ``2 / 0.01``.
    """
    sum_x = BlockSum(X, blocks, n_blocks)
    n_b = BlockSum(count[:, None], blocks, n_blocks)(np.ones((1, X.shape[0])))
    n_b = np.maximum(n_b, 1.0)
    rows = np.asarray(blocks)
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(n_steps):
            eta = np.einsum("gd,ngd->ng", X, coef[:, rows])
            grad = sum_x(count * link.mean(eta) - target) + l2 * coef
            coef = coef - lr * grad / n_b
    if not np.all(np.isfinite(coef)):
        raise NumericalError(
            "Gradient descent diverged; decrease learning_rate. The policy was left "
            "unchanged."
        )
    return coef


@Substitution(standardize=standardize_doc())
class GLMES(EnsemblePolicyMixin, BasePolicy):
    """Generalised linear ensemble sampling (GLM-ES), vectorised over the members.

    Member ``j`` minimises the penalised negative log-likelihood of the history with
    perturbed rewards (eq. 4.2-4.3 of Sun, Wang and Xu),

    ``L(theta) = (lambda / 2) ||theta||^2 - sum_l (Y_l + Z_l^j) x_l^T theta -
    b(x_l^T theta)``,

    with the link's cumulant ``b`` (``b' = mu``), ``Z_l^j ~ N(0, sigma_R^2)`` drawn
    once per member per observation, stored and never redrawn, and no prior
    perturbation. The loss is defined for any real target, so the perturbed rewards
    may leave ``mu``'s range. Each :meth:`select` round draws ``j_t ~ U[m]`` and plays
    ``argmax_k mu(x_{t,k}^T theta^{j_t})``.

    The first ``n_warmup`` rounds (of every anytime phase, capped at its length;
    by default ``K`` rounds for shared contexts, ``d`` for per-arm ones) are the
    warm-up of Algorithm 2: the G-optimal design on the arms (the multiplicative
    algorithm, to ``max ||x||^2_{V^{-1}} <= d (1 + 10^-4)``), rounded to ``n_warmup``
    pulls by Algorithm 3 and pulled in a random order; the warm-up observations are
    perturbed like all others. The design assumes a fixed arm set (per-arm contexts
    that repeat); with shared contexts (one model per arm) it is round robin.

    The default solver is the exact minimiser (the theory's), by Newton's method
    warm-started at the previous solution, all members in one batched problem;
    identical rows are merged, so with a fixed arm set an update costs
    ``O(m K d^2 + m d^3)`` per Newton step whatever ``t``. ``solver="gd"`` is the
    experiments' approximation, ``n_steps=100`` steps of gradient descent at
    ``learning_rate=0.01``, warm-started, on the loss divided by the number of
    observations (the same minimiser; the sum at that step size diverges).

    The contexts are standardised online by default (``standardize="auto"``; see
    :ref:`raw_features`), as the logistic GLMs do, unlike the ridge policies, whose
    fits only rescale with the features. A member's problem leans on its penalty: the
    perturbed targets ``Y + Z`` leave ``mu``'s range, where the likelihood alone
    has no minimiser (a target above 1 pulls its logit to infinity), so ``alpha``
    is what bounds the member, and a penalty sized for unit-scale features is
    negligible on raw ones. On features of scale ``10^3`` (Breiman's ring norm as
    KEEL ships it) the members' logits saturated and Newton did not converge
    within ``max_iter`` by round 60, on every seed; standardised, they learn.
    ``coef_`` is then on the standardised contexts. A standardised learning row is
    kept to 9 decimals, so that the rows of a fixed arm set (whose moments do not
    move after its first round) still merge into their groups. ``standardize=False``
    reads the contexts as given, as the paper's experiments (their contexts are
    normalised).

    The paper's logistic experiment (section 7.1, Figure 1) is ``n_models=10,
    perturbation_scale=0.1, alpha=1, n_warmup=500`` with ``horizon=10_000`` and
    ``solver="gd"``; its anytime curves "DT100" / "DT300" are ``horizon="anytime",
    n_warmup=500`` with ``first_phase=100`` / ``300``. Neither is the default: the
    anytime schedule restarts at rounds 100, 261, 685, ... and each phase re-runs the
    warm-up, so with 500 warm-up rounds the first thousand rounds are all warm-up.

    Read more in the :ref:`User Guide <policies>`.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    {parameters}
    link : {"logistic", "identity", "poisson"}, default="logistic"
        Canonical link: Bernoulli (``mu`` the sigmoid), Gaussian (``mu(z) = z``,
        ridge regression: :class:`LinES` with a warm-up) or Poisson
        (``mu(z) = exp(z)``).
    warmup : {"g_optimal", "round_robin", "random"}, default="g_optimal"
        Warm-up strategy: the G-optimal design (Algorithm 2), arms in turn, or a
        uniformly random arm each round.
    n_warmup : int or "auto", default="auto"
        Warm-up rounds ``tau`` per phase. ``"auto"``: one pull per arm with shared
        contexts (``K``), the model dimension ``d`` with per-arm contexts. The
        experiments use 500 (for ``T = 10^4``, ``K = 50``); the theory's
        ``ceil(1.5 iota^2 d / mu'_min)`` is far larger.
    solver : {"newton", "gd"}, default="newton"
        Exact penalised MLE, or the experiments' gradient descent.
    n_steps : int, default=100
        Gradient steps per update (``solver="gd"``).
    learning_rate : float, default=0.01
        Step size of gradient descent on the mean loss (``solver="gd"``).
    max_iter : int, default=100
        Newton iterations per update.
    tol : float, default=1e-8
        Newton tolerance (largest coordinate of the last step).
    %(standardize)s
    random_state : int, RandomState instance or None, default=None
        Seeds the member draws in :meth:`select`, the warm-up order and, through a
        stream of its own, the perturbations.

    Attributes
    ----------
    {attributes}

    See Also
    --------
    LinES : The linear case, in closed form.
    LogTS : Laplace posterior sampling in the logistic model.
    LogPHE : Perturbed history, redrawn every round.

    Notes
    -----
    ``sample_weight`` ``w_l`` counts observation ``l`` as ``w_l`` observations: its
    loss term is ``w_l b(x_l^T theta) - (w_l Y_l + sqrt(w_l) Z_l^j) x_l^T theta``,
    equal in distribution to ``w_l`` copies of the row (see :class:`LinES`).

    References
    ----------
    .. [1] Sun, Wang, Xu. "Provable anytime ensemble sampling algorithms in nonlinear
       contextual bandits". arXiv:2510.10730, 2025.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import GLMES
    >>> arms = np.random.RandomState(0).normal(size=(1, 4, 3))
    >>> policy = GLMES(n_models=5, n_warmup=4, horizon=100, random_state=0)
    >>> X = np.repeat(arms, 4, axis=0)
    >>> warm = policy.select(X)  # the rounded G-optimal design, in a random order
    >>> sorted(warm.tolist())
    [0, 1, 2, 3]
    >>> policy = policy.partial_fit(X, warm, [1.0, 0.0, 1.0, 0.0])
    >>> policy.predict_scores(arms).shape
    (1, 4)
    """

    _blas_history = True  # refits its members over the history
    #: The penalty is what bounds the perturbed likelihood: it must meet unit-scale
    #: features (see the class docstring).
    _standardize_auto = True

    _parameter_constraints = {
        **ENSEMBLE_CONSTRAINTS,
        "link": [StrOptions(set(LINKS))],
        "warmup": [StrOptions({"g_optimal", "round_robin", "random"})],
        "n_warmup": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "solver": [StrOptions({"newton", "gd"})],
        "n_steps": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        **STANDARDIZE_CONSTRAINT,
    }
    _fixed_n_models = 10

    def __init__(
        self,
        n_actions=None,
        *,
        n_models="auto",
        perturbation_scale="auto",
        alpha=1.0,
        horizon=None,
        first_phase=100,
        restart_base=GOLDEN_RESTART_BASE,
        fit_intercept=False,
        link="logistic",
        warmup="g_optimal",
        n_warmup="auto",
        solver="newton",
        n_steps=100,
        learning_rate=0.01,
        max_iter=100,
        tol=1e-8,
        standardize="auto",
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
        self.link = link
        self.warmup = warmup
        self.n_warmup = n_warmup
        self.solver = solver
        self.n_steps = n_steps
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.tol = tol
        self.standardize = standardize
        self.random_state = random_state

    @property
    def _link(self):
        return LINKS[self.link]

    def _start_phase(self):
        d = self.n_features_in_ + int(self.fit_intercept)
        m = self.n_models_
        self._groups = GroupedRows(d)
        self._group_noise = np.zeros((m, 0))  # sum of w_l Z_l^j over each group
        self._coef = np.zeros((m, self._n_blocks, d))
        self._perturbations = self._empty_store()
        self._warmup_seed = int(
            np.random.default_rng([self._noise_seed, self.phase_, 1]).integers(2**62)
        )

    # ------------------------------------------------------------------ warm-up
    def _warmup_length(self):
        """Warm-up rounds of the current phase: ``n_warmup``, capped at the phase."""
        if self.n_warmup != "auto":
            n = int(self.n_warmup)
        elif self._per_arm_contexts:
            n = self._coef.shape[-1]  # d: the design spans the model's dimension
        else:
            n = self.n_actions_  # every arm's model sees one row
        return min(n, self.phase_length_)

    def _warm_rounds(self, n_rows):
        """Rows of a ``select`` batch in the warm-up, and their round in the phase."""
        rounds = self._phase_rounds(n_rows)
        return rounds, rounds < self._warmup_length()

    def _forced_actions(self, X, mask):
        if self.warmup == "random":
            return None
        rounds, warm = self._warm_rounds(X.shape[0])
        if not warm.any():
            return None
        K, length = self.n_actions_, self._warmup_length()
        if self.warmup == "g_optimal" and self._per_arm_contexts:
            arms = self._design(X[warm])
            planned = np.array(
                [
                    warmup_sequence(a, length, self._warmup_seed)[r]
                    for a, r in zip(arms, rounds[warm], strict=True)
                ]
            )
        else:  # round robin (the design of one model per arm)
            planned = rounds[warm] % K
        if mask is None:
            return warm, planned
        # A masked arm passes its turn to the next available one.
        order = (planned[:, None] + np.arange(K)) % K
        first = np.argmax(np.take_along_axis(mask[warm], order, axis=1), axis=1)
        return warm, order[np.arange(order.shape[0]), first]

    def _exploration_rates(self, n_rows):
        if self.warmup != "random":
            return None
        return self._warm_rounds(n_rows)[1].astype(np.float64)

    # ------------------------------------------------------------------ updates
    def _learning_rows(self, X, actions):
        """The design rows of the chosen arms, kept to 9 decimals when standardised
        (``grouping_rows``: a fixed arm set's rows still merge)."""
        return self._design(grouping_rows(self, self._chosen_features(X, actions)))

    def _update(self, X, actions, rewards, sample_weight):
        # At the door, before a restart or a stored perturbation: the logistic
        # likelihood needs rewards in [0, 1], the Poisson one non-negative rewards.
        high = {"logistic": 1.0, "poisson": np.inf}.get(self.link)
        if high is not None:
            reason = f"the {self.link} link's likelihood"
            check_reward_range(rewards, type(self).__name__, reason, high=high)
        super()._update(X, actions, rewards, sample_weight)

    def _update_phase(self, X, actions, rewards, sample_weight, perturbations):
        if self._groups is None:  # fitted from Dask collections, this phase
            raise ValueError(
                "GLMES was fitted from Dask collections and holds no history of rows, "
                "which its partial_fit refits the members on (until the next restart); "
                "fit it again on the old and new logs together, or fit it in memory. "
                "The policy was left unchanged."
            )
        w = np.ones(actions.shape[0]) if sample_weight is None else sample_weight
        rows = self._learning_rows(X, actions)
        blocks = self._arm_blocks[actions]
        groups = self._groups
        plan = groups.plan(blocks, rows)
        touched = np.unique(blocks)
        g_block, g_X, g_count, g_reward, _ = groups.preview(
            plan, blocks, rows, w, w * rewards, np.zeros(w.shape, np.int64), touched
        )
        n_old, n_new = groups.n_groups, plan.new_rows.shape[0]
        noise = np.zeros((self.n_models_, n_old + n_new))
        noise[:, :n_old] = self._group_noise
        np.add.at(
            noise, (slice(None), plan.ids), (np.sqrt(w)[:, None] * perturbations).T
        )
        # preview's order: the touched blocks' old groups, then the new ones
        cols = np.r_[
            np.flatnonzero(np.isin(groups.block, touched)), n_old : n_old + n_new
        ]
        target = g_reward + noise[:, cols]  # (m, groups): sum of w (Y + Z^j)
        local = np.searchsorted(touched, g_block)
        coef_init = self._coef[:, touched]
        if self.solver == "newton":
            coef, _ = fit_glm_newton(
                g_X,
                target,
                g_count,
                self.alpha,
                link=self._link,
                blocks=local,
                n_blocks=touched.shape[0],
                coef_init=coef_init,
                tol=self.tol,
                max_iter=self.max_iter,
            )
        else:
            coef = _gradient_descent(
                self._link,
                g_X,
                target,
                g_count,
                self.alpha,
                local,
                touched.shape[0],
                coef_init,
                self.n_steps,
                self.learning_rate,
            )
        # Nothing below can fail: commit.
        groups.commit(plan, blocks, rows, w, w * rewards, np.zeros(w.shape, np.int64))
        new_coef = self._coef.copy()
        new_coef[:, touched] = coef
        self._coef = new_coef
        self._group_noise = noise
        self._perturbations = self._store(perturbations)

    @classmethod
    def _get_test_params(cls):
        return [
            {"n_actions": 3, "n_warmup": 5, "random_state": 0},
            {"solver": "gd", "link": "identity", "n_warmup": 0, "horizon": 40},
            {"warmup": "random", "n_warmup": 4, "link": "poisson", "n_models": 3},
        ]


_fill_docstring(GLMES, 10)
