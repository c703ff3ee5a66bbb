"""The precision ``U`` of the neural tangent features, with its inverse kept up to date.

Neural UCB, Neural Thompson Sampling, the combinatorial neural bandits and the neural
logistic bandits explore with the width ``||phi(x)||_{U^{-1}}`` of the tangent features
``phi = g(x; theta) / sqrt(m)`` (:func:`~skbandit.networks.tangent_features`), where::

    U_0 = alpha I,    U += w phi(x_{i, a_i}) phi(x_{i, a_i})^T   per observed arm

The weights ``w`` are the rounds' sample weights, or the logistic papers' variance
weights ``mu'(f(x_i))`` frozen at insertion. Several chosen arms (a slate) are one
rank-``k`` update. :class:`TangentPrecision` keeps either the diagonal of ``U`` (what
the experiments of these papers use) or the exact ``U^{-1}``, updated by
Sherman-Morrison-Woodbury in blocks of 256 rows. Like ``RidgeBlocks`` for the linear
policies, it is the policy's state; an update returns a new object, so that a failed
update leaves the old one in place.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
import torch
from skorch.utils import to_numpy

from skbandit.exceptions import NumericalError
from skbandit.networks._mlp import BanditMLP
from skbandit.networks._tangent import (
    _disjoint_square_sum,
    tangent_features,
    tangent_quadratic,
    tangent_square_sum,
)

__all__ = ["TangentPrecision"]

#: Largest parameter count for ``kind="full"`` (a p x p float64 inverse, 2 GiB).
MAX_FULL_PARAMETERS = 16384
#: Rows per Woodbury block of a full update.
_WOODBURY_BLOCK = 256


class TangentPrecision:
    """``U = alpha I + sum_i w_i phi_i phi_i^T``, diagonal or full, and its inverse.

    Parameters
    ----------
    n_parameters : int
        ``p``, the length of the tangent features.
    alpha : float
        The prior precision ``U_0 = alpha I``.
    kind : {"diag", "full"}, default="diag"
        Keep the diagonal of ``U`` only, or the exact ``U^{-1}``.

    Attributes
    ----------
    covariance : ndarray of shape (p,) or (p, p)
        ``U^{-1}``, or the inverse of ``U``'s diagonal.

    Examples
    --------
    >>> import torch
    >>> from skbandit.networks import BanditMLP, TangentPrecision
    >>> net = BanditMLP(4, 2, hidden_layer_sizes=(6,))
    >>> U = TangentPrecision(30, alpha=1.0, kind="full")
    >>> X = torch.ones(3, 2, 4)
    >>> U = U.updated(net, X, torch.tensor([0, 1, 1]))
    >>> f, q = U.quadratic(net, X)
    >>> tuple(q.shape)
    (3, 2)
    """

    def __init__(self, n_parameters, alpha, kind="diag"):
        if kind == "full" and n_parameters > MAX_FULL_PARAMETERS:
            raise ValueError(
                f'covariance="full" keeps a p x p matrix; this network has '
                f"p={n_parameters} parameters (limit {MAX_FULL_PARAMETERS}). Use "
                'covariance="diag" (as the neural bandit experiments do) or a '
                "smaller network."
            )
        self.kind = kind
        if kind == "full":
            self._inverse = np.eye(n_parameters) / alpha  # U^{-1}
        else:
            self._diagonal = np.full(n_parameters, float(alpha))  # diag(U)
        self._device_inverse = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_device_inverse"] = None  # a device tensor: rebuilt on demand
        return state

    @property
    def covariance(self):
        """``U^{-1}`` (``"full"``) or the inverse of ``U``'s diagonal (``"diag"``)."""
        return self._inverse if self.kind == "full" else 1.0 / self._diagonal

    def _new(self, value):
        new = object.__new__(TangentPrecision)
        new.kind, new._device_inverse = self.kind, None
        setattr(new, "_inverse" if self.kind == "full" else "_diagonal", value)
        return new

    def updated(self, module, X, actions, weights=None):
        """``U`` plus ``sum_i w_i phi_i phi_i^T`` over the chosen arms, as a new object.

        Parameters
        ----------
        module : torch.nn.Module
            The network, at the parameters the features are taken at.
        X : torch.Tensor of shape (n, d) or (n, K, d)
            Contexts of the rows.
        actions : torch.Tensor of shape (n,)
            The chosen arm of each row; a round with ``k`` chosen arms gives ``k``
            rows, one rank-``k`` update.
        weights : torch.Tensor of shape (n,) or None, default=None
            ``w_i`` (sample weights, or variance weights); zero skips a row.

        Returns
        -------
        precision : TangentPrecision
            The updated precision; ``self`` is unchanged.
        """
        if self.kind == "diag" and isinstance(module, BanditMLP) and module.disjoint:
            return self._updated_blocks(module, X, actions, weights)
        if self.kind == "diag":
            inc = to_numpy(tangent_square_sum(module, X, actions, weights))
            new = self._diagonal + inc.astype(np.float64)
            if not np.all(np.isfinite(new)):
                raise NumericalError("Non-finite gradient features; U was not updated.")
            return self._new(new)
        _, phi = tangent_features(module, X)
        rows = torch.arange(X.shape[0], device=X.device)
        Phi = to_numpy(phi[rows, actions]).astype(np.float64)  # (n, p)
        w = np.ones(Phi.shape[0]) if weights is None else to_numpy(weights)
        w = w.astype(float)
        keep = w > 0
        Phi, w = Phi[keep], w[keep]
        cov = self._inverse
        for start in range(0, Phi.shape[0], _WOODBURY_BLOCK):
            P = Phi[start : start + _WOODBURY_BLOCK]
            wc = w[start : start + _WOODBURY_BLOCK]
            CP = cov @ P.T  # (p, b)
            inner = np.diag(1.0 / wc) + P @ CP
            cov = cov - CP @ np.linalg.solve(inner, CP.T)
        cov = (cov + cov.T) / 2
        if not np.all(np.isfinite(cov)):
            raise NumericalError("Non-finite gradient features; U was not updated.")
        return self._new(cov)

    def _updated_blocks(self, module, X, actions, weights):
        """The diagonal update of a disjoint :class:`BanditMLP`, touching what changes.

        ``phi`` of arm ``k`` is zero in the other arms' first-layer blocks: a round
        changes only the pulled arms' blocks and the later layers (for the digits
        bandit, 6,500 of 64,100 entries). So the new diagonal is the old one with
        those entries increased, and the float32 ``1/U`` kept on the device, if the
        old object has it, is copied with those entries recomputed rather than
        rebuilt from all ``p``. The values are the dense update's: there, every
        other entry gains exactly zero.
        """
        n = X.shape[0]
        w = (
            torch.ones(n, dtype=X.dtype, device=X.device)
            if weights is None
            else weights
        )
        arms, blocks, rest = _disjoint_square_sum(module, X, actions, w)
        m, K, d = blocks.shape[1], module.n_actions, module.n_features
        p1 = m * K * d
        pulled = to_numpy(arms)
        diagonal = self._diagonal.copy()
        first = diagonal[:p1].reshape(m, K, d)  # a view
        touched = first[:, pulled] + to_numpy(blocks).astype(np.float64).transpose(
            1, 0, 2
        )
        others = diagonal[p1:] + to_numpy(rest).astype(np.float64)
        if not (np.all(np.isfinite(touched)) and np.all(np.isfinite(others))):
            raise NumericalError("Non-finite gradient features; U was not updated.")
        first[:, pulled] = touched
        diagonal[p1:] = others
        new = self._new(diagonal)
        cached = self._device_inverse
        if cached is not None:  # 1/U in float32, as _device_tensor computes it
            device = cached.device
            inverse = cached.clone()
            inverse[:p1].view(m, K, d)[:, arms.to(device)] = torch.as_tensor(
                (1.0 / touched).astype(np.float32), device=device
            )
            inverse[p1:] = torch.as_tensor(
                (1.0 / others).astype(np.float32), device=device
            )
            new._device_inverse = inverse
        return new

    def quadratic(self, module, X):
        """Network outputs and ``phi^T U^{-1} phi`` of every arm.

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
        q : torch.Tensor of shape (n, K)
            The quadratic forms, in the network's dtype.
        """
        inverse = self._device_tensor(X.device)
        with torch.no_grad():
            if self.kind == "diag":
                return tangent_quadratic(module, X, inverse)
            f, phi = tangent_features(module, X)
            return f, ((phi @ inverse) * phi).sum(-1)

    def _device_tensor(self, device):
        cached = self._device_inverse
        if cached is None or cached.device != device:
            value = self.covariance.astype(np.float32)
            cached = self._device_inverse = torch.as_tensor(value, device=device)
        return cached
