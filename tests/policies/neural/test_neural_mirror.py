"""``mirror_inputs``: the neural policies feed their network ``[x; x] / sqrt(2)``."""
# SPDX-License-Identifier: BSD-3-Clause

import pickle

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose, assert_array_equal

from skbandit.policies import (
    CNUCB,
    NCBFUCB,
    NeuralBootstrap,
    NeuralEpsilonGreedy,
    NeuralES,
    NeuralLinear,
    NeuralLogTS,
    NeuralPHE,
    NeuralTS,
    NeuralUCB,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = {"hidden_layer_sizes": (8,), "n_steps": 3, "random_state": 0}
MIRRORED_BY_DEFAULT = [
    NeuralTS,
    NeuralUCB,
    NeuralEpsilonGreedy,
    NeuralLinear,
    NeuralBootstrap,
    NeuralES,
    NeuralPHE,
    NeuralLogTS,
]


def _data(n=12, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = 3.0 * rng.standard_normal((n, d))  # standard-scaled-like, far from unit norm
    return X, rng.integers(3, size=n), rng.random(n)


@pytest.mark.parametrize("Policy", MIRRORED_BY_DEFAULT)
def test_the_papers_network_mirrors_by_default(Policy):
    X, a, r = _data()
    policy = Policy(n_actions=3, **SMALL).fit(X, a, r)
    assert policy.get_params()["mirror_inputs"] == "auto"
    assert policy.net_.module_.n_features == 2 * X.shape[1]  # the first layer's 2d


@pytest.mark.parametrize("per_arm", [False, True])
def test_the_untrained_network_scores_zero_on_any_input(per_arm):
    # Algorithm 1, line 2: W_1 = [[W, 0], [0, W]], W_L = (w, -w). On [x; x] / sqrt 2
    # the two halves compute the same hidden units with opposite output weights.
    X, a, r = _data()
    if per_arm:
        X = np.stack([X, -X, 2 * X], axis=1)
    policy = NeuralTS(n_actions=3, hidden_layer_sizes=(16, 8), n_steps=0)
    policy.fit(X, a, r)
    # The halves cancel up to float32 rounding of their sums (1.2e-6 measured; a
    # network that is not mirrored scores 1e-1).
    assert_allclose(policy.predict_scores(X), 0.0, atol=1e-4)
    unmirrored = NeuralTS(n_actions=3, mirror_inputs=False, n_steps=0).fit(X, a, r)
    assert np.abs(unmirrored.predict_scores(X)).max() > 0.1


def test_mirroring_is_the_mirrored_input_fed_by_hand():
    # The same policy, fed [x; x] / sqrt(2) by hand with mirroring off, makes the
    # same network (same seed, same shapes) and the same decisions.
    X, a, r = _data(n=20)
    by_hand = np.hstack([X, X]) / np.sqrt(2.0)
    # contexts as given: standardised, the hand-fed copy's columns lose their 1/sqrt 2
    mirrored = NeuralUCB(n_actions=3, standardize=False, **SMALL)
    mirrored.fit(X[:10], a[:10], r[:10])
    manual = NeuralUCB(n_actions=3, mirror_inputs=False, standardize=False, **SMALL)
    manual.fit(by_hand[:10], a[:10], r[:10])
    for t in range(10, 20):
        choice = mirrored.select(X[t : t + 1])
        assert_array_equal(choice, manual.select(by_hand[t : t + 1]))
        mirrored.partial_fit(X[t : t + 1], choice, r[t : t + 1])
        manual.partial_fit(by_hand[t : t + 1], choice, r[t : t + 1])
    assert_allclose(
        mirrored.predict_scores(X, return_std=True),
        manual.predict_scores(by_hand, return_std=True),
        # float32: the two roundings of x / sqrt(2), carried through 20 rounds of
        # training (2.7e-6 measured; 1e-4 leaves 37 times that).
        rtol=1e-4,
        atol=1e-4,
    )


def test_auto_mirrors_only_the_papers_network():
    X, a, r = _data()
    assert not NeuralTS(n_actions=3, init="default", **SMALL).fit(X, a, r)._mirror
    module = torch.nn.Sequential(torch.nn.Linear(5, 3))
    assert not NeuralTS(n_actions=3, module=module, **SMALL).fit(X, a, r)._mirror
    assert not NCBFUCB(n_actions=3, n_steps=2).fit(X, a, r)._mirror  # init="default"
    assert (
        NeuralTS(n_actions=3, init="default", mirror_inputs=True, **SMALL)
        .fit(X, a, r)
        ._mirror
    )
    assert CNUCB().get_params()["mirror_inputs"] is False  # the paper's features


def test_auto_does_not_mirror_twice():
    from skbandit.preprocessing import MirrorNormalizer

    X, a, r = _data()
    Z = MirrorNormalizer().fit_transform(X)
    policy = NeuralTS(n_actions=3, **SMALL).fit(Z, a, r)
    assert not policy._mirror and policy.net_.module_.n_features == 10
    assert NeuralTS(n_actions=3, **SMALL).fit(np.zeros((3, 4)), a[:3], r[:3])._mirror


def test_the_setting_is_fixed_at_fit():
    X, a, r = _data()
    policy = NeuralTS(n_actions=3, **SMALL).fit(X, a, r)
    policy.set_params(mirror_inputs=False)
    policy.partial_fit(X[:2], a[:2], r[:2])  # still the fitted (mirrored) network
    assert policy._mirror and policy.net_.module_.n_features == 10
    policy.fit(X, a, r)  # a refit takes the new setting
    assert not policy._mirror and policy.net_.module_.n_features == 5


@pytest.mark.parametrize(
    "bad",
    [
        np.full((2, 5), np.nan),  # NaN
        np.ones((2, 4)),  # the unmirrored width is checked, not the network's
        np.ones((2, 10)),  # nor does the network's width pass
        np.ones((2, 3, 5)),  # per-arm contexts after shared ones
    ],
)
def test_bad_contexts_raise_value_errors_and_change_nothing(bad):
    X, a, r = _data()
    policy = NeuralTS(n_actions=3, **SMALL).fit(X, a, r)
    before = pickle.dumps(policy)
    for call in (
        lambda: policy.select(bad),
        lambda: policy.partial_fit(bad, a[:2], r[:2]),
        lambda: policy.predict_scores(bad),
    ):
        with pytest.raises(ValueError):
            call()
    assert pickle.dumps(policy) == before
