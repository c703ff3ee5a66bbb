"""The online ridge's rollback copy: copy on write, and the deferred precision.

A policy updates a copy of its model (``updatable_copy``) so that a failing update
leaves it as it was. The copy shares the ridge's arrays; its first update writes new
ones. A one-row update defers the precision's rank-one term (only batch updates read
the precision) and adds the deferred rows when it is read.
"""
# SPDX-License-Identifier: BSD-3-Clause

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skbandit.policies._core._online_ridge import OnlineRidge
from skbandit.policies._core._random_features import RandomFeatureRidge
from skbandit.policies._core._ridge import RidgeBlocks


def _rows(seed, n=150, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] - 2.0 * X[:, 1] + rng.normal(scale=0.1, size=n)


def _state(model):
    ridge = model._ridge  # the stored precision: reading .precision adds the rows
    return [ridge._precision.copy(), ridge.covariance.copy(), ridge.moment.copy()]


@pytest.mark.parametrize(
    "make", [OnlineRidge, lambda: RandomFeatureRidge(50, random_state=0)]
)
def test_an_updated_copy_leaves_the_original_and_matches_one_fit(make):
    X, y = _rows(0)
    model = make().partial_fit(X[:1], y[:1])
    for i in range(1, 140):  # the policies' online round: copy, then one row
        before, kept = _state(model), model
        model = model.updatable_copy()
        model.partial_fit(X[i : i + 1], y[i : i + 1])
        for old, now in zip(before, _state(kept), strict=True):
            assert_array_equal(old, now)  # the original is untouched, to the bit
    assert len(model._ridge._pending) == 139 % RidgeBlocks._MAX_PENDING
    model = model.updatable_copy().partial_fit(X[140:], y[140:])  # a batch reads it
    assert model._ridge._pending == ()
    one = make().fit(X, y)
    # The same sums in another order (rank-one updates against one product): the
    # rounding of sums of 150 terms of order 1, far below 1e-9.
    assert_allclose(model._ridge.precision, one._ridge.precision, rtol=1e-9, atol=1e-9)
    assert_allclose(model.predict(X), one.predict(X), rtol=1e-9, atol=1e-9)


def test_the_deferred_precision_is_added_when_read_and_survives_pickling():
    X, y = _rows(1, n=10)
    model = OnlineRidge(alpha=0.5).partial_fit(X[:1], y[:1])
    for i in range(1, 10):
        model = model.updatable_copy().partial_fit(X[i : i + 1], y[i : i + 1])
    assert len(model._ridge._pending) == 9
    rows = np.column_stack([X, np.ones(10)])
    expected = 0.5 * np.eye(5) + rows.T @ rows
    loaded = pickle.loads(pickle.dumps(model))
    # a sum of 10 products of order 1: rounding far below 1e-12
    assert_allclose(loaded._ridge.precision[0], expected, rtol=1e-12, atol=1e-12)
    assert_allclose(model._ridge.precision[0], expected, rtol=1e-12, atol=1e-12)


def test_a_state_pickled_before_the_deferral_loads():
    ridge = RidgeBlocks(2, 3, 1.0)
    state = dict(vars(ridge))
    state["precision"] = state.pop("_precision")  # the former attribute's name
    state.pop("_pending", None)
    old = RidgeBlocks.__new__(RidgeBlocks)
    old.__setstate__(state)
    assert_array_equal(old.precision, np.repeat(np.eye(3)[None], 2, axis=0))
    old.update(np.array([1]), np.ones((1, 3)), np.array([1.0]))
    assert_array_equal(old.precision[1], np.eye(3) + 1.0)
