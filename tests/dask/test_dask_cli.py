"""``skbandit fit`` and ``skbandit evaluate`` on a Parquet directory, on Dask."""
# SPDX-License-Identifier: BSD-3-Clause

import pickle

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

pytest.importorskip("dask.dataframe")

from skbandit.__main__ import main  # noqa: E402
from skbandit.policies import LinUCB  # noqa: E402

N, D, K = 2000, 3, 3


@pytest.fixture(scope="module")
def parquet_logs(tmp_path_factory):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N, D))
    actions = rng.integers(K, size=N)
    rewards = (X[:, 0] * (actions == 1) + rng.normal(size=N) > 0).astype(float)
    frame = pd.DataFrame(X, columns=[f"X{j}" for j in range(D)])
    frame["actions"], frame["rewards"] = actions, rewards
    frame["propensities"] = 1.0 / K
    folder = tmp_path_factory.mktemp("logs")
    for part in range(4):  # four files, one partition each
        rows = slice(part * N // 4, (part + 1) * N // 4)
        frame.iloc[rows].to_parquet(folder / f"part-{part}.parquet")
    return folder, X, actions, rewards


def test_fit_parquet_on_a_scheduler(dask_client, parquet_logs, tmp_path, capsys):
    folder, X, actions, rewards = parquet_logs
    out = tmp_path / "policy.pkl"
    address = dask_client.scheduler.address
    argv = ["fit", str(folder), "--policy", "LinUCB(beta=0.5)", "--out", str(out)]
    assert main([*argv, "--scheduler", address]) == 0
    assert f"fitted on {N} logged rounds" in capsys.readouterr().out
    got = pickle.loads(out.read_bytes())
    want = LinUCB(beta=0.5, random_state=0).fit(X, actions, rewards)
    # Sums of 2000 rows in another order: 1e-9 is a million times their rounding.
    assert_allclose(got._ridge.precision, want._ridge.precision, rtol=1e-9)
    assert_allclose(got._ridge.moment, want._ridge.moment, rtol=1e-9)


def test_evaluate_parquet_on_a_scheduler(dask_client, parquet_logs, capsys):
    folder = parquet_logs[0]
    address = dask_client.scheduler.address
    argv = ["evaluate", str(folder), "--policy", "LinUCB", "--scheduler", address]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "evaluated on" in out
    for label in ("IPS", "SNIPS", "DR", "replay"):
        line = next(line for line in out.splitlines() if line.startswith(label))
        # The values are checked against the in-memory call on the same rows in
        # test_evaluate_parquet_equals_in_memory; here, the command on a user's
        # scheduler prints each estimate (a [0, 1] bound would hold for SNIPS and
        # replay whatever they computed, and need not for IPS and DR).
        assert np.isfinite(float(line.split()[1]))


def test_parquet_errors_are_one_line(parquet_logs, tmp_path, capsys):
    folder = parquet_logs[0]
    with pytest.raises(SystemExit) as exc:
        main(["fit", str(tmp_path / "absent"), "--out", str(tmp_path / "p.pkl")])
    assert exc.value.code == 2
    assert "no Parquet directory" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["evaluate", str(folder), "--split", "time"])
    assert "Parquet logs shuffle" in capsys.readouterr().err


# ------------------------------------------------ the reader: pyarrow, stored dtypes
@pytest.fixture(scope="module")
def float32_logs(tmp_path_factory):
    """Logs as a writer of float32 features stores them: four files of two row
    groups each, int64 actions, float32 rewards and propensities."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(4)
    X = rng.normal(size=(N, D)).astype(np.float32)
    actions = rng.integers(K, size=N)
    rewards = (X[:, 0] * (actions == 1) + rng.normal(size=N) > 0).astype(np.float32)
    propensities = rng.uniform(0.2, 0.5, size=N).astype(np.float32)
    folder = tmp_path_factory.mktemp("logs32")
    for part in range(4):
        rows = slice(part * N // 4, (part + 1) * N // 4)
        columns = {f"X{j}": X[rows, j] for j in range(D)}
        columns |= {
            "actions": actions[rows],
            "rewards": rewards[rows],
            "propensities": propensities[rows],
        }
        path = folder / f"part-{part}.parquet"
        pq.write_table(pa.table(columns), path, row_group_size=N // 8)
    return folder, X, actions, rewards, propensities


def test_scan_packs_row_groups_of_a_file(float32_logs, monkeypatch):
    from skbandit import _parquet_logs

    folder, X = float32_logs[:2]
    logs = _parquet_logs.scan(folder)
    assert [(len(groups), rows) for _, groups, rows in logs.parts] == [(2, N // 4)] * 4
    monkeypatch.setattr(_parquet_logs, "PARTITION_ROWS", N // 8)  # a group each
    logs = _parquet_logs.scan(folder)
    assert [rows for *_, rows in logs.parts] == [N // 8] * 8
    contexts = logs.contexts(["X0", "X1", "X2"])
    assert contexts.dtype == np.float32  # as stored: no float64 copy on the workers
    assert contexts.chunks == ((N // 8,) * 8, (D,))
    assert np.array_equal(contexts.compute(scheduler="sync"), X)


def test_fit_parquet_float32_equals_in_memory(
    dask_client, float32_logs, tmp_path, monkeypatch
):
    from skbandit import _parquet_logs

    folder, X, actions, rewards, _ = float32_logs
    monkeypatch.setattr(_parquet_logs, "PARTITION_ROWS", N // 8)  # 8 partitions
    out = tmp_path / "policy.pkl"
    argv = ["fit", str(folder), "--out", str(out)]
    assert main([*argv, "--scheduler", dask_client.scheduler.address]) == 0
    got = pickle.loads(out.read_bytes())
    # In memory the policy converts the same float32 values to float64 as it
    # validates them, as each partition does on its worker.
    want = LinUCB(random_state=0).fit(X, actions, rewards)
    # Sums of 2000 rows in another order: 1e-9 is a million times their rounding.
    assert_allclose(got._ridge.precision, want._ridge.precision, rtol=1e-9)
    assert_allclose(got._ridge.moment, want._ridge.moment, rtol=1e-9)
    assert_allclose(got.action_counts_, want.action_counts_, rtol=0)


def test_evaluate_parquet_equals_in_memory(dask_client, float32_logs, monkeypatch):
    import skbandit._cli_parquet as cli
    from skbandit._cli_logs import estimates
    from skbandit._parquet_logs import Split

    folder, X, actions, rewards, propensities = float32_logs
    reported = {}
    monkeypatch.setattr(cli, "report_estimates", lambda v, *_: reported.update(v) or 0)
    argv = ["evaluate", str(folder), "--seed", "5", "--test-fraction", "0.3"]
    assert main([*argv, "--scheduler", dask_client.scheduler.address]) == 0
    # The same split in memory: file k's rows drawn from default_rng([5, k]).
    test = np.concatenate([Split(5, 0.3, "test").rows(N // 4, k) for k in range(4)])
    assert 0.2 < test.mean() < 0.4  # a split, not all rows on one side
    fit = ~test
    policy = LinUCB(random_state=5, n_actions=K).fit(X[fit], actions[fit], rewards[fit])
    model = LinUCB(n_actions=K, beta=0.0).fit(X[fit], actions[fit], rewards[fit])
    want = estimates(
        policy.predict_action_proba(X[test]),
        actions[test],
        rewards[test],
        propensities[test],
        model.predict_scores(X[test]),
        0.05,
    )
    assert list(reported) == list(want)
    for label, value in want.items():
        # Sums over ~600 rows in another order, through a ridge solve: 1e-9
        # relative is far above their rounding, far below any real difference.
        assert_allclose(reported[label].value, value.value, rtol=1e-9)
        assert_allclose(reported[label].std_error, value.std_error, rtol=1e-9)


def test_parquet_text_context_column_is_one_line(tmp_path, capsys):
    frame = pd.DataFrame({"X0": [0.5, 1.0], "X1": ["a", "b"], "actions": [0, 1]})
    frame["rewards"] = 1.0
    frame.to_parquet(tmp_path / "part-0.parquet")
    with pytest.raises(SystemExit) as exc:
        # refused before any cluster is reached (the address is never used)
        main(["fit", str(tmp_path), "--scheduler", "tcp://127.0.0.1:1"])
    assert exc.value.code == 2
    assert "context column 'X1' is not numeric" in capsys.readouterr().err


# ------------------------------------------------------------ the embedded cluster
def _profiling():
    import dask

    return dask.config.get("distributed.worker.profile.enabled")


def test_embedded_cluster_is_quiet_and_a_users_cluster_untouched(dask_client):
    import argparse
    import contextlib
    import socket
    import warnings

    import dask

    from skbandit._cli_parquet import EMBEDDED_TIMERS, _dask_client

    tick = "distributed.admin.tick.interval"
    default_tick = dask.config.get(tick)
    assert default_tick != EMBEDDED_TIMERS[tick]  # else the test proves nothing
    with contextlib.ExitStack() as stack:
        # 8787, the dashboard's default port, taken (by us, unless it is already)
        with contextlib.suppress(OSError):
            sock = stack.enter_context(socket.socket())
            sock.bind(("127.0.0.1", 8787))
            sock.listen()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            args = argparse.Namespace(scheduler=None, workers=1)
            with _dask_client(args) as client:
                assert dask.config.get(tick) == EMBEDDED_TIMERS[tick]
                assert set(client.run(_profiling).values()) == {False}
                http = client.cluster.scheduler.http_server
                assert http.address == "127.0.0.1" and http.port != 8787
        assert not [w for w in caught if "already in use" in str(w.message)]
    assert dask.config.get(tick) == default_tick  # restored on exit
    args = argparse.Namespace(scheduler=dask_client.scheduler.address, workers=1)
    with _dask_client(args) as client:  # a user's cluster keeps its settings
        assert dask.config.get(tick) == default_tick
        assert set(client.run(_profiling).values()) == {True}


def test_contexts_of_mixed_types_are_float64(parquet_logs):
    from skbandit._parquet_logs import scan

    folder, X, actions, _ = parquet_logs
    # int64 beside float64 columns: float64 holds both exactly (float32 would not)
    contexts = scan(folder).contexts(["X0", "actions"])
    assert contexts.dtype == np.float64
    want = np.column_stack([X[:, 0], actions])
    assert np.array_equal(contexts.compute(scheduler="sync"), want)
