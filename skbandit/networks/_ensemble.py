"""A batch of the papers' networks, stored stacked and trained as one computation.

Ensemble policies keep ``M`` networks of one architecture: bootstrapped networks
(Osband et al. 2016, "Deep Exploration via Bootstrapped DQN") and Neural ensemble
sampling (Sun, Wang and Xu 2025, "Provable Anytime Ensemble Sampling Algorithms in
Nonlinear Contextual Bandits"), where every member starts from one shared ``theta_0``
and fits the rewards perturbed by its own stored Gaussian noise. A Python loop over
``M`` small networks pays torch's per-operation overhead ``M`` times per step; here
each layer's weight is one ``(M, out, in)`` tensor and a step is the same dozen
operations for every ``M``.

Each member's objective is the proximal loss of Zhang et al. (2021, "Neural Thompson
Sampling", eq. 2.3), with its own targets ``y_j`` and row weights ``w_j``::

    L_j(theta_j) = sum_i w_ji l(f_j(x_i), y_ji) + s alpha ||theta_j - theta0_j||^2 / 2

with ``s = scale^2``, ``l`` the squared error ``(f - y)^2 / 2`` or the logistic loss
``softplus(f) - y f`` (which stays a proper loss for perturbed, non-binary targets),
and ``reduction="mean"`` dividing ``L_j`` by its own total weight, as
``proximal_gradient_descent`` does for one network.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from skbandit.exceptions import NumericalError, _diverged, _divergence_hint
from skbandit.networks._mlp import BanditMLP
from skbandit.networks._rows import StackedRows, step_batches

__all__ = ["StackedBanditMLP", "ensemble_gradient_descent"]


class StackedBanditMLP(nn.Module):
    """``M`` networks of the :class:`BanditMLP` architecture in stacked weights.

    ``layers[l].weight[j]`` is the ``layers[l].weight`` of member ``j`` as a
    :class:`BanditMLP` holds it (the disjoint first layer as the dense ``(m, K d)``
    matrix), and likewise for the biases: the state dict has a :class:`BanditMLP`'s
    keys, each value with a leading member axis, and ``parameters()`` its order.

    Parameters
    ----------
    n_features : int
        Length of one context vector (see :class:`BanditMLP`).
    n_actions : int
        Number of arms.
    n_members : int
        Number of networks ``M``.
    hidden_layer_sizes : tuple of int, default=(100,)
        Hidden widths.
    init : {"ntk", "default", "uniform"}, default="ntk"
        Each member is initialised as a :class:`BanditMLP` with this ``init``,
        drawn one after the other from torch's global generator: seeding torch and
        building this module gives the members that seeding it and building ``M``
        :class:`BanditMLP` in a row would.
    disjoint : bool, default=False
        Shared contexts with the disjoint encoding, applied per arm block.
    shared_init : bool, default=False
        Draw one initialisation and copy it to every member, the common
        ``theta_0`` of Neural ensemble sampling.

    Attributes
    ----------
    layers : torch.nn.ModuleList
        One module per layer with ``weight`` ``(M, out, in)`` and ``bias``
        ``(M, out)`` (None under ``init="ntk"``).
    scale : float
        Output multiplier, as ``BanditMLP.scale``.

    Examples
    --------
    >>> import torch
    >>> from skbandit.networks._ensemble import StackedBanditMLP
    >>> net = StackedBanditMLP(4, 3, 5, hidden_layer_sizes=(8,), disjoint=True)
    >>> net(torch.randn(2, 4)).shape  # (members, rows, arms)
    torch.Size([5, 2, 3])
    """

    def __init__(
        self,
        n_features,
        n_actions,
        n_members,
        *,
        hidden_layer_sizes=(100,),
        init="ntk",
        disjoint=False,
        shared_init=False,
    ):
        super().__init__()
        self.n_members = int(n_members)
        if self.n_members < 1:
            raise ValueError(f"n_members must be at least 1, got {n_members}.")
        self.shared_init = bool(shared_init)
        config = dict(hidden_layer_sizes=hidden_layer_sizes, init=init)
        # Not a hot path: whole BanditMLPs give every member exactly their
        # initialisation (the mirroring, per arm block), with no second copy of it.
        draws = 1 if self.shared_init else self.n_members
        nets = [
            BanditMLP(n_features, n_actions, disjoint=disjoint, **config)
            for _ in range(draws)
        ]
        first = nets[0]
        self.n_features, self.n_actions = first.n_features, first.n_actions
        self.hidden_layer_sizes, self.init = first.hidden_layer_sizes, first.init
        self.disjoint, self.scale = first.disjoint, first.scale
        self.layers = nn.ModuleList()
        for i in range(len(first.layers)):
            stacked = nn.Module()
            for name in ("weight", "bias"):
                values = [getattr(net.layers[i], name) for net in nets]
                param = None
                if values[0] is not None:  # one draw is every member's, if shared
                    value = torch.stack([v.detach() for v in values])
                    value = value.expand(self.n_members, *value.shape[1:])
                    param = nn.Parameter(value.clone())
                stacked.register_parameter(name, param)
            self.layers.append(stacked)

    def _architecture(self):
        return dict(
            n_features=self.n_features,
            n_actions=self.n_actions,
            hidden_layer_sizes=self.hidden_layer_sizes,
            init=self.init,
            disjoint=self.disjoint,
        )

    # ------------------------------------------------------------ conversion
    @classmethod
    def from_members(cls, members):
        """Stack independent :class:`BanditMLP` networks of one architecture.

        Parameters
        ----------
        members : list of BanditMLP
            Networks of equal ``n_features``, ``n_actions``, ``hidden_layer_sizes``,
            ``init`` and ``disjoint``; copied, not shared.

        Returns
        -------
        stacked : StackedBanditMLP
            On the members' device and dtype; torch's global generator is untouched.
        """
        architecture = cls._architecture(members[0])
        if any(cls._architecture(net) != architecture for net in members):
            raise ValueError("All members must share one architecture.")
        with torch.random.fork_rng(devices=[]):
            stacked = cls(n_members=len(members), **architecture)
        states = [net.state_dict() for net in members]
        stacked.load_state_dict(
            {key: torch.stack([s[key] for s in states]) for key in states[0]}
        )
        reference = states[0]["layers.0.weight"]
        return stacked.to(device=reference.device, dtype=reference.dtype)

    def member(self, j):
        """Member ``j`` as an independent :class:`BanditMLP` (a copy).

        Parameters
        ----------
        j : int
            Member index.

        Returns
        -------
        net : BanditMLP
            Same device and dtype; torch's global generator is untouched.
        """
        with torch.random.fork_rng(devices=[]):
            net = BanditMLP(**self._architecture())
        state = {key: value[j] for key, value in self.state_dict().items()}
        net.load_state_dict(state)
        return net.to(
            device=state["layers.0.weight"].device, dtype=state["layers.0.weight"].dtype
        )

    # ------------------------------------------------------------ forward
    def forward(self, X, members=None):
        """Score every member and arm (differentiable).

        Parameters
        ----------
        X : torch.Tensor of shape (n, d) or (n, K, d)
            Shared contexts (the disjoint encoding applied per arm block, never
            built) or per-arm contexts.
        members : int, slice, list or torch.Tensor, default=None
            Score only these members, e.g. the one a policy sampled; all if None.

        Returns
        -------
        scores : torch.Tensor of shape (M', n, K)
            Network outputs, ``M'`` the number of members scored.
        """
        pick = slice(None) if members is None else members
        pick = [pick] if isinstance(pick, int) else pick
        n, K = X.shape[0], self.n_actions
        W = self.layers[0].weight[pick]
        if self.disjoint:
            # z[j, i, k] = W_j[:, block k] x_i: one contraction over d per arm block.
            z = torch.einsum("nd,jmkd->jnkm", X, W.view(*W.shape[:2], K, -1))
        elif X.ndim == 3:
            z = torch.einsum("nkd,jmd->jnkm", X, W)
        else:  # the same input for every arm: score it once
            z = torch.einsum("nd,jmd->jnm", X, W)[:, :, None, :]
        z = z.reshape(z.shape[0], -1, z.shape[-1])
        for i, layer in enumerate(self.layers):
            if i:
                z = torch.bmm(torch.relu(z), layer.weight[pick].transpose(1, 2))
            if layer.bias is not None:
                z = z + layer.bias[pick][:, None, :]
        scores = (z[..., 0] * self.scale).view(z.shape[0], n, -1)
        return scores.expand(-1, -1, K)

    # The tiling reads only ``disjoint`` and ``n_actions``, which every member shares.
    pack, tile_layout, pack_tiles = (
        BanditMLP.pack,
        BanditMLP.tile_layout,
        BanditMLP.pack_tiles,
    )


class _StackedSGD:
    """Plain-SGD steps of every member's proximal loss, with a hand-written backward.

    The backward pass is that of :class:`~skbandit.networks._descent.HandGradientSGD`
    with a member axis (``g_j = c_j l'(f_j, y_j)``, ``delta = g w_L^T 1[z > 0]``,
    ``grad W_l = scale delta_l^T a_{l-1}``); only the layout is chosen for ``M``.
    The first layer, which holds most of the FLOPs, is kept during training as
    ``V`` of shape ``(K', d, M m_1)`` (``K' = K`` blocks for the disjoint encoding,
    else 1): the rows of a tile times ``V[k]`` give all members' pre-activations in
    one wide GEMM, ``(rows, M m_1)``, and its gradient lands in one ``baddbmm_``.
    Later layers are batched GEMMs over the member axis, reading the first layer's
    output through a strided view (no copy). Autograd over the same stacked layout
    gives the same steps (checked by the tests) in 2 to 4 times the time (measured
    by ``benchmarks/speed/ensemble_training.py`` as of commit 68db967).

    Parameters
    ----------
    module : StackedBanditMLP
        Updated in place; the first layer is written back by :meth:`finish`.
    theta0 : list of torch.Tensor
        Penalty centre in ``module.parameters()`` order.
    lr : float
        Step size.
    coef : torch.Tensor of shape (M,)
        Each member's penalty weight.
    loss : {"squared", "bce"}
        Data loss.
    """

    def __init__(self, module, theta0, lr, coef, loss):
        self.module, self.loss = module, loss
        self.M, self.scale, self.lr = module.n_members, float(module.scale), float(lr)
        self.coef = coef
        decay = float(lr) * coef
        # One shared decay keeps the scalar lerp (a tensor weight costs a pass).
        shared = bool((decay == decay[0]).all())
        centres = iter(theta0)
        self.layers = []  # [weight, bias, weight_0, bias_0, decay, bias decay]
        for i, layer in enumerate(module.layers):
            w0, weight, bias = next(centres), layer.weight.detach(), layer.bias
            bias = None if bias is None else bias.detach()
            b0 = None if bias is None else next(centres)
            on_weight = decay.view((self.M, 1) if i == 0 else (-1, 1, 1))
            on_bias = decay.view(-1, 1)
            if shared:
                on_weight = on_bias = float(decay[0])
            self.layers.append([weight, bias, w0, b0, on_weight, on_bias])
        first = self.layers[0]
        first[0], first[2] = self._wide(first[0]), self._wide(first[2])

    def _wide(self, weight):
        """``(M, m, K' d)`` to ``(K', d, M, m)``: block k of member j: ``[k, :, j]``."""
        M, m = weight.shape[:2]
        blocks = self.module.n_actions if self.module.disjoint else 1
        return weight.reshape(M, m, blocks, -1).permute(2, 3, 0, 1).contiguous()

    def prepare(self, rows):
        """Add the tiles' arms and buffers for the first layer's passes to ``rows``."""
        X, blocks = rows["X"], self.layers[0][0].shape[0]
        if X.ndim == 2:  # no disjoint blocks: the rows are one tile
            rows = {"X": X[None], "arms": X.new_zeros(1, dtype=torch.int64)}
            rows["identity"] = blocks == 1
        arms = rows["arms"]
        if "identity" in rows:  # the packing knew it on the host: no read back
            rows["identity"] = rows["identity"] and arms.numel() == blocks
        else:
            rows["identity"] = arms.numel() == blocks and bool(
                (arms == torch.arange(blocks, device=arms.device)).all()
            )
        n_tiles, size = rows["X"].shape[:2]
        width = self.M * self.layers[0][0].shape[-1]
        # Reused across steps: fresh large tensors cost page faults every step.
        rows["z"] = X.new_empty(n_tiles, size, width)
        rows["delta"] = X.new_empty(n_tiles, size, width)
        return rows

    def _members(self, wide, rows):
        """A ``(T, s, M m)`` buffer as the strided ``(M, T s, m)`` view."""
        n = rows["X"].shape[0] * rows["X"].shape[1]
        return wide.view(n, self.M, -1).transpose(0, 1)

    def _forward(self, rows):
        weight, bias = self.layers[0][:2]
        V = weight.view(weight.shape[0], weight.shape[1], -1)
        if not rows["identity"]:
            V = torch.index_select(V, 0, rows["arms"])
        z = torch.bmm(rows["X"], V, out=rows["z"])
        a = self._members(z, rows)
        if bias is not None:
            a.add_(bias[:, None, :])
        activations = [rows["X"], a.relu_()]  # 1[a > 0] = 1[z > 0] for the backward
        for weight, bias, *_ in self.layers[1:-1]:
            z = torch.bmm(activations[-1], weight.transpose(1, 2))
            if bias is not None:
                z.add_(bias[:, None, :])
            activations.append(z.relu_())
        weight, bias = self.layers[-1][:2]
        f = torch.bmm(activations[-1], weight.transpose(1, 2))[..., 0]
        if bias is not None:
            f.add_(bias)
        return activations, f.mul_(self.scale)

    def _derivative(self, f, target):
        """``l'(f, y)``, shape (M, n): ``f - y``, or ``sigmoid(f) - y`` for BCE."""
        return f - target if self.loss == "squared" else torch.sigmoid(f) - target

    def objective(self, rows, target, multiplier):
        """Every member's ``sum_i c_i l(f_i, y_i) + coef ||theta - theta0||^2 / 2``."""
        f = self._forward(rows)[1]
        if self.loss == "squared":
            terms = (f - target).square_().div_(2)
        else:  # softplus(f) - y f: no overflow for any f, a loss for any real y
            terms = F.softplus(f) - target * f
        sq = 0
        for k, (weight, bias, w0, b0, *_) in enumerate(self.layers):
            # The first layer is (K', d, M, m), later ones (M, out, in).
            sq = sq + (weight - w0).square().sum((0, 1, 3) if k == 0 else (1, 2))
            if bias is not None:
                sq = sq + (bias - b0).square().sum(1)
        return (terms * multiplier).sum(1) + self.coef * sq / 2

    def step(self, rows, target, multiplier):
        """One gradient step of every member (under ``torch.no_grad()``).

        Parameters
        ----------
        rows : dict
            Output of :meth:`prepare`.
        target, multiplier : torch.Tensor of shape (M, n_packed)
            Targets and per-row loss weights in the packed layout (zero on padding).
        """
        activations, f = self._forward(rows)
        g = self._derivative(f, target).mul_(multiplier)
        step = -self.lr * self.scale  # every layer's gradient carries one scale
        weight, bias, w0, b0, decay, bias_decay = self.layers[-1]
        if len(self.layers) == 2:  # the first layer's delta, in its wide buffer
            delta = self._members(rows["delta"], rows)
            torch.mul(g[:, :, None], weight, out=delta)
        else:
            delta = g[:, :, None] * weight
        delta = _relu_backward(delta, activations[-1])
        weight.lerp_(w0, decay).baddbmm_(g[:, None, :], activations[-1], alpha=step)
        if bias is not None:
            bias.lerp_(b0, bias_decay).add_(g.sum(1, keepdim=True), alpha=step)
        for i in range(len(self.layers) - 2, 0, -1):
            weight, bias, w0, b0, decay, bias_decay = self.layers[i]
            inputs = activations[i]
            # Backpropagate through W_l before it moves.
            if i > 1:
                new_delta = _relu_backward(torch.bmm(delta, weight), inputs)
            else:
                new_delta = self._members(rows["delta"], rows)
                torch.bmm(delta, weight, out=new_delta)
                new_delta = _relu_backward(new_delta, inputs)
            weight.lerp_(w0, decay).baddbmm_(delta.transpose(1, 2), inputs, alpha=step)
            if bias is not None:
                bias.lerp_(b0, bias_decay).add_(delta.sum(1), alpha=step)
            delta = new_delta
        weight, bias, w0, b0, decay, bias_decay = self.layers[0]
        X, wide = rows["X"], rows["delta"]
        V = weight.view(weight.shape[0], weight.shape[1], -1)
        weight.lerp_(w0, decay)
        if rows["identity"]:
            V.baddbmm_(X.transpose(1, 2), wide, alpha=step)
        else:
            V.index_add_(
                0, rows["arms"], torch.bmm(X.transpose(1, 2), wide), alpha=step
            )
        if bias is not None:
            bias.lerp_(b0, bias_decay).add_(delta.sum(1), alpha=step)

    def finish(self):
        """Write the wide first layer back into the module's ``(M, m, K' d)`` weight."""
        target = self.module.layers[0].weight.detach()
        M, m = target.shape[:2]
        target.view(M, m, self.layers[0][0].shape[0], -1).copy_(
            self.layers[0][0].permute(2, 3, 0, 1)
        )


def _relu_backward(delta, activation):
    # delta * 1[activation > 0], in place (what autograd itself calls for ReLU).
    return torch.ops.aten.threshold_backward.grad_input(
        delta, activation, 0, grad_input=delta
    )


def _per_member(values, M, n, like):
    """``values`` of shape (n,) or (M, n), or None (ones), as an (M, n) tensor."""
    if values is None:
        return like.new_ones(M, n)
    values = torch.as_tensor(values, dtype=like.dtype, device=like.device)
    return values.expand(M, n)


def ensemble_gradient_descent(
    module,
    X,
    actions,
    targets,
    weights,
    theta0,
    *,
    alpha,
    learning_rate,
    n_steps,
    batch_size=None,
    rng=None,
    loss="squared",
    reduction="mean",
    host_actions=None,
    staging=None,
):
    """Run ``n_steps`` plain-SGD steps of every member's proximal loss at once.

    Member ``j`` descends ``sum_i w_ji l(f_j(x_i), y_ji) + s alpha ||theta_j -
    theta0_j||^2 / 2`` (``s = scale^2``); with ``reduction="mean"`` both terms are
    divided by the member's own total weight ``sum_i w_ji`` (1 if it is zero), so
    the penalty weight is ``s alpha / n_j`` as in
    ``proximal_gradient_descent``, whose steps, batches and
    divergence test this function repeats for each member.

    Parameters
    ----------
    module : StackedBanditMLP
        The members, updated in place.
    X : torch.Tensor of shape (n, d) or (n, K, d)
        Rows of the pulled arms: the raw context for the disjoint encoding, the
        pulled arm's vector for per-arm contexts (or all arms' vectors).
    actions : torch.Tensor of shape (n,) or None
        Pulled arms; used for the disjoint blocks and for 3-D ``X`` only.
    targets : torch.Tensor of shape (n,) or (M, n)
        Rewards, the same for every member, or each member's (e.g. perturbed).
    weights : torch.Tensor of shape (n,) or (M, n), or None
        Row weights, shared or per member (e.g. bootstrap counts or 0/1 masks).
    theta0 : list of torch.Tensor
        Each member's penalty centre, stacked as ``module.parameters()``.
    alpha : float
        Penalty strength lambda.
    learning_rate : float
        SGD step size.
    n_steps : int
        Gradient steps.
    batch_size : int or None, default=None
        Rows per step, drawn without replacement and the same for every member;
        None for full batch.
    rng : numpy.random.Generator or None, default=None
        Draws the mini-batches (needed when ``batch_size < n``).
    loss : {"squared", "bce"}, default="squared"
        ``(f - y)^2 / 2``, or the logistic loss ``softplus(f) - y f`` on the logit
        ``f`` (gradient ``sigmoid(f) - y``).
    reduction : {"mean", "sum"}, default="mean"
        Divide each member's objective by its total weight, or not.
    host_actions : ndarray of shape (n,) or None, default=None
        ``actions`` in host memory, when the caller has them: the disjoint
        packing lays its tiles out from them (no copy back to the host).
    staging : HostStaging or None, default=None
        The reusable host buffer through which the layouts and the mini-batches'
        indices go to the device (one copy a batch, pinned on CUDA).

    Returns
    -------
    objective : numpy.ndarray of shape (M,)
        Each member's objective after the last step, on all rows.

    Raises
    ------
    NumericalError
        If some member's objective overflows or rises a thousandfold. The
        parameters are left where the steps took them; the caller restores them.

    Examples
    --------
    >>> import torch
    >>> from skbandit.networks._ensemble import (
    ...     StackedBanditMLP, ensemble_gradient_descent)
    >>> net = StackedBanditMLP(4, 2, 3, hidden_layer_sizes=(6,), disjoint=True)
    >>> theta0 = [p.detach().clone() for p in net.parameters()]
    >>> X, actions = torch.randn(5, 4), torch.tensor([0, 1, 0, 1, 1])
    >>> objective = ensemble_gradient_descent(
    ...     net, X, actions, torch.randn(3, 5), None, theta0,
    ...     alpha=1.0, learning_rate=0.01, n_steps=10)
    >>> objective.shape
    (3,)
    """
    if loss not in ("squared", "bce"):
        raise ValueError(f'loss must be "squared" or "bce", got {loss!r}.')
    if reduction not in ("mean", "sum"):
        raise ValueError(f'reduction must be "mean" or "sum", got {reduction!r}.')
    M, n = module.n_members, X.shape[0]
    mean = reduction == "mean"
    y = _per_member(targets, M, n, X)
    w = _per_member(weights, M, n, X)
    # The mean divides by the total weight: integer weights act as repeated rows.
    n_eff = w.sum(1)
    n_eff = torch.where(n_eff > 0, n_eff, torch.ones_like(n_eff))
    coef = module.scale**2 * alpha / (n_eff if mean else torch.ones_like(n_eff))
    stepper = _StackedSGD(module, theta0, learning_rate, coef, loss)

    batch = StackedRows(stepper, X, actions, y, w, n_eff, mean, batch_size)
    batch.host_actions, batch.staging = host_actions, staging
    with torch.no_grad():
        every_row, steps = step_batches(
            batch, n_steps, n, batch_size, rng, X.device, staging
        )
        start = None
        for packed in steps:
            if start is None:
                start = stepper.objective(*packed)
            stepper.step(*packed)
        stepper.finish()
        total = stepper.objective(*(every_row or batch(None)))
    total = total.double().cpu().numpy()
    bad = _diverged(None if start is None else start.double().cpu().numpy(), total)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise NumericalError(
            f"Training member {j} of the ensemble diverged (objective "
            f"{float(start[j]) if start is not None else float('nan'):.3g} -> "
            f"{total[j]:.3g}): {_divergence_hint(mean)}. "
            "The policy was left unchanged (its networks restored)."
        )
    return total
