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
