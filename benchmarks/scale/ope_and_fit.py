"""IPS, DR and a LinUCB fit over Parquet logs past memory, on Dask, against numpy.

Has Dask workers write ``--rows`` logged rows (``logs.py``: d = 20 float32 features,
K = 10 arms, uniform logging, Bernoulli rewards; Parquet files of one row group of
2.5 * 10^5 rows, one Dask partition each, each generated on a worker from its own
seeded stream), then times, each in a fresh process (so that each peak resident
memory is its own), after a warm-up that imports what each process needs, the best
of ``--repeat`` runs of each task:

- ``numpy``: one process looping over the same row groups with the same reader
  (``logs.read_row_group``), computing the same per-row terms and accumulating their
  sums (IPS: ``sum w r`` and its square; DR: the same with the reward model; LinUCB:
  per-arm ``X^T X`` and ``X^T r``), no validation: the plain implementation of the
  same maths;
- ``dask-1`` and ``dask-2``: skbandit's ``estimate_value`` and ``LinUCB.fit`` on a
  ``LocalCluster`` of 1 and 2 single-threaded worker processes, the logs as Dask
  arrays of one task per row group calling the same reader on the worker; Dask's
  periodic timers slowed (``BATCH_TIMERS``; ``SKBANDIT_SCALE_DASK_DEFAULTS=1`` keeps
  Dask's defaults);
- with ``--frame``, ``frame-1``: the same on one worker, the logs read by
  ``dask.dataframe.read_parquet`` (the needed columns; a pandas frame per partition).

The evaluated policy is a fixed softmax-linear one and the DR reward model a fixed
linear one, both computed per partition by ``map_blocks``. Task by task (IPS, DR,
LinUCB; ``--tasks`` picks some), the phases run in turn (numpy, dask-1, dask-2, ...;
``--phases`` picks some), ``--rounds`` times, so that each ratio compares runs made
minutes apart under the same load. Prints every run's seconds, rows per second of
the best run (wall clock), rows per CPU-second of the client and workers together
(which a machine shared with other jobs disturbs less), the ratios the issue sets as
goals (two workers to one also of the median runs), and the peak RSS of the client
and of each worker (``getrusage``; MB).

Run: ``OPENBLAS_NUM_THREADS=1 nice python benchmarks/scale/ope_and_fit.py --rows
1000000 10000000 --dir /tmp/skbandit-scale`` (the files are deleted at the end
unless ``--keep``; ``--reuse`` reads files already there instead of writing them).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from logs import (  # noqa: E402
    D,
    K,
    read_row_group,
    reward_model,
    row_groups,
    target_proba,
    write_logs,
)

TASKS = ("ips", "dr", "linucb")

#: Dask's periodic timers, slowed for a batch job (defaults: a 20 ms tick, stack
#: samples every 10 ms, a 0.5 s system monitor, a 100 ms memory monitor, stealing
#: every 100 ms). At rest the defaults cost the client (which holds the scheduler) and
#: one worker 5% of a core (0.7% with these), and those CPU-seconds grow with the
#: wall time, which a machine shared with other jobs stretches.
BATCH_TIMERS = {
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.scheduler.work-stealing": False,
}


def _warm_up() -> None:
    import pyarrow.parquet  # noqa: F401

    import skbandit._dask._fit  # noqa: F401
    import skbandit.evaluation  # noqa: F401
    import skbandit.policies  # noqa: F401  (the fit's first partition imports them)


def _best(run, repeat, cpu_seconds):
    """Best wall time and fewest CPU-seconds of ``repeat`` runs, every run's
    ``[seconds, CPU-seconds]``, and the last run's result (``cpu_seconds()`` reads
    the CPU time of every process at work)."""
    runs = []
    for _ in range(repeat):
        cpu = cpu_seconds()
        start = time.perf_counter()
        value = run()
        runs.append([time.perf_counter() - start, cpu_seconds() - cpu])
    return min(t for t, _ in runs), min(c for _, c in runs), runs, value


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


# ------------------------------------------------------------------- numpy loop
def _numpy_groups(folder: Path):
    for path, group, _ in row_groups(folder):
        X, a, r, p = read_row_group(path, group)
        yield X, a, r.astype(np.float64), p.astype(np.float64)


def numpy_ips(folder, dr=False):
    n, s, s2 = 0, 0.0, 0.0
    for X, a, r, p in _numpy_groups(folder):
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
    for X, a, r, _ in _numpy_groups(folder):
        Z = np.empty((a.size, D + 1))
        Z[:, :D], Z[:, D] = X, 1.0
        for k in range(K):
            rows = a == k
            Zk = Z[rows]  # one gather per arm
            A[k] += Zk.T @ Zk
            b[k] += r[rows] @ Zk
    return np.linalg.inv(A)


def numpy_phase(folder, repeat, tasks):
    _warm_up()
    out = {}
    runs = {
        "ips": lambda: numpy_ips(folder),
        "dr": lambda: numpy_ips(folder, dr=True),
        "linucb": lambda: numpy_linucb(folder),
    }
    for name in tasks:
        run = runs[name]
        best = _best(run, repeat, _cpu_seconds)
        out[name], out[f"{name}_cpu"], out[f"{name}_runs"], value = best
        if name != "linucb":
            out[f"{name}_value"] = float(value)
    out["client_mb"] = _peak_mb()
    return out


# --------------------------------------------------------------------- on Dask
def row_group_arrays(folder):
    """``(X, actions, rewards, propensities)`` as Dask arrays over the row groups:
    one read task per row group (on a worker), its four arrays sliced from it; the
    client reads the footers only (the row counts)."""
    import dask
    import dask.array as da

    groups = row_groups(folder)
    parts = [dask.delayed(read_row_group)(path, g) for path, g, _ in groups]
    specs = [((D,), np.float32), ((), np.int64), ((), np.float32), ((), np.float32)]
    return [
        da.concatenate(
            [
                da.from_delayed(part[i], (n, *shape), dtype=dtype)
                for part, (_, _, n) in zip(parts, groups, strict=True)
            ]
        )
        for i, (shape, dtype) in enumerate(specs)
    ]


def frame_arrays(folder):
    """The same through ``dask.dataframe.read_parquet`` (the needed columns)."""
    import dask.dataframe as dd
    from logs import LOGGED, X_COLUMNS

    frame = dd.read_parquet(str(folder), columns=[*X_COLUMNS, *LOGGED])
    X = frame[X_COLUMNS].to_dask_array()
    return [X, *(frame[c].to_dask_array() for c in LOGGED)]


def dask_phase(folder, n_workers, repeat, reader, tasks):
    import dask
    import distributed

    if os.environ.get("SKBANDIT_SCALE_DASK_DEFAULTS") != "1":
        dask.config.set(BATCH_TIMERS)  # the workers get the client's config

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
        X, a, r, p = (frame_arrays if reader == "frame" else row_group_arrays)(folder)
        proba = X.map_blocks(target_proba, chunks=(X.chunks[0], (K,)), dtype=float)
        q = X.map_blocks(reward_model, chunks=(X.chunks[0], (K,)), dtype=float)
        runs = {
            "ips": lambda: estimate_value(proba, a, r, p, method="ips").value,
            "dr": lambda: (
                estimate_value(proba, a, r, p, method="dr", expected_rewards=q).value
            ),
            "linucb": lambda: LinUCB(n_actions=K).fit(X, a, r),
        }

        def cpu_seconds():
            return sum(client.run(_cpu_seconds).values()) + _cpu_seconds()

        for name in tasks:
            run = runs[name]
            best = _best(run, repeat, cpu_seconds)
            out[name], out[f"{name}_cpu"], out[f"{name}_runs"], value = best
            if name != "linucb":
                out[f"{name}_value"] = value
        out["workers_mb"] = sorted(client.run(_peak_mb).values())
        out["partitions"] = int(X.numblocks[0])
    out["client_mb"] = _peak_mb()
    return out


# --------------------------------------------------------------------- driver
def _run_phase(phase, task, folder, args):
    while args.pause_file and Path(args.pause_file).exists():
        time.sleep(10)  # a quiet window on a shared machine: no new phase
    cmd = [sys.executable, __file__, "--phase", phase, "--dir", str(folder)]
    cmd += ["--repeat", str(args.repeat), "--tasks", task]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _merge(best, new):
    """Two runs of one phase as one: the fewest seconds of each task, every run,
    the highest peaks (each worker's, in order), the other entries of both."""
    if best is None:
        return new
    out = {**best, **new}
    for key, value in new.items():
        if key in best and key in {*TASKS, *(f"{t}_cpu" for t in TASKS)}:
            out[key] = min(value, best[key])
        elif key in best and key.endswith("_runs"):
            out[key] = best[key] + value
        elif key == "client_mb":
            out[key] = max(value, best[key])
        elif key == "workers_mb":
            out[key] = [max(a, b) for a, b in zip(value, best[key], strict=True)]
    return out


def _report_task(n_rows, results, task):
    """A task's rates (best run), its ratios to numpy (where run) and of two
    workers to one (best runs and median runs), and every run's seconds."""
    base = n_rows / results["numpy"][task] if "numpy" in results else None
    line = []
    for phase, res in results.items():
        rate = n_rows / res[task]
        ratio = f" ({rate / base:.2f}x numpy)" if base and phase != "numpy" else ""
        line.append(f"{phase} {rate:,.0f} rows/s{ratio}")
    if "dask-1" in results and "dask-2" in results:
        one, two = results["dask-1"], results["dask-2"]
        medians = [np.median([t for t, _ in r[f"{task}_runs"]]) for r in (one, two)]
        line.append(
            f"2 workers / 1: {one[task] / two[task]:.2f}x best, "
            f"{medians[0] / medians[1]:.2f}x median"
        )
    print(f"  {task:6s} " + "; ".join(line))
    per_cpu = {p: n_rows / results[p][f"{task}_cpu"] for p in results}
    print(
        f"  {task:6s} rows per CPU-second (client + workers): "
        + ", ".join(f"{p} {v:,.0f}" for p, v in per_cpu.items())
        + "".join(
            f" ({v / per_cpu['numpy']:.2f}x numpy for {p})"
            for p, v in per_cpu.items()
            if p != "numpy" and "numpy" in per_cpu
        )
    )
    print(
        f"  {task:6s} every run, seconds: "
        + "; ".join(
            f"{p} {[round(t, 2) for t, _ in r[f'{task}_runs']]}"
            for p, r in results.items()
        )
    )


def _report(n_rows, results, load, tasks):
    for task in tasks:
        _report_task(n_rows, results, task)
    for task in [t for t in tasks if t != "linucb"]:
        values = [results[p][f"{task}_value"] for p in results]
        print(f"  {task} values ({', '.join(results)}): {values}")
    for phase, res in results.items():
        workers = res.get("workers_mb", [])
        print(
            f"  peak RSS {phase}: client {res['client_mb']:.0f} MB"
            + (f", workers {[round(w) for w in workers]} MB" if workers else "")
            + (f", {res['partitions']} partitions" if "partitions" in res else "")
        )
    print(f"  load average during the runs: {load}")
    print(f"  (seconds: {json.dumps(results)})", flush=True)


def _one_size(n_rows, args):
    folder = Path(args.dir) / f"rows-{n_rows}"
    if not (args.reuse and folder.exists()):
        start = time.perf_counter()
        written = write_logs(folder, n_rows, args.seed)
        took = time.perf_counter() - start
        print(
            f"\n{n_rows:,} rows: {written / 2**20:,.0f} MB of Parquet written by 2 "
            f"workers in {took:.1f} s",
            flush=True,
        )
    phases = args.phases + (["frame-1"] if args.frame else [])
    results = dict.fromkeys(phases)
    loads = []
    for task in args.tasks:  # each task's phases in turn: its ratios under one load
        for _ in range(args.rounds):
            for phase in phases:
                run = _run_phase(phase, task, folder, args)
                print(f"  {phase} {task}: {json.dumps(run)}", flush=True)
                results[phase] = _merge(results[phase], run)
                loads.append(round(os.getloadavg()[0], 1))
    _report(n_rows, results, loads, args.tasks)
    if not args.keep:
        shutil.rmtree(folder)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--dir", default="/tmp/skbandit-scale")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="read existing files")
    parser.add_argument("--repeat", type=int, default=2, help="best of this many")
    parser.add_argument("--rounds", type=int, default=1, help="phases in turn")
    parser.add_argument("--seed", type=int, default=0, help="the logs' seed")
    parser.add_argument("--frame", action="store_true", help="also frame-1")
    parser.add_argument(
        "--phases", nargs="+", default=["numpy", "dask-1", "dask-2"], help="to run"
    )
    parser.add_argument(
        "--pause-file",
        default=None,
        help="start no phase while this file exists (a shared machine's quiet window)",
    )
    parser.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--tasks", nargs="+", default=TASKS, choices=TASKS)
    args = parser.parse_args(argv)
    if args.phase == "numpy":
        print(json.dumps(numpy_phase(Path(args.dir), args.repeat, args.tasks)))
        return
    if args.phase is not None:  # dask-1, dask-2, frame-1
        reader, workers = args.phase.split("-")
        reader = "frame" if reader == "frame" else "row-groups"
        out = dask_phase(Path(args.dir), int(workers), args.repeat, reader, args.tasks)
        print(json.dumps(out))
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from common.machine import print_machine

    print_machine()
    for n_rows in args.rows:
        _one_size(n_rows, args)


if __name__ == "__main__":
    main()
