"""The stacked ensemble of the papers' network and its vectorised training."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose
from torch.nn import functional as F

from skbandit.exceptions import NumericalError
from skbandit.networks import BanditMLP, initialize_net, make_bandit_net
from skbandit.networks._ensemble import StackedBanditMLP, ensemble_gradient_descent
from skbandit.networks._training import get_flat_parameters, proximal_gradient_descent

pytestmark = pytest.mark.usefixtures("one_torch_thread")

D, K, N, M = 4, 3, 20, 3


def _flat(module, j):
    return get_flat_parameters(module.member(j))


def _contexts(kind, n=N, dtype=torch.float32):
    g = torch.Generator().manual_seed(7)
    shape = (n, K, D) if kind == "per-arm" else (n, D)
    return torch.randn(shape, generator=g, dtype=dtype)


def _actions(pattern, n=N):
    if pattern == "balanced":  # one tile per arm, in order: the identity fast path
        return torch.arange(n) % K
    # Arm 0 twice, the rest at random: unequal tiles, gathered and index-added.
    g = torch.Generator().manual_seed(3)
    return torch.cat(
        [torch.zeros(2), torch.randint(1, K, (n - 2,), generator=g)]
    ).long()


def _mirrored(shape):
    # [x; x] / (sqrt(2) ||x||): both halves equal, so f(x; theta_0) = 0.
    x = torch.randn(*shape[:-1], shape[-1] // 2, dtype=torch.float64)
    x = torch.cat([x, x], -1)
    return x / x.norm(dim=-1, keepdim=True)


@pytest.mark.parametrize("init", ["ntk", "default"])
@pytest.mark.parametrize("widths", [(6,), (6, 4)])
@pytest.mark.parametrize("kind", ["disjoint", "shared", "per-arm"])
def test_forward_equals_each_member(kind, widths, init):
    nets = []
    for seed in range(M):  # independently seeded networks
        torch.manual_seed(seed)
        nets.append(
            BanditMLP(
                D, K, hidden_layer_sizes=widths, init=init, disjoint=kind == "disjoint"
            )
        )
    stacked = StackedBanditMLP.from_members(nets)
    X = _contexts(kind)
    with torch.no_grad():
        scores = stacked(X)
        assert scores.shape == (M, N, K)
        # float32 forward passes through other product shapes (batched against
        # one network, a subset of the members against all): a few units in the
        # last place of scores near 1 (9.5e-7 measured); 1e-5 leaves 10 times that,
        # and a wrong member or row is off by the scores themselves.
        for j, net in enumerate(nets):
            assert_allclose(scores[j], net(X), rtol=1e-5, atol=1e-5)
            assert torch.equal(_flat(stacked, j), get_flat_parameters(net))
        assert_allclose(stacked(X, members=1)[0], scores[1], rtol=1e-5, atol=1e-5)
        assert_allclose(
            stacked(X, members=[2, 0]), scores[[2, 0]], rtol=1e-5, atol=1e-5
        )


@pytest.mark.parametrize("init", ["ntk", "default"])
def test_members_are_drawn_as_consecutive_bandit_mlps(init):
    config = dict(hidden_layer_sizes=(6, 4), init=init, disjoint=True)
    torch.manual_seed(11)
    stacked = StackedBanditMLP(D, K, M, **config)
    after_stack = torch.rand(1)
    torch.manual_seed(11)
    nets = [BanditMLP(D, K, **config) for _ in range(M)]
    assert torch.equal(torch.rand(1), after_stack)  # the same draws, no more
    for j, net in enumerate(nets):
        assert torch.equal(_flat(stacked, j), get_flat_parameters(net))
    assert stacked.scale == nets[0].scale


@pytest.mark.parametrize("kind", ["disjoint", "per-arm"])
def test_shared_init_gives_identical_members_zero_at_mirrored_inputs(kind):
    torch.manual_seed(0)
    disjoint = kind == "disjoint"
    config = dict(hidden_layer_sizes=(6, 8), disjoint=disjoint)
    shared = StackedBanditMLP(2 * D, K, 4, shared_init=True, **config).double()
    for p in shared.parameters():
        assert torch.equal(p, p[:1].expand_as(p))
    X = _mirrored((5, 2 * D) if disjoint else (5, K, 2 * D))
    with torch.no_grad():
        assert shared(X).abs().max() <= 1e-12
        assert shared(torch.randn(X.shape).double()).abs().max() > 1e-3
    independent = StackedBanditMLP(2 * D, K, 4, **config)
    weight = independent.layers[0].weight
    assert not torch.equal(weight[0], weight[1])


def _skorch_member(net_module, reduction, lr):
    net = make_bandit_net(
        D,
        K,
        hidden_layer_sizes=net_module.hidden_layer_sizes,
        init=net_module.init,
        disjoint=net_module.disjoint,
        reduction=reduction,
        learning_rate=lr,
    )
    net = initialize_net(net, 0)
    net.module_ = net_module
    net.initialize_optimizer()
    return net


def _perturbed_start(stacked):
    """theta_0 of every member, then every member moved off it (the penalty acts)."""
    theta0 = [p.detach().clone() for p in stacked.parameters()]
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in stacked.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return theta0


@pytest.mark.parametrize(
    "kind, pattern, widths, init, reduction, batch_size",
    [
        ("disjoint", "skewed", (8,), "ntk", "mean", None),
        ("disjoint", "balanced", (8,), "ntk", "mean", None),
        ("disjoint", "skewed", (8, 6), "ntk", "sum", None),
        ("disjoint", "balanced", (8,), "default", "sum", None),
        ("per-arm", "skewed", (8,), "ntk", "mean", None),
        ("shared", "skewed", (6, 6, 4), "default", "mean", None),
        ("disjoint", "skewed", (8, 4), "ntk", "mean", 5),
        ("per-arm", "skewed", (6, 6), "default", "sum", 7),
    ],
)
def test_training_equals_each_member_trained_alone(
    kind, pattern, widths, init, reduction, batch_size
):
    torch.manual_seed(0)
    disjoint = kind == "disjoint"
    stacked = StackedBanditMLP(
        D, K, M, hidden_layer_sizes=widths, init=init, disjoint=disjoint
    )
    theta0 = _perturbed_start(stacked)
    X, a = _contexts(kind), _actions(pattern)
    g = torch.Generator().manual_seed(2)
    targets = torch.randn(M, N, generator=g)  # each member its own perturbed rewards
    weights = 2 * torch.rand(M, N, generator=g)
    weights[1] = (weights[1] > 1).float()  # a bootstrap-like 0/1 mask: n_eff differs
    lr = 0.02 if reduction == "mean" else 0.002
    alone = [_skorch_member(stacked.member(j), reduction, lr) for j in range(M)]
    rows = X if X.ndim == 2 else X[torch.arange(N), a]  # the pulled arms' vectors
    kwargs = dict(alpha=0.1, n_steps=30, batch_size=batch_size)
    objective = ensemble_gradient_descent(
        stacked,
        rows,
        a,
        targets,
        weights,
        theta0,
        learning_rate=lr,
        reduction=reduction,
        rng=np.random.default_rng(0),
        **kwargs,
    )
    assert objective.shape == (M,)
    for j, net in enumerate(alone):
        expected = proximal_gradient_descent(
            net,
            X,
            a,
            targets[j],
            weights[j],
            [t[j] for t in theta0],
            rng=np.random.default_rng(0),  # the same mini-batches as the stack's
            **kwargs,
        )
        trained = get_flat_parameters(net.module_)
        start = torch.cat([t[j].ravel() for t in theta0])
        assert float((trained - start).abs().max()) > 0.05  # worth comparing
        assert_allclose(_flat(stacked, j), trained, atol=1e-5)
        assert_allclose(objective[j], expected, rtol=1e-5)


def _reference_objective(stacked, theta0, X, a, y, w, alpha, loss, reduction):
    """Each member's objective from the module's autograd forward, written anew."""
    f = stacked(X)[:, torch.arange(X.shape[0]), a]  # (M, n) pulled arms' outputs
    if loss == "bce":
        data = F.binary_cross_entropy_with_logits(f, y, reduction="none")
    else:
        data = F.mse_loss(f, y, reduction="none") / 2
    data = (w * data).sum(1)
    sq = sum(
        (p - p0).square().flatten(1).sum(1)
        for p, p0 in zip(stacked.parameters(), theta0, strict=True)
    )
    divisor = w.sum(1) if reduction == "mean" else torch.ones(len(w))
    return (data + stacked.scale**2 * alpha * sq / 2) / divisor


@pytest.mark.parametrize(
    "loss, reduction, widths, init",
    [
        ("bce", "mean", (6,), "ntk"),
        ("bce", "sum", (6, 4), "default"),
        ("squared", "mean", (6, 4), "ntk"),
    ],
)
def test_step_is_autograd_gradient_of_the_objective(loss, reduction, widths, init):
    # In float64, one step of the hand-written backward against autograd on an
    # objective written with torch's own losses (BCE-with-logits accepts the
    # non-binary targets that perturbation gives).
    torch.manual_seed(4)
    stacked = StackedBanditMLP(
        D, K, M, hidden_layer_sizes=widths, init=init, disjoint=True
    ).double()
    theta0 = _perturbed_start(stacked)
    X, a = _contexts("disjoint", dtype=torch.float64), _actions("skewed")
    g = torch.Generator().manual_seed(5)
    y = torch.rand(M, N, generator=g, dtype=torch.float64) * 1.4 - 0.2
    w = torch.rand(M, N, generator=g, dtype=torch.float64)
    alpha, lr = 0.3, 0.05
    objective = _reference_objective(
        stacked, theta0, X, a, y, w, alpha, loss, reduction
    )
    grads = torch.autograd.grad(objective.sum(), list(stacked.parameters()))
    expected = [
        p.detach() - lr * q for p, q in zip(stacked.parameters(), grads, strict=True)
    ]
    value = ensemble_gradient_descent(
        stacked, X, a, y, w, theta0, alpha=alpha, learning_rate=lr, n_steps=1,
        loss=loss, reduction=reduction,
    )  # fmt: skip
    for p, q in zip(stacked.parameters(), expected, strict=True):
        assert_allclose(p.detach(), q, rtol=1e-10, atol=1e-12)
    with torch.no_grad():
        after = _reference_objective(
            stacked, theta0, X, a, y, w, alpha, loss, reduction
        )
    assert_allclose(value, after, rtol=1e-10)
    assert (value < objective.detach().numpy()).all()  # a descent step


def test_bce_is_finite_for_huge_logits():
    torch.manual_seed(0)
    stacked = StackedBanditMLP(D, K, 2, hidden_layer_sizes=(6,), disjoint=True)
    theta0 = [p.detach().clone() for p in stacked.parameters()]
    with torch.no_grad():
        stacked.layers[-1].weight.mul_(1e3)  # logits of order 1e3: exp overflows
    X, a = _contexts("disjoint"), _actions("skewed")
    y = (torch.arange(N) % 2).float()
    with torch.no_grad():
        f = stacked(X)[:, torch.arange(N), a]
        data = F.binary_cross_entropy_with_logits(f, y.expand(2, N), reduction="none")
    assert f.abs().max() > 100
    value = ensemble_gradient_descent(
        stacked, X, a, y, None, theta0, alpha=0.0, learning_rate=0.0, n_steps=1,
        loss="bce", reduction="sum",
    )  # fmt: skip
    assert_allclose(value, data.sum(1), rtol=1e-5)


def test_zero_weight_member_only_decays_to_theta0():
    # Member 1 has no data: from theta_0 it must not move at all (no other member's
    # rows may leak into it); member 2 has none either and starts off theta_0, so
    # it contracts by exactly (1 - lr * coef) per step with its own coef = s alpha
    # (total weight 0 counts as 1), not the coef of the members with data.
    torch.manual_seed(0)
    stacked = StackedBanditMLP(D, K, M, hidden_layer_sizes=(8,), disjoint=True)
    theta0 = [p.detach().clone() for p in stacked.parameters()]
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in stacked.parameters():
            p[2].add_(torch.randn(p[2].shape, generator=g))
    start = _flat(stacked, 2)
    X, a = _contexts("disjoint"), _actions("balanced")
    w = torch.ones(M, N)
    w[1:] = 0
    alpha, lr, n_steps = 0.05, 0.05, 20
    ensemble_gradient_descent(
        stacked, X, a, torch.randn(N), w, theta0, alpha=alpha, learning_rate=lr,
        n_steps=n_steps,
    )  # fmt: skip
    centre = [torch.cat([t[j].ravel() for t in theta0]) for j in range(M)]
    assert float((_flat(stacked, 0) - centre[0]).abs().max()) > 0.01
    assert torch.equal(_flat(stacked, 1), centre[1])
    contraction = (1 - lr * stacked.scale**2 * alpha) ** n_steps
    assert 0.1 < contraction < 0.9
    moved = centre[2] + contraction * (start - centre[2])
    assert_allclose(_flat(stacked, 2), moved, rtol=1e-4, atol=1e-6)


def test_divergence_raises_and_bad_arguments():
    torch.manual_seed(0)
    stacked = StackedBanditMLP(D, K, 2, hidden_layer_sizes=(8,), disjoint=True)
    theta0 = [p.detach().clone() for p in stacked.parameters()]
    X, a = _contexts("disjoint"), _actions("skewed")
    kwargs = dict(alpha=1.0, n_steps=30, reduction="sum")
    with pytest.raises(NumericalError, match="diverged"):
        ensemble_gradient_descent(
            stacked, X, a, torch.randn(N), None, theta0, learning_rate=1.0, **kwargs
        )
    with pytest.raises(ValueError, match="loss"):
        ensemble_gradient_descent(
            stacked, X, a, torch.randn(N), None, theta0, learning_rate=0.1,
            loss="hinge", **kwargs,
        )  # fmt: skip
    with pytest.raises(ValueError, match="architecture"):
        StackedBanditMLP.from_members(
            [BanditMLP(D, K, hidden_layer_sizes=(4,)), BanditMLP(D, K)]
        )
