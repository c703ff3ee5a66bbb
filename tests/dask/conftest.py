"""Real two-worker ``LocalCluster`` s on 127.0.0.1 for the Dask tests.

Worker processes (not threads), so that a test can kill one mid-computation. One
cluster is shared by the folder, since starting one costs seconds on a loaded
machine; a test that kills a worker gets a cluster of its own, so that no later test
waits on the nanny's restart of the victim, which Dask does not promise in any time
(in a whole-suite run the restarted worker once failed to arrive within 60 s).
"""
# SPDX-License-Identifier: BSD-3-Clause

import contextlib

import pytest


@contextlib.contextmanager
def _two_worker_client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        worker_dashboard_address=None,
        # the scheduler's HTTP server starts even so: a free port, not 8787 (taken
        # by another cluster, Dask warns and moves)
        scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
    )
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.fixture(scope="session")
def dask_client():
    with _two_worker_client() as client:
        yield client


@pytest.fixture
def dask_client_to_kill():
    """A cluster of the test's own, closed after it whether or not its victim came
    back, and the one Dask computes on during the test (set in Dask's config, which
    the test's threads share; the newest client would otherwise be the folder's if
    that one started later)."""
    dask = pytest.importorskip("dask")
    with _two_worker_client() as client, dask.config.set(scheduler=client):
        yield client


@pytest.fixture
def computed_while_a_worker_dies(dask_client_to_kill):
    """``compute()`` run in a thread while one of the cluster's two workers is killed
    once busy (after ``settle`` more seconds); its result, or the test fails with the
    error (a clear one is allowed, never a wrong number: the caller checks the
    result). Also returns the victim's pid."""
    import os
    import signal
    import threading
    import time

    client = dask_client_to_kill

    def run(compute, *, polls, settle=0.0):
        result = {}

        def target():
            try:
                result["value"] = compute()
            except Exception as exc:  # noqa: BLE001 -- a clear error fails below
                result["error"] = exc

        pids = client.run(os.getpid)
        thread = threading.Thread(target=target)
        thread.start()
        victim = next(iter(pids))
        for _ in range(polls):  # bounded: until the victim is busy
            if client.processing().get(victim):
                break
            time.sleep(0.01)
        else:
            pytest.fail("the victim worker never got a task")
        time.sleep(settle)
        os.kill(pids[victim], signal.SIGKILL)
        thread.join(timeout=120)
        assert not thread.is_alive()
        if "error" in result:
            assert "value" not in result
            pytest.fail(f"no retry: {result['error']!r}")
        return result["value"], pids[victim]

    return run
