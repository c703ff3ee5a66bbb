"""NeuralLinear and NeuralBootstrap: posterior maths and the contract."""
# SPDX-License-Identifier: BSD-3-Clause

import copy
import pickle

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose, assert_array_equal

from skbandit.networks import tangent_features
from skbandit.policies import NeuralBootstrap, NeuralEpsilonGreedy, NeuralLinear
from skbandit.policies._neural import _BaseNeuralPolicy
from skbandit.policies._neural_baselines import _last_hidden, _pulled_hidden

TINY = {"hidden_layer_sizes": (6,), "n_steps": 3, "learning_rate": 0.05}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


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


@pytest.mark.parametrize("init", ["ntk", "default"])
def test_pulled_hidden_matches_every_arm_features(init):
    X, a, _ = _data(n=30)
    pol = NeuralLinear(n_actions=3, init=init, random_state=0, **TINY)
    pol.fit(X, a, np.ones(30))
    module = copy.deepcopy(pol.net_.module_).double()
    Xt = torch.as_tensor(X)
    with torch.no_grad():
        every = _last_hidden(module, Xt)[np.arange(30), a]
        pulled = _pulled_hidden(module, Xt, torch.as_tensor(a))
    assert_allclose(pulled.numpy(), every.numpy(), rtol=1e-12, atol=1e-14)


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


# ------------------------------------------------------------------ NeuralBootstrap
def _flat(policy):
    return torch.cat([p.detach().ravel() for p in policy.net_.module_.parameters()])


def _count_trainings(monkeypatch):
    calls = []
    train = _BaseNeuralPolicy._train

    def counted(self, *args, **kwargs):
        calls.append(id(self))
        return train(self, *args, **kwargs)

    monkeypatch.setattr(_BaseNeuralPolicy, "_train", counted)
    return calls


@pytest.mark.parametrize("train_every, expected", [(1, 10), (3, 3), (4, 2), (11, 0)])
def test_bootstrap_train_every_skips_trainings(monkeypatch, train_every, expected):
    X, a, r = _data(n=10)
    calls = _count_trainings(monkeypatch)
    pol = NeuralBootstrap(
        n_actions=3,
        n_models=2,
        bootstrap_prob=1.0,
        train_every=train_every,
        random_state=0,
        **TINY,
    )
    pol.partial_fit(X[:1], a[:1], r[:1])
    for t in range(1, 10):
        before = [_flat(sub) for sub in pol.estimators_]
        pol.partial_fit(X[t : t + 1], a[t : t + 1], r[t : t + 1])
        due = (t + 1) % train_every == 0
        for sub, theta in zip(pol.estimators_, before, strict=True):
            assert torch.equal(_flat(sub), theta) != due, t  # moved only then
    assert len(calls) == 2 * expected
    assert pol.n_trainings_ == expected
    assert [sub.n_trainings_ for sub in pol.estimators_] == [expected] * 2
    # A model learns, at each training, every row it kept since the last one.
    learnt = expected * train_every
    assert [sub.n_samples_seen_ for sub in pol.estimators_] == [learnt] * 2
    assert_array_equal(pol.kept_counts_, [10, 10])


def test_bootstrap_train_every_counts_rounds_of_batches(monkeypatch):
    X, a, r = _data(n=12)
    calls = _count_trainings(monkeypatch)
    pol = NeuralBootstrap(
        n_actions=3,
        n_models=3,
        bootstrap_prob=1.0,
        train_every=3,
        random_state=0,
        **TINY,
    )
    for start, stop, due in [(0, 2, 0), (2, 7, 1), (7, 8, 0), (8, 9, 1), (9, 12, 1)]:
        pol.partial_fit(X[start:stop], a[start:stop], r[start:stop])
        assert len(calls) == 3 * due
        calls.clear()
    assert pol.n_trainings_ == 3


def test_bootstrap_model_without_new_rows_skips_training(monkeypatch):
    X, a, r = _data(n=6)
    calls = _count_trainings(monkeypatch)
    pol = NeuralBootstrap(
        n_actions=3, n_models=4, bootstrap_prob=0.0, random_state=0, **TINY
    ).fit(X, a, r)
    assert calls == [] and pol.n_trainings_ == 1
    assert_array_equal(pol.kept_counts_, 0)


@pytest.mark.parametrize(
    "params",
    [
        {"train_every": 3},
        {"max_train_rounds": 7},
        {"max_buffer_size": 4},
        {"train_every": 2, "max_train_rounds": 9, "max_buffer_size": 3},
        {"train_every": 4, "batch_size": 2, "warm_start": False},
    ],
)
@pytest.mark.parametrize("per_arm", [False, True])
def test_one_model_bootstrap_is_the_core_network(params, per_arm):
    # bootstrap_prob=1 and one model: the model must follow the core's schedule
    # exactly, counted in the policy's rounds.
    rng = np.random.RandomState(3)
    X = rng.normal(size=(16, 3, 2)) if per_arm else rng.normal(size=(16, 2))
    a, r = rng.randint(3, size=16), rng.normal(size=16)
    pol = NeuralBootstrap(
        n_actions=3, n_models=1, bootstrap_prob=1.0, random_state=0, **TINY, **params
    )
    pol.partial_fit(X[:1], a[:1], r[:1])
    core = NeuralEpsilonGreedy(
        n_actions=3,
        epsilon=0.0,
        random_state=pol.estimators_[0].random_state,
        **TINY,
        **params,
    ).partial_fit(X[:1], a[:1], r[:1])
    for start, stop in [(1, 3), (3, 4), (4, 9), (9, 10), (10, 16)]:
        pol.partial_fit(X[start:stop], a[start:stop], r[start:stop])
        core.partial_fit(X[start:stop], a[start:stop], r[start:stop])
        assert torch.equal(_flat(pol.estimators_[0]), _flat(core))
        assert pol.n_trainings_ == core.n_trainings_
        assert_array_equal(pol.predict_scores(X), core.predict_scores(X))


def test_bootstrap_max_train_rounds_freezes_networks(monkeypatch):
    X, a, r = _data(n=30)
    pol = NeuralBootstrap(
        n_actions=3,
        n_models=3,
        bootstrap_prob=1.0,
        max_train_rounds=5,
        random_state=0,
        **TINY,
    )
    pol.fit(X[:3], a[:3], r[:3]).partial_fit(X[3:7], a[3:7], r[3:7])
    # Only rounds 4 and 5 of the second batch were learnt.
    assert_array_equal(pol.kept_counts_, [5, 5, 5])
    for sub in pol.estimators_:
        assert_array_equal(sub._buffer_X, X[:5].astype(np.float32))
    frozen = [_flat(sub) for sub in pol.estimators_]
    scores, trainings = pol.predict_scores(X), pol.n_trainings_
    calls = _count_trainings(monkeypatch)
    for start in range(7, 30, 4):
        pol.partial_fit(
            X[start : start + 4], a[start : start + 4], r[start : start + 4]
        )
    assert calls == []
    for sub, theta in zip(pol.estimators_, frozen, strict=True):
        assert torch.equal(_flat(sub), theta)
        assert sub.n_samples_seen_ == 5
    assert_array_equal(pol.predict_scores(X), scores)
    assert pol.n_trainings_ == trainings
    assert_array_equal(pol.kept_counts_, [5, 5, 5])
    assert pol.n_samples_seen_ == 30
    pol.select(X)  # still deciding


@pytest.mark.parametrize("train_every", [1, 8])
@pytest.mark.parametrize("prob", [0.5, 1.0])
def test_bootstrap_max_buffer_size_bounds_every_model(train_every, prob):
    X, a, r = _data(n=40)
    pol = NeuralBootstrap(
        n_actions=3,
        n_models=3,
        bootstrap_prob=prob,
        max_buffer_size=4,
        train_every=train_every,
        random_state=0,
        **TINY,
    )
    start = 0
    for size in [1, 5, 2, 7, 1, 3, 6, 1, 2, 9, 3]:
        pol.partial_fit(
            X[start : start + size], a[start : start + size], r[start : start + size]
        )
        start += size
        for sub, queue in zip(pol.estimators_, pol._waiting, strict=True):
            assert sub._buffer_X.shape[0] <= 4
            assert all(part.shape[0] <= 4 for part in queue)
    assert start == 40 and 40 // train_every > 37 // train_every  # the last trained
    if prob == 1.0:  # every model learnt the last four rounds, and only those
        for sub in pol.estimators_:
            assert_array_equal(sub._buffer_X, X[-4:].astype(np.float32))
            assert_array_equal(sub._buffer_actions, a[-4:])


def test_bootstrap_failed_training_keeps_waiting_rows(monkeypatch):
    X, a, r = _data(n=9)
    params = {"n_actions": 3, "n_models": 2, "train_every": 3, "random_state": 0}
    pol = NeuralBootstrap(**params, **TINY).partial_fit(X[:2], a[:2], r[:2])
    twin = NeuralBootstrap(**params, **TINY).partial_fit(X[:2], a[:2], r[:2])
    before = pickle.dumps(pol)

    def boom(self, *args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(NeuralEpsilonGreedy, "_update", boom)
    with pytest.raises(RuntimeError):
        pol.partial_fit(X[2:3], a[2:3], r[2:3])  # round 3 trains, and fails
    monkeypatch.undo()
    assert pickle.dumps(pol) == before
    for policy in (pol, twin):
        policy.partial_fit(X[2:9], a[2:9], r[2:9])
    assert_array_equal(pol.predict_scores(X), twin.predict_scores(X))
    assert_array_equal(pol.select(X), twin.select(X))


def test_bootstrap_set_params_reaches_the_models(monkeypatch):
    X, a, r = _data(n=10)
    pol = NeuralBootstrap(n_actions=3, n_models=2, random_state=0, **TINY)
    pol.fit(X[:5], a[:5], r[:5])
    pol.set_params(learning_rate=0.0, n_steps=7)
    theta = [_flat(sub) for sub in pol.estimators_]
    pol.partial_fit(X[5:], a[5:], r[5:])
    for sub, t in zip(pol.estimators_, theta, strict=True):
        assert sub.learning_rate == 0.0 and sub.n_steps == 7
        assert torch.equal(_flat(sub), t)  # a zero step moves nothing


# --------------------------------------------------- NeuralLinear's posterior
def _assert_posterior_is_recomputed(pol, full):
    A, b, mu, cov, _ = full(pol)
    assert_allclose(pol.precision_, A, rtol=1e-8, atol=1e-10)
    assert_allclose(pol._head_b, b, rtol=1e-8, atol=1e-10)
    assert_allclose(pol.coef_, mu, rtol=1e-8, atol=1e-10)
    assert_allclose(pol.covariance_, cov, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize(
    "params",
    [
        {"train_every": 4},
        {"n_steps": 0},
        {"learning_rate": 0.0},
        {"train_every": 5, "max_buffer_size": 6},  # rows evicted between trainings
        {"n_steps": 0, "max_buffer_size": 3},
    ],
)
@pytest.mark.parametrize("per_arm", [False, True])
def test_incremental_posterior_equals_recompute(monkeypatch, params, per_arm):
    rng = np.random.RandomState(2)
    X = rng.normal(size=(40, 3, 2)) if per_arm else rng.normal(size=(40, 2))
    a, r = rng.randint(3, size=40), rng.normal(size=40)
    w = rng.uniform(0.2, 3, size=40)
    full = NeuralLinear._posterior
    recomputed = []

    def counted(self):
        recomputed.append(1)
        return full(self)

    monkeypatch.setattr(NeuralLinear, "_posterior", counted)
    pol = NeuralLinear(
        n_actions=3, alpha=0.6, nu=0.4, random_state=0, **{**TINY, **params}
    )
    start, incremental = 0, 0
    for size in [1, 2, 1, 3, 1, 1, 4, 2, 1, 5, 1, 2, 3, 1, 12]:
        stop = start + size
        theta = _flat(pol) if start else None
        old_rows = pol._buffer_X.shape[0] if start else 0
        recomputed.clear()
        pol.partial_fit(
            X[start:stop], a[start:stop], r[start:stop], sample_weight=w[start:stop]
        )
        start = stop
        if theta is None:  # the first update: the prior, then the first rows
            pass
        elif torch.equal(_flat(pol), theta):
            if old_rows and size < pol._buffer_X.shape[0]:
                assert recomputed == []  # the rank-B update, not a recomputation
                incremental += 1
        else:  # trained: the representation moved, every feature is recomputed
            assert recomputed == [1]
        _assert_posterior_is_recomputed(pol, full)
    assert start == 40 and incremental >= 5


def test_incremental_posterior_scores_and_draws():
    X, a, r = _data(n=30)
    inc = NeuralLinear(
        n_actions=3,
        n_steps=0,
        nu=0.5,
        random_state=0,
        **{k: v for k, v in TINY.items() if k != "n_steps"},
    )
    for start in range(0, 30, 3):
        inc.partial_fit(
            X[start : start + 3], a[start : start + 3], r[start : start + 3]
        )
    ref = NeuralLinear(
        n_actions=3,
        n_steps=0,
        nu=0.5,
        random_state=0,
        **{k: v for k, v in TINY.items() if k != "n_steps"},
    ).fit(X, a, r)
    assert_allclose(inc.predict_scores(X), ref.predict_scores(X), rtol=1e-8, atol=1e-10)
    assert_allclose(
        inc.predict_scores(X, return_std=True)[1],
        ref.predict_scores(X, return_std=True)[1],
        rtol=1e-8,
        atol=1e-10,
    )


def test_neural_linear_max_train_rounds_freezes_posterior():
    X, a, r = _data(n=20)
    pol = NeuralLinear(
        n_actions=3, max_train_rounds=7, train_every=100, random_state=0, **TINY
    )
    pol.partial_fit(X[:5], a[:5], r[:5]).partial_fit(X[5:9], a[5:9], r[5:9])
    assert pol._buffer_X.shape[0] == 7  # rounds 8 and 9 ignored
    _assert_posterior_is_recomputed(pol, NeuralLinear._posterior)
    frozen = (pol.precision_.copy(), pol.coef_.copy(), _flat(pol))
    pol.partial_fit(X[9:], a[9:], r[9:])
    assert_array_equal(pol.precision_, frozen[0])
    assert_array_equal(pol.coef_, frozen[1])
    assert torch.equal(_flat(pol), frozen[2])
    assert pol.n_samples_seen_ == 20


def test_failed_incremental_update_leaves_state_unchanged(monkeypatch):
    X, a, r = _data()
    pol = NeuralLinear(n_actions=3, train_every=50, random_state=0, **TINY)
    pol.fit(X[:10], a[:10], r[:10])
    before = pickle.dumps(pol)
    scores = pol.predict_scores(X)

    def boom(self, *args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(NeuralLinear, "_posterior_update", boom)
    with pytest.raises(RuntimeError):
        pol.partial_fit(X[10:], a[10:], r[10:])
    monkeypatch.undo()
    assert pol.n_samples_seen_ == 10 and pol._buffer_X.shape[0] == 10
    assert_array_equal(pol.predict_scores(X), scores)
    assert_array_equal(pol.select(X), pickle.loads(before).select(X))


def test_neural_linear_features_do_not_depend_on_batching():
    X, a, r = _data(n=50)
    pol = NeuralLinear(n_actions=3, random_state=0, **TINY).fit(X, a, r)
    Xf = X.astype(np.float32)
    H = pol._features(Xf)
    for start, stop in [(0, 1), (7, 20), (49, 50)]:
        assert_allclose(pol._features(Xf[start:stop]), H[start:stop], rtol=1e-12)


class _PerArmMLP(torch.nn.Module):
    """Scores each arm's context; a 2-D input is every arm's (the core's contract)."""

    def __init__(self, n_features, n_actions):
        super().__init__()
        self.n_actions = n_actions
        self.body = torch.nn.Sequential(torch.nn.Linear(n_features, 6), torch.nn.ReLU())
        self.out = torch.nn.Linear(6, 1)

    def forward(self, X):
        if X.ndim == 2:
            X = X[:, None, :].expand(-1, self.n_actions, -1)
        return self.out(self.body(X))[..., 0]


def test_neural_linear_custom_module_regresses_on_its_last_hidden_layer():
    rng = np.random.RandomState(0)
    X, a, r = rng.normal(size=(12, 3, 2)), rng.randint(3, size=12), rng.normal(size=12)
    pol = NeuralLinear(module=_PerArmMLP, alpha=0.5, random_state=0, **TINY)
    pol.fit(X, a, r)
    body = copy.deepcopy(pol.net_.module_.body).double()
    with torch.no_grad():
        H = body(torch.as_tensor(X[np.arange(12), a].astype(np.float32)).double())
    H = H.numpy()
    assert_allclose(pol.precision_, 0.5 * np.eye(6) + H.T @ H, rtol=1e-10)
    assert pol.predict_scores(X).shape == (12, 3)


def test_neural_linear_rejects_a_module_without_per_arm_features():
    X, a, r = _data()
    head = torch.nn.Sequential(
        torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3)
    )
    with pytest.raises(ValueError, match="one feature vector per arm"):
        NeuralLinear(n_actions=3, module=head, random_state=0, **TINY).fit(X, a, r)


def test_bootstrap_custom_module_class_gives_each_model_its_own_init():
    rng = np.random.RandomState(0)
    X, a, r = rng.normal(size=(12, 3, 2)), rng.randint(3, size=12), rng.normal(size=12)
    pol = NeuralBootstrap(module=_PerArmMLP, n_models=2, random_state=0, **TINY)
    pol.fit(X, a, r)
    first, second = (sub.theta0_ for sub in pol.estimators_)
    assert not np.array_equal(first, second)
    assert pol.select(X).shape == (12,)
