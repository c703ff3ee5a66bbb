"""Off-policy learners fitted from Dask collections equal the in-memory ones.

Their Ridge models are solved from per-partition weighted means and centred
scatters, merged pairwise (Chan, Golub and LeVeque), where scikit-learn centres all
rows at once: the same normal equations, summed in another order. Coefficients and
scores are compared at 1e-9 relative. Measured on these logs (features of mean 5,
so that uncentred sums would cancel): at most 2.5e-15 relative per arm, and 7.8e-13
for the shared model, whose one-hot columns sum to the intercept's (an
ill-conditioned system that alpha=1 alone regularises).
"""
# SPDX-License-Identifier: BSD-3-Clause

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.linear_model import Ridge
from sklearn.tree import DecisionTreeRegressor

da = pytest.importorskip("dask.array")

from skbandit.offpolicy import DMLearner, DRLearner, IPWLearner  # noqa: E402

RTOL = 1e-9
N, D, K = 3001, 4, 4


@pytest.fixture(scope="module")
def logs():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N, D)) + 5.0
    actions = rng.integers(K - 1, size=N)
    actions[17] = K - 1  # an arm logged once: DM's constant fallback
    propensities = rng.uniform(0.2, 0.5, size=N)
    rewards = X[:, 0] * actions + rng.normal(size=N)
    weights = rng.uniform(0.5, 2.0, size=N)
    return X, actions, rewards, propensities, weights


def _dask(arr, rows):
    return da.from_array(arr, chunks=(rows, *arr.shape[1:]))


#: DR's distributed form: no cross-fitting (the regression reduction, for Ridge).
DR_PLAIN = {"reduction": "regression", "cv": None, "select_by_value": False}

LEARNERS = [
    (DMLearner, {}, "reward_model_"),
    (
        DMLearner,
        {"arm_models": "shared", "importance_weighted": True, "clip": 4.0},
        "reward_model_",
    ),
    (IPWLearner, {"reduction": "regression", "self_normalize": True}, "policy_model_"),
    (DRLearner, {**DR_PLAIN, "clip": 3.0, "random_state": 0}, "policy_model_"),
    (DRLearner, {**DR_PLAIN, "self_normalize": True}, "policy_model_"),
    # The default selection: the IPW targets' policy too, and the higher DR value.
    (DRLearner, {**DR_PLAIN, "select_by_value": True}, "policy_model_"),
]


@pytest.mark.parametrize(("cls", "params", "model"), LEARNERS)
def test_learner_fit_equals_the_in_memory_fit(dask_client, logs, cls, params, model):
    X, actions, rewards, propensities, weights = logs
    want = cls(n_actions=K, **params).fit(
        X, actions, rewards, propensities, sample_weight=weights
    )
    got = cls(n_actions=K, **params)
    out = got.fit(
        _dask(X, 700),
        _dask(actions, 1100),
        rewards,
        _dask(propensities, 900),
        sample_weight=weights,
    )
    assert out is got and got.n_samples_seen_ == N
    assert_array_equal(got.action_counts_, want.action_counts_)
    if cls is DRLearner:
        assert got.selected_targets_ == want.selected_targets_
        assert got.dr_values_.keys() == want.dr_values_.keys()
        for name, value in want.dr_values_.items():  # sums in another order
            assert got.dr_values_[name] == pytest.approx(value, rel=RTOL)
    pairs = zip(getattr(got, model).models_, getattr(want, model).models_, strict=True)
    for fitted, reference in pairs:
        assert type(fitted) is type(reference)
        if isinstance(reference, Ridge):
            # atol: DR's arm logged once has constant targets (its q is its one
            # reward), so coefficients that are 0 in exact arithmetic (~1e-30).
            assert_allclose(fitted.coef_, reference.coef_, rtol=RTOL, atol=1e-12)
            assert_allclose(fitted.intercept_, reference.intercept_, rtol=RTOL)
        else:  # the fallback constant: a mean of the same rewards
            assert_allclose(fitted.value, reference.value, rtol=1e-12)
    got = pickle.loads(pickle.dumps(got))
    assert_allclose(got.predict_scores(X), want.predict_scores(X), rtol=RTOL)
    proba = got.predict_action_proba(_dask(X, 1000))  # scoring on Dask too
    assert isinstance(proba, da.Array)
    assert_allclose(proba.compute(), want.predict_action_proba(X), rtol=RTOL)


@pytest.mark.parametrize(
    ("learner", "error", "match"),
    [
        # The default classifier (a scaled LogisticRegression pipeline) has no
        # partial_fit: the error names one that has.
        (IPWLearner(), TypeError, "SGDClassifier"),
        (
            DRLearner(reduction="regression", select_by_value=False),
            ValueError,
            "cv=None",
        ),
        (DMLearner(DecisionTreeRegressor()), TypeError, "partial_fit.*is neither"),
        (DMLearner(Ridge(solver="sag")), TypeError, "plain Ridge"),
    ],
)
def test_learners_without_a_distributed_form_are_clear_errors(
    dask_client, logs, learner, error, match
):
    X, actions, rewards, propensities, _ = logs
    with pytest.raises(error, match=match):
        learner.fit(_dask(X, 1000), actions, rewards, propensities)


def test_missing_propensities_and_bad_rows_leave_the_learner_unchanged(
    dask_client, logs
):
    X, actions, rewards, propensities, _ = logs
    learner = IPWLearner(reduction="regression").fit(
        X[:100], actions[:100], rewards[:100], propensities[:100]
    )
    before = pickle.dumps(learner)
    with pytest.raises(ValueError, match="needs the logged propensities"):
        learner.fit(_dask(X, 1000), actions, rewards)
    bad = propensities.copy()
    bad[2500] = 0.0  # the in-memory message, from its partition
    with pytest.raises(ValueError, match="propensities"):
        learner.fit(_dask(X, 1000), actions, rewards, _dask(bad, 1000))
    assert pickle.dumps(learner) == before
