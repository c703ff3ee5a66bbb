"""Rank + log: decisions per second and latency, with and without the decision log.

For LinUCB, FALCON on a HistGradientBoostingRegressor and NeuralTS (defaults, 10 arms),
each fitted on 400 rounds of the digits as a 10-armed bandit (64 features in [0, 1]),
one decision per call on the following digits:

- **in process**: ``policy.select(x[None], return_propensities=True)`` (no log)
  against ``DecisionLog.decide(policy, x)`` with ``durability="commit"`` (each
  decision committed to SQLite before the call returns) and ``"batch"`` (queued,
  written by the log's writer thread 256 at a time or every 0.1 s); 1 client, and 8
  client threads sharing the policy under one lock (what the server does);
- **over HTTP on loopback**: three servers in subprocesses at once, ``python -m
  skbandit serve`` (FastAPI on uvicorn, not learning during the run) with
  ``--durability commit`` and ``batch``, and a plain FastAPI app whose ``POST
  /rank`` validates the context and calls ``select`` without logging; 1 client and 8
  concurrent clients (threads of this process, each with its own keep-alive
  ``httpx.Client``).

Every variant runs in blocks of 25 calls per client, taken in turn, so that the
shared machine's load weighs on each alike.
Latencies are per call as the client sees it (p50, p99); decisions/s is calls over
the wall time of the run (for 8 clients, all of theirs together).

Run::

    python benchmarks/serving/rank_and_log.py [--quick]
"""
# SPDX-License-Identifier: BSD-3-Clause
# (no "from __future__ import annotations": FastAPI reads the plain app's request
# model from the handler's annotation, defined in a function)

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import joblib
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common.machine import print_machine  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
N_FIT, N_ARMS = 400, 10


def _policies():
    from sklearn.ensemble import HistGradientBoostingRegressor

    from skbandit.policies import FALCON, LinUCB, NeuralTS

    return {
        "LinUCB": LinUCB(n_actions=N_ARMS, random_state=0),
        "FALCON(HGB)": FALCON(
            n_actions=N_ARMS,
            estimator=HistGradientBoostingRegressor(),
            random_state=0,
        ),
        "NeuralTS": NeuralTS(n_actions=N_ARMS, random_state=0),
    }


def _data():
    from skbandit.datasets import load_digits_bandit

    X, y = load_digits_bandit(return_X_y=True)
    rng = np.random.default_rng(0)
    actions = rng.integers(N_ARMS, size=N_FIT)
    rewards = (actions == y[:N_FIT]).astype(float)
    return X, actions, rewards


# ---------------------------------------------------------------------- timing
def _threads(n_clients, calls_per_client, call):
    """``n_clients`` threads making ``calls_per_client`` calls; their latencies."""
    latencies, lock = [], threading.Lock()

    def work(k):
        threading.current_thread().client_index = k
        own = []
        for i in range(calls_per_client):
            start = time.perf_counter()
            call(k * calls_per_client + i)
            own.append(time.perf_counter() - start)
        with lock:
            latencies.extend(own)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies


def _alternate(calls, n_calls, n_clients, block=25):
    """Blocks of ``block`` calls per client of each call in turn, so that the shared
    machine's load weighs on each alike: decisions/s over the calls' own wall time,
    p50 and p99 over all their latencies."""
    latencies = {name: [] for name in calls}
    walls = dict.fromkeys(calls, 0.0)
    for _ in range(max(1, n_calls // (block * n_clients))):
        for name, call in calls.items():
            start = time.perf_counter()
            latencies[name] += _threads(n_clients, block, call)
            walls[name] += time.perf_counter() - start
    out = {}
    for name, lat in latencies.items():
        ms = np.asarray(lat) * 1e3
        out[name] = {
            "per_s": len(ms) / walls[name],
            "p50": float(np.percentile(ms, 50)),
            "p99": float(np.percentile(ms, 99)),
        }
    return out


# ---------------------------------------------------------------------- in process
def in_process(policy, X, n_calls, n_clients, tmp):
    from skbandit.serving import DecisionLog

    guard = threading.RLock()  # what the server's lock does
    logs = {
        mode: DecisionLog(
            Path(tmp) / f"{mode}-{n_clients}-{id(policy)}.sqlite", durability=mode
        )
        for mode in ("commit", "batch")
    }
    rows = X[N_FIT:]

    def plain(i):
        with guard:
            policy.select(rows[i % len(rows)][None], return_propensities=True)

    def logged(mode):
        def call(i):
            with guard:
                logs[mode].decide(policy, rows[i % len(rows)])

        return call

    calls = {
        "select": plain,
        "decide commit": logged("commit"),
        "decide batch": logged("batch"),
    }
    out = _alternate(calls, n_calls, n_clients)
    for log in logs.values():
        log.close_connection()
    return out


# ---------------------------------------------------------------------------- HTTP
def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def plain_app(policy_path):
    """FastAPI ``POST /rank`` that validates the context and selects, no log."""
    from typing import Annotated

    from fastapi import FastAPI
    from pydantic import BaseModel, Field

    policy = joblib.load(policy_path)
    guard = threading.RLock()

    class Rank(BaseModel):
        context: list[Annotated[float, Field(strict=True, allow_inf_nan=False)]]

    app = FastAPI()

    @app.post("/rank")
    async def rank(request: Rank):
        x = np.asarray(request.context, dtype=np.float64)[None]
        with guard:
            arms, props = policy.select(x, return_propensities=True)
        return {"action": int(arms[0]), "probability": float(props[0])}

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    return app


def _start(kind, policy_path, db):
    port = _free_port()
    if kind == "plain":
        argv = [__file__, "--serve-plain", str(policy_path), "--port", str(port)]
    else:  # skbandit serve, durability "commit" or "batch", not learning
        argv = [
            "-m",
            "skbandit",
            "serve",
            str(policy_path),
            "--db",
            str(db),
            "--port",
            str(port),
            "--learn-every",
            "0",
            "--durability",
            kind,
        ]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    process = subprocess.Popen(
        [sys.executable, *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return process, f"http://127.0.0.1:{port}"


def _wait_healthy(url):
    import httpx

    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError(f"no server at {url}")


def over_http(urls, X, n_calls, n_clients):
    """Each server's ``/rank`` in alternating blocks, ``n_clients`` at a time."""
    import httpx

    rows = [x.tolist() for x in X[N_FIT:]]
    calls = {}
    for name, url in urls.items():
        clients = [httpx.Client(base_url=url, timeout=30) for _ in range(n_clients)]
        for c in clients:  # open the keep-alive connections before timing
            c.get("/health")

        def call(i, clients=clients):
            k = threading.current_thread().client_index
            r = clients[k].post("/rank", json={"context": rows[i % len(rows)]})
            r.raise_for_status()

        calls[name] = call
    return _alternate(calls, n_calls, n_clients)


# ---------------------------------------------------------------------------- main
def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls")
    parser.add_argument("--policies", nargs="*", default=None)
    parser.add_argument("--serve-plain", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_plain:
        import uvicorn

        uvicorn.run(
            plain_app(args.serve_plain),
            host="127.0.0.1",
            port=args.port,
            log_level="warning",
            access_log=False,
        )
        return
    print_machine()
    X, actions, rewards = _data()
    scale = 0.25 if args.quick else 1.0
    n_local = {"LinUCB": 2000, "FALCON(HGB)": 400, "NeuralTS": 400}
    n_http = {"LinUCB": 800, "FALCON(HGB)": 200, "NeuralTS": 200}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, policy in _policies().items():
            if args.policies and name not in args.policies:
                continue
            policy.fit(X[:N_FIT], actions, rewards)
            path = Path(tmp) / f"{name}.joblib"
            joblib.dump(policy, path)
            for n_clients in (1, 8):
                local = in_process(
                    policy, X, int(n_local[name] * scale), n_clients, tmp
                )
                for call, s in local.items():
                    rows.append((name, "in process", n_clients, call, s))
            servers = {
                label: _start(kind, path, Path(tmp) / f"{name}-{kind}.sqlite")
                for kind, label in (
                    ("plain", "select"),
                    ("commit", "decide commit"),
                    ("batch", "decide batch"),
                )
            }
            try:
                for _, url in servers.values():
                    _wait_healthy(url)
                urls = {label: url for label, (_, url) in servers.items()}
                for n_clients in (1, 8):
                    remote = over_http(urls, X, int(n_http[name] * scale), n_clients)
                    for call, s in remote.items():
                        rows.append((name, "HTTP", n_clients, call, s))
            finally:
                for process, _ in servers.values():
                    process.terminate()
                    process.wait(timeout=30)
    print()
    print(
        "| policy | where | clients | call | decisions/s | p50 ms | p99 ms | "
        "p50 / no log |"
    )
    print("|---|---|---|---|---|---|---|---|")
    base = {(r[0], r[1], r[2]): r[4]["p50"] for r in rows if r[3] == "select"}
    for name, where, n_clients, call, s in rows:
        ratio = s["p50"] / base[(name, where, n_clients)]
        print(
            f"| {name} | {where} | {n_clients} | {call} | {s['per_s']:.0f} | "
            f"{s['p50']:.3f} | {s['p99']:.3f} | {ratio:.2f} |"
        )


if __name__ == "__main__":
    main()
