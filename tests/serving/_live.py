"""Helpers of the serving tests: a hand-moved clock, and live servers (127.0.0.1, a
free port, stopped by the test)."""
# SPDX-License-Identifier: BSD-3-Clause

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 180.0  # s: a loaded 2-core machine imports torch slowly (36 s seen)


class Clock:
    """A clock the test moves by hand (seconds), for the log's ``clock``."""

    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(httpx, url, process=None, timeout=START_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(
                f"the server exited with {process.returncode}: "
                f"{process.stderr.read().decode(errors='replace')[-2000:]}"
            )
        try:
            if httpx.get(f"{url}/health", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"no /health from {url} within {timeout} s")


@contextmanager
def uvicorn_thread(app):
    """Serve ``app`` with uvicorn in a thread of this process (its policy is ours)."""
    uvicorn = pytest.importorskip("uvicorn")
    httpx = pytest.importorskip("httpx")
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="error", access_log=False
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(httpx, url)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=20)


# ``skbandit serve`` with its imports done first, started when a line comes on stdin:
# a restart that does not wait for torch and scikit-learn to import again.
_PRELOADED = (
    "import sys, fastapi, uvicorn, skbandit.policies, skbandit.serving\n"
    "from skbandit.__main__ import main\n"
    "sys.stdin.readline()\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def preloaded_server(policy_path, db, *options):
    """A ``skbandit serve`` process that has imported everything and waits for a
    line on stdin before it opens the log; start it with :func:`serve_process`."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    argv = ["serve", str(policy_path), "--db", str(db), "--port", str(port)]
    process = subprocess.Popen(
        [sys.executable, "-c", _PRELOADED, *argv, *map(str, options)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return process, f"http://127.0.0.1:{port}"


@contextmanager
def serve_process(policy_path, db, *options, preloaded=None):
    """``skbandit serve`` in a subprocess (``preloaded``: one made earlier by
    :func:`preloaded_server`), started now; killed at the end if still alive."""
    httpx = pytest.importorskip("httpx")
    if preloaded is None:
        preloaded = preloaded_server(policy_path, db, *options)
    process, url = preloaded
    process.stdin.write(b"go\n")
    process.stdin.close()
    try:
        wait_healthy(httpx, url, process)
        yield url, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        process.stderr.close()
