"""How a decision's arrays are written into SQLite columns and read back.

Contexts are stored as float64 bytes with their shape: a dense row ``(n_features,)``
or per-arm rows ``(n_actions, n_features)``, or a sparse row as its non-zero
values and their column indices (``scipy.sparse`` in, CSR rows out). Masks are one
byte per arm; arms and propensities are int64 and float64 vectors (one entry for a
single-arm decision, ``slate_size`` for a slate). Bytes, not JSON: a decision is
written in a few microseconds and read back bit for bit.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "decode_context",
    "decode_floats",
    "decode_ints",
    "decode_mask",
    "encode_context",
    "encode_mask",
    "stack_contexts",
]


def encode_context(x) -> tuple[str, str, bytes, bytes | None]:
    """Return ``(format, shape, values, indices)`` of one round's context.

    ``x`` is one round: shape ``(n_features,)`` or ``(n_actions, n_features)``, or
    a sparse matrix with one row. ``format`` is ``"dense"`` or ``"sparse"``; the
    shape is written ``"5"`` or ``"3x5"``.
    """
    if type(x) is np.ndarray and x.dtype == np.float64 and x.ndim == 1:
        return "dense", str(x.shape[0]), x.tobytes(), None  # the common case, fast
    if sp.issparse(x):
        row = sp.csr_matrix(x, dtype=np.float64)
        if row.shape[0] != 1:
            raise ValueError(
                f"A sparse context must be one row; got shape {row.shape}."
            )
        row.sum_duplicates()
        return (
            "sparse",
            str(row.shape[1]),
            row.data.tobytes(),
            row.indices.astype(np.int64).tobytes(),
        )
    dense = np.ascontiguousarray(x, dtype=np.float64)
    return "dense", "x".join(map(str, dense.shape)), dense.tobytes(), None


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split("x"))


def decode_context(fmt: str, shape: str, values: bytes, indices: bytes | None):
    """One stored context back: a dense ndarray, or a ``(1, n_features)`` CSR row."""
    data = np.frombuffer(values, dtype=np.float64)
    if fmt == "sparse":
        cols = np.frombuffer(indices, dtype=np.int64)
        return sp.csr_matrix(
            (data, cols, np.array([0, data.size])), shape=(1, _shape(shape)[0])
        )
    return data.reshape(_shape(shape))


def stack_contexts(rows: list) -> NDArray | sp.csr_matrix:
    """Stack decoded contexts into ``X``: ``(n, d)``, ``(n, K, d)``, or sparse.

    Raises ``ValueError`` when the rows do not share one format and shape (a log
    that mixes policies of different inputs is exported per policy version).
    """
    if not rows:
        return np.empty((0, 0))
    if any(sp.issparse(r) for r in rows):
        if not all(sp.issparse(r) for r in rows):
            raise ValueError("The log mixes sparse and dense contexts.")
        return sp.vstack(rows, format="csr")
    shapes = {r.shape for r in rows}
    if len(shapes) > 1:
        raise ValueError(
            f"The log's contexts have several shapes {sorted(shapes)}: select the "
            "events of one policy input (e.g. by policy version) before exporting."
        )
    return np.stack(rows)


def encode_mask(mask: ArrayLike | None) -> bytes | None:
    """A round's available arms as one byte per arm (``None``: every arm)."""
    if mask is None:
        return None
    return np.asarray(mask, dtype=bool).reshape(-1).astype(np.uint8).tobytes()


def decode_mask(blob: bytes | None, n_actions: int) -> NDArray:
    """The stored mask, or all arms available when none was stored."""
    if blob is None:
        return np.ones(n_actions, dtype=bool)
    return np.frombuffer(blob, dtype=np.uint8).astype(bool)


def decode_ints(blob: bytes) -> NDArray:
    """An int64 vector (arms)."""
    return np.frombuffer(blob, dtype=np.int64)


def decode_floats(blob: bytes | None) -> NDArray | None:
    """A float64 vector (propensities, a slate's rewards), or ``None``."""
    return None if blob is None else np.frombuffer(blob, dtype=np.float64)
