"""Nothing lost, nothing learned twice: SIGKILL the server mid-stream, restart it.

``python -m skbandit serve`` runs in a subprocess on 127.0.0.1 and a free port,
learning every 50 ms with a 0.2 s reward wait. A client sends a bounded stream of
rank and reward calls; the test kills the server with SIGKILL once a fixed number
of calls were acknowledged, while the stream is still going (and the learner
thread is mid-way through its steps). A second server on the same database must
then hold every acknowledged decision and reward, and its learner must have
learned each closed event exactly once: its count equals the closed events, and
the checkpointed policy has seen exactly that many more samples than the file it
started from.
"""
# SPDX-License-Identifier: BSD-3-Clause

import os
import pickle
import signal
import sqlite3
import threading
import time

import joblib
import numpy as np
import pytest

from skbandit.policies import LinUCB

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from _live import preloaded_server, serve_process  # noqa: E402

N_CALLS = 400  # the stream's bound (rank + reward pairs)
KILL_AFTER = 120  # acknowledged calls before the SIGKILL
OPTIONS = ("--wait", "0.2", "--learn-every", "0.05", "--batch-size", "16")


def _stream(url, acknowledged, stop, rng):
    """Rank then reward, until the bound or the first failed call (the kill)."""
    with httpx.Client(base_url=url, timeout=30.0) as client:
        for i in range(N_CALLS):
            if stop.is_set():
                return
            try:
                r = client.post(
                    "/rank",
                    json={
                        "context": rng.normal(size=3).tolist(),
                        "event_id": f"ev-{i}",
                    },
                )
                r.raise_for_status()
                acknowledged["decisions"].append(r.json()["event_id"])
                value = float(r.json()["action"] == 0)
                w = client.post("/reward", json={"event_id": f"ev-{i}", "value": value})
                w.raise_for_status()
                acknowledged["rewards"].append((f"ev-{i}", value))
            except httpx.HTTPError:
                return


def test_sigkill_mid_stream_loses_nothing_and_learns_nothing_twice(tmp_path):
    policy = LinUCB(n_actions=2, random_state=0)
    policy.fit(np.eye(3)[:2], [0, 1], [1.0, 0.0])
    path, db = tmp_path / "policy.joblib", tmp_path / "decisions.sqlite"
    joblib.dump(policy, path)
    acknowledged = {"decisions": [], "rewards": []}
    stop = threading.Event()
    restart = preloaded_server(path, db, *OPTIONS)  # imports while the first serves
    with serve_process(path, db, *OPTIONS) as (url, process):
        client = threading.Thread(
            target=_stream, args=(url, acknowledged, stop, np.random.default_rng(0))
        )
        client.start()
        deadline = time.monotonic() + 120
        while len(acknowledged["decisions"]) < KILL_AFTER:
            assert client.is_alive() and time.monotonic() < deadline
            time.sleep(0.005)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        client.join(timeout=30)
        stop.set()
    assert KILL_AFTER <= len(acknowledged["decisions"]) < N_CALLS  # killed mid-stream

    with sqlite3.connect(db) as con:  # what the killed server left on disk
        logged = {row[0] for row in con.execute("SELECT event_id FROM events")}
        rewards = con.execute("SELECT event_id, value FROM rewards").fetchall()
    assert set(acknowledged["decisions"]) <= logged
    for pair in acknowledged["rewards"]:
        assert pair in rewards

    with serve_process(path, db, *OPTIONS, preloaded=restart) as (url, _):
        with httpx.Client(base_url=url, timeout=30.0) as c:
            deadline = time.monotonic() + 90
            while True:  # every event closes after 0.2 s; wait for the learner
                status = c.get("/status").json()
                if status["n_open"] == 0 and status["watermark"] == status["n_events"]:
                    break
                assert time.monotonic() < deadline, status
                time.sleep(0.05)
    assert status["n_learned"] == status["n_closed"] == status["n_events"]
    assert status["n_events"] >= len(acknowledged["decisions"])
    with sqlite3.connect(db) as con:
        (blob,) = con.execute(
            "SELECT policy FROM checkpoints ORDER BY id DESC LIMIT 1"
        ).fetchone()
    learned = pickle.loads(blob)
    assert learned.n_samples_seen_ == policy.n_samples_seen_ + status["n_learned"]
