"""One task per partition: the Dask paths submit each partition's chain as one task.

The graphs are recorded by a scheduler that counts the tasks it is handed and then
runs them in this process (Dask's synchronous scheduler); a cluster is started
only for the killed-worker test. Values are compared exactly where the fused graph
runs the same functions on the same blocks (fusing changes where a task runs, not
what it computes) and at 1e-9 relative against the in-memory call, whose sums
run in another order.
"""
# SPDX-License-Identifier: BSD-3-Clause

import os
import time

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

from skbandit._dask._fuse import one_task_per_block  # noqa: E402
from skbandit.evaluation import estimate_value  # noqa: E402
from skbandit.policies import LinUCB  # noqa: E402

RTOL = 1e-9  # per-partition sums against numpy's pairwise sums: ~1e-15 apart
N_PARTS, ROWS, D, K = 5, 400, 3, 4


def _read(part):
    """A partition's four logged arrays from one "file" (a seeded stream)."""
    rng = np.random.default_rng([7, part])
    X = rng.normal(size=(ROWS, D))
    actions = rng.integers(K, size=ROWS)
    rewards = rng.normal(size=ROWS) + actions
    return X, actions, rewards, np.full(ROWS, 1 / K)


def _softmax(X):
    z = X @ np.arange(D * K, dtype=float).reshape(D, K) / (D * K)
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def _as_read_from_files():
    """The four arrays as a user builds them from files: one read per partition,
    each array sliced from it (``from_delayed``, ``concatenate``)."""
    reads = [dask.delayed(_read)(part) for part in range(N_PARTS)]
    shapes = [(ROWS, D), (ROWS,), (ROWS,), (ROWS,)]
    dtypes = [float, np.int64, float, float]
    return [
        da.concatenate([da.from_delayed(read[i], shape, dtype=dtype) for read in reads])
        for i, (shape, dtype) in enumerate(zip(shapes, dtypes, strict=True))
    ]


def _weighted_rewards(proba, actions, rewards):
    rows = np.arange(len(actions))
    return (proba[rows, actions[:, 0].astype(int)] * rewards[:, 0])[:, None]


def _in_memory():
    return [
        np.concatenate(parts) for parts in zip(*map(_read, range(N_PARTS)), strict=True)
    ]


class _Recorder:
    """A scheduler that records each graph's size, then runs it synchronously."""

    def __init__(self):
        self.sizes = []

    def __call__(self, graph, keys, **kwargs):
        tasks = graph.__dask_graph__() if hasattr(graph, "__dask_graph__") else graph
        self.sizes.append(len(tasks))
        return dask.get(graph, keys, **kwargs)


def test_each_partitions_chain_becomes_one_task():
    X, actions, rewards, _ = _as_read_from_files()
    column = actions[:, None].astype(float)
    chained = da.map_blocks(
        _weighted_rewards,
        X.map_blocks(_softmax, chunks=(X.chunks[0], (K,)), dtype=float),
        column,
        rewards[:, None],
        chunks=(X.chunks[0], (1,)),
        dtype=float,
    )
    plain = dask.optimize(chained)[0]
    assert len(plain.__dask_graph__()) > 3 * N_PARTS  # several tasks per partition
    fused = one_task_per_block(chained)
    assert len(fused.__dask_graph__()) == N_PARTS
    got = fused.compute(scheduler="sync", optimize_graph=False)
    np.testing.assert_array_equal(got, chained.compute(scheduler="sync"))


def test_tasks_shared_by_partitions_stay_one_task():
    """A model every partition uses, and a numpy array cut into partitions, stay
    one task each, computed once; only the per-partition tasks are fused."""
    built = []

    def build_model():
        built.append(1)
        return np.arange(D, dtype=float)

    model = dask.delayed(build_model, pure=True)()
    offsets = np.arange(N_PARTS * ROWS, dtype=float)[:, None]
    offsets = da.from_array(offsets, chunks=(ROWS, 1))
    X, *_ = _as_read_from_files()
    scored = da.map_blocks(
        lambda x, o, m: x @ m + o[:, 0], X, offsets, model, drop_axis=1, dtype=float
    )
    fused = one_task_per_block(scored)
    graph = fused.__dask_graph__()
    assert model.key in graph
    assert len(graph) == N_PARTS + 1  # the partitions (with their numpy blocks), model
    got = fused.compute(scheduler="sync", optimize_graph=False)
    assert built == [1]
    np.testing.assert_array_equal(got, scored.compute(scheduler="sync"))


def test_tasks_no_block_needs_are_left_out():
    X, *_ = _as_read_from_files()  # five reads
    first_two = X[: 2 * ROWS].map_blocks(np.sum, axis=1, drop_axis=1, dtype=float)
    fused = one_task_per_block(first_two)
    assert len(fused.__dask_graph__()) == 2  # the other three reads culled
    got = fused.compute(scheduler="sync", optimize_graph=False)
    np.testing.assert_array_equal(got, first_two.compute(scheduler="sync"))


def test_estimate_submits_one_task_per_partition():
    X, actions, rewards, propensities = _as_read_from_files()
    proba = X.map_blocks(_softmax, chunks=(X.chunks[0], (K,)), dtype=float)
    q = X.map_blocks(
        lambda x: x @ np.ones((D, K)), chunks=(X.chunks[0], (K,)), dtype=float
    )
    recorder = _Recorder()
    with dask.config.set(scheduler=recorder):
        got = estimate_value(
            proba, actions, rewards, propensities, method="dr", expected_rewards=q
        )
    assert recorder.sizes == [N_PARTS + 1]  # and the blocks' concatenation
    X_, actions_, rewards_, propensities_ = _in_memory()
    want = estimate_value(
        _softmax(X_),
        actions_,
        rewards_,
        propensities_,
        method="dr",
        expected_rewards=X_ @ np.ones((D, K)),
    )
    assert got.value == pytest.approx(want.value, rel=RTOL)
    assert got.std_error == pytest.approx(want.std_error, rel=RTOL)


def test_ridge_fit_submits_one_task_per_partition():
    X, actions, rewards, _ = _as_read_from_files()
    recorder = _Recorder()
    with dask.config.set(scheduler=recorder):
        got = LinUCB(n_actions=K).fit(X, actions, rewards)
    # the partitions' fits, the policy template, one merge and the inversion
    assert recorder.sizes == [N_PARTS + 3]
    X_, actions_, rewards_, _ = _in_memory()
    want = LinUCB(n_actions=K).fit(X_, actions_, rewards_)
    np.testing.assert_allclose(got._ridge.precision, want._ridge.precision, rtol=RTOL)
    np.testing.assert_allclose(got._ridge.moment, want._ridge.moment, rtol=RTOL)
    np.testing.assert_array_equal(got.action_counts_, want.action_counts_)


def _slow_read(part):
    time.sleep(0.2)  # long enough for the kill to land mid-computation
    return _read(part)


def test_killed_worker_mid_fused_fit_leaves_the_same_policy(
    dask_client_to_kill, computed_while_a_worker_dies
):
    reads = [dask.delayed(_slow_read)(part) for part in range(N_PARTS)]
    X, actions, rewards = (
        da.concatenate([da.from_delayed(r[i], shape, dtype=float) for r in reads])
        for i, shape in enumerate([(ROWS, D), (ROWS,), (ROWS,)])
    )
    got, victim = computed_while_a_worker_dies(
        lambda: LinUCB(n_actions=K).fit(X, actions.astype(int), rewards), polls=500
    )
    X_, actions_, rewards_, _ = _in_memory()
    want = LinUCB(n_actions=K).fit(X_, actions_, rewards_)
    np.testing.assert_allclose(got._ridge.precision, want._ridge.precision, rtol=RTOL)
    np.testing.assert_allclose(got._ridge.moment, want._ridge.moment, rtol=RTOL)
    assert victim not in dask_client_to_kill.run(os.getpid).values()
