"""IPS, DR and a LinUCB fit over Parquet logs past memory, on Dask, against numpy.

Writes ``--rows`` logged rows (d = 20 float32 features, K = 10 arms, uniform logging,
Bernoulli rewards) as Parquet files of one row group of 2.5 * 10^5 rows (one Dask
partition each), then times, each in a fresh process (so that each peak resident
memory is its own), after a warm-up that imports what each process needs, the best
of ``--repeat`` runs of each task:

- ``numpy``: one process looping over the same row groups with pyarrow, computing
  the same per-row terms and accumulating their sums (IPS: ``sum w r`` and its
  square; DR: the same with the reward model; LinUCB: per-arm ``X^T X`` and
  ``X^T r``), no validation: the plain implementation of the same maths;
- ``dask-1`` and ``dask-2``: skbandit's ``estimate_value`` and ``LinUCB.fit`` on a
  ``LocalCluster`` of 1 and 2 single-threaded worker processes reading the
  directory with ``dask.dataframe.read_parquet``.

The evaluated policy is a fixed softmax-linear one and the DR reward model a fixed
linear one, both computed per partition by ``map_blocks`` (the model is in the graph
once). Dask reads each file once (all the columns as one array). Prints rows per
second (wall clock), rows per CPU-second of the client and workers together (which a
machine shared with other jobs disturbs less), the ratios the issue sets as goals,
and the peak RSS of the client and of each worker (``getrusage``; MB).

Run: ``OPENBLAS_NUM_THREADS=1 nice python benchmarks/scale/ope_and_fit.py --rows
1000000 10000000 --dir /tmp/skbandit-scale`` (the files are deleted at the end
unless ``--keep``).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: one thread each

import numpy as np  # noqa: E402

D, K = 20, 10
ROWS_PER_FILE = ROW_GROUP = 250_000  # one row group per file: a partition each
_rng = np.random.default_rng(12345)
W = _rng.normal(size=(D, K)) / np.sqrt(D)  # the evaluated softmax policy
B = _rng.normal(size=(D, K)) / np.sqrt(D)  # the DR reward model, "fitted" once
THETA = _rng.normal(size=(K, D)) / np.sqrt(D)  # the logs' true reward model
X_COLUMNS = [f"X{j}" for j in range(D)]
LOGGED = ["actions", "rewards", "propensities"]


def _warm_up() -> None:
    import pyarrow.parquet  # noqa: F401

    import skbandit._dask._fit  # noqa: F401
    import skbandit.evaluation  # noqa: F401
    import skbandit.policies  # noqa: F401  (the fit's first partition imports them)


def _best(run, repeat, cpu_seconds):
    """Best wall time and fewest CPU-seconds of ``repeat`` runs, and the last
    run's result (``cpu_seconds()`` reads the CPU time of every process at work)."""
    times, cpus = [], []
    for _ in range(repeat):
        cpu = cpu_seconds()
        start = time.perf_counter()
        value = run()
        times.append(time.perf_counter() - start)
        cpus.append(cpu_seconds() - cpu)
    return min(times), min(cpus), value


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


# ------------------------------------------------------------------- the logs
def write_logs(folder: Path, n_rows: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for start in range(0, n_rows, ROWS_PER_FILE):
        size = min(ROWS_PER_FILE, n_rows - start)
        path = folder / f"part-{start // ROWS_PER_FILE:05d}.parquet"
        with pq.ParquetWriter(path, _schema()) as writer:
            for offset in range(0, size, ROW_GROUP):
                m = min(ROW_GROUP, size - offset)
                X = rng.normal(size=(m, D)).astype(np.float32)
                actions = rng.integers(K, size=m)
                logits = np.einsum("nd,nd->n", X, THETA[actions])
                rewards = (rng.random(m) < 1 / (1 + np.exp(-logits))).astype(np.float32)
                columns = {c: X[:, j] for j, c in enumerate(X_COLUMNS)}
                columns |= {
                    "actions": actions,
                    "rewards": rewards,
                    "propensities": np.full(m, 1 / K, dtype=np.float32),
                }
                writer.write_table(pa.table(columns, schema=_schema()))


def _schema():
    import pyarrow as pa

    fields = [(c, pa.float32()) for c in X_COLUMNS]
    fields += [
        ("actions", pa.int64()),
        ("rewards", pa.float32()),
        ("propensities", pa.float32()),
    ]
    return pa.schema(fields)


# -------------------------------------------------- per-partition model outputs
def target_proba(X):
    z = X.astype(np.float64) @ W
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def reward_model(X):
    return X.astype(np.float64) @ B


# ------------------------------------------------------------------- numpy loop
def _row_groups(folder: Path):
    import pyarrow.parquet as pq

    for path in sorted(folder.glob("*.parquet")):
        f = pq.ParquetFile(path)
        for g in range(f.num_row_groups):
            t = f.read_row_group(g)
            X = np.column_stack([t[c].to_numpy() for c in X_COLUMNS])
            yield (
                X,
                t["actions"].to_numpy(),
                t["rewards"].to_numpy().astype(np.float64),
                t["propensities"].to_numpy().astype(np.float64),
            )


def numpy_ips(folder, dr=False):
    n, s, s2 = 0, 0.0, 0.0
    for X, a, r, p in _row_groups(folder):
        rows = np.arange(a.size)
        proba = target_proba(X)
        w = proba[rows, a] / p
        if dr:
            q = reward_model(X)
            terms = np.einsum("ij,ij->i", proba, q) + w * (r - q[rows, a])
        else:
            terms = w * r
        n, s, s2 = n + a.size, s + terms.sum(), s2 + (terms**2).sum()
    return s / n


def numpy_linucb(folder):
    A = np.repeat(np.eye(D + 1)[None], K, axis=0)
    b = np.zeros((K, D + 1))
    for X, a, r, _ in _row_groups(folder):
        Z = np.hstack([X.astype(np.float64), np.ones((a.size, 1))])
        for k in range(K):
            rows = a == k
            A[k] += Z[rows].T @ Z[rows]
            b[k] += r[rows] @ Z[rows]
    return np.linalg.inv(A)


# --------------------------------------------------------------------- on Dask
def dask_phase(folder, n_workers, repeat):
    import dask.dataframe as dd
    import distributed

    from skbandit.evaluation import estimate_value
    from skbandit.policies import LinUCB

    cluster = distributed.LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=None,
    )
    out = {}
    with cluster, distributed.Client(cluster) as client:
        client.run(_warm_up)
        frame = dd.read_parquet(str(folder))
        # One read of each file: all the columns as one float64 array, then views.
        logs = frame[[*X_COLUMNS, *LOGGED]].astype("float64").to_dask_array()
        X, r, p = logs[:, :D], logs[:, D + 1], logs[:, D + 2]
        a = logs[:, D].astype(np.int64)
        proba = X.map_blocks(target_proba, chunks=(X.chunks[0], (K,)), dtype=float)
        q = X.map_blocks(reward_model, chunks=(X.chunks[0], (K,)), dtype=float)
        for name, run in (
            ("ips", lambda: estimate_value(proba, a, r, p, method="ips").value),
            (
                "dr",
                lambda: (
                    estimate_value(
                        proba, a, r, p, method="dr", expected_rewards=q
                    ).value
                ),
            ),  # fmt: skip
            ("linucb", lambda: LinUCB(n_actions=K).fit(X, a, r)),
        ):

            def cpu_seconds():
                return sum(client.run(_cpu_seconds).values()) + _cpu_seconds()

            out[name], out[f"{name}_cpu"], value = _best(run, repeat, cpu_seconds)
            if name != "linucb":
                out[f"{name}_value"] = value
        out["workers_mb"] = sorted(client.run(_peak_mb).values())
        out["partitions"] = int(frame.npartitions)
    out["client_mb"] = _peak_mb()
    return out


def numpy_phase(folder, repeat):
    _warm_up()
    out = {}
    for name, run in (
        ("ips", lambda: numpy_ips(folder)),
        ("dr", lambda: numpy_ips(folder, dr=True)),
        ("linucb", lambda: numpy_linucb(folder)),
    ):
        out[name], out[f"{name}_cpu"], value = _best(run, repeat, _cpu_seconds)
        if name != "linucb":
            out[f"{name}_value"] = float(value)
    out["client_mb"] = _peak_mb()
    return out


# --------------------------------------------------------------------- driver
def _run_phase(phase, folder, repeat):
    cmd = [sys.executable, __file__, "--phase", phase, "--dir", str(folder)]
    cmd += ["--repeat", str(repeat)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--dir", default="/tmp/skbandit-scale")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--repeat", type=int, default=2, help="best of this many")
    parser.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase == "numpy":
        print(json.dumps(numpy_phase(Path(args.dir), args.repeat)))
        return
    if args.phase is not None:  # dask-1, dask-2
        workers = int(args.phase.split("-")[1])
        print(json.dumps(dask_phase(Path(args.dir), workers, args.repeat)))
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from common.machine import print_machine

    print_machine()
    for n_rows in args.rows:
        folder = Path(args.dir) / f"rows-{n_rows}"
        start = time.perf_counter()
        write_logs(folder, n_rows)
        written = time.perf_counter() - start
        size = sum(f.stat().st_size for f in folder.glob("*.parquet")) / 2**20
        print(f"\n{n_rows:,} rows: {size:.0f} MB of Parquet written in {written:.1f} s")
        phases = ("numpy", "dask-1", "dask-2")
        results = {p: _run_phase(p, folder, args.repeat) for p in phases}
        for task in ("ips", "dr", "linucb"):
            base = n_rows / results["numpy"][task]
            line = [f"  {task:6s} numpy {base:,.0f} rows/s"]
            for phase in ("dask-1", "dask-2"):
                rate = n_rows / results[phase][task]
                line.append(f"{phase} {rate:,.0f} rows/s ({rate / base:.2f}x numpy)")
            speedup = results["dask-1"][task] / results["dask-2"][task]
            print("; ".join(line) + f"; 2 workers / 1: {speedup:.2f}x")
            per_cpu = {p: n_rows / results[p][f"{task}_cpu"] for p in results}
            print(
                f"  {task:6s} rows per CPU-second (client + workers): "
                + ", ".join(f"{p} {v:,.0f}" for p, v in per_cpu.items())
                + f" ({per_cpu['dask-1'] / per_cpu['numpy']:.2f}x numpy for dask-1)"
            )
        for task in ("ips", "dr"):
            values = [results[p][f"{task}_value"] for p in results]
            print(f"  {task} values (numpy, dask-1, dask-2): {values}")
        for phase, res in results.items():
            workers = res.get("workers_mb", [])
            print(
                f"  peak RSS {phase}: client {res['client_mb']:.0f} MB"
                + (f", workers {[round(w) for w in workers]} MB" if workers else "")
                + (f", {res['partitions']} partitions" if "partitions" in res else "")
            )
        print(f"  (seconds: {json.dumps(results)})")
        if not args.keep:
            shutil.rmtree(folder)


if __name__ == "__main__":
    main()
