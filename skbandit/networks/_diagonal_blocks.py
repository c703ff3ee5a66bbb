"""The diagonal ``U`` of a disjoint network, increased where a round changes it.

``phi`` of arm ``k`` is zero in the other arms' first-layer blocks: a round changes
only the pulled arms' blocks and the later layers (for the digits bandit, 6,500 of
64,100 entries). So those entries of the diagonal are increased, and those of the
float32 ``1/U`` kept on the device, if there is one, recomputed rather than
rebuilt from all ``p``. The values are the dense update's: there, every other entry
gains exactly zero.

On the host the diagonal is a float64 array. A device keeps it there as a float64
tensor (moved once, at its first update there): the increment is computed, checked
and written on the device, and the one value read back is the check that it is
finite (the host's copy of the increment, and the copy of ``1/U`` back to the
device, are gone). The arithmetic is the host's: float64 sums of the float32
increments, and ``1/U`` rounded to float32.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
import torch
from skorch.utils import to_numpy

from skbandit.exceptions import NumericalError
from skbandit.networks import _training
from skbandit.networks._deferred import check_finite
from skbandit.networks._tangent import _disjoint_square_sum

__all__ = ["block_increment"]

_NOT_FINITE = "Non-finite gradient features; U was not updated."


def block_increment(precision, module, X, actions, weights, host_actions=None):
    """``TangentPrecision.increment`` of a disjoint :class:`BanditMLP`'s diagonal.

    Returns the callable that writes it (it cannot fail); raises
    :class:`~skbandit.exceptions.NumericalError`, writing nothing, when the
    increment is not finite. ``host_actions``: the arms in host memory, if known.
    """
    arms, blocks, rest = _disjoint_square_sum(module, X, actions, weights, host_actions)
    shape = blocks.shape[1], module.n_actions, module.n_features
    if X.device.type in _training.HOST_DEVICES:
        return _on_the_host(precision, arms, blocks, rest, shape)
    return _on_the_device(precision, arms, blocks, rest, shape)


def _on_the_host(precision, arms, blocks, rest, shape):
    m, K, d = shape
    p1 = m * K * d
    diagonal = precision._host_diagonal()
    precision._diagonal = diagonal  # a device's master comes back (once)
    pulled = to_numpy(arms)
    first = diagonal[:p1].reshape(m, K, d)  # a view
    # One pulled arm (the online round) is a slice, several a gather.
    where = (slice(None), slice(pulled[0], pulled[0] + 1))
    if pulled.size > 1:
        where = (slice(None), pulled)
    touched = first[where] + to_numpy(blocks).astype(np.float64).transpose(1, 0, 2)
    others = diagonal[p1:] + to_numpy(rest).astype(np.float64)
    if not (np.all(np.isfinite(touched)) and np.all(np.isfinite(others))):
        raise NumericalError(_NOT_FINITE)

    def apply():
        first[where] = touched
        diagonal[p1:] = others
        cached = precision._device_inverse
        if cached is not None:  # 1/U in float32, as _device_tensor computes it
            device = cached.device
            index = where if pulled.size == 1 else (slice(None), arms.to(device))
            cached[:p1].view(m, K, d)[index] = torch.as_tensor(
                (1.0 / touched).astype(np.float32), device=device
            )
            cached[p1:] = torch.as_tensor(
                (1.0 / others).astype(np.float32), device=device
            )

    return apply


def _on_the_device(precision, arms, blocks, rest, shape):
    m, K, d = shape
    p1 = m * K * d
    diagonal = precision._diagonal
    if not isinstance(diagonal, torch.Tensor) or diagonal.device != blocks.device:
        # a copy (never the host array's memory, which older objects may share)
        diagonal = torch.tensor(
            precision._host_diagonal(), dtype=torch.float64, device=blocks.device
        )
        precision._diagonal = diagonal
    first = diagonal[:p1].view(m, K, d)
    touched = first[:, arms] + blocks.to(torch.float64).transpose(0, 1)
    others = diagonal[p1:] + rest.to(torch.float64)
    # The one value read back (with the training's values, after a training).
    check_finite(
        torch.isfinite(touched).all() & torch.isfinite(others).all(), _NOT_FINITE
    )

    def apply():
        first[:, arms] = touched
        diagonal[p1:] = others
        cached = precision._device_inverse
        if cached is not None:  # 1/U in float32, as _device_tensor computes it
            cached[:p1].view(m, K, d)[:, arms] = (1.0 / touched).to(cached.dtype)
            cached[p1:] = (1.0 / others).to(cached.dtype)

    return apply
