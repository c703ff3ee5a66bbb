"""Slate policies: choose ``slate_size`` distinct arms per round, learn per arm.

The combinatorial semi-bandit of Hwang, Chai and Oh, "Combinatorial Neural Bandits"
(ICML 2023), and of Wen, Kveton and Ashkan (ICML 2015): each round the policy scores
the ``N`` arms, an *oracle* turns the scores into a slate of ``K = slate_size``
distinct arms, and the score of every chosen arm is observed (semi-bandit
feedback).

What a slate policy is
----------------------
``class P(SlatePolicyMixin, BasePolicy)`` (the mixin leftmost), with the parameters
``slate_size`` and ``oracle`` (add :data:`SLATE_CONSTRAINTS` to its
``_parameter_constraints``). It implements the hooks of
:class:`~skbandit.base.BasePolicy`, with these shapes (``n`` rounds, ``N`` arms,
``K`` slots):

``_init_state()``
    the prior state, as for every policy;
``_scores(X, return_std)``
    ``(n, N)`` expected score of every arm, and its exploration std or None;
``_score_sampler(X)``
    a function of an RNG giving ``(n, N)`` scores the oracle ranks: an upper
    confidence bound, or a posterior draw (called with ``rng=None`` by deterministic
    policies' exact probabilities);
``_update(X, actions, rewards, sample_weight)``
    learn from validated feedback: ``actions`` int ``(n, K)``, ``rewards`` float
    ``(n, K)`` with ``NaN`` in unobserved slots (cascade), ``sample_weight``
    float ``(n, K)`` or None. Rewards are already divided by the oracle's known
    position weights ``w_k``, and the weights multiplied by ``w_k^2`` unless the
    policy sets ``_slot_weighted = False`` (see :mod:`skbandit.oracles`).
    :meth:`SlatePolicyMixin._observed_slots` flattens the observed slots, round by
    round and slot by slot.

Contexts are per-arm ``(n, N, d)``, or shared ``(n, d)`` through the disjoint
encoding (for linear models, one ridge block per arm).

What the mixin gives
--------------------
``select(X)`` returns ``(n, K)`` int64 distinct arms, in the oracle's order (top-K:
descending score), also for ``K = 1``; ``partial_fit`` / ``fit`` take ``(n, K)``
actions and rewards; ``predict_scores`` stays ``(n, N)``; ``predict`` is the greedy
slate ``(n, K)``; ``predict_action_proba`` is each arm's probability of being in the
slate, ``(n, N)``, rows summing to ``K`` (exact for deterministic policies, Monte
Carlo over ``_n_proba_draws`` draws otherwise); ``score`` is the weighted
pseudo-inverse estimate of the slate value
(:func:`~skbandit.evaluation.estimate_slate_value`). An ``action_mask`` is
respected, and a round with fewer than ``K`` available arms raises ``ValueError``.
Forced exploration and epsilon-mixtures of single-arm policies do not apply.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils.validation import check_is_fitted

from skbandit._base._propensities import monte_carlo_proba
from skbandit.evaluation import estimate_slate_value
from skbandit.oracles import Cascade, PositionBased, TopK
from skbandit.utils._param_validation import Interval, StrOptions
from skbandit.utils._slates import check_slates

__all__ = ["SLATE_CONSTRAINTS", "SlatePolicyMixin"]

#: Parameter constraints of ``slate_size`` and ``oracle``.
SLATE_CONSTRAINTS = {
    "slate_size": [Interval(Integral, 1, None, closed="left")],
    "oracle": [StrOptions({"topk"}), callable],
}


_TRUSTED = (TopK, PositionBased, Cascade)


class SlatePolicyMixin:
    """Slate verbs on top of :class:`~skbandit.base.BasePolicy`'s hooks.

    The base of the slate policies (:class:`~skbandit.policies.CNUCB`,
    :class:`~skbandit.policies.CNTS`, :class:`~skbandit.policies.CombLinUCB`,
    :class:`~skbandit.policies.CombLinTS`): each round the policy scores the ``N``
    arms, an oracle (:mod:`skbandit.oracles`) turns the scores into a slate of
    ``K = slate_size`` distinct arms, and the score of every chosen arm is observed.
    A slate policy is ``class P(SlatePolicyMixin, ..., BasePolicy)`` (the mixin
    leftmost) with the parameters ``slate_size`` and ``oracle`` (their constraints
    are :data:`~skbandit.policies.base.SLATE_CONSTRAINTS`), and fills in the hooks
    of :class:`~skbandit.base.BasePolicy` with these shapes (``n`` rounds):
    ``_scores(X, return_std)`` and ``_score_sampler(X)`` give ``(n, N)`` scores of
    every arm, which the oracle ranks; ``_update(X, actions, rewards,
    sample_weight)`` learns from ``(n, K)`` actions and rewards, ``NaN`` in the
    slots not observed, rewards already divided by the oracle's position weights
    (``self._observed_slots(X, actions, rewards, sample_weight)`` flattens the
    observed slots). The family hook ``_slot_weighted`` (default True) weighs slot
    ``k``'s row by ``w_k^2``.

    ``select`` returns ``(n, K)`` distinct arms, also for ``K = 1``; ``fit`` and
    ``partial_fit`` take ``(n, K)`` actions and rewards; ``predict`` is the greedy
    slate; ``predict_action_proba`` is each arm's probability of being in the slate,
    rows summing to ``K``; ``score`` is the pseudo-inverse estimate of the slate
    value (:func:`~skbandit.evaluation.estimate_slate_value`).

    See Also
    --------
    skbandit.oracles.TopK : The default oracle.

    Examples
    --------
    >>> from skbandit.policies import CNTS, CombLinUCB
    >>> from skbandit.policies.base import SlatePolicyMixin
    >>> issubclass(CombLinUCB, SlatePolicyMixin), issubclass(CNTS, SlatePolicyMixin)
    (True, True)
    >>> X = [[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]]  # one round, three arms
    >>> CombLinUCB(slate_size=2, random_state=0).select(X).shape
    (1, 2)
    """

    #: Weigh slot ``k``'s row by ``w_k^2`` (the least squares of ``(w_k x, r)``, as
    #: the linear policies fit), or learn every ``r / w_k`` with weight 1 (the
    #: combinatorial neural bandits' Algorithms 6-7).
    _slot_weighted = True

    @property
    def _oracle(self):
        return TopK() if isinstance(self.oracle, str) else self.oracle

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.slate = True
        return tags

    # ----------------------------------------------------------- base hooks
    def _decide(self, X, mask, with_proba):
        sampler = self._score_sampler(X)  # once, for the slates and their law
        slates = self._run_oracle(sampler(self._rng), mask, self._rng)
        if not with_proba:
            return slates, None, None
        exact = self.__sklearn_tags__().policy_tags.exact_action_proba
        law = self._inclusion_law(sampler, X.shape[0], mask)
        return slates, law, (None if exact else self._n_proba_draws)

    def _action_proba(self, X, mask):
        return self._inclusion_law(self._score_sampler(X), X.shape[0], mask)

    def _inclusion_law(self, sampler, n_rows, mask):
        """Each arm's probability of being in the slate, from ``sampler``."""
        oracle = self._oracle
        stochastic = self.__sklearn_tags__().policy_tags.stochastic_select
        if not stochastic and hasattr(oracle, "inclusion_proba"):
            return oracle.inclusion_proba(
                self._masked(sampler(None), mask), self.slate_size
            )
        # Monte Carlo with its own fixed seed: deterministic, self._rng untouched;
        # the draws stacked as rows, for one oracle call per group of draws.
        if not stochastic:  # a random oracle on fixed scores
            scores = sampler(None)
            sampler = lambda rng: scores  # noqa: E731
        return monte_carlo_proba(
            sampler, n_rows, self.n_actions_, self._n_proba_draws, mask,
            batched=stochastic and self._batched_draws,
            choose=lambda scores, rng, mask: self._run_oracle(scores, mask, rng),
        )  # fmt: skip

    def _position_proba(self, X):
        """Probability of each arm at each position, (n, K, N): the ranked
        inclusion probabilities (exact for a deterministic policy without ties,
        else a Monte Carlo estimate over ``_n_proba_draws`` seeded draws)."""
        sampler = self._score_sampler(X)
        stochastic = self.__sklearn_tags__().policy_tags.stochastic_select
        rng = np.random.default_rng(0)  # its own seed: self._rng untouched
        n_draws = self._n_proba_draws if stochastic else 1
        counts = np.zeros((X.shape[0], self.slate_size, self.n_actions_))
        rows = np.arange(X.shape[0])[:, None]
        slots = np.arange(self.slate_size)[None, :]
        scores = None if stochastic else sampler(None)
        for _ in range(n_draws):
            draw = sampler(rng) if stochastic else scores
            counts[rows, slots, self._run_oracle(draw, None, rng)] += 1.0
        return counts / n_draws

    # -------------------------------------------------------------- helpers
    @staticmethod
    def _masked(scores, mask):
        return scores if mask is None else np.where(mask, scores, -np.inf)

    def _run_oracle(self, scores, mask, rng):
        """The oracle's slates, checked: (n, K) distinct available arms."""
        scores = self._masked(np.asarray(scores, dtype=np.float64), mask)
        oracle = self._oracle
        slates = np.asarray(oracle(scores, self.slate_size, rng))
        if type(oracle) in _TRUSTED:  # skbandit's own oracles need no checking
            return slates
        if slates.shape != (scores.shape[0], self.slate_size):
            raise ValueError(
                f"The oracle returned slates of shape {slates.shape}; expected "
                f"(n_samples, slate_size)={(scores.shape[0], self.slate_size)}."
            )
        slates = check_slates(
            slates,
            n_samples=scores.shape[0],
            n_actions=self.n_actions_,
            slate_size=self.slate_size,
            estimator_name=f"the oracle of {type(self).__name__}",
        )
        if mask is not None and not np.all(mask[np.arange(len(mask))[:, None], slates]):
            raise ValueError("The oracle returned an arm masked out by action_mask.")
        return slates

    def _observed_slots(self, X, actions, rewards, sample_weight):
        """The observed (round, slot) pairs, round by round and slot by slot.

        Returns ``(rows, arms, contexts, targets, weights)``: the round and arm of
        each observed slot, its context row (the arm's for per-arm contexts, the
        round's for shared ones), its reward and its weight (or None).
        """
        rows, slots = np.nonzero(~np.isnan(rewards))
        arms = actions[rows, slots]
        contexts = X[rows, arms] if X.ndim == 3 else X[rows]
        weights = None if sample_weight is None else sample_weight[rows, slots]
        return rows, arms, contexts, rewards[rows, slots], weights

    # ------------------------------------------------- the base's verb hooks
    def _greedy_actions(self, scores):
        """``predict``'s greedy slate: the oracle on the expected scores."""
        return self._run_oracle(scores, None, None)

    #: ``score``'s pseudo-inverse estimator (``estimate_slate_value``'s ``method``).
    _slate_value_method = "wpi"

    def _off_policy_value(self, X, actions, rewards, propensities):
        """``score``'s estimate: the weighted pseudo-inverse value of the slates."""
        check_is_fitted(self)
        oracle = self._oracle
        if isinstance(oracle, Cascade):
            raise ValueError(
                f"{type(self).__name__}.score cannot evaluate a cascade: its reward "
                "does not add up over the slate's arms (a click hides the arms "
                "after it), so the pseudo-inverse estimator is biased. Evaluate it "
                "by simulation, e.g. skbandit.simulate on a CascadeBandit."
            )
        if isinstance(oracle, PositionBased):  # additive over (position, arm) pairs
            proba = self._position_proba(self._validated(X, False)[0])
        else:
            proba = self.predict_action_proba(X)
        value = estimate_slate_value(
            proba, actions, rewards, propensities, method=self._slate_value_method
        )
        return value.value
