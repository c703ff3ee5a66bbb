"""Tests of collect_logged_data: logged bandit data from a simulator."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.datasets import make_classification

from skbandit.environments import ClassificationBandit, LinearBandit
from skbandit.environments._base import BaseEnvironment
from skbandit.evaluation import collect_logged_data, dm_value, estimate_value
from skbandit.policies import EpsilonGreedy, LinUCB, RandomPolicy


def _classification_env():
    X, y = make_classification(
        n_samples=300,
        n_features=4,
        n_informative=3,
        n_redundant=0,
        n_classes=3,
        random_state=0,
    )
    return ClassificationBandit(X, y)


def test_uniform_logging_on_linear_bandit():
    env = LinearBandit(n_actions=5, n_features=3)
    policy = RandomPolicy(random_state=0)
    logs = collect_logged_data(policy, env, 200, batch_size=7, random_state=0)
    assert set(logs) >= {
        "X",
        "actions",
        "rewards",
        "propensities",
        "expected_rewards",
        "action_mask",
    }
    assert logs.X.shape == (200, 5, 3)
    assert logs.actions.shape == logs.rewards.shape == logs.propensities.shape == (200,)
    assert logs.expected_rewards.shape == logs.logging_proba.shape == (200, 5)
    assert logs.action_mask is None
    assert_allclose(logs.propensities, 0.2)
    assert_allclose(logs.logging_proba, 0.2)
    assert_allclose(logs.expected_rewards, np.broadcast_to(env.means_, (200, 5)))
    assert set(np.unique(logs.rewards)) <= {0.0, 1.0}
    assert len(np.unique(logs.actions)) == 5
    # the policy passed in is untouched; the copy did not learn (update=False)
    assert not hasattr(policy, "n_actions_")
    assert logs.logging_policy.n_samples_seen_ == 0


def test_reproducible_and_independent_of_batch_size_without_update():
    env = LinearBandit(n_actions=4, n_features=3)
    runs = [
        collect_logged_data(
            RandomPolicy(random_state=1), env, 60, batch_size=b, random_state=3
        )
        for b in (1, 1, 16)
    ]
    for other in runs[1:]:
        for key in ("X", "actions", "rewards", "propensities", "expected_rewards"):
            assert_array_equal(runs[0][key], other[key])
    different = collect_logged_data(
        RandomPolicy(random_state=1), env, 60, random_state=4
    )
    assert not np.array_equal(runs[0].X, different.X)


def test_propensities_come_from_the_state_before_each_update():
    env = _classification_env()
    policy = EpsilonGreedy(
        n_actions=3, epsilon=0.3, schedule="constant", random_state=0
    )
    logs = collect_logged_data(
        policy, env, 120, batch_size=10, update=True, random_state=0
    )
    assert logs.logging_policy.n_samples_seen_ == 120
    assert not hasattr(policy, "n_actions_")
    assert_allclose(logs.logging_proba.sum(axis=1), 1.0)
    assert np.all(logs.propensities >= 0.1 - 1e-12)
    assert_array_equal(
        logs.propensities, logs.logging_proba[np.arange(120), logs.actions]
    )
    # the logging distribution changed as the policy learnt
    assert len(np.unique(logs.logging_proba, axis=0)) > 3

    # replay the loop by hand: proba before select and partial_fit of each batch
    replica = clone(policy)
    for start in range(0, 120, 10):
        X = logs.X[start : start + 10]
        a = replica.select(X)
        assert_array_equal(a, logs.actions[start : start + 10])
        assert_allclose(
            replica.predict_action_proba(X), logs.logging_proba[start : start + 10]
        )
        replica.partial_fit(X, a, logs.rewards[start : start + 10])


def test_fitted_logging_policy_logs_from_its_state_and_is_not_modified():
    env = _classification_env()
    warm = collect_logged_data(RandomPolicy(random_state=0), env, 100, random_state=1)
    policy = EpsilonGreedy(
        n_actions=3, epsilon=0.2, schedule="constant", random_state=0
    ).fit(warm.X, warm.actions, warm.rewards)
    coef = policy.coef_.copy()
    logs = collect_logged_data(policy, env, 80, batch_size=20, random_state=2)
    assert_allclose(logs.logging_proba, policy.predict_action_proba(logs.X))
    assert set(np.round(np.unique(logs.propensities), 12)) <= {
        round(0.2 / 3, 12),
        round(0.8 + 0.2 / 3, 12),
    }
    assert policy.n_samples_seen_ == 100
    assert_array_equal(policy.coef_, coef)


class _MaskedEnv(BaseEnvironment):
    """Four constant arms, a random half of which is available each round."""

    n_actions = 4
    n_features = 2

    def _setup(self, rng):
        pass

    def _draw(self, n_rounds, rng):
        X = rng.normal(size=(n_rounds, 2))
        mask = rng.random_sample((n_rounds, 4)) < 0.5
        mask[np.arange(n_rounds), rng.randint(4, size=n_rounds)] = True
        expected = np.broadcast_to([0.1, 0.4, 0.6, 0.9], (n_rounds, 4))
        return X, expected, mask


def test_action_mask_is_respected_and_recorded():
    logs = collect_logged_data(
        RandomPolicy(random_state=0), _MaskedEnv(), 150, batch_size=5, random_state=0
    )
    assert logs.action_mask.shape == (150, 4)
    assert np.all(logs.action_mask[np.arange(150), logs.actions])
    assert_allclose(logs.propensities, 1.0 / logs.action_mask.sum(axis=1))
    assert np.all(logs.logging_proba[~logs.action_mask] == 0)


class _WrongProba(RandomPolicy):
    """Selects uniformly but claims to always play arm 0 (a bad MC estimate)."""

    def _action_proba(self, X, mask):
        proba = np.zeros((X.shape[0], self.n_actions_))
        proba[:, 0] = 1.0
        return proba

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.exact_action_proba = False  # a Monte Carlo estimate
        return tags


class _WrongExactProba(_WrongProba):
    """The same distribution, claimed exact: a zero for a drawn arm is an error."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.exact_action_proba = True
        return tags


def test_zero_propensity_of_a_chosen_arm():
    env = LinearBandit(n_actions=3, n_features=2)
    with pytest.warns(UserWarning, match="Monte Carlo"):
        logs = collect_logged_data(_WrongProba(random_state=0), env, 30, random_state=0)
    assert_allclose(logs.propensities[logs.actions != 0], 1 / 512)
    assert_allclose(logs.propensities[logs.actions == 0], 1.0)
    with pytest.raises(ValueError, match="have probability 0 under the action"):
        collect_logged_data(_WrongExactProba(random_state=0), env, 30, random_state=0)


def test_bad_arguments():
    env = LinearBandit(n_actions=3, n_features=2)
    with pytest.raises(ValueError, match="n_rounds"):
        collect_logged_data(RandomPolicy(), env, 0)
    with pytest.raises(ValueError, match="batch_size"):
        collect_logged_data(RandomPolicy(), env, 10, batch_size=0)
    with pytest.raises(ValueError, match="env"):
        collect_logged_data(RandomPolicy(), object(), 10)
    with pytest.raises(ValueError, match="logging_policy"):
        collect_logged_data(object(), env, 10)


def test_off_policy_estimates_of_a_learnt_policy_on_uniform_logs():
    env = _classification_env()
    logs = collect_logged_data(RandomPolicy(random_state=0), env, 3000, random_state=0)
    train, test = slice(0, 1500), slice(1500, None)
    target = LinUCB(n_actions=3, random_state=0).fit(
        logs.X[train], logs.actions[train], logs.rewards[train]
    )
    proba = target.predict_action_proba(logs.X[test])
    truth = dm_value(proba, expected_rewards=logs.expected_rewards[test])
    assert truth > 0.5  # it learnt something (chance is 1/3)
    args = (proba, logs.actions[test], logs.rewards[test], logs.propensities[test])
    for method in ("ips", "snips", "replay"):
        v = estimate_value(*args, method=method)
        assert abs(v.value - truth) < 4 * v.std_error, (method, v, truth)


def test_chosen_propensities_repairs_only_monte_carlo_zeros():
    from skbandit.evaluation import chosen_propensities

    proba = np.array([[0.5, 0.5, 0.0], [0.0, 0.25, 0.75]])
    assert_allclose(chosen_propensities(proba, [1, 2]), [0.5, 0.75])
    # A slate's arms: one propensity per slot, each arm's inclusion probability.
    slates = np.array([[0, 1], [2, 1]])
    assert_allclose(chosen_propensities(proba, slates), [[0.5, 0.5], [0.75, 0.25]])
    # The estimate never saw arm 2 in round 0: 1 / (2 * 100), with a warning.
    with pytest.warns(UserWarning, match="over 100 draws"):
        repaired = chosen_propensities(proba, [2, 0], n_draws=100, warn=True)
    assert_allclose(repaired, [0.005, 0.005])
    # Exact probabilities: arm 0 of round 1's slate has probability 0, an error.
    with pytest.raises(ValueError, match=r"\[0 1\] chosen in round 1"):
        chosen_propensities(proba, np.array([[0, 1], [0, 1]]))
