"""The network core: rollback, the logistic loss, the tangent precision, the replay
buffer and the training schedule, each against an independent derivation."""
# SPDX-License-Identifier: BSD-3-Clause

import copy
import re
import warnings

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning
from skorch import NeuralNetRegressor

import skbandit.networks._core as core_module
import skbandit.networks._training as training
from skbandit.exceptions import NumericalError
from skbandit.networks import (
    BanditMLP,
    LogisticLoss,
    TangentPrecision,
    initialize_net,
    make_bandit_net,
    tangent_features_autograd,
)
from skbandit.networks._core import NetworkCore, ReplayBuffer, TrainingSettings
from skbandit.networks._training import get_flat_parameters, proximal_gradient_descent
from skbandit.policies import NeuralEpsilonGreedy, NeuralTS

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _data(n=20, d=3, K=3, seed=0):
    rng = np.random.RandomState(seed)
    return rng.normal(size=(n, d)), rng.randint(K, size=n), rng.normal(size=n)


class _Small(torch.nn.Module):
    """A custom network (the module contract: every arm's score, shape (n, K))."""

    def __init__(self, n_features, n_actions, hidden=5):
        super().__init__()
        self.body = torch.nn.Linear(n_features, hidden)
        self.out = torch.nn.Linear(hidden, n_actions)

    def forward(self, X):
        return self.out(torch.relu(self.body(X)))


def _flat(module):
    return get_flat_parameters(module).clone()


def _assert_state_dicts_equal(got, want):
    """Optimizer state dicts equal, tensor by tensor."""
    assert got["param_groups"] == want["param_groups"]
    assert got["state"].keys() == want["state"].keys()
    for key, state in want["state"].items():
        assert state.keys() == got["state"][key].keys()
        for name, value in state.items():
            other = got["state"][key][name]
            if isinstance(value, torch.Tensor):
                assert torch.equal(other, value), (key, name)
            else:
                assert other == value, (key, name)


def _state_dicts_differ(a, b):
    try:
        _assert_state_dicts_equal(a, b)
    except AssertionError:
        return True
    return False


# ------------------------------------------------------------------- rollback
@pytest.mark.parametrize("failure", ["hook", "diverge"])
def test_failed_update_restores_parameters_and_optimizer_state(monkeypatch, failure):
    X, a, r = _data(n=30)
    kw = dict(
        n_actions=3,
        n_steps=4,
        learning_rate=0.01,
        reduction="sum",
        random_state=0,
    )

    def make():
        net = NeuralNetRegressor(module=_Small, optimizer=torch.optim.Adam)
        return NeuralTS(net=net, **kw).fit(X[:10], a[:10], r[:10])

    pol, twin = make(), make()
    optimizer = pol.net_.optimizer_
    assert isinstance(optimizer, torch.optim.Adam) and optimizer.state  # has state
    theta = _flat(pol.net_.module_)
    state = copy.deepcopy(optimizer.state_dict())
    seen = {}

    if failure == "hook":  # U's update runs after training (NeuralTS): then raises

        def boom(*args, **kwargs):
            seen["theta"] = _flat(pol.net_.module_)
            seen["state"] = copy.deepcopy(pol.net_.optimizer_.state_dict())
            raise RuntimeError("boom")

        monkeypatch.setattr(TangentPrecision, "increment", boom)
        error = RuntimeError
    else:  # an overflowing reward: the objective is not finite after the steps
        r = r.copy()
        r[15] = 1e30
        error = NumericalError
    with pytest.raises(error):
        pol.partial_fit(X[10:20], a[10:20], r[10:20])
    monkeypatch.undo()
    if failure == "hook":  # the failed training did move both: the check can fail
        assert not torch.equal(seen["theta"], theta)
        assert _state_dicts_differ(seen["state"], state)
    assert torch.equal(_flat(pol.net_.module_), theta)
    _assert_state_dicts_equal(pol.net_.optimizer_.state_dict(), state)
    assert len(pol._core.buffer) == 10 and pol.n_samples_seen_ == 10
    # The next update continues as if the failure had never happened.
    r[15] = 0.0
    for policy in (pol, twin):
        policy.partial_fit(X[10:], a[10:], r[10:])
    assert torch.equal(_flat(pol.net_.module_), _flat(twin.net_.module_))
    _assert_state_dicts_equal(
        pol.net_.optimizer_.state_dict(), twin.net_.optimizer_.state_dict()
    )
    assert_array_equal(pol.predict_scores(X), twin.predict_scores(X))


def test_diverged_training_is_redone_at_half_the_step(monkeypatch):
    # Rows of norm ~13 make 20 steps at learning_rate=0.02 diverge (checked with no
    # retry); the core redoes the training from its start at half the step until it
    # is stable, and says so: the result is exactly a direct run at that step.
    rng = np.random.RandomState(0)
    X, r, a = 6 * rng.normal(size=(12, 5)), rng.rand(12), np.arange(12) % 3
    kw = dict(n_actions=3, hidden_layer_sizes=(8,), n_steps=20, random_state=0)
    kw["standardize"] = False  # standardised, these rows train without trouble
    monkeypatch.setattr(core_module, "DIVERGENCE_RETRIES", 0)
    with pytest.raises(NumericalError, match="diverged"):
        NeuralEpsilonGreedy(learning_rate=0.02, **kw).fit(X, a, r)
    monkeypatch.undo()
    with pytest.warns(ConvergenceWarning, match="was redone at") as record:
        policy = NeuralEpsilonGreedy(learning_rate=0.02, **kw).fit(X, a, r)
    rate = float(re.search(r"redone at ([0-9.e-]+);", str(record[0].message))[1])
    assert rate < 0.02
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the direct run at that step is stable
        direct = NeuralEpsilonGreedy(learning_rate=rate, **kw).fit(X, a, r)
    assert torch.equal(_flat(policy.net_.module_), _flat(direct.net_.module_))
    assert policy.get_params()["learning_rate"] == 0.02  # the next training: 0.02


@pytest.mark.parametrize("seed", range(4))
def test_a_mini_batch_fitted_already_is_not_read_as_divergence(seed):
    # Rewards equal to the network's own outputs except three rows raised by 10: a
    # first mini-batch of 4 rows misses those three with probability 0.94 and starts
    # at an objective of 0 (the penalty is 0 at theta0). Gradient descent at a small
    # stable step then ends at the full objective ~3 * 10**2 / 2 / 200 = 0.75, a
    # "thousandfold rise" from one batch's 0 though nothing diverged (the test
    # compared those two before the start was taken over every row: 10 of 10 seeds
    # raised). The start and the end are now the same rows' objective.
    small_step = dict(hidden_layer_sizes=(8,), disjoint=True, learning_rate=0.01)
    spec = make_bandit_net(4, 2, **small_step)
    net = initialize_net(spec, seed=seed)
    theta0 = [p.detach().clone() for p in net.module_.parameters()]
    X = torch.randn(200, 4, generator=torch.Generator().manual_seed(seed))
    actions = torch.arange(200) % 2
    with torch.no_grad():
        rewards = net.module_(X)[torch.arange(200), actions].clone()
    rewards[:3] += 10.0
    before = proximal_gradient_descent(
        net, X, actions, rewards, None, theta0, alpha=1.0, n_steps=0
    )
    after = proximal_gradient_descent(
        net, X, actions, rewards, None, theta0, alpha=1.0, n_steps=5,
        batch_size=4, rng=np.random.default_rng(seed),
    )  # fmt: skip
    assert 0.7 < before < 0.8  # the whole objective at theta0: 300 / 2 / 200
    assert after < 1.1 * before  # five small steps on 4-row batches: no blow-up


def test_failed_update_restores_the_minibatch_rng(monkeypatch):
    X, a, r = _data(n=40)
    kw = dict(
        n_actions=3,
        hidden_layer_sizes=(6,),
        n_steps=5,
        learning_rate=0.05,
        batch_size=4,
        epsilon=0.0,
        random_state=0,
    )
    pol = NeuralEpsilonGreedy(**kw).fit(X[:12], a[:12], r[:12])
    twin = NeuralEpsilonGreedy(**kw).fit(X[:12], a[:12], r[:12])
    rng_state = pol._core.train_rng.bit_generator.state
    theta = _flat(pol.net_.module_)
    real = core_module.proximal_gradient_descent
    seen = {}

    def train_then_fail(*args, **kwargs):
        real(*args, **kwargs)  # draws the mini-batches and moves the parameters
        seen["rng"] = pol._core.train_rng.bit_generator.state
        raise NumericalError("failed after the steps")

    monkeypatch.setattr(core_module, "proximal_gradient_descent", train_then_fail)
    with pytest.raises(NumericalError):
        pol.partial_fit(X[12:20], a[12:20], r[12:20])
    monkeypatch.undo()
    assert seen["rng"] != rng_state  # the failed training did draw batches
    assert pol._core.train_rng.bit_generator.state == rng_state
    assert torch.equal(_flat(pol.net_.module_), theta)
    for policy in (pol, twin):
        policy.partial_fit(X[12:20], a[12:20], r[12:20])
        policy.partial_fit(X[20:], a[20:], r[20:])
    assert torch.equal(_flat(pol.net_.module_), _flat(twin.net_.module_))
    assert (
        pol._core.train_rng.bit_generator.state
        == twin._core.train_rng.bit_generator.state
    )


def test_core_update_commits_only_on_success():
    d, K, n = 3, 2, 6
    net = initialize_net(make_bandit_net(d, K, hidden_layer_sizes=(4,)), 0)
    core = NetworkCore(net, n_features=d, per_arm=False, train_seed=0)
    settings = TrainingSettings(
        alpha=1.0,
        learning_rate=0.1,
        n_steps=3,
        batch_size=2,
        reduction="mean",
        warm_start=True,
        train_every=1,
        max_train_rounds=None,
        max_buffer_size=None,
    )
    rng = np.random.RandomState(0)
    rows = (
        rng.normal(size=(n, d)).astype(np.float32),
        rng.randint(K, size=n),
        rng.normal(size=n).astype(np.float32),
        np.ones(n, np.float32),
    )
    theta0 = _flat(net.module_)
    rng_state = core.train_rng.bit_generator.state

    def boom(buffer):
        assert len(buffer) == n  # the grown buffer, not yet committed
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        core.update(rows, n_seen=0, n_rounds=n, settings=settings, after=boom)
    assert len(core.buffer) == 0 and core.n_trainings == 0
    assert torch.equal(_flat(net.module_), theta0)
    assert core.train_rng.bit_generator.state == rng_state
    first, second, trained = core.update(
        rows,
        n_seen=0,
        n_rounds=n,
        settings=settings,
        before=lambda: "before",
        after=lambda buffer: len(buffer),
    )
    assert (first, second, trained) == ("before", n, True)
    assert len(core.buffer) == n and core.n_trainings == 1
    assert not torch.equal(_flat(net.module_), theta0)


def test_learning_rate_changed_before_a_failed_update_takes_effect(monkeypatch):
    # Regression: the rollback restored the optimizer's old lr while net.lr kept
    # the new one, so later trainings skipped the update and kept the old lr.
    X, a, r = _data(n=30)
    kw = dict(n_actions=3, hidden_layer_sizes=(6,), n_steps=3, random_state=0)
    pol = NeuralTS(learning_rate=0.05, **kw).fit(X[:10], a[:10], r[:10])
    twin = NeuralTS(learning_rate=0.05, **kw).fit(X[:10], a[:10], r[:10])
    for policy in (pol, twin):
        policy.set_params(learning_rate=0.01)

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(TangentPrecision, "increment", boom)
    with pytest.raises(RuntimeError):
        pol.partial_fit(X[10:12], a[10:12], r[10:12])
    monkeypatch.undo()
    for policy in (pol, twin):
        policy.partial_fit(X[10:], a[10:], r[10:])
    assert pol.net_.optimizer_.param_groups[0]["lr"] == 0.01
    assert torch.equal(_flat(pol.net_.module_), _flat(twin.net_.module_))


def test_changing_learning_rate_keeps_the_optimizer_state():
    # Regression: net.set_params(lr=..., criterion__reduction=...) re-initialised
    # the optimizer, losing Adam's moments and step counts.
    X, a, r = _data(n=30)
    net = NeuralNetRegressor(module=_Small, optimizer=torch.optim.Adam)
    pol = NeuralEpsilonGreedy(
        n_actions=3, net=net, n_steps=4, learning_rate=0.01, random_state=0
    ).fit(X[:10], a[:10], r[:10])
    steps = [float(s["step"]) for s in pol.net_.optimizer_.state.values()]
    assert steps == [4.0] * 4
    pol.set_params(learning_rate=0.02)
    pol.partial_fit(X[10:20], a[10:20], r[10:20])
    assert pol.net_.optimizer_.param_groups[0]["lr"] == 0.02
    steps = [float(s["step"]) for s in pol.net_.optimizer_.state.values()]
    assert steps == [8.0] * 4
    pol.set_params(reduction="sum")
    pol.partial_fit(X[20:], a[20:], r[20:])
    assert pol.net_.criterion_.reduction == "sum"
    steps = [float(s["step"]) for s in pol.net_.optimizer_.state.values()]
    assert steps == [12.0] * 4


# -------------------------------------------------------------- logistic loss
def _own_scores(params, module, X, actions):
    """``f(x_i)`` of the pulled arms, the disjoint encoding built densely."""
    K, d = module.n_actions, module.n_features
    if module.disjoint:
        Z = X.new_zeros(X.shape[0], K * d)
        for i, k in enumerate(actions.tolist()):
            Z[i, k * d : (k + 1) * d] = X[i]
    else:
        Z = X
    weights = [params[f"layers.{i}.weight"] for i in range(len(module.layers))]
    h = Z
    for W in weights[:-1]:
        h = torch.relu(h @ W.T)
    return (h @ weights[-1].T)[:, 0] * module.scale


@pytest.mark.parametrize("hand", [True, False])
@pytest.mark.parametrize("disjoint", [True, False])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_logistic_step_is_autograd_gradient_of_bce(
    monkeypatch, hand, disjoint, reduction, weighted
):
    d, K, n, alpha, lr = 4, 3, 12, 0.3, 0.05
    net = make_bandit_net(
        d,
        K,
        hidden_layer_sizes=(6, 4),
        disjoint=disjoint,
        loss="logistic",
        reduction=reduction,
        learning_rate=lr,
    )
    net = initialize_net(net, 0)
    net.module_.double()
    net.initialize_optimizer()
    assert isinstance(net.criterion_, LogisticLoss)
    assert training._hand_gradient_applies(net.module_, net.optimizer_, net.criterion_)
    if not hand:
        monkeypatch.setattr(training, "_hand_gradient_applies", lambda *_: False)
    module = net.module_
    theta0 = [q.detach().clone() for q in module.parameters()]
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():  # away from theta_0, so that the penalty acts
        for q in module.parameters():
            q.add_(0.3 * torch.randn(q.shape, generator=gen, dtype=q.dtype))
    X = torch.randn(n, d, generator=gen, dtype=torch.float64)
    if not disjoint:
        X = torch.randn(n, K, d, generator=gen, dtype=torch.float64)
    actions = torch.randint(K, (n,), generator=gen)
    targets = torch.rand(n, generator=gen, dtype=torch.float64)  # soft labels
    w = torch.rand(n, generator=gen, dtype=torch.float64) * 2 if weighted else None

    names = [name for name, _ in module.named_parameters()]

    def objective(params):
        Xp = X if disjoint else X[torch.arange(n), actions]
        f = _own_scores(params, module, Xp, actions)
        bce = torch.nn.functional.binary_cross_entropy_with_logits(
            f, targets, reduction="none"
        )
        ww = torch.ones(n, dtype=torch.float64) if w is None else w
        penalty = sum(
            ((params[k] - t0) ** 2).sum() for k, t0 in zip(names, theta0, strict=True)
        )
        total = (ww * bce).sum() + module.scale**2 * alpha * penalty / 2
        return total / ww.sum() if reduction == "mean" else total

    start = {
        k: v.detach().clone().requires_grad_() for k, v in module.named_parameters()
    }
    grads = torch.autograd.grad(objective(start), [start[k] for k in names])
    expected = torch.cat(
        [
            (start[k] - lr * g).detach().reshape(-1)
            for k, g in zip(names, grads, strict=True)
        ]
    )
    returned = proximal_gradient_descent(
        net, X, actions, targets, w, theta0, alpha=alpha, n_steps=1
    )
    got = get_flat_parameters(module)
    assert (
        float(
            (got - torch.cat([v.detach().reshape(-1) for v in start.values()]))
            .abs()
            .max()
        )
        > 1e-3
    )
    assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)
    after = {k: v.detach() for k, v in module.named_parameters()}
    assert_allclose(returned, float(objective(after)), rtol=1e-10)


def _descend_by_autograd(module, X, actions, targets, centre, *, alpha, lr, steps,
                         loss):  # fmt: skip
    """``steps`` gradient steps, float64 autograd, on the explicit mean objective
    ``sum_i l(f_i, r_i) / n + scale^2 alpha ||theta - centre||^2 / (2 n)``."""
    names = [name for name, _ in module.named_parameters()]
    params = {k: v.detach().double().clone() for k, v in module.named_parameters()}
    n = X.shape[0]
    for _ in range(steps):
        params = {k: v.requires_grad_() for k, v in params.items()}
        f = _own_scores(params, module, X.double(), actions)
        if loss == "logistic":
            data = torch.nn.functional.binary_cross_entropy_with_logits(
                f, targets.double(), reduction="sum"
            )
        else:
            data = ((f - targets.double()) ** 2).sum() / 2
        penalty = sum(((params[k] - c.double()) ** 2).sum() for k, c in centre.items())
        total = (data + module.scale**2 * alpha * penalty / 2) / n
        grads = torch.autograd.grad(total, [params[k] for k in names])
        params = {
            k: (params[k] - lr * g).detach() for k, g in zip(names, grads, strict=True)
        }
    return torch.cat([params[k].reshape(-1) for k in names])


@pytest.mark.parametrize(
    "loss, mirrored",
    # squared + mirrored: the CPU's tiled steps on the half-width sum (the
    # penalty's closed form on the difference); logistic: the general hand step
    [("squared", False), ("squared", True), ("logistic", False)],
)
@pytest.mark.parametrize("centre", ["init", "zero"])
@pytest.mark.parametrize("warm_start", [True, False])
def test_penalty_centre_is_autograd_descent_of_the_explicit_objective(
    loss, mirrored, centre, warm_start
):
    """``penalty_center="zero"`` is weight decay towards the origin: the core's
    steps are those of autograd on the objective written out with ``c = 0``."""
    d, K, n, alpha, lr, steps = 4, 3, 10, 2.0, 0.02, 6
    net = make_bandit_net(
        2 * d if mirrored else d, K, hidden_layer_sizes=(6,), disjoint=True,
        loss=loss, learning_rate=lr,
    )  # fmt: skip
    net = initialize_net(net, 0)
    core = NetworkCore(net, n_features=net.module_.n_features, per_arm=False,
                       train_seed=0)  # fmt: skip
    module = net.module_
    rng = np.random.RandomState(1)
    X = rng.normal(size=(n, d)).astype(np.float32)
    if mirrored:
        X = np.hstack([X, X]) / np.float32(np.sqrt(2))
    actions = rng.randint(K, size=n)
    targets = rng.uniform(size=n).astype(np.float32)  # soft labels for the BCE
    theta0 = {k: v.detach().clone() for k, v in module.named_parameters()}
    if warm_start:  # start away from theta_0, so that the two centres differ
        with torch.no_grad():
            for q in module.parameters():
                q.add_(0.3 * torch.randn(q.shape, generator=torch.Generator()
                                         .manual_seed(2)))  # fmt: skip
    start = copy.deepcopy(module)
    settings = TrainingSettings(
        alpha, lr, steps, None, "mean", warm_start, 1, None, None, centre
    )
    core.update((X, actions, targets, np.ones(n, np.float32)), n_seen=0,
                n_rounds=n, settings=settings)  # fmt: skip
    if not warm_start:  # the restart starts at theta_0 whatever the centre
        with torch.no_grad():
            for (_, q), t0 in zip(start.named_parameters(), theta0.values(),
                                  strict=True):  # fmt: skip
                q.copy_(t0)
    centres = theta0 if centre == "init" else {k: 0 * v for k, v in theta0.items()}
    Xt, at, rt = torch.as_tensor(X), torch.as_tensor(actions), torch.as_tensor(targets)
    expected = _descend_by_autograd(
        start, Xt, at, rt, centres, alpha=alpha, lr=lr, steps=steps, loss=loss
    )
    other = _descend_by_autograd(
        start, Xt, at, rt,
        {k: v if centre == "zero" else 0 * v for k, v in theta0.items()},
        alpha=alpha, lr=lr, steps=steps, loss=loss,
    )  # fmt: skip
    got = get_flat_parameters(module).double()
    # float32 steps against float64: 6 steps of rounding on parameters of size
    # ~1 stay within 1e-5; the other centre moves them by more than 1e-3.
    assert_allclose(got.numpy(), expected.numpy(), rtol=0, atol=1e-5)
    assert float((other - expected).abs().max()) > 1e-3


# ------------------------------------------------------------- tangent precision
def _precision_data(per_arm, n=7, d=3, K=3, seed=0, dtype=torch.float64, widths=(4, 4)):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    module = BanditMLP(d, K, hidden_layer_sizes=widths, disjoint=not per_arm)
    module = module.to(dtype)
    X = torch.randn((n, K, d) if per_arm else (n, d), generator=gen, dtype=dtype)
    actions = torch.randint(K, (n,), generator=gen)
    return module, X, actions


def _independent_phi(module, X, actions):
    """The pulled arms' tangent features by ``torch.func``, float64 numpy."""
    _, phi = tangent_features_autograd(module, X)
    return phi[torch.arange(X.shape[0]), actions].double().numpy()


@pytest.mark.parametrize("per_arm", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_full_precision_is_the_inverse_of_the_weighted_sum(per_arm, weighted):
    module, X, actions = _precision_data(per_arm)
    p, alpha = sum(q.numel() for q in module.parameters()), 0.7
    w = torch.tensor([0.5, 2.0, 0.0, 1.0, 3.0, 0.25, 1.5], dtype=torch.float64)
    w = w if weighted else None
    U = TangentPrecision(p, alpha, kind="full")
    # Two updates: one of 3 rows, one of 4 (a rank-3 and a rank-4 update).
    U = U.updated(module, X[:3], actions[:3], None if w is None else w[:3])
    U = U.updated(module, X[3:], actions[3:], None if w is None else w[3:])
    phi = _independent_phi(module, X, actions)
    ww = np.ones(7) if w is None else w.numpy()
    expected = np.linalg.inv(alpha * np.eye(p) + (phi * ww[:, None]).T @ phi)
    assert_allclose(U.covariance, expected, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("per_arm", [False, True])
def test_diag_precision_is_alpha_plus_weighted_squares(per_arm):
    module, X, actions = _precision_data(per_arm)
    p, alpha = sum(q.numel() for q in module.parameters()), 0.7
    w = torch.tensor([0.5, 2.0, 0.0, 1.0, 3.0, 0.25, 1.5], dtype=torch.float64)
    U = TangentPrecision(p, alpha).updated(module, X, actions, w)
    phi = _independent_phi(module, X, actions)
    diag = alpha + (w.numpy()[:, None] * phi**2).sum(0)
    assert_allclose(1.0 / U.covariance, diag, rtol=1e-10)
    assert_allclose(U.covariance, 1.0 / diag, rtol=1e-10)


@pytest.mark.parametrize("init", ["ntk", "default"])  # without and with biases
@pytest.mark.parametrize("weighted", [False, True])
def test_one_row_increment_is_written_in_place_when_applied(init, weighted):
    # The online round's diagonal increment (one pulled arm, one hidden layer, in
    # closed form) against torch.func's features; nothing is written until the
    # increment is applied, and the float32 1/U kept for select follows. float32,
    # as select keeps 1/U: both sides' features round alike to ~1e-7, relative.
    gen = torch.Generator().manual_seed(3)
    torch.manual_seed(3)
    module = BanditMLP(3, 4, hidden_layer_sizes=(6,), init=init, disjoint=True)
    p, alpha = sum(q.numel() for q in module.parameters()), 0.7
    U = TangentPrecision(p, alpha)
    U.quadratic(module, torch.randn(2, 3))  # keeps 1/U
    diag = np.full(p, alpha)
    for step in range(3):
        x = torch.randn(1, 3, generator=gen)
        arm = torch.tensor([2 * step % 4])
        w = torch.tensor([0.5 + step]) if weighted else None
        before = U.covariance.copy()
        apply = U.increment(module, x, arm, w)
        assert_array_equal(U.covariance, before)  # not written yet
        apply()
        phi = _independent_phi(module, x, arm)[0]
        diag = diag + (1.0 if w is None else w.item()) * phi**2
        # U keeps float32 covariances: 1 / U against the float64 sum is off by a
        # few units in float32's last place (5.4e-7 relative measured).
        assert_allclose(1.0 / U.covariance, diag, rtol=1e-5)
        kept = U._device_tensor(torch.device("cpu")).numpy()
        assert_array_equal(kept, U.covariance.astype(np.float32))


@pytest.mark.parametrize("kind", ["diag", "full"])
def test_zero_weight_skips_a_row_and_k_arms_are_one_update(kind):
    module, X, actions = _precision_data(per_arm=True, n=6)
    p = sum(q.numel() for q in module.parameters())
    w = torch.tensor([1.0, 0.0, 2.0, 0.0, 0.5, 1.0], dtype=torch.float64)
    keep = w > 0
    with_zeros = TangentPrecision(p, 0.5, kind).updated(module, X, actions, w)
    without = TangentPrecision(p, 0.5, kind).updated(
        module, X[keep], actions[keep], w[keep]
    )
    assert_allclose(with_zeros.covariance, without.covariance, rtol=1e-10, atol=1e-12)
    # k = 3 chosen arms of one round: one update with those 3 rows.
    x = X[:1]
    chosen = torch.tensor([0, 2, 1])
    slate = TangentPrecision(p, 0.5, kind).updated(module, x.expand(3, -1, -1), chosen)
    phi = _independent_phi(module, x.expand(3, -1, -1), chosen)
    if kind == "full":
        expected = np.linalg.inv(0.5 * np.eye(p) + phi.T @ phi)
    else:
        expected = 1.0 / (0.5 + (phi**2).sum(0))
    assert_allclose(slate.covariance, expected, rtol=1e-8, atol=1e-10)
    # One arm at a time gives the same U.
    one_by_one = TangentPrecision(p, 0.5, kind)
    for k in chosen.tolist():
        one_by_one = one_by_one.updated(module, x, torch.tensor([k]))
    assert_allclose(one_by_one.covariance, slate.covariance, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("kind", ["diag", "full"])
def test_updated_returns_a_new_object_and_leaves_the_old_one(kind):
    module, X, actions = _precision_data(per_arm=False)
    p = sum(q.numel() for q in module.parameters())
    U = TangentPrecision(p, 2.0, kind)
    before = U.covariance.copy()
    new = U.updated(module, X, actions)
    assert new is not U
    assert_array_equal(U.covariance, before)
    expected = np.eye(p) / 2.0 if kind == "full" else np.full(p, 0.5)
    assert_array_equal(U.covariance, expected)
    assert not np.allclose(new.covariance, before)


@pytest.mark.parametrize("kind", ["diag", "full"])
@pytest.mark.parametrize("per_arm", [False, True])
def test_quadratic_is_phi_u_inverse_phi(kind, per_arm):
    module, X, actions = _precision_data(per_arm, dtype=torch.float32, widths=(16,))
    p = sum(q.numel() for q in module.parameters())
    U = TangentPrecision(p, 0.8, kind).updated(module, X, actions)
    f, q = U.quadratic(module, X)
    f_ref, phi = tangent_features_autograd(module, X)
    phi = phi.double().numpy()  # (n, K, p)
    inverse = U.covariance if kind == "full" else np.diag(U.covariance)
    expected = np.einsum("nkp,pq,nkq->nk", phi, inverse, phi)
    assert_allclose(f.numpy(), f_ref.numpy(), rtol=1e-5, atol=1e-6)
    assert_allclose(q.numpy(), expected, rtol=1e-4, atol=1e-7)
    assert expected.min() > 1e-3  # every arm has some uncertainty


# ---------------------------------------------------------------- replay buffer
def test_replay_buffer_extended_keeps_the_last_max_size_rows():
    buf = ReplayBuffer.empty(2)
    assert len(buf) == 0
    rows = np.arange(20, dtype=np.float32).reshape(10, 2)
    grown = buf.extended(rows[:3], np.arange(3), np.arange(3) * 1.0, np.ones(3))
    assert len(buf) == 0 and len(grown) == 3  # immutable: a new buffer
    grown = grown.extended(
        rows[3:], np.arange(3, 10), np.arange(3, 10) * 1.0, np.ones(7), max_size=4
    )
    assert_array_equal(grown.X, rows[-4:])
    assert_array_equal(grown.actions, np.arange(6, 10))
    assert_array_equal(grown.targets, np.arange(6, 10))
    assert grown.X.dtype == np.float32
    assert_array_equal(grown.tail(2).actions, [8, 9])
    assert_array_equal(grown.head(1).actions, [6])


def test_replay_buffer_per_member_columns():
    M = 3
    buf = ReplayBuffer.empty(2)
    rng = np.random.RandomState(0)
    X = rng.normal(size=(7, 2))
    targets = rng.normal(size=(7, M))
    weights = (rng.random_sample((7, M)) < 0.5).astype(np.float32)
    buf = buf.extended(X[:4], np.arange(4), targets[:4], weights[:4], max_size=5)
    assert buf.weights.shape == (4, M) and buf.targets.shape == (4, M)
    buf = buf.extended(X[4:], np.arange(4, 7), targets[4:], weights[4:], max_size=5)
    assert buf.weights.shape == (5, M) and buf.targets.shape == (5, M)
    assert_allclose(buf.targets, targets[2:].astype(np.float32))
    assert_array_equal(buf.weights, weights[2:])
    assert_allclose(buf.X, X[2:].astype(np.float32))
    # Shared targets beside per-member weights (the bootstrap's layout).
    mixed = ReplayBuffer.empty(2).extended(X, np.arange(7), targets[:, 0], weights)
    assert mixed.targets.shape == (7,) and mixed.weights.shape == (7, M)


# --------------------------------------------------------------------- schedule
def _expected_trainings(batches, train_every, max_train_rounds):
    """Count by walking the rounds: a batch trains if one of the rounds it learns
    from is a multiple of ``train_every``."""
    seen, count = 0, 0
    for size in batches:
        rounds = range(seen + 1, seen + size + 1)
        learnt = [
            t for t in rounds if max_train_rounds is None or t <= max_train_rounds
        ]
        count += any(t % train_every == 0 for t in learnt)
        seen += size
    return count


@pytest.mark.parametrize(
    "train_every, max_train_rounds",
    [(1, None), (3, None), (4, 13), (5, 9), (1, 6), (50, None)],
)
def test_schedule_counts_trainings_over_a_stream(
    monkeypatch, train_every, max_train_rounds
):
    batches = [1, 2, 1, 5, 3, 1, 1, 4, 2, 6, 1, 3]
    n = sum(batches)
    X, a, r = _data(n=n)
    calls = []
    real = NetworkCore.train

    def counted(self, buffer, settings):
        calls.append(len(buffer))
        return real(self, buffer, settings)

    monkeypatch.setattr(NetworkCore, "train", counted)
    pol = NeuralEpsilonGreedy(
        n_actions=3,
        hidden_layer_sizes=(4,),
        n_steps=1,
        learning_rate=0.01,
        train_every=train_every,
        max_train_rounds=max_train_rounds,
        random_state=0,
    )
    start = 0
    for size in batches:
        pol.partial_fit(
            X[start : start + size], a[start : start + size], r[start : start + size]
        )
        start += size
    expected = _expected_trainings(batches, train_every, max_train_rounds)
    assert len(calls) == expected == pol.n_trainings_
    learnt = n if max_train_rounds is None else min(n, max_train_rounds)
    assert len(pol._core.buffer) == learnt
    assert pol.n_samples_seen_ == n
    assert all(size <= learnt for size in calls)


def test_kept_distances_and_centres_follow_in_place_writes():
    # ||theta - theta_0||^2 and the mirrored centre's halves are kept between
    # trainings; any in-place write (a step, a rollback's copy_) must renew them.
    from skbandit.networks._descent import _mirrored_centre

    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(4, 6)), torch.nn.Parameter(torch.randn(3))]
    theta0 = [torch.randn(4, 6), torch.randn(3)]

    # float32 sums of 27 squares in two orders: up to 27 units in the last place
    # (1.6e-6 relative), hence 1e-5; a stale kept value is off by the write itself.
    def fresh():
        pairs = zip(params, theta0, strict=True)
        return sum(float(((p.detach() - q) ** 2).sum()) for p, q in pairs)

    assert training._sq_distance(params, theta0) == pytest.approx(fresh(), rel=1e-5)
    with torch.no_grad():
        params[1].add_(1.0)
    assert training._sq_distance(params, theta0) == pytest.approx(fresh(), rel=1e-5)
    theta0[0].mul_(2.0)
    assert training._sq_distance(params, theta0) == pytest.approx(fresh(), rel=1e-5)
    W0 = torch.randn(2, 4, 3)
    S0, D0 = _mirrored_centre(W0, 2)
    assert torch.equal(S0, W0[:, :2] + W0[:, 2:])
    assert torch.equal(D0, W0[:, :2] - W0[:, 2:])
    W0[:, 0] += 1.0
    S0, D0 = _mirrored_centre(W0, 2)
    assert torch.equal(S0, W0[:, :2] + W0[:, 2:])
    assert torch.equal(D0, W0[:, :2] - W0[:, 2:])
