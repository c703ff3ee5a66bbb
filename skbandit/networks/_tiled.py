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
  :data:`GRAM_ROWS_PER_FEATURE` times the width ``d``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

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

    ``h`` (the activations, then ``z``) and ``g`` share their last row with ``w_2^0``
    and the lerp's weight, so that ``w_2 <- (1 - decay) w_2 + step [h; w_2^0]^T
    [g; decay / step]`` is one ``addmv_``. The multiplier ``c`` is folded into
    ``g``'s ``addmv`` when it is one constant on the rows: padding rows then give
    ``f = 0`` (zero inputs) and ``r = 0`` exactly.
    """

    def __init__(self, stepper, X, target, multiplier, index):
        n_tiles, size, _ = X.shape
        n, m = n_tiles * size, stepper.layers[0][0].shape[-1]
        self.step, self.decay = -stepper.lr * stepper.scale, stepper.decay
        self.w2, w20 = stepper.layers[1][0][0], stepper.layers[1][2][0]
        self.scale = stepper.scale
        h_rows, g_rows = X.new_empty(n + 1, m), X.new_empty(n + 1)
        h_rows[n], g_rows[n] = w20, (self.decay / self.step if self.step else 0.0)
        self.h, self.g = h_rows[:n], g_rows[:n]
        self._h_rows_t, self._g_rows = h_rows.T, g_rows
        self.z = self.h.view(n_tiles, size, m)  # z, then its ReLU in place
        self.mask = X.new_empty(n_tiles, size, m)  # M = w_2^T * 1[z > 0]
        self._mask_rows, self._w2_rows = self.mask.view(n, m), self.w2.expand(n, m)
        self.g_col = self.g.view(n_tiles, size, 1)
        self.target, self.multiplier = target.reshape(-1), multiplier.reshape(-1)
        self.constant = _constant_on(self.multiplier, index)
        self._neg_r = -self.target if self.constant is None else None

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
        _threshold_backward(self._w2_rows, self.h, 0, grad_input=self._mask_rows)
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
    buffers = _StepBuffers(stepper, X, target, multiplier, rows["index"])
    if rows["identity"] and X.shape[1] < GRAM_ROWS_PER_FEATURE * X.shape[2]:
        return _gram_loop(stepper, buffers, W, W0, X, gain, n_steps, data_term)
    return _direct_loop(stepper, buffers, rows, W, W0, X, gain, n_steps, data_term)


def _gram_loop(stepper, buffers, W, W0, X, gain, n_steps, data_term):
    """The Gram form (one tile per arm): ``Y = X U`` descends on ``X X^T``.

    The decayed sum ``S_j = sum_i (1 - decay)^(j-i) D_i`` is kept as ``shrink * A``
    (a running scalar, renormalised to stay in float range), so that a step adds
    ``D_j / shrink`` to ``A`` in one pass, the mask times ``g`` included.
    """
    z, mask, g = buffers.z, buffers.mask, buffers.g
    keep, a = 1.0 - buffers.decay, gain * buffers.step
    Xt = X.transpose(1, 2)
    U = W - W0
    z0, Y, gram = torch.bmm(X, W0), torch.bmm(X, U), torch.bmm(X, Xt)
    scaled_gram, g_row = torch.empty_like(gram), g.view(X.shape[0], 1, X.shape[1])
    A, shrink, before = torch.zeros_like(Y), 1.0, None
    for j in range(n_steps):
        _add_relu(z0, Y, out=z)
        data = buffers.residual(data_term and j == 0)
        before = data if j == 0 else before
        buffers.backward()
        if j:
            shrink *= keep
            if not 1e-3 < abs(shrink) < 1e3:  # keep A in float range
                A.mul_(shrink)
                shrink = 1.0
        A.addcmul_(mask, buffers.g_col, value=1.0 / shrink)
        # (X X^T) (g * M) = ((X X^T) * g^T) M: g scales the Gram's columns.
        torch.mul(gram, g_row, out=scaled_gram)
        Y.baddbmm_(scaled_gram, mask, beta=keep, alpha=a)
    if n_steps:
        U.baddbmm_(Xt, A, beta=power(keep, n_steps), alpha=a * shrink)
    torch.add(W0, U, out=W)
    stepper.sq_distance = sq_norm(U)
    if not data_term:
        return None, None
    _add_relu(z0, Y, out=z)
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
    m, z = W.shape[2], buffers.z
    Xg, mask_t = X.new_empty(n_tiles, size, d), buffers.mask.transpose(1, 2)
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
        torch.mul(X, buffers.g_col, out=Xg)
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
