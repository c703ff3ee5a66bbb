"""A real two-worker ``LocalCluster`` on 127.0.0.1, shared by the Dask tests.

Worker processes (not threads), so that a test can kill one mid-computation; one
cluster for the folder, since starting one costs seconds on a loaded machine.
"""
# SPDX-License-Identifier: BSD-3-Clause

import pytest


@pytest.fixture(scope="session")
def dask_client():
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
