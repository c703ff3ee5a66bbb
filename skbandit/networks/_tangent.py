"""Neural tangent features ``phi(x) = g(x; theta) / sqrt(m)`` of every arm, in one call.

For the bias-free ReLU MLP the per-example gradient has a closed form. With
``delta_l = df / dz_l`` (``z_l`` the pre-activation of layer ``l``), the gradient of
``W_l`` is the outer product ``delta_l a_{l-1}^T`` (``a_0 = x``), and
``delta_{l-1} = (W_l^T delta_l) * 1[z_{l-1} > 0]``. One forward pass over all arms and
one backward recursion on ``(n, K, m)`` arrays give every arm's features at once. A
diagonal quadratic form ``sum_j phi_j^2 / u_j`` is then a bilinear form per layer,
``(delta^2)^T (1/U_l) (a^2)``, so the ``p``-vectors are never built on the hot path.

:func:`tangent_features_autograd` computes the same with ``torch.func`` (``vmap`` of
``jacrev``) for any module; the tests check one against the other.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import torch
from torch.func import functional_call, jacrev, vmap

from skbandit.networks._mlp import BanditMLP

__all__ = [
    "tangent_features",
    "tangent_features_autograd",
    "tangent_quadratic",
    "tangent_square_sum",
]


def _cache(module, X):
    """Forward pass keeping, per layer, its input and ``delta = d(f / scale) / dz``.

    Returns ``f`` of shape (n, K) and a list of ``(input, delta)``: ``input`` is the
    raw ``X`` for the first layer, ``(n, K, m_{l-1})`` activations otherwise; ``delta``
    is ``(n, K, m_l)``, divided by the output scale so that it yields ``phi``.
    """
    return _cache_from(module, X, module.first_layer(X))


def _pulled_cache(module, X, actions, arms):
    """:func:`_cache` of a disjoint network at each row's pulled arm only.

    The diagonal update needs the features of the pulled arms alone: the first
    layer runs on each pulled arm's weight block (one GEMM per distinct arm) and
    the later layers on ``(n, m)`` rows, a ``K``-th of the forward pass over every
    arm. ``arms`` are the distinct values of ``actions``, a list. Returns ``f`` of
    shape (n,) and ``(input, delta)`` per layer, ``(n, m_l)`` arrays (the raw ``X``
    for the first layer).
    """
    first = module.layers[0]
    m = first.weight.shape[0]
    blocks = first.weight.view(m, module.n_actions, module.n_features).permute(1, 2, 0)
    if len(arms) == 1:  # the online round: one GEMM, no masks
        z = X @ blocks[arms[0]]
    else:
        z = X.new_empty(X.shape[0], m)
        for arm in arms:
            rows = actions == arm
            z[rows] = X[rows] @ blocks[arm]
    if first.bias is not None:
        z = z + first.bias
    return _cache_from(module, X, z)


def _cache_from(module, X, z):
    """:func:`_cache` from the first layer's pre-activations ``z``."""
    # A plain list: slicing the ModuleList builds a new module each time. The
    # layers are applied as F.linear: a Module call costs more than the GEMM here.
    layers = list(module.layers)
    pre, inputs = [z], [X]
    for layer in layers[1:]:
        a = torch.relu(z)
        inputs.append(a)
        z = torch.nn.functional.linear(a, layer.weight, layer.bias)
        pre.append(z)
    f = z[..., 0] * module.scale
    delta = torch.ones_like(z)  # d(f / scale) / d z_L
    deltas = [delta]
    for layer, z_prev in zip(layers[:0:-1], pre[-2::-1], strict=True):
        delta = (delta @ layer.weight) * (z_prev > 0)
        deltas.append(delta)
    return f, list(zip(inputs, deltas[::-1], strict=True))


@torch.no_grad()
def tangent_features(module, X):
    """Tangent features of every arm, closed form for :class:`BanditMLP`.

    Parameters
    ----------
    module : BanditMLP
        The network.
    X : torch.Tensor of shape (n, d) or (n, K, d)
        Contexts (shared contexts use the module's disjoint encoding).

    Returns
    -------
    f : torch.Tensor of shape (n, K)
        Network outputs.
    phi : torch.Tensor of shape (n, K, p)
        ``g(x_k; theta) / scale``, parameters in ``module.parameters()`` order.

    Examples
    --------
    >>> import torch
    >>> from skbandit.networks import BanditMLP, tangent_features
    >>> net = BanditMLP(4, 2, hidden_layer_sizes=(6,), disjoint=True)
    >>> f, phi = tangent_features(net, torch.ones(3, 4))
    >>> tuple(phi.shape)  # p = K d m + m
    (3, 2, 54)
    """
    if not isinstance(module, BanditMLP):
        return tangent_features_autograd(module, X)
    f, cache = _cache(module, X)
    n, K = f.shape
    parts = []
    for i, ((inp, delta), layer) in enumerate(zip(cache, module.layers, strict=True)):
        if i == 0 and module.disjoint:
            eye = torch.eye(K, dtype=X.dtype, device=X.device)
            grad = (
                delta[:, :, :, None, None]
                * eye[None, :, None, :, None]
                * inp[:, None, None, None, :]
            )
        else:
            if inp.ndim == 2:
                inp = inp[:, None, :].expand(n, K, -1)
            grad = delta[..., :, None] * inp[..., None, :]
        parts.append(grad.reshape(n, K, -1))
        if layer.bias is not None:
            parts.append(delta)
    return f, torch.cat(parts, dim=2)


def tangent_features_autograd(module, X):
    """Tangent features of every arm by ``torch.func`` (``vmap`` of ``jacrev``).

    Works for any module following the contract ``module(X) -> (n, K)`` with an
    attribute ``scale`` (taken as 1 if absent); slower than :func:`tangent_features`,
    which calls it for modules other than :class:`BanditMLP`.

    Parameters
    ----------
    module : torch.nn.Module
        The network.
    X : torch.Tensor of shape (n, d) or (n, K, d)
        Contexts.

    Returns
    -------
    f : torch.Tensor of shape (n, K)
        Network outputs.
    phi : torch.Tensor of shape (n, K, p)
        ``g / scale``, parameters in ``module.parameters()`` order.

    Examples
    --------
    >>> import torch
    >>> from skbandit.networks import BanditMLP, tangent_features_autograd
    >>> net = BanditMLP(4, 2, hidden_layer_sizes=(6,))
    >>> tuple(tangent_features_autograd(net, torch.ones(3, 2, 4))[1].shape)
    (3, 2, 30)
    """
    params = {k: v.detach() for k, v in module.named_parameters()}

    def one(p, x):
        return functional_call(module, p, (x[None],))[0]

    jac = vmap(jacrev(one), in_dims=(None, 0))(params, X)
    with torch.no_grad():
        f = module(X)
    n, K = f.shape
    phi = torch.cat([jac[k].reshape(n, K, -1) for k in params], dim=2)
    return f.detach(), phi / getattr(module, "scale", 1.0)


@torch.no_grad()
def tangent_quadratic(module, X, weights):
    """``f`` and ``sum_j weights_j phi_j(x_k)^2`` for every arm, without building phi.

    Parameters
    ----------
    module : BanditMLP
        The network.
    X : torch.Tensor of shape (n, d) or (n, K, d)
        Contexts.
    weights : torch.Tensor of shape (p,)
        Per-parameter weights, e.g. the inverse diagonal of ``U``.

    Returns
    -------
    f : torch.Tensor of shape (n, K)
        Network outputs.
    q : torch.Tensor of shape (n, K)
        The diagonal quadratic forms.

    Examples
    --------
    >>> import torch
    >>> from skbandit.networks import BanditMLP, tangent_features, tangent_quadratic
    >>> net = BanditMLP(4, 2, hidden_layer_sizes=(6,))
    >>> X, w = torch.randn(3, 2, 4), torch.rand(30)
    >>> f, q = tangent_quadratic(net, X, w)
    >>> phi = tangent_features(net, X)[1]
    >>> bool(torch.allclose(q, (phi * phi) @ w, atol=1e-5))
    True
    """
    if not isinstance(module, BanditMLP):  # any other module: torch.func's features
        f, phi = tangent_features_autograd(module, X)
        return f, (phi * phi) @ weights
    if module.disjoint and _one_hidden_no_bias(module):
        return _disjoint_one_hidden_quadratic(module, X, weights)
    f, cache = _cache(module, X)
    q = torch.zeros_like(f)
    offset = 0
    for i, ((inp, delta), layer) in enumerate(zip(cache, module.layers, strict=True)):
        size = layer.weight.numel()
        W = weights[offset : offset + size].view(layer.weight.shape)
        offset += size
        d2 = delta * delta
        if i == 0 and module.disjoint:
            m = W.shape[0]
            Wk = W.view(m, module.n_actions, module.n_features).permute(1, 0, 2)
            t = torch.bmm(d2.permute(1, 0, 2), Wk).permute(1, 0, 2)  # (n, K, d)
            q += (t * (inp * inp)[:, None, :]).sum(-1)
        else:
            inp2 = inp * inp
            if inp2.ndim == 2:
                inp2 = inp2[:, None, :]
            q += ((d2 @ W) * inp2).sum(-1)
        if layer.bias is not None:
            size = layer.bias.numel()
            q += d2 @ weights[offset : offset + size]
            offset += size
    return f, q


@torch.no_grad()
def tangent_square_sum(module, X, actions, sample_weight=None):
    """``sum_i w_i phi(x_{i, a_i})^2`` (elementwise), the diagonal-``U`` increment.

    Parameters
    ----------
    module : BanditMLP
        The network.
    X : torch.Tensor of shape (n, d) or (n, K, d)
        Contexts.
    actions : torch.Tensor of shape (n,)
        Pulled arms.
    sample_weight : torch.Tensor of shape (n,) or None, default=None
        Row weights.

    Returns
    -------
    s : torch.Tensor of shape (p,)
        Weighted sum of squared tangent features of the pulled arms.

    Examples
    --------
    >>> import torch
    >>> from skbandit.networks import BanditMLP, tangent_features, tangent_square_sum
    >>> net = BanditMLP(4, 2, hidden_layer_sizes=(6,))
    >>> X, actions = torch.randn(3, 2, 4), torch.tensor([0, 1, 1])
    >>> phi = tangent_features(net, X)[1][torch.arange(3), actions]
    >>> s = tangent_square_sum(net, X, actions)
    >>> bool(torch.allclose(s, (phi * phi).sum(0), atol=1e-5))
    True
    """
    n = X.shape[0]
    rows = torch.arange(n, device=X.device)
    w = (
        torch.ones(n, dtype=X.dtype, device=X.device)
        if sample_weight is None
        else sample_weight
    )
    if not isinstance(module, BanditMLP):
        phi = tangent_features_autograd(module, X)[1][rows, actions]
        return w @ (phi * phi)
    if module.disjoint:
        arms, blocks, rest = _disjoint_square_sum(module, X, actions, w)
        m = blocks.shape[1]
        first = blocks.new_zeros(m, module.n_actions, module.n_features)
        first[:, arms] = blocks.transpose(0, 1)
        return torch.cat([first.reshape(-1), rest])
    _, cache = _cache(module, X)
    parts = []
    for (inp, delta), layer in zip(cache, module.layers, strict=True):
        d2 = delta[rows, actions] ** 2 * w[:, None]  # (n, m_l)
        x = inp[rows, actions] if inp.ndim == 3 else inp
        parts.append((d2.T @ (x * x)).reshape(-1))
        if layer.bias is not None:
            parts.append(d2.sum(0))
    return torch.cat(parts)


@torch.no_grad()
def _disjoint_square_sum(module, X, actions, w, host_actions=None):
    """:func:`tangent_square_sum` of a disjoint :class:`BanditMLP`, by pulled arm.

    The first layer's weight of the disjoint encoding is ``K`` blocks
    ``W_1[:, k d:(k+1) d]``, and ``phi`` of arm ``k`` is zero outside block ``k``: the
    increment is kept to the blocks of the pulled arms (``K`` times fewer entries for
    a round with one arm pulled).

    Parameters
    ----------
    module : BanditMLP
        A disjoint network.
    X : torch.Tensor of shape (n, d)
        Shared contexts.
    actions : torch.Tensor of shape (n,)
        Pulled arms.
    w : torch.Tensor of shape (n,) or None
        Row weights; None weighs every row 1.
    host_actions : ndarray of shape (n,) or None, default=None
        The pulled arms in host memory, if the caller has them: one row's block is
        then taken without reading its arm back from the device.

    Returns
    -------
    arms : torch.Tensor of shape (u,)
        The distinct pulled arms, increasing.
    blocks : torch.Tensor of shape (u, m_1, d)
        The increment of each one's first-layer block.
    rest : torch.Tensor of shape (p - m_1 K d,)
        The increment of the other parameters, in ``module.parameters()`` order.
    """
    if actions.numel() == 1 and _one_hidden_no_bias(module):
        index = None if host_actions is None else int(host_actions[0])
        return _one_row_one_hidden(module, X, actions.reshape(1), w, index)
    if actions.numel() == 1:  # the online round: its arm, no unique, no one-hot
        arms, onehot = actions.reshape(1), None
    else:
        arms, which = torch.unique(actions, return_inverse=True)
        onehot = torch.nn.functional.one_hot(which, arms.numel()).to(X.dtype)
    _, cache = _pulled_cache(module, X, actions, arms.tolist())
    blocks, parts = None, []
    for i, ((inp, delta), layer) in enumerate(zip(cache, module.layers, strict=True)):
        d2 = delta * delta if w is None else delta * delta * w[:, None]  # (n, m_l)
        if i == 0 and onehot is None:
            blocks = (d2.T @ (inp * inp))[None]
        elif i == 0:
            blocks = torch.einsum("nu,ni,nj->uij", onehot, d2, inp * inp)
        else:
            parts.append((d2.T @ (inp * inp)).reshape(-1))
        if layer.bias is not None:
            parts.append(d2.sum(0))
    return arms, blocks, torch.cat(parts)


def _one_hidden_no_bias(module):
    """Whether ``module`` is the papers' network: one hidden layer, no biases."""
    layers = module.layers
    return len(layers) == 2 and all(layer.bias is None for layer in layers)


def _one_row_one_hidden(module, X, arm, w, index=None):
    """:func:`_disjoint_square_sum` of one row on the papers' network, in closed form.

    The online round: with ``z = W_a x``, the squared features are
    ``(w_2 * 1[z > 0])^2 x^2`` for the pulled block and ``relu(z)^2`` for ``w_2``
    (each times the row's weight), a handful of small operations where the general
    recursion takes about thirty.
    """
    w2 = module.layers[1].weight[0]
    weight, x = module.layers[0].weight, X[0]
    index = arm[0] if index is None else index  # a host int: nothing read back
    block = weight.view(weight.shape[0], module.n_actions, -1)[:, index]  # (m, d)
    z = torch.mv(block, x)
    d2 = (w2 * w2) * (z > 0)
    a2 = torch.relu(z).square_()
    if w is not None:
        d2, a2 = d2 * w[0], a2 * w[0]
    return arm, torch.outer(d2, x * x)[None], a2


def _disjoint_one_hidden_quadratic(module, X, weights):
    """:func:`tangent_quadratic` of a disjoint network, the papers' network.

    In closed form: with ``z`` the first layer of arm ``k`` and
    ``s = w_2^2 * 1[z > 0]``, the form is ``s^T (1/U_k) x^2`` over the arm's block
    plus ``relu(z)^2^T (1/U_{w_2})``: one batched GEMM over the arms and one
    matrix-vector product, where the general recursion takes about thirty
    operations.
    """
    w2 = module.layers[1].weight[0]
    m, K, d = w2.shape[0], module.n_actions, module.n_features
    z = module.first_layer(X)  # (n, K, m)
    a = torch.relu(z)
    f = torch.matmul(a, w2).mul_(module.scale)
    s = (w2 * w2) * (z > 0)
    blocks = weights[: m * K * d].view(m, K, d).permute(1, 0, 2)  # (K, m, d)
    q = (torch.bmm(s.transpose(0, 1), blocks) * (X * X)).sum(-1).T  # (n, K)
    return f, q.add_(a.square_() @ weights[m * K * d :])
