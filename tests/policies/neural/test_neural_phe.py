"""Neural perturbed-history exploration (Neural-PHE, the baseline of Sun, Wang, Xu
2025): each training fits fresh noise around the stored rewards, and no noise is the
greedy network."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose, assert_array_equal

from skbandit.networks import initialize_net, make_bandit_net
from skbandit.networks._training import (
    get_flat_parameters,
    proximal_gradient_descent,
    set_flat_parameters,
)
from skbandit.policies import NeuralEpsilonGreedy, NeuralPHE

#: The checks below feed the network x itself (mirroring: test_neural_mirror.py).
TINY = {
    "hidden_layer_sizes": (6, 6),
    "n_steps": 4,
    "learning_rate": 0.05,
    "mirror_inputs": False,
    # the papers' schedule (every round, full batch, the whole history): the tests
    # check the per-round maths
    "train_every": 1,
    "batch_size": None,
    "max_buffer_size": None,
}

# The maths on the contexts as given (standardize="auto" would scale them).
pytestmark = pytest.mark.usefixtures("one_torch_thread", "neural_contexts_as_given")


def _data(n=20, d=4, K=3, seed=0):
    rng = np.random.RandomState(seed)
    return rng.normal(size=(n, d)), rng.randint(K, size=n), rng.normal(size=n)


def _flat(module):
    return get_flat_parameters(module).detach().clone()


def test_phe_trains_on_fresh_noise_around_the_stored_rewards():
    K, d, sigma, alpha = 3, 4, 0.4, 0.5
    X, a, r = _data(n=12, d=d, K=K, seed=10)
    pol = NeuralPHE(
        n_actions=K, perturbation_scale=sigma, alpha=alpha, random_state=0, **TINY
    )
    pol.partial_fit(X[:5], a[:5], r[:5])
    net = initialize_net(
        make_bandit_net(
            d, K, hidden_layer_sizes=(6, 6), disjoint=True, learning_rate=0.05
        ),
        0,
    )
    theta0 = [t.clone() for t in pol._core.theta0_tensors()]
    for start, stop in [(5, 6), (6, 9), (9, 12)]:
        set_flat_parameters(net.module_, _flat(pol.net_.module_))
        twin = np.random.default_rng()
        twin.bit_generator.state = pol._data_rng.bit_generator.state
        z = twin.standard_normal(stop)  # the draws the training will make
        pol.partial_fit(X[start:stop], a[start:stop], r[start:stop])
        assert_allclose(pol._core.buffer.targets, r[:stop].astype(np.float32))
        proximal_gradient_descent(
            net,
            torch.as_tensor(X[:stop], dtype=torch.float32),
            torch.as_tensor(a[:stop]),
            torch.as_tensor((r[:stop] + sigma * z).astype(np.float32)),
            None,
            theta0,
            alpha=alpha,
            n_steps=4,
        )
        assert_allclose(
            _flat(pol.net_.module_), _flat(net.module_), rtol=1e-4, atol=1e-5
        )


def test_phe_without_noise_is_the_greedy_network():
    X, a, r = _data(n=14, seed=11)
    phe = NeuralPHE(n_actions=3, perturbation_scale=0.0, random_state=2, **TINY)
    greedy = NeuralEpsilonGreedy(n_actions=3, epsilon=0.0, random_state=2, **TINY)
    for start, stop in [(0, 3), (3, 4), (4, 14)]:
        phe.partial_fit(X[start:stop], a[start:stop], r[start:stop])
        greedy.partial_fit(X[start:stop], a[start:stop], r[start:stop])
    assert_array_equal(_flat(phe.net_.module_), _flat(greedy.net_.module_))
    assert_array_equal(phe.predict_action_proba(X), greedy.predict_action_proba(X))


def test_phe_redraws_the_whole_history_at_every_training():
    X, a, r = _data(n=10)
    pol = NeuralPHE(n_actions=3, perturbation_scale=1.0, random_state=0, **TINY)
    draws = []
    real = pol._training_targets

    def spy():
        perturbed = real()

        def recorded(buffer):
            targets = perturbed(buffer)
            draws.append(np.asarray(targets) - buffer.targets)
            return targets

        return recorded

    pol._training_targets = spy
    for t in range(10):
        pol.partial_fit(X[t : t + 1], a[t : t + 1], r[t : t + 1])
    assert [len(z) for z in draws] == list(range(1, 11))  # t draws at round t
    # Never reused: the noise of row 0 differs at every training.
    first = [z[0] for z in draws]
    assert len(set(np.round(first, 6))) == 10


def test_phe_scales_a_weighted_rounds_noise_by_one_over_root_weight():
    """A round of weight w counts as w copies of it: its perturbation is the mean of
    w draws, N(0, sigma^2 / w) (NeuralES and LinES scale theirs the same way)."""
    n, sigma = 4000, 0.5
    X, a, r = _data(n=n, seed=3)
    w = np.where(np.arange(n) % 2 == 0, 1.0, 4.0)
    pol = NeuralPHE(
        n_actions=3, perturbation_scale=sigma, random_state=0, **TINY
    ).partial_fit(X[:2], a[:2], r[:2])
    pol._core.buffer = pol._core.buffer.extended(
        X.astype(np.float32), a, r.astype(np.float32), w.astype(np.float32)
    )
    buffer = pol._core.buffer
    noise = pol._training_targets()(buffer)[2:] - buffer.targets[2:]
    # The standard deviation of 2,000 normal draws has a relative standard error of
    # 1 / sqrt(4000) = 1.6%: 8% is 5 of them (unscaled, weight 4 would be 100% off).
    assert_allclose(noise[w == 1].std(), sigma, rtol=0.08)
    assert_allclose(noise[w == 4].std(), sigma / 2, rtol=0.08)
