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
policies, it is the policy's state; :meth:`~TangentPrecision.updated` returns a new
object, so that a failed update leaves the old one in place, and
:meth:`~TangentPrecision.increment` computes an update without writing it, for a
policy to write in place once nothing else can fail.

The combinatorial neural bandits keep a full ``U^{-1}`` of ``p`` = 8,100 parameters,
where a round costs the ``N`` quadratic forms (one GEMM against ``U^{-1}``) and one
rank-``K`` update; copying the ``p x p`` matrix would cost as much again. For them a
full precision also updates in place: :meth:`TangentPrecision.woodbury_factor` computes
``B`` with ``(U + Phi^T W Phi)^{-1} = U^{-1} - B B^T`` without changing anything
(reusing the products ``phi U^{-1}`` of the last :meth:`~TangentPrecision.quadratic`
call when the rows are the same), and :meth:`TangentPrecision.downdate_` applies it,
once nothing else can fail.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from skorch.utils import to_numpy

from skbandit.exceptions import NumericalError
from skbandit.networks._deferred import check_finite
from skbandit.networks._diagonal_blocks import block_increment
from skbandit.networks._mlp import BanditMLP
from skbandit.networks._tangent import (
    tangent_features,
    tangent_quadratic,
    tangent_square_sum,
)
from skbandit.networks._threads import serial_below

__all__ = ["TangentPrecision"]

#: Largest parameter count for ``kind="full"`` (a p x p float64 inverse, 2 GiB).
MAX_FULL_PARAMETERS = 16384
#: Rows per Woodbury block of a full update.
_WOODBURY_BLOCK = 256
#: Largest ``n K`` whose products ``phi U^{-1}`` :meth:`TangentPrecision.quadratic`
#: keeps for the next update.
_CACHED_ROWS = 256


#: Devices whose kept quadratic products :meth:`TangentPrecision.woodbury_factor`
#: matches on the host. Elsewhere the update recomputes ``U^{-1} Phi^T`` on the
#: device (one pass over ``U^{-1}``, a fraction of a millisecond) rather than read
#: the rows back to compare them (a synchronisation and a copy).
_MATCH_PRODUCTS_ON = frozenset({"cpu"})


class WoodburyFactor(NamedTuple):
    """``B`` of ``U^{-1} - B B^T``, and the growth of ``log det U`` it brings.

    Both live where ``U^{-1}`` lives (``B`` a float64 tensor, the growth a 0-d one):
    computing and applying the factor reads nothing back to the host.
    """

    B: torch.Tensor
    logdet_change: torch.Tensor


def _nothing():
    """The undo of a part with nothing to restore."""


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
    exact : bool, default=False
        For a full ``U``: compute the quadratic forms in float64 against ``U^{-1}``
        itself, which lives where the network computes (the numpy array's memory
        on the CPU; a float64 tensor on a GPU from the first call there, copied
        to the host only when pickled or read through ``covariance``) and
        which :meth:`downdate_` updates in place; on the CPU, keep the forms'
        products for the next update. ``False`` computes them in float32 against
        a copy, as the single-arm neural policies do.

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

    def __init__(self, n_parameters, alpha, kind="diag", exact=False):
        if kind == "full" and n_parameters > MAX_FULL_PARAMETERS:
            raise ValueError(
                f'covariance="full" keeps a p x p matrix; this network has '
                f"p={n_parameters} parameters (limit {MAX_FULL_PARAMETERS}). Use "
                'covariance="diag" (as the neural bandit experiments do) or a '
                "smaller network."
            )
        self.kind, self.exact = kind, bool(exact)
        if kind == "full":
            self._inverse = np.eye(n_parameters) / alpha  # U^{-1}
            self._logdet = n_parameters * np.log(alpha)
        else:
            self._diagonal = np.full(n_parameters, float(alpha))  # diag(U)
        self._device_inverse = None
        self._products = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_device_inverse"] = None  # a device tensor: rebuilt on demand
        state["_products"] = None  # a cache of the last quadratic forms
        if self.kind == "full":  # device-agnostic: a host copy of a device master
            state["_inverse"] = self.covariance
            state["_logdet"] = float(self._logdet)
        else:
            state["_diagonal"] = self._host_diagonal()
        return state

    @property
    def covariance(self):
        """``U^{-1}`` (``"full"``) or the inverse of ``U``'s diagonal (``"diag"``).

        A full exact ``U^{-1}`` lives where the network computes; on a GPU this
        property returns a host copy (the only one the precision makes).
        """
        if self.kind != "full":
            return 1.0 / self._host_diagonal()
        inverse = self._inverse
        return inverse if isinstance(inverse, np.ndarray) else to_numpy(inverse)

    def _new(self, value, logdet=None):
        new = object.__new__(TangentPrecision)
        new.kind, new._device_inverse, new._products = self.kind, None, None
        new.exact = self.exact
        if self.kind == "full":
            new._inverse = value
            new._logdet = self._logdet if logdet is None else logdet
        else:
            new._diagonal = value
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
            new = self._host_diagonal() + inc.astype(np.float64)
            if not np.all(np.isfinite(new)):
                raise NumericalError("Non-finite gradient features; U was not updated.")
            return self._new(new)
        _, phi = tangent_features(module, X)
        rows = torch.arange(X.shape[0], device=X.device)
        return self.updated_with(phi[rows, actions], weights)

    def updated_with(self, features, weights=None):
        """``U`` plus ``sum_i w_i phi_i phi_i^T`` for given features, as a new object.

        The neural logistic bandits take the features of a round at the parameters
        it was selected with and its variance weight at the parameters trained
        after it; this adds features computed earlier.

        Parameters
        ----------
        features : ndarray or torch.Tensor of shape (n, p)
            ``phi_i``, one row per observed arm.
        weights : ndarray or torch.Tensor of shape (n,) or None, default=None
            ``w_i``; zero skips a row.

        Returns
        -------
        precision : TangentPrecision
            The updated precision; ``self`` is unchanged.

        Examples
        --------
        >>> import numpy as np
        >>> from skbandit.networks import TangentPrecision
        >>> U = TangentPrecision(2, alpha=1.0).updated_with(
        ...     np.array([[1.0, 2.0]]), np.array([0.5]))
        >>> U.covariance  # the inverse of diag(1 + 0.5, 1 + 2)
        array([0.66666667, 0.33333333])
        """
        Phi = np.asarray(
            to_numpy(features) if isinstance(features, torch.Tensor) else features,
            dtype=np.float64,
        ).reshape(len(features), -1)
        w = np.ones(Phi.shape[0]) if weights is None else weights
        w = np.asarray(to_numpy(w) if isinstance(w, torch.Tensor) else w, float)
        keep = w > 0
        Phi, w = Phi[keep], w[keep]
        if self.kind == "diag":
            new = self._host_diagonal() + w @ (Phi * Phi)
            if not np.all(np.isfinite(new)):
                raise NumericalError("Non-finite gradient features; U was not updated.")
            return self._new(new)
        cov, logdet = self.covariance, float(self._logdet)
        for start in range(0, Phi.shape[0], _WOODBURY_BLOCK):
            P = Phi[start : start + _WOODBURY_BLOCK]
            wc = w[start : start + _WOODBURY_BLOCK]
            CP = cov @ P.T  # (p, b)
            inner = np.diag(1.0 / wc) + P @ CP
            cov = cov - CP @ np.linalg.solve(inner, CP.T)
            # Determinant lemma: det(U + P'WP) = det U det W det(W^-1 + P U^-1 P').
            logdet += np.sum(np.log(wc)) + np.linalg.slogdet(inner)[1]
        cov = (cov + cov.T) / 2
        if not (np.all(np.isfinite(cov)) and np.isfinite(logdet)):
            raise NumericalError("Non-finite gradient features; U was not updated.")
        return self._new(cov, logdet)

    def shifted(self, delta):
        """``U + delta I``, as a new object (a regulariser that changes with time).

        Parameters
        ----------
        delta : float
            Added to the diagonal; ``U + delta I`` must stay positive definite.

        Returns
        -------
        precision : TangentPrecision
            The shifted precision; ``self`` is unchanged. ``"full"`` costs one
            eigendecomposition, ``O(p^3)``.

        Examples
        --------
        >>> from skbandit.networks import TangentPrecision
        >>> TangentPrecision(3, alpha=1.0).shifted(1.0).covariance
        array([0.5, 0.5, 0.5])
        """
        if delta == 0:
            return self
        if self.kind == "diag":
            new = self._host_diagonal() + delta
            if not np.all(new > 0):
                raise NumericalError(f"U + {delta} I is not positive definite.")
            return self._new(new)
        eigenvalues, Q = np.linalg.eigh(self.covariance)  # of U^{-1}
        shifted = 1.0 / eigenvalues + delta  # of U + delta I
        if not np.all(shifted > 0):
            raise NumericalError(f"U + {delta} I is not positive definite.")
        cov = (Q / shifted) @ Q.T
        return self._new((cov + cov.T) / 2, float(np.sum(np.log(shifted))))

    @property
    def logdet(self):
        """``log det U`` (of the diagonal approximation for ``"diag"``).

        Read back from the device where a full ``U^{-1}`` lives there.
        """
        if self.kind == "diag":
            return float(np.sum(np.log(self._host_diagonal())))
        return float(self._logdet)

    def woodbury_factor(self, Phi, weights=None):
        """``B`` with ``(U + Phi^T diag(w) Phi)^{-1} = U^{-1} - B B^T`` (full ``U``).

        Nothing changes: :meth:`downdate_` applies ``B``. On the CPU, ``U^{-1}
        Phi^T`` is taken from the last :meth:`quadratic` call where the rows of
        ``Phi`` are rows it computed at the same ``U`` (the arms a policy just
        selected, at the same parameters): the update then never reads ``U^{-1}``
        (one pass less over ``p^2`` numbers in a round). On a device the factor is
        computed where ``U^{-1}`` lives, from the device's features, and the only
        value read back is the one check that the factor is finite.

        Parameters
        ----------
        Phi : ndarray or torch.Tensor of shape (k, p)
            Tangent features of the rows, ``k`` at most a few hundred (a tensor
            stays on its device).
        weights : ndarray of shape (k,) or None, default=None
            ``w_i`` (host values); rows of zero weight are skipped.

        Returns
        -------
        factor : WoodburyFactor
            ``B`` of shape (p, k'), ``k'`` the rows of positive weight, and the
            growth of ``log det U`` (the determinant lemma), for :meth:`downdate_`.
        """
        inverse = self._master()
        Phi = torch.as_tensor(Phi, dtype=torch.float64, device=inverse.device)
        w_term = 0.0
        if weights is not None and np.all(np.asarray(weights) == 1):
            weights = None  # the same factor, without sending ones to the device
        if weights is not None:
            weights = np.asarray(weights, dtype=np.float64)
            keep = weights > 0
            if not keep.all():  # host indices: no nonzero on the device
                Phi = Phi[torch.as_tensor(np.flatnonzero(keep), device=Phi.device)]
                weights = weights[keep]
            w_term = float(np.sum(np.log(weights)))
        CP = self._cached_products(Phi)
        if CP is None:
            CP = inverse @ Phi.T  # (p, k), where U^{-1} lives: on every thread
        # Small work (k at most a few hundred), in torch on one thread: numpy's
        # BLAS would thread it apart from torch's setting.
        with serial_below(inverse.shape[0] * Phi.shape[0] ** 2):
            inner = Phi @ CP  # Phi U^{-1} Phi^T
            inner = (inner + inner.T) / 2
            if weights is None:
                inner.diagonal().add_(1.0)
            else:
                inner.diagonal().add_(torch.as_tensor(1.0 / weights, device=Phi.device))
            L, info = torch.linalg.cholesky_ex(inner)
            # B = CP L^{-T}:  B B^T = CP (L L^T)^{-1} CP^T, the Woodbury correction.
            B = torch.linalg.solve_triangular(L, CP.T, upper=False).T.contiguous()
            # One value read back (with a training's values, in an update that
            # trains): a NaN or infinity in Phi reaches inner, L and B.
            check_finite(
                (info == 0) & torch.isfinite(B).all(),
                "Non-finite gradient features; U was not updated.",
            )
            # Determinant lemma: log det U grows by log det(W) + log det(inner).
            growth = 2.0 * torch.log(torch.diagonal(L)).sum() + w_term
        return WoodburyFactor(B, growth)

    def downdate_(self, factor):
        """``U^{-1} -= B B^T`` in place (full ``U``): one pass over ``U^{-1}``.

        Parameters
        ----------
        factor : WoodburyFactor
            From :meth:`woodbury_factor`.

        Returns
        -------
        undo : callable
            Adds ``B B^T`` back (the rollback protocol's rank-``K`` undo, of
            ``skbandit._base._rollback``): no copy of ``U^{-1}``, and the old
            matrix up to rounding. Where bit-for-bit matters, :meth:`checkpoint`.
        """
        if not isinstance(factor, WoodburyFactor):
            raise TypeError("downdate_ takes the WoodburyFactor of woodbury_factor.")
        self._add_outer(factor, -1.0)
        return lambda: self._add_outer(factor, 1.0)

    def _add_outer(self, factor, sign):
        """``U^{-1} += sign B B^T`` in place, with its float32 copy and ``log det U``
        (a 0-d tensor where ``U^{-1}`` lives: nothing is read back)."""
        Bt = factor.B
        self._master().addmm_(Bt, Bt.T, alpha=sign)
        cached = self._device_inverse
        if cached is not None:  # a float32 copy (never the float64 master)
            Bd = Bt.to(cached.device, cached.dtype)
            cached.addmm_(Bd, Bd.T, alpha=sign)
        self._products = None
        self._logdet = factor.logdet_change * (-sign) + self._logdet

    def checkpoint(self):
        """The undo of in-place updates, bit for bit (the rollback protocol).

        Returns
        -------
        undo : callable
            Restores a copy of ``U^{-1}`` (one pass over it), ``log det U`` and the
            kept products, for a full ``U``; does nothing for a diagonal one, whose
            updates return new objects or are written by :meth:`increment`'s
            callable once nothing else can fail.
        """
        if self.kind != "full":
            return _nothing
        master = self._master()
        saved = master.clone(), self._logdet, self._products

        def undo():
            inverse, self._logdet, self._products = saved
            self._master().copy_(inverse)
            if self._device_inverse is not None:
                self._device_inverse.copy_(inverse)

        return undo

    def _master(self):
        """The full ``U^{-1}`` as a float64 tensor, where it lives: the numpy
        array's memory on the CPU, the device's once a device computed with it."""
        inverse = self._inverse
        if isinstance(inverse, np.ndarray):
            return torch.from_numpy(inverse)
        return inverse

    def _move_master(self, device):
        """Keep the exact ``U^{-1}`` on ``device`` from now on (one copy, once)."""
        master = self._master()
        if master.device != device:
            moved = master.to(device)
            self._inverse = moved.numpy() if device.type == "cpu" else moved
            if isinstance(self._logdet, torch.Tensor):
                self._logdet = self._logdet.to(device)
            self._products = None
        return self._master()

    def _cached_products(self, Phi):
        """``U^{-1} Phi^T`` from the last :meth:`quadratic`, if every row is there."""
        if (
            self._products is None
            or Phi.shape[0] == 0
            or Phi.device.type not in _MATCH_PRODUCTS_ON
        ):
            return None
        phi, products = self._products
        Phi = to_numpy(Phi)
        # Rows are matched on a few leading entries, then compared in full.
        found = []
        for row in Phi:
            hits = np.flatnonzero((phi[:, :4] == row[:4]).all(1))
            match = next((i for i in hits if np.array_equal(phi[i], row)), None)
            if match is None:
                return None
            found.append(match)
        return torch.from_numpy(products[found].T.copy())

    def increment(self, module, X, actions, weights=None, host_actions=None):
        """The update of :meth:`updated`, computed and checked now, written later.

        Parameters
        ----------
        module : torch.nn.Module
            The network, at the parameters the features are taken at.
        X : torch.Tensor of shape (n, d) or (n, K, d)
            Contexts of the rows.
        actions : torch.Tensor of shape (n,)
            The chosen arm of each row.
        weights : torch.Tensor of shape (n,) or None, default=None
            ``w_i`` (sample weights, or variance weights); zero skips a row.
        host_actions : ndarray of shape (n,) or None, default=None
            ``actions`` in host memory, when the caller has them: a disjoint
            network's one-row increment takes its arm's block from them (indexed by
            a device tensor, it reads the arm back: a wait on a GPU).

        Returns
        -------
        apply : callable
            Adds ``sum_i w_i phi_i phi_i^T`` to this object in place; it cannot
            fail. A policy takes the features where its algorithm does (before or
            after training) and applies them once its update has committed, so a
            failed update leaves ``U`` untouched without a copy of it: for a
            disjoint network's diagonal a round then writes the ``m d + m``
            entries it changes, not the ``p`` of a new object.

        Raises
        ------
        NumericalError
            If the features are not finite (nothing is written).
        """
        if self.kind == "diag" and isinstance(module, BanditMLP) and module.disjoint:
            return block_increment(self, module, X, actions, weights, host_actions)
        new = self.updated(module, X, actions, weights)
        return lambda: self.__dict__.update(new.__dict__)

    def _updated_blocks(self, module, X, actions, weights):
        """:meth:`updated` of a disjoint :class:`BanditMLP`'s diagonal: a copy, and
        :meth:`_block_increment` written into it."""
        diagonal = self._diagonal
        copied = diagonal.clone() if isinstance(diagonal, torch.Tensor) else None
        new = self._new(diagonal.copy() if copied is None else copied)
        if self._device_inverse is not None:
            new._device_inverse = self._device_inverse.clone()
        new._block_increment(module, X, actions, weights)()
        return new

    def _block_increment(self, module, X, actions, weights):
        """:meth:`increment` of a disjoint :class:`BanditMLP`, touching what changes
        (:func:`~skbandit.networks._diagonal_blocks.block_increment`)."""
        return block_increment(self, module, X, actions, weights)

    def _host_diagonal(self):
        """``diag(U)`` as a float64 array (a host copy of a device's)."""
        diagonal = self._diagonal
        return to_numpy(diagonal) if isinstance(diagonal, torch.Tensor) else diagonal

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
            The quadratic forms, in the network's dtype (float64 if ``exact``).
        """
        inverse = self._device_tensor(X.device)
        with torch.no_grad():
            if self.kind == "diag":
                return tangent_quadratic(module, X, inverse)
            if not (self.kind == "full" and self.exact):
                f, phi = tangent_features(module, X)
                return f, ((phi @ inverse) * phi).sum(-1)
            # float64, as U^{-1} is kept: the N forms are one GEMM against it, on
            # every thread; the features around it are small work, on one.
            work = X.shape[:-1].numel() * inverse.shape[0]
            with serial_below(work):
                f, phi = tangent_features(module, X)
                flat = phi.to(torch.float64).reshape(-1, phi.shape[-1])
            products = flat @ inverse
            with serial_below(work):
                q = (products * flat).sum(-1).view(phi.shape[:-1])
            if flat.shape[0] <= _CACHED_ROWS and flat.device.type in _MATCH_PRODUCTS_ON:
                self._products = (to_numpy(flat), to_numpy(products))
            return f, q

    def _device_tensor(self, device):
        if self.kind == "full" and self.exact:
            return self._move_master(device)  # in-place updates show
        cached = self._device_inverse
        diagonal = self.__dict__.get("_diagonal")
        if isinstance(diagonal, torch.Tensor) and diagonal.device == device:
            if cached is None or cached.device != device:  # 1/U in float32, there
                cached = self._device_inverse = (1.0 / diagonal).to(torch.float32)
            return cached
        if cached is None or cached.device != device:
            value = self.covariance
            exact = self.exact and self.kind == "full"
            value = value if exact else value.astype(np.float32)
            cached = self._device_inverse = torch.as_tensor(value, device=device)
        return cached
