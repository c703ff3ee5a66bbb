"""A training's rows: packed for the network, drawn in batches, and the data term.

:func:`~skbandit.networks._training.proximal_gradient_descent` steps over what
:class:`TrainingRows` lays out: a disjoint :class:`~skbandit.networks.BanditMLP`
takes its rows grouped by arm into tiles (:meth:`~skbandit.networks.BanditMLP.pack`),
any other module the plain rows.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import itertools

import torch

__all__ = [
    "StackedRows",
    "TrainingRows",
    "forward_packed",
    "staged_rows",
    "step_batches",
]


def _pack(module, X, actions, host_actions=None, staging=None):
    """:meth:`BanditMLP.pack`, or the plain rows for any other module."""
    if hasattr(module, "pack"):
        return module.pack(X, actions, host_actions, staging)
    return {"X": X, "actions": actions}


def staged_rows(module, X, actions, host_actions, chosen, staging):
    """``(idx, rows)``: the device indices of the host rows ``chosen`` and their
    packed rows, the indices sent with the tile layout in one staged copy.

    ``host_actions`` are every row's arms on the host (or None: the layout is then
    read from the device's arms, in a second copy).
    """
    arms = None if host_actions is None else host_actions[chosen]
    if arms is not None and X.ndim == 2 and getattr(module, "disjoint", False):
        layout = module.tile_layout(arms)
        idx, tiles, index = staging.to_device(
            [chosen, layout["arms"], layout["index"]], X.device
        )
        return idx, module.pack_tiles(X[idx], layout, tiles, index)
    (idx,) = staging.to_device([chosen], X.device)
    return idx, _pack(module, X[idx], actions[idx], arms, staging)


def _pack_values(module, rows, values):
    return module.pack_values(rows, values) if hasattr(module, "pack") else values


def forward_packed(module, rows):
    """Outputs of the pulled arms; any module's scores of every arm, then picked."""
    if hasattr(module, "forward_packed"):
        return module.forward_packed(rows)
    actions = rows["actions"]
    scores = module(rows["X"])
    return scores[torch.arange(actions.shape[0], device=actions.device), actions]


class TrainingRows:
    """A training's rows, and how a batch of them enters the data term.

    ``stepper`` is the hand-written backward pass when it applies, else None;
    ``staging`` the reusable host buffer the layouts and indices go to the device
    through (:class:`~skbandit.networks._device_buffer.HostStaging`), or None.
    """

    def __init__(self, module, criterion, X, actions, rewards, sample_weight):
        self.module, self.criterion, self.stepper = module, criterion, None
        self.host_actions, self.unweighted = None, sample_weight is None
        self.staging = None
        self.X, self.actions, self.rewards, self.n = X, actions, rewards, X.shape[0]
        self.mean = criterion.reduction == "mean"
        self.w = torch.ones_like(rewards) if sample_weight is None else sample_weight
        # The mean divides by the total weight: integer weights act as repeated rows.
        self.n_eff = float(self.n if sample_weight is None else self.w.sum()) or 1.0

    def set_batch_size(self, batch_size):
        """Rows per step (None: all); ``full`` when a step takes every row."""
        self.batch_size = batch_size
        self.full = batch_size is None or batch_size >= self.n

    def batch(self, idx, chosen=None):
        """Packed rows, rewards and per-row loss multipliers of the rows ``idx``
        (``chosen``: the same indices on the host; ``idx`` None: every row, the
        host ``chosen`` alone: sent here, with the layout, through the staging)."""
        module, arms = self.module, self.host_actions
        if idx is None and chosen is None:
            rows = _pack(module, self.X, self.actions, arms, self.staging)
            r, wb, divisor = self.rewards, self.w, self.n_eff
        else:
            if idx is None:
                idx, rows = staged_rows(
                    module, self.X, self.actions, arms, chosen, self.staging
                )
            else:
                arms = None if arms is None or chosen is None else arms[chosen]
                rows = _pack(module, self.X[idx], self.actions[idx], arms, self.staging)
            r, wb = self.rewards[idx], self.w[idx]
            # Unbiased for the summed data term, a weighted mean for the mean: of
            # unit weights, the batch's size (their float32 sum, read for free).
            total = float(idx.shape[0]) if self.unweighted else float(wb.sum())
            divisor = (total or 1.0) if self.mean else self.batch_size / self.n
        divisor = divisor if (self.mean or idx is not None) else 1.0
        if self.stepper is not None:
            self.stepper.prepare(rows)
        return (
            rows,
            _pack_values(module, rows, r),
            _pack_values(module, rows, wb) / divisor,
        )

    def objective(self, rows, r_p, c_p):
        """The data term at the current parameters, as a float."""
        with torch.no_grad():
            if self.stepper is not None:
                return self.stepper.objective_data_term(rows, r_p, c_p)
            out = forward_packed(self.module, rows)
            return float(self.criterion(out, r_p, c_p, n_rows=1.0))


class StackedRows:
    """``batch(idx, chosen)`` of
    :func:`~skbandit.networks._ensemble.ensemble_gradient_descent`: the prepared rows,
    targets and per-row loss multipliers of the rows ``idx`` (``chosen`` the same on
    the host; ``chosen`` alone: sent here with the layout; neither: every row)."""

    host_actions = staging = None

    def __init__(self, stepper, X, actions, y, w, n_eff, mean, batch_size):
        self.stepper, self.module = stepper, stepper.module
        self.X, self.actions, self.y, self.w = X, actions, y, w
        self.n_eff, self.mean, self.batch_size = n_eff, mean, batch_size

    def _layout(self, rows, values):
        """(M, n) values in the packed row order, zero on padding."""
        if "index" not in rows:
            return values
        out = values.new_zeros(values.shape[0], rows["X"].shape[0] * rows["X"].shape[1])
        out[:, rows["index"]] = values
        return out

    def __call__(self, idx, chosen=None):
        module, X, host_actions, n_eff = (
            self.module,
            self.X,
            self.host_actions,
            self.n_eff,
        )
        rows = None
        if idx is None and chosen is not None:
            idx, rows = staged_rows(
                module, X, self.actions, host_actions, chosen, self.staging
            )
        if idx is None:
            Xb, ab, yb, wb = X, self.actions, self.y, self.w
            divisor = n_eff if self.mean else torch.ones_like(n_eff)
        else:
            Xb, yb, wb = X[idx], self.y[:, idx], self.w[:, idx]
            ab = None if self.actions is None else self.actions[idx]
            if self.mean:  # a weighted mean of the batch
                divisor = wb.sum(1)
                divisor = torch.where(divisor > 0, divisor, torch.ones_like(divisor))
            else:  # unbiased for the summed data term
                divisor = torch.full_like(n_eff, self.batch_size / X.shape[0])
        if rows is None and (module.disjoint or X.ndim == 3):
            # the layout from the host's arms when they are at hand (no read back)
            arms = None
            if host_actions is not None and (idx is None or chosen is not None):
                arms = host_actions if idx is None else host_actions[chosen]
            rows = module.pack(Xb, ab, arms, self.staging)
        rows = self.stepper.prepare({"X": Xb} if rows is None else rows)
        return rows, self._layout(rows, yb), self._layout(rows, wb / divisor[:, None])


def step_batches(batch, n_steps, n, batch_size, rng, device, staging=None):
    """The rows of every gradient step, packed by ``batch(idx)``.

    Returns ``(every_row, steps)``. When a step takes all ``n`` rows
    (``batch_size`` None or at least ``n``), ``every_row`` is ``batch(None)``,
    packed once, and each of the ``n_steps`` steps reuses it (packing costs as much
    as a step). Otherwise ``every_row`` is None and each step draws ``batch_size``
    rows without replacement from ``rng`` as it comes, so the draws interleave with
    the steps as they always have: ``batch(idx, chosen)`` gets them on the device
    and, as drawn, on the host; with ``staging`` (a reusable host buffer)
    ``batch(None, chosen)`` gets them on the host only and sends them itself, with
    the batch's tile layout, in one copy.
    """
    if batch_size is None or batch_size >= n:
        every_row = batch(None)
        return every_row, itertools.repeat(every_row, n_steps)

    def mini_batches():
        for _ in range(n_steps):
            chosen = rng.choice(n, batch_size, replace=False)
            if staging is None:
                yield batch(torch.as_tensor(chosen).to(device), chosen)
            else:  # sent by the batch with its layout, from reusable (pinned) memory
                yield batch(None, chosen)

    return None, mini_batches()
