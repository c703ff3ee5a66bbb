"""Slate oracles against brute force over every slate of small problems."""
# SPDX-License-Identifier: BSD-3-Clause

from itertools import combinations, permutations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skbandit.oracles import (
    Cascade,
    PositionBased,
    TopK,
    assignment_slates,
    top_k_slates,
)
from skbandit.policies import CombLinUCB


def _brute_best(value, n_actions, K, ordered):
    slates = (
        permutations(range(n_actions), K)
        if ordered
        else combinations(range(n_actions), K)
    )
    return max(value(np.array(s)) for s in slates)


@pytest.mark.parametrize("K", [1, 2, 3, 5])
def test_top_k_is_the_best_sum(K, global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    scores = np.round(rng.normal(size=(20, 6)), 1)  # rounding makes ties
    slates = TopK()(scores, K, rng)
    for u, s in zip(scores, slates, strict=True):
        best = _brute_best(lambda S, u=u: u[S].sum(), 6, K, False)
        assert_allclose(u[s].sum(), best, atol=1e-12)
        assert np.all(np.diff(u[s]) <= 0), "best first"


def test_top_k_breaks_ties_uniformly_and_exactly():
    scores = np.array([[1.0, 2.0, 2.0, 2.0, 0.0]])
    rng = np.random.default_rng(0)
    counts = np.zeros(5)
    for _ in range(3000):
        counts[top_k_slates(scores, 2, rng)[0]] += 1
    exact = TopK().inclusion_proba(scores, 2)
    assert_allclose(exact, [[0, 2 / 3, 2 / 3, 2 / 3, 0]])
    assert_allclose(counts / 3000, exact[0], atol=0.03)
    assert_array_equal(top_k_slates(scores, 2), [[1, 2]])  # no rng: lower index


def test_top_k_skips_unavailable_arms():
    scores = np.array([[5.0, -np.inf, 1.0, 0.0]])
    assert_array_equal(top_k_slates(scores, 3), [[0, 2, 3]])
    assert_allclose(TopK().inclusion_proba(scores, 3), [[1, 0, 1, 1]])


@pytest.mark.parametrize("K", [1, 2, 3])
def test_position_based_is_the_best_assignment(K, global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    chi = rng.uniform(0.1, 1.0, size=K)  # not sorted: the assignment matters
    oracle = PositionBased(chi)
    scores = rng.normal(size=(15, 5))
    slates = oracle(scores, K, rng)
    for u, s in zip(scores, slates, strict=True):
        best = _brute_best(lambda S, u=u: (chi * u[S]).sum(), 5, K, True)
        assert_allclose((chi * u[s]).sum(), best, atol=1e-12)
    assert_allclose(oracle.slot_weights(K), chi)


def test_assignment_on_general_weights_and_masks():
    rng = np.random.default_rng(0)
    W = rng.normal(size=(10, 5, 3))
    W[:, 1] = -np.inf  # arm 1 unavailable
    for w, s in zip(W, assignment_slates(W), strict=True):
        best = max(
            w[np.array(p), np.arange(3)].sum() for p in permutations([0, 2, 3, 4], 3)
        )
        assert_allclose(w[s, np.arange(3)].sum(), best, atol=1e-12)
    with pytest.raises(ValueError, match="fewer than slate_size"):
        assignment_slates(W[:, :3])


def test_cascade_top_k_is_optimal_for_the_cascade_reward(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    psi = np.sort(rng.uniform(0.2, 1.0, size=3))[::-1]  # non-increasing discounts

    def cascade_value(u, S):
        examined = np.cumprod(np.r_[1.0, 1 - u[S][:-1]])
        return (psi * u[S] * examined).sum()

    u_all = rng.uniform(size=(10, 6))
    slates = Cascade(psi)(u_all, 3, rng)
    for u, s in zip(u_all, slates, strict=True):
        best = _brute_best(lambda S, u=u: cascade_value(u, S), 6, 3, True)
        assert_allclose(cascade_value(u, s), best, atol=1e-12)


def test_weights_are_validated():
    with pytest.raises(ValueError, match="one weight per position"):
        PositionBased([1.0, 0.5])(np.zeros((1, 4)), 3, None)
    with pytest.raises(ValueError, match="positive"):
        Cascade([1.0, 0.0]).slot_weights(2)


def test_cascade_rejects_increasing_discounts():
    """With psi = (0.2, 1) and u = (0.9, 0.5), showing the weaker arm first is
    worth 0.5 * 0.2 + 0.9 * 0.5 = 0.55 against top-K's 0.9 * 0.2 + 0.5 * 0.1 =
    0.23: descending top-K is not optimal, so the oracle refuses the discounts."""
    psi = [0.2, 1.0]
    u = np.array([0.9, 0.5])
    flipped = psi[0] * u[1] + psi[1] * u[0] * (1 - u[1])
    top_k = psi[0] * u[0] + psi[1] * u[1] * (1 - u[0])
    assert flipped > top_k  # the reason for the rule, on these numbers
    with pytest.raises(ValueError, match="non-increasing"):
        Cascade(psi)(u[None], 2, None)
    with pytest.raises(ValueError, match="non-increasing"):
        Cascade(psi).slot_weights(2)
    # Equal discounts are non-increasing: accepted.
    assert_allclose(Cascade([0.5, 0.5]).slot_weights(2), [0.5, 0.5])


def test_a_callable_is_an_approximation_oracle():
    """Any f(scores, K, rng) is used as it is, e.g. an approximation oracle."""
    calls = []

    def every_other_arm(scores, K, rng):
        # the best K even arms: a legal slate, not the best one
        calls.append(scores.shape)
        even = np.where(np.arange(scores.shape[1]) % 2 == 0, scores, -np.inf)
        return top_k_slates(even, K)

    X = np.random.default_rng(0).normal(size=(7, 8, 3))
    policy = CombLinUCB(slate_size=3, oracle=every_other_arm, random_state=0)
    slates = policy.select(X)
    assert calls and np.all(slates % 2 == 0)
    policy.partial_fit(X, slates, np.ones((7, 3)))
    # deterministic policy, oracle without inclusion_proba: Monte Carlo over ties
    proba = policy.predict_action_proba(X)
    assert_allclose(proba.sum(axis=1), 3)
    assert np.all(proba[:, 1::2] == 0)


def test_a_bad_oracle_is_reported():
    def repeats(scores, K, rng):
        return np.zeros((scores.shape[0], K), dtype=int)

    X = np.zeros((2, 4, 3))
    with pytest.raises(ValueError, match="repeats an arm"):
        CombLinUCB(slate_size=2, oracle=repeats).select(X)
    with pytest.raises(ValueError, match="shape"):
        CombLinUCB(slate_size=2, oracle=lambda s, K, r: s).select(X)
