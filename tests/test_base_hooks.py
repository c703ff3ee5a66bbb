"""The base's hooks on a tiny policy defined here: forced (burn-in) rounds, the
epsilon-mixture and the sampled-scores hook of the Monte Carlo action probabilities."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skbandit.base import BasePolicy


class _Toy(BasePolicy):
    """Scores are the first ``K`` context columns (plus ``sigma`` Gaussian noise per
    draw); the first ``burn_in`` rounds are forced round-robin; ``epsilon`` (a
    number, or rates cycled over the rows) mixes in a uniform arm."""

    _parameter_constraints = {
        **BasePolicy._parameter_constraints,
        "burn_in": "no_validation",
        "epsilon": "no_validation",
        "sigma": "no_validation",
    }

    def __init__(
        self, n_actions=None, *, burn_in=0, epsilon=None, sigma=0.0, random_state=None
    ):
        self.n_actions = n_actions
        self.burn_in = burn_in
        self.epsilon = epsilon
        self.sigma = sigma
        self.random_state = random_state

    def _init_state(self):
        self.sampler_calls, self.draw_calls = 0, 0

    def _update(self, X, actions, rewards, sample_weight):
        pass

    def _scores(self, X, return_std):
        return X[:, : self.n_actions_].astype(float), None

    @property
    def _samples_scores(self):
        return self.sigma > 0

    def _score_sampler(self, X):
        self.sampler_calls += 1
        mean = self._scores(X, False)[0]

        def draw(rng):
            self.draw_calls += 1
            if self.sigma == 0:
                return mean
            return mean + self.sigma * rng.standard_normal(mean.shape)

        return draw

    def _forced_actions(self, X, mask):
        n_rows = X.shape[0]
        n_forced = min(n_rows, max(0, self.burn_in - self.n_samples_seen_))
        if n_forced == 0:
            return None
        K = self.n_actions_
        forced = np.zeros(n_rows, bool)
        forced[:n_forced] = True
        arms = []
        for i in range(n_forced):  # round-robin, skipping unavailable arms
            order = (self.n_samples_seen_ + i + np.arange(K)) % K
            if mask is not None:
                order = order[mask[i, order]]
            arms.append(order[0])
        return forced, np.array(arms)

    def _exploration_rates(self, n_rows):
        if self.epsilon is None:
            return None
        return np.resize(np.atleast_1d(np.asarray(self.epsilon, float)), n_rows)


K = 3


def _fitted(**params):
    """A toy policy after one round of feedback (one round seen)."""
    X = np.array([[0.0, 0.0, 0.0]])
    return _Toy(n_actions=K, random_state=0, **params).fit(X, [0], [1.0])


def _contexts(n, seed=0):
    return np.random.RandomState(seed).normal(size=(n, K))


# ------------------------------------------------------------- forced rounds
def test_forced_rows_play_their_arms_with_probability_one():
    pol = _fitted(burn_in=4, sigma=1.0)  # rounds 2, 3, 4 are forced
    X = _contexts(8)
    chosen = pol.select(X)
    assert_array_equal(chosen[:3], [1, 2, 0])
    proba = pol.predict_action_proba(X)
    assert_array_equal(proba[:3], np.eye(K)[[1, 2, 0]])
    assert np.all(proba[3:].max(1) < 1)  # the free rows are sampled
    assert_allclose(proba.sum(1), 1.0)


def test_forced_and_free_rows_respect_their_own_masks():
    pol = _fitted(burn_in=4, sigma=1.0)
    n = 9
    X = _contexts(n)
    mask = np.ones((n, K), bool)
    mask[0, 1] = False  # the forced arm of row 0 (1) is unavailable: next is 2
    mask[1, [2, 0]] = False  # row 1 can only play arm 1
    for i, arm in zip(range(3, n), [0, 1, 2, 0, 1, 2], strict=True):
        mask[i] = np.arange(K) == arm  # each free row: one arm, a different one
    chosen = pol.select(X, action_mask=mask)
    assert_array_equal(chosen, [2, 1, 0, 0, 1, 2, 0, 1, 2])
    proba = pol.predict_action_proba(X, action_mask=mask)
    assert_array_equal(proba, np.eye(K)[chosen])


def test_forced_rows_do_not_advance_the_rng():
    X = _contexts(10)
    forced = _fitted(burn_in=4, sigma=1.0)
    free = _fitted(burn_in=0, sigma=1.0)
    assert forced._rng.bit_generator.state == free._rng.bit_generator.state
    a = forced.select(X)
    b = free.select(X[3:])  # the same free rows alone
    assert_array_equal(a[3:], b)
    assert forced._rng.bit_generator.state == free._rng.bit_generator.state
    # Only forced rows: nothing drawn, nothing sampled.
    pol = _fitted(burn_in=10, sigma=1.0)
    state = pol._rng.bit_generator.state
    assert_array_equal(pol.select(X[:4]), [1, 2, 0, 1])
    assert pol._rng.bit_generator.state == state
    assert pol.sampler_calls == 0 and pol.draw_calls == 0


# --------------------------------------------------------- epsilon-mixture
def _mixture(X, rates, mask=None):
    """``eps / |available|`` on every available arm plus ``1 - eps`` on the greedy."""
    mask = np.ones(X.shape, bool) if mask is None else mask
    greedy = np.argmax(np.where(mask, X, -np.inf), axis=1)
    uniform = mask / mask.sum(1, keepdims=True)
    return rates[:, None] * uniform + (1 - rates[:, None]) * np.eye(K)[greedy]


def _frequencies(pol, X, reps, mask=None):
    big = np.repeat(X, reps, axis=0)
    big_mask = None if mask is None else np.repeat(mask, reps, axis=0)
    chosen = pol.select(big, action_mask=big_mask).reshape(X.shape[0], reps)
    return np.stack([(chosen == k).mean(1) for k in range(K)], axis=1)


@pytest.mark.parametrize("masked", [False, True])
def test_exploration_rate_gives_the_epsilon_mixture(masked):
    pol = _fitted(epsilon=0.3)
    X = _contexts(4, seed=1)
    mask = None
    if masked:
        mask = np.ones((4, K), bool)
        mask[0, np.argmax(X[0])] = False  # the greedy arm is unavailable
        mask[1, [0, 1]] = [True, False]
    expected = _mixture(X, np.full(4, 0.3), mask)
    assert_allclose(pol.predict_action_proba(X, action_mask=mask), expected, atol=1e-12)
    reps = 6000  # sd of a frequency at most 0.0065: 0.03 is over 4.5 sd
    assert_allclose(_frequencies(pol, X, reps, mask), expected, atol=0.03)
    if masked:
        assert np.all(expected[~mask] == 0)


def test_exploration_rates_per_row():
    # The rates cycle 0, 0.5, 1 over the rows: greedy, half-uniform, uniform.
    pol = _fitted(epsilon=(0.0, 0.5, 1.0))
    X = _contexts(3, seed=2)
    expected = _mixture(X, np.array([0.0, 0.5, 1.0]))
    assert_allclose(pol.predict_action_proba(X), expected, atol=1e-12)
    chosen = pol.select(np.repeat(X, 3000, axis=0))
    # select sees the rows 0, 0, ..., 1, 1, ...: their rates cycle by position.
    rates = np.resize([0.0, 0.5, 1.0], 9000)
    greedy = np.repeat(np.argmax(X, axis=1), 3000)
    assert np.all(chosen[rates == 0] == greedy[rates == 0])
    uniform = chosen[rates == 1]
    assert_allclose(np.bincount(uniform, minlength=K) / uniform.size, 1 / K, atol=0.04)


def test_exploration_with_sampled_scores_is_monte_carlo_mixed():
    pol = _fitted(epsilon=0.4, sigma=0.5)
    X = _contexts(3, seed=3)
    proba = pol.predict_action_proba(X)
    # The free choice is argmax of mean + sigma N(0, I): its law by direct sampling.
    rng = np.random.default_rng(123)
    draws = X[:, None, :] + 0.5 * rng.standard_normal((3, 20000, K))
    sampled = np.stack([(draws.argmax(-1) == k).mean(1) for k in range(K)], axis=1)
    expected = 0.4 / K + 0.6 * sampled
    # 256 Monte Carlo draws per row: sd of a probability at most 0.6 * 0.031.
    assert_allclose(proba, expected, atol=0.08)
    assert_allclose(_frequencies(pol, X, 6000), expected, atol=0.03)


# ---------------------------------------------------------- sampled scores
def test_score_sampler_runs_once_per_predict_action_proba():
    pol = _fitted(sigma=1.0)
    X = _contexts(5)
    pol.sampler_calls = pol.draw_calls = 0
    pol.predict_action_proba(X)
    assert pol.sampler_calls == 1
    assert pol.draw_calls == _Toy._n_proba_draws == 256
    pol.sampler_calls = pol.draw_calls = 0
    pol.select(X)
    assert (pol.sampler_calls, pol.draw_calls) == (1, 1)


def test_score_sampler_follows_n_proba_draws_and_skips_forced_rows():
    class _FewDraws(_Toy):
        _n_proba_draws = 37

    pol = _FewDraws(n_actions=K, burn_in=3, epsilon=0.2, sigma=1.0, random_state=0)
    pol.fit(np.zeros((1, K)), [0], [1.0])
    X = _contexts(6)
    pol.sampler_calls = pol.draw_calls = 0
    proba = pol.predict_action_proba(X)
    assert (pol.sampler_calls, pol.draw_calls) == (1, 37)
    # The probabilities are multiples of 1 / 37, mixed with epsilon / K.
    free = (proba[2:] - 0.2 / K) / 0.8 * 37
    assert_allclose(free, np.round(free), atol=1e-9)
    # Deterministic scores with an epsilon-mixture: one draw, no Monte Carlo.
    pol.set_params(sigma=0.0)
    pol.sampler_calls = pol.draw_calls = 0
    pol.predict_action_proba(X)
    assert (pol.sampler_calls, pol.draw_calls) == (1, 1)
    # Every row forced: the sampler is not run.
    pol.set_params(burn_in=100)
    pol.sampler_calls = pol.draw_calls = 0
    pol.predict_action_proba(X)
    assert (pol.sampler_calls, pol.draw_calls) == (0, 0)
