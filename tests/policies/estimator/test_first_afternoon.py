"""What a newcomer met on a first afternoon with the estimator family (issue 33).

Mixed dense and sparse batches (with a policy that standardises its contexts too),
a classifier as the reward model, a refit schedule that says when it learned, the
default reward model on raw and scaled features, and a slate larger than the arms
(every slate policy).
"""
# SPDX-License-Identifier: BSD-3-Clause

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import sparse
from sklearn.cluster import KMeans
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skbandit.policies import (
    FALCON,
    BootstrappedTS,
    EpsilonGreedy,
    SquareCB,
)
from skbandit.policies._core._online_ridge import OnlineRidge
from skbandit.utils._tags import is_slate_policy
from skbandit.utils.discovery import all_policies


def _data(n=300, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    actions = rng.integers(3, size=n)
    return X, actions, X[:, 0] * (actions == 1) + rng.normal(size=n) * 0.1


POLICIES = [
    lambda est: FALCON(n_actions=3, estimator=est, random_state=0),
    lambda est: SquareCB(n_actions=3, estimator=est, random_state=0),
    lambda est: BootstrappedTS(n_actions=3, estimator=est, n_models=3, random_state=0),
    lambda est: EpsilonGreedy(n_actions=3, estimator=est, random_state=0),
]


@pytest.mark.parametrize("make", POLICIES)
@pytest.mark.parametrize("estimator", [OnlineRidge(), Ridge()], ids=["online", "ridge"])
def test_a_history_of_dense_and_sparse_batches_learns_as_a_dense_one(make, estimator):
    # Dense, then sparse, then dense again across several refits (rounds 40 to
    # 300 cross 64, 128 and 256): once a sparse batch joined a dense history,
    # every later refit failed in numpy's concatenate.
    X, actions, rewards = _data()
    mixed = make(estimator).fit(X[:40], actions[:40], rewards[:40])
    mixed.partial_fit(sparse.csr_matrix(X[40:100]), actions[40:100], rewards[40:100])
    mixed.partial_fit(X[100:], actions[100:], rewards[100:])
    dense = make(estimator).fit(X[:40], actions[:40], rewards[:40])
    dense.partial_fit(X[40:100], actions[40:100], rewards[40:100])
    dense.partial_fit(X[100:], actions[100:], rewards[100:])
    # OnlineRidge densifies the sparse rows: the same sums. Ridge solves a sparse
    # history iteratively (its sparse_cg, tol 1e-4 on the residual): scores of
    # order 1 agree to 1e-3.
    tolerance = 1e-10 if isinstance(estimator, OnlineRidge) else 1e-3
    assert_allclose(mixed.predict_scores(X), dense.predict_scores(X), atol=tolerance)
    assert mixed.select(sparse.csr_matrix(X[:4])).shape == (4,)


@pytest.mark.parametrize(
    "make",
    [
        lambda: SquareCB(n_actions=3, random_state=0),  # its default model scales
        lambda: FALCON(n_actions=3, standardize=True, random_state=0),
        lambda: BootstrappedTS(
            n_actions=3, n_models=3, standardize=True, random_state=0
        ),
    ],
    ids=["SquareCB-default", "FALCON-standardize", "BootstrappedTS-standardize"],
)
def test_a_standardising_policy_scales_a_later_sparse_batch_as_its_dense_rows(make):
    # A policy that standardises its contexts learned a dense first batch scaled,
    # then read a sparse batch as given: one model, two scales (SquareCB's default
    # scores moved by 0.37 on this problem). Features of scales 1 to 1,000 and a
    # mean of 5 make unscaled rows show.
    X, actions, rewards = _data()
    X = X * [1.0, 10.0, 100.0, 1000.0, 1.0] + 5.0
    mixed = make().fit(X[:40], actions[:40], rewards[:40])
    mixed.partial_fit(sparse.csr_matrix(X[40:100]), actions[40:100], rewards[40:100])
    mixed.partial_fit(X[100:], actions[100:], rewards[100:])
    dense = make().fit(X[:40], actions[:40], rewards[:40])
    dense.partial_fit(X[40:100], actions[40:100], rewards[40:100])
    dense.partial_fit(X[100:], actions[100:], rewards[100:])
    # The sparse rows are densified to the very floats of the dense batch: the
    # same arithmetic, bit for bit.
    assert_array_equal(mixed.predict_scores(X), dense.predict_scores(X))
    assert_array_equal(
        mixed.predict_scores(sparse.csr_matrix(X)), dense.predict_scores(X)
    )
    assert_array_equal(mixed.select(sparse.csr_matrix(X[:20])), dense.select(X[:20]))


@pytest.mark.parametrize("make", POLICIES)
@pytest.mark.parametrize(
    "estimator",
    [KMeans(n_clusters=2), LogisticRegression(), make_pipeline(LogisticRegression())],
    ids=["clusterer", "classifier", "pipeline-of-a-classifier"],
)
def test_a_reward_model_must_be_a_regressor(make, estimator):
    X, actions, rewards = _data(40)
    policy = make(estimator)
    before = pickle.dumps(policy)
    with pytest.raises(ValueError, match="must be a regressor.*predict is read"):
        policy.fit(X, actions, (rewards > 0).astype(float))
    assert pickle.dumps(policy) == before


def test_falcon_says_when_its_model_last_learned():
    X, actions, rewards = _data(1600)
    first, second, third = (slice(0, 600), slice(600, 1100), slice(1100, 1600))
    # Ridge() on the contexts as given: the default model's online standardisation
    # learns every round, so its scores move a little between refits
    policy = FALCON(n_actions=3, estimator=Ridge(), random_state=0)
    policy.fit(X[first], actions[first], rewards[first])
    assert (policy.last_refit_round_, policy.n_refits_) == (600, 1)  # crossed 512
    policy.partial_fit(X[second], actions[second], rewards[second])  # crosses 1024
    assert (policy.last_refit_round_, policy.n_refits_) == (1100, 2)
    scores = policy.predict_scores(X[:5])
    policy.partial_fit(X[third], actions[third], rewards[third])
    # 500 new rounds, no epoch boundary (2,048): the model has not learned them
    assert (policy.last_refit_round_, policy.n_refits_) == (1100, 2)
    assert policy.n_samples_seen_ == 1600
    assert_allclose(policy.predict_scores(X[:5]), scores)


def test_an_online_model_learns_at_every_partial_fit():
    X, actions, rewards = _data(50)
    policy = SquareCB(n_actions=3, random_state=0)
    policy.fit(X[:20], actions[:20], rewards[:20])
    policy.partial_fit(X[20:], actions[20:], rewards[20:])
    assert (policy.last_refit_round_, policy.n_refits_) == (50, 0)


def test_the_default_reward_model_learns_on_raw_and_scaled_features():
    # SquareCB's former default, SGDRegressor(learning_rate="constant", eta0=0.05),
    # diverged on breast cancer even standard-scaled (scores |696| for 0/1
    # rewards). The exact online ridge keeps its scores in the rewards' range.
    X, y = load_breast_cancer(return_X_y=True)
    actions = np.random.default_rng(0).integers(2, size=len(y))
    rewards = (actions == y).astype(float)
    for features in (X, StandardScaler().fit_transform(X)):
        policy = SquareCB(n_actions=2, random_state=0)
        for chunk in np.array_split(np.arange(len(y)), 50):
            policy.partial_fit(features[chunk], actions[chunk], rewards[chunk])
        scores = policy.predict_scores(features)
        # rewards are 0 or 1; a linear model extrapolates a little on outlying
        # rows (2.5 at most here), far from the former default's 696
        assert np.abs(scores).max() < 5.0
        # and it learned: the greedy arm is the right class most of the time
        assert np.mean(scores.argmax(axis=1) == y) > 0.85


SLATE_POLICIES = [cls for _, cls in all_policies() if is_slate_policy(cls())]


def test_every_slate_policy_is_checked_below():
    # CN-UCB and CN-TS beside the linear ones: a new slate policy joins the checks
    names = {cls.__name__ for cls in SLATE_POLICIES}
    assert {"CombLinUCB", "CombLinTS", "CNUCB", "CNTS"} <= names


@pytest.mark.parametrize("Policy", SLATE_POLICIES, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("n_actions", [3, None])
def test_a_slate_larger_than_the_arms_fails_at_fit_with_the_reason(Policy, n_actions):
    # The default slate_size=4 with 3 arms: refused at fit (n_actions given, or
    # read from the feedback), with the reason, and the policy is left unfitted.
    X = np.random.default_rng(0).normal(size=(5, 2))
    slates = np.tile([0, 1, 2], (5, 1))
    policy = Policy(n_actions=n_actions)
    with pytest.raises(ValueError, match="slate_size=4 exceeds the number of arms"):
        policy.fit(X, slates, np.ones((5, 3)))
    assert not hasattr(policy, "n_actions_")


class _CountingRidge(OnlineRidge):
    """OnlineRidge that counts its predictions (a class attribute: clones share it)."""

    calls = 0

    def predict(self, X):
        type(self).calls += 1
        return super().predict(X)


@pytest.mark.parametrize("Policy", [SquareCB, FALCON])
def test_propensities_come_from_one_prediction(Policy):
    # select(return_propensities=True) draws from the law it returns: one
    # prediction of each arm's model, not one for the arms and one for the law;
    # the arms are those select alone draws.
    X, actions, rewards = _data(40)
    policy = Policy(n_actions=3, estimator=_CountingRidge(), random_state=0)
    policy.fit(X, actions, rewards)
    twin = pickle.loads(pickle.dumps(policy))
    _CountingRidge.calls = 0
    arms, propensities = policy.select(X[:5], return_propensities=True)
    assert _CountingRidge.calls == 3  # one per arm's model (a subclass: no shortcut)
    law = policy.predict_action_proba(X[:5])
    assert_allclose(propensities, law[np.arange(5), arms])
    np.testing.assert_array_equal(arms, twin.select(X[:5]))
