"""Tests of the bandit simulators in skbandit.environments."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skbandit.environments import (
    BaseEnvironment,
    ClassificationBandit,
    LinearBandit,
    LogisticBandit,
)


def _toy(n=12, d=3, n_classes=3, seed=0):
    rng = np.random.RandomState(seed)
    return rng.normal(size=(n, d)), np.arange(n) % n_classes


def test_classification_rows_without_replacement_then_reshuffle():
    X, y = _toy(n=12)
    env = ClassificationBandit(X, y).reset(0)
    env.contexts(5)
    first = env.row_indices_
    env.contexts(7)
    first_pass = np.concatenate([first, env.row_indices_])
    assert_array_equal(np.sort(first_pass), np.arange(12))  # each row exactly once
    env.contexts(12)
    assert_array_equal(np.sort(env.row_indices_), np.arange(12))
    assert not np.array_equal(env.row_indices_, first_pass)  # a new order
    # A batch straddling the end of a pass: the rest of one, the start of the next.
    env = ClassificationBandit(X, y).reset(1)
    env.contexts(10)
    head = env.row_indices_
    env.contexts(4)
    assert_array_equal(
        np.sort(np.concatenate([head, env.row_indices_[:2]])), np.arange(12)
    )


def test_classification_contexts_rewards_and_regret():
    X, y = _toy()
    env = ClassificationBandit(X, y).reset(3)
    Xt = env.contexts(6)
    rows = env.row_indices_
    assert_array_equal(Xt, X[rows])
    expected = env.expected_rewards
    assert expected.shape == (6, 3)
    assert_array_equal(expected.argmax(axis=1), y[rows])
    assert_array_equal(expected.sum(axis=1), 1.0)
    actions = np.array([0, 1, 2, 0, 1, 2])
    assert_array_equal(env.rewards(actions), (actions == y[rows]).astype(float))
    assert env.action_mask is None


def test_classification_seeds_and_shuffle():
    X, y = _toy()
    a = ClassificationBandit(X, y).reset(0)
    b = ClassificationBandit(X, y, random_state=0).reset()
    a.contexts(12)
    b.contexts(12)
    assert_array_equal(a.row_indices_, b.row_indices_)
    c = ClassificationBandit(X, y, shuffle=False).reset(5)
    c.contexts(14)
    assert_array_equal(c.row_indices_, np.r_[np.arange(12), 0, 1])


def test_classification_string_labels_map_to_arms():
    X, _ = _toy(n=4)
    env = ClassificationBandit(X, ["b", "a", "b", "c"], shuffle=False).reset(0)
    assert_array_equal(env.classes_, ["a", "b", "c"])
    env.contexts(4)
    assert_array_equal(env.expected_rewards.argmax(axis=1), [1, 0, 1, 2])


def test_classification_disjoint_encoding():
    X, y = _toy(n=6, d=2, n_classes=3)
    env = ClassificationBandit(X, y, encoding="disjoint", shuffle=False).reset(0)
    assert env.per_arm_contexts and env.n_features == 6 and env.n_actions == 3
    Xt = env.contexts(2)
    assert Xt.shape == (2, 3, 6)
    for k in range(3):
        block = Xt[:, k].reshape(2, 3, 2)
        assert_array_equal(block[:, k], X[:2])
        assert_array_equal(np.delete(block, k, axis=1), 0.0)


@pytest.mark.parametrize(
    "kwargs, match",
    [({"encoding": "dense"}, "encoding"), ({}, "at least 2 classes")],
)
def test_classification_errors(kwargs, match):
    X, y = _toy()
    if match.startswith("at least"):
        y = np.zeros_like(y)
    with pytest.raises(ValueError, match=match):
        ClassificationBandit(X, y, **kwargs)


def test_protocol_errors():
    X, y = _toy()
    env = ClassificationBandit(X, y)
    with pytest.raises(RuntimeError, match="no current rounds"):
        env.expected_rewards  # noqa: B018
    env.reset(0)
    env.contexts(2)
    with pytest.raises(ValueError, match="shape"):
        env.rewards([0, 1, 2])
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        env.rewards([0, 3])
    with pytest.raises(ValueError, match="positive"):
        env.contexts(0)


def test_step_bunch():
    env = LinearBandit(n_actions=4, n_features=3).reset(0)
    rounds = env.step(2)
    assert rounds.X.shape == (2, 4, 3)
    assert rounds.action_mask is None
    assert_allclose(rounds.expected_rewards, np.tile(env.means_, (2, 1)))


@pytest.mark.parametrize("d", [5, 10, 20])
def test_linear_bandit_instance(d):
    env = LinearBandit(n_actions=100, n_features=d).reset(7)
    arms, theta = env.arm_features_, env.theta_
    assert arms.shape == (100, d)
    assert_allclose(arms[:, -1], 1.0)
    assert_allclose(np.linalg.norm(arms[:, :-1], axis=1), 1.0)
    assert_allclose(theta[-1], 0.5)
    assert_allclose(np.linalg.norm(theta[:-1]), 0.5)
    assert_allclose(env.means_, arms @ theta)
    assert np.all((env.means_ >= 0) & (env.means_ <= 1))
    X = env.contexts(3)
    assert X.shape == (3, 100, d)
    assert_array_equal(X[1], arms)
    # Same seed, same instance; another seed, another one.
    assert_array_equal(LinearBandit(100, d).reset(7).theta_, theta)
    assert not np.allclose(LinearBandit(100, d).reset(8).theta_, theta)


def test_linear_bandit_bernoulli_rewards():
    env = LinearBandit(n_actions=5, n_features=3).reset(0)
    env.contexts(20_000)
    means = env.means_
    rewards = np.stack([env.rewards(np.full(20_000, k)) for k in range(5)])
    assert set(np.unique(rewards)) <= {0.0, 1.0}
    assert_allclose(rewards.mean(axis=1), means, atol=0.015)
    # Common random numbers: an arm with a higher mean pays whenever a lower one does.
    order = np.argsort(means)
    assert np.all(np.diff(rewards[order], axis=0) >= 0)


def test_linear_bandit_fixed_instance():
    arms = np.array([[1.0, 1.0], [0.0, 1.0]])
    env = LinearBandit(2, 2, arm_features=arms, theta=[0.25, 0.5]).reset(0)
    assert_allclose(env.means_, [0.75, 0.5])
    with pytest.raises(ValueError, match="shape"):
        LinearBandit(3, 2, arm_features=arms, theta=[0.25, 0.5]).reset(0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        LinearBandit(2, 2, arm_features=arms, theta=[1.0, 0.5]).reset(0)
    with pytest.raises(ValueError, match="n_features"):
        LinearBandit(2, 1)


def test_logistic_bandit_instance():
    env = LogisticBandit(n_actions=100, n_features=10).reset(0)
    assert_allclose(env.theta_[-1], 0.0)
    assert_allclose(np.linalg.norm(env.theta_[:-1]), 1.5)
    z = env.arm_features_ @ env.theta_
    assert_allclose(env.means_, 1 / (1 + np.exp(-z)))
    assert env.means_.min() >= 0.18 and env.means_.max() <= 0.82


def test_custom_environment_with_mask():
    class TwoArms(BaseEnvironment):
        n_actions = 2
        n_features = 1

        def _setup(self, rng):
            pass

        def _draw(self, n_rounds, rng):
            mask = np.ones((n_rounds, 2), dtype=bool)
            mask[:, 1] = rng.random_sample(n_rounds) < 0.5
            return np.ones((n_rounds, 1)), np.tile([0.2, 0.8], (n_rounds, 1)), mask

    env = TwoArms().reset(0)
    env.contexts(100)
    assert env.action_mask.shape == (100, 2)
    assert set(env.rewards(np.zeros(100, dtype=int))) <= {0.0, 1.0}
