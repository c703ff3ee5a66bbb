"""All the steps of a training as one function over static buffers.

The papers' network (one hidden layer, no biases, the disjoint encoding, the
squared loss) trained on mini-batches used to send each step's rows and tile
layout to the device in a copy of its own and launch the step's kernels one by
one. Here the host draws every step's rows first (the same draws, in the same
order: the steps never touch the generator), lays each step's rows out in tiles
of one *fixed* shape, and sends all ``J`` layouts with the training's step size,
decay and weight factor in **one** copy, from host memory allocated once (pinned
on CUDA), into a device buffer allocated once (:class:`StepProgram`).
:func:`run_steps` then runs all ``J`` steps from those buffers alone: no value read
back, no allocation inside a step, nothing the host computes for one training
baked into the kernels' arguments. On a CUDA device that function is captured once
as a graph and the graph replayed by every later training of the same shapes: one
launch per training, where a step used to cost a dozen (:func:`descend`). A
full-batch training on CUDA (the papers' schedule) runs the same function with one
layout of every row for all its steps: one replay where it replayed a one-step
graph ``J`` times. Where capture fails, the training has already run eagerly
(capture follows a warm-up that is the training itself); a warning says so once,
and later trainings step one at a time as before.

The fixed layout: a batch of ``B`` rows over ``K`` arms goes into ``T`` tiles of
``S = ceil(B / K)`` rows (:func:`tile_shape`), each arm's rows in consecutive
tiles; ``T`` is the most tiles any split of ``B`` rows into ``K`` arms needs, so
every batch fits. Unused slots read row 0 with a zero loss multiplier, unused
tiles arm 0: their gradient is exactly zero. The work is at most about twice a
batch's rows, a price a launch-bound GPU does not see.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import contextlib
import warnings
from collections import Counter

import numpy as np
import torch

from skbandit.networks import _descent

__all__ = ["StepProgram", "descend", "fixed_layouts", "run_steps", "tile_shape"]

#: Device types whose mini-batch trainings run as :func:`run_steps` (the CPU runs
#: the very function a GPU captures).
JSTEP_DEVICES = frozenset({"cpu", "cuda"})
#: On the CPU the J-step form runs while the rows have at most this many features.
#: It saves each step's Python and packing, and its fixed tiles cost a gather of
#: their weight blocks and up to twice the rows: measured on the two-core machine
#: (one thread, ``K = 10``, ``m = 100``, ``B = 64``, ``J = 50``, per training), 8.1
#: against 11.8 ms at ``d = 64``, 23.3 against 25.9 at 256, 33.8 against 31.7 at
#: 384 and 87 against 69 at 784 (the per-step path's tiles need no gather there).
CPU_MAX_FEATURES = 256
#: Device types whose full-batch trainings run as :func:`run_steps` (on the CPU
#: the Gram and direct loops of :mod:`~skbandit.networks._tiled` are faster).
EVERY_ROW_DEVICES = frozenset({"cuda"})
#: Device types on which :func:`run_steps` is captured as one graph.
GRAPH_DEVICES = frozenset({"cuda"})
#: Set when a capture failed: later trainings step one mini-batch at a time.
_CAPTURE_FAILED = False
#: What the trainings did, for the GPU session's counts: ``"captured"`` (a first
#: training of its shapes, run eagerly and captured), ``"replayed"`` (one graph
#: replay), ``"eager"`` (no graph: the CPU, or no graph slot free).
COUNTS = Counter()
#: Row capacities of the static rows grow by doubling from this.
_MIN_CAPACITY = 64

_threshold_backward = torch.ops.aten.threshold_backward.grad_input


def tile_shape(n_rows, n_actions, tiles_per_arm=1):
    """``(S, T)``: rows per tile and tiles of a layout that holds any ``n_rows``
    rows over ``n_actions`` arms (an arm of ``c`` rows takes ``ceil(c / S)``
    tiles, at most ``(B + K (S - 1)) / S`` in all). ``S`` is ``B / K`` divided by
    ``tiles_per_arm``: with ``a`` of them, the slots number about ``(1 + 1 / a) B``
    at most."""
    size = max(1, -(-n_rows // (n_actions * tiles_per_arm)))
    tiles = min(n_rows, (n_rows + n_actions * (size - 1)) // size)
    return size, max(tiles, 1)


def fixed_layouts(chosen, arms, n_actions, size, tiles):
    """Each step's tile layout, ``(L, T S + T)`` int64: the row read into each slot
    (-1: unused), then the arm of each tile (unused tiles: arm 0).

    ``chosen`` and ``arms`` are ``(L, B)``: the rows of each of ``L`` batches and
    their arms. Each arm's rows fill its tiles in order, as
    :meth:`~skbandit.networks.BanditMLP.tile_layout` fills its own.
    """
    L, B = arms.shape
    counts = np.zeros((L, n_actions), dtype=np.int64)
    np.add.at(counts, (np.arange(L)[:, None], arms), 1)
    order = np.argsort(arms, axis=1, kind="stable")
    first_row = np.cumsum(counts, axis=1) - counts
    rank = np.empty_like(arms)
    sorted_arms = np.take_along_axis(arms, order, axis=1)
    np.put_along_axis(
        rank,
        order,
        np.arange(B) - np.take_along_axis(first_row, sorted_arms, axis=1),
        axis=1,
    )
    n_tiles = -(-counts // size)
    tile_end = np.cumsum(n_tiles, axis=1)
    first_tile = np.take_along_axis(tile_end - n_tiles, arms, axis=1)
    slots = (first_tile + rank // size) * size + rank % size
    out = np.full((L, tiles * size + tiles), -1, dtype=np.int64)
    np.put_along_axis(out, slots, chosen, axis=1)
    tile_arm = (np.arange(tiles)[None, None, :] >= tile_end[:, :, None]).sum(axis=1)
    out[:, tiles * size :] = np.where(tile_arm < n_actions, tile_arm, 0)
    return out


class StepProgram:
    """The static buffers of :func:`run_steps` for one set of shapes.

    Allocated once and refilled by every training of those shapes, in place (a
    captured graph reads them at their addresses): the training's rows, targets
    and weights (``capacity`` rows, refilled on the device), the centre of the
    penalty, and one device buffer that takes, in one copy from a host buffer
    (pinned on CUDA), every step's layout and the scalars that change from one
    training to the next (step size, decay, weight factor). The network's first
    layer ``W`` (``(K, d, m)`` blocks) and output weights ``w2`` are updated in
    place; the program is made for their storage (part of its key).
    """

    def __init__(self, stepper, X, n_layouts, n_steps, size, tiles, mean, capacity):
        W, w2 = stepper.layers[0][0], stepper.layers[1][0][0]
        K, d, m = W.shape
        device, dtype = X.device, X.dtype
        self.W, self.w2, self.scale, self.mean = W, w2, stepper.scale, mean
        self.n_steps, self.size, self.tiles = n_steps, size, tiles
        slots = size * tiles
        empty = dict(device=device, dtype=dtype)
        self.X = torch.empty(capacity, d, **empty)
        self.r, self.w = torch.empty(capacity, **empty), torch.empty(capacity, **empty)
        self.W0, self.w20 = torch.empty(K, d, m, **empty), torch.empty(m, **empty)
        # one host and one device buffer: the layouts (int64), then 3 scalars
        n_index = n_layouts * (slots + tiles)
        n_bytes = 8 * n_index + 8 * 3
        pinned = device.type == "cuda"
        self._host = torch.empty(n_bytes, dtype=torch.uint8, pin_memory=pinned)
        self._host.is_host_staging = True  # told apart by the traffic counter
        self._view, self._sent = self._host.numpy(), None
        self._device = torch.empty(n_bytes, dtype=torch.uint8, device=device)
        self.layouts = self._device[: 8 * n_index].view(torch.int64)
        self.layouts = self.layouts.view(n_layouts, slots + tiles)
        self.scalars = self._device[8 * n_index :].view(torch.float64)
        self._scalars_at = 8 * n_index
        # scratch, written by every step (out=): nothing allocated inside a step
        self.Xp = torch.empty(slots, d, **empty)
        self.blocks = torch.empty(tiles, d, m, **empty)
        self.z = torch.empty(tiles, size, m, **empty)
        self.g, self.mask = torch.empty(slots, **empty), torch.empty(slots, m, **empty)
        self.grads = torch.empty(tiles, d, m, **empty)

    def fill(self, X, r, w, W0, w20, layouts, scalars):
        """Refill the buffers for a training: ``X``, ``r``, ``w`` (device rows),
        ``W0``, ``w20`` (the centre) copied on the device; ``layouts`` (int64) and
        ``scalars`` (step size, decay, weight factor) from the host, in one copy."""
        n = X.shape[0]
        self.X[:n].copy_(X)
        self.r[:n].copy_(r.reshape(-1))
        self.w[:n].copy_(w.reshape(-1))
        self.W0.copy_(W0)
        self.w20.copy_(w20)
        if self._sent is not None and not self._sent.query():
            self._sent.synchronize()  # the last copy must leave the host buffer
        view = self._view
        view[: self._scalars_at] = np.ascontiguousarray(layouts).view(np.uint8).ravel()
        view[self._scalars_at :] = np.asarray(scalars, np.float64).view(np.uint8)
        self._device.copy_(self._host, non_blocking=True)  # the training's one copy
        if self._device.device.type == "cuda":
            self._sent = torch.cuda.Event()
            self._sent.record()


def run_steps(program):
    """All ``program.n_steps`` steps of a training (each on its mini-batch, or all on
    every row), from the program's buffers alone.

    Each step is :meth:`~skbandit.networks._descent.HandGradientSGD.step` of the
    papers' network on its rows (the same arithmetic on a different tiling): with
    ``g = c (f - r)`` times the step size, ``M = w_2 * 1[z > 0]``,
    ``w_2 <- lerp(w_2, w_2^0, decay) + h^T g`` and each tile's block
    ``W_k <- lerp(W_k, W_k^0, decay) + X_t^T (g * M)``. The step size, decay and
    weights are read from device tensors, never as Python numbers: what a captured
    graph replays is right for any training of the same shapes.
    """
    p = program
    slots = p.size * p.tiles
    m = p.W.shape[2]
    read = p.layouts[:, :slots]
    src = read.clamp(min=0)
    step, decay, factor = _training_scalars(p)
    # each slot's loss multiplier times the step size: zero on unused slots
    c = torch.where(read >= 0, p.w[src], 0)
    if p.mean:  # a weighted mean over the batch
        total = c.sum(1, keepdim=True)
        c = c / total.masked_fill(total == 0, 1)
    else:  # unbiased for the summed data term
        c = c * factor
    c = c * step
    r = p.r[src]
    arms = p.layouts[:, slots:]
    h, z = p.z.view(slots, m), p.z
    w2_rows, Xt = p.w2.expand(slots, m), p.Xp.view(p.tiles, p.size, -1)
    delta = p.mask.view(p.tiles, p.size, m)
    n_layouts = read.shape[0]
    if n_layouts == 1:  # every step on the same rows: gathered once
        torch.index_select(p.X, 0, src[0], out=p.Xp)
    for j in range(p.n_steps):
        k = j % n_layouts
        if n_layouts > 1:
            torch.index_select(p.X, 0, src[k], out=p.Xp)
        torch.index_select(p.W, 0, arms[k], out=p.blocks)
        torch.bmm(Xt, p.blocks, out=z)
        torch.relu_(z)
        torch.addmv(r[k], h, p.w2, beta=-1, alpha=p.scale, out=p.g)  # f - r
        p.g.mul_(c[k])
        _threshold_backward(w2_rows, h, 0, grad_input=p.mask)  # before w2 moves
        p.mask.mul_(p.g[:, None])
        p.w2.lerp_(p.w20, decay).addmv_(h.T, p.g)
        torch.bmm(Xt.transpose(1, 2), delta, out=p.grads)
        p.W.lerp_(p.W0, decay).index_add_(0, arms[k], p.grads)


def _training_scalars(program):
    """The step size, decay and weight factor, as 0-d tensors on the device (a
    Python number here would be frozen into a captured graph)."""
    return program.scalars.to(program.X.dtype).unbind()


def uses_j_steps(stepper, rows, rng, n_steps):
    """Whether a training of ``rows`` (mini-batches drawn from ``rng``, or every
    row at each step) runs as :func:`run_steps`."""
    module, device = rows.module, rows.X.device
    devices = EVERY_ROW_DEVICES if rows.full else JSTEP_DEVICES
    return (
        n_steps > 0
        and device.type in devices
        and not (_CAPTURE_FAILED and device.type in GRAPH_DEVICES)
        and (rows.full or rng is not None)
        and rows.host_actions is not None
        and rows.X.ndim == 2
        and (device.type != "cpu" or rows.X.shape[1] <= CPU_MAX_FEATURES)
        and getattr(module, "disjoint", False)
        and not stepper.logistic
        and len(stepper.layers) == 2
        and all(layer[1] is None for layer in stepper.layers)
        and rows.rewards.ndim == 1
    )


#: Programs of the CPU (no graph): kept as a graph is, at most one per process.
_HOST_PROGRAMS = _descent.GraphSlots(1)


class _Kept:
    """A program kept between trainings, with its captured graph (or None)."""

    def __init__(self, key, graph=None):
        self.key, self.program, self.graph = key, None, graph
        self.captured, self.replays = False, 0

    def reset(self):
        if self.graph is not None:
            if self.captured and not self.replays:
                if len(_UNREPLAYED) > 1024:  # keys of long-gone networks
                    _UNREPLAYED.clear()
                _UNREPLAYED[self.key] += 1
            self.graph.reset()
        self.program = self.graph = None


#: Shapes whose graph was reset before any replay this many times (trainings of
#: other shapes took its slot in between: two policies trained in turn) are no
#: longer captured: their trainings run :func:`run_steps` eagerly, without a slot,
#: rather than capture a graph at each training and evict the other's.
_MAX_UNREPLAYED = 2
_UNREPLAYED = Counter()


def _key(stepper, X, n_layouts, n_steps, size, tiles, mean, capacity):
    W, w2 = stepper.layers[0][0], stepper.layers[1][0][0]
    return (
        X.device,
        X.dtype,
        X.shape[1],
        n_layouts,
        n_steps,
        size,
        tiles,
        mean,
        capacity,
        float(stepper.scale),
        *((t.data_ptr(), tuple(t.shape), t.stride()) for t in (W, w2)),
    )


def _capacity(n, every_row):
    """The static rows' capacity for ``n`` rows: a power of two for mini-batches
    (their shapes do not depend on it); for every row (the tiles take them all)
    ``n`` rounded up to a sixteenth of the next power of two (at most 12.5 %
    padding rows, eight captures per doubling of the rows: 40 over 1,797 rows)."""
    if n <= _MIN_CAPACITY:
        return _MIN_CAPACITY
    if not every_row:
        return 1 << (n - 1).bit_length()
    step = 1 << max((n - 1).bit_length() - 4, 0)
    return -(-n // step) * step


def descend(stepper, rows, n_steps, rng):
    """Run the ``n_steps`` steps of a training as :func:`run_steps`.

    Draws every step's rows from ``rng`` (as the per-step loop draws them; with
    ``rows.full`` every step takes every row), lays them out in the fixed tiles,
    sends the layouts and the training's scalars in one copy, and runs the steps:
    on CUDA one replay of a graph kept for these shapes (captured at the first
    training of them, which runs eagerly).
    """
    X, n, K = rows.X, rows.n, rows.module.n_actions
    capacity = _capacity(n, rows.full)
    if rows.full:  # one layout of every row, in tiles for up to ``capacity`` rows
        chosen, factor = np.arange(n)[None], 1.0
        size, tiles = tile_shape(capacity, K, tiles_per_arm=2)
    else:
        B = rows.batch_size
        chosen = np.stack([rng.choice(n, B, replace=False) for _ in range(n_steps)])
        size, tiles = tile_shape(B, K)
        factor = 1.0 if rows.mean else n / B
    layouts = fixed_layouts(chosen, rows.host_actions[chosen], K, size, tiles)
    scalars = [-stepper.lr * stepper.scale, stepper.decay, factor]
    shape = (len(layouts), n_steps, size, tiles, rows.mean, capacity)
    W0, w20 = stepper.layers[0][2], stepper.layers[1][2][0]
    key = _key(stepper, X, *shape)
    graphs = (
        _descent.USE_CUDA_GRAPHS
        and X.device.type in GRAPH_DEVICES
        and _UNREPLAYED[key] < _MAX_UNREPLAYED
    )
    slots = _descent.GRAPHS if graphs else _HOST_PROGRAMS
    make = (lambda: _Kept(key, _new_graph())) if graphs else (lambda: _Kept(key))
    try:
        with slots.graph(make, key=key) as kept:
            program = None if kept is None else kept.program
            if program is None:
                program = StepProgram(stepper, X, *shape)
                if kept is not None:
                    kept.program = program
            program.fill(X, rows.rewards, rows.w, W0, w20, layouts, scalars)
            _run(kept if graphs else None, program, X.device)
    except _CaptureFailed:
        pass  # the steps ran eagerly before the capture; the graph was dropped


class _CaptureFailed(Exception):
    pass


def _run(kept, program, device):
    """The steps: replayed, or run eagerly and then captured for later trainings
    (``kept``: the graph and whether it holds the steps), or eagerly alone."""
    global _CAPTURE_FAILED
    if kept is None:
        COUNTS["eager"] += 1
        run_steps(program)
        return
    if kept.captured:
        COUNTS["replayed"] += 1
        kept.replays += 1
        _replay(kept.graph)
        return
    COUNTS["captured"] += 1
    with _warm_up(device):  # the training itself, eagerly
        run_steps(program)
    try:
        _capture(kept.graph, program)
    except Exception as error:
        if not _CAPTURE_FAILED:
            warnings.warn(
                f"Capturing a training's steps as one CUDA graph failed ({error!r}); "
                "later trainings step one mini-batch at a time.",
                RuntimeWarning,
                stacklevel=4,
            )
        _CAPTURE_FAILED = True
        raise _CaptureFailed from error
    kept.captured = True


# The device's side of a graph, apart so that the CPU tests can stand in for it.
def _new_graph():
    return torch.cuda.CUDAGraph()


@contextlib.contextmanager
def _warm_up(device):
    """Run the block on the side stream every capture on ``device`` warms up on."""
    current = torch.cuda.current_stream(device)
    side = _descent._side_stream(device)
    side.wait_stream(current)
    with torch.cuda.stream(side):
        yield
    current.wait_stream(side)


def _capture(graph, program):
    # Recorded, not run (see HandGradientSGD._replayed_steps on the allocator's cache).
    with torch.cuda.graph(graph):
        run_steps(program)


def _replay(graph):
    graph.replay()
