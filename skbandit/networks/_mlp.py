"""The neural bandit papers' network: a bias-free ReLU MLP with a sqrt(m) output scale.

The network of Zhou et al. (2020) and Zhang et al. (2021, paper 000, eq. before 2.3)::

    f_1 = W_1 x,   f_l = W_l relu(f_{l-1}),   f(x; theta) = sqrt(m) W_L relu(f_{L-1})

with the mirrored ("NTK") initialisation of Algorithm 1, line 2, so that
``f(x; theta_0) = 0`` for every input whose two halves are equal. One network is shared
by all arms; arm identity enters through the context only.

Shared contexts ``(n, d)`` are scored with the *disjoint* encoding (Li et al. 2010): arm
``k`` sees ``x`` in block ``k`` of a ``K d``-wide input and zeros elsewhere. The module
never builds that input: it stores the first-layer weight as the dense ``(m, K d)``
matrix (same parameters, same order, same count) and applies it per arm block, a tenth
of the FLOPs for ``K = 10``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

__all__ = ["BanditMLP", "LogisticLoss", "SquaredLoss"]


class BanditMLP(nn.Module):
    """ReLU MLP scoring every arm, with the neural bandit papers' parameterisation.

    Parameters
    ----------
    n_features : int
        Length of one context vector: the raw ``d`` for shared contexts (the first
        layer then has ``n_actions * n_features`` inputs, applied per arm block), the
        per-arm vector length otherwise.
    n_actions : int
        Number of arms.
    hidden_layer_sizes : tuple of int, default=(100,)
        Widths of the hidden layers; depth ``L = len(hidden_layer_sizes) + 1``. The
        papers use one layer of ``m = 100``.
    init : {"ntk", "default", "uniform"}, default="ntk"
        ``"ntk"``: the papers' network (no biases, output times ``sqrt(m_last)``,
        mirrored Gaussian initialisation: hidden blocks ``N(0, 4 / m_l)``, output
        ``(w, -w)`` with ``w ~ N(0, 2 / m_last)``); needs even hidden widths. An odd
        input width cannot be mirrored: its first layer is then i.i.d.
        ``N(0, 2 / m_1)`` (the same second moments). ``"default"``: PyTorch's own
        ``nn.Linear`` layers (biases, Kaiming-uniform, no output scale).
        ``"uniform"``: the same without biases, as the authors' code of the
        combinatorial neural bandits (Hwang, Chai, Oh, ICML 2023) builds it.
    disjoint : bool, default=False
        Shared contexts with the disjoint encoding, applied block-wise.

    Attributes
    ----------
    layers : torch.nn.ModuleList
        The ``nn.Linear`` layers, first to output.
    scale : float
        Output multiplier: ``sqrt(m_last)`` under ``"ntk"``, else 1. The tangent
        features are ``g / sqrt(scale ** 2)`` and the penalty weight is
        ``scale ** 2 * alpha``.

    Examples
    --------
    >>> import torch
    >>> from skbandit.networks import BanditMLP
    >>> net = BanditMLP(4, 3, hidden_layer_sizes=(8,))
    >>> x = torch.tensor([[0.5, -0.5, 0.5, -0.5]])  # mirrored halves
    >>> bool(net(x).abs().max() < 1e-6)  # f(x; theta_0) = 0 up to float32 rounding
    True
    """

    def __init__(
        self,
        n_features,
        n_actions,
        *,
        hidden_layer_sizes=(100,),
        init="ntk",
        disjoint=False,
    ):
        super().__init__()
        self.n_features = int(n_features)
        self.n_actions = int(n_actions)
        self.hidden_layer_sizes = tuple(int(m) for m in hidden_layer_sizes)
        self.init = init
        self.disjoint = bool(disjoint)
        if init not in ("ntk", "default", "uniform"):
            raise ValueError(
                f'init must be "ntk", "default" or "uniform", got {init!r}.'
            )
        if not self.hidden_layer_sizes:
            raise ValueError("hidden_layer_sizes needs at least one layer.")
        bias = init == "default"
        if init == "ntk" and any(m % 2 for m in self.hidden_layer_sizes):
            raise ValueError(
                'init="ntk" mirrors every hidden layer and needs even widths; got '
                f"hidden_layer_sizes={self.hidden_layer_sizes}."
            )
        n_in = self.n_features * (self.n_actions if self.disjoint else 1)
        widths = (n_in, *self.hidden_layer_sizes, 1)
        self.layers = nn.ModuleList(
            nn.Linear(a, b, bias=bias)
            for a, b in zip(widths[:-1], widths[1:], strict=True)
        )
        self.scale = math.sqrt(self.hidden_layer_sizes[-1]) if init == "ntk" else 1.0
        if init == "ntk":
            self._ntk_init()

    @torch.no_grad()
    def _ntk_init(self):
        # Algorithm 1, line 2: W_l = [[W, 0], [0, W]], W ~ N(0, 4/m_l); W_L = (w, -w).
        *hidden, out = self.layers
        for i, layer in enumerate(hidden):
            m, n_in = layer.weight.shape
            weight = (
                layer.weight.view(m, self.n_actions, self.n_features)
                if (i == 0 and self.disjoint)
                else layer.weight.view(m, 1, n_in)
            )
            d = weight.shape[2]
            weight.zero_()
            if d % 2:
                weight.normal_(0.0, math.sqrt(2.0 / m))
                continue
            for k in range(weight.shape[1]):  # the disjoint first layer: per arm block
                block = torch.randn(m // 2, d // 2) * math.sqrt(4.0 / m)
                weight[: m // 2, k, : d // 2] = block
                weight[m // 2 :, k, d // 2 :] = block
        m = out.weight.shape[1]
        w = torch.randn(m // 2) * math.sqrt(2.0 / m)
        out.weight.copy_(torch.cat([w, -w])[None])

    # ------------------------------------------------------------------ forward
    def first_layer(self, X):
        """Compute the first layer's pre-activations for every arm.

        Parameters
        ----------
        X : torch.Tensor of shape (n, d) or (n, K, d)
            Shared contexts (disjoint encoding) or per-arm contexts.

        Returns
        -------
        z : torch.Tensor of shape (n, K, m_1)
            First-layer outputs.
        """
        layer = self.layers[0]
        if self.disjoint:
            m = layer.weight.shape[0]
            W = layer.weight.view(m, self.n_actions, self.n_features)
            blocks = W.permute(1, 2, 0)  # (K, d, m): block k of the weight for arm k
            if blocks.is_contiguous():  # stored blocks first, as training lays it out
                # One batched GEMM on the blocks in place: no copy of the weight.
                z = torch.matmul(X, blocks).transpose(0, 1).contiguous()
            else:  # one GEMM: (n, d) @ (d, K m)
                z = (X @ W.permute(2, 1, 0).reshape(self.n_features, -1)).view(
                    X.shape[0], self.n_actions, m
                )
            return z if layer.bias is None else z + layer.bias
        if X.ndim == 2:
            X = X[:, None, :].expand(-1, self.n_actions, -1)
        return layer(X)

    def head(self, z):
        """The layers after the first, from first-layer pre-activations ``z``.

        Parameters
        ----------
        z : torch.Tensor of shape (..., m_1)
            First-layer pre-activations.

        Returns
        -------
        f : torch.Tensor of shape (...)
            Network outputs.
        """
        for layer in self.layers[1:]:
            z = layer(torch.relu(z))
        return z[..., 0] * self.scale

    def forward(self, X, actions=None):
        """Score every arm, or the given arms (skbandit's module contract).

        Parameters
        ----------
        X : torch.Tensor of shape (n, d) or (n, K, d)
            Contexts.
        actions : torch.Tensor of shape (n,), default=None
            If given, return only these arms' scores.

        Returns
        -------
        scores : torch.Tensor of shape (n, K), or (n, 1) with ``actions``
            Network outputs.
        """
        if actions is None:
            return self.head(self.first_layer(X))
        rows = self.pack(X, actions)
        out = self.forward_packed(rows)
        return self.unpack(rows, out)[:, None]

    # ---------------------------------------------------- rows of pulled arms
    def pack(self, X, actions, host_actions=None, staging=None):
        """Arrange pulled-arm rows for :meth:`forward_packed`.

        With the disjoint encoding the rows are grouped by arm into equal tiles
        (zero-padded), so the first layer is one batched GEMM over tiles, each with
        its arm's weight block. The tile size keeps the padded rows within 25% of
        the fewest among a few candidates, one of which is ``ceil(n / K)`` (at most
        ``n`` padding rows however unbalanced the arms are); balanced arms get one
        tile each. Otherwise the pulled arms' vectors, ``(n, d)``.

        Parameters
        ----------
        X : torch.Tensor of shape (n, d) or (n, K, d)
            Contexts of the rounds.
        actions : torch.Tensor of shape (n,)
            Pulled arms.
        host_actions : ndarray of shape (n,), default=None
            The same arms in host memory, when the caller has them: the layout is
            read from them rather than from a copy of ``actions`` to the host (a
            synchronisation on a GPU).
        staging : HostStaging or None, default=None
            Where the layout goes to the device, in one copy from reusable
            (pinned) memory; None: two fresh copies.

        Returns
        -------
        rows : dict
            ``"X"`` (the packed inputs) and, when tiled, ``"arms"`` (the arm of each
            tile), ``"index"`` (flat position of each round in the tiles) and
            ``"identity"`` (one tile per arm, in order).
        """
        if X.ndim == 3:
            return {"X": X[torch.arange(X.shape[0], device=X.device), actions]}
        if not self.disjoint:
            return {"X": X}
        if host_actions is None:
            host_actions = actions.detach().to("cpu", torch.int64).numpy()
        layout = self.tile_layout(host_actions)
        arms, index = layout["arms"], layout["index"]
        if staging is None:
            arms, index = (torch.from_numpy(a).to(X.device) for a in (arms, index))
        else:
            arms, index = staging.to_device([arms, index], X.device)
        return self.pack_tiles(X, layout, arms, index)

    def tile_layout(self, actions):
        """Lay out the tiles of :meth:`pack` for the pulled arms, on the host.

        The layout is integer bookkeeping on n arm labels: in numpy it is a few
        microseconds, where some twenty small torch ops cost ~0.3 ms a training.

        Parameters
        ----------
        actions : array-like of int of shape (n,)
            Pulled arms, in host memory.

        Returns
        -------
        layout : dict
            ``"arms"`` (the arm of each tile) and ``"index"`` (the flat position of
            each round in the tiles), int64 arrays; ``"size"`` (rows per tile),
            ``"tiles"`` and ``"identity"`` (one tile per arm, in order).
        """
        acts = np.asarray(actions, dtype=np.int64)
        n, K = acts.size, self.n_actions
        counts = np.bincount(acts, minlength=K)
        size = _tile_size(counts.tolist())
        n_tiles = -(-counts // size)  # tiles per arm
        order = np.argsort(acts, kind="stable")
        starts = np.cumsum(counts) - counts
        rank = np.empty_like(acts)
        rank[order] = np.arange(n) - starts[acts[order]]
        first_tile = np.cumsum(n_tiles) - n_tiles
        return {
            "arms": np.repeat(np.arange(K), n_tiles),
            "index": (first_tile[acts] + rank // size) * size + rank % size,
            "size": size,
            "tiles": max(int(n_tiles.sum()), 1),
            # One tile per arm, in order: known here, where reading it costs nothing.
            "identity": bool(np.all(n_tiles == 1)),
        }

    def pack_tiles(self, X, layout, arms, index):
        """Arrange rows in the tiles of a :meth:`tile_layout`, as :meth:`pack` does.

        Parameters
        ----------
        X : torch.Tensor of shape (n, d)
            Contexts of the rounds.
        layout : dict
            Output of :meth:`tile_layout` for these rounds' arms.
        arms, index : torch.Tensor
            The layout's ``"arms"`` and ``"index"`` on the device of ``X``.

        Returns
        -------
        rows : dict
            As :meth:`pack` returns them.
        """
        Xp = X.new_zeros(layout["tiles"] * layout["size"], X.shape[1])
        Xp[index] = X
        rows = {"X": Xp.view(layout["tiles"], layout["size"], -1), "arms": arms}
        return {**rows, "index": index, "identity": layout["identity"]}

    def pack_values(self, rows, values):
        """Lay out per-round values (targets, weights) like :meth:`forward_packed`.

        Parameters
        ----------
        rows : dict
            Output of :meth:`pack`.
        values : torch.Tensor of shape (n,)
            One value per round.

        Returns
        -------
        packed : torch.Tensor
            ``values`` in the packed layout, zero on padding.
        """
        if "index" not in rows:
            return values
        n_tiles, size = rows["X"].shape[:2]
        out = values.new_zeros(n_tiles * size)
        out[rows["index"]] = values
        return out.view(n_tiles, size)

    def unpack(self, rows, out):
        """Per-round outputs, shape (n,), from :meth:`forward_packed`'s layout.

        Parameters
        ----------
        rows : dict
            Output of :meth:`pack`.
        out : torch.Tensor
            Output of :meth:`forward_packed`.

        Returns
        -------
        f : torch.Tensor of shape (n,)
            One output per round.
        """
        return out if "index" not in rows else out.reshape(-1)[rows["index"]]

    def forward_packed(self, rows):
        """Compute the pulled arms' outputs in the packed layout (no unpacking).

        Parameters
        ----------
        rows : dict
            Output of :meth:`pack`.

        Returns
        -------
        f : torch.Tensor of shape (n,) or (n_tiles, tile_size)
            Network outputs; padding rows are garbage-free zeros-in, ignored by
            zero weights.
        """
        X = rows["X"]
        layer = self.layers[0]
        if "index" in rows:
            m = layer.weight.shape[0]
            W = layer.weight.view(m, self.n_actions, self.n_features)
            W = W.permute(1, 2, 0)[rows["arms"]]  # (n_tiles, d, m), each tile's block
            z = torch.bmm(X, W)  # (n_tiles, size, m)
            if layer.bias is not None:
                z = z + layer.bias
        else:
            z = layer(X)
        return self.head(z)


def _tile_size(counts):
    """Rows per tile: one tile per arm, unless that pads 50% more rows than tiles do.

    Otherwise the largest candidate within 25% of the fewest padded rows. Fewer,
    larger tiles make faster GEMMs, and one tile per arm needs no gather: a training
    of the papers' NeuralTS on digits with one tile per arm at up to 50% more rows
    took 15.4-16.0 s of CPU against 19.1-22.0 s with the tiles (T = 300, two runs
    each, interleaved on the loaded two-core machine).
    """
    n, largest = sum(counts), max(counts)
    if n == 0:
        return 1
    candidates = {-(-n // (len(counts) * j)) for j in (1, 2, 4)}
    candidates |= {-(-largest // j) for j in range(1, 5)}
    padded = {s: sum(-(-c // s) for c in counts) * s for s in candidates}
    fewest = min(padded.values())
    if padded[largest] <= 1.5 * fewest:
        return largest
    return max(s for s in candidates if padded[s] <= 1.25 * fewest)


class SquaredLoss(nn.Module):
    """Weighted squared loss ``sum_i w_i (f_i - r_i)^2 / 2``, summed or averaged.

    The data term of paper 000's objective (2.3); the proximal penalty
    ``scale^2 alpha ||theta - theta_0||^2 / 2`` is added by the training loop.

    Parameters
    ----------
    reduction : {"mean", "sum"}, default="mean"
        ``"sum"`` is (2.3) as printed; ``"mean"`` divides by ``n_rows``.

    Examples
    --------
    >>> import torch
    >>> from skbandit.networks import SquaredLoss
    >>> SquaredLoss("sum")(torch.tensor([1.0, 2.0]), torch.tensor([0.0, 0.0])).item()
    2.5
    """

    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, y_pred, y_true, weight=None, n_rows=None):
        """Loss value.

        Parameters
        ----------
        y_pred, y_true : torch.Tensor
            Predictions and targets, same shape.
        weight : torch.Tensor or None, default=None
            Per-row weights (zero on padding).
        n_rows : float or None, default=None
            Divisor of the ``"mean"`` reduction (the total weight);
            ``y_true.numel()`` if None.

        Returns
        -------
        loss : torch.Tensor
            Scalar loss.
        """
        terms = self._row_terms(y_pred, y_true)
        if weight is not None:
            terms = terms * weight
        loss = terms.sum()
        if self.reduction == "mean":
            loss = loss / (y_true.numel() if n_rows is None else n_rows)
        return loss

    def _row_terms(self, y_pred, y_true):
        # Halving each term is exact, so the sum is the halved sum to the last bit.
        return (y_pred - y_true) ** 2 / 2


class LogisticLoss(SquaredLoss):
    """Binary cross-entropy on logits, ``sum_i w_i (log(1 + e^f_i) - r_i f_i)``.

    The data term of the objective of Bae and Lee, "Neural Logistic Bandits" (ICML
    2025, arXiv:2505.02069): the network's output ``f`` is the logit of the reward's
    mean ``mu(f) = 1 / (1 + e^-f)``, and the gradient in ``f`` is ``mu(f) - r``.
    ``softplus`` keeps it finite for large ``|f|``.

    Parameters
    ----------
    reduction : {"mean", "sum"}, default="mean"
        ``"sum"`` is the objective as printed; ``"mean"`` divides by ``n_rows``.

    Examples
    --------
    >>> import torch
    >>> from skbandit.networks import LogisticLoss
    >>> round(LogisticLoss("sum")(torch.tensor([0.0]), torch.tensor([1.0])).item(), 4)
    0.6931
    """

    def _row_terms(self, y_pred, y_true):
        return torch.nn.functional.softplus(y_pred) - y_true * y_pred
