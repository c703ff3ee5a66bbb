"""What the Dask paths of ``fit`` share: the partitions as delayed blocks, the
tree of merges on the workers, the number of arms, and the fitted state's hand-over."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import dask
import dask.array as da
import numpy as np

from skbandit._dask import is_dask
from skbandit._dask._ope import row_aligned

__all__ = ["adopt", "add_parts", "blocks", "count_actions", "tree"]

#: Tree reduction fan-in: partitions merged per task.
_SPLIT_EVERY = 8


def blocks(*arrays, sizes=None):
    """One tuple of numpy-valued delayed blocks per partition, rows aligned; with
    a list ``sizes``, the partitions' row counts are appended to it (computed,
    one pass, where Dask does not know them)."""
    arrays = row_aligned(*arrays)
    if sizes is not None:
        if np.isnan(arrays[0].shape[0]):
            rows = arrays[0].compute_chunk_sizes().chunks[0]  # one pass
            arrays = [_with_rows(a, rows) for a in arrays]
        sizes.extend(int(n) for n in arrays[0].chunks[0])
    arrays = [
        None if a is None else a.rechunk({i: -1 for i in range(1, a.ndim)})
        for a in arrays
    ]
    # One task per partition packs its blocks of every input, and the delayed
    # blocks come from that one collection, optimised as one: inputs sliced from
    # one collection (X, actions and rewards from one Parquet read) then share its
    # tasks. Delayed blocks of each input alone would each fuse their own copy of
    # the read: every partition read once per input.
    present = [a for a in arrays if a is not None]
    pairs = []
    for m, a in enumerate(present):
        pairs += [a, ("rows", *(f"{m}.{axis}" for axis in range(1, a.ndim)))]
    meta = np.empty(0, dtype=object)
    packed = da.blockwise(_pack, ("rows",), *pairs, dtype=object, meta=meta)
    per_partition = []
    for block in packed.to_delayed().ravel():
        taken = iter(range(len(present)))
        per_partition.append(
            tuple(None if a is None else block[next(taken)] for a in arrays)
        )
    return per_partition


def _with_rows(array, rows):
    """``array`` (None stays None) told its partitions' row counts ``rows``."""
    if array is None or not np.isnan(array.shape[0]):
        return array
    chunks = (rows, *array.chunks[1:])
    return da.Array(array.dask, array.name, chunks, meta=array._meta)


def _pack(*blocks):
    """A partition's blocks of every input, as one task's result. An input's other
    axes than the rows are one chunk each, which blockwise passes as a list of one
    block per such axis: unwrapped, not concatenated (a copy of every block)."""
    out = []
    for block in blocks:
        while isinstance(block, list):
            (block,) = block
        out.append(block)
    return tuple(out)


def count_actions(policy, X, actions) -> int:
    if policy.n_actions is not None:
        return int(policy.n_actions)
    if X.ndim == 3 and not np.isnan(X.shape[1]):
        return int(X.shape[1])
    if not is_dask(actions):
        return int(np.max(actions)) + 1  # as fit's inference: largest arm + 1
    (column,) = row_aligned(actions)
    return int(column.max().compute()) + 1


def tree(parts, merge):
    """Reduction of delayed parts by ``_SPLIT_EVERY`` at a time, on the workers."""
    level = list(parts)
    while True:
        level = [
            dask.delayed(merge)(*level[i : i + _SPLIT_EVERY])
            for i in range(0, len(level), _SPLIT_EVERY)
        ]
        if len(level) == 1:
            return level[0]


def adopt(policy, fitted):
    """``policy`` with the fitted copy's learned state, and nothing of before."""
    params = policy.get_params(deep=False)
    state = {k: v for k, v in vars(fitted).items() if k not in params}
    for name in [k for k in vars(policy) if k not in params]:
        delattr(policy, name)  # fit resets: nothing of an earlier fit survives
    vars(policy).update(state)
    return policy


def add_parts(parts, n_summed):
    """A tree node's merge: the parts' first ``n_summed`` entries added (all of a
    shorter part's), the others (a partition's policy copy) the first part's; None
    for empty partitions skipped."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    out = list(parts[0])
    n = min(n_summed, len(out))
    for part in parts[1:]:
        out[:n] = [a + b for a, b in zip(out[:n], part[:n], strict=True)]
    return tuple(out)
