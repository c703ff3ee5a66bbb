"""What a policy refuses before it learns anything, and the hints its errors give."""
# SPDX-License-Identifier: BSD-3-Clause

import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from skbandit.exceptions import NumericalError
from skbandit.policies import (
    GLMES,
    GLMUCB,
    UCBGLM,
    CombLinUCB,
    ECOLog,
    LinUCB,
    LogisticUCB1,
    LogTS,
)

NEURAL_SMALL = {"hidden_layer_sizes": (4,), "n_steps": 2, "random_state": 0}


def _neural(name):
    pytest.importorskip("torch")
    from skbandit import policies

    return getattr(policies, name)(n_actions=2, **NEURAL_SMALL)


# Every policy whose likelihood needs rewards in [0, 1] (Bernoulli or their
# probabilities); PHE's own reward_range has its tests in tests/policies/glm.
UNIT_REWARDS = {
    "GLMUCB": lambda: GLMUCB(n_actions=2, random_state=0),
    "UCBGLM": lambda: UCBGLM(n_actions=2, random_state=0),
    "LogTS": lambda: LogTS(n_actions=2, random_state=0),
    "GLMES": lambda: GLMES(n_actions=2, random_state=0),
    "LogisticUCB1": lambda: LogisticUCB1(n_actions=2, random_state=0),
    "ECOLog": lambda: ECOLog(n_actions=2, random_state=0),
    "NeuralLogUCB": lambda: _neural("NeuralLogUCB"),
    "NeuralLogTS": lambda: _neural("NeuralLogTS"),
    "NCBFUCB": lambda: _neural("NCBFUCB"),
}


def _data(n=12, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)), np.arange(n) % 2, rng.random(n)


@pytest.mark.parametrize("name", UNIT_REWARDS)
@pytest.mark.parametrize("bad", [5.0, -0.5])
def test_rewards_outside_the_unit_interval_are_refused_at_the_door(name, bad):
    X, actions, rewards = _data()
    policy = UNIT_REWARDS[name]().fit(X, actions, rewards)
    scores = policy.predict_scores(X)
    broken = rewards[:4].copy()
    broken[2] = bad
    with pytest.raises(ValueError, match=r"rewards in \[0, 1\].*rewards\[2\] = "):
        policy.partial_fit(X[:4], actions[:4], broken)
    # Refused before learning: the state is the fitted one.
    assert policy.n_samples_seen_ == X.shape[0]
    assert_array_equal(policy.predict_scores(X), scores)
    # fit refuses them too, and leaves a fresh policy unfitted.
    fresh = UNIT_REWARDS[name]()
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        fresh.fit(X[:4], actions[:4], broken)
    assert not hasattr(fresh, "n_samples_seen_")


def test_poisson_glmes_needs_non_negative_rewards_only():
    X, actions, _ = _data()
    counts = np.arange(12.0)  # counts above 1 are Poisson rewards
    GLMES(n_actions=2, link="poisson", random_state=0).fit(X, actions, counts)
    with pytest.raises(ValueError, match=r"\[0, inf\)"):
        GLMES(n_actions=2, link="poisson").fit(X, actions, counts - 3)
    GLMES(n_actions=2, link="identity").fit(X, actions, counts - 3)  # any real


@pytest.mark.parametrize(
    "make, actions",
    [
        (lambda: LinUCB(n_actions=2), np.arange(12) % 2),
        (
            lambda: CombLinUCB(n_actions=4, slate_size=2),
            np.tile([0, 1], (12, 1)),
        ),
    ],
)
def test_missing_rewards_are_called_missing(make, actions):
    X, _, _ = _data()
    for policy in (make(), make().fit(X, actions, np.ones(actions.shape))):
        with pytest.raises(ValueError, match="rewards are missing") as info:
            policy.partial_fit(X, actions, None)
        assert "NaN" not in str(info.value)


def test_divergence_hint_says_to_scale_the_features():
    pytest.importorskip("torch")
    from sklearn.datasets import load_breast_cancer

    from skbandit.policies import NeuralTS

    # Raw breast_cancer (features up to 4e3) with the online standardisation turned
    # off: the training diverges at its first training (round 10), and the hint
    # names the way back.
    X, y = load_breast_cancer(return_X_y=True)
    X, actions = X[:10], y[:10]
    rewards = np.ones(10)
    raw = dict(n_actions=2, standardize=False, random_state=0)
    with pytest.raises(NumericalError, match="scale the features") as info:
        NeuralTS(**raw).fit(X, actions, rewards)
    assert "reduction='mean'" not in str(info.value)  # "mean" is the default
    with pytest.raises(NumericalError, match="reduction='mean'"):
        NeuralTS(reduction="sum", **raw).fit(X, actions, rewards)
    # with its default (standardize="auto") the same rows train
    NeuralTS(n_actions=2, random_state=0).fit(X, actions, rewards)


@pytest.mark.parametrize(
    "name", ["NeuralTS", "NeuralUCB", "NeuralLogUCB", "NCBFUCB", "NeuralLinear"]
)
def test_read_only_arrays_give_no_torch_warning(name):
    # pandas 3 hands out read-only arrays; torch warns when it wraps one.
    policy = _neural(name)
    X, actions, rewards = _data()
    for array in (X, actions, rewards):
        array.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        policy.fit(X, actions, rewards).partial_fit(X[:3], actions[:3], rewards[:3])
        policy.select(X)
