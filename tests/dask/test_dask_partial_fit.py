"""Estimator policies fitted from Dask collections partition after partition.

The Dask fit is ``fit`` on the first partition, then ``partial_fit`` on each later
one in order, by one policy that travels to the rows. The reference here is that
sequence of calls in memory, on the same rows, with one BLAS thread as Dask's
workers run (their nanny sets ``OPENBLAS_NUM_THREADS=1``): the same arithmetic,
measured bit-identical. (With two BLAS threads here, the random-feature ridge's
Sherman-Morrison updates round differently and drift to 1.6e-9 relative over
2,500 rows.) 1e-12 relative leaves room for nothing but a different libm.
"""
# SPDX-License-Identifier: BSD-3-Clause

import pickle
import sys
import time

import joblib
import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.decomposition import PCA
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge, SGDRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler
from threadpoolctl import threadpool_limits

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
cloudpickle = pytest.importorskip("cloudpickle")

import dask  # noqa: E402

from skbandit.pipeline import make_bandit_pipeline  # noqa: E402
from skbandit.policies import (  # noqa: E402
    FALCON,
    BootstrappedTS,
    EpsilonGreedy,
    LinUCB,
    SquareCB,
)

N, D, K, ROWS = 2500, 4, 3, 600  # five partitions, the last of 100 rows
RTOL = 1e-12  # same calls on the same rows; see the module docstring

POLICIES = {
    "squarecb-default": lambda: SquareCB(random_state=0),  # standardises, RFF ridge
    "squarecb-sgd": lambda: SquareCB(
        estimator=SGDRegressor(), standardize=True, random_state=0
    ),
    "bootstrap-default": lambda: BootstrappedTS(n_models=3, random_state=0),
    "bootstrap-sgd-shared": lambda: BootstrappedTS(
        estimator=SGDRegressor(),
        n_models=2,
        bootstrap="bernoulli",
        arm_models="shared",
        random_state=0,
    ),
    "epsilon-sgd": lambda: EpsilonGreedy(estimator=SGDRegressor(), random_state=0),
}


@pytest.fixture(scope="module")
def logs():
    rng = np.random.default_rng(3)
    X = rng.normal(loc=2.0, size=(N, D))
    actions = rng.integers(K, size=N)
    rewards = np.sin(X[:, 0]) * actions + 0.1 * rng.normal(size=N)
    weights = rng.uniform(0.5, 2.0, size=N)
    mask = rng.random((N, K)) < 0.8
    mask[np.arange(N), actions] = True
    return X, actions, rewards, weights, mask


def _in_memory(policy, *arrays):
    """``fit`` on the first partition, ``partial_fit`` on each later one."""
    X, actions, rewards, weights, mask = arrays
    with threadpool_limits(1):  # as on the workers; see the module docstring
        _feed(policy, X, actions, rewards, weights, mask)
    return policy


def _feed(policy, X, actions, rewards, weights, mask):
    for start in range(0, N, ROWS):
        rows = slice(start, start + ROWS)
        learn = policy.partial_fit if start else policy.fit
        learn(
            X[rows],
            actions[rows],
            rewards[rows],
            sample_weight=weights[rows],
            action_mask=mask[rows],
        )


def _dask(arr):
    return da.from_array(arr, chunks=(ROWS, *arr.shape[1:]))


def _assert_same_policy(got, want, X):
    assert got.n_samples_seen_ == want.n_samples_seen_ == N
    assert_array_equal(got.action_counts_, want.action_counts_)
    assert_allclose(got.predict_scores(X), want.predict_scores(X), rtol=RTOL)
    moments = got._context_moments, want._context_moments
    assert (moments[0] is None) == (moments[1] is None)
    if moments[0] is not None:  # the online standardisation travelled along
        assert moments[0].count == moments[1].count
        assert_allclose(moments[0].first, moments[1].first, rtol=RTOL)
        assert_allclose(moments[0].second, moments[1].second, rtol=RTOL)
    # The random state travelled too (BootstrappedTS's bootstrap weights drew from
    # it): the next draws are the same.
    assert got._rng.bit_generator.state == want._rng.bit_generator.state


@pytest.mark.parametrize("name", list(POLICIES))
def test_partial_fit_over_the_partitions_in_order(dask_client, logs, name, tmp_path):
    X, actions, rewards, weights, mask = logs
    want = _in_memory(POLICIES[name](), *logs)
    got = POLICIES[name]()
    out = got.fit(
        _dask(X), _dask(actions), _dask(rewards), sample_weight=weights,
        action_mask=_dask(mask),
    )  # fmt: skip
    assert out is got and got.n_actions is None and got.n_actions_ == K
    _assert_same_policy(got, want, X)
    # The ordinary policy: a joblib round trip, then the same choices.
    joblib.dump(got, tmp_path / "policy.joblib")
    loaded = joblib.load(tmp_path / "policy.joblib")
    assert_array_equal(loaded.select(X[:300]), want.select(X[:300]))
    assert_allclose(
        loaded.predict_action_proba(X[:300]),
        want.predict_action_proba(X[:300]),
        rtol=RTOL,
    )


def test_without_a_cluster_the_client_learns_one_partition_at_a_time(logs):
    X, actions, rewards, weights, mask = logs
    want = _in_memory(POLICIES["squarecb-sgd"](), *logs)
    with dask.config.set(scheduler="synchronous"):
        got = POLICIES["squarecb-sgd"]().fit(
            _dask(X), actions, _dask(rewards), sample_weight=_dask(weights),
            action_mask=mask,
        )  # fmt: skip
    _assert_same_policy(got, want, X)


def test_dataframe_columns(dask_client, logs):
    X, actions, rewards, _, _ = logs
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)])
    frame["a"], frame["r"] = actions, rewards
    ddf = dd.from_pandas(frame, npartitions=4)
    got = POLICIES["epsilon-sgd"]().fit(ddf[list(frame)[:D]], ddf["a"], ddf["r"])
    want = POLICIES["epsilon-sgd"]()
    for k, part in enumerate(ddf.partitions):
        part = part.compute()
        learn = want.partial_fit if k else want.fit
        learn(part.iloc[:, :D].to_numpy(), part["a"].to_numpy(), part["r"].to_numpy())
    assert_allclose(got.predict_scores(X), want.predict_scores(X), rtol=RTOL)


# A partition is read only once the partition two before it has been learned.
class _LoggedMean(RegressorMixin, BaseEstimator):
    """The running mean of the targets; each partial_fit logs its time."""

    def __init__(self, log=None):
        self.log = log

    def partial_fit(self, X, y, sample_weight=None):
        self.total_ = getattr(self, "total_", 0.0) + float(np.sum(y))
        self.count_ = getattr(self, "count_", 0) + len(y)
        with open(self.log, "a") as f:
            f.write(f"learn {len(y)} {time.time()!r}\n")
        return self

    def fit(self, X, y, sample_weight=None):
        return self.partial_fit(X, y)

    def predict(self, X):
        return np.full(X.shape[0], self.total_ / self.count_)


def _logged_read(block, log, block_info=None):
    with open(log, "a") as f:
        f.write(f"read {block_info[0]['chunk-location'][0]} {time.time()!r}\n")
    return block


def test_one_partition_at_a_time_never_all_rows(dask_client, tmp_path):
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # for the workers
    log = str(tmp_path / "events")
    n_parts, rows = 8, 50
    rng = np.random.default_rng(0)
    X = da.from_array(rng.normal(size=(n_parts * rows, 2)), chunks=(rows, 2))
    X = X.map_blocks(_logged_read, log, dtype=float)
    policy = EpsilonGreedy(n_actions=1, estimator=_LoggedMean(log))
    policy.fit(X, np.zeros(n_parts * rows, dtype=int), np.ones(n_parts * rows))
    events = [line.split() for line in open(log).read().splitlines()]
    reads = {int(k): float(t) for kind, k, t in events if kind == "read"}
    learned = [float(t) for kind, _, t in events if kind == "learn"]
    assert sorted(reads) == list(range(n_parts)) and len(learned) == n_parts
    for k in range(n_parts - 2):  # step k + 2 is submitted once step k is done
        assert reads[k + 2] > learned[k], (k, reads, learned)


def test_policies_that_refit_on_their_history_are_clear_errors(dask_client, logs):
    X, actions, rewards, _, _ = logs
    dX = _dask(X)
    with pytest.raises(TypeError, match="FALCON's oracle is offline") as info:
        FALCON(estimator=SGDRegressor()).fit(dX, actions, rewards)
    assert "SquareCB" in str(info.value)  # says what to do instead
    with pytest.raises(TypeError, match="Ridge has none.*gathered"):
        SquareCB(estimator=Ridge()).fit(dX, actions, rewards)
    with pytest.raises(TypeError, match="each bootstrap replica"):
        BootstrappedTS(estimator=Ridge()).fit(dX, actions, rewards)
    pipeline = make_pipeline(StandardScaler(), SGDRegressor())
    with pytest.raises(TypeError, match="standardize=True"):
        EpsilonGreedy(estimator=pipeline).fit(dX, actions, rewards)


def test_a_pipeline_fits_and_scores_on_dask(dask_client, logs):
    X, actions, rewards, weights, _ = logs
    dX = _dask(X)

    def pipeline():
        return make_bandit_pipeline(StandardScaler(), LinUCB(random_state=0))

    want = pipeline().fit(X, actions, rewards, linucb__sample_weight=weights)
    got = pipeline()
    out = got.fit(dX, actions, _dask(rewards), linucb__sample_weight=weights)
    assert out is got
    scaler, reference = got.steps[0][1], want.steps[0][1]
    # StandardScaler's running moments over the partitions against its fit on all
    # rows: the same mean and variance to rounding (sums in another order).
    assert scaler.n_samples_seen_ == N
    assert_allclose(scaler.mean_, reference.mean_, rtol=1e-12)
    assert_allclose(scaler.scale_, reference.scale_, rtol=1e-12)
    # The policy's ridge statistics of those rows (the summed-statistics path's
    # tolerance, tests/dask/test_dask_fit.py).
    ridge, ridge_want = got.steps[1][1]._ridge, want.steps[1][1]._ridge
    assert_allclose(ridge.precision, ridge_want.precision, rtol=1e-9)
    assert_allclose(ridge.moment, ridge_want.moment, rtol=1e-9)
    # Scoring on Dask: each partition through the fitted scaler, then the policy.
    proba = got.predict_action_proba(dX)
    assert isinstance(proba, da.Array)
    assert_allclose(proba.compute(), got.predict_action_proba(X), rtol=1e-12)
    scores = got.predict_scores(dX)
    assert_allclose(scores.compute(), got.predict_scores(X), rtol=1e-12)
    chosen = got.select(dX)  # LinUCB's argmax: no draws
    assert isinstance(chosen, da.Array)
    assert_array_equal(chosen.compute(), got.select(X))


def test_pipeline_steps_without_a_dask_form_are_clear_errors(dask_client, logs):
    X, actions, rewards, _, _ = logs
    pipe = make_bandit_pipeline(StandardScaler(), LinUCB())
    with pytest.raises(TypeError, match="partial_fit does not take Dask"):
        pipe.partial_fit(_dask(X), actions, rewards)
    with pytest.raises(NotFittedError, match="fitted transformers only"):
        pipe.predict_scores(_dask(X))
    pipe = make_bandit_pipeline(PCA(n_components=2), LinUCB())
    with pytest.raises(TypeError, match="'pca'.*no partial_fit"):
        pipe.fit(_dask(X), actions, rewards)
    # A policy that fails on Dask leaves the fitted pipeline as it was.
    pipe = make_bandit_pipeline(StandardScaler(), FALCON()).fit(X, actions, rewards)
    before = pickle.dumps(pipe)
    with pytest.raises(TypeError, match="FALCON"):
        pipe.fit(_dask(X), actions, rewards)
    assert pickle.dumps(pipe) == before


def test_a_pipeline_with_polynomial_features_fits_as_in_memory(dask_client, logs):
    """PolynomialFeatures learns the rows' shape alone: fitted on the first rows
    of the first non-empty partition (here the second: the first is empty)."""
    X, actions, rewards, _, _ = logs
    dX = da.concatenate([da.zeros((0, D), chunks=(0, D)), _dask(X)])

    def pipeline():
        return make_bandit_pipeline(
            StandardScaler(), PolynomialFeatures(2), LinUCB(random_state=0)
        )

    want = pipeline().fit(X, actions, rewards)
    got = pipeline().fit(dX, actions, rewards)
    poly, poly_want = got.steps[1][1], want.steps[1][1]
    assert_array_equal(poly.powers_, poly_want.powers_)
    # The scaler's running moments (rounding) then each row's products: the
    # summed-statistics path's tolerance (tests/dask/test_dask_fit.py).
    ridge, ridge_want = got.steps[2][1]._ridge, want.steps[2][1]._ridge
    # 15 polynomial terms of 4 features (1, x, x x) and the policy's intercept
    assert ridge.moment.shape == ridge_want.moment.shape == (K, 16)
    assert_allclose(ridge.precision, ridge_want.precision, rtol=1e-9)
    assert_allclose(ridge.moment, ridge_want.moment, rtol=1e-9)
    # Scores of order one from those statistics; some are near zero, hence atol.
    scores = got.predict_scores(dX).compute()
    assert_allclose(scores, want.predict_scores(X), rtol=1e-9, atol=1e-9)


def test_a_pipeline_refuses_a_policy_before_any_pass(dask_client, logs):
    from distributed import get_task_stream

    X, actions, rewards, _, _ = logs
    for policy in (FALCON(), LinUCB(alpha=-1.0)):  # its Dask path; its parameters
        pipe = make_bandit_pipeline(StandardScaler(), policy)
        with get_task_stream(dask_client) as stream:
            with pytest.raises((TypeError, ValueError), match="FALCON|alpha"):
                pipe.fit(_dask(X), actions, rewards)
        assert stream.data == []  # no partition was read: the scaler never learned
        assert not hasattr(pipe.steps[0][1], "n_samples_seen_")


def test_a_failed_fit_leaves_the_policy_unchanged(dask_client, logs):
    X, actions, rewards, _, _ = logs
    policy = POLICIES["squarecb-sgd"]().fit(X[:50], actions[:50], rewards[:50])
    before = pickle.dumps(policy)
    bad = rewards.copy()
    bad[3 * ROWS + 7] = np.nan
    with pytest.raises(ValueError, match="In partition 3.*rewards"):
        policy.fit(_dask(X), actions, _dask(bad))
    assert pickle.dumps(policy) == before


def _slow_read(block):
    time.sleep(0.05)
    return block


def test_killed_worker_leaves_a_correct_result(computed_while_a_worker_dies, logs):
    """A worker killed mid-chain: Dask recomputes the lost steps from their lineage
    (the first policy is in the graph), so the policy is the in-memory one."""
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # for the workers
    X, actions, rewards, weights, mask = logs
    rows = 100  # 25 partitions, each read in 0.05 s at least
    want = POLICIES["epsilon-sgd"]()
    with threadpool_limits(1):
        for start in range(0, N, rows):
            part = slice(start, start + rows)
            learn = want.partial_fit if start else want.fit
            learn(X[part], actions[part], rewards[part])
    slow = da.from_array(X, chunks=(rows, D)).map_blocks(_slow_read, dtype=float)
    got, _ = computed_while_a_worker_dies(
        lambda: POLICIES["epsilon-sgd"]().fit(slow, actions, rewards),
        polls=500,
        settle=0.3,  # a few partitions in: the victim holds some steps
    )
    assert got.n_samples_seen_ == N
    assert_allclose(got.predict_scores(X), want.predict_scores(X), rtol=RTOL)
