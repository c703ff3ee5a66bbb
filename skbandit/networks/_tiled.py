"""The papers' case of the hand-written steps, in two forms of the same arithmetic.

The neural bandit papers' experiments train one hidden layer without biases on the
disjoint encoding, grouped by arm into tiles, under the squared loss
(:meth:`~skbandit.networks._descent.HandGradientSGD._tiled_steps`). A step is then
two batched GEMMs on the first layer and a few passes over the rows. With the first
layer's offset ``U = W - W_0`` (per arm, ``(d, m)``), rows ``X`` (per arm,
``(s, d)``) and ``D = g * 1[z > 0] w_2^T`` (``(s, m)``), a step is::

    z = X W_0 + X U,        U <- (1 - decay) U + a X^T D

(``a`` the step size times the output scale and the mirrored gain). :func:`tiled_loop`
runs it in one of two forms:

- *direct*: both GEMMs each step, ``2 s d m`` multiply-adds per arm;
- *Gram*: with one tile per arm, the steps never need ``U`` itself, only ``Y = X U``,
  and ``Y <- (1 - decay) Y + a (X X^T) D`` is one GEMM of ``s^2 m`` multiply-adds on
  the rows' Gram matrix ``X X^T``, computed once per training. ``U`` is rebuilt after
  the steps from the decayed sum of the ``D``'s, in one GEMM:
  ``U_J = (1 - decay)^J U_0 + a X^T sum_j (1 - decay)^(J-1-j) D_j``. The same
  parameters in exact arithmetic (float rounding differs: ``Y`` is carried from step
  to step rather than recomputed from ``U``), at ``s / (2 d)`` of the direct form's
  GEMM work: it is used while a tile holds fewer rows than
  :data:`GRAM_ROWS_PER_FEATURE` times the width ``d``. As its cost grows with the
  square of the rows, arms of unlike counts are regrouped (one, two or three groups
  of like counts, each padded to its busiest arm, :class:`_GramGroups`).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
import torch

__all__ = ["GRAM_ROWS_PER_FEATURE", "tiled_loop"]

#: The Gram form runs while a tile's rows number fewer than this times the first
#: layer's (half) width ``d``. Its GEMM costs ``s^2 m`` against the direct form's
#: ``2 s d m`` (break-even at ``s = 2 d``), and it makes one more pass over the rows
#: per step (the decayed sum of the ``D``'s). Measured on the two-core machine, one
#: thread, ``K = 10``, ``m = 100``, ``d = 64``: the step's GEMMs take 96 against 194
#: us at ``s = 63``, 234 against 309 us at ``s = 100``, 398 against 399 us at 128.
GRAM_ROWS_PER_FEATURE = 1.5

#: ``grad * 1[activation > threshold]``, written into ``grad_input`` (its ``out=``
#: form, bound once: the op packet's own call costs Python work per step).
_threshold_backward = torch.ops.aten.threshold_backward.grad_input
#: ``relu(a + b)`` into ``out``, one pass (the op autograd's own fusions use).
_add_relu = torch.ops.aten._add_relu.out


def _constant_on(values, index):
    """The one value ``values`` takes at the flat positions ``index``, else None.

    The packed multipliers are zero off ``index`` (the padding rows).
    """
    picked = values.reshape(-1)[index]
    if picked.numel() == 0:
        return None
    first = float(picked[0])
    return first if bool((picked == first).all()) else None


def sq_norm(tensor):
    """``||tensor||^2`` as a float, in one pass (no copy)."""
    return float(torch.linalg.vector_norm(tensor)) ** 2


def power(base, exponent):
    """``base ** exponent``, infinite past float range (a diverging step size: the
    training's objective check then reports it)."""
    try:
        return base**exponent
    except OverflowError:
        return float("inf")


class _StepBuffers:
    """What both forms share: the buffers made once per training, the residual
    ``g = c (f - r)`` from the activations, and ``w_2``'s step.

    ``h`` (the activations, then ``z``; ``(n, m)``) and ``g`` share their last row
    with ``w_2^0`` and the lerp's weight, so that ``w_2 <- (1 - decay) w_2 + step
    [h; w_2^0]^T [g; decay / step]`` is one ``addmv_``. The multiplier ``c`` is
    folded into ``g``'s ``addmv`` when it is one ``constant`` on the rows: padding
    rows then give ``f = 0`` (zero inputs) and ``r = 0`` exactly.
    """

    def __init__(self, stepper, target, multiplier, constant):
        n, m = target.numel(), stepper.layers[0][0].shape[-1]
        self.step, self.decay = -stepper.lr * stepper.scale, stepper.decay
        self.w2, w20 = stepper.layers[1][0][0], stepper.layers[1][2][0]
        self.scale = stepper.scale
        h_rows, g_rows = target.new_empty(n + 1, m), target.new_empty(n + 1)
        h_rows[n], g_rows[n] = w20, (self.decay / self.step if self.step else 0.0)
        self.h, self.g = h_rows[:n], g_rows[:n]  # h: z, then its ReLU in place
        self._h_rows_t, self._g_rows = h_rows.T, g_rows
        self.mask = target.new_empty(n, m)  # M = w_2^T * 1[z > 0]
        self._w2_rows, self.g_col = self.w2.expand(n, m), self.g[:, None]
        self.target, self.multiplier = target.reshape(-1), multiplier.reshape(-1)
        self.constant = constant
        self._neg_r = -self.target if constant is None else None

    def residual(self, data_term):
        """Write ``c (f - r)`` into ``g`` from the activations in ``h``; return the
        data term ``sum_i c_i (f_i - r_i)^2 / 2`` if asked for."""
        w2, scale, c, g, h = self.w2, self.scale, self.constant, self.g, self.h
        if c is None:
            torch.addmv(self._neg_r, h, w2, alpha=scale, out=g)
            data = float((g * g * self.multiplier).sum() / 2) if data_term else None
            g.mul_(self.multiplier)
            return data
        torch.addmv(self.target, h, w2, beta=-c, alpha=scale * c, out=g)
        if not data_term:
            return None
        return float((g * g).sum() / (2 * c)) if c else 0.0

    def backward(self):
        """The mask ``M`` from the activations, and ``w_2``'s step (in place)."""
        _threshold_backward(self._w2_rows, self.h, 0, grad_input=self.mask)
        self.w2.addmv_(
            self._h_rows_t, self._g_rows, beta=1.0 - self.decay, alpha=self.step
        )


def tiled_loop(stepper, rows, W, W0, X, gain, target, multiplier, n_steps, data_term):
    """``n_steps`` of the papers' case on first-layer blocks ``W`` (``(K, d, m)``,
    updated in place, centre ``W0``) whose gradient is ``gain`` times ``X^T delta``.

    Sets ``stepper.sq_distance`` to the first layer's ``||W - W_0||^2``. With
    ``data_term``, returns the data term before the steps and after them (one more
    forward pass on the same buffers), else ``(None, None)``.
    """
    constant = _constant_on(multiplier, rows["index"])
    if rows["identity"] and X.shape[1] < GRAM_ROWS_PER_FEATURE * X.shape[2]:
        groups = _GramGroups(X, rows["index"], target, multiplier, W.shape[2])
        buffers = _StepBuffers(stepper, groups.target, groups.multiplier, constant)
        return _gram_loop(stepper, buffers, groups, W, W0, gain, n_steps, data_term)
    buffers = _StepBuffers(stepper, target, multiplier, constant)
    return _direct_loop(stepper, buffers, rows, W, W0, X, gain, n_steps, data_term)


#: A group of arms costs the Gram form two more torch calls a step (the Gram's
#: scaling and its GEMM), about 5 us on the two-core machine: as much time as some
#: 250,000 of the GEMM's multiply-adds (110 us for 4.9 million at 70 rows per arm).
_GROUP_COST = 250_000


def _group_starts(counts, m):
    """Where each group of arms starts in ``counts`` sorted downwards: the split into
    one, two or three groups, each padded to its busiest arm, of the fewest
    multiply-adds ``sum_groups (arms rows^2 m) + _GROUP_COST`` per group past one."""
    c = np.asarray(counts, dtype=np.float64)
    K, at = c.size, np.arange(c.size)
    square = c**2 * m  # an arm's Gram GEMM at each count
    # two groups: [0, k) at c[0] rows, [k, K) at c[k]; k = 0 is no split
    two = at * square[0] + (K - at) * square + np.where(at > 0, _GROUP_COST, 0)
    # three: [0, k) at c[0], [k, l) at c[k], [l, K) at c[l], 0 < k < l
    k, j = np.meshgrid(at, at, indexing="ij")
    three = k * square[0] + (j - k) * square[k] + (K - j) * square[j]
    three = np.where((k > 0) & (j > k), three + 2 * _GROUP_COST, np.inf)
    if three.min() < two.min():
        return [0, *map(int, np.unravel_index(three.argmin(), three.shape))]
    split = int(two.argmin())
    return [0, split] if split else [0]


class _GramGroups:
    """One tile per arm regrouped for the Gram form: arms of like row counts
    together, each group's tiles cut to its busiest arm (the Gram GEMM's cost grows
    with the square of the rows: on digits at T = 600, two or three groups do 55-62 %
    of the one-tile-per-arm layout's multiply-adds).

    ``X`` and the values are the rows by group, flat; ``parts`` gives each group's
    arms (None: every arm, in order, no copy) and its ``(arms, rows, d)`` inputs.
    """

    def __init__(self, X, index, target, multiplier, m):
        K, size, _ = X.shape
        # The tiled loops run on the CPU: the layout is read from host memory.
        counts = np.bincount(index.numpy() // size, minlength=K)
        order = np.argsort(-counts, kind="stable")
        starts = _group_starts(counts[order], m)
        target, multiplier = target.reshape(K, size), multiplier.reshape(K, size)
        if len(starts) == 1:
            self.parts = [(None, X)]
            self.target, self.multiplier = target.reshape(-1), multiplier.reshape(-1)
            return
        self.parts, targets, multipliers = [], [], []
        for start, stop in zip(starts, [*starts[1:], K], strict=True):
            arms = torch.from_numpy(np.sort(order[start:stop]))
            rows = int(counts[order[start]])
            self.parts.append((arms, X.index_select(0, arms)[:, :rows].contiguous()))
            targets.append(target.index_select(0, arms)[:, :rows].reshape(-1))
            multipliers.append(multiplier.index_select(0, arms)[:, :rows].reshape(-1))
        self.target, self.multiplier = torch.cat(targets), torch.cat(multipliers)


class _GramPart:
    """One group of arms in the Gram form: its inputs, first-layer offset and Gram
    matrix, and its views of the flat row buffers."""

    def __init__(self, arms, X, W, W0, flat, g, offset):
        n_arms, rows, _ = X.shape
        m, stop = W.shape[2], offset + n_arms * rows
        self.arms, self.X = arms, X
        self.W0 = W0 if arms is None else W0.index_select(0, arms)
        self.U = (W if arms is None else W.index_select(0, arms)) - self.W0
        z0, self.Y, self.mask = (t[offset:stop].view(n_arms, rows, m) for t in flat)
        torch.bmm(X, self.W0, out=z0)
        torch.bmm(X, self.U, out=self.Y)
        self.gram = torch.bmm(X, X.transpose(1, 2))
        self.scaled_gram = torch.empty_like(self.gram)
        self.g_row = g[offset:stop].view(n_arms, 1, rows)

    def step(self, keep, a):
        """``Y <- keep Y + a (X X^T) (g * M)``; ``g`` scales the Gram's columns."""
        torch.mul(self.gram, self.g_row, out=self.scaled_gram)
        self.Y.baddbmm_(self.scaled_gram, self.mask, beta=keep, alpha=a)

    def finish(self, W, A, decayed, a):
        """``U <- decayed U + a X^T A`` (``A`` this part's decayed sum of the D's,
        ``a`` None: no step), written into ``W``; returns ``||U||^2``."""
        if a is not None:
            self.U.baddbmm_(self.X.transpose(1, 2), A, beta=decayed, alpha=a)
        if self.arms is None:
            torch.add(self.W0, self.U, out=W)
        else:
            W.index_copy_(0, self.arms, self.W0 + self.U)
        return sq_norm(self.U)


def _gram_loop(stepper, buffers, groups, W, W0, gain, n_steps, data_term):
    """The Gram form (one tile per arm): ``Y = X U`` descends on ``X X^T``.

    The decayed sum ``S_j = sum_i (1 - decay)^(j-i) D_i`` is kept as ``shrink * A``
    (a running scalar, renormalised to stay in float range), so that a step adds
    ``D_j / shrink`` to ``A`` in one pass, the mask times ``g`` included.
    """
    keep, a, h = 1.0 - buffers.decay, gain * buffers.step, buffers.h
    z0, Y = torch.empty_like(h), torch.empty_like(h)
    A, shrink, before = torch.zeros_like(h), 1.0, None
    parts, offset = [], 0
    for arms, X in groups.parts:
        parts.append(
            _GramPart(arms, X, W, W0, (z0, Y, buffers.mask), buffers.g, offset)
        )
        offset += X.shape[0] * X.shape[1]
    for j in range(n_steps):
        _add_relu(z0, Y, out=h)
        data = buffers.residual(data_term and j == 0)
        before = data if j == 0 else before
        buffers.backward()
        if j:
            shrink *= keep
            if not 1e-3 < abs(shrink) < 1e3:  # keep A in float range
                A.mul_(shrink)
                shrink = 1.0
        A.addcmul_(buffers.mask, buffers.g_col, value=1.0 / shrink)
        for part in parts:
            part.step(keep, a)
    decayed, offset, distance = power(keep, n_steps), 0, 0.0
    for part in parts:
        stop = offset + part.Y.shape[0] * part.Y.shape[1]
        A_part = A[offset:stop].view(part.Y.shape)
        distance += part.finish(W, A_part, decayed, a * shrink if n_steps else None)
        offset = stop
    stepper.sq_distance = distance
    if not data_term:
        return None, None
    _add_relu(z0, Y, out=h)
    after = buffers.residual(True)
    return (after if n_steps == 0 else before), after


def _direct_loop(stepper, buffers, rows, W, W0, X, gain, n_steps, data_term):
    """The direct form: both GEMMs each step, into buffers made once per training.

    - the first layer descends in its offset ``U = W - W_0``, so that the penalty's
      pull towards ``W_0`` is a scaling of ``U`` folded into the gradient's GEMM
      (``beta``) and ``z = X W_0 + X U`` starts from ``X W_0`` computed once. With
      several tiles per arm the scaling is a running scalar instead (``U = s V``), so
      no pass over ``U`` per step scales it;
    - ``delta = (g w_2^T) * 1[z > 0]`` is never formed: ``X^T delta`` is
      ``(g * X)^T M`` with ``M = w_2^T * 1[z > 0]``, one pass over the ``n d``
      inputs for ``g`` and one ReLU-backward for ``M``.
    """
    n_tiles, size, d = X.shape
    m = W.shape[2]
    z, g_col = buffers.h.view(n_tiles, size, m), buffers.g.view(n_tiles, size, 1)
    Xg = X.new_empty(n_tiles, size, d)
    mask_t = buffers.mask.view(n_tiles, size, m).transpose(1, 2)
    identity, arms = rows["identity"], rows["arms"]
    # The offset is kept transposed, (K, m, d): its gradient M^T (g * X) is then
    # the GEMM with the untransposed operand, 10-15 % faster than (g * X)^T M
    # at these shapes (measured: 62 against 78 us at 300 rows); the forward
    # reads it through a transposed view at the same speed.
    U = (W - W0).transpose(1, 2).contiguous()
    if identity:
        z0, blocks = torch.bmm(X, W0), U.transpose(1, 2)
    else:
        z0 = torch.bmm(X, W0.index_select(0, arms))
        blocks_t, grads = X.new_empty(n_tiles, m, d), X.new_empty(n_tiles, m, d)
        blocks = blocks_t.transpose(1, 2)
    a, keep = gain * buffers.step, 1.0 - buffers.decay
    shrink = 1.0  # with several tiles per arm, U = shrink * V, V stored in U
    before = None
    for j in range(n_steps):
        if not identity:
            torch.index_select(U, 0, arms, out=blocks_t)
        torch.baddbmm(z0, X, blocks, alpha=shrink, out=z)
        torch.relu_(z)
        data = buffers.residual(data_term and j == 0)
        before = data if j == 0 else before
        buffers.backward()
        torch.mul(X, g_col, out=Xg)
        if identity:
            U.baddbmm_(mask_t, Xg, beta=keep, alpha=a)
            continue
        shrink *= keep
        if not 1e-3 < abs(shrink) < 1e3:  # keep V in float range
            U.mul_(shrink)
            shrink = 1.0
        torch.bmm(mask_t, Xg, out=grads)
        U.index_add_(0, arms, grads, alpha=a / shrink)
    if not identity:
        U.mul_(shrink)
    torch.add(W0, U.transpose(1, 2), out=W)
    stepper.sq_distance = sq_norm(U)  # ||W - W0||^2, in one pass
    if not data_term:
        return None, None
    if not identity:
        torch.index_select(U, 0, arms, out=blocks_t)
    torch.baddbmm(z0, X, blocks, alpha=1.0, out=z)
    torch.relu_(z)
    after = buffers.residual(True)
    return (after if n_steps == 0 else before), after
