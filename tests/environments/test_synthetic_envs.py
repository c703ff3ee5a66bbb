"""Tests of the synthetic nonlinear bandits of paper 000."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skbandit.environments import SyntheticBandit
from skbandit.evaluation import simulate
from skbandit.policies import RandomPolicy


@pytest.mark.parametrize(
    "reward",
    [
        "linear",
        "logistic",
        "quadratic",
        "quadratic_form",
        "cosine",
        "cosine_pi",
        "distance",
    ],
)
@pytest.mark.parametrize("fixed_arms", [False, True])
def test_expected_rewards_are_exact(reward, fixed_arms):
    env = SyntheticBandit(
        reward, n_actions=4, n_features=20, noise=0.1, fixed_arms=fixed_arms
    ).reset(0)
    X = env.contexts(50)
    assert X.shape == (50, 4, 20)
    assert_allclose(np.linalg.norm(X, axis=2), 1.0)
    assert_allclose(np.linalg.norm(env.a_), 1.0)
    z = X @ env.a_
    h = {
        "linear": z,
        "logistic": 1 / (1 + np.exp(-z)),
        "quadratic": z**2,
        "quadratic_form": 1e-2
        * np.array([[x @ env.A_.T @ env.A_ @ x for x in row] for row in X]),
        "cosine": np.cos(3 * z),
        "cosine_pi": np.cos(np.pi * z),
        # ||x - a||^2 = 2 - 2 a^T x for unit x and a
        "distance": -np.sqrt(np.maximum(2 - 2 * z, 0)),
    }[reward]
    assert_allclose(env.expected_rewards, h, rtol=1e-12, atol=1e-14)
    assert env.action_mask is None
    if fixed_arms:  # one arm set per instance, shown every round
        assert_array_equal(X, np.broadcast_to(env.arm_features_, X.shape))
        assert_array_equal(env.contexts(2)[1], env.arm_features_)
    else:
        assert env.arm_features_ is None and not np.allclose(X[0], X[1])


def test_noise_is_gaussian_around_the_mean_and_reproducible():
    env = SyntheticBandit("cosine", noise=0.1).reset(1)
    env.contexts(4000)
    actions = np.arange(4000) % 4
    resid = env.rewards(actions) - env.expected_rewards[np.arange(4000), actions]
    assert abs(resid.mean()) < 4 * 0.1 / np.sqrt(4000)
    assert resid.std() == pytest.approx(0.1, rel=0.05)
    # The same seed gives the same rewards; noise=0 gives the means.
    again = SyntheticBandit("cosine", noise=0.1).reset(1)
    again.contexts(4000)
    assert_array_equal(again.rewards(actions), env.rewards(actions))
    exact = SyntheticBandit("quadratic", noise=0.0).reset(2)
    exact.contexts(5)
    assert_array_equal(exact.rewards(np.zeros(5, int)), exact.expected_rewards[:, 0])


def test_simulate_runs_and_rejects_bad_params():
    env = SyntheticBandit("quadratic_form", n_actions=3, n_features=5)
    res = simulate(
        RandomPolicy(random_state=0), env, 50, random_state=0, progress=False
    )
    assert res.regret.shape == (50,) and np.all(res.regret >= 0)
    with pytest.raises(ValueError, match="reward"):
        SyntheticBandit("sine")
    with pytest.raises(ValueError, match="noise"):
        SyntheticBandit(noise=-1.0)


def test_topk_bandit_semi_bandit_feedback_and_exact_regret():
    from skbandit.environments import TopKBandit

    env = TopKBandit("quadratic", n_actions=8, n_features=5, slate_size=3, noise=0.0)
    env.reset(0)
    env.contexts(50)
    h = env.expected_rewards
    best = np.argsort(-h, axis=1)[:, :3]
    assert_allclose(env.regret(best), 0.0, atol=1e-15)
    assert_allclose(env.rewards(best), np.take_along_axis(h, best, axis=1))
    worst = np.argsort(h, axis=1)[:, :3]
    expected = np.sort(h, axis=1)[:, -3:].sum(1) - np.sort(h, axis=1)[:, :3].sum(1)
    assert_allclose(env.regret(worst), expected)
    assert np.all(env.regret(worst) > 0)
    with pytest.raises(ValueError, match="repeat"):
        env.rewards(np.zeros((50, 3), dtype=int))
    with pytest.raises(ValueError, match="shape"):
        env.rewards(best[:, :2])
    with pytest.raises(ValueError, match="slate_size"):
        TopKBandit(n_actions=3, slate_size=4)
