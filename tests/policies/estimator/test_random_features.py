"""SquareCB's default model (ridge on random Fourier features) and the estimator
family's ``standardize``."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.base import clone
from sklearn.linear_model import Ridge

from skbandit.policies import FALCON, BootstrappedTS, SquareCB
from skbandit.policies._core._random_features import RandomFeatureRidge


def _rows(seed, n=120, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.sin(X[:, 0]) + X[:, 1] * X[:, 2]


def test_chunks_equal_one_fit():
    X, y = _rows(0)
    one = RandomFeatureRidge(random_state=0).fit(X, y)
    chunks = RandomFeatureRidge(random_state=0)
    for part in np.array_split(np.arange(len(y)), [1, 7, 50]):
        chunks.partial_fit(X[part], y[part])
    # Sherman-Morrison updates in another grouping of the same rows: rounding of a
    # 301 x 301 ridge with alpha 0.1 stays far below 1e-7 of predictions of order 1.
    assert_allclose(chunks.predict(X), one.predict(X), rtol=1e-7, atol=1e-7)


def test_the_features_approximate_the_gaussian_kernel():
    X, y = _rows(1, n=40)
    model = RandomFeatureRidge(n_components=4000, gamma=0.3, random_state=0).fit(X, y)
    features = model._features(X)
    kernel = np.exp(-0.3 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    # Each inner product averages 4,000 cosines (standard error about
    # 1 / sqrt(2 * 4000) = 0.011): the mean absolute error over the 1,600 pairs was
    # 0.011 for two seeds, a third of 0.03; against the kernel of gamma 0.6, 0.14.
    assert np.abs(features @ features.T - kernel).mean() < 0.03


def test_it_fits_a_nonlinear_function_a_linear_ridge_cannot():
    X, y = _rows(2, n=600)
    test, truth = _rows(3, n=300)
    kernel = RandomFeatureRidge(random_state=0).fit(X, y).predict(test)
    linear = Ridge().fit(X, y).predict(test)
    # The target's variance is 1.28: the linear fit leaves 0.92 of it (the product
    # has no linear part), the kernel ridge 0.04-0.06 over three feature seeds.
    assert np.mean((kernel - truth) ** 2) < 0.4 < np.mean((linear - truth) ** 2)


def test_a_policy_seeds_every_arm_with_the_same_features():
    X, y = _rows(4, n=60)
    policy = SquareCB(n_actions=3, random_state=0).fit(X, np.arange(60) % 3, y)
    models = [policy._models.models[0][arm] for arm in range(3)]
    for model in models[1:]:
        assert np.array_equal(model.weights_, models[0].weights_)
    again = SquareCB(n_actions=3, random_state=0).fit(X, np.arange(60) % 3, y)
    assert_allclose(again.predict_scores(X), policy.predict_scores(X), rtol=0, atol=0)


@pytest.mark.parametrize(
    "policy, standardises",
    [
        (SquareCB(), True),  # random features need unit-scale contexts
        (SquareCB(estimator=Ridge()), False),  # an estimator passed: as given
        (FALCON(), True),  # the same default model
        (BootstrappedTS(), True),
        (FALCON(estimator=Ridge()), False),  # a ridge: only a per-feature prior
        (FALCON(estimator=Ridge(), standardize=True), True),
        (SquareCB(standardize=False), False),
    ],
)
def test_auto_standardises_for_the_random_features_only(policy, standardises):
    X, y = _rows(5, n=30)
    fitted = clone(policy).set_params(n_actions=3).fit(X, np.arange(30) % 3, y)
    assert (fitted._context_moments is not None) is standardises


def test_seeded_arms_share_one_draw_and_per_arm_rows_are_not_mixed_up():
    # A seeded policy's arms hold the same read-only W, so a round computes a row's
    # features once; with per-arm contexts and a model per arm, each arm's rows
    # differ and must get their own features (the memo keys on the rows too).
    rng = np.random.default_rng(7)
    X = rng.normal(size=(50, 3, 4))
    actions, y = np.arange(50) % 3, rng.normal(size=50)
    policy = SquareCB(arm_models="per_arm", random_state=0).fit(X, actions, y)
    models = policy._models.models[0]
    assert all(m.weights_ is models[0].weights_ for m in models)
    assert not models[0].weights_.flags.writeable
    rows = policy._context_moments.scale(X[:5], np.float64)
    expected = np.column_stack([m.predict(rows[:, k]) for k, m in enumerate(models)])
    # the same products (features times coefficients) by another path
    assert_allclose(policy.predict_scores(X[:5]), expected, rtol=1e-12, atol=1e-12)
