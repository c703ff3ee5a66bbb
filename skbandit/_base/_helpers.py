"""What :class:`~skbandit.base.BasePolicy`'s verbs and hooks call beside the decision
path: the scope of a verb's work, the arms' context rows, and the call's snapshot.

``_work_scope(n_rows, update=False)`` is a hook of the base (its docstring lists it):
the context a verb's work over ``n_rows`` rows runs in, ``update`` when it learns.
Default: the BLAS threads of small dense work (``_blas_small_work``); the neural
family overrides it with the torch threads of a network pass.

Nothing here imports :mod:`skbandit.base`: the base imports this module.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np

from skbandit._base._rollback import Rollback, checkpoint_attributes
from skbandit.utils._blas_threads import NO_SCOPE, SCOPE, SERIAL_BY_ITSELF, SMALL_WORK

__all__ = ["PolicyHelpers"]


class PolicyHelpers:
    """A base of ``BasePolicy``: ``_work_scope`` and the helpers its hooks call."""

    def _work_scope(self, n_rows, update=False):
        """The context of a verb's work over ``n_rows`` rows: the BLAS threads
        (:func:`~skbandit.utils._blas_threads.blas_scope`) of small dense work, its
        work estimated as a ``d x d`` quadratic form per arm and row; inlined, as it
        wraps every round."""
        if not self._blas_small_work:
            return NO_SCOPE
        if update and self._blas_history:
            n_rows += self.n_samples_seen_
        dims = self.n_features_in_ + 1
        work = n_rows * self.n_actions_ * dims * dims
        return SCOPE if SERIAL_BY_ITSELF <= work < SMALL_WORK else NO_SCOPE

    def _arm_features(self, X):
        """Contexts as one vector per arm, shape (n_samples, n_actions, n_features).

        Shared contexts are broadcast (a view, no copy): arm ``k`` reads them with
        its own parameter block.
        """
        if X.ndim == 3:
            return X
        return np.broadcast_to(X[:, None, :], (X.shape[0], self.n_actions_, X.shape[1]))

    def _chosen_features(self, X, actions):
        """Context row of each pulled arm, shape (n_samples, n_features)."""
        if X.ndim == 3:
            return X[np.arange(X.shape[0]), actions]
        return X

    def _unchanged_on_error(self):
        """Context that restores every attribute, and the RNG, if its block raises.

        Hooks rebind attributes or mutate arrays only once nothing can fail, so a
        shallow copy of ``__dict__`` plus the RNG state is a complete snapshot; a
        hook that writes in place earlier holds its parts' checkpoints
        (``skbandit._base._rollback``).
        """
        return Rollback(checkpoint_attributes(self))
