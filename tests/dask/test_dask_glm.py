"""The GLM policies fitted from Dask collections by distributed Newton equal the
in-memory fit; their history stays on the workers, so partial_fit refuses.

Coefficients and ``H^{-1}`` are compared at 1e-9 relative. Both fits run the same
Newton iteration from zero, with the same steps, backtracking and stopping rule;
they differ only in the order the gradient and Hessian sums are added (per
partition, then a tree; numpy over groups of rows). That rounding (~1e-16 relative
per sum) moves the iterates by at most cond(H) times as much: measured 1.3e-16 on
the coefficients and 4.3e-15 on ``H^{-1}`` here (cond(H) ~ 10). A real error (a
row dropped, a partition counted twice, one Newton step too few) moves them by
1e-4 or more.
"""
# SPDX-License-Identifier: BSD-3-Clause

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

da = pytest.importorskip("dask.array")

from skbandit.exceptions import NumericalError  # noqa: E402
from skbandit.policies import GLMUCB, UCBGLM, LogPHE, LogTS  # noqa: E402

RTOL = 1e-9
N, D, K = 4001, 4, 3


@pytest.fixture(scope="module")
def logs():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N, D))
    actions = rng.integers(K, size=N)
    theta = rng.normal(size=(K, D))
    logits = np.einsum("nd,nd->n", X, theta[actions])
    rewards = (rng.random(N) < 1 / (1 + np.exp(-logits))).astype(float)
    rewards[:50] = 0.3  # probabilities as soft targets, as in memory
    weights = rng.uniform(0.0, 2.0, size=N)
    weights[100:110] = 0.0  # rows that carry no weight
    return X, actions, rewards, weights


def _dask(arr, rows):
    return da.from_array(arr, chunks=(rows, *arr.shape[1:]))


def _assert_same_map(got, want):
    assert_allclose(got.coef_, want.coef_, rtol=RTOL, atol=1e-12)
    assert_allclose(got.intercept_, want.intercept_, rtol=RTOL, atol=1e-12)
    assert_allclose(got._hess_inv, want._hess_inv, rtol=RTOL, atol=1e-15)
    assert got.n_samples_seen_ == want.n_samples_seen_
    assert_array_equal(got.action_counts_, want.action_counts_)
    # 1e-12: a bincount of weights per partition, then summed (float rounding)
    assert_allclose(got._weight_seen, want._weight_seen, rtol=1e-12)
    assert got._max_norm == want._max_norm  # a max: exact


@pytest.mark.parametrize("raw", [False, True])
@pytest.mark.parametrize("cls", [GLMUCB, UCBGLM, LogTS])
def test_newton_fit_equals_the_in_memory_fit(dask_client, logs, cls, raw):
    X, actions, rewards, weights = logs
    if raw:  # features of scales 1 to 1e3 and offsets: the online standardisation
        X = X * 10.0 ** np.arange(D) + 100.0
    want = cls(random_state=0).fit(X, actions, rewards, sample_weight=weights)
    got = cls(random_state=0)
    out = got.fit(
        _dask(X, 700), _dask(actions, 1100), rewards, sample_weight=_dask(weights, 900)
    )
    assert out is got and got.n_actions_ == K and got.n_groups_ == 0
    _assert_same_map(got, want)
    if got._gram is not None:  # GLM-UCB's V = alpha I + sum w x x^T
        assert_allclose(got._gram.covariance, want._gram.covariance, rtol=RTOL)
    # each partition scaled from the moments of those before it, as in memory;
    # 1e-12 of a deviation: the partitions' sums are moved and added in another order
    moments, memory = got._context_moments, want._context_moments
    assert moments.count == memory.count == N
    assert np.all(np.abs(moments.mean_ - memory.mean_) <= 1e-12 * memory.scale_)
    assert_allclose(moments.scale_, memory.scale_, rtol=1e-12)
    got = pickle.loads(pickle.dumps(got))
    # The same state and seed: the same arms (LogTS's posterior draws included).
    assert_array_equal(got.select(X[:300]), want.select(X[:300]))


def test_newton_fit_with_per_arm_contexts(dask_client, logs):
    X, actions, rewards, _ = logs
    per_arm = np.repeat(X[:, None, :], K, axis=1) * np.array([1.0, -1.0, 0.5])[:, None]
    want = LogTS(fit_intercept=False).fit(per_arm, actions, rewards)
    got = LogTS(fit_intercept=False).fit(_dask(per_arm, 1500), actions, rewards)
    assert got._coef.shape == (1, D)  # one block shared by the arms
    _assert_same_map(got, want)


def test_partial_fit_after_a_dask_fit_refuses_and_keeps_the_policy(dask_client, logs):
    X, actions, rewards, _ = logs
    policy = GLMUCB().fit(_dask(X, 2000), actions, rewards)
    before = pickle.dumps(policy)
    with pytest.raises(ValueError, match="holds no history of rows"):
        policy.partial_fit(X[:5], actions[:5], rewards[:5])
    assert pickle.dumps(policy) == before
    # A new fit (in memory here) brings the history back.
    policy.fit(X[:100], actions[:100], rewards[:100])
    policy.partial_fit(X[100:105], actions[100:105], rewards[100:105])
    assert policy.n_groups_ == 105


def test_newton_fit_errors_leave_the_policy_unchanged(dask_client, logs):
    X, actions, rewards, _ = logs
    policy = LogTS(random_state=0).fit(X[:50], actions[:50], rewards[:50])
    before = pickle.dumps(policy)
    bad = rewards.copy()
    bad[3500] = 2.0  # outside [0, 1]: the in-memory message, from its partition
    with pytest.raises(ValueError, match="Bernoulli"):
        policy.fit(_dask(X, 1000), actions, _dask(bad, 1000))
    with pytest.raises(NumericalError, match="did not converge"):
        policy.set_params(max_iter=1).fit(_dask(X, 1000), actions, rewards)
    policy.set_params(max_iter=100)
    assert pickle.dumps(policy) == before


def test_perturbed_history_is_refused(dask_client, logs):
    X, actions, rewards, _ = logs
    with pytest.raises(TypeError, match="not a sum over rows"):
        LogPHE().fit(_dask(X, 1000), actions, rewards)
