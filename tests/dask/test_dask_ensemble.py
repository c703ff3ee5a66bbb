"""LinES fitted from Dask collections: the in-memory ridge statistics, and members
perturbed by the documented per-partition streams.

``A``, ``b`` and the perturbed moments are compared at 1e-9 relative: per-partition
GEMMs summed in a tree against one pass in memory, float64 rounding of a few
thousand terms (measured 4e-16 relative on ``A`` and ``b``).
"""
# SPDX-License-Identifier: BSD-3-Clause

import pickle

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")

from skbandit.policies import GLMES, LinES  # noqa: E402
from skbandit.policies._core._newton import fit_glm_newton  # noqa: E402
from skbandit.utils._standardize import ContextMoments  # noqa: E402

RTOL = 1e-9
N, D, K = 3001, 4, 3


@pytest.fixture(scope="module")
def logs():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(N, D))
    actions = rng.integers(K, size=N)
    rewards = X[:, 0] * actions + rng.normal(size=N)
    weights = rng.uniform(0.0, 2.0, size=N)
    return X, actions, rewards, weights


def _design(policy, X):
    return np.hstack([X, np.ones((X.shape[0], 1))]) if policy.fit_intercept else X


def _row_moments(policy, X, actions, z):
    """``sum_l x_l z_l^T`` per block, (n_models, n_blocks, d), by a plain loop."""
    rows = _design(policy, X)
    out = np.zeros((z.shape[1], K, rows.shape[1]))
    for k in range(K):
        out[:, k] = (rows[actions == k].T @ z[actions == k]).T
    return out


@pytest.mark.parametrize(
    "params",
    [{}, {"horizon": "anytime", "first_phase": 50, "fit_intercept": True}],
)
def test_lin_es_statistics_and_documented_perturbations(dask_client, logs, params):
    X, actions, rewards, weights = logs
    policy = LinES(random_state=0, **params)
    want = policy.fit(X, actions, rewards, sample_weight=weights)
    chunks = 800
    got = LinES(random_state=0, **params).fit(  # a fresh one
        da.from_array(X, chunks=(chunks, D)), actions, rewards, sample_weight=weights
    )
    assert (got.phase_, got.n_models_, got.perturbation_scale_) == (
        want.phase_,
        want.n_models_,
        want.perturbation_scale_,
    )
    assert_allclose(got._ridge.precision, want._ridge.precision, rtol=RTOL)
    assert_allclose(got._ridge.moment, want._ridge.moment, rtol=RTOL)
    assert got.n_samples_seen_ == N
    assert_array_equal(got.action_counts_, want.action_counts_)
    # The members' perturbed moments: the in-memory prior draw, plus every
    # partition's rows against its stream default_rng([noise_seed, phase, k]).
    start = want.phase_start_
    kept = slice(start, N)
    sw = np.sqrt(weights[kept])[:, None]
    prior = want._noise_moment - _row_moments(
        want, X[kept], actions[kept], sw * want.perturbations_
    )
    expected = prior.copy()
    for k, first in enumerate(range(0, N, chunks)):
        rows = slice(max(first, start), min(first + chunks, N))
        n_rows = rows.stop - rows.start
        if n_rows <= 0:
            continue
        stream = np.random.default_rng([got._noise_seed, got.phase_, k])
        z = got.perturbation_scale_ * stream.standard_normal((n_rows, got.n_models_))
        expected += _row_moments(
            got, X[rows], actions[rows], np.sqrt(weights[rows])[:, None] * z
        )
    assert_allclose(got._noise_moment, expected, rtol=RTOL, atol=1e-12)
    # The members differ from the in-memory ones (other draws), by perturbations.
    assert not np.allclose(got._coef, want._coef)


def test_lin_es_is_reproducible_per_seed_and_partitioning(dask_client, logs):
    X, actions, rewards, _ = logs

    def fit(rows, seed=0):
        return LinES(random_state=seed).fit(
            da.from_array(X, chunks=(rows, D)), actions, rewards
        )

    first = fit(1000)
    assert_array_equal(fit(1000)._coef, first._coef)
    assert not np.allclose(fit(600)._coef, first._coef)
    assert not np.allclose(fit(1000, seed=1)._coef, first._coef)


def test_lin_es_from_dataframe_columns_then_partial_fit(dask_client, logs):
    X, actions, rewards, _ = logs
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)])
    frame["a"], frame["r"] = actions, rewards
    ddf = dd.from_pandas(frame, npartitions=3)  # partitions of unknown size
    params = {"horizon": "anytime", "first_phase": 40, "random_state": 0}
    got = LinES(**params).fit(ddf[[f"x{j}" for j in range(D)]], ddf["a"], ddf["r"])
    want = LinES(**params).fit(X, actions, rewards)
    assert got.phase_ == want.phase_ and got.phase_start_ == want.phase_start_ > 0
    assert_allclose(got._ridge.precision, want._ridge.precision, rtol=RTOL)
    with pytest.raises(AttributeError, match="left on the workers"):
        got.perturbations_  # noqa: B018
    # partial_fit goes on from the summed state, with the phase's own stream.
    got.partial_fit(X[:20], actions[:20], rewards[:20])
    want.partial_fit(X[:20], actions[:20], rewards[:20])
    assert got.n_samples_seen_ == N + 20
    assert_allclose(got._ridge.precision, want._ridge.precision, rtol=RTOL)


@pytest.mark.parametrize(
    "params",
    [{}, {"horizon": "anytime", "first_phase": 50}, {"standardize": False}],
)
def test_glm_es_members_solve_their_documented_problems(dask_client, logs, params):
    X, actions, _, weights = logs
    rewards = (X[:, 1] > 0).astype(float)
    X = X * [1e3, 1.0, 1e-2, 5.0] + [4e3, 0.0, 1.0, -2.0]  # raw features
    want = GLMES(random_state=0, **params).fit(
        X, actions, rewards, sample_weight=weights
    )
    chunks = 700
    got = GLMES(random_state=0, **params).fit(
        da.from_array(X, chunks=(chunks, D)), actions, rewards, sample_weight=weights
    )
    assert (got.phase_, got.n_models_) == (want.phase_, want.n_models_)
    assert got._coef.shape == want._coef.shape
    assert_array_equal(got.action_counts_, want.action_counts_)
    if params.get("standardize", True):
        # Each partition's rows are scaled from the earlier partitions' moments,
        # prequentially, as in memory: the rows the members solve on. 1e-12: the
        # partitions' sums are moved to the first row's shift and added in
        # another order (a few thousand terms of size 1e3 in float64).
        moments = got._context_moments
        assert moments.count == want._context_moments.count == N
        assert_allclose(moments.mean_, want._context_moments.mean_, rtol=1e-12)
        assert_allclose(moments.scale_, want._context_moments.scale_, rtol=1e-12)
        # kept to GLMES's 9 decimals, as in memory
        X = np.round(ContextMoments.empty(D).learn(X, np.float64)[0], 9)
    else:
        assert got._context_moments is None
    # The in-memory solver on the phase's rows, perturbed by the documented
    # streams default_rng([noise_seed, phase, k, 1]): the same members. 1e-9:
    # the Newton sums are added in another order (measured 1.3e-16 absolute).
    start, m = got.phase_start_, got.n_models_
    draws = []
    for k, first in enumerate(range(0, N, chunks)):
        n_rows = min(first + chunks, N) - max(first, start)
        if n_rows > 0:
            stream = np.random.default_rng([got._noise_seed, got.phase_, k, 1])
            draws.append(got.perturbation_scale_ * stream.standard_normal((n_rows, m)))
    kept = slice(start, N)
    w = weights[kept]
    target = (w * rewards[kept])[None] + (np.sqrt(w)[:, None] * np.vstack(draws)).T
    coef, _ = fit_glm_newton(
        _design(got, X[kept]), target, w, got.alpha, link=got._link,
        blocks=actions[kept], n_blocks=K, tol=got.tol, max_iter=got.max_iter,
    )  # fmt: skip
    assert_allclose(got._coef, coef, rtol=RTOL, atol=1e-12)
    assert not np.allclose(got._coef, want._coef)  # other draws


def test_glm_es_partial_fit_refuses_and_gd_is_an_error(dask_client, logs):
    X, actions, _, _ = logs
    rewards = (X[:, 1] > 0).astype(float)
    policy = GLMES(random_state=0).fit(
        da.from_array(X, chunks=(1000, D)), actions, rewards
    )
    before = pickle.dumps(policy)
    with pytest.raises(ValueError, match="holds no history of rows"):
        policy.partial_fit(X[:5], actions[:5], rewards[:5])
    assert pickle.dumps(policy) == before
    with pytest.raises(TypeError, match="solver='newton'"):
        GLMES(solver="gd").fit(da.from_array(X, chunks=(1000, D)), actions, rewards)
