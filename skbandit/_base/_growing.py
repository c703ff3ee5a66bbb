"""Append-only rows in amortised storage, with the value semantics of a new array.

Appending by ``np.concatenate`` copies the whole history on every update: ``O(n^2)``
over a run of ``n`` rows. :class:`GrowingRows` appends in place into storage that
doubles when full (``O(n)`` over the run), yet each append returns a new
``GrowingRows`` and leaves the old one's rows as they were, which is what the
rollback protocol needs of a policy's attributes (a shallow snapshot of
``__dict__`` restores them).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["GrowingRows"]


class _Storage:
    """The shared array and its high-water mark: rows past ``filled`` are free."""

    __slots__ = ("data", "filled")

    def __init__(self, data: NDArray, filled: int):
        self.data = data
        self.filled = filled


class GrowingRows:
    """The first ``n_rows`` rows of a shared, doubling storage.

    Rows below ``n_rows`` are never written again. :meth:`appended` writes in place
    only when this holder owns the storage's end (``n_rows == filled``) and there is
    room; otherwise (a shallow copy appended first, or a restored snapshot) it
    copies into new storage, so that two holders never see each other's rows.

    Parameters
    ----------
    n_columns : int
        Width of a row.
    """

    __slots__ = ("_storage", "n_rows")

    def __init__(self, n_columns: int):
        self._storage = _Storage(np.empty((0, n_columns)), 0)
        self.n_rows = 0

    def appended(self, rows: NDArray) -> GrowingRows:
        """These rows, then ``rows`` (shape ``(n, n_columns)``), as a new holder."""
        storage, n, n_new = self._storage, self.n_rows, rows.shape[0]
        if n != storage.filled or n + n_new > storage.data.shape[0]:
            capacity = max(2 * (n + n_new), 16)
            data = np.empty((capacity, storage.data.shape[1]), dtype=storage.data.dtype)
            data[:n] = storage.data[:n]
            storage = _Storage(data, n)
        storage.data[n : n + n_new] = rows
        storage.filled = n + n_new
        out = GrowingRows.__new__(GrowingRows)
        out._storage, out.n_rows = storage, n + n_new
        return out

    def __getstate__(self):
        # A pickle or deep copy keeps the rows alone, not the spare capacity.
        return self.rows.copy()

    def __setstate__(self, rows):
        self._storage = _Storage(rows, rows.shape[0])
        self.n_rows = rows.shape[0]

    @property
    def rows(self) -> NDArray:
        """The rows, a read-only view of shape ``(n_rows, n_columns)``."""
        view = self._storage.data[: self.n_rows]
        view.flags.writeable = False
        return view
