"""NeuralLinear and NeuralBootstrap: posterior maths and the contract."""
# SPDX-License-Identifier: BSD-3-Clause

import pickle

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose, assert_array_equal

from skbandit.networks import tangent_features
from skbandit.policies import NeuralBootstrap, NeuralLinear
from skbandit.policies._neural_baselines import _last_hidden

TINY = {"hidden_layer_sizes": (6,), "n_steps": 3, "learning_rate": 0.05}


@pytest.fixture(autouse=True)
def _one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _data(n=20, d=3, K=3, seed=0):
    rng = np.random.RandomState(seed)
    return rng.normal(size=(n, d)), rng.randint(K, size=n), rng.normal(size=n)


@pytest.mark.parametrize("per_arm", [False, True])
def test_posterior_is_bayesian_linear_regression(per_arm):
    rng = np.random.RandomState(1)
    X = rng.normal(size=(15, 3, 2)) if per_arm else rng.normal(size=(15, 2))
    a, r = rng.randint(3, size=15), rng.normal(size=15)
    w = rng.uniform(0.5, 2, size=15)
    pol = NeuralLinear(n_actions=3, alpha=0.7, nu=0.3, random_state=0, **TINY)
    pol.partial_fit(X[:7], a[:7], r[:7], sample_weight=w[:7])
    pol.partial_fit(X[7:], a[7:], r[7:], sample_weight=w[7:])
    with torch.no_grad():
        H = _last_hidden(pol.net_.module_, torch.as_tensor(X, dtype=torch.float32))
    H = H.numpy().astype(float)[np.arange(15), a]
    A = 0.7 * np.eye(H.shape[1]) + H.T @ (w[:, None] * H)
    mu = np.linalg.solve(A, H.T @ (w * r))
    assert_allclose(pol.precision_, A, rtol=1e-5, atol=1e-6)
    assert_allclose(pol.coef_, mu, rtol=1e-4, atol=1e-6)
    Hall = _last_hidden(pol.net_.module_, torch.as_tensor(X, dtype=torch.float32))
    Hall = Hall.detach().numpy().astype(float)
    mean, std = pol.predict_scores(X, return_std=True)
    assert_allclose(mean, Hall @ mu, rtol=1e-4, atol=1e-6)
    q = np.einsum("nkm,ml,nkl->nk", Hall, np.linalg.inv(A), Hall)
    assert_allclose(std, 0.3 * np.sqrt(q), rtol=1e-4, atol=1e-6)


def test_last_hidden_matches_tangent_output_block():
    pol = NeuralLinear(n_actions=3, random_state=0, **TINY)
    X, a, r = _data()
    pol.fit(X, a, r)
    Xt = torch.as_tensor(X, dtype=torch.float32)
    m = pol.net_.module_.layers[-1].weight.shape[1]
    _, phi = tangent_features(pol.net_.module_, Xt)
    with torch.no_grad():
        h = _last_hidden(pol.net_.module_, Xt)
    assert_allclose(h.numpy(), phi[..., -m:].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_nu_zero_is_greedy():
    X, a, r = _data()
    pol = NeuralLinear(n_actions=3, nu=0.0, random_state=0, **TINY).fit(X, a, r)
    assert_array_equal(pol.select(X), np.argmax(pol.predict_scores(X), axis=1))
    assert_array_equal(pol.predict_action_proba(X).argmax(1), pol.predict(X))


@pytest.mark.parametrize(
    "cls, extra", [(NeuralLinear, {"nu": 1.0}), (NeuralBootstrap, {"n_models": 3})]
)
def test_persistence_continues_select_sequence(cls, extra):
    X, a, r = _data()
    pol = cls(n_actions=3, random_state=0, **TINY, **extra).fit(X, a, r)
    pol.select(X)
    clone = pickle.loads(pickle.dumps(pol))
    for _ in range(3):
        assert_array_equal(pol.select(X), clone.select(X))
    pol.partial_fit(X[:5], a[:5], r[:5])
    clone.partial_fit(X[:5], a[:5], r[:5])
    assert_array_equal(pol.select(X), clone.select(X))


@pytest.mark.parametrize("cls", [NeuralLinear, NeuralBootstrap])
def test_failed_partial_fit_leaves_state_unchanged(cls, monkeypatch):
    X, a, r = _data()
    pol = cls(n_actions=3, random_state=0, **TINY).fit(X[:10], a[:10], r[:10])
    before = pickle.dumps(pol)
    scores = pol.predict_scores(X)
    # Bad data: rejected before anything changes.
    with pytest.raises(ValueError):
        pol.partial_fit(X[:3], np.array([0, 1, 7]), r[:3])
    # A failure deep in the update, after training has run.
    target = (
        "skbandit.policies._neural_baselines.NeuralLinear._posterior"
        if cls is NeuralLinear
        else "skbandit.policies._neural.NeuralEpsilonGreedy._update"
    )

    def boom(self, *args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(target, boom)
    with pytest.raises(RuntimeError):
        pol.partial_fit(X[10:], a[10:], r[10:])
    monkeypatch.undo()
    assert_allclose(pol.predict_scores(X), scores)
    after = pickle.loads(before)
    assert_array_equal(pol.select(X), after.select(X))
    assert pol.n_samples_seen_ == 10


def test_neural_linear_failure_after_training_restores_network(monkeypatch):
    X, a, r = _data()
    pol = NeuralLinear(n_actions=3, random_state=0, **TINY).fit(X[:10], a[:10], r[:10])
    scores = pol.predict_scores(X)
    theta = [p.detach().clone() for p in pol.net_.module_.parameters()]

    def boom(self):
        raise RuntimeError("boom")

    monkeypatch.setattr(NeuralLinear, "_posterior", boom)
    with pytest.raises(RuntimeError):
        pol.partial_fit(X[10:], a[10:], r[10:])
    monkeypatch.undo()
    for p, t in zip(pol.net_.module_.parameters(), theta, strict=True):
        assert torch.equal(p.detach(), t)
    assert_allclose(pol.predict_scores(X), scores)


def test_bootstrap_kept_rate():
    X, a, r = _data(n=200)
    pol = NeuralBootstrap(
        n_actions=3, n_models=4, hidden_layer_sizes=(4,), n_steps=1, random_state=0
    ).fit(X, a, r)
    rate = pol.kept_counts_.sum() / (4 * 200)
    assert abs(rate - 0.8) < 0.05  # 800 Bernoulli(0.8): sd 0.014
    assert_array_equal(
        [sub.n_samples_seen_ for sub in pol.estimators_], pol.kept_counts_
    )


def test_bootstrap_selects_some_models_greedy_arm():
    X, a, r = _data()
    pol = NeuralBootstrap(n_actions=3, n_models=3, random_state=0, **TINY).fit(X, a, r)
    greedy = np.stack([sub.predict(X) for sub in pol.estimators_])
    chosen = pol.select(X)
    assert np.all((greedy == chosen).any(axis=0))
    assert_allclose(pol.predict_action_proba(X).sum(1), 1.0)
