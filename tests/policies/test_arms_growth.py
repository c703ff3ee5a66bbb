"""Arms that come and go: ``set_params(n_actions=K + 1)`` on a fitted policy."""
# SPDX-License-Identifier: BSD-3-Clause

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skbandit.policies import (
    CNTS,
    CNUCB,
    GLMUCB,
    UCBGLM,
    CombLinTS,
    CombLinUCB,
    EpsilonGreedy,
    KernelTS,
    KernelUCB,
    LinPHE,
    LinTS,
    LinUCB,
    LogPHE,
    LogTS,
    NeuralEpsilonGreedy,
    NeuralTS,
    RandomPolicy,
)
from skbandit.utils.discovery import all_policies

K, D = 3, 4
#: Policies whose fitted state gains arms; each new arm starts from the prior.
GROWING = [
    LinUCB,
    LinTS,
    EpsilonGreedy,
    LinPHE,
    LogPHE,
    GLMUCB,
    UCBGLM,
    LogTS,
    KernelUCB,
    KernelTS,
    RandomPolicy,
]
NEURAL = {"hidden_layer_sizes": (6,), "n_steps": 2, "random_state": 0}


def _logs(seed, n, n_arms, arms=None):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    actions = rng.integers(n_arms, size=n) if arms is None else np.asarray(arms)
    return X, actions, rng.random(n)  # rewards in [0, 1] suit every policy


@pytest.mark.parametrize("Policy", GROWING, ids=lambda c: c.__name__)
def test_a_grown_policy_is_the_policy_fitted_with_the_arm_from_the_start(Policy):
    # Disjoint models: the old arms' blocks never see arm K's data, so growing a
    # fitted K-arm policy must give exactly the (K + 1)-arm policy fitted on the
    # same logs -- old blocks untouched, the new one at the prior -- and the two
    # must stay equal as feedback for every arm (the new one included) comes in.
    X, actions, rewards = _logs(0, 40, K)
    grown = Policy(n_actions=K, random_state=0).fit(X, actions, rewards)
    before = grown.predict_scores(X, return_std=True)
    grown.set_params(n_actions=K + 1)
    direct = Policy(n_actions=K + 1, random_state=0).fit(X, actions, rewards)
    for g, d in zip(
        grown.predict_scores(X, return_std=True),
        direct.predict_scores(X, return_std=True),
        strict=True,
    ):
        assert_allclose(g, d, rtol=1e-10, atol=1e-12)
    assert_allclose(grown.predict_scores(X)[:, :K], before[0], rtol=1e-12, atol=1e-14)
    assert grown.n_actions_ == K + 1
    assert_array_equal(
        grown.action_counts_, np.r_[np.bincount(actions, minlength=K), 0]
    )
    for seed in (1, 2):
        X2, a2, r2 = _logs(seed, 12, K + 1, arms=np.arange(12) % (K + 1))
        grown.partial_fit(X2, a2, r2)
        direct.partial_fit(X2, a2, r2)
        assert_allclose(
            grown.predict_scores(X), direct.predict_scores(X), rtol=1e-10, atol=1e-12
        )
    assert grown.select(X).max() < K + 1


@pytest.mark.parametrize(
    "Policy", [LinUCB, LinPHE, GLMUCB, KernelUCB, NeuralTS], ids=lambda c: c.__name__
)
def test_per_arm_contexts_share_the_model_with_a_new_arm(Policy):
    # One theta (or network) scores every arm's own context: a new arm needs no
    # state, and an arm whose context copies arm 0's gets arm 0's score.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, K, D))
    params = NEURAL if Policy is NeuralTS else {"random_state": 0}
    policy = Policy(**params).fit(X, rng.integers(K, size=30), rng.random(30))
    policy.set_params(n_actions=K + 1)
    X4 = np.concatenate([X[:5], X[:5, :1]], axis=1)
    scores = policy.predict_scores(X4)
    assert scores.shape == (5, K + 1)
    assert_allclose(scores[:, K], scores[:, 0], rtol=1e-6)
    policy.partial_fit(X4, np.full(5, K), rng.random(5))
    assert policy.action_counts_[K] == 5
    with pytest.raises(ValueError, match="set_params"):
        policy.predict_scores(X)  # K arms on axis 1 now miss one


def test_neural_policies_with_shared_contexts_say_why_they_cannot_grow():
    X, actions, rewards = _logs(0, 20, K)
    policy = NeuralEpsilonGreedy(n_actions=K, **NEURAL).fit(X, actions, rewards)
    policy.set_params(n_actions=K + 1)
    with pytest.raises(ValueError, match="disjoint encoding.*per-arm contexts"):
        policy.select(X[:1])
    assert policy.n_actions_ == K


def test_arms_never_shrink_and_leave_through_the_mask():
    X, actions, rewards = _logs(0, 40, K)
    policy = LinUCB(n_actions=K, random_state=0).fit(X, actions, rewards)
    with pytest.raises(ValueError, match="only grow.*action_mask"):
        policy.set_params(n_actions=K - 1).select(X)
    policy.set_params(n_actions=K + 1)
    mask = np.ones((40, K + 1), dtype=bool)
    mask[:, 0] = False  # arm 0 has left
    assert not np.any(policy.select(X, action_mask=mask) == 0)
    assert_array_equal(policy.predict_action_proba(X, action_mask=mask)[:, 0], 0.0)


def test_a_failed_call_after_growing_leaves_the_policy_as_it_was():
    X, actions, rewards = _logs(0, 40, K)
    policy = LinUCB(n_actions=K, random_state=0).fit(X, actions, rewards)
    state = pickle.dumps(policy)
    policy.set_params(n_actions=K + 1)
    with pytest.raises(ValueError, match="rewards"):
        policy.partial_fit(X[:2], [K, K], [np.nan, 1.0])
    assert policy.n_actions_ == K
    policy.set_params(n_actions=K)
    assert pickle.dumps(policy) == state
    # grown state pickles and continues
    policy.set_params(n_actions=K + 1).partial_fit(X[:2], [K, K], [1.0, 1.0])
    again = pickle.loads(pickle.dumps(policy))
    assert_array_equal(again.predict_scores(X), policy.predict_scores(X))


@pytest.mark.parametrize("name, Policy", all_policies())
def test_every_policy_grows_or_refuses_clearly(name, Policy):
    X, actions, rewards = _logs(0, 20, K)
    params = {**Policy._get_test_params()[0], "n_actions": K}
    new = [K, 0, K]
    if "slate_size" in params:  # slates of 2: (a, a + 1 mod K)
        params["slate_size"] = 2
        actions, rewards = _slates(actions, K), np.c_[rewards, rewards]
        new = [[K, 0], [0, K], [K, 1]]
    policy = Policy(**params).fit(X, actions, rewards)
    policy.set_params(n_actions=K + 1)
    try:
        policy.partial_fit(X[:3], new, rewards[:3])
    except ValueError as exc:
        assert Policy not in GROWING + SLATES_GROWING
        assert "n_actions" in str(exc) and policy.n_actions_ == K
    else:
        assert policy.n_actions_ == K + 1
        assert policy.predict_scores(X).shape == (20, K + 1)


# ------------------------------------------------------------------------ slates
#: Slate policies grow like their single-arm cores: CombLin* with shared contexts
#: (a ridge block per arm) and every slate policy with per-arm contexts.
SLATES_GROWING = [CombLinUCB, CombLinTS]
SLATE_NEURAL = {"hidden_layer_sizes": (6,), "n_steps": 2, "random_state": 0}


def _slates(actions, n_arms, width=2):
    """Slates ``(a, a + 1, ...) mod n_arms`` of distinct arms from 1-D actions."""
    return (np.asarray(actions)[:, None] + np.arange(width)) % n_arms


@pytest.mark.parametrize("Policy", SLATES_GROWING, ids=lambda c: c.__name__)
def test_a_grown_comb_linear_policy_equals_one_fitted_with_the_arm(Policy):
    # Shared contexts: one ridge block per arm. Growing must equal the (K + 1)-arm
    # policy fitted on the same logs, and stay equal under slates with the new arm.
    X, actions, rewards = _logs(0, 40, K)
    slates, scores = _slates(actions, K), np.c_[rewards, rewards[::-1]]
    grown = Policy(n_actions=K, slate_size=2, random_state=0).fit(X, slates, scores)
    before = grown.predict_scores(X, return_std=True)
    old = pickle.dumps(grown._ridge)
    grown.set_params(n_actions=K + 1)
    direct = Policy(n_actions=K + 1, slate_size=2, random_state=0)
    direct.fit(X, slates, scores)
    for g, d in zip(
        grown.predict_scores(X, return_std=True),
        direct.predict_scores(X, return_std=True),
        strict=True,
    ):
        assert_allclose(g, d, rtol=1e-10, atol=1e-12)
    assert_allclose(grown.predict_scores(X)[:, :K], before[0], rtol=1e-12)
    assert_allclose(grown.predict_scores(X, return_std=True)[1][:, :K], before[1])
    # the new arm has the prior: the mean 0 and the prior width alpha^-1/2 |x|,
    # times the posterior scale nu where the policy samples (CombLinTS)
    width_scale = grown.get_params().get("nu", 1.0)
    assert_allclose(grown.predict_scores(X)[:, K], 0.0, atol=1e-15)
    assert_allclose(
        grown.predict_scores(X, return_std=True)[1][:, K],
        width_scale * np.linalg.norm(X, axis=1) / np.sqrt(grown.alpha),
        rtol=1e-12,
    )
    assert pickle.dumps(grown._ridge) != old  # rebound, grown
    assert_array_equal(
        grown.action_counts_, np.r_[np.bincount(slates.ravel(), minlength=K), 0]
    )
    for seed in (1, 2):
        X2, a2, r2 = _logs(seed, 12, K + 1, arms=np.arange(12) % (K + 1))
        s2, v2 = _slates(a2, K + 1), np.c_[r2, r2]
        v2[::3, 1] = np.nan  # cascade-like unobserved slots
        grown.partial_fit(X2, s2, v2)
        direct.partial_fit(X2, s2, v2)
        assert_allclose(
            grown.predict_scores(X), direct.predict_scores(X), rtol=1e-10, atol=1e-12
        )
    assert grown.select(X).shape == (40, 2) and grown.select(X).max() <= K
    assert grown.action_counts_[K] > 0


def _model_state(policy):
    """The learnt state as bytes: ridge statistics, or network, Z^{-1} and buffer."""
    if hasattr(policy, "_ridge"):
        ridge = policy._ridge
        return pickle.dumps((ridge.precision, ridge.covariance, ridge.moment))
    core = policy._core
    theta = [p.detach().numpy().copy() for p in core.net.module_.parameters()]
    return pickle.dumps((theta, np.asarray(policy.covariance_), core.buffer))


@pytest.mark.parametrize(
    "Policy, params",
    [
        (CombLinUCB, {"random_state": 0}),
        (CombLinTS, {"random_state": 0}),
        (CNUCB, SLATE_NEURAL),
        (CNTS, SLATE_NEURAL),
    ],
    ids=lambda p: getattr(p, "__name__", ""),
)
def test_slate_policies_with_per_arm_contexts_score_a_new_arm_with_the_shared_model(
    Policy, params
):
    # One model scores every arm's own context: a new arm needs no state, the old
    # state is untouched by growing, and a copy of arm 0's context scores as arm 0.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, K, D))
    slates = _slates(rng.integers(K, size=30), K)
    policy = Policy(slate_size=2, **params).fit(X, slates, rng.random((30, 2)))
    X4 = np.concatenate([X[:5], X[:5, :1]], axis=1)
    state = _model_state(policy)
    policy.set_params(n_actions=K + 1)
    mean, std = policy.predict_scores(X4, return_std=True)
    assert mean.shape == std.shape == (5, K + 1)
    assert_allclose(mean[:, K], mean[:, 0], rtol=1e-6)
    assert_allclose(std[:, K], std[:, 0], rtol=1e-5)
    assert _model_state(policy) == state  # growing wrote nothing
    policy.partial_fit(X4, np.tile([K, 1], (5, 1)), rng.random((5, 2)))
    assert policy.action_counts_[K] == 5 and policy.n_actions_ == K + 1
    assert policy.select(X4).shape == (5, 2)
    with pytest.raises(ValueError, match="set_params"):
        policy.predict_scores(X)  # K arms on axis 1 now miss one


@pytest.mark.parametrize("Policy", [CNUCB, CNTS], ids=lambda c: c.__name__)
def test_neural_slate_policies_with_shared_contexts_refuse_and_change_nothing(Policy):
    X, actions, rewards = _logs(0, 12, K)
    policy = Policy(n_actions=K, slate_size=2, **SLATE_NEURAL)
    policy.fit(X, _slates(actions, K), np.c_[rewards, rewards])
    state = pickle.dumps(policy)
    policy.set_params(n_actions=K + 1)
    with pytest.raises(ValueError, match="disjoint encoding.*per-arm contexts"):
        policy.partial_fit(X[:1], [[K, 0]], [[1.0, 0.0]])
    assert policy.n_actions_ == K
    assert pickle.dumps(policy.set_params(n_actions=K)) == state
