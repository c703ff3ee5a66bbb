"""NeuralBootstrap on one stacked batch of networks: each member against a network
trained alone on its kept rows, the keep law, selection, schedule and failures."""
# SPDX-License-Identifier: BSD-3-Clause

import copy

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose, assert_array_equal

import skbandit.networks._core as core_module
from skbandit._base._selection import greedy_proba
from skbandit.exceptions import NumericalError
from skbandit.networks import initialize_net, make_bandit_net
from skbandit.networks._ensemble import StackedBanditMLP
from skbandit.networks._training import (
    get_flat_parameters,
    proximal_gradient_descent,
    set_flat_parameters,
)
from skbandit.policies import NeuralBootstrap, NeuralEpsilonGreedy

#: The checks below feed the network x itself (mirroring: test_neural_mirror.py).
TINY = {
    "hidden_layer_sizes": (6,),
    "n_steps": 3,
    "learning_rate": 0.05,
    "mirror_inputs": False,
}
#: The papers' schedule (every round, full batch, the whole history), for the tests
#: of the per-round maths.
SCHEDULE = {"train_every": 1, "batch_size": None, "max_buffer_size": None}

# The maths on the contexts as given (standardize="auto" would scale them).
pytestmark = pytest.mark.usefixtures("one_torch_thread", "neural_contexts_as_given")


def _data(n=20, d=3, K=3, seed=0, per_arm=False):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, K, d) if per_arm else (n, d))
    return X, rng.randint(K, size=n), rng.normal(size=n)


def _flat(module):
    return get_flat_parameters(module).clone()


def _members(pol):
    module = pol.net_.module_
    assert isinstance(module, StackedBanditMLP)
    return [module.member(j) for j in range(module.n_members)]


def _count_trainings(monkeypatch):
    """Record the buffer length of every stacked training."""
    calls = []
    real = core_module.ensemble_gradient_descent

    def counted(module, X, *args, **kwargs):
        calls.append(X.shape[0])
        return real(module, X, *args, **kwargs)

    monkeypatch.setattr(core_module, "ensemble_gradient_descent", counted)
    return calls


# ------------------------------------------------------- members trained alone
@pytest.mark.parametrize("per_arm", [False, True])
def test_each_member_is_a_network_trained_alone_on_its_kept_rows(per_arm):
    K, d, M = 3, 3, 4
    X, a, r = _data(n=24, d=d, K=K, per_arm=per_arm, seed=1)
    w = np.random.RandomState(2).uniform(0.5, 2.0, size=24)
    params = dict(
        n_actions=K,
        n_models=M,
        bootstrap_prob=0.6,
        hidden_layer_sizes=(8,),
        n_steps=6,
        learning_rate=0.1,
        alpha=0.3,
        mirror_inputs=False,  # the rebuild below feeds x itself
        random_state=0,
        **SCHEDULE,
    )
    pol = NeuralBootstrap(**params)
    nets, theta0 = [], []
    Xc = X[np.arange(24), a] if per_arm else X
    for start, stop in [(0, 8), (8, 11), (11, 18), (18, 24)]:
        pol.partial_fit(
            X[start:stop], a[start:stop], r[start:stop], sample_weight=w[start:stop]
        )
        if not nets:  # theta_0 of every member, as independent BanditMLPs
            stacked0 = copy.deepcopy(pol.net_.module_)
            set_flat_parameters(stacked0, torch.as_tensor(pol.theta0_))
            alone = [stacked0.member(j) for j in range(M)]
            for net in alone:
                theta0.append([p.detach().clone() for p in net.parameters()])
                skorch_net = make_bandit_net(
                    d, K, hidden_layer_sizes=(8,), learning_rate=0.1
                )
                skorch_net = initialize_net(skorch_net, 0)
                skorch_net.module_ = net
                skorch_net.initialize_optimizer()
                nets.append(skorch_net)
        keep = pol._core.buffer.weights > 0  # (n, M): the rows each member kept
        for j, net in enumerate(nets):
            rows = np.flatnonzero(keep[:, j])
            assert rows.size, "every member kept some rows (seeded)"
            proximal_gradient_descent(
                net,
                torch.as_tensor(Xc[rows], dtype=torch.float32),
                torch.as_tensor(a[rows]),
                torch.as_tensor(r[rows], dtype=torch.float32),
                torch.as_tensor(w[rows], dtype=torch.float32),
                theta0[j],
                alpha=0.3,
                n_steps=6,
            )
        for j, (member, net) in enumerate(zip(_members(pol), nets, strict=True)):
            assert_allclose(
                _flat(member), _flat(net.module_), rtol=1e-4, atol=1e-5, err_msg=j
            )
    # The members moved, and apart: the comparison is not of untouched networks.
    moved = [
        float((_flat(n.module_) - torch.cat([t.ravel() for t in t0])).abs().max())
        for n, t0 in zip(nets, theta0, strict=True)
    ]
    assert (
        min(moved) > 1e-2 and len({tuple(_flat(n.module_).tolist()) for n in nets}) == M
    )
    buf = pol._core.buffer
    assert_allclose(buf.weights, keep * w[:, None].astype(np.float32))
    assert_array_equal(pol.kept_counts_, keep.sum(0))
    # from_members restacks them: the same scores as the policy's module.
    restacked = StackedBanditMLP.from_members([n.module_ for n in nets])
    Xt = torch.as_tensor(X, dtype=torch.float32)
    with torch.no_grad():
        assert_allclose(
            restacked(Xt).numpy(), pol.net_.module_(Xt).numpy(), rtol=1e-4, atol=1e-5
        )


def test_keep_frequency_is_bootstrap_prob(global_random_seed):
    n, M = 400, 8
    X, a, r = _data(n=n, seed=global_random_seed)
    for prob in (0.3, 0.8):
        pol = NeuralBootstrap(
            n_actions=3,
            n_models=M,
            bootstrap_prob=prob,
            hidden_layer_sizes=(4,),
            n_steps=0,
            random_state=global_random_seed,
        )
        for start in range(0, n, 50):
            pol.partial_fit(
                X[start : start + 50], a[start : start + 50], r[start : start + 50]
            )
        keep = pol._core.buffer.weights
        assert set(np.unique(keep)) <= {0.0, 1.0}
        assert_array_equal(pol.kept_counts_, keep.sum(0))
        # n M Bernoulli(prob) draws: the rate's sd is at most 0.0081 here, and a
        # margin of 0.035 (over 4 sd) holds over seeds 0-99.
        sd = np.sqrt(prob * (1 - prob) / (n * M))
        assert abs(keep.mean() - prob) < 0.035, (prob, keep.mean(), sd)
        # Each member on its own, and independence between members.
        assert np.all(np.abs(keep.mean(0) - prob) < 0.1)
        pairs = (keep.T @ keep)[np.triu_indices(M, 1)] / n
        assert abs(pairs.mean() - prob**2) < 0.04


def test_the_first_member_of_one_is_the_core_network():
    # bootstrap_prob=1 and one model: the member follows the core's schedule.
    for params in (
        {"train_every": 3},
        {"max_train_rounds": 7},
        {"max_buffer_size": 4},
        {"train_every": 2, "max_train_rounds": 9, "max_buffer_size": 3},
        {"train_every": 4, "batch_size": 2, "warm_start": False},
    ):
        X, a, r = _data(n=16, d=2, seed=3)
        pol = NeuralBootstrap(
            n_actions=3,
            n_models=1,
            bootstrap_prob=1.0,
            random_state=0,
            **TINY,
            **params,
        )
        core = NeuralEpsilonGreedy(
            n_actions=3, epsilon=0.0, random_state=0, **TINY, **params
        )
        for start, stop in [(0, 1), (1, 3), (3, 4), (4, 9), (9, 10), (10, 16)]:
            pol.partial_fit(X[start:stop], a[start:stop], r[start:stop])
            core.partial_fit(X[start:stop], a[start:stop], r[start:stop])
            # float32 training through a stacked batch of one against the plain
            # network (other product shapes): 7e-7 in the parameters and 4e-6 in
            # the scores measured after 16 rounds; 1e-4 leaves 25 times that, and
            # a training step more or less moves them by 1e-2.
            assert_allclose(
                _flat(_members(pol)[0]), _flat(core.net_.module_), atol=1e-4
            )
            assert pol.n_trainings_ == core.n_trainings_
            assert_array_equal(pol._core.buffer.X, core._core.buffer.X)
            assert_allclose(pol.predict_scores(X), core.predict_scores(X), atol=1e-4)


# ------------------------------------------------------------------ deciding
def test_select_plays_a_uniformly_drawn_members_greedy_arm():
    X, a, r = _data(n=30)
    M = 5
    pol = NeuralBootstrap(n_actions=3, n_models=M, random_state=0, **TINY).fit(X, a, r)
    contexts = X[:6]
    with torch.no_grad():
        scores = np.stack(
            [
                m(torch.as_tensor(contexts, dtype=torch.float32)).numpy()
                for m in _members(pol)
            ]
        )  # (M, 6, K), each member scored alone
    greedy = scores.argmax(-1)  # (M, 6)
    expected = np.zeros((6, 3))
    for j in range(M):
        expected[np.arange(6), greedy[j]] += 1 / M
    assert np.any(expected.max(1) < 1)  # some contexts where the members disagree
    assert_allclose(pol.predict_action_proba(contexts), expected, atol=1e-12)
    reps = 3000
    chosen = pol.select(np.repeat(contexts, reps, axis=0)).reshape(6, reps)
    assert np.all((greedy[:, :, None] == chosen[None]).any(axis=0))
    freq = np.stack([(chosen == k).mean(1) for k in range(3)], axis=1)
    # 3000 draws: sd at most 0.0092; 0.04 is over 4 sd.
    assert_allclose(freq, expected, atol=0.04)


def test_action_proba_respects_masks():
    X, a, r = _data(n=30)
    pol = NeuralBootstrap(n_actions=3, n_models=4, random_state=0, **TINY).fit(X, a, r)
    mask = np.ones((30, 3), bool)
    mask[::2, 0] = False
    mask[1::3, 2] = False
    proba = pol.predict_action_proba(X, action_mask=mask)
    with torch.no_grad():
        scores = [
            m(torch.as_tensor(X, dtype=torch.float32)).numpy() for m in _members(pol)
        ]
    expected = np.mean([greedy_proba(s.astype(float), mask) for s in scores], axis=0)
    assert_allclose(proba, expected, atol=1e-12)
    assert np.all(proba[~mask] == 0)
    chosen = pol.select(X, action_mask=mask)
    assert mask[np.arange(30), chosen].all()


# ------------------------------------------------------------------ schedule
@pytest.mark.parametrize("train_every, expected", [(1, 10), (3, 3), (4, 2), (11, 0)])
def test_train_every_skips_trainings(monkeypatch, train_every, expected):
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
        before = _flat(pol.net_.module_)
        pol.partial_fit(X[t : t + 1], a[t : t + 1], r[t : t + 1])
        due = (t + 1) % train_every == 0
        assert torch.equal(_flat(pol.net_.module_), before) != due, t  # moved then
    assert len(calls) == expected == pol.n_trainings_
    # Every training runs on all the rows kept so far.
    assert calls == [t for t in range(1, 11) if t % train_every == 0]
    assert_array_equal(pol.kept_counts_, [10, 10])


def test_train_every_counts_rounds_of_batches(monkeypatch):
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
        assert len(calls) == due
        calls.clear()
    assert pol.n_trainings_ == 3


def test_member_without_kept_rows_stays_at_theta0():
    X, a, r = _data(n=6)
    pol = NeuralBootstrap(
        n_actions=3, n_models=4, bootstrap_prob=0.0, random_state=0, **TINY, **SCHEDULE
    ).fit(X, a, r)
    assert pol.n_trainings_ == 1
    assert_array_equal(pol.kept_counts_, 0)
    assert_array_equal(pol._core.buffer.weights, np.zeros((6, 4)))
    # No data, and the penalty is centred at theta_0: nothing moves.
    assert_array_equal(_flat(pol.net_.module_).numpy(), pol.theta0_)


def test_max_train_rounds_freezes_networks(monkeypatch):
    X, a, r = _data(n=30)
    pol = NeuralBootstrap(
        n_actions=3,
        n_models=3,
        bootstrap_prob=1.0,
        max_train_rounds=5,
        random_state=0,
        **TINY,
        **SCHEDULE,
    )
    pol.fit(X[:3], a[:3], r[:3]).partial_fit(X[3:7], a[3:7], r[3:7])
    # Only rounds 4 and 5 of the second batch were learnt.
    assert_array_equal(pol.kept_counts_, [5, 5, 5])
    assert_allclose(pol._core.buffer.X, X[:5].astype(np.float32))
    frozen = _flat(pol.net_.module_)
    scores, trainings = pol.predict_scores(X), pol.n_trainings_
    rng_state = pol._rng.bit_generator.state
    calls = _count_trainings(monkeypatch)
    for start in range(7, 30, 4):
        pol.partial_fit(
            X[start : start + 4], a[start : start + 4], r[start : start + 4]
        )
    assert calls == []
    assert torch.equal(_flat(pol.net_.module_), frozen)
    assert_array_equal(pol.predict_scores(X), scores)
    assert pol.n_trainings_ == trainings == 2
    assert_array_equal(pol.kept_counts_, [5, 5, 5])
    assert len(pol._core.buffer) == 5
    assert pol.n_samples_seen_ == 30
    assert pol._rng.bit_generator.state == rng_state  # no keep masks drawn
    pol.select(X)  # still deciding


@pytest.mark.parametrize("train_every", [1, 8])
@pytest.mark.parametrize("prob", [0.5, 1.0])
def test_max_buffer_size_bounds_the_shared_buffer(train_every, prob):
    X, a, r = _data(n=40)
    pol = NeuralBootstrap(
        n_actions=3,
        n_models=3,
        bootstrap_prob=prob,
        max_buffer_size=4,
        train_every=train_every,
        random_state=0,
        # A member may keep one row of N(0, I) contexts: 0.05 diverges on it.
        **{**TINY, "learning_rate": 0.01},
    )
    start = 0
    for size in [1, 5, 2, 7, 1, 3, 6, 1, 2, 9, 3]:
        pol.partial_fit(
            X[start : start + size], a[start : start + size], r[start : start + size]
        )
        start += size
        buf = pol._core.buffer
        assert len(buf) == min(start, 4)
        assert buf.weights.shape == (len(buf), 3)
        assert_allclose(buf.X, X[start - len(buf) : start].astype(np.float32))
        assert_array_equal(buf.actions, a[start - len(buf) : start])
    assert start == 40
    # kept_counts_ counts every round kept, evicted or not.
    if prob == 1.0:
        assert_array_equal(pol.kept_counts_, [40, 40, 40])
    else:
        assert np.all(pol.kept_counts_ >= pol._core.buffer.weights.sum(0))
        assert np.all(pol.kept_counts_ > 4)


def test_set_params_reaches_the_networks():
    X, a, r = _data(n=10)
    pol = NeuralBootstrap(n_actions=3, n_models=2, random_state=0, **TINY, **SCHEDULE)
    pol.fit(X[:5], a[:5], r[:5])
    pol.set_params(learning_rate=0.0, n_steps=7)
    theta = _flat(pol.net_.module_)
    pol.partial_fit(X[5:], a[5:], r[5:])
    assert pol.n_trainings_ == 2
    assert torch.equal(_flat(pol.net_.module_), theta)  # a zero step moves nothing
    pol.set_params(learning_rate=0.05)
    pol.partial_fit(X[5:], a[5:], r[5:])
    assert not torch.equal(_flat(pol.net_.module_), theta)


def test_no_custom_module_is_offered():
    params = NeuralBootstrap().get_params()
    assert "module" not in params and "net" not in params
    with pytest.raises(TypeError):
        NeuralBootstrap(module=torch.nn.Linear(3, 3))


# ------------------------------------------------------------------ failures
def _snapshot(pol):
    buf = pol._core.buffer
    return dict(
        theta=_flat(pol.net_.module_),
        buffer=[x.copy() for x in (buf.X, buf.actions, buf.targets, buf.weights)],
        kept=pol.kept_counts_.copy(),
        rng=pol._rng.bit_generator.state,
        train_rng=pol._core.train_rng.bit_generator.state,
        trainings=pol.n_trainings_,
        seen=pol.n_samples_seen_,
    )


def _assert_same(pol, snap):
    now = _snapshot(pol)
    assert torch.equal(now["theta"], snap["theta"])
    for got, want in zip(now["buffer"], snap["buffer"], strict=True):
        assert_array_equal(got, want)
    assert_array_equal(now["kept"], snap["kept"])
    assert now["rng"] == snap["rng"]
    assert now["train_rng"] == snap["train_rng"]
    assert (now["trainings"], now["seen"]) == (snap["trainings"], snap["seen"])


@pytest.mark.parametrize("batch_size", [None, 2])
def test_numerical_error_in_training_leaves_everything_unchanged(batch_size):
    X, a, r = _data(n=12)
    params = dict(n_actions=3, n_models=3, random_state=0, batch_size=batch_size)
    params.update(hidden_layer_sizes=(6,), n_steps=3, learning_rate=0.01)
    params.update(train_every=1, max_buffer_size=None)
    pol = NeuralBootstrap(**params).partial_fit(X[:6], a[:6], r[:6])
    twin = NeuralBootstrap(**params).partial_fit(X[:6], a[:6], r[:6])
    snap = _snapshot(pol)
    pol.set_params(learning_rate=1e20, reduction="sum")
    with pytest.raises(NumericalError):
        pol.partial_fit(X[6:9], a[6:9], r[6:9])
    _assert_same(pol, snap)
    pol.set_params(learning_rate=0.01, reduction="mean")
    for policy in (pol, twin):
        policy.partial_fit(X[6:], a[6:], r[6:])
    assert torch.equal(_flat(pol.net_.module_), _flat(twin.net_.module_))
    assert_array_equal(pol.kept_counts_, twin.kept_counts_)
    assert_array_equal(pol.select(X), twin.select(X))


def test_failure_after_training_leaves_everything_unchanged(monkeypatch):
    X, a, r = _data(n=9)
    params = {"n_actions": 3, "n_models": 2, "train_every": 3, "random_state": 0}
    pol = NeuralBootstrap(**params, **TINY).partial_fit(X[:2], a[:2], r[:2])
    twin = NeuralBootstrap(**params, **TINY).partial_fit(X[:2], a[:2], r[:2])
    snap = _snapshot(pol)
    real = core_module.ensemble_gradient_descent
    seen = {}

    def train_then_fail(module, *args, **kwargs):
        real(module, *args, **kwargs)
        seen["theta"] = _flat(module)
        raise RuntimeError("boom")

    monkeypatch.setattr(core_module, "ensemble_gradient_descent", train_then_fail)
    with pytest.raises(RuntimeError):
        pol.partial_fit(X[2:3], a[2:3], r[2:3])  # round 3 trains, and fails
    monkeypatch.undo()
    assert not torch.equal(seen["theta"], snap["theta"])
    _assert_same(pol, snap)
    for policy in (pol, twin):
        policy.partial_fit(X[2:9], a[2:9], r[2:9])
    assert_array_equal(pol.predict_scores(X), twin.predict_scores(X))
    assert_array_equal(pol.select(X), twin.select(X))
