"""A neural policy's draws do not depend on its device (checked on the CPU).

A CUDA copy of a policy must compute what its CPU copy computes (``tests/test_gpu.py``
checks it where a GPU is lent). Two things could make them differ beyond float32
rounding, and both are checked here without a GPU: a random draw made on the device
(the initialisation is drawn on the CPU, whatever torch's default device), and a
draw shaping the training data taken from ``select``'s stream, which draws to break
ties: which scores tie depends on the device's rounding (a CPU gives exact zeros for
mirrored inputs at the initialisation, a GPU's reductions may not), so a GPU copy
would train on other bootstrap masks or perturbations than its CPU twin.
"""
# SPDX-License-Identifier: BSD-3-Clause

import copy
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from numpy.testing import assert_array_equal

from skbandit.networks import initialize_net, make_bandit_net
from skbandit.networks._training import get_flat_parameters
from skbandit.preprocessing import MirrorNormalizer
from skbandit.utils.discovery import all_policies

SMALL = {"hidden_layer_sizes": (8,), "n_steps": 3, "learning_rate": 0.05}
#: Every neural policy (those with a ``device``).
NEURAL = {name: cls for name, cls in all_policies() if "device" in cls().get_params()}
#: The settings of a small run beyond SMALL (slates on per-arm contexts).
SETTINGS = {
    "NeuralBootstrap": {"n_models": 3},
    "NeuralES": {"n_models": 3},
    "CNUCB": {"slate_size": 2},
    "CNTS": {"slate_size": 2},
}


def test_every_neural_policy_has_a_cuda_test():
    assert {"NeuralTS", "NeuralBootstrap", "CNUCB"} <= set(NEURAL)  # found them
    gpu_tests = (Path(__file__).parents[2] / "test_gpu.py").read_text()
    missing = [name for name in NEURAL if not re.search(rf"\b{name}\b", gpu_tests)]
    assert not missing, f"no CUDA-against-CPU test in tests/test_gpu.py: {missing}"


def _feed_both(policy, X):
    """Three batches of the same feedback to two copies (the arms chosen by the
    first); after each of its selects, the second draws three more numbers from
    ``select``'s stream: the tie-breaks a device's rounding adds or drops."""
    plain, shifted = copy.deepcopy(policy), copy.deepcopy(policy)
    slates = "slate_size" in policy.get_params()
    for batch in np.array_split(np.arange(X.shape[0]), 3):
        actions = plain.select(X[batch])
        shifted.select(X[batch])  # its choices, maybe other, are not fed back
        shifted._rng.random(3)
        shape = actions.shape if slates else batch.shape
        rewards = (np.cos(3.0 * np.arange(actions.size)).reshape(shape) > 0) * 1.0
        plain.partial_fit(X[batch], actions, rewards)
        shifted.partial_fit(X[batch], actions, rewards)
    return plain, shifted


@pytest.mark.parametrize("name", sorted(NEURAL))
def test_training_does_not_depend_on_selects_draws(name):
    slates = "slate_size" in SETTINGS.get(name, {})
    raw = np.random.RandomState(3).normal(size=(24, 6, 4) if slates else (24, 4))
    X = MirrorNormalizer().fit_transform(raw).astype(np.float32)
    kwargs = {} if slates else {"n_actions": 3}
    policy = NEURAL[name](random_state=0, **SMALL, **kwargs, **SETTINGS.get(name, {}))
    plain, shifted = _feed_both(policy, X)
    # The same arithmetic on the same machine: equal to the bit.
    assert_array_equal(
        get_flat_parameters(shifted.net_.module_).numpy(),
        get_flat_parameters(plain.net_.module_).numpy(),
    )
    assert_array_equal(shifted.predict_scores(X), plain.predict_scores(X))


def test_the_initialisation_is_drawn_on_the_cpu_whatever_the_default_device():
    def start(**default):
        net = make_bandit_net(4, 2, hidden_layer_sizes=(6,), n_members=3)
        if not default:
            return get_flat_parameters(initialize_net(net, seed=7).module_)
        # On the "meta" device a factory draws nothing (and copying out fails): an
        # initialisation that follows torch's default device cannot pass here.
        with torch.device(default["device"]):
            return get_flat_parameters(initialize_net(net, seed=7).module_)

    expected = start()
    assert torch.equal(start(device="meta"), expected)
    assert torch.equal(start(device="cpu"), expected)
