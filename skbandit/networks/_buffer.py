"""The replay buffer of a neural policy: the rows its network trains on."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ReplayBuffer"]


@dataclass(frozen=True)
class ReplayBuffer:
    """The rows a network trains on.

    Immutable, so that a failed update drops the grown copy and keeps this one.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features)
        The pulled arm's context row (the raw ``x`` for the disjoint encoding of
        shared contexts).
    actions : ndarray of shape (n_rows,)
        The pulled arm of each row.
    targets : ndarray of shape (n_rows,) or (n_rows, n_members)
        The regression target of each row, or of each row and member (perturbed
        rewards).
    weights : ndarray of shape (n_rows,) or (n_rows, n_members)
        Row weights, or row and member weights (bootstrap keep masks).

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.networks._buffer import ReplayBuffer
    >>> buffer = ReplayBuffer.empty(2).extended(
    ...     np.ones((3, 2)), np.array([0, 1, 0]), np.ones(3), np.ones(3), max_size=2)
    >>> len(buffer)
    2
    """

    X: np.ndarray
    actions: np.ndarray
    targets: np.ndarray
    weights: np.ndarray

    @classmethod
    def empty(cls, n_features):
        """Make an empty buffer.

        Parameters
        ----------
        n_features : int
            Length of a row.

        Returns
        -------
        buffer : ReplayBuffer
            No rows.
        """
        return cls(
            np.empty((0, n_features), np.float32),
            np.empty(0, np.int64),
            np.empty((0,), np.float32),
            np.empty((0,), np.float32),
        )

    def __len__(self):
        return self.X.shape[0]

    def extended(self, X, actions, targets, weights, max_size=None):
        """Append rows, as a new buffer.

        Parameters
        ----------
        X, actions, targets, weights : ndarray
            The new rows, shaped as the fields of the class.
        max_size : int or None, default=None
            Keep only the last rows.

        Returns
        -------
        buffer : ReplayBuffer
            The grown buffer; ``self`` is unchanged.
        """
        parts = [
            np.concatenate([self.X, X.astype(np.float32, copy=False)]),
            np.concatenate([self.actions, actions]),
            _concat(self.targets, targets),
            _concat(self.weights, weights),
        ]
        if max_size is not None:
            parts = [a[-max_size:] for a in parts]
        return ReplayBuffer(*parts)

    def tail(self, n):
        """The last ``n`` rows, as a buffer."""
        return ReplayBuffer(*(a[len(self) - n :] for a in self._fields()))

    def head(self, n):
        """The first ``n`` rows, as a buffer."""
        return ReplayBuffer(*(a[:n] for a in self._fields()))

    def _fields(self):
        return self.X, self.actions, self.targets, self.weights


def _concat(old, new):
    new = np.asarray(new, dtype=np.float32)
    if old.shape[0] == 0 and old.ndim != new.ndim:
        return new.copy()
    return np.concatenate([old, new])
