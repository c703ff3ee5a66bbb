"""The papers' network, its tangent features, the training loop and the transformers."""
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose

from skbandit.networks import (
    BanditMLP,
    initialize_net,
    make_bandit_net,
    tangent_features,
    tangent_features_autograd,
    tangent_quadratic,
    tangent_square_sum,
)
from skbandit.networks._training import get_flat_parameters, proximal_gradient_descent
from skbandit.preprocessing import DisjointEncoder, MirrorNormalizer

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _mirrored(n, d, seed=0, K=None):
    rng = np.random.RandomState(seed)
    raw = rng.normal(size=(n, d) if K is None else (n, K, d))
    return torch.as_tensor(MirrorNormalizer().fit_transform(raw), dtype=torch.float64)


@pytest.mark.parametrize("widths", [(4,), (6, 8), (4, 6, 2)])
@pytest.mark.parametrize("disjoint", [False, True])
def test_zero_output_at_init_and_parameter_count(widths, disjoint):
    torch.manual_seed(0)
    d, K = 6, 3
    net = BanditMLP(2 * d, K, hidden_layer_sizes=widths, disjoint=disjoint).double()
    X = _mirrored(5, d) if disjoint else _mirrored(5, d, K=K)
    assert net(X).abs().max().item() <= 1e-12
    net32 = BanditMLP(2 * d, K, hidden_layer_sizes=widths, disjoint=disjoint)
    assert net32(X.float()).abs().max().item() <= 1e-6
    # p = d m + m^2 (L - 2) + m in general widths; the disjoint first layer is K d wide.
    n_in = 2 * d * (K if disjoint else 1)
    sizes = (n_in, *widths, 1)
    p = sum(a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
    assert sum(q.numel() for q in net.parameters()) == p
    if len(set(widths)) == 1:
        m, L = widths[0], len(widths) + 1
        assert p == n_in * m + m * m * (L - 2) + m


def test_ntk_init_structure():
    torch.manual_seed(1)
    net = BanditMLP(4, 1, hidden_layer_sizes=(6, 6))
    W1, W2, W3 = (layer.weight.detach() for layer in net.layers)
    assert torch.equal(W1[:3, :2], W1[3:, 2:]) and not W1[:3, 2:].any()
    assert torch.equal(W2[:3, :3], W2[3:, 3:]) and not W2[3:, :3].any()
    assert torch.equal(W3[0, :3], -W3[0, 3:])
    assert net.scale == math.sqrt(6)


def test_default_init_is_pytorch_linear():
    net = BanditMLP(3, 2, hidden_layer_sizes=(5,), init="default")
    assert net.layers[0].bias is not None and net.scale == 1.0
    with pytest.raises(ValueError, match="even"):
        BanditMLP(3, 2, hidden_layer_sizes=(5,))


@pytest.mark.parametrize("init", ["ntk", "default"])
@pytest.mark.parametrize("disjoint", [False, True])
@pytest.mark.parametrize("widths", [(6, 4), (6,)])  # (6,): the closed forms' case
def test_tangent_features_match_autograd(init, disjoint, widths):
    torch.manual_seed(2)
    net = BanditMLP(4, 3, hidden_layer_sizes=widths, init=init, disjoint=disjoint)
    net = net.double()
    X = torch.randn(5, 4, dtype=torch.float64)
    if not disjoint:
        X = torch.randn(5, 3, 4, dtype=torch.float64)
    f, phi = tangent_features(net, X)
    f_ref, phi_ref = tangent_features_autograd(net, X)
    assert_allclose(f, f_ref, atol=1e-12)
    assert_allclose(phi, phi_ref, atol=1e-12)
    # The L = 2 closed form of the note (item 13), spelled out.
    if init == "ntk" and not disjoint:
        net2 = BanditMLP(4, 3, hidden_layer_sizes=(6,)).double()
        W1, W2 = (layer.weight.detach() for layer in net2.layers)
        x = X[0, 1]
        gW2 = math.sqrt(6) * torch.relu(W1 @ x)
        gW1 = math.sqrt(6) * (W2[0] * (W1 @ x > 0))[:, None] * x[None, :]
        g = torch.cat([gW1.reshape(-1), gW2]) / math.sqrt(6)
        assert_allclose(tangent_features(net2, X)[1][0, 1], g, atol=1e-12)
    # The diagonal quadratic form and the U increment without building phi.
    w = torch.rand(phi.shape[2], dtype=torch.float64)
    assert_allclose(tangent_quadratic(net, X, w)[1], (phi**2 * w).sum(-1), atol=1e-12)
    a = torch.tensor([0, 2, 1, 1, 0])
    sw = torch.rand(5, dtype=torch.float64)
    expected = (phi[torch.arange(5), a] ** 2 * sw[:, None]).sum(0)
    assert_allclose(tangent_square_sum(net, X, a, sw), expected, atol=1e-12)


def test_ntk_limit_at_init():
    # g(x)^T g(x') / m -> H^(L)(x, x'); for L = 2 and unit inputs, with
    # cos phi = <x, x'>:
    # H^(2) = <x,x'> (pi - phi) / pi + (sin phi + (pi - phi) cos phi) / pi.
    torch.manual_seed(3)
    X = _mirrored(2, 3)
    net = BanditMLP(6, 1, hidden_layer_sizes=(4096,)).double()
    _, phi = tangent_features(net, X[:, None, :])
    K = (phi[:, 0] @ phi[:, 0].T).numpy()
    c = float(X[0] @ X[1])
    ang = math.acos(c)
    H12 = (
        c * (math.pi - ang) / math.pi + (math.sin(ang) + (math.pi - ang) * c) / math.pi
    )
    assert_allclose(np.diag(K), [2.0, 2.0], rtol=0.1)  # sigma^2 at t = 1 is about L
    assert_allclose(K[0, 1], H12, rtol=0.1, atol=0.05)


def test_block_aware_equals_dense_disjoint_encoding():
    torch.manual_seed(4)
    d, K, n = 4, 3, 7
    block = BanditMLP(d, K, hidden_layer_sizes=(6, 4), disjoint=True).double()
    dense = BanditMLP(K * d, K, hidden_layer_sizes=(6, 4)).double()
    dense.load_state_dict(block.state_dict())
    Xs = torch.randn(n, d, dtype=torch.float64)
    Xd = torch.as_tensor(DisjointEncoder(n_actions=K).fit_transform(Xs.numpy()))
    assert_allclose(block(Xs).detach(), dense(Xd).detach(), atol=1e-12)
    assert_allclose(tangent_features(block, Xs)[1], tangent_features(dense, Xd)[1])
    # Same training trajectory through the hand-driven steps.
    a = torch.tensor([0, 2, 2, 1, 0, 2, 2])
    r = torch.randn(n, dtype=torch.float64)
    nets = []
    for module, X in [(block, Xs), (dense, Xd[torch.arange(n), a])]:
        net = make_bandit_net(d, K, hidden_layer_sizes=(6, 4), learning_rate=0.05)
        net = initialize_net(net, 0)
        net.module_ = module
        net.initialize_optimizer()
        theta0 = [q.detach().clone() for q in module.parameters()]
        proximal_gradient_descent(net, X, a, r, None, theta0, alpha=0.1, n_steps=20)
        nets.append(get_flat_parameters(module))
    assert_allclose(nets[0], nets[1], atol=1e-10)


def test_penalty_centred_at_init():
    # No data signal (zero residuals): theta stays at theta_0.
    net = initialize_net(make_bandit_net(4, 2, hidden_layer_sizes=(6,)), 0)
    theta0 = [q.detach().clone() for q in net.module_.parameters()]
    X = torch.as_tensor(
        MirrorNormalizer().fit_transform(np.ones((3, 2))), dtype=torch.float32
    )
    a = torch.tensor([0, 1, 0])
    proximal_gradient_descent(
        net, X, a, torch.zeros(3), None, theta0, alpha=1.0, n_steps=10
    )  # f(theta_0) = 0 = targets: every gradient is 0
    assert torch.equal(
        get_flat_parameters(net.module_), torch.cat([t.ravel() for t in theta0])
    )


@pytest.mark.parametrize(
    "reduction, weights, hand",
    [
        ("mean", None, True),
        ("mean", [0.5, 2.0, 1.0, 0.25], True),
        ("sum", None, True),
        ("mean", None, False),
        ("sum", [0.5, 2.0, 1.0, 0.25], False),
    ],
)
def test_penalty_contracts_towards_theta0_at_its_rate(
    monkeypatch, reduction, weights, hand
):
    # Zero contexts zero every activation of the bias-free network, so the data
    # term has no gradient whatever the targets: each step is theta <- theta -
    # lr coef (theta - theta_0), with coef = m alpha / n ("mean", n the total
    # weight) or m alpha ("sum"). After J steps theta - theta_0 has shrunk by
    # exactly (1 - lr coef)^J.
    import skbandit.networks._training as training

    if not hand:
        monkeypatch.setattr(training, "_hand_gradient_applies", lambda *_: False)
    m, alpha, lr, n_steps = 6, 0.5, 0.1, 10
    net = make_bandit_net(
        3, 2, hidden_layer_sizes=(m,), learning_rate=lr, reduction=reduction
    )
    net = initialize_net(net, 0)
    net.module_.double()
    net.initialize_optimizer()
    theta0 = [q.detach().clone() for q in net.module_.parameters()]
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():  # start away from theta_0
        for q in net.module_.parameters():
            q.add_(torch.randn(q.shape, generator=gen, dtype=q.dtype))
    start = get_flat_parameters(net.module_)
    flat0 = torch.cat([t.ravel() for t in theta0])
    w = None if weights is None else torch.tensor(weights, dtype=torch.float64)
    n = 4.0 if w is None else float(w.sum())
    coef = m * alpha / n if reduction == "mean" else m * alpha
    proximal_gradient_descent(
        net,
        torch.zeros(4, 3, dtype=torch.float64),
        torch.tensor([0, 1, 1, 0]),
        torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.float64),  # no pull
        w,
        theta0,
        alpha=alpha,
        n_steps=n_steps,
    )
    moved = get_flat_parameters(net.module_) - flat0
    expected = (1 - lr * coef) ** n_steps * (start - flat0)
    assert_allclose(moved.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)
    assert (1 - lr * coef) ** n_steps < 0.9  # a contraction that can be told apart


def _objective_2_3(module, params, X, actions, rewards, weights, theta0, lam, mean):
    """Objective (2.3) of Neural Thompson Sampling written out in float64:
    ``sum_i w_i (f(x_i) - r_i)^2 / 2 + m lambda ||theta - theta_0||^2 / 2``, divided
    by ``sum_i w_i`` for ``reduction="mean"``. ``f`` is the bias-free ReLU network
    ``sqrt(m) W_L relu(... relu(W_1 x))`` on the disjoint encoding, built densely.
    """
    K, d = module.n_actions, module.n_features
    Z = X.new_zeros(X.shape[0], K * d)
    for i, k in enumerate(actions.tolist()):
        Z[i, k * d : (k + 1) * d] = X[i]
    h = Z
    for W in params[:-1]:
        h = torch.relu(h @ W.T)
    m = params[-1].shape[1]
    f = math.sqrt(m) * (h @ params[-1].T)[:, 0]
    data = (weights * (f - rewards) ** 2).sum() / 2
    penalty = sum(((p - p0) ** 2).sum() for p, p0 in zip(params, theta0, strict=True))
    total = data + m * lam * penalty / 2
    return total / weights.sum() if mean else total


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("hand", [True, False])
@pytest.mark.parametrize("widths", [(6,), (6, 4)])
def test_step_is_gradient_of_objective_2_3(monkeypatch, reduction, hand, widths):
    import skbandit.networks._training as training

    if not hand:
        monkeypatch.setattr(training, "_hand_gradient_applies", lambda *_: False)
    d, K, n, lam, lr = 3, 3, 10, 0.4, 0.01
    net = make_bandit_net(
        d,
        K,
        hidden_layer_sizes=widths,
        disjoint=True,
        learning_rate=lr,
        reduction=reduction,
    )
    net = initialize_net(net, 0)
    net.module_.double()
    net.initialize_optimizer()
    module = net.module_
    theta0 = [q.detach().clone() for q in module.parameters()]
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad():  # away from theta_0, so that the penalty pulls
        for q in module.parameters():
            q.add_(0.3 * torch.randn(q.shape, generator=gen, dtype=q.dtype))
    X = torch.randn(n, d, generator=gen, dtype=torch.float64)
    actions = torch.randint(K, (n,), generator=gen)
    rewards = torch.randn(n, generator=gen, dtype=torch.float64)
    w = torch.rand(n, generator=gen, dtype=torch.float64) + 0.5
    params = [q.detach().clone().requires_grad_() for q in module.parameters()]
    mean = reduction == "mean"
    value = _objective_2_3(module, params, X, actions, rewards, w, theta0, lam, mean)
    grads = torch.autograd.grad(value, params)
    expected = torch.cat(
        [(p - lr * g).detach().ravel() for p, g in zip(params, grads, strict=True)]
    )
    returned = proximal_gradient_descent(
        net, X, actions, rewards, w, theta0, alpha=lam, n_steps=1
    )
    got = get_flat_parameters(module)
    start = torch.cat([p.detach().ravel() for p in params])
    assert float((got - start).abs().max()) > 1e-3  # the step did something
    assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)
    after = [q.detach() for q in module.parameters()]
    final = _objective_2_3(module, after, X, actions, rewards, w, theta0, lam, mean)
    assert_allclose(returned, float(final), rtol=1e-10)


def test_mean_and_sum_reductions_give_the_same_trajectory():
    X = torch.randn(6, 4)
    a = torch.tensor([0, 1, 1, 0, 1, 0])
    r = torch.randn(6)
    out = []
    for reduction, lr in [("mean", 0.06), ("sum", 0.01)]:
        net = make_bandit_net(
            4, 2, hidden_layer_sizes=(4,), reduction=reduction, learning_rate=lr
        )
        net = initialize_net(net, 0)
        theta0 = [q.detach().clone() for q in net.module_.parameters()]
        proximal_gradient_descent(net, X, a, r, None, theta0, alpha=0.5, n_steps=15)
        out.append(get_flat_parameters(net.module_))
    assert_allclose(out[0], out[1], rtol=1e-4, atol=1e-6)


def test_transformers():
    X = np.array([[3.0, 4.0], [0.0, 0.0]])
    Z = MirrorNormalizer().fit_transform(X)
    assert_allclose(np.linalg.norm(Z[0]), 1.0)
    assert_allclose(Z[0, :2], Z[0, 2:])
    assert not Z[1].any()
    assert MirrorNormalizer().fit_transform(np.ones((2, 3, 5))).shape == (2, 3, 10)
    D = DisjointEncoder(n_actions=3).fit_transform(X)
    assert D.shape == (2, 3, 6)
    assert_allclose(D[0, 1], [0, 0, 3, 4, 0, 0])


@pytest.mark.parametrize("device", DEVICES)
def test_device(device):
    net = initialize_net(
        make_bandit_net(4, 2, hidden_layer_sizes=(4,), device=device), 0
    )
    assert next(net.module_.parameters()).device.type == device


@pytest.mark.parametrize(
    "disjoint, widths, init, reduction, batch_size",
    [
        (True, (8,), "ntk", "mean", None),
        (True, (8, 6), "ntk", "sum", None),
        (False, (8,), "ntk", "mean", None),
        (True, (8,), "default", "mean", None),
        (True, (8, 4), "ntk", "mean", 5),
        (False, (6, 6), "default", "sum", 7),
    ],
)
def test_hand_written_backward_equals_autograd(
    monkeypatch, disjoint, widths, init, reduction, batch_size
):
    import skbandit.networks._training as training

    torch.manual_seed(0)
    d, K, n = 4, 3, 20
    X = torch.randn(n, d) if disjoint else torch.randn(n, K, d)
    a = torch.cat([torch.zeros(2), torch.randint(1, K, (n - 2,))]).long()
    r, w = torch.randn(n), torch.rand(n) * 2
    params, objectives = [], []
    for hand in (True, False):
        monkeypatch.setattr(training, "_hand_gradient_applies", lambda *_, h=hand: h)
        net = make_bandit_net(
            d,
            K,
            hidden_layer_sizes=widths,
            init=init,
            disjoint=disjoint,
            reduction=reduction,
            learning_rate=0.02 if reduction == "mean" else 0.002,
        )
        net = initialize_net(net, 0)
        theta0 = [q.detach().clone() for q in net.module_.parameters()]
        with torch.no_grad():  # start away from theta_0 so the penalty acts
            for q in net.module_.parameters():
                q.add_(
                    0.1
                    * torch.randn(q.shape, generator=torch.Generator().manual_seed(1))
                )
        objectives.append(
            proximal_gradient_descent(
                net,
                X,
                a,
                r,
                w,
                theta0,
                alpha=0.1,
                n_steps=30,
                batch_size=batch_size,
                rng=np.random.default_rng(0),
            )
        )
        params.append(get_flat_parameters(net.module_))
    moved = float((params[1] - torch.cat([t.ravel() for t in theta0])).abs().max())
    assert moved > 0.05  # the steps did something worth comparing
    assert_allclose(params[0], params[1], atol=1e-5)
    assert_allclose(objectives[0], objectives[1], rtol=1e-5)


def test_hand_written_backward_is_used_only_for_plain_sgd():
    from skbandit.networks._training import _hand_gradient_applies

    net = initialize_net(make_bandit_net(4, 2, hidden_layer_sizes=(4,)), 0)
    assert _hand_gradient_applies(net.module_, net.optimizer_, net.criterion_)
    net.set_params(optimizer__momentum=0.9)
    assert not _hand_gradient_applies(net.module_, net.optimizer_, net.criterion_)


@pytest.mark.parametrize("counts", [[5, 5, 5], [40, 1, 0], [7, 9, 12], [0, 0, 3]])
def test_packing_any_arm_balance_matches_dense_forward(counts):
    torch.manual_seed(0)
    net = BanditMLP(4, 3, hidden_layer_sizes=(6,), disjoint=True)
    a = torch.repeat_interleave(torch.arange(3), torch.tensor(counts))
    a = a[torch.randperm(a.numel())]
    X = torch.randn(a.numel(), 4)
    rows = net.pack(X, a)
    padded = rows["X"].shape[0] * rows["X"].shape[1]
    assert padded <= 2 * a.numel()  # padding is bounded by the rows themselves
    with torch.no_grad():
        packed = net.unpack(rows, net.forward_packed(rows))
        dense = net(X)[torch.arange(a.numel()), a]
    # Two float32 forward passes through other product shapes: 7e-7 measured on
    # outputs near 1; 1e-5 leaves 10 times that, and a misplaced row is off by O(1).
    assert_allclose(packed, dense, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("counts", [[10, 10, 10], [25, 3, 2]])  # one tile each, or not
def test_mirrored_halves_train_as_the_full_width_steps(monkeypatch, counts):
    """Mirrored rows train the half-width sum of the two weight halves (the
    difference only decays): the same parameters as the full-width steps."""
    import skbandit.networks._descent as descent

    torch.manual_seed(0)
    K, d, m = 3, 4, 8
    net = BanditMLP(2 * d, K, hidden_layer_sizes=(m,), disjoint=True).double()
    a = torch.repeat_interleave(torch.arange(K), torch.tensor(counts))
    X, r = _mirrored(a.numel(), d), torch.randn(a.numel(), dtype=torch.float64)
    with torch.no_grad():  # start away from theta_0 so the penalty acts on D
        theta0 = [q.detach().clone() for q in net.parameters()]
        for q in net.parameters():
            q.add_(0.1 * torch.randn_like(q))
    assert descent._mirrored_halves(net.pack(X, a)["X"]) == d
    params = []
    for halves in (descent._mirrored_halves, lambda X: None):
        monkeypatch.setattr(descent, "_mirrored_halves", halves)
        module = BanditMLP(2 * d, K, hidden_layer_sizes=(m,), disjoint=True).double()
        module.load_state_dict(net.state_dict())
        stepper = descent.HandGradientSGD(module, theta0, 0.05, 0.02)
        rows = stepper.prepare(module.pack(X, a))
        c = module.pack_values(rows, torch.ones_like(r)) / r.numel()
        with torch.no_grad():
            stepper.steps(rows, module.pack_values(rows, r), c, 30)
        params.append(get_flat_parameters(module))
        # ||theta - theta_0||^2 as the steps computed it from their own offsets
        # (the half-width sum and the decayed difference, or the full width).
        direct = float(
            (params[-1] - torch.cat([t.reshape(-1) for t in theta0])).square().sum()
        )
        assert stepper.sq_distance == pytest.approx(direct, rel=1e-12)
    moved = float((params[1] - get_flat_parameters(net)).abs().max())
    assert moved > 1e-2  # the steps did something worth comparing
    # float64: the two orders of the same sums differ by rounding, ~1e-15 measured.
    assert_allclose(params[0], params[1], rtol=0, atol=1e-12)


@pytest.mark.parametrize("counts", [[10, 10, 10], [25, 3, 2]])  # one tile each, or not
@pytest.mark.parametrize("weighted", [False, True])  # c folded into g's addmv, or not
@pytest.mark.parametrize("centre", ["init", "zero"])
def test_tiled_steps_equal_the_general_step(counts, weighted, centre):
    """The papers'-case loop (buffers made once, the multiplier folded, the first
    layer's penalty as a running scale, ``w_2``'s lerp inside its addmv) gives the
    parameters and data terms of ``n_steps`` general :meth:`step` calls."""
    import skbandit.networks._descent as descent

    torch.manual_seed(0)
    K, d, m = 3, 5, 8  # odd d: no mirrored halves, the loop runs on the full width
    net = BanditMLP(d, K, hidden_layer_sizes=(m,), disjoint=True).double()
    a = torch.repeat_interleave(torch.arange(K), torch.tensor(counts))
    X = torch.randn(a.numel(), d, dtype=torch.float64)
    r = torch.randn(a.numel(), dtype=torch.float64)
    w = torch.rand(a.numel(), dtype=torch.float64) if weighted else torch.ones_like(r)
    with torch.no_grad():  # start away from the centre so the penalty acts
        theta0 = [q.detach().clone() for q in net.parameters()]
        if centre == "zero":
            theta0 = [torch.zeros_like(q) for q in theta0]
        for q in net.parameters():
            q.add_(0.1 * torch.randn_like(q))
    params, data = [], []
    for tiled in (True, False):
        module = BanditMLP(d, K, hidden_layer_sizes=(m,), disjoint=True).double()
        module.load_state_dict(net.state_dict())
        # A large penalty (decay 0.05 a step) makes 300 steps shrink the first
        # layer's offset by 2e-7: the running scale is renormalised on the way.
        stepper = descent.HandGradientSGD(module, theta0, 0.05, 1.0)
        rows = stepper.prepare(module.pack(X, a))
        assert rows["identity"] == (counts[0] == counts[1])
        c = module.pack_values(rows, w) / w.sum()
        target = module.pack_values(rows, r)
        with torch.no_grad():
            if tiled:
                assert stepper._tiled_one_hidden(rows)
                before, after = stepper.steps(rows, target, c, 300, data_term=True)
                data.append(before)
                # The data term after the steps, from the loop's own buffers.
                end = stepper.objective_data_term(rows, target, c)
                assert_allclose(after, end, rtol=1e-12)
            else:
                data.append(stepper.step(rows, target, c, data_term=True))
                for _ in range(299):
                    stepper.step(rows, target, c)
        params.append(get_flat_parameters(module))
    moved = float((params[1] - get_flat_parameters(net)).abs().max())
    assert moved > 1e-2  # the steps did something worth comparing
    # float64: the same sums in another order (g X before the ReLU mask, the scale
    # applied as a product), ~1e-15 measured; 1e-12 leaves room for 300 steps.
    assert_allclose(params[0], params[1], rtol=0, atol=1e-12)
    assert_allclose(data[0], data[1], rtol=1e-12)
