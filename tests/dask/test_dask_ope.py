"""Off-policy estimates over Dask collections equal the in-memory ones.

Tolerance 1e-9 relative throughout: the Dask path adds per-partition sums where
numpy adds pairwise over all rows, and merges centred co-moments (Chan et al.)
where numpy sums squared influence terms; both are float64 sums of O(1e4) terms
whose rounding differs by ~1e-15 relative (measured: <= 3e-14 on DM's near-zero
value), far inside 1e-9.
"""
# SPDX-License-Identifier: BSD-3-Clause

import os
import subprocess
import sys
import time
import warnings

import numpy as np
import pandas as pd
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")

from skbandit.evaluation import (  # noqa: E402
    dm_value,
    dr_value,
    estimate_value,
    ips_value,
    replay_value,
    sndr_value,
    snips_value,
    switch_dr_value,
)

RTOL = 1e-9
N, K = 5003, 4


@pytest.fixture(scope="module")
def logs():
    rng = np.random.default_rng(0)
    proba = rng.dirichlet(np.ones(K), size=N)
    proba[:50] = np.eye(K)[rng.integers(K, size=50)]  # some zero pi(a_i | x_i)
    actions = rng.integers(K, size=N)
    rewards = rng.normal(size=N) + actions
    propensities = rng.uniform(0.1, 1.0, size=N)
    expected = rng.normal(size=(N, K)) + np.arange(K)
    return proba, actions, rewards, propensities, expected


def _dask(arr, rows):
    return da.from_array(arr, chunks=(rows, *arr.shape[1:]))


METHODS = {
    "ips": {},
    "snips": {},
    "dm": {"expected_rewards": True},
    "dr": {"expected_rewards": True, "clip": 3.0},
    "sndr": {"expected_rewards": True},
    "switch-dr": {"expected_rewards": True, "tau": 2.0},
    "replay": {},
}


@pytest.mark.parametrize("method", list(METHODS))
def test_estimate_value_on_dask_equals_numpy(dask_client, logs, method):
    proba, actions, rewards, propensities, expected = logs
    kwargs = dict(METHODS[method])
    dask_kwargs = dict(kwargs)
    if kwargs.pop("expected_rewards", False):
        kwargs["expected_rewards"] = expected
        dask_kwargs["expected_rewards"] = _dask(expected, 900)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # replay's non-uniform logging warning
        want = estimate_value(proba, actions, rewards, propensities, method=method,
                              **kwargs)  # fmt: skip
        # Partitions of different sizes per argument, and one numpy argument.
        got = estimate_value(
            _dask(proba, 1000),
            _dask(actions, 1500),
            _dask(rewards, 700),
            propensities,
            method=method,
            **dask_kwargs,
        )
    assert got.n_samples == want.n_samples and got.method == want.method
    for field in ("value", "std_error", "ci_low", "ci_high"):
        assert getattr(got, field) == pytest.approx(getattr(want, field), rel=RTOL)


def test_value_functions_on_dataframe_columns(dask_client, logs):
    proba, actions, rewards, propensities, expected = logs
    frame = pd.DataFrame(
        {"action": actions, "reward": rewards, "propensity": propensities}
        | {f"p{k}": proba[:, k] for k in range(K)}
        | {f"q{k}": expected[:, k] for k in range(K)}
    )
    ddf = dd.from_pandas(frame, npartitions=5)
    p = ddf[[f"p{k}" for k in range(K)]]
    q = ddf[[f"q{k}" for k in range(K)]]
    cols = (ddf["action"], ddf["reward"], ddf["propensity"])
    logged = (actions, rewards, propensities)
    pairs = [
        (ips_value(p, *cols), ips_value(proba, *logged)),
        (ips_value(p, *cols, clip=2.0), ips_value(proba, *logged, clip=2.0)),
        (snips_value(p, *cols), snips_value(proba, *logged)),
        (dm_value(p, expected_rewards=q), dm_value(proba, expected_rewards=expected)),
        (
            dr_value(p, *cols, expected_rewards=q),
            dr_value(proba, *logged, expected_rewards=expected),
        ),
        (
            sndr_value(p, *cols, expected_rewards=q),
            sndr_value(proba, *logged, expected_rewards=expected),
        ),
        (
            switch_dr_value(p, *cols, expected_rewards=q, tau=1.5),
            switch_dr_value(proba, *logged, expected_rewards=expected, tau=1.5),
        ),
        (replay_value(p, cols[0], cols[1]), replay_value(proba, actions, rewards)),
    ]
    for got, want in pairs:
        assert isinstance(got, float)
        assert got == pytest.approx(want, rel=RTOL)


def test_replay_warns_on_dask_propensities(dask_client, logs):
    proba, actions, rewards, propensities, _ = logs
    with pytest.warns(UserWarning, match="propensities vary"):
        replay_value(_dask(proba, 1000), actions, rewards, _dask(propensities, 1000))


def test_bad_partition_raises_the_in_memory_error(dask_client, logs):
    proba, actions, rewards, propensities, _ = logs
    bad = propensities.copy()
    bad[3100] = 0.0  # in the fourth partition of 1000 rows
    with pytest.raises(ValueError, match=r"In partition 3 .*propensit"):
        ips_value(_dask(proba, 1000), actions, rewards, _dask(bad, 1000))
    with pytest.raises(ValueError, match=r"In partition \d+ .*sums to"):
        ips_value(_dask(proba * 2, 1000), actions, rewards, propensities)


def test_bootstrap_on_dask_is_a_clear_error(dask_client, logs):
    proba, actions, rewards, propensities, _ = logs
    with pytest.raises(ValueError, match="ci='analytic'"):
        estimate_value(_dask(proba, 1000), actions, rewards, propensities,
                       ci="bootstrap")  # fmt: skip


def test_empty_partitions_add_nothing(dask_client, logs):
    proba, actions, rewards, propensities, _ = logs
    frame = pd.DataFrame(
        {"a": actions, "r": rewards, "p": propensities, "row": np.arange(N)}
    )
    frame = frame.join(pd.DataFrame(proba, columns=[f"p{k}" for k in range(K)]))
    ddf = dd.from_pandas(frame, npartitions=4)
    ddf = ddf[ddf["row"] >= 2600]  # the first two partitions become empty
    keep = slice(2600, None)
    got = snips_value(ddf[[f"p{k}" for k in range(K)]], ddf["a"], ddf["r"], ddf["p"])
    want = snips_value(proba[keep], actions[keep], rewards[keep], propensities[keep])
    assert got == pytest.approx(want, rel=RTOL)


def test_import_skbandit_does_not_import_dask():
    code = (
        "import sys, skbandit, skbandit.evaluation, skbandit.policies; "
        "sys.exit('dask' in sys.modules)"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), env.get("PYTHONPATH", "")])
    assert subprocess.run([sys.executable, "-c", code], env=env).returncode == 0


def _slow_copy(block):
    time.sleep(0.05)
    return block


def test_killed_worker_leaves_a_correct_result(
    dask_client_to_kill, computed_while_a_worker_dies, logs
):
    """A worker killed mid-computation: Dask reruns its partitions elsewhere, and
    the estimate is the in-memory one, never a partial sum."""
    proba, actions, rewards, propensities, _ = logs
    want = estimate_value(proba, actions, rewards, propensities, method="ips")
    slow = _dask(proba, 100).map_blocks(_slow_copy, dtype=float)  # 51 x 0.05 s
    got, victim = computed_while_a_worker_dies(
        lambda: estimate_value(slow, actions, rewards, propensities, method="ips"),
        polls=200,
    )
    assert got.value == pytest.approx(want.value, rel=RTOL)
    assert got.std_error == pytest.approx(want.std_error, rel=RTOL)
    assert victim not in dask_client_to_kill.run(os.getpid).values()
