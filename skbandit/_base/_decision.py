"""The decision path of :class:`~skbandit.base.BasePolicy`, in one place.

``select`` and ``predict_action_proba`` run through here: forced (burn-in) rounds
first, then the free rounds, the sampler's argmax epsilon-mixed with a uniform arm,
and, for ``select(X, return_propensities=True)``, the law the arms were drawn from,
built from the same scores in the same pass. :class:`DecisionPath` is a base of
``BasePolicy``; its hooks are the base's, each with its default here:

``_score_sampler(X)``
    the one sampling hook: a function of an RNG (or of ``None``, for the exact law
    of a deterministic policy) returning one draw of the scores ``select``
    maximises. Default: the means;
``_forced_actions(X, mask)``
    forced-exploration rounds of a batch, ``None`` or ``(forced, arms)``. Default:
    none;
``_exploration_rates(n_rows)``
    the epsilon-mixture's probability of a uniform arm per round. Default: none;
``_decide_free(X, mask, with_proba)`` and ``_action_proba_free(X, mask)``
    the arms of the rounds that are not forced (and, ``with_proba``, their law and
    its Monte Carlo draws), and that law alone without a draw. A family with a
    closed-form law overrides both: ensembles and the uniform policy return
    ``_closed_form_decision`` (the sampler's argmax and that law), inverse-gap
    weighting draws from its law;
``_decide(X, mask, with_proba)`` and ``_action_proba(X, mask)``
    the same on every round, for a family that decides other than by the argmax of
    sampled scores (the slates' oracle). Default: forced rounds, then
    ``_decide_free``;
``_select(X, mask)``
    ``_decide`` without the law: the arms of ``select`` alone;
``_greedy_actions(scores)``
    ``predict``'s deterministic choice from the expected scores: the argmax (first
    on ties); the slates' oracle ranks them instead.

Class flags: ``_n_proba_draws`` (Monte Carlo draws per row, 256), ``_batched_draws``
(the sampler's function also draws a stack at once) and ``_samples_scores`` (the
scores are random even where an epsilon-mixture gives the exploration).

Nothing here imports :mod:`skbandit.base`: the base imports this module.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np

from skbandit._base._propensities import monte_carlo_proba, needs_monte_carlo
from skbandit._base._selection import greedy_proba, random_argmax, uniform_arms

__all__ = ["DecisionPath"]


class DecisionPath:
    """The decision hooks of :class:`~skbandit.base.BasePolicy` and their defaults.

    ``_decide`` returns ``(arms, law, n_draws)``: the chosen arms, the law they were
    drawn from (``predict_action_proba``'s, only ``with_proba``, else None) and the
    Monte Carlo draws of that law (None where it is exact).
    """

    #: Monte Carlo draws per row for ``predict_action_proba`` of sampling policies.
    _n_proba_draws = 256
    #: Whether ``_score_sampler``'s function also takes ``(rng, n_draws)`` and returns
    #: that many draws stacked, shape (n_draws, n, K): Monte Carlo without a loop.
    _batched_draws = False
    #: Whether the scores ``select`` maximises are random (a posterior draw): then a
    #: policy with an epsilon-mixture still needs Monte Carlo for its probabilities.
    _samples_scores = False

    def _score_sampler(self, X):
        """A function of an RNG giving one draw of the scores ``select`` maximises.

        The part of a draw that is the same for every draw (a network's forward pass)
        runs here, once: the Monte Carlo ``predict_action_proba`` then calls the
        returned function 256 times. Called with ``None``, a deterministic policy's
        function returns its scores. Defaults to the means (greedy).
        """
        means = self._scores(X, False)[0]
        return lambda rng: means

    def _forced_actions(self, X, mask):
        """Forced-exploration (burn-in) rounds of a ``select`` batch of contexts ``X``.

        Returns ``None`` when no round is forced, else ``(forced, actions)``: a
        boolean mask of the forced rows and the arm each of them plays.
        """
        return None

    def _exploration_rates(self, n_rows):
        """Probability of playing a uniformly random available arm, per round.

        ``None`` (the default) for no epsilon-mixture; otherwise an array of shape
        ``(n_rows,)``: the round plays a uniform arm with that probability, and the
        policy's own choice otherwise.
        """
        return None

    def _select(self, X, mask):
        """The arms of ``select`` on validated rows (``_decide`` without the law)."""
        return self._decide(X, mask, False)[0]

    def _greedy_actions(self, scores):
        """``predict``'s choice from ``predict_scores``: the argmax, first on ties."""
        return np.argmax(scores, axis=1).astype(np.int64)

    def _decide(self, X, mask, with_proba):
        """``(arms, law, n_draws)`` of every round: forced rounds, then free ones."""
        forced = self._forced_actions(X, mask)
        if forced is None:
            return self._decide_free(X, mask, with_proba)
        forced, arms = forced
        actions = np.empty(X.shape[0], dtype=np.int64)
        actions[forced] = arms
        proba = n_draws = None
        if with_proba:
            proba = np.zeros((X.shape[0], self.n_actions_))
            proba[np.flatnonzero(forced), arms] = 1.0  # a forced round is sure
        if not forced.all():
            free = ~forced
            actions[free], law, n_draws = self._decide_free(
                X[free], None if mask is None else mask[free], with_proba
            )
            if with_proba:
                proba[free] = law
        return actions, proba, n_draws

    def _decide_free(self, X, mask, with_proba):
        """``_decide`` on rounds that are not forced: the sampler, epsilon-mixed.

        The sampler is built once, for the arms and for their law.
        """
        n_rows, n_actions = X.shape[0], self.n_actions_
        rng = self._rng
        sampler = self._score_sampler(X)
        scores = sampler(rng)
        choice = random_argmax(scores, rng, mask)
        rates = self._exploration_rates(n_rows)
        proba = n_draws = None
        if with_proba:
            proba, n_draws = self._sampler_law(sampler, scores, n_rows, mask, rates)
        if rates is None:
            return choice, proba, n_draws
        uniform = uniform_arms(n_rows, n_actions, rng, mask)
        explore = rng.random(n_rows) < rates
        if with_proba:
            proba = _mixed(rates, proba, mask)
        return np.where(explore, uniform, choice), proba, n_draws

    def _closed_form_decision(self, X, mask, with_proba):
        """``_decide_free`` of a family whose ``_action_proba_free`` is a closed
        form: the default's arms (the sampler's argmax), and that law."""
        arms = DecisionPath._decide_free(self, X, mask, False)[0]
        return arms, (self._action_proba_free(X, mask) if with_proba else None), None

    def _action_proba(self, X, mask):
        """``predict_action_proba`` on validated rows: forced rounds, then free."""
        forced = self._forced_actions(X, mask)
        if forced is None:
            return self._action_proba_free(X, mask)
        forced, arms = forced
        proba = np.zeros((X.shape[0], self.n_actions_))
        proba[np.flatnonzero(forced), arms] = 1.0
        if not forced.all():
            free = ~forced
            proba[free] = self._action_proba_free(
                X[free], None if mask is None else mask[free]
            )
        return proba

    def _action_proba_free(self, X, mask):
        """``predict_action_proba`` of rounds that are not forced."""
        rates = self._exploration_rates(X.shape[0])
        proba = self._sampler_law(
            self._score_sampler(X), None, X.shape[0], mask, rates
        )[0]
        return proba if rates is None else _mixed(rates, proba, mask)

    def _sampler_law(self, sampler, scores, n_rows, mask, rates):
        """``(law, n_draws)`` of the sampler's argmax, before the epsilon-mixture.

        Exact (``n_draws`` None) where the scores are not random: ``select``'s
        argmax, ties shared, of ``scores`` (``sampler(None)`` when None). Otherwise
        a Monte Carlo estimate from the sampler's own fixed seed (``self._rng``
        untouched).
        """
        if not needs_monte_carlo(self, rates):
            return greedy_proba(sampler(None) if scores is None else scores, mask), None
        n_draws = self._n_proba_draws
        law = monte_carlo_proba(
            sampler, n_rows, self.n_actions_, n_draws, mask,
            batched=self._batched_draws,
        )  # fmt: skip
        return law, n_draws


def _mixed(rates, proba, mask):
    """The law of a round that plays a uniform available arm with ``rates``."""
    n_rows, n_actions = proba.shape
    uniform = greedy_proba(np.zeros((n_rows, n_actions)), mask)
    return rates[:, None] * uniform + (1 - rates[:, None]) * proba
