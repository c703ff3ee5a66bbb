"""The reward models' shortcuts give what the estimators' own calls give."""
# SPDX-License-Identifier: BSD-3-Clause

import copy

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import sparse
from sklearn import linear_model
from sklearn.ensemble import HistGradientBoostingRegressor
from threadpoolctl import threadpool_info

from skbandit.policies import FALCON, SquareCB
from skbandit.policies._core import _reward_models
from skbandit.policies._core._reward_models import (
    _LINEAR_PREDICT,
    _copy_for_update,
    _one_thread_if_small,
    _predict,
)


def _rows(seed, n=30, d=5):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)), rng.standard_normal(n)


@pytest.mark.parametrize("kind", sorted(_LINEAR_PREDICT, key=lambda k: k.__name__))
@pytest.mark.parametrize("as_sparse", [False, True], ids=["dense", "sparse"])
def test_linear_models_predict_their_own_predictions(kind, as_sparse):
    X, y = _rows(0)
    model = kind().fit(X, y)
    rows = sparse.csr_matrix(X[:7]) if as_sparse else X[:7]
    # The same product X @ coef_ + intercept_; scikit-learn may first copy the rows
    # to another memory layout, whose BLAS kernel can sum in another order: a few
    # ulps on values of order 1, far inside 1e-12.
    assert_allclose(_predict(model, rows), model.predict(rows), rtol=1e-12, atol=1e-12)


def test_a_subclass_of_a_linear_model_predicts_through_its_own_predict():
    class Shifted(linear_model.Ridge):
        def predict(self, X):
            return super().predict(X) + 1.0

    X, y = _rows(1)
    model = Shifted().fit(X, y)
    assert_array_equal(_predict(model, X), model.predict(X))


@pytest.mark.parametrize("average", [False, 4], ids=["plain", "averaged"])
def test_an_sgd_copy_updates_as_a_deep_copy_and_leaves_the_original(average):
    X, y = _rows(2)
    model = linear_model.SGDRegressor(average=average, random_state=0)
    for start in range(0, 20, 5):
        model.partial_fit(X[start : start + 5], y[start : start + 5])
    before = copy.deepcopy(model)
    fast, deep = _copy_for_update(model), copy.deepcopy(model)
    fast.partial_fit(X[20:], y[20:])
    deep.partial_fit(X[20:], y[20:])
    # The same arithmetic on the same numbers: equal to the bit.
    for name in ("coef_", "intercept_", "t_"):
        assert_array_equal(getattr(fast, name), getattr(deep, name))
        assert_array_equal(getattr(model, name), getattr(before, name))
    assert_array_equal(fast.predict(X), deep.predict(X))


def test_other_estimators_are_deep_copied():
    X, y = _rows(3)
    model = HistGradientBoostingRegressor(max_iter=5).fit(X, y)
    copied = _copy_for_update(model)
    assert copied is not model
    assert copied._predictors is not model._predictors


def test_small_work_runs_on_one_openmp_thread_and_large_work_is_left_alone():
    def openmp_threads():
        return {
            i["num_threads"] for i in threadpool_info() if i["user_api"] == "openmp"
        }

    outside = openmp_threads()
    if not outside:
        pytest.skip("no OpenMP runtime is loaded")
    with _one_thread_if_small(1):
        assert openmp_threads() == {1}
    assert openmp_threads() == outside
    with _one_thread_if_small(_reward_models._SMALL_BATCH + 1):
        assert openmp_threads() == outside


@pytest.mark.parametrize(
    "policy",
    [
        SquareCB(n_actions=3, random_state=0),
        FALCON(n_actions=3, estimator=linear_model.Ridge(), random_state=0),
        FALCON(
            n_actions=3,
            estimator=HistGradientBoostingRegressor(max_iter=10),
            random_state=0,
        ),
    ],
    ids=["SquareCB-default", "FALCON-ridge", "FALCON-HGB"],
)
def test_one_round_at_a_time_scores_as_the_models_predict(policy):
    rng = np.random.default_rng(4)
    X = rng.standard_normal((40, 4))
    for t in range(40):
        arm = policy.select(X[t : t + 1])
        policy.partial_fit(X[t : t + 1], arm, rng.random(1))
    models = policy._models.models[0]  # an arm never pulled predicts 0
    moments = policy._context_moments  # SquareCB's default model standardises
    rows = X if moments is None else moments.scale(X, np.float64)
    expected = np.column_stack(
        [np.zeros(40) if model is None else model.predict(rows) for model in models]
    )
    # As the linear shortcut above: the same products, up to summation order.
    assert_allclose(policy.predict_scores(X), expected, rtol=1e-12, atol=1e-12)
