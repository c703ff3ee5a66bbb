"""Policies fitted from, and scoring, Dask collections equal the in-memory ones.

Ridge statistics are compared at 1e-9 relative: the Dask fit sums per-partition
sums where numpy sums all rows in one GEMM; float64 rounding of O(1e4) terms
differs by ~1e-15 relative (measured: 6e-16), and A is inverted once either way.
"""
# SPDX-License-Identifier: BSD-3-Clause

import pickle

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.linear_model import SGDRegressor
from sklearn.tree import DecisionTreeRegressor

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")

from skbandit.policies import (  # noqa: E402
    CombLinTS,
    CombLinUCB,
    EpsilonGreedy,
    LinTS,
    LinUCB,
    LogPHE,
)

RTOL = 1e-9
N, D, K = 3001, 5, 4


@pytest.fixture(scope="module")
def logs():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(N, D))
    actions = rng.integers(K, size=N)
    rewards = X[:, 0] * actions + rng.normal(size=N)
    weights = rng.uniform(0.5, 2.0, size=N)
    return X, actions, rewards, weights


def _dask(arr, rows):
    return da.from_array(arr, chunks=(rows, *arr.shape[1:]))


def _assert_same_ridge(got, want):
    assert_allclose(got._ridge.precision, want._ridge.precision, rtol=RTOL)
    assert_allclose(got._ridge.moment, want._ridge.moment, rtol=RTOL)
    assert_allclose(got._ridge.covariance, want._ridge.covariance, rtol=RTOL, atol=0)
    assert got.n_samples_seen_ == want.n_samples_seen_
    assert_array_equal(got.action_counts_, want.action_counts_)


@pytest.mark.parametrize("cls", [LinUCB, LinTS, EpsilonGreedy])
def test_ridge_fit_sums_the_partitions_statistics(dask_client, logs, cls):
    X, actions, rewards, weights = logs
    want = cls(random_state=0).fit(X, actions, rewards, sample_weight=weights)
    got = cls(random_state=0)
    out = got.fit(
        _dask(X, 400), _dask(actions, 700), _dask(rewards, 1000), sample_weight=weights
    )
    assert out is got and got.n_actions is None and got.n_actions_ == K
    _assert_same_ridge(got, want)
    # The ordinary policy: pickles, and chooses as the in-memory one does.
    got = pickle.loads(pickle.dumps(got))
    assert_array_equal(got.select(X[:200]), want.select(X[:200]))


def test_fit_from_dataframe_columns_and_per_arm_contexts(dask_client, logs):
    X, actions, rewards, _ = logs
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)])
    frame["a"], frame["r"] = actions, rewards
    ddf = dd.from_pandas(frame, npartitions=3)
    got = LinUCB(n_actions=K).fit(ddf[[f"x{j}" for j in range(D)]], ddf["a"], ddf["r"])
    _assert_same_ridge(got, LinUCB(n_actions=K).fit(X, actions, rewards))
    per_arm = np.repeat(X[:, None, :], K, axis=1) * np.arange(1, K + 1)[:, None]
    got = LinUCB().fit(_dask(per_arm, 500), actions, rewards)
    _assert_same_ridge(got, LinUCB().fit(per_arm, actions, rewards))


@pytest.mark.parametrize("cls", [CombLinUCB, CombLinTS])
def test_slate_fit_sums_the_partitions_statistics(dask_client, logs, cls):
    X, _, _, _ = logs
    rng = np.random.default_rng(2)
    n_arms, size = 6, 2
    slates = np.argsort(rng.random((N, n_arms)), axis=1)[:, :size]
    scores = rng.normal(size=(N, size))
    scores[rng.random((N, size)) < 0.3] = np.nan  # unobserved slots
    want = cls(n_actions=n_arms, slate_size=size).fit(X, slates, scores)
    got = cls(n_actions=n_arms, slate_size=size)
    got.fit(_dask(X, 600), _dask(slates, 600), _dask(scores, 600))
    _assert_same_ridge(got, want)


def test_estimator_policy_learns_partition_after_partition(dask_client, logs):
    X, actions, rewards, _ = logs

    def policy():
        return EpsilonGreedy(estimator=SGDRegressor(random_state=0), random_state=0)

    want = policy().fit(X[:1000], actions[:1000], rewards[:1000])
    for start in (1000, 2000, 3000):  # the last partition holds one row
        stop = start + 1000
        want.partial_fit(X[start:stop], actions[start:stop], rewards[start:stop])
    got = policy().fit(_dask(X, 1000), _dask(actions, 1000), rewards)
    # The same partial_fit calls on the same rows in the same order: SGD's
    # arithmetic is identical (1e-12 only guards against a different libm).
    assert_allclose(got.predict_scores(X), want.predict_scores(X), rtol=1e-12)
    assert got.n_samples_seen_ == N


def test_unsupported_policies_are_clear_errors(dask_client, logs):
    X, actions, rewards, _ = logs
    dX = _dask(X, 1000)
    with pytest.raises(TypeError, match="has none"):
        EpsilonGreedy(estimator=DecisionTreeRegressor()).fit(dX, actions, rewards)
    with pytest.raises(TypeError, match="not a sum over rows"):
        LogPHE().fit(dX, actions, (rewards > 0).astype(float))


def test_failed_fit_leaves_the_policy_unchanged(dask_client, logs):
    X, actions, rewards, _ = logs
    policy = LinUCB(random_state=0).fit(X[:100], actions[:100], rewards[:100])
    before = pickle.dumps(policy)
    bad = rewards.copy()
    bad[2500] = np.nan
    with pytest.raises(ValueError, match="rewards"):
        policy.fit(_dask(X, 1000), actions, _dask(bad, 1000))
    assert pickle.dumps(policy) == before


def test_scoring_returns_dask_arrays_equal_to_numpy(dask_client, logs):
    X, actions, rewards, _ = logs
    policy = LinUCB(random_state=0).fit(X, actions, rewards)
    dX = _dask(X, 700)
    scores, std = policy.predict_scores(dX, return_std=True)
    assert isinstance(scores, da.Array) and isinstance(std, da.Array)
    want_scores, want_std = policy.predict_scores(X, return_std=True)
    # Row blocks of a GEMM: the same products, summed in the same order per row.
    assert_allclose(scores.compute(), want_scores, rtol=1e-12)
    assert_allclose(std.compute(), want_std, rtol=1e-12)
    proba = policy.predict_action_proba(dX)
    assert_allclose(proba.compute(), policy.predict_action_proba(X), rtol=1e-12)
    chosen = policy.select(dX)
    assert isinstance(chosen, da.Array) and chosen.dtype == np.int64
    assert_array_equal(chosen.compute(), policy.select(X))  # a deterministic policy


def test_stochastic_select_is_reproducible_per_partitioning(dask_client, logs):
    X, actions, rewards, _ = logs

    def draws(rows):
        policy = LinTS(nu=3.0, random_state=0).fit(X, actions, rewards)
        chosen, propensities = policy.select(_dask(X, rows), return_propensities=True)
        return chosen.compute(), propensities.compute()

    first, again = draws(500), draws(500)
    assert_array_equal(first[0], again[0])
    assert_array_equal(first[1], again[1])
    assert np.all((first[1] > 0) & (first[1] <= 1))
    # Another partitioning draws other noise: some arms differ (nu=3 is wide).
    assert np.any(draws(1000)[0] != first[0])


def test_scoring_needs_a_fitted_policy(dask_client, logs):
    X = logs[0]
    with pytest.raises(ValueError, match="fit it first"):
        LinUCB(n_actions=K).select(_dask(X, 1000))
    slate = CombLinUCB(n_actions=6, slate_size=2).fit(
        X[:10], np.tile([0, 1], (10, 1)), np.ones((10, 2))
    )
    with pytest.raises(TypeError, match="slate"):
        slate.select(_dask(X, 1000))
