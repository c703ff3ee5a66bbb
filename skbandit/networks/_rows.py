"""A training's rows: packed for the network, drawn in batches, and the data term.

:func:`~skbandit.networks._training.proximal_gradient_descent` steps over what
:class:`TrainingRows` lays out: a disjoint :class:`~skbandit.networks.BanditMLP`
takes its rows grouped by arm into tiles (:meth:`~skbandit.networks.BanditMLP.pack`),
any other module the plain rows.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import torch

__all__ = ["TrainingRows", "forward_packed"]


def _pack(module, X, actions, host_actions=None, staging=None):
    """:meth:`BanditMLP.pack`, or the plain rows for any other module."""
    if hasattr(module, "pack"):
        return module.pack(X, actions, host_actions, staging)
    return {"X": X, "actions": actions}


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
        (``chosen``: the same indices on the host)."""
        module, arms = self.module, self.host_actions
        if idx is None:
            rows = _pack(module, self.X, self.actions, arms, self.staging)
            r, wb, divisor = self.rewards, self.w, self.n_eff
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
