"""Exact maths of the reductions: the weights and targets each learner hands to its
scikit-learn model, against hand computations."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.dummy import DummyRegressor
from sklearn.linear_model import LinearRegression, Ridge

from skbandit.offpolicy import DMLearner, DRLearner, IPWLearner
from skbandit.offpolicy._reductions import classification_rows, cost_sensitive_targets

# 5 rounds, 3 arms, contexts that tell the rounds apart.
X = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [2.0, 0.5], [0.5, 2.0]])
ACTIONS = np.array([0, 2, 0, 1, 2])
REWARDS = np.array([1.0, 0.5, 0.0, 2.0, 1.0])
PROPENSITIES = np.array([0.5, 0.25, 0.8, 0.1, 0.5])


class RecordingClassifier(ClassifierMixin, BaseEstimator):
    """Keeps what ``fit`` received (a class attribute: fit sees a clone)."""

    seen = []

    def fit(self, X, y, sample_weight=None):
        RecordingClassifier.seen.append((X.copy(), y.copy(), sample_weight.copy()))
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        return np.full((X.shape[0], self.classes_.size), 1.0 / self.classes_.size)

    def predict(self, X):
        return np.full(X.shape[0], self.classes_[0])


class RecordingRegressor(RegressorMixin, BaseEstimator):
    seen = []

    def fit(self, X, y, sample_weight=None):
        RecordingRegressor.seen.append((X.copy(), y.copy(), sample_weight))
        return self

    def predict(self, X):
        return np.zeros(X.shape[0])


@pytest.fixture(autouse=True)
def _forget():
    RecordingClassifier.seen.clear()
    RecordingRegressor.seen.clear()


def test_ipw_classification_weights_by_hand():
    # Non-negative rewards: one row per round with a positive reward, its label the
    # logged arm, its weight r / p (Open Bandit Pipeline's IPWLearner); the learner
    # passes them rescaled to mean one (same minimiser, the scale is C's business).
    IPWLearner(RecordingClassifier()).fit(X, ACTIONS, REWARDS, PROPENSITIES)
    ((Xs, labels, weights),) = RecordingClassifier.seen
    raw = np.array([1.0 / 0.5, 0.5 / 0.25, 2.0 / 0.1, 1.0 / 0.5])  # round 2 has r=0
    assert_array_equal(labels, [0, 2, 1, 2])
    assert_array_equal(Xs, X[[0, 1, 3, 4]])
    # Both sides are a few float operations on the same numbers: 1e-14.
    assert_allclose(weights, raw / raw.mean(), rtol=1e-14)


def test_ipw_classification_with_negative_rewards_by_hand():
    # G[i] = (0, .., r_i / p_i at a_i, ..); with r_i < 0 the logged arm is the worst:
    # each other arm becomes a row of weight -r_i / p_i.
    rewards = np.array([-1.0, 0.5, 0.0, 2.0, 1.0])
    IPWLearner(RecordingClassifier(), clip=5.0).fit(X, ACTIONS, rewards, PROPENSITIES)
    ((Xs, labels, weights),) = RecordingClassifier.seen
    # round 0: arms 1 and 2 with weight 1/0.5 = 2; round 3: 1/0.1 clipped at 5, * 2.
    expected = {(0, 1): 2.0, (0, 2): 2.0, (1, 2): 0.5 / 0.25, (3, 1): 10.0,
                (4, 2): 1.0 / 0.5}  # fmt: skip
    rows = [int(np.flatnonzero((X == x).all(axis=1))[0]) for x in Xs]
    got = dict(zip(zip(rows, labels.tolist(), strict=True), weights, strict=True))
    raw = np.array(list(expected.values()))
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value / raw.mean(), rel=1e-14)


def test_classification_rows_make_the_error_minus_the_value():
    # For every deterministic policy, weighted 0-1 error + sum_i G[i, pi(x_i)] is
    # the same constant: minimising the error maximises the estimated value.
    rng = np.random.default_rng(0)
    G = rng.normal(size=(6, 3))
    rows, labels, weights = classification_rows(G)
    totals = []
    for policy in np.ndindex(*(3,) * 6):
        policy = np.array(policy)
        error = np.sum(weights * (policy[rows] != labels))
        totals.append(error + G[np.arange(6), policy].sum())
    # 729 sums of a dozen terms of order 1: rounding at 1e-13.
    assert np.ptp(totals) < 1e-12


def test_cost_sensitive_targets_by_hand():
    w = 1.0 / PROPENSITIES
    ips = cost_sensitive_targets(ACTIONS, REWARDS, w, 3)
    expected = np.zeros((5, 3))
    expected[np.arange(5), ACTIONS] = REWARDS / PROPENSITIES
    assert_allclose(ips, expected, rtol=1e-15)
    q = np.arange(15.0).reshape(5, 3) / 10
    dr = cost_sensitive_targets(ACTIONS, REWARDS, w, 3, q)
    expected = q.copy()
    logged = q[np.arange(5), ACTIONS]
    expected[np.arange(5), ACTIONS] = logged + (REWARDS - logged) / PROPENSITIES
    assert_allclose(dr, expected, rtol=1e-15)
    # Self-normalised: arm 0's weights (2, 1.25) rescaled to sum to n = 5.
    sn = cost_sensitive_targets(ACTIONS, REWARDS, w, 3, self_normalize=True)
    assert sn[0, 0] == pytest.approx(1.0 * 2.0 * 5 / 3.25, rel=1e-15)
    assert sn[3, 1] == pytest.approx(2.0 * 5.0, rel=1e-15)  # arm 1: one round


def test_dr_regression_targets_by_hand():
    # Reward model: each arm's mean logged reward (DummyRegressor), fitted on all
    # rows (cv=None); clip 4 caps 1/0.1; each arm's regressor sees every round.
    DRLearner(
        RecordingRegressor(), reward_model=DummyRegressor(), cv=None, clip=4.0,
        reduction="regression", select_by_value=False,
    ).fit(X, ACTIONS, REWARDS, PROPENSITIES)  # fmt: skip
    q = np.array([0.5, 2.0, 0.75])  # means of arms 0, 1, 2
    u = np.minimum(1.0 / PROPENSITIES, 4.0)
    assert len(RecordingRegressor.seen) == 3
    for k, (Xs, target, weight) in enumerate(RecordingRegressor.seen):
        expected = q[k] + (ACTIONS == k) * u * (REWARDS - q[k])
        assert_array_equal(Xs, X)
        assert weight is None
        assert_allclose(target, expected, rtol=1e-15)


def test_ipw_regression_targets_by_hand():
    IPWLearner(RecordingRegressor(), reduction="regression").fit(
        X, ACTIONS, REWARDS, PROPENSITIES
    )
    for k, (_, target, _) in enumerate(RecordingRegressor.seen):
        assert_allclose(target, (ACTIONS == k) * REWARDS / PROPENSITIES, rtol=1e-15)


def test_sample_weight_multiplies_the_importance_weights():
    sw = np.array([1.0, 2.0, 1.0, 0.5, 3.0])
    IPWLearner(RecordingRegressor(), reduction="regression").fit(
        X, ACTIONS, REWARDS, PROPENSITIES, sample_weight=sw
    )
    for k, (_, target, _) in enumerate(RecordingRegressor.seen):
        expected = (ACTIONS == k) * sw * REWARDS / PROPENSITIES
        assert_allclose(target, expected, rtol=1e-15)


def test_dm_equals_per_arm_regression():
    rng = np.random.default_rng(3)
    Xr = rng.normal(size=(90, 4))
    actions = rng.integers(3, size=90)
    rewards = rng.normal(size=90)
    scores = DMLearner(Ridge(alpha=0.5)).fit(Xr, actions, rewards).predict_scores(Xr)
    for k in range(3):
        own = Ridge(alpha=0.5).fit(Xr[actions == k], rewards[actions == k])
        # The same solver on the same rows: equal to rounding.
        assert_allclose(scores[:, k], own.predict(Xr), rtol=1e-12, atol=1e-12)


def test_dm_shared_model_reads_the_action_as_a_feature():
    rng = np.random.default_rng(4)
    Xr = rng.normal(size=(60, 2))
    actions = rng.integers(3, size=60)
    rewards = rng.normal(size=60)
    learner = DMLearner(LinearRegression(), arm_models="shared")
    scores = learner.fit(Xr, actions, rewards).predict_scores(Xr)
    design = np.hstack([Xr, np.eye(3)[actions]])
    own = LinearRegression().fit(design, rewards)
    for k in range(3):
        one_hot = np.zeros((60, 3))
        one_hot[:, k] = 1
        # Least squares on a rank-deficient design (intercept + all one-hots):
        # predictions agree to rounding, coefficients need not.
        assert_allclose(scores[:, k], own.predict(np.hstack([Xr, one_hot])),
                        rtol=1e-10, atol=1e-10)  # fmt: skip


def test_dm_importance_weighted_passes_clipped_weights():
    DMLearner(RecordingRegressor(), importance_weighted=True, clip=4.0).fit(
        X, ACTIONS, REWARDS, PROPENSITIES
    )
    # Arm 1 has one round: a constant, never fitted; arms 0 and 2 have two each.
    (_, r0, w0), (_, r2, w2) = RecordingRegressor.seen
    assert_array_equal(r0, [1.0, 0.0])
    assert_allclose(w0, [2.0, 1.25], rtol=1e-15)
    assert_array_equal(r2, [0.5, 1.0])
    assert_allclose(w2, [4.0, 2.0], rtol=1e-15)  # 1/0.25 = 4 at the clip
