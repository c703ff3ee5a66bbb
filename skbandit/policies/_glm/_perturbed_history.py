"""Perturbed-history exploration: LinPHE and LogPHE (Kveton et al., UAI 2019).

Each round, every stored observation gets fresh Bernoulli(1/2) pseudo-rewards; the model
fitted to the perturbed history is played greedily (Kveton, Szepesvari, Ghavamzadeh,
Boutilier, "Perturbed-history exploration in stochastic linear bandits", Algorithm 1
and section 3.3). The history is kept as groups of identical rows (``_grouped``): with a
fixed arm set this is the paper's constant-cost form (eq. 4), with contextual rows the
per-observation form of eq. (1), with no switch between them.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from scipy.special import expit

from skbandit._base._arms import with_prior_rows
from skbandit._docstrings import Substitution
from skbandit.base import BasePolicy
from skbandit.policies._core._grouped_rows import GroupedRows, pseudo_counts
from skbandit.policies._core._newton import BlockSum, fit_logistic_newton
from skbandit.policies._core._ridge import ArmBlocksMixin, RidgeBlocks, add_intercept
from skbandit.policies._glm._logistic_groups import (
    _GLM_CONSTRAINTS,
    LogisticGroupsMixin,
)
from skbandit.utils._param_validation import Interval
from skbandit.utils._standardize import standardize_doc

__all__ = ["LinPHE", "LogPHE"]


class PHEMixin(ArmBlocksMixin):
    """Warm-up rounds, selection and tags shared by LinPHE and LogPHE.

    Subclasses have ``perturbation_scale`` and ``n_init``, and implement
    ``_perturbed_coef(U)`` (the fit on the history with pseudo-rewards ``U``) and
    ``_perturbed_scores(s)`` (its linear scores on the reward scale).
    """

    _blas_small_work = True
    _blas_history = True  # redraws over the history

    @property
    def _pseudo_scale(self):
        return float(self.perturbation_scale)

    def _n_init_rounds(self):
        if self.n_init is not None:
            return self.n_init
        return self.n_features_in_ + int(self.fit_intercept)

    def _warmup(self, n_rows):
        """Rows of a ``select`` batch that fall in the first ``n_init`` rounds."""
        rounds = self.n_samples_seen_ + np.arange(n_rows)
        return rounds, rounds < self._n_init_rounds()

    def _warmup_actions(self, rounds, mask):
        # Algorithm 1, line 12: the basis arms K, K-1, ... (0-based K-1, K-2, ...),
        # cycling when there are more rounds than arms; a masked arm passes its turn.
        K = self.n_actions_
        order = K - 1 - (rounds[:, None] + np.arange(K)) % K
        if mask is None:
            return order[:, 0]
        first = np.argmax(np.take_along_axis(mask, order, axis=1), axis=1)
        return order[np.arange(order.shape[0]), first]

    def _forced_actions(self, X, mask):
        rounds, warm = self._warmup(X.shape[0])
        if not warm.any():
            return None
        return warm, self._warmup_actions(
            rounds[warm], None if mask is None else mask[warm]
        )

    def _score_sampler(self, X):
        if self._pseudo_scale == 0:
            return super()._score_sampler(X)
        g, blocks = self._groups, self._arm_blocks
        Xk = self._design(self._arm_features(X))  # once for all draws

        def draw(rng):
            if rng is None:  # the unperturbed fit
                return self._scores(X, False)[0]
            s = np.empty(Xk.shape[:2])
            for rows in self._row_chunks(X.shape[0]):
                n = Xk[rows].shape[0]
                U = rng.binomial(g.pseudo, 0.5, size=(n, g.n_groups))
                theta = self._perturbed_coef(U.astype(np.float64))
                s[rows] = np.einsum("nkd,nkd->nk", Xk[rows], theta[:, blocks])
            return self._perturbed_scores(s)

        return draw

    def _row_chunks(self, n_rows):
        """Row slices of a ``select`` batch whose draws (rows x groups) fit memory."""
        step = max(1, _DRAWS_PER_CHUNK // max(1, self._groups.n_groups))
        return [slice(i, i + step) for i in range(0, n_rows, step)]

    def _to_reward_scale(self, s):
        """Perturbed-target scale ``(mu + a/2) / (a + 1)`` back to ``mu`` (P4)."""
        a = self._pseudo_scale
        return (a + 1.0) * s - 0.5 * a

    @property
    def n_groups_(self):
        """Number of distinct (block, feature row) groups the history is stored as."""
        return self._groups.n_groups

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        a = self.perturbation_scale
        greedy = isinstance(a, Real) and a == 0
        tags.policy_tags.exact_partial_fit = True
        tags.policy_tags.stochastic_select = not greedy
        tags.policy_tags.exact_action_proba = greedy
        return tags


#: Pseudo-reward draws held at once by ``select`` (rows times groups).
_DRAWS_PER_CHUNK = 1 << 20

_PHE_CONSTRAINTS = {
    "perturbation_scale": [Interval(Real, 0, None, closed="left")],
    "n_init": [Interval(Integral, 0, None, closed="left"), None],
}


class LinPHE(PHEMixin, BasePolicy):
    """Linear perturbed-history exploration (LinPHE, Algorithm 1 of Kveton et al.).

    Observation ``r`` is stored with ``m_r`` pseudo-reward slots. Each :meth:`select`
    round draws fresh ``S_r ~ B(m_r, 1/2)`` and plays ``argmax x^T theta~`` with

    ``theta~ = G^{-1} sum_r x_r (Y_r + S_r)``, ``G = sum_r (1 + m_r) x_r x_r^T +
    alpha (a + 1) I``

    (eq. 1-2 of the paper, ``a`` the perturbation scale, rewards rescaled to [0, 1]).
    Observations of action ``i`` get pseudo-counts by a Bresenham rule fixed at
    insertion, ``m = ceil(a k) - ceil(a (k - 1))`` for its ``k``-th, so integer ``a``
    is exactly Algorithm 1 and non-integer ``a`` gives the paper's ``B(ceil(a T_i),
    1/2)`` with Gram weight ``T_i + ceil(a T_i)`` (section 5.1). Identical rows are
    merged: a fixed arm set costs ``O(K d + B d^2)`` per round whatever ``t``
    (eq. 4), contextual rows ``O(t d)``; updates are ``O(d^2)`` (Sherman-Morrison).

    The first ``n_init`` rounds pull arms ``K-1, K-2, ...`` (0-based; line 12 of
    Algorithm 1, the basis arms when the last ``d`` arms form a basis), cycling
    when ``n_init > K``.

    :meth:`predict_scores` is the mean-replaced estimate (pseudo-rewards at their mean
    1/2, eq. 3) mapped back to the reward scale, ``(a + 1) x^T theta_bar - a/2``
    (ridge regression up to an ``O(alpha)`` term); ``return_std`` gives the standard
    deviation of ``x^T theta~`` on the reward scale,
    ``(a + 1) sqrt(x^T G^{-1} (1/4 sum_r m_r x_r x_r^T) G^{-1} x)``.

    The paper's Figure 1 runs ``perturbation_scale`` in {2, 1, 0.5} with per-arm
    contexts whose last feature is 1 (``fit_intercept=False``, or the default
    intercept on the remaining features); the paper does not state its ``lambda``:
    ``alpha=1`` (default) and ``1e-3`` differ by under 10 % in regret on its
    problems.

    Read more in the :ref:`User Guide <policies>`.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    alpha : float, default=1.0
        Ridge strength ``lambda``; the prior term of ``G`` is ``alpha (a + 1) I``.
    perturbation_scale : float, default=0.3
        The paper's ``a``: pseudo-rewards per real reward. ``0`` is ridge-greedy.
        The paper's figures run 2, 1 and 0.5; the default was 1 until the
        default-quality study of the policies guide (on standard-scaled data 1 was
        up to 2.7x the best, 0.3 is within 1.3x of it on every problem).
    n_init : int or None, default=None
        Warm-up rounds; ``None`` is the model dimension ``d`` (features plus intercept).
    reward_range : tuple of (float, float), default=(0.0, 1.0)
        Bounds ``(low, high)`` of the rewards, rescaled internally to [0, 1] as the
        paper prescribes; a reward outside raises ``ValueError``.
    fit_intercept : bool, default=True
        Append a constant feature (penalised like the others). PHE needs a constant
        feature to absorb the ``a/2`` shift of its targets: without one the linear
        model of the perturbed targets is misspecified.
    random_state : int, RandomState instance or None, default=None
        Controls the pseudo-rewards and ties in :meth:`select`.

    Attributes
    ----------
    n_actions_ : int
        Number of arms.
    n_features_in_ : int
        Number of context features.
    n_samples_seen_ : int
        Rounds of feedback learnt from.
    action_counts_ : ndarray of shape (n_actions_,)
        Feedback rounds per arm.
    n_groups_ : int
        Distinct (block, feature row) groups of the history.

    See Also
    --------
    LogPHE : The logistic version.
    LinTS : Gaussian posterior sampling in the same model.

    Notes
    -----
    ``sample_weight`` counts observations: weight ``w`` adds ``w`` to the real count
    and advances the action's Bresenham counter by ``w``, so an integer weight equals
    repeating the row (with pooled pseudo-rewards).

    References
    ----------
    .. [1] Kveton, Szepesvari, Ghavamzadeh, Boutilier. "Perturbed-history exploration
       in stochastic linear bandits". UAI 2019. arXiv:1903.09132.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import LinPHE
    >>> arms = np.random.RandomState(0).normal(size=(1, 4, 2))
    >>> policy = LinPHE(random_state=0)
    >>> policy.select(np.repeat(arms, 3, axis=0))  # warm-up: arms K-1, K-2, ...
    array([3, 2, 1])
    >>> X = np.repeat(arms, 3, axis=0)
    >>> policy = policy.partial_fit(X, [3, 2, 1], [1.0, 0.0, 1.0])
    >>> policy.predict_scores(arms).shape
    (1, 4)
    """

    _parameter_constraints = {
        **BasePolicy._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="neither")],
        **_PHE_CONSTRAINTS,
        "reward_range": [tuple, list],
        "fit_intercept": ["boolean"],
    }

    def __init__(
        self,
        n_actions=None,
        *,
        alpha=1.0,
        perturbation_scale=0.3,
        n_init=None,
        reward_range=(0.0, 1.0),
        fit_intercept=True,
        random_state=None,
    ):
        self.n_actions = n_actions
        self.alpha = alpha
        self.perturbation_scale = perturbation_scale
        self.n_init = n_init
        self.reward_range = reward_range
        self.fit_intercept = fit_intercept
        self.random_state = random_state

    def _init_state(self):
        self._reward_bounds()  # fails early on a bad reward_range
        d = self.n_features_in_ + int(self.fit_intercept)
        a = self._pseudo_scale
        self._ridge = RidgeBlocks(self._n_blocks, d, self.alpha * (a + 1.0))
        self._groups = GroupedRows(d)
        self._weight_seen = np.zeros(self.n_actions_)
        self._pseudo_gram = np.zeros((self._n_blocks, d, d))

    def _add_arms(self, n_new):
        # Each new arm starts with no history (its pseudo-reward count at zero) and,
        # with shared contexts, a prior block; the warm-up rounds are not replayed.
        self._weight_seen = with_prior_rows(self._weight_seen, n_new, 0.0)
        if not self._per_arm_contexts:
            alpha = self.alpha * (self._pseudo_scale + 1.0)
            self._ridge = self._ridge.grown(n_new, alpha)
            self._pseudo_gram = with_prior_rows(self._pseudo_gram, n_new, 0.0)

    def _reward_bounds(self):
        try:
            low, high = (float(v) for v in self.reward_range)
        except (TypeError, ValueError):
            low = high = np.nan
        if not (np.isfinite(low) and np.isfinite(high) and low < high):
            raise ValueError(
                "reward_range must be a pair (low, high) of finite floats with "
                f"low < high, got {self.reward_range!r}."
            )
        return low, high

    def _design(self, X):
        return add_intercept(X) if self.fit_intercept else X

    def _update(self, X, actions, rewards, sample_weight):
        low, high = self._reward_bounds()
        bad = (rewards < low) | (rewards > high)
        if np.any(bad):
            raise ValueError(
                f"rewards must lie in reward_range={self.reward_range!r} (PHE's "
                f"Bernoulli(1/2) pseudo-rewards assume bounded rewards), got "
                f"{rewards[bad][0]!r}."
            )
        w = np.ones(actions.shape[0]) if sample_weight is None else sample_weight
        keep = w > 0
        rows = self._design(self._chosen_features(X, actions))[keep]
        actions, w = actions[keep], w[keep]
        y = (rewards[keep] - low) / (high - low)
        if rows.shape[0] == 0:
            return
        blocks = self._arm_blocks[actions]
        m, weight_seen = pseudo_counts(
            actions, w, self._weight_seen, self._pseudo_scale
        )
        plan = self._groups.plan(blocks, rows)
        # The last step that may raise; it writes only once all values are finite.
        self._ridge.update(blocks, rows, w * y / (w + m), weight=w + m)
        self._groups.commit(plan, blocks, rows, w, w * y, m)
        self._weight_seen = weight_seen
        np.add.at(
            self._pseudo_gram,
            blocks,
            m[:, None, None] * rows[:, :, None] * rows[:, None, :],
        )

    def _perturbed_coef(self, U):
        """``theta~ = G^{-1} (sum x Y + sum_g x_g U_g)`` per block for draws ``U``.

        ``U`` has shape (n, n_groups): the summed pseudo-rewards of every group in each
        of ``n`` rounds. Returns shape (n, n_blocks, d).
        """
        g = self._groups
        n_blocks = self._ridge.moment.shape[0]
        return self._ridge.perturbed_coef(BlockSum(g.X, g.block, n_blocks)(U))

    def _mean_coef(self):
        """Mean-replaced ``theta_bar`` (eq. 3), shape (n_blocks, d)."""
        return self._perturbed_coef(0.5 * self._groups.pseudo[None].astype(float))[0]

    def _scores(self, X, return_std):
        low, high = self._reward_bounds()
        Xk = self._design(self._arm_features(X))
        blocks = self._arm_blocks
        s = np.einsum("nkd,kd->nk", Xk, self._mean_coef()[blocks])
        mean = low + (high - low) * self._to_reward_scale(s)
        if not return_std:
            return mean, None
        u = np.einsum("kde,nke->nkd", self._ridge.covariance[blocks], Xk)
        quad = 0.25 * np.einsum("nkd,kde,nke->nk", u, self._pseudo_gram[blocks], u)
        scale = (high - low) * (self._pseudo_scale + 1.0)
        return mean, scale * np.sqrt(np.maximum(quad, 0.0))

    def _perturbed_scores(self, s):
        """Reward-scale scores of the perturbed linear scores ``s``, shape (n, K)."""
        low, high = self._reward_bounds()
        return low + (high - low) * self._to_reward_scale(s)

    @classmethod
    def _get_test_params(cls):
        return [
            {"n_actions": 3, "random_state": 0},
            {"perturbation_scale": 0.5, "n_init": 0, "reward_range": (-1.0, 1.0)},
        ]


@Substitution(standardize=standardize_doc())
class LogPHE(PHEMixin, LogisticGroupsMixin, BasePolicy):
    """Logistic perturbed-history exploration (LogPHE, section 3.3 of Kveton et al.).

    Each :meth:`select` round draws, for every group of identical rows, ``U_g ~
    B(M_g, 1/2)`` Bernoulli pseudo-labels (never soft 1/2 labels, which would not
    explore), and plays
    ``argmax x^T theta~`` where ``theta~`` minimises the perturbed cross-entropy

    ``sum_g (V_g + U_g) softplus(-x_g^T theta) + (T_g - V_g + M_g - U_g)
    softplus(x_g^T theta) + alpha ||theta||^2``

    (``T_g`` real observations with ``V_g`` positives; pseudo-counts ``M_g`` as in
    :class:`LinPHE`). It is solved by Newton's method warm-started at the
    mean-replaced solution; with a fixed arm set each iteration costs ``O(K d^2 +
    d^3)``, independent of ``t``. The penalty is the paper's ``lambda ||theta||^2``
    (not the ``(1/2)||theta||^2`` of the authors' code), i.e.
    ``LogisticRegression(C=1 / (2 alpha), fit_intercept=False)`` on the expanded rows,
    and it is not multiplied by ``a + 1``.

    :meth:`predict_scores` maps the mean-replaced fit ``theta_bar`` (pseudo-labels
    counted as half positive, half negative) back to the reward scale,
    ``(a + 1) sigma(x^T theta_bar) - a/2``; ``return_std`` is the delta-method
    standard deviation of ``(a + 1) sigma(x^T theta~)``, ``(a + 1) sigma'(x^T
    theta_bar) sqrt(x^T H^{-1} (1/4 sum_g M_g x_g x_g^T) H^{-1} x)`` with ``H`` the
    Hessian at ``theta_bar`` (exact in the linear case).

    The paper's Figure 2 runs ``perturbation_scale`` in {2, 1, 0.5} with ``alpha=1``
    (presumably) on per-arm contexts.

    Read more in the :ref:`User Guide <policies>`.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    alpha : float, default=1.0
        Penalty ``alpha ||theta||^2`` (the paper's ``lambda``).
    perturbation_scale : float, default=0.3
        The paper's ``a``. ``0`` is the penalised MLE played greedily. The default
        was 1 until the default-quality study of the policies guide (on
        standard-scaled digits and wine 1 was 2x the best; 0.3 is within 1.5x).
    n_init : int or None, default=None
        Warm-up rounds pulling arms ``K-1, K-2, ...``; ``None`` is the model dimension.
    fit_intercept : bool, default=True
        Append a constant feature (penalised like the others).
    max_iter : int, default=100
        Newton iterations per fit.
    tol : float, default=1e-6
        Newton tolerance (largest coordinate of the last step).
    %(standardize)s
    random_state : int, RandomState instance or None, default=None
        Controls the pseudo-labels and ties in :meth:`select`.

    Attributes
    ----------
    n_actions_ : int
        Number of arms.
    n_features_in_ : int
        Number of context features.
    n_samples_seen_ : int
        Rounds of feedback learnt from.
    action_counts_ : ndarray of shape (n_actions_,)
        Feedback rounds per arm.
    coef_ : ndarray of shape (n_blocks, n_features_in_)
        Mean-replaced solution ``theta_bar`` per block.
    n_groups_ : int
        Distinct (block, feature row) groups of the history.

    See Also
    --------
    LinPHE : The linear version.
    LogTS : Laplace posterior sampling in the same model.

    References
    ----------
    .. [1] Kveton, Szepesvari, Ghavamzadeh, Boutilier. "Perturbed-history exploration
       in stochastic linear bandits". UAI 2019. arXiv:1903.09132.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import LogPHE
    >>> arms = np.random.RandomState(0).normal(size=(1, 4, 2))
    >>> policy = LogPHE(n_init=0, random_state=0)
    >>> policy = policy.fit(np.repeat(arms, 3, axis=0), [3, 2, 1], [1.0, 0.0, 1.0])
    >>> policy.select(arms).shape
    (1,)
    """

    _parameter_constraints = {**_GLM_CONSTRAINTS, **_PHE_CONSTRAINTS}

    def __init__(
        self,
        n_actions=None,
        *,
        alpha=1.0,
        perturbation_scale=0.3,
        n_init=None,
        fit_intercept=True,
        max_iter=100,
        tol=1e-6,
        standardize="auto",
        random_state=None,
    ):
        self.n_actions = n_actions
        self.alpha = alpha
        self.perturbation_scale = perturbation_scale
        self.n_init = n_init
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.standardize = standardize
        self.random_state = random_state

    def _perturbed_coef(self, U):
        """Solutions of the perturbed problems for draws ``U``, shape (n, n_groups)."""
        g = self._groups
        coef, _ = fit_logistic_newton(
            g.X,
            g.reward + U,
            g.count - g.reward + g.pseudo - U,
            self._l2,
            blocks=g.block,
            n_blocks=self._coef.shape[0],
            coef_init=self._coef,
            tol=self.tol,
            max_iter=self.max_iter,
        )
        return coef

    def _scores(self, X, return_std):
        Xk = self._design(self._arm_features(X))
        eta = self._linear_scores(Xk)
        p = expit(eta)
        mean = self._to_reward_scale(p)
        if not return_std:
            return mean, None
        blocks = self._arm_blocks
        u = np.einsum("kde,nke->nkd", self._hess_inv[blocks], Xk)
        quad = 0.25 * np.einsum("nkd,kde,nke->nk", u, self._pseudo_gram[blocks], u)
        scale = (self._pseudo_scale + 1.0) * p * (1.0 - p)
        return mean, scale * np.sqrt(np.maximum(quad, 0.0))

    def _perturbed_scores(self, s):
        """Reward-scale scores of the perturbed logits ``s``, shape (n, K)."""
        return self._to_reward_scale(expit(s))

    @classmethod
    def _get_test_params(cls):
        return [
            {"n_actions": 3, "random_state": 0},
            {"perturbation_scale": 0.5, "n_init": 0, "alpha": 0.5},
        ]
