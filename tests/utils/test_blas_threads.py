"""Small dense work on one BLAS thread: scoped to the call, the user's count obeyed."""
# SPDX-License-Identifier: BSD-3-Clause

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from skbandit.policies import LinTS, LinUCB, LogTS
from skbandit.policies._core._ridge import RidgeBlocks
from skbandit.utils import _blas_threads
from skbandit.utils._blas_threads import NO_SCOPE, SCOPE
from skbandit.utils.threads import blas_threads, get_blas_threads, set_blas_threads

LIBRARIES = SCOPE._pools.libraries


def _counts():
    return [get() for get, _, _ in LIBRARIES]


@pytest.fixture
def two_thread_default(monkeypatch):
    """BLAS at two threads, recorded as the count at import (whatever this machine's
    own default), so that the scope has something to lower."""
    if not LIBRARIES:
        pytest.skip("no BLAS library whose threads threadpoolctl controls")
    with threadpool_limits(2, user_api="blas"):
        if set(_counts()) != {2}:
            pytest.skip("BLAS cannot run two threads here")
        pools = SCOPE._pools
        monkeypatch.setattr(
            pools, "libraries", [(get, put, 2) for get, put, _ in pools.libraries]
        )
        monkeypatch.setattr(pools, "user_set", False)
        yield


@pytest.fixture
def seen_by_widths(monkeypatch):
    """The BLAS counts in force while the ridge blocks compute a batch's widths."""
    seen = []
    widths = RidgeBlocks.widths

    def spy(self, *args):
        seen.append(_counts())
        return widths(self, *args)

    monkeypatch.setattr(RidgeBlocks, "widths", spy)
    return seen


def _fitted_linucb(n_rows=1000):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_rows, 20))
    policy = LinUCB(n_actions=10, random_state=0)
    return policy.fit(X, rng.integers(10, size=n_rows), rng.random(n_rows)), X


def test_a_batch_runs_on_one_thread_and_the_count_is_restored(
    two_thread_default, seen_by_widths
):
    policy, X = _fitted_linucb()
    policy.select(X)
    policy.predict_scores(X, return_std=True)
    assert seen_by_widths == [[1] * len(LIBRARIES)] * 2
    assert _counts() == [2] * len(LIBRARIES)


def test_the_count_is_restored_when_the_call_raises(two_thread_default, monkeypatch):
    policy, X = _fitted_linucb()

    def fails(*args):
        assert _counts() == [1] * len(LIBRARIES)
        raise RuntimeError("inside the scope")

    monkeypatch.setattr(RidgeBlocks, "means", fails)
    with pytest.raises(RuntimeError, match="inside the scope"):
        policy.select(X)
    assert _counts() == [2] * len(LIBRARIES)


def test_a_users_own_limit_is_obeyed(two_thread_default, seen_by_widths, monkeypatch):
    policy, X = _fitted_linucb()
    # a default of three: the two that the fixture set are the user's choice
    pools = SCOPE._pools
    monkeypatch.setattr(pools, "libraries", [(g, p, 3) for g, p, _ in pools.libraries])
    policy.select(X)
    assert seen_by_widths == [[2] * len(LIBRARIES)]


def test_the_environment_counts_as_the_users_choice(
    two_thread_default, seen_by_widths, monkeypatch
):
    monkeypatch.setattr(SCOPE._pools, "user_set", True)
    policy, X = _fitted_linucb()
    policy.select(X)
    assert seen_by_widths == [[2] * len(LIBRARIES)]


@pytest.mark.parametrize("n_threads, inside", [(None, 2), (2, 2), (3, 3)])
def test_blas_threads_raises_or_releases_small_work(
    two_thread_default, seen_by_widths, n_threads, inside
):
    policy, X = _fitted_linucb()
    with blas_threads(n_threads):
        assert get_blas_threads() == n_threads
        policy.select(X)
    assert get_blas_threads() == 1
    assert seen_by_widths == [[inside] * len(LIBRARIES)]
    assert _counts() == [2] * len(LIBRARIES)


def test_set_blas_threads_holds_for_the_process_and_returns_the_previous():
    assert set_blas_threads(None) == 1
    try:
        assert get_blas_threads() is None
        seen = []
        worker = threading.Thread(target=lambda: seen.append(get_blas_threads()))
        worker.start()
        worker.join()
        assert seen == [None]  # not only in the thread that set it
    finally:
        assert set_blas_threads(1) is None
    assert get_blas_threads() == 1


@pytest.mark.parametrize(
    "bad, error", [(0, ValueError), (1.5, TypeError), (True, TypeError)]
)
def test_a_bad_count_is_refused(bad, error):
    with pytest.raises(error, match="n_threads must be an int >= 1 or None"):
        set_blas_threads(bad)
    with pytest.raises(error), blas_threads(bad):
        pass
    assert get_blas_threads() == 1


def test_which_work_is_scoped():
    policy, _ = _fitted_linucb()  # d = 20 (+1), K = 10: 4,410 multiply-adds a row
    assert policy._work_scope(1) is NO_SCOPE  # OpenBLAS is serial at that size
    assert policy._work_scope(1000) is SCOPE
    assert policy._work_scope(10**6) is NO_SCOPE  # large work keeps BLAS's threads
    history = LogTS(n_actions=10).fit(np.zeros((1, 20)), [0], [1.0])
    history.n_samples_seen_ = 10**6  # LogTS refits over what it has seen
    assert history._work_scope(1, update=True) is NO_SCOPE
    assert history._work_scope(1) is NO_SCOPE


def test_nested_and_concurrent_scopes_restore_the_count(two_thread_default):
    entered, release = threading.Barrier(3), threading.Event()

    def work():
        with SCOPE:
            entered.wait()
            release.wait(timeout=30)

    workers = [threading.Thread(target=work) for _ in range(2)]
    for worker in workers:
        worker.start()
    entered.wait()
    with SCOPE:  # nested inside the others: one thread throughout
        assert _counts() == [1] * len(LIBRARIES)
    assert _counts() == [1] * len(LIBRARIES)  # the workers are still inside
    release.set()
    for worker in workers:
        worker.join(timeout=30)
    assert _counts() == [2] * len(LIBRARIES)
    assert _blas_threads.SCOPE._depth == 0


def test_the_families_on_numpy_models_run_their_small_work_scoped():
    from skbandit.utils.discovery import all_policies

    scoped = {name for name, cls in all_policies() if cls._blas_small_work}
    assert {"LinUCB", "LinTS", "EpsilonGreedy", "LogTS", "LinES", "GLMES"} <= scoped
    assert LinTS._blas_small_work and not LinTS._blas_history
    assert "NeuralTS" not in scoped  # torch's threads are set apart
