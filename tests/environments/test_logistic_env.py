"""NeuralLogisticBandit: the latent functions of Bae and Lee ("Neural Logistic
Bandits", ICML 2025), written out here, its pool of vectors and its rewards."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skbandit.environments import NeuralLogisticBandit


def _h(name, x, theta, Theta):
    z = sum(x[j] * theta[j] for j in range(len(x)))
    quad = sum(x[i] * Theta[i, j] * x[j] for i in range(len(x)) for j in range(len(x)))
    Tx = [sum(Theta[i, j] * x[j] for j in range(len(x))) for i in range(len(x))]
    return {
        "h1": 0.2 * z**4,
        "h2": 20 * np.cos(z),
        "h3": 5 * quad,
        "h4": 10 * z**2,
        "h5": sum(v * v for v in Tx),
        "h6": np.cos(3 * z),
    }[name]


@pytest.mark.parametrize("name", ["h1", "h2", "h3", "h4", "h5", "h6"])
def test_expected_rewards_are_the_sigmoid_of_the_latent_function(name):
    env = NeuralLogisticBandit(name, n_actions=3, n_features=4).reset(0)
    X = env.contexts(5)
    assert X.shape == (5, 3, 4) and np.all(np.abs(X) <= 1)
    assert np.all(np.abs(env.theta_) <= 1) and np.all(np.abs(env.Theta_) <= 1)
    want = [
        [1 / (1 + np.exp(-_h(name, x, env.theta_, env.Theta_))) for x in row]
        for row in X
    ]
    assert_allclose(env.expected_rewards, want, rtol=1e-12)


def test_rounds_show_distinct_vectors_of_the_pool():
    env = NeuralLogisticBandit("h2", n_actions=5, n_vectors=7).reset(1)
    X = env.contexts(400)
    pool = env.pool_
    index = np.argmax((X[:, :, None, :] == pool[None, None]).all(-1), axis=2)
    assert_array_equal(pool[index], X)  # every shown vector is a pool vector
    assert all(len(set(row)) == 5 for row in index)  # distinct within a round
    assert set(index.ravel()) == set(range(7))  # every pool vector shows up
    fresh = NeuralLogisticBandit("h2", n_vectors=None).reset(1)
    assert (
        fresh.pool_ is None
        and len(np.unique(fresh.contexts(50).reshape(-1, 20), axis=0)) == 250
    )


def test_same_seed_same_run_and_bernoulli_rewards():
    a = NeuralLogisticBandit("h3").reset(3)
    b = NeuralLogisticBandit("h3").reset(3)
    assert_array_equal(a.contexts(20), b.contexts(20))
    r = a.rewards(np.zeros(20, dtype=int))
    assert set(np.unique(r)) <= {0.0, 1.0}
    assert_array_equal(r, b.rewards(np.zeros(20, dtype=int)))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"reward": "h7"}, "reward must be one of"),
        ({"n_vectors": 3}, "n_vectors must be None or an integer of at least"),
        ({"context_distribution": "ball"}, "context_distribution must be"),
        ({"n_actions": 0}, "n_actions must be a positive integer"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NeuralLogisticBandit(**kwargs)
