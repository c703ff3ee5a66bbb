"""Linear policies on ridge regression: LinUCB, LinTS and ridge epsilon-greedy.

Shared contexts ``(n, d)`` give each arm its own ridge block (disjoint LinUCB of Li et
al. 2010); per-arm contexts ``(n, K, d)`` give one shared parameter vector (OFUL of
Abbasi-Yadkori et al. 2011, LinTS of Agrawal & Goyal 2013), as in the papers.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.linear_model import SGDRegressor

from skbandit.base import BasePolicy
from skbandit.policies._core._estimator_model import EstimatorModelMixin
from skbandit.policies._core._ridge import (
    LINEAR_CONSTRAINTS,
    ArmBlocksMixin,
    RidgeBlocks,
    add_intercept,
    gaussian_score_sampler,
)
from skbandit.utils._param_validation import HasMethods, Interval, StrOptions
from skbandit.utils._tags import DeterministicSelectMixin, ExactPartialFitMixin

__all__ = ["EpsilonGreedy", "LinTS", "LinUCB"]


class LinearPolicyMixin(ExactPartialFitMixin, ArmBlocksMixin):
    """Ridge blocks behind a linear policy: its state, updates, scores and arms.

    The base of the linear family (:class:`~skbandit.policies.LinUCB`,
    :class:`~skbandit.policies.LinTS`, :class:`~skbandit.policies.EpsilonGreedy`):
    a ridge block ``A = alpha I + sum w x x^T``, ``b = sum w r x`` per arm for shared
    contexts (disjoint models), one block shared by all arms for per-arm contexts,
    updated in closed form. It fills in the hooks ``_init_state``, ``_update``,
    ``_scores`` (the ridge mean ``x^T A^{-1} b`` and the width ``||x||_{A^{-1}}``)
    and ``_add_arms``. A policy on it adds what ``select`` maximises,
    ``_score_sampler(X)`` (by default the mean: the greedy policy), and its tags
    (:class:`~skbandit.base.DeterministicSelectMixin` for an index policy); chunks
    of feedback sum to the whole batch (the ``exact_partial_fit`` tag).

    A policy on this base has the parameters ``alpha`` (the ridge strength) and
    ``fit_intercept`` (append a constant feature, penalised like the others), whose
    constraints are :data:`~skbandit.policies.base.LINEAR_CONSTRAINTS`.

    See Also
    --------
    skbandit.base.BasePolicy : The verbs and the hooks of every policy.

    Examples
    --------
    A greedy policy on the ridge means (the default ``_score_sampler``):

    >>> from skbandit.base import BasePolicy, DeterministicSelectMixin
    >>> from skbandit.policies.base import LINEAR_CONSTRAINTS, LinearPolicyMixin
    >>> class RidgeGreedy(DeterministicSelectMixin, LinearPolicyMixin, BasePolicy):
    ...     _parameter_constraints = LINEAR_CONSTRAINTS
    ...
    ...     def __init__(self, n_actions=None, *, alpha=1.0, fit_intercept=True,
    ...                  random_state=None):
    ...         self.n_actions = n_actions
    ...         self.alpha = alpha
    ...         self.fit_intercept = fit_intercept
    ...         self.random_state = random_state
    >>> policy = RidgeGreedy().fit([[1.0, 0.0], [0.0, 1.0]], [0, 1], [1.0, 0.0])
    >>> policy.predict([[1.0, 0.0], [0.0, 1.0]])
    array([0, 0])
    """

    _blas_small_work = True  # ridge blocks: many small BLAS calls

    def _init_state(self):
        n_dims = self.n_features_in_ + int(self.fit_intercept)
        self._ridge = RidgeBlocks(self._n_blocks, n_dims, self.alpha)

    def _design(self, X):
        return add_intercept(X) if self.fit_intercept else X

    def _add_arms(self, n_new):
        # Shared contexts: a prior ridge block per new arm. Per-arm contexts: the one
        # theta is shared by all arms, new ones included: nothing to add.
        if not self._per_arm_contexts:
            self._ridge = self._ridge.grown(n_new, self.alpha)

    def _update(self, X, actions, rewards, sample_weight):
        blocks = np.zeros_like(actions) if self._per_arm_contexts else actions
        rows = self._chosen_features(X, actions)  # the intercept: in the gather
        self._ridge.update(
            blocks, rows, rewards, sample_weight, intercept=self.fit_intercept
        )

    def _scores(self, X, return_std):
        # Shared contexts stay (n, d): each arm's block scores the same row, and arm
        # k is block k (None: no gathered copy of the blocks).
        Z = self._design(X)
        blocks = self._arm_blocks if self._per_arm_contexts else None
        mean = self._ridge.means(Z, blocks)
        return mean, (self._ridge.widths(Z, blocks) if return_std else None)

    @property
    def coef_(self):
        """Ridge coefficients per block, shape ``(n_blocks, n_features_in_)``."""
        return self._ridge.coef[:, : self.n_features_in_]

    @property
    def intercept_(self):
        """Intercept per block, shape (n_blocks,); zeros without ``fit_intercept``."""
        if self.fit_intercept:
            return self._ridge.coef[:, -1]
        return np.zeros(self._ridge.coef.shape[0])

    @property
    def covariance_(self):
        """Inverse precision ``A^{-1}`` per block, shape (n_blocks, d, d)."""
        return self._ridge.covariance


class LinUCB(DeterministicSelectMixin, LinearPolicyMixin, BasePolicy):
    """Linear upper confidence bound policy (LinUCB / OFUL).

    Scores every arm by ``x^T theta + beta * ||x||_{A^{-1}}`` with
    ``A = alpha I + sum x x^T`` and plays the argmax (ties at random).

    Read more in the :ref:`User Guide <policies>`.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    alpha : float, default=1.0
        Ridge strength lambda (prior precision). The perturbed-history paper [3]_
        uses 1.
    beta : float, default=1.0
        Width multiplier of the confidence bound (LinUCB's alpha, OFUL's beta).
        OFUL's constant, as the perturbed-history paper [3]_ runs it, is
        ``R sqrt(d log((1 + n L^2 / lambda) / delta)) + sqrt(lambda) S`` with
        ``R = 0.5``, ``delta = 1/n``, ``L`` the largest feature norm and ``S`` a
        bound on ``||theta*||``.
    fit_intercept : bool, default=True
        Append a constant feature (penalised like the others, as in the papers).
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
        Ridge coefficients: one row per arm for shared contexts, one row for per-arm
        contexts.

    See Also
    --------
    LinTS : Thompson sampling on the same model.

    References
    ----------
    .. [1] Li, Chu, Langford, Schapire. "A contextual-bandit approach to personalized
       news article recommendation". WWW 2010.
    .. [2] Abbasi-Yadkori, Pal, Szepesvari. "Improved algorithms for linear stochastic
       bandits". NeurIPS 2011.
    .. [3] Kveton, Szepesvari, Ghavamzadeh, Boutilier. "Perturbed-history exploration
       in stochastic linear bandits". UAI 2019. arXiv:1903.09132.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import LinUCB
    >>> X = np.random.RandomState(0).normal(size=(20, 3))
    >>> policy = LinUCB(n_actions=2, random_state=0)
    >>> a = policy.select(X[:1])
    >>> policy = policy.partial_fit(X[:1], a, [1.0])
    >>> policy.predict_scores(X[:2]).shape
    (2, 2)
    """

    _parameter_constraints = {
        **LINEAR_CONSTRAINTS,
        "beta": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        n_actions=None,
        *,
        alpha=1.0,
        beta=1.0,
        fit_intercept=True,
        random_state=None,
    ):
        self.n_actions = n_actions
        self.alpha = alpha
        self.beta = beta
        self.fit_intercept = fit_intercept
        self.random_state = random_state

    # RidgeBlocks writes only once its checks pass, and the UCB draws nothing (the
    # tie-break draws after the finiteness check): no snapshot on the online path.
    _fails_cleanly = True

    def _score_sampler(self, X):
        ucb, width = self._scores(X, True)
        width *= self.beta  # in place: both are this call's own arrays
        ucb += width
        return lambda rng: ucb

    @classmethod
    def _get_test_params(cls):
        return [{"n_actions": 3, "random_state": 0}, {"beta": 0.0, "alpha": 0.5}]


class LinTS(LinearPolicyMixin, BasePolicy):
    """Linear Thompson sampling with a Gaussian posterior.

    Each round draws ``theta ~ N(theta_hat, nu^2 A^{-1})`` (one draw per block) and
    plays ``argmax x^T theta``.

    Read more in the :ref:`User Guide <policies>`.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    alpha : float, default=1.0
        Ridge strength (prior precision relative to the noise).
    nu : float, default=0.1
        Posterior scale. The prior ``N(0, I)`` with noise ``sigma = 0.5`` of the
        perturbed-history paper (Kveton et al., UAI 2019) is ``alpha=0.25,
        nu=0.5``. The default was 1 until the default-quality study of
        ``benchmarks/defaults/default_quality.py`` (user guide, "How good are the
        defaults"): 0.1 is within 1.7x of the best of ``{0.03, 0.1, 0.3, 1}`` on
        all six problems, 1 was up to 6x worse.
    fit_intercept : bool, default=True
        Append a constant feature.
    random_state : int, RandomState instance or None, default=None
        Controls the posterior draws in :meth:`select`.

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

    See Also
    --------
    LinUCB : Optimism instead of sampling.

    References
    ----------
    .. [1] Agrawal, Goyal. "Thompson sampling for contextual bandits with linear
       payoffs". ICML 2013.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import LinTS
    >>> X = np.random.RandomState(0).normal(size=(5, 3))
    >>> LinTS(n_actions=4, random_state=0).select(X).shape
    (5,)
    """

    _parameter_constraints = {
        **LINEAR_CONSTRAINTS,
        "nu": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        n_actions=None,
        *,
        alpha=1.0,
        nu=0.1,
        fit_intercept=True,
        random_state=None,
    ):
        self.n_actions = n_actions
        self.alpha = alpha
        self.nu = nu
        self.fit_intercept = fit_intercept
        self.random_state = random_state

    #: The sampler draws a stack at once (``gaussian_score_sampler``).
    _batched_draws = True

    def _scores(self, X, return_std):
        mean, width = super()._scores(X, return_std)
        return mean, (None if width is None else self.nu * width)

    def _score_sampler(self, X):
        # Shared contexts: arm k reads block k; per-arm: the arms' blocks.
        Z = self._design(X) if X.ndim == 2 else self._design(self._arm_features(X))
        chol = self._ridge.covariance_cholesky()  # once for all draws
        return gaussian_score_sampler(
            Z, self._ridge.coef, chol, self._arm_blocks, self.nu
        )

    @classmethod
    def _get_test_params(cls):
        return [{"n_actions": 3, "random_state": 0}, {"nu": 0.1, "alpha": 0.25}]


class EpsilonGreedy(EstimatorModelMixin, LinearPolicyMixin, BasePolicy):
    """Greedy policy with epsilon exploration, on ridge or on any regressor.

    With probability ``epsilon_t`` plays a uniformly random available arm, otherwise
    the arm with the highest estimated reward: a ridge model per arm by default, or
    clones of ``estimator`` (any scikit-learn regressor) learnt as the policies on
    estimators learn them (:class:`SquareCB`): online through ``partial_fit``, or
    refit on the logged rounds each time their number reaches a power of two.

    Read more in the :ref:`User Guide <policies>`.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    alpha : float, default=1.0
        Ridge strength (the ridge model only).
    epsilon : float or None, default=None
        The exploration scale. Under ``schedule="inverse_t"`` (the default) it is
        the ``c / d^2`` of Auer, Cesa-Bianchi and Fischer's epsilon_n-greedy
        ("Finite-time Analysis of the Multiarmed Bandit Problem", 2002): ``None``
        is 1. Under ``"constant"`` it is the exploration probability, ``None`` is
        0.01; under ``"inverse_sqrt"`` the average exploration rate over
        ``horizon`` rounds, ``None`` is 0.01. Both need ``epsilon <= 1``.
    schedule : {"inverse_t", "constant", "inverse_sqrt"}, default="inverse_t"
        ``"inverse_t"`` is ``epsilon_t = min(1, epsilon K / t)`` (``K`` arms,
        ``t`` the feedback rounds seen plus one, shared by every row of a call):
        uniform play for the first ``K`` rounds, then exploration that fades. It
        became the default after the defaults study of the user guide: the former
        constant 0.01 locked seeds onto a bad arm of the Bernoulli ``logistic``
        problem (regret 229 against 16 at T = 1,000; random makes 304) and of
        ``linear`` (61 against 26), while ``inverse_t`` matched it on digits (330
        against 333) and wine (27 against 24). ``"constant"`` plays ``epsilon``
        every round.
        ``"inverse_sqrt"`` is ``epsilon_t = min(1, epsilon sqrt(n) / (2 sqrt(t)))``,
        the schedule of the perturbed-history paper's experiments (Kveton et al.,
        UAI 2019) as its authors' code runs it: the formula printed in the paper
        drops the ``sqrt(n)`` and would explore 0.05 % of the time instead of the
        5 % it states. As under ``"inverse_t"``, ``t`` is the feedback rounds
        seen plus one, shared by every row of a call.
    horizon : int or None, default=None
        The ``n`` of the ``"inverse_sqrt"`` schedule; required by it.
    fit_intercept : bool, default=True
        Append a constant feature (the ridge model only).
    estimator : regressor or None, default=None
        ``None`` keeps the closed-form ridge model (``alpha``, ``fit_intercept``).
        A scikit-learn regressor (or a pipeline ending in one) is cloned, never
        modified: one clone per arm for shared contexts, one of all arms for
        per-arm contexts, as in :class:`SquareCB`; ``scipy.sparse`` contexts are
        then accepted wherever the estimator takes them. On Dask collections,
        ``fit`` sums the ridge statistics, or feeds the estimator's
        ``partial_fit`` partition after partition (see :ref:`past-memory`).
    random_state : int, RandomState instance or None, default=None
        Controls exploration in :meth:`select`.

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

    See Also
    --------
    LinUCB : Directed exploration.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import EpsilonGreedy
    >>> X = np.random.RandomState(0).normal(size=(4, 2))
    >>> EpsilonGreedy(n_actions=3, epsilon=0.5, random_state=0).select(X).shape
    (4,)
    """

    _parameter_constraints = {
        **LINEAR_CONSTRAINTS,
        "epsilon": [Interval(Real, 0, None, closed="left"), None],
        "schedule": [StrOptions({"inverse_t", "constant", "inverse_sqrt"})],
        "horizon": [Interval(Integral, 1, None, closed="left"), None],
        "estimator": [HasMethods(["fit", "predict"]), None],
    }

    def __init__(
        self,
        n_actions=None,
        *,
        alpha=1.0,
        epsilon=None,
        schedule="inverse_t",
        horizon=None,
        fit_intercept=True,
        estimator=None,
        random_state=None,
    ):
        self.n_actions = n_actions
        self.alpha = alpha
        self.epsilon = epsilon
        self.schedule = schedule
        self.horizon = horizon
        self.fit_intercept = fit_intercept
        self.estimator = estimator
        self.random_state = random_state

    def _init_state(self):
        if self.schedule == "inverse_sqrt" and self.horizon is None:
            raise ValueError('schedule="inverse_sqrt" needs horizon (the n rounds).')
        if self.schedule != "inverse_t" and self._epsilon() > 1:
            raise ValueError(
                f"epsilon={self.epsilon} is a probability under schedule="
                f"{self.schedule!r}: use a value in [0, 1], or "
                'schedule="inverse_t", whose epsilon scales K / t.'
            )
        if self.estimator is None:
            super()._init_state()
        else:
            self._init_models()

    @property
    def _fails_cleanly(self):
        # As LinUCB: the greedy argmax checks its scores before the first draw. An
        # estimator's own errors are not NumericalError: validate every call.
        return self.estimator is None

    def _update(self, X, actions, rewards, sample_weight):
        if self.estimator is None:
            super()._update(X, actions, rewards, sample_weight)
        else:
            self._update_models(X, actions, rewards, sample_weight)

    def _add_arms(self, n_new):
        if self.estimator is None:
            super()._add_arms(n_new)
        else:
            self._grow_models(n_new)

    def _check_sparse_contexts(self, X, *, reset):
        if self.estimator is None:
            return BasePolicy._check_sparse_contexts(self, X, reset=reset)
        return super()._check_sparse_contexts(X, reset=reset)

    def _epsilon(self):
        if self.epsilon is not None:
            return float(self.epsilon)
        return 1.0 if self.schedule == "inverse_t" else 0.01

    def _exploration_rates(self, n_rows):
        epsilon = self._epsilon()
        if self.schedule == "constant":
            return np.full(n_rows, epsilon)
        # The rate follows the feedback seen, not a row's place in the call: every
        # row of one call shares it (predict_action_proba is then the law of each,
        # and score() or an off-policy estimate on a batch weighs no row apart).
        t = self.n_samples_seen_ + 1
        if self.schedule == "inverse_t":
            return np.full(n_rows, min(1.0, epsilon * self.n_actions_ / t))
        return np.full(n_rows, min(1.0, epsilon * np.sqrt(self.horizon / t) / 2.0))

    def _scores(self, X, return_std):
        # Exploration is uniform, not by a posterior: no exploration std.
        if self.estimator is None:
            return super()._scores(X, False)[0], None
        return self._model_predictions(X)[0][0], None

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.exact_action_proba = True
        if self.estimator is not None:
            tags.policy_tags.exact_partial_fit = False
            tags.input_tags.sparse = self._estimator_accepts_sparse()
        return tags

    @classmethod
    def _get_test_params(cls):
        return [
            {"n_actions": 3, "random_state": 0},
            {"schedule": "inverse_sqrt", "horizon": 100, "epsilon": 0.05},
            {"estimator": SGDRegressor(), "epsilon": 0.1},
        ]
