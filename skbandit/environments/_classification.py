"""A labelled data set turned into a bandit: arms are classes, reward 1 when right."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from sklearn.utils import check_X_y

from skbandit.environments._base import BaseEnvironment

__all__ = ["ClassificationBandit"]


class ClassificationBandit(BaseEnvironment):
    """A classification data set as a contextual bandit.

    Each round shows one row of ``X``; the arms are the classes, and pulling the
    row's class pays 1, any other arm 0. Expected rewards are the one-hot labels,
    so the expected regret of a round is exactly 1 for a mistake and 0 otherwise,
    and the cumulative regret counts mistakes. Rows are drawn without replacement
    in an order shuffled per seed; once all have been shown, a fresh order starts.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features. Scale them as the policy needs (e.g. with ``StandardScaler``).
    y : array-like of shape (n_samples,)
        Class labels; arm ``k`` is ``classes_[k]``.
    encoding : {"shared", "disjoint"}, default="shared"
        ``"shared"`` gives contexts of shape ``(n_rounds, n_features)`` (a linear
        policy then fits one model per arm). ``"disjoint"`` gives per-arm contexts of
        shape ``(n_rounds, n_actions, n_actions * n_features)`` in which arm ``k``
        sees the row in its ``k``-th block of ``n_features`` and zeros elsewhere,
        the encoding of the neural bandit papers.
    shuffle : bool, default=True
        Shuffle the row order on every pass; otherwise rows come in data order.
    random_state : int, RandomState instance or None, default=None
        Seed used by :meth:`reset` when it is called without one.

    Attributes
    ----------
    classes_ : ndarray of shape (n_actions,)
        The class of each arm.
    row_indices_ : ndarray of shape (n_rounds,)
        Rows of ``X`` shown in the current rounds.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.environments import ClassificationBandit
    >>> env = ClassificationBandit(np.eye(3), [0, 1, 2]).reset(0)
    >>> env.contexts(2).shape
    (2, 3)
    >>> env.expected_rewards.sum(axis=1)
    array([1., 1.])
    """

    def __init__(self, X, y, *, encoding="shared", shuffle=True, random_state=None):
        if encoding not in ("shared", "disjoint"):
            raise ValueError(
                f'encoding must be "shared" or "disjoint", got {encoding!r}.'
            )
        X, y = check_X_y(X, y, dtype=np.float64)
        self.classes_, self._labels = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError(
                f"y must have at least 2 classes (arms); got {self.classes_.size}."
            )
        self.X = X
        self.y = y
        self.encoding = encoding
        self.shuffle = shuffle
        self.random_state = random_state

    @property
    def per_arm_contexts(self) -> bool:  # type: ignore[override]
        """True with the disjoint encoding."""
        return self.encoding == "disjoint"

    @property
    def n_actions(self) -> int:
        """Number of arms (classes)."""
        return self.classes_.size

    @property
    def n_features(self) -> int:
        """Context length: ``n_features`` or ``n_actions * n_features`` (disjoint)."""
        d = self.X.shape[1]
        return d * self.n_actions if self.encoding == "disjoint" else d

    def _new_order(self, rng):
        n = self.X.shape[0]
        return rng.permutation(n) if self.shuffle else np.arange(n)

    def _setup(self, rng):
        self._order = self._new_order(rng)
        self._position = 0

    def _draw(self, n_rounds, rng):
        rows = []
        while n_rounds:
            take = min(n_rounds, self._order.size - self._position)
            rows.append(self._order[self._position : self._position + take])
            self._position += take
            n_rounds -= take
            if self._position == self._order.size:
                self._order, self._position = self._new_order(rng), 0
        rows = np.concatenate(rows)
        self.row_indices_ = rows
        expected = np.zeros((rows.size, self.n_actions))
        expected[np.arange(rows.size), self._labels[rows]] = 1.0
        return self._encode(self.X[rows]), expected, None

    def _encode(self, X: NDArray) -> NDArray:
        if self.encoding == "shared":
            return X
        n, d = X.shape
        K = self.n_actions
        out = np.zeros((n, K, K, d))
        arms = np.arange(K)
        out[:, arms, arms, :] = X[:, None, :]
        return out.reshape(n, K, K * d)

    def __repr__(self) -> str:
        return (
            f"ClassificationBandit(n_samples={self.X.shape[0]}, "
            f"n_features={self.X.shape[1]}, n_actions={self.n_actions}, "
            f"encoding={self.encoding!r})"
        )
