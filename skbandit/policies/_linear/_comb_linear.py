"""Linear combinatorial semi-bandits: CombLinUCB and CombLinTS (Wen et al. 2015).

Wen, Kveton and Ashkan, "Efficient learning in large-scale combinatorial
semi-bandits" (ICML 2015, arXiv:1406.7443), Algorithms 1 and 2. Every arm ``e`` has a
feature ``phi_e`` and an expected weight ``phi_e^T theta*``; the learner keeps the
Gaussian posterior ``N(theta_bar, Sigma)`` (prior ``N(0, lambda^2 I)``, noise
``sigma``), updated by a Kalman step for *every* chosen arm's observed weight.

The Kalman steps of one round are one rank-K ridge update: with
``A = (sigma / lambda)^2 I + sum phi phi^T`` and ``b = sum w phi``, the posterior is
``theta_bar = A^{-1} b`` and ``Sigma = sigma^2 A^{-1}``. So, in skbandit's
vocabulary, Wen et al.'s ``CombLinUCB(lambda, sigma, c)`` is
``CombLinUCB(alpha=(sigma / lambda)**2, beta=c * sigma)`` and
``CombLinTS(lambda, sigma)`` is ``CombLinTS(alpha=(sigma / lambda)**2, nu=sigma)``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from skbandit.policies._core._slate import SLATE_CONSTRAINTS, SlatePolicyMixin
from skbandit.policies._linear._ridge_policies import LinTS, LinUCB

__all__ = ["CombLinTS", "CombLinUCB"]


class _CombLinearMixin(SlatePolicyMixin):
    """The ridge state of the linear policies, updated with every observed slot."""

    def _update(self, X, actions, rewards, sample_weight):
        # One rank-K update per round: all K chosen arms (Wen et al.'s Kalman steps),
        # each context paired with its own arm's reward.
        _, arms, contexts, targets, weights = self._observed_slots(
            X, actions, rewards, sample_weight
        )
        if arms.size:
            blocks = self._arm_blocks[arms]
            self._ridge.update(
                blocks,
                contexts,  # the intercept's column: written by the update
                targets,
                weights,
                rank_k=True,
                intercept=self.fit_intercept,
            )


class CombLinUCB(_CombLinearMixin, LinUCB):
    """Combinatorial linear UCB: ridge UCB scores, a slate by the oracle.

    CombLinUCB of Wen, Kveton and Ashkan (2015), Algorithm 2: every arm scores
    ``x^T theta_hat + beta ||x||_{A^{-1}}`` with ``A = alpha I + sum x x^T`` over
    every observed (arm, score) pair, and the oracle (top-K by default) picks the
    slate. Feedback is semi-bandit: the score of each chosen arm, ``NaN`` where a
    slot was not observed.

    Read more in the :ref:`User Guide <slates>`.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms ``N``; ``None`` infers it in ``fit`` or from per-arm
        contexts.
    slate_size : int, default=4
        Arms per slate ``K``.
    alpha : float, default=1.0
        Ridge strength, ``(sigma / lambda)^2`` in Wen et al.'s notation (prior
        standard deviation ``lambda``, noise ``sigma``). The combinatorial neural
        bandit paper runs ``1``.
    beta : float, default=1.0
        Width multiplier, ``c sigma`` in Wen et al.'s notation; the combinatorial
        neural bandit paper runs ``1``.
    fit_intercept : bool, default=False
        Append a constant feature. Wen et al.'s model has none.
    oracle : "topk" or callable, default="topk"
        From scores to a slate; see :mod:`skbandit.oracles` (``TopK``,
        ``PositionBased``, ``Cascade``, or any ``f(scores, slate_size, rng)``, an
        approximation oracle).
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
        Times each arm was in a slate given as feedback.
    coef_ : ndarray of shape (n_blocks, n_features_in_)
        Ridge coefficients: one row for per-arm contexts, one per arm for shared
        contexts (disjoint models).

    See Also
    --------
    CombLinTS : Thompson sampling on the same model.
    LinUCB : The single-arm policy.

    References
    ----------
    .. [1] Wen, Kveton, Ashkan. "Efficient learning in large-scale combinatorial
       semi-bandits". ICML 2015. arXiv:1406.7443.
    .. [2] Hwang, Chai, Oh. "Combinatorial neural bandits". ICML 2023.
       arXiv:2306.00242.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import CombLinUCB
    >>> X = np.random.RandomState(0).normal(size=(2, 6, 3))   # 2 rounds, 6 arms
    >>> policy = CombLinUCB(slate_size=3, random_state=0)
    >>> slates = policy.select(X)
    >>> slates.shape
    (2, 3)
    >>> policy = policy.partial_fit(X, slates, np.ones((2, 3)))
    >>> policy.predict_action_proba(X).sum(axis=1)
    array([3., 3.])
    """

    _parameter_constraints = {**LinUCB._parameter_constraints, **SLATE_CONSTRAINTS}

    def __init__(
        self,
        n_actions=None,
        *,
        slate_size=4,
        alpha=1.0,
        beta=1.0,
        fit_intercept=False,
        oracle="topk",
        random_state=None,
    ):
        self.n_actions = n_actions
        self.slate_size = slate_size
        self.alpha = alpha
        self.beta = beta
        self.fit_intercept = fit_intercept
        self.oracle = oracle
        self.random_state = random_state

    @classmethod
    def _get_test_params(cls):
        return [
            {"n_actions": 3, "slate_size": 2, "random_state": 0},
            {"slate_size": 1, "beta": 0.0, "alpha": 0.5, "fit_intercept": True},
        ]


class CombLinTS(_CombLinearMixin, LinTS):
    """Combinatorial linear Thompson sampling: one posterior draw per round.

    CombLinTS of Wen, Kveton and Ashkan (2015), Algorithm 1: each round draws
    ``theta ~ N(theta_hat, nu^2 A^{-1})`` once (in parameter space, shared by all
    arms) and the oracle picks the slate of the scores ``x^T theta``; every
    observed slot then updates the posterior.

    Read more in the :ref:`User Guide <slates>`.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms ``N``; ``None`` infers it in ``fit`` or from per-arm
        contexts.
    slate_size : int, default=4
        Arms per slate ``K``.
    alpha : float, default=1.0
        Ridge strength, ``(sigma / lambda)^2`` in Wen et al.'s notation.
    nu : float, default=0.1
        Posterior scale, Wen et al.'s noise ``sigma`` (their experiments: 1), as
        LinTS's default: at 1 it explores a classification problem for hundreds of
        rounds (raw wine, one-arm slates: 95 mistakes of random's 200 in 300
        rounds, 22 at 0.1).
    fit_intercept : bool, default=False
        Append a constant feature. Wen et al.'s model has none.
    oracle : "topk" or callable, default="topk"
        From scores to a slate; see :mod:`skbandit.oracles`.
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
        Times each arm was in a slate given as feedback.

    See Also
    --------
    CombLinUCB : Optimism instead of sampling.

    References
    ----------
    .. [1] Wen, Kveton, Ashkan. "Efficient learning in large-scale combinatorial
       semi-bandits". ICML 2015. arXiv:1406.7443.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import CombLinTS
    >>> X = np.random.RandomState(0).normal(size=(4, 5, 3))
    >>> CombLinTS(slate_size=2, random_state=0).select(X).shape
    (4, 2)
    """

    _parameter_constraints = {**LinTS._parameter_constraints, **SLATE_CONSTRAINTS}

    def __init__(
        self,
        n_actions=None,
        *,
        slate_size=4,
        alpha=1.0,
        nu=0.1,
        fit_intercept=False,
        oracle="topk",
        random_state=None,
    ):
        self.n_actions = n_actions
        self.slate_size = slate_size
        self.alpha = alpha
        self.nu = nu
        self.fit_intercept = fit_intercept
        self.oracle = oracle
        self.random_state = random_state

    @classmethod
    def _get_test_params(cls):
        return [
            {"n_actions": 3, "slate_size": 2, "random_state": 0},
            {"slate_size": 1, "nu": 0.1, "alpha": 0.25, "fit_intercept": True},
        ]
