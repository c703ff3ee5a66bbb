"""The scale benchmark's logs: written by Dask workers, read back by row group.

``write_logs`` writes ``n_rows`` logged rows (d = 20 float32 features, K = 10 arms,
uniform logging, Bernoulli rewards of a logistic model) as Parquet files of one row
group of 250,000 rows. Each file is generated and written by a task on a Dask worker
from its own stream, ``default_rng([seed, file index])``: the same files for a seed
whatever the workers, and no process, the client least of all, ever holds more than
one file's rows.

``read_row_group`` is the one reader of both sides of the benchmark: the numpy loop
calls it in its process, the Dask runs call it in one task per row group (the needed
columns only, no pandas frame, the features as float32 as stored).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from pathlib import Path

import numpy as np

D, K = 20, 10
ROWS_PER_FILE = 250_000  # one row group per file: a Dask partition each
_rng = np.random.default_rng(12345)
W = _rng.normal(size=(D, K)) / np.sqrt(D)  # the evaluated softmax policy
B = _rng.normal(size=(D, K)) / np.sqrt(D)  # the DR reward model, "fitted" once
THETA = _rng.normal(size=(K, D)) / np.sqrt(D)  # the logs' true reward model
X_COLUMNS = [f"X{j}" for j in range(D)]
LOGGED = ["actions", "rewards", "propensities"]


def _schema():
    import pyarrow as pa

    fields = [(c, pa.float32()) for c in X_COLUMNS]
    fields += [
        ("actions", pa.int64()),
        ("rewards", pa.float32()),
        ("propensities", pa.float32()),
    ]
    return pa.schema(fields)


def write_file(folder: str, index: int, n_rows: int, seed: int) -> int:
    """Generate and write file ``index`` (``n_rows`` rows) on the worker; its size."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng([seed, index])
    X = rng.standard_normal((n_rows, D), dtype=np.float32)  # drawn as stored
    actions = rng.integers(K, size=n_rows)
    logits = np.einsum("nd,nd->n", X, THETA.astype(np.float32)[actions])
    won = rng.random(n_rows, dtype=np.float32) < 1 / (1 + np.exp(-logits))
    rewards = won.astype(np.float32)
    columns = {c: X[:, j] for j, c in enumerate(X_COLUMNS)}
    columns |= {
        "actions": actions,
        "rewards": rewards,
        "propensities": np.full(n_rows, 1 / K, dtype=np.float32),
    }
    path = Path(folder) / f"part-{index:05d}.parquet"
    pq.write_table(pa.table(columns, schema=_schema()), path, row_group_size=n_rows)
    return path.stat().st_size


def write_logs(folder: Path, n_rows: int, seed: int, n_workers: int = 2) -> int:
    """Write the logs with a ``LocalCluster`` of ``n_workers``; bytes written."""
    import dask
    import distributed

    folder.mkdir(parents=True, exist_ok=True)
    sizes = [
        min(ROWS_PER_FILE, n_rows - start) for start in range(0, n_rows, ROWS_PER_FILE)
    ]
    tasks = [
        dask.delayed(write_file, pure=False)(str(folder), k, m, seed)
        for k, m in enumerate(sizes)
    ]
    cluster = distributed.LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=None,
    )
    with cluster, distributed.Client(cluster):
        return int(sum(dask.compute(*tasks)))


def row_groups(folder: Path) -> list[tuple[str, int, int]]:
    """``(path, row group, rows)`` of every row group, from the files' footers."""
    import pyarrow.parquet as pq

    out = []
    for path in sorted(folder.glob("*.parquet")):
        meta = pq.ParquetFile(path).metadata
        out += [
            (str(path), g, meta.row_group(g).num_rows)
            for g in range(meta.num_row_groups)
        ]
    return out


def read_row_group(path: str, group: int):
    """``(X, actions, rewards, propensities)`` of one row group: X (n, d) float32
    in row order (one copy out of the columns), the others as stored."""
    import pyarrow.parquet as pq

    table = pq.ParquetFile(path).read_row_group(group)
    X = np.empty((table.num_rows, D), dtype=np.float32)
    for j, c in enumerate(X_COLUMNS):
        X[:, j] = table[c].to_numpy()
    return (X, *(table[c].to_numpy() for c in LOGGED))


# -------------------------------------------------- per-partition model outputs
def target_proba(X):
    """The evaluated policy's probabilities: softmax of ``X W``, (n, K) float64."""
    z = X.astype(np.float64) @ W
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=1, keepdims=True)
    return z


def reward_model(X):
    """The DR reward model's predictions ``X B``, (n, K) float64."""
    return X.astype(np.float64) @ B
