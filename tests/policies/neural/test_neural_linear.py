"""NeuralLinear: the posterior against a direct solve, its incremental updates, the
schedule and failures."""
# SPDX-License-Identifier: BSD-3-Clause

import copy
import pickle

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose, assert_array_equal

from skbandit.networks import tangent_features
from skbandit.policies import NeuralBootstrap, NeuralLinear
from skbandit.policies._neural._neural_linear import _last_hidden, _pulled_hidden

#: The checks below feed the network x itself (mirroring: test_neural_mirror.py).
TINY = {
    "hidden_layer_sizes": (6,),
    "n_steps": 3,
    "learning_rate": 0.05,
    "mirror_inputs": False,
}

# The maths on the contexts as given (standardize="auto" would scale them).
pytestmark = pytest.mark.usefixtures("one_torch_thread", "neural_contexts_as_given")


def _data(n=20, d=3, K=3, seed=0):
    rng = np.random.RandomState(seed)
    return rng.normal(size=(n, d)), rng.randint(K, size=n), rng.normal(size=n)


def _flat(policy):
    return torch.cat([p.detach().ravel() for p in policy.net_.module_.parameters()])


def _hidden_reference(module, X, actions):
    """Last hidden layer of the pulled arms, written out independently in float64:
    the disjoint encoding built densely (x in block ``a`` of a ``K d`` vector)."""
    X = torch.as_tensor(np.asarray(X, dtype=np.float64))
    layers = [copy.deepcopy(layer).double() for layer in module.layers]
    if X.ndim == 3:  # per-arm contexts: the pulled arm's vector
        Z = X[torch.arange(X.shape[0]), torch.as_tensor(actions)]
    elif module.disjoint:
        K, d = module.n_actions, module.n_features
        Z = X.new_zeros(X.shape[0], K * d)
        for i, k in enumerate(np.asarray(actions).tolist()):
            Z[i, k * d : (k + 1) * d] = X[i]
    else:
        Z = X
    with torch.no_grad():
        h = Z
        for layer in layers[:-1]:
            h = torch.relu(layer(h))
    return h.numpy()


def _direct_posterior(pol):
    """``A = alpha I + sum w h h^T`` and ``b = sum w r h`` over the replay buffer at
    the current parameters, and ``mu = A^{-1} b`` by a direct solve."""
    buf = pol._core.buffer
    X = buf.X[:, None, :] if pol._per_arm_contexts else buf.X
    actions = np.zeros(len(buf), int) if pol._per_arm_contexts else buf.actions
    H = _hidden_reference(pol.net_.module_, X, actions)
    w, r = buf.weights.astype(float), buf.targets.astype(float)
    A = pol.alpha * np.eye(H.shape[1]) + (H * w[:, None]).T @ H
    b = H.T @ (w * r)
    return A, b, np.linalg.solve(A, b)


def _assert_posterior_is_direct(pol, rtol=1e-7):
    A, b, mu = _direct_posterior(pol)
    assert_allclose(pol.precision_, A, rtol=rtol, atol=1e-9)
    assert_allclose(pol._head_b, b, rtol=rtol, atol=1e-9)
    assert_allclose(pol.coef_, mu, rtol=rtol * 10, atol=1e-8)
    assert_allclose(pol.covariance_, np.linalg.inv(A), rtol=rtol * 10, atol=1e-8)


@pytest.mark.parametrize("per_arm", [False, True])
def test_posterior_is_bayesian_linear_regression(per_arm):
    rng = np.random.RandomState(1)
    X = rng.normal(size=(15, 3, 2)) if per_arm else rng.normal(size=(15, 2))
    a, r = rng.randint(3, size=15), rng.normal(size=15)
    w = rng.uniform(0.5, 2, size=15)
    pol = NeuralLinear(
        n_actions=3, alpha=0.7, nu=0.3, train_every=1, random_state=0, **TINY
    )
    pol.partial_fit(X[:7], a[:7], r[:7], sample_weight=w[:7])
    pol.partial_fit(X[7:], a[7:], r[7:], sample_weight=w[7:])
    assert pol.n_trainings_ == 2
    H = _hidden_reference(pol.net_.module_, X, a)
    A = 0.7 * np.eye(H.shape[1]) + H.T @ (w[:, None] * H)
    mu = np.linalg.solve(A, H.T @ (w * r))
    assert_allclose(pol.precision_, A, rtol=1e-5, atol=1e-6)
    assert_allclose(pol.coef_, mu, rtol=1e-4, atol=1e-6)
    # Every arm's features, again written out, give the scores and their std.
    K, n = 3, 15
    Hall = np.stack(
        [_hidden_reference(pol.net_.module_, X, np.full(n, k)) for k in range(K)],
        axis=1,
    )
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
    assert_allclose(
        pulled.numpy(), _hidden_reference(pol.net_.module_, X, a), rtol=1e-6
    )


def test_nu_zero_is_greedy():
    X, a, r = _data()
    pol = NeuralLinear(n_actions=3, nu=0.0, random_state=0, **TINY).fit(X, a, r)
    assert_array_equal(pol.select(X), np.argmax(pol.predict_scores(X), axis=1))
    assert_array_equal(pol.predict_action_proba(X).argmax(1), pol.predict(X))


def test_draws_have_the_posterior_law():
    # select draws beta ~ N(mu, nu^2 A^{-1}) per round: on one repeated context,
    # the score of arm k has mean h_k^T mu and variance nu^2 h_k^T A^{-1} h_k.
    X, a, r = _data(n=30)
    pol = NeuralLinear(n_actions=3, nu=0.5, random_state=0, **TINY).fit(X, a, r)
    H = pol._features(X[:1].astype(np.float32))
    draws = pol._score_sampler(np.repeat(X[:1], 4000, 0).astype(np.float32))
    rng = np.random.default_rng(0)
    scores = draws(rng)
    assert scores.shape == (4000, 3)
    mean = H[0] @ pol.coef_
    cov = 0.25 * H[0] @ np.linalg.inv(pol.precision_) @ H[0].T
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(scores.mean(0) - mean) < 5 * sd / np.sqrt(4000))
    assert_allclose(np.cov(scores.T), cov, rtol=0.15, atol=1e-3 * sd.max() ** 2)


@pytest.mark.parametrize(
    "cls, extra", [(NeuralLinear, {"nu": 1.0}), (NeuralBootstrap, {"n_models": 3})]
)
def test_persistence_continues_select_sequence(cls, extra):
    # NeuralBootstrap too: its keep masks are drawn from the pickled random state.
    X, a, r = _data()
    pol = cls(n_actions=3, random_state=0, **TINY, **extra).fit(X, a, r)
    pol.select(X)
    clone = pickle.loads(pickle.dumps(pol))
    for _ in range(3):
        assert_array_equal(pol.select(X), clone.select(X))
    pol.partial_fit(X[:5], a[:5], r[:5])
    clone.partial_fit(X[:5], a[:5], r[:5])
    assert_array_equal(pol.select(X), clone.select(X))


def _boom(*args, **kwargs):
    raise RuntimeError("boom")


def test_failed_partial_fit_leaves_state_unchanged(monkeypatch):
    X, a, r = _data()
    pol = NeuralLinear(n_actions=3, random_state=0, **TINY).fit(X[:10], a[:10], r[:10])
    before = pickle.dumps(pol)
    scores = pol.predict_scores(X)
    theta = _flat(pol)
    # Bad data: rejected before anything changes.
    with pytest.raises(ValueError):
        pol.partial_fit(X[:3], np.array([0, 1, 7]), r[:3])
    # A failure after training has run (the posterior is recomputed after it).
    seen = {}

    def boom(self, buffer):
        seen["theta"] = _flat(self)
        raise RuntimeError("boom")

    monkeypatch.setattr(NeuralLinear, "_posterior", boom)
    with pytest.raises(RuntimeError):
        pol.partial_fit(X[10:], a[10:], r[10:])
    monkeypatch.undo()
    assert not torch.equal(seen["theta"], theta)  # training had moved the network
    assert torch.equal(_flat(pol), theta)
    assert_allclose(pol.predict_scores(X), scores)
    assert len(pol._core.buffer) == 10 and pol.n_samples_seen_ == 10
    assert pol.n_trainings_ == 1
    after = pickle.loads(before)
    assert_array_equal(pol.select(X), after.select(X))


def test_failed_incremental_update_leaves_state_unchanged(monkeypatch):
    X, a, r = _data()
    pol = NeuralLinear(n_actions=3, train_every=50, random_state=0, **TINY)
    pol.fit(X[:10], a[:10], r[:10])
    before = pickle.loads(pickle.dumps(pol))
    scores = pol.predict_scores(X)
    monkeypatch.setattr(NeuralLinear, "_posterior_update", _boom)
    with pytest.raises(RuntimeError):
        pol.partial_fit(X[10:], a[10:], r[10:])
    monkeypatch.undo()
    assert pol.n_samples_seen_ == 10 and len(pol._core.buffer) == 10
    assert_array_equal(pol.predict_scores(X), scores)
    assert_array_equal(pol.precision_, before.precision_)
    assert_array_equal(pol.select(X), before.select(X))


# --------------------------------------------------- NeuralLinear's posterior
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
def test_incremental_posterior_equals_direct_solve(monkeypatch, params, per_arm):
    rng = np.random.RandomState(2)
    X = rng.normal(size=(40, 3, 2)) if per_arm else rng.normal(size=(40, 2))
    a, r = rng.randint(3, size=40), rng.normal(size=40)
    w = rng.uniform(0.2, 3, size=40)
    full = NeuralLinear._posterior
    recomputed = []

    def counted(self, buffer):
        recomputed.append(1)
        return full(self, buffer)

    monkeypatch.setattr(NeuralLinear, "_posterior", counted)
    pol = NeuralLinear(
        n_actions=3, alpha=0.6, nu=0.4, random_state=0, **{**TINY, **params}
    )
    start, incremental, evictions = 0, 0, 0
    for size in [1, 2, 1, 3, 1, 1, 4, 2, 1, 5, 1, 2, 3, 1, 12]:
        stop = start + size
        theta = _flat(pol) if start else None
        old_rows = len(pol._core.buffer) if start else 0
        recomputed.clear()
        pol.partial_fit(
            X[start:stop], a[start:stop], r[start:stop], sample_weight=w[start:stop]
        )
        start = stop
        rows = len(pol._core.buffer)
        if theta is None:  # the first update: the prior, then the first rows
            pass
        elif torch.equal(_flat(pol), theta):
            if old_rows and size < rows:
                assert recomputed == []  # the rank-B update, not a recomputation
                incremental += 1
                evictions += old_rows + size > rows
        else:  # trained: the representation moved, every feature is recomputed
            assert recomputed == [1]
        limit = params.get("max_buffer_size")
        assert rows == (stop if limit is None else min(stop, limit))
        assert_array_equal(pol._core.buffer.actions, a[stop - rows : stop])
        _assert_posterior_is_direct(pol)
    assert start == 40 and incremental >= 5
    if "max_buffer_size" in params:
        assert evictions >= 1  # the eviction branch ran


def test_incremental_posterior_scores_equal_one_fit():
    X, a, r = _data(n=30)
    params = dict(n_actions=3, n_steps=0, nu=0.5, random_state=0)
    params.update(hidden_layer_sizes=(6,), learning_rate=0.05)
    inc = NeuralLinear(**params)
    for start in range(0, 30, 3):
        inc.partial_fit(
            X[start : start + 3], a[start : start + 3], r[start : start + 3]
        )
    ref = NeuralLinear(**params).fit(X, a, r)
    assert_allclose(inc.predict_scores(X), ref.predict_scores(X), rtol=1e-8, atol=1e-10)
    assert_allclose(
        inc.predict_scores(X, return_std=True)[1],
        ref.predict_scores(X, return_std=True)[1],
        rtol=1e-8,
        atol=1e-10,
    )


def test_max_train_rounds_freezes_posterior():
    X, a, r = _data(n=20)
    pol = NeuralLinear(
        n_actions=3, max_train_rounds=7, train_every=100, random_state=0, **TINY
    )
    pol.partial_fit(X[:5], a[:5], r[:5]).partial_fit(X[5:9], a[5:9], r[5:9])
    assert len(pol._core.buffer) == 7  # rounds 8 and 9 ignored
    assert_allclose(pol._core.buffer.X, X[:7].astype(np.float32))
    _assert_posterior_is_direct(pol)
    frozen = (pol.precision_.copy(), pol.coef_.copy(), _flat(pol))
    pol.partial_fit(X[9:], a[9:], r[9:])
    assert_array_equal(pol.precision_, frozen[0])
    assert_array_equal(pol.coef_, frozen[1])
    assert torch.equal(_flat(pol), frozen[2])
    assert pol.n_samples_seen_ == 20 and len(pol._core.buffer) == 7


def test_features_do_not_depend_on_batching():
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


def test_custom_module_regresses_on_its_last_hidden_layer():
    rng = np.random.RandomState(0)
    X, a, r = rng.normal(size=(12, 3, 2)), rng.randint(3, size=12), rng.normal(size=12)
    pol = NeuralLinear(module=_PerArmMLP, alpha=0.5, random_state=0, **TINY)
    pol.fit(X, a, r)
    body = copy.deepcopy(pol.net_.module_.body).double()
    with torch.no_grad():
        H = body(torch.as_tensor(X[np.arange(12), a].astype(np.float32)).double())
    H = H.numpy()
    assert_allclose(pol.precision_, 0.5 * np.eye(6) + H.T @ H, rtol=1e-10)
    mu = np.linalg.solve(0.5 * np.eye(6) + H.T @ H, H.T @ r)
    # Rewards are buffered in float32 and H comes from the float32 network:
    # 1.5e-7 relative measured; 1e-5 leaves room for another CPU's rounding.
    assert_allclose(pol.coef_, mu, rtol=1e-5)
    assert pol.predict_scores(X).shape == (12, 3)


def test_rejects_a_module_without_per_arm_features():
    X, a, r = _data()
    head = torch.nn.Sequential(
        torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3)
    )
    with pytest.raises(ValueError, match="one feature vector per arm"):
        NeuralLinear(n_actions=3, module=head, random_state=0, **TINY).fit(X, a, r)
