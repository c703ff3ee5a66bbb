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
        value = float(line.split()[1])
        assert 0.0 <= value <= 1.0  # rewards are 0 or 1: so is each estimate here


def test_parquet_errors_are_one_line(parquet_logs, tmp_path, capsys):
    folder = parquet_logs[0]
    with pytest.raises(SystemExit) as exc:
        main(["fit", str(tmp_path / "absent"), "--out", str(tmp_path / "p.pkl")])
    assert exc.value.code == 2
    assert "no Parquet directory" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["evaluate", str(folder), "--split", "time"])
    assert "Parquet logs shuffle" in capsys.readouterr().err
