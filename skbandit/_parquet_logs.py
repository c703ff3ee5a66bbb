"""A directory of Parquet logs as Dask arrays, read by pyarrow on the workers.

The command line's ``fit`` and ``evaluate`` read their logs here rather than through
``dask.dataframe.read_parquet``: a pandas frame per partition, its columns cast to
float64 and taken as one array, costs pandas' interleaving of every column block
(about 80 ms a partition of 250,000 rows by 23 columns, more than an IPS estimate's
whole work on it). Here each array is read on its own by a task per partition: the
context columns into one row-ordered block in their stored dtype (float32 stays
float32; the policies convert a partition to their own dtype as they validate it,
as they would the same values in memory), each logged column alone (actions as
int64, rewards and propensities as float64). A task reads only its own columns of
the file, so a pass that needs the actions alone (the number of arms) reads them
alone; and each read feeds one consumer, into which Dask fuses it.

A partition is a run of consecutive row groups of one file (up to
:data:`PARTITION_ROWS` rows, a larger row group alone); the row counts come from
the files' footers, read by the client. ``split`` keeps, in every partition, the
rows of one side of a seeded random split: partition ``k`` draws ``u ~ U(0, 1)``
per row from ``numpy.random.default_rng([seed, k])`` and a row is on the test side
when ``u < fraction``, so both sides' arrays are reproducible and disjoint.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PARTITION_ROWS", "ParquetLogs", "Split", "scan"]

#: Most rows of a partition made of several row groups (a larger row group is one).
PARTITION_ROWS = 1 << 20


@dataclass(frozen=True)
class Split:
    """One side (``"fit"`` or ``"test"``) of a seeded random split of the rows."""

    seed: int
    fraction: float  # the test side's expected share of the rows
    side: str

    def rows(self, n_rows: int, partition: int) -> np.ndarray:
        """The mask of partition ``partition``'s rows on this side."""
        draws = np.random.default_rng([self.seed, partition]).random(n_rows)
        test = draws < self.fraction
        return test if self.side == "test" else ~test


@dataclass(frozen=True)
class ParquetLogs:
    """The files' partitions (path, row groups, rows) and the columns' numpy dtypes."""

    parts: tuple[tuple[str, tuple[int, ...], int], ...]
    dtypes: dict[str, np.dtype]

    def contexts(self, columns, split: Split | None = None):
        """The context columns as one Dask array (n, d) in their common stored
        dtype: float32 for float32 (or narrower) columns, float64 otherwise."""
        for name in columns:  # bool, integers and floats convert to floats
            if self.dtypes[name].kind not in "biuf":
                raise TypeError(
                    f"the context column {name!r} is not numeric (its Parquet type "
                    f"reads as {self.dtypes[name]})."
                )
        dtype = np.result_type(np.float32, *(self.dtypes[c] for c in columns))
        return self._array(tuple(columns), dtype, split)

    def column(self, name: str, dtype, split: Split | None = None):
        """One logged column as a 1-D Dask array of ``dtype``."""
        return self._array(name, np.dtype(dtype), split)

    def _array(self, columns, dtype, split):
        import dask.array as da

        rows = tuple(np.nan if split else n for _, _, n in self.parts)
        index = da.from_array(np.arange(len(self.parts)), chunks=1)
        shape = (len(columns),) if isinstance(columns, tuple) else ()
        return index.map_blocks(
            _read,
            parts=self.parts,
            columns=columns,
            as_dtype=dtype,
            split=split,
            dtype=dtype,
            chunks=(rows, *((n,) for n in shape)),
            new_axis=list(range(1, 1 + len(shape))),
            meta=np.empty((0,) * (1 + len(shape)), dtype=dtype),
            token="read-parquet",
        )


def scan(folder) -> ParquetLogs:
    """The partitions and column dtypes of the Parquet files under ``folder``
    (footers only; files named as ``pyarrow.dataset`` finds them, in sorted order)."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    dataset = ds.dataset(str(folder), format="parquet")
    parts = []
    for path in sorted(dataset.files):
        meta = pq.ParquetFile(path).metadata
        group, run, rows = 0, [], 0
        for group in range(meta.num_row_groups):
            n = meta.row_group(group).num_rows
            if run and rows + n > PARTITION_ROWS:
                parts.append((path, tuple(run), rows))
                run, rows = [], 0
            run.append(group)
            rows += n
        if run:
            parts.append((path, tuple(run), rows))
    dtypes = {}
    for field in dataset.schema:
        try:
            dtypes[field.name] = np.dtype(field.type.to_pandas_dtype())
        except (NotImplementedError, TypeError):  # nested and other non-numpy types
            dtypes[field.name] = np.dtype(object)
    return ParquetLogs(tuple(parts), dtypes)


def _read(index, *, parts, columns, as_dtype, split):
    """Partition ``index[0]``'s ``columns`` (a tuple: one (n, d) block; a name: one
    column) in ``as_dtype``, the rows of ``split``'s side only if given."""
    import pyarrow.parquet as pq

    k = int(index[0])
    path, groups, n_rows = parts[k]
    names = list(columns) if isinstance(columns, tuple) else [columns]
    table = pq.ParquetFile(path).read_row_groups(list(groups), columns=names)
    if isinstance(columns, tuple):
        out = np.empty((table.num_rows, len(names)), dtype=as_dtype)
        for j, name in enumerate(names):  # chunk by chunk: no concatenated copy
            start = 0
            for chunk in table.column(name).chunks:
                stop = start + len(chunk)
                out[start:stop, j] = chunk.to_numpy(zero_copy_only=False)
                start = stop
    else:
        out = table.column(columns).to_numpy().astype(as_dtype, copy=False)
    return out if split is None else out[split.rows(n_rows, k)]
