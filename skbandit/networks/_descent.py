"""Gradient steps of (2.3) for :class:`BanditMLP` with a hand-written backward pass.

Autograd records a graph, allocates every intermediate gradient and then lets the
optimizer read them back: for the papers' small network (one hidden layer of 100)
that bookkeeping costs more than the two GEMMs a step needs (PERFORMANCE.md). The MLP's
backward pass is short enough to write out::

    delta_L = g w_L^T * 1[z_L > 0],        g_i = c_i (f(x_i) - r_i)
    grad W_l = scale * delta_l^T a_{l-1},  delta_{l-1} = (delta_l W_l) * 1[z_{l-1} > 0]

and each plain-SGD step with the proximal penalty ``coef (theta - theta_0)`` is applied
in place as ``W <- lerp(W, W_0, lr coef) - lr grad W`` (one ``lerp_`` and one fused
multiply-add per layer). The disjoint first layer is stored as ``(K, d, m)`` so that a
tile of rows of arm ``k`` reads its block with one index and its gradient lands with
one ``index_add_`` (or a ``baddbmm_`` when every arm has one tile). In the papers'
case (one hidden layer, no biases, tiles, squared loss) a CPU training runs the same
step with its loop invariants hoisted (:meth:`HandGradientSGD._tiled_steps`).

:func:`proximal_gradient_descent` uses this path for a :class:`BanditMLP` under plain
SGD and :class:`SquaredLoss` or :class:`LogisticLoss` and autograd otherwise; the
tests check both give the same parameters.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import contextlib
import threading

import torch
from torch.utils.weak import WeakIdKeyDictionary

from skbandit.networks._tiled import power, sq_norm, tiled_loop

__all__ = ["GraphSlots", "HandGradientSGD"]

#: Replay a training's full-batch steps as one captured CUDA graph. Each step of the
#: papers' small network is a dozen short kernels, and on a GPU Python's launches of
#: them, not the arithmetic, set the pace (``docs/performance.md``); a replayed graph
#: costs one launch per step. Set to False to launch every kernel eagerly.
USE_CUDA_GRAPHS = True
#: Fewer steps than this run eagerly: capturing a graph costs about two steps.
_MIN_GRAPH_STEPS = 4
#: The graphs' memory is bounded: at most this many captured graphs are alive at
#: once in the process (:class:`GraphSlots`). A training's graph is reset (its
#: memory pool released) when the training's steps end, so whatever the number of
#: trainings the device holds at most this many graph pools; a training that finds
#: every slot taken (trainings on other threads) steps eagerly. Every capture warms
#: up on one side stream per device: ``torch.cuda.Stream()`` hands out a different
#: stream of a pool of 32 at each call, and the caching allocator keeps freed blocks
#: per stream.
MAX_LIVE_GRAPHS = 1
_SIDE_STREAMS = {}


class GraphSlots:
    """At most ``limit`` captured graphs alive at once.

    :meth:`graph` hands out a new graph while a slot is free, and resets it (its
    memory pool released) and frees its slot when the block ends, an error
    included; with every slot taken it hands out None, and the caller runs its
    steps eagerly. A block given a ``key`` keeps its graph alive after it ends
    normally (a J-step graph, replayed by later trainings of the same shapes):
    the next block with that key gets it back, and a block that finds no free
    slot takes the slot of a kept graph not in use (reset then), so the limit
    holds whatever the number of shapes. ``live`` and ``peak`` count the graphs
    alive now and at most.
    """

    def __init__(self, limit):
        self.limit, self.live, self.peak = int(limit), 0, 0
        self._lock = threading.Lock()
        self._kept = {}  # key -> graph alive and not in use

    def kept(self, key):
        """Whether a graph is kept (alive, not in use) under ``key``."""
        return key in self._kept

    def _take(self, key):
        """``(graph, free)``: the graph kept under ``key``, or whether a slot was
        taken for a new one (a kept graph reset to free one, if need be)."""
        with self._lock:
            graph = self._kept.pop(key, None)
            if graph is not None:
                return graph, True
            while self.live >= self.limit and self._kept:
                self._kept.pop(next(iter(self._kept))).reset()
                self.live -= 1
            free = self.live < self.limit
            if free:
                self.live += 1
                self.peak = max(self.peak, self.live)
            return None, free

    @contextlib.contextmanager
    def graph(self, make, key=None):
        """A graph from ``make()`` (or the one kept under ``key``) for the block,
        or None when no slot is free."""
        graph, free = self._take(key)
        if not free:
            yield None
            return
        ended = False
        try:
            graph = make() if graph is None else graph
            yield graph
            ended = True
        finally:
            with self._lock:
                keep = ended and key is not None and key not in self._kept
                if keep:
                    self._kept[key] = graph
                else:
                    self.live -= 1
            if not keep and graph is not None:
                graph.reset()  # the pool goes now, not when it is collected


#: The process's graph slots (every device).
GRAPHS = GraphSlots(MAX_LIVE_GRAPHS)


def _store_blocks_first(weight, n_actions):
    """Lay a disjoint first layer's ``(m, K d)`` weight out in ``(K, d, m)`` order.

    The steps read and write that layer as ``K`` blocks of shape ``(d, m)``: stored in
    that order, the blocks are a view of the parameter, and a training copies the
    layer neither in nor back (two ``K d m`` copies per training before). The values
    and the ``(m, K d)`` shape are unchanged (every reader of the weight -- ``view``,
    ``reshape``, ``state_dict``, a pickle -- sees the same tensor; only its strides
    differ), and so are the results: the steps' kernels see the same contiguous
    ``(K, d, m)`` blocks as before. Done once; later trainings find it laid out.
    """
    m = weight.shape[0]
    if not weight.view(m, n_actions, -1).permute(1, 2, 0).is_contiguous():
        with torch.no_grad():
            blocks = weight.view(m, n_actions, -1).permute(1, 2, 0).contiguous()
            weight.data = blocks.view(-1, m).t()


def _relu_backward(delta, activation):
    # delta * 1[activation > 0] in one kernel (what autograd itself calls for ReLU).
    return torch.ops.aten.threshold_backward(delta, activation, 0)


def _mirrored_halves(X):
    """Half the width of rows ``X`` whose two halves are equal, else ``None``.

    The papers' symmetric initialisation feeds ``[x; x] / sqrt(2)`` (mirrored
    inputs); the check costs one pass over the rows per training, against the
    ``2 n d m`` multiply-adds per step it halves.
    """
    d = X.shape[-1]
    if d % 2 or d == 0:
        return None
    half = d // 2
    return half if torch.equal(X[..., :half], X[..., half:]) else None


class TensorMemo:
    """Values computed from tensors, kept while the tensors are unchanged.

    A value is kept per owner tensor (weakly: it goes with its owner) together with
    the storage and version counter of each tensor it was computed from; every
    in-place write, a rollback's ``copy_`` included, bumps the version, so a value
    is handed back only while none of them was written since.
    """

    def __init__(self):
        self._kept = WeakIdKeyDictionary()

    @staticmethod
    def _key(tensors, extra):
        return (*((t.data_ptr(), t._version) for t in tensors), *extra)

    def get(self, owner, tensors, *extra):
        """The value kept for ``owner`` at these tensors' states, else None."""
        kept = self._kept.get(owner)
        if kept is None or kept[0] != self._key(tensors, extra):
            return None
        return kept[1]

    def put(self, owner, tensors, value, *extra):
        """Keep ``value`` for ``owner`` at these tensors' current states."""
        self._kept[owner] = (self._key(tensors, extra), value)
        return value


#: The sum and difference of each centre's mirrored halves, by centre tensor.
_MIRRORED_CENTRES = TensorMemo()


def _mirrored_centre(W0, halves):
    """``(W0a + W0b, W0a - W0b)`` of the ``(K, d, m)`` centre blocks ``W0``.

    The centre ``theta_0`` stays the same from one training to the next: its halves'
    sum and difference are kept with the centre's storage and version counter
    (two passes over the first layer saved per training).
    """
    base = W0._base if W0._base is not None else W0
    kept = _MIRRORED_CENTRES.get(base, (W0,), halves)
    if kept is None:
        W0a, W0b = W0[:, :halves], W0[:, halves:]
        kept = _MIRRORED_CENTRES.put(base, (W0,), (W0a + W0b, W0a - W0b), halves)
    return kept


class HandGradientSGD:
    """Plain-SGD steps of the proximal squared loss on a :class:`BanditMLP`.

    Parameters
    ----------
    module : BanditMLP
        Updated in place (a disjoint first layer is stored in ``(K, d, m)`` order
        on first use, see :func:`_store_blocks_first`).
    theta0 : list of torch.Tensor
        Penalty centre, one tensor per parameter in ``module.parameters()`` order.
    lr : float
        Step size.
    coef : float
        Penalty weight: the gradient gains ``coef (theta - theta_0)``.
    loss : {"squared", "logistic"}, default="squared"
        The data term: ``(f - r)^2 / 2``, or the binary cross-entropy on the logit
        ``f``, ``log(1 + e^f) - r f``. Their gradients in ``f`` are ``f - r`` and
        ``sigmoid(f) - r``: the rest of the backward pass is the same.

    Attributes
    ----------
    sq_distance : float or None
        ``||theta - theta_0||^2`` after the last :meth:`steps`, where the papers'
        case computed it on the way from its own offsets (None otherwise).
    """

    sq_distance = None

    def __init__(self, module, theta0, lr, coef, loss="squared"):
        self.module = module
        self.logistic = loss == "logistic"
        self.scale = float(module.scale)
        self.lr, self.decay = float(lr), float(lr) * float(coef)
        layers = list(module.layers)
        if module.disjoint:
            _store_blocks_first(layers[0].weight, module.n_actions)
        centres = iter(theta0)
        # (weight, bias, weight_0, bias_0) per layer, on the module's own storage.
        self.layers = []
        for layer in layers:
            w0 = next(centres)
            b0 = next(centres) if layer.bias is not None else None
            b = None if layer.bias is None else layer.bias.detach()
            self.layers.append([layer.weight.detach(), b, w0, b0])
        first = self.layers[0]
        if module.disjoint:
            m, K, d = first[0].shape[0], module.n_actions, module.n_features
            # Block k of the first layer as V[k] = W[:, k*d:(k+1)*d].T, shape (d, m):
            # a contiguous view of the module's own storage (no copy in, none back).
            first[0] = first[0].view(m, K, d).permute(1, 2, 0)
            first[2] = first[2].view(m, K, d).permute(1, 2, 0).contiguous()

    def prepare(self, rows):
        """Mark whether packed ``rows`` hold exactly one tile per arm, in order
        (:meth:`BanditMLP.pack` marks it on the host; other packings are read)."""
        if "index" in rows and "identity" not in rows:
            arms, n_actions = rows["arms"], self.module.n_actions
            rows["identity"] = arms.numel() == n_actions and bool(
                (arms == torch.arange(n_actions, device=arms.device)).all()
            )
        return rows

    # ------------------------------------------------------------------ passes
    def _forward(self, rows):
        weight, bias = self.layers[0][:2]
        X = rows["X"]
        if "index" in rows:
            blocks = (
                weight
                if rows["identity"]
                else torch.index_select(weight, 0, rows["arms"])
            )
            z = torch.bmm(X, blocks)
        else:
            z = X @ weight.T
        if bias is not None:
            z = z + bias
        activations = [X]
        for weight, bias, _, _ in self.layers[1:-1]:
            a = torch.relu(z)
            activations.append(a)
            z = a @ weight.T
            if bias is not None:
                z = z + bias
        a = torch.relu(z)
        activations.append(a)
        return activations

    def _output(self, activations):
        """Network outputs ``f`` on the flattened rows."""
        weight, bias = self.layers[-1][:2]
        last = activations[-1]
        flat = last.reshape(-1, last.shape[-1])
        f = torch.mv(flat, weight[0]).mul_(self.scale)
        return f if bias is None else f.add_(bias * self.scale)

    def _residual(self, activations, target):
        """``f - r`` for the squared loss (the logistic loss goes through ``f``)."""
        weight, bias = self.layers[-1][:2]
        last = activations[-1]
        flat = last.reshape(-1, last.shape[-1])
        if bias is not None:
            target = target - bias * self.scale
        return torch.addmv(-target, flat, weight[0], alpha=self.scale)

    def _loss(self, activations, target, multiplier, value):
        """The loss's gradient in ``f`` and, if ``value``, ``sum_i c_i l(f_i, r_i)``.

        The gradient is ``f - r`` or ``sigmoid(f) - r`` (before the multiplier); the
        value is None unless asked for (it costs a reduction and a synchronisation),
        a float, or with ``value="tensor"`` a 0-d tensor (no synchronisation).
        """
        if self.logistic:
            f = self._output(activations)
            total = None
            if value:
                terms = torch.nn.functional.softplus(f) - target * f
                total = (terms * multiplier).sum()
            return torch.sigmoid(f).sub_(target), _read(total, value)
        diff = self._residual(activations, target)
        total = (diff * diff * multiplier).sum() / 2 if value else None
        return diff, _read(total, value)

    def objective_data_term(self, rows, target, multiplier, as_tensor=False):
        """``sum_i multiplier_i l(f_i, r_i)`` at the current parameters: a float,
        or a 0-d tensor with ``as_tensor`` (read later, with other values)."""
        activations = self._forward(rows)
        return self._loss(
            activations,
            target.reshape(-1),
            multiplier.reshape(-1),
            "tensor" if as_tensor else True,
        )[1]

    def step(self, rows, target, multiplier, data_term=False):
        """One gradient step on ``sum_i multiplier_i l(f_i, r_i) + penalty``.

        Call it under ``torch.no_grad()`` (the in-place updates are not recorded).

        Parameters
        ----------
        rows : dict
            Output of :meth:`BanditMLP.pack`, passed through :meth:`prepare`.
        target, multiplier : torch.Tensor
            Rewards and per-row loss weights in the packed layout (zero on padding).
        data_term : bool, default=False
            Also return the data term at the parameters before the step (what
            :meth:`objective_data_term` gives), from this step's forward pass.

        Returns
        -------
        data : float or None
            The data term before the step, if asked for.
        """
        activations = self._forward(rows)
        multiplier = multiplier.reshape(-1)
        g, data = self._loss(activations, target.reshape(-1), multiplier, data_term)
        g = g * multiplier
        lr, decay, scale = self.lr, self.decay, self.scale
        # The gradient of layer l is scale * delta_l^T a_{l-1}; the scale is folded
        # into the step size.
        weight, bias, w0, b0 = self.layers[-1]
        last = activations[-1]
        flat = last.reshape(-1, last.shape[-1])
        delta = _relu_backward(torch.outer(g, weight[0]), flat)
        weight.lerp_(w0, decay)
        weight[0].addmv_(flat.T, g, alpha=-lr * scale)
        if bias is not None:
            bias.lerp_(b0, decay).sub_(lr * scale * g.sum())
        for i in range(len(self.layers) - 2, -1, -1):
            weight, bias, w0, b0 = self.layers[i]
            inputs = activations[i]
            if i > 0:  # backpropagate through W_l before it moves
                flat = inputs.reshape(-1, inputs.shape[-1])
                new_delta = _relu_backward(delta @ weight, flat)
                weight.lerp_(w0, decay).addmm_(delta.T, flat, alpha=-lr * scale)
            elif "index" in rows:
                tiles = delta.view(*inputs.shape[:2], -1)
                weight.lerp_(w0, decay)
                if rows["identity"]:
                    weight.baddbmm_(inputs.transpose(1, 2), tiles, alpha=-lr * scale)
                else:
                    grads = torch.bmm(inputs.transpose(1, 2), tiles)
                    weight.index_add_(0, rows["arms"], grads, alpha=-lr * scale)
            else:
                weight.lerp_(w0, decay).addmm_(delta.T, inputs, alpha=-lr * scale)
            if bias is not None:
                bias.lerp_(b0, decay).sub_(delta.sum(0), alpha=lr * scale)
            if i > 0:
                delta = new_delta
        return data

    def _tiled_one_hidden(self, rows):
        """Whether :meth:`_tiled_steps` implements :meth:`step` for these rows."""
        return (
            not self.logistic
            and len(self.layers) == 2
            and all(layer[1] is None for layer in self.layers)
            and "index" in rows
        )

    def _tiled_steps(self, rows, target, multiplier, n_steps, data_term):
        """``n_steps`` of :meth:`step` in the papers' case, its loop invariants hoisted.

        The case of the neural bandit papers' experiments (and of issue 10's speed
        target): one hidden layer, no biases, the disjoint encoding in tiles, the
        squared loss. A step is then two batched GEMMs and a few vector operations,
        and at ``m = 100`` on a few hundred rows the general :meth:`step`'s Python
        and allocations (the layer loop, views, ``-r``, fresh outputs of ``bmm`` and
        ``index_select``, an out-of-place ReLU) cost about a sixth of its time
        (measured: 28.4 ms against 22.7 ms for 100 steps on 300 digits rows, one
        thread). This is the same step with the views, ``-r`` and the output buffers
        made once and the ReLU applied in place.

        Mirrored inputs (``[x; x] / sqrt(2)``, the papers' symmetric initialisation,
        see :func:`_mirrored_halves`) train the half-width sum of the two weight
        halves instead: the same parameters in exact arithmetic, at half the
        first layer's multiply-adds (float32 rounding differs, within 1e-6).
        """
        W, _, W0, _ = self.layers[0]  # (K, d, m) blocks
        X = rows["X"]  # (n_tiles, size, d)
        halves = _mirrored_halves(X)
        if halves is None:
            terms = tiled_loop(
                self, rows, W, W0, X, 1.0, target, multiplier, n_steps, data_term
            )
            self.sq_distance += sq_norm(self.layers[1][0] - self.layers[1][2])
            return terms
        # z = W_a x_h + W_b x_h = (W_a + W_b) x_h, and both halves get the gradient
        # G = x_h delta^T: their sum S descends on 2 G, their difference D only
        # decays towards D_0 (the penalty), in closed form after the steps.
        Wa, Wb = W[:, :halves], W[:, halves:]
        S, D = Wa + Wb, Wa - Wb
        S0, D0 = _mirrored_centre(W0, halves)
        terms = tiled_loop(
            self,
            rows,
            S,
            S0,
            X[..., :halves].contiguous(),
            2.0,
            target,
            multiplier,
            n_steps,
            data_term,
        )
        # D - D0 decays by c = (1 - decay)^J: D = D0 + c E, with E = D_before - D0.
        # ||W - W0||^2 of the two halves is (||S - S0||^2 + ||D - D0||^2) / 2.
        E, c = D.sub_(D0), power(1.0 - self.decay, n_steps)
        self.sq_distance = (self.sq_distance + c * c * sq_norm(E)) / 2 + sq_norm(
            self.layers[1][0] - self.layers[1][2]
        )
        D = torch.add(D0, E, alpha=c)
        torch.add(S, D, out=Wa).mul_(0.5)
        torch.sub(S, D, out=Wb).mul_(0.5)
        return terms

    def steps(self, rows, target, multiplier, n_steps, data_term=False):
        """``n_steps`` full-batch calls of :meth:`step` on the same rows.

        On the CPU, the papers' case runs :meth:`_tiled_steps` (the same step with
        its loop invariants hoisted). On a CUDA device the first step runs eagerly
        (capture needs the memory and kernels it warms up) and the next
        ``n_steps - 1`` replay one captured graph of a step: the same kernels on the
        same storage, so the same parameters.

        Returns
        -------
        before, after : float or None
            With ``data_term``, the data term before the first step, and after the
            last one where the papers' case computed it on the way (None otherwise).
        """
        device = target.device
        if device.type == "cpu" and self._tiled_one_hidden(rows):
            return self._tiled_steps(rows, target, multiplier, n_steps, data_term)
        if USE_CUDA_GRAPHS and device.type == "cuda" and n_steps >= _MIN_GRAPH_STEPS:
            with GRAPHS.graph(torch.cuda.CUDAGraph) as graph:
                if graph is not None:
                    return self._replayed_steps(
                        graph, rows, target, multiplier, n_steps, data_term
                    )
        data = self.step(rows, target, multiplier, data_term) if n_steps else None
        for _ in range(n_steps - 1):
            self.step(rows, target, multiplier)
        return data, None

    def _replayed_steps(self, graph, rows, target, multiplier, n_steps, data_term):
        """:meth:`steps` on a CUDA device: the first step eagerly, the next ones
        replays of ``graph``, captured from the second."""
        device = target.device
        current = torch.cuda.current_stream(device)
        side = _side_stream(device)
        side.wait_stream(current)
        with torch.cuda.stream(side):  # capture needs a warmed-up side stream
            data = self.step(rows, target, multiplier, data_term)
        current.wait_stream(side)
        # Recorded, not run. torch.cuda.graph() also empties the allocator's cache
        # before capturing, and that is needed: a finished graph's memory pool can
        # only be released outside a capture, which the allocator does only when
        # an allocation fails; without it the pools of earlier trainings pile up
        # until a capture runs out of memory (seen at round ~3,500 of a Fashion-
        # MNIST run on an 80 GB H100).
        with torch.cuda.graph(graph):
            self.step(rows, target, multiplier)
        for _ in range(n_steps - 1):
            graph.replay()
        return data, None


def _side_stream(device):
    """The one stream on which every capture on ``device`` warms up."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    stream = _SIDE_STREAMS.get(index)
    if stream is None:
        stream = _SIDE_STREAMS[index] = torch.cuda.Stream(device)
    return stream


def _read(total, value):
    """``total`` as a float, unless ``value`` asks for the tensor (or it is None)."""
    if total is None or value == "tensor":
        return total
    return float(total)
