"""Optimistic logistic (GLM) bandit policies: GLM-UCB and UCB-GLM.

The UCB baselines of the logistic experiments (section 5.2) of Kveton, Szepesvari,
Ghavamzadeh and Boutilier, "Perturbed-history exploration in stochastic linear bandits"
(UAI 2019). Both keep the history as grouped rows (:mod:`._logistic_groups`), fit the
L2-penalised maximum-likelihood (MAP) estimate with the shared Newton solver,
warm-started, after each update, and add a confidence width to ``x^T theta``. Shared
contexts give each arm its own parameter block (disjoint models); per-arm contexts share
one.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from scipy.special import expit

from skbandit._docstrings import Substitution
from skbandit.base import BasePolicy
from skbandit.policies._glm._logistic_groups import (
    _GLM_CONSTRAINTS,
    LogisticGroupsMixin,
)
from skbandit.utils._param_validation import Interval
from skbandit.utils._standardize import standardize_doc
from skbandit.utils._tags import DeterministicSelectMixin

__all__ = ["GLMUCB", "UCBGLM"]


_UCB_CONSTRAINTS = {
    **_GLM_CONSTRAINTS,
    "beta": [Interval(Real, 0, None, closed="left"), None],
    "c_mu": [Interval(Real, 0, None, closed="neither")],
    "delta": [Interval(Real, 0, 1, closed="neither"), None],
    "horizon": [Interval(Integral, 1, None, closed="left"), None],
}


class _GLMOptimismMixin(DeterministicSelectMixin, LogisticGroupsMixin):
    """Round indices, horizon and confidence level of the two GLM UCB policies."""

    _keeps_gram = True

    # GLM-UCB and UCB-GLM take the same parameters; only the bonus differs.
    _parameter_constraints = dict(_UCB_CONSTRAINTS)

    def __init__(
        self,
        n_actions=None,
        *,
        alpha=1.0,
        beta=1.0,  # UCB-GLM's default; GLM-UCB passes its own
        c_mu=0.25,
        delta=None,
        horizon=None,
        fit_intercept=True,
        max_iter=100,
        tol=1e-6,
        standardize="auto",
        random_state=None,
    ):
        self.n_actions = n_actions
        self.alpha = alpha
        self.beta = beta
        self.c_mu = c_mu
        self.delta = delta
        self.horizon = horizon
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.standardize = standardize
        self.random_state = random_state

    def _rounds(self, n_rows):
        """1-based index ``t`` of each round being decided."""
        return self.n_samples_seen_ + np.arange(1, n_rows + 1, dtype=np.float64)

    def _horizon_delta(self, t):
        n = t if self.horizon is None else np.full_like(t, float(self.horizon))
        delta = 1.0 / np.maximum(n, 1.0) if self.delta is None else self.delta
        return n, delta

    def _scores(self, X, return_std):
        Xk = self._design(self._arm_features(X))
        mean = expit(self._linear_scores(Xk))
        return mean, (self._gram.widths(Xk, self._arm_blocks) if return_std else None)


@Substitution(standardize=standardize_doc())
class GLMUCB(_GLMOptimismMixin, BasePolicy):
    """GLM-UCB of Filippi et al. (2010): optimism on the mean (reward) scale.

    Plays ``argmax sigma(x^T theta_hat) + rho(t) ||x||_{V_t^{-1}}`` where
    ``theta_hat`` is the penalised MLE, ``V_t = alpha I + sum x x^T`` and

    ``rho(t) = (2 k_mu kappa R_max / c_mu) sqrt(2 d log(t) log(2 d n / delta))``

    with ``k_mu = 1/4`` (Lipschitz constant of the sigmoid), ``R_max = 1``,
    ``kappa = sqrt(3 + 2 log(1 + 2 c_m^2 / alpha))``, ``c_m`` the largest feature norm
    seen (in training and in the contexts being scored), ``d`` the model dimension and
    ``t`` the current round (1-based, ``n_samples_seen_ + 1`` for the next round), as in
    Filippi et al. (the code of the perturbed-history paper's authors evaluates it
    once at ``t = n``), when ``beta=None``. That theory width is extremely
    conservative: it explores for thousands of rounds (477 and 490 mistakes in
    1,000 rounds of standard-scaled breast_cancer as a 2-arm bandit, random's
    about 500), so the default is a fixed multiplier, ``rho = beta = 0.5``.
    The perturbed-history paper's GLM-UCB (Kveton et al., UAI 2019, section 5.2,
    Figure 2) is ``beta=None, alpha=1, horizon=n, fit_intercept=False``.

    Read more in the :ref:`User Guide <policies>`.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    alpha : float, default=1.0
        Penalty ``alpha ||theta||^2`` of the MLE, the perturbed-history paper's
        ``lambda ||theta||^2`` (its section 3.3; scikit-learn's
        ``LogisticRegression(C=1 / (2 alpha))``), and ridge of ``V_t``. That paper
        uses 1.
    beta : float or None, default=0.5
        Width multiplier replacing ``rho(t)`` (a width on the reward scale, as
        :class:`LinUCB`'s ``beta``); ``None`` uses the theory value ``rho(t)``.
    c_mu : float, default=0.25
        Minimum derivative of the mean function (in ``rho(t)``, ``beta=None``
        only); the perturbed-history paper sets the "most optimistic" 1/4.
    delta : float or None, default=None
        Confidence level; ``None`` is ``1 / n``.
    horizon : int or None, default=None
        The ``n`` in ``rho``; ``None`` uses the current round ``t`` (anytime).
    fit_intercept : bool, default=True
        Append a constant feature (penalised like the others, as in the paper).
    max_iter : int, default=100
        Newton iterations of the MLE.
    tol : float, default=1e-6
        Newton tolerance (largest coordinate of the last step).
    %(standardize)s
    random_state : int, RandomState instance or None, default=None
        Breaks ties in :meth:`select`.

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
        Penalised MLE per parameter block.

    See Also
    --------
    UCBGLM : Optimism on the linear-predictor scale.
    LogTS : Laplace Thompson sampling.

    References
    ----------
    .. [1] Filippi, Cappe, Garivier, Szepesvari. "Parametric bandits: the generalized
       linear case". NeurIPS 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import GLMUCB
    >>> X = np.random.RandomState(0).normal(size=(6, 2))
    >>> policy = GLMUCB(n_actions=3, random_state=0)
    >>> policy = policy.fit(X, [0, 1, 2, 0, 1, 2], [1.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    >>> policy.select(X[:2]).shape
    (2,)
    """

    def __init__(
        self,
        n_actions=None,
        *,
        alpha=1.0,
        beta=0.5,
        c_mu=0.25,
        delta=None,
        horizon=None,
        fit_intercept=True,
        max_iter=100,
        tol=1e-6,
        standardize="auto",
        random_state=None,
    ):
        super().__init__(
            n_actions,
            alpha=alpha,
            beta=beta,
            c_mu=c_mu,
            delta=delta,
            horizon=horizon,
            fit_intercept=fit_intercept,
            max_iter=max_iter,
            tol=tol,
            standardize=standardize,
            random_state=random_state,
        )

    def _rho(self, t, max_norm):
        """Filippi et al.'s ``rho(t)`` for rounds ``t`` (array)."""
        if self.beta is not None:
            return np.full_like(t, float(self.beta))
        d = self._coef.shape[1]
        n, delta = self._horizon_delta(t)
        kappa = np.sqrt(3.0 + 2.0 * np.log(1.0 + 2.0 * max_norm**2 / self.alpha))
        k_mu, r_max = 0.25, 1.0
        return (2.0 * k_mu * kappa * r_max / self.c_mu) * np.sqrt(
            2.0 * d * np.log(t) * np.log(2.0 * d * n / delta)
        )

    def _score_sampler(self, X):
        Xk = self._design(self._arm_features(X))
        max_norm = max(self._max_norm, float(np.max(np.linalg.norm(Xk, axis=-1))))
        rho = self._rho(self._rounds(X.shape[0]), max_norm)
        width = self._gram.widths(Xk, self._arm_blocks)
        ucb = expit(self._linear_scores(Xk)) + rho[:, None] * width
        return lambda rng: ucb

    @classmethod
    def _get_test_params(cls):
        return [{"n_actions": 3, "random_state": 0}, {"beta": None, "horizon": 100}]


@Substitution(standardize=standardize_doc())
class UCBGLM(_GLMOptimismMixin, BasePolicy):
    """UCB-GLM of Li, Lu and Zhou (2017): optimism on the linear-predictor scale.

    Plays ``argmax x^T theta_hat + beta ||x||_{V_t^{-1}}`` with the penalised MLE
    ``theta_hat`` and ``V_t = alpha I + sum x x^T``. By default ``beta = 1``, a fixed
    width on the logit scale, as :class:`LinUCB`'s on the reward scale. With
    ``beta=None`` it is the theory width

    ``beta = (sigma / c_mu) sqrt((d / 2) log(1 + 2 n / d) + log(1 / delta))``

    with ``sigma = 1/2`` (sub-Gaussian constant of rewards in [0, 1]) and ``d`` the
    model dimension, which explores for thousands of rounds (768 mistakes in 1,000
    rounds on standard-scaled digits as a 10-arm bandit, random's 905; 297 with
    ``beta=1``). As in the perturbed-history paper (Kveton et al., UAI 2019), Li et
    al.'s random initial exploration phase is replaced by the regularisation
    ``alpha``; that paper's UCB-GLM (section 5.2, Figure 2) is ``beta=None,
    alpha=1, horizon=n, fit_intercept=False``.

    Read more in the :ref:`User Guide <policies>`.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    alpha : float, default=1.0
        Penalty ``alpha ||theta||^2`` of the MLE (the perturbed-history paper's
        ``lambda``; ``LogisticRegression(C=1 / (2 alpha))``), and ridge of ``V_t``.
        That paper uses 1.
    beta : float or None, default=1.0
        Width multiplier on the logit scale; ``None`` uses the theory value above
        (the paper's).
    c_mu : float, default=0.25
        Minimum derivative of the mean function (Li et al.'s ``kappa``) in the
        theory width (``beta=None``); the perturbed-history paper uses 1/4.
    delta : float or None, default=None
        Confidence level; ``None`` is ``1 / n``.
    horizon : int or None, default=None
        The ``n`` of the formula; ``None`` uses the current round ``t`` (anytime).
    fit_intercept : bool, default=True
        Append a constant feature.
    max_iter : int, default=100
        Newton iterations of the MLE.
    tol : float, default=1e-6
        Newton tolerance.
    %(standardize)s
    random_state : int, RandomState instance or None, default=None
        Breaks ties in :meth:`select`.

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
        Penalised MLE per parameter block.

    See Also
    --------
    GLMUCB : Optimism on the mean scale.

    References
    ----------
    .. [1] Li, Lu, Zhou. "Provably optimal algorithms for generalized linear contextual
       bandits". ICML 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import UCBGLM
    >>> X = np.random.RandomState(0).normal(size=(6, 2))
    >>> policy = UCBGLM(n_actions=3, horizon=100, random_state=0)
    >>> policy = policy.fit(X, [0, 1, 2, 0, 1, 2], [1.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    >>> policy.predict_scores(X[:2]).shape
    (2, 3)
    """

    def _width_multiplier(self, t):
        if self.beta is not None:
            return np.full_like(t, float(self.beta))
        d = self._coef.shape[1]
        n, delta = self._horizon_delta(t)
        return (0.5 / self.c_mu) * np.sqrt(
            0.5 * d * np.log(1.0 + 2.0 * n / d) + np.log(1.0 / delta)
        )

    def _score_sampler(self, X):
        Xk = self._design(self._arm_features(X))
        mult = self._width_multiplier(self._rounds(X.shape[0]))
        width = self._gram.widths(Xk, self._arm_blocks)
        ucb = self._linear_scores(Xk) + mult[:, None] * width
        return lambda rng: ucb

    @classmethod
    def _get_test_params(cls):
        return [{"n_actions": 3, "random_state": 0}, {"beta": 0.5, "delta": 0.1}]
