"""The tracked result cache of the ensemble-sampling benchmark: a finished run is one
JSON file that holds what the run measured, and a rerun reads it instead of running
again."""
# SPDX-License-Identifier: BSD-3-Clause

import json
import os
import sys

import numpy as np
from numpy.testing import assert_allclose

from skbandit.environments import SyntheticBandit
from skbandit.evaluation import simulate
from skbandit.policies import LinTS

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
import bench_ensemble_sampling as bes  # noqa: E402


def test_ensemble_sampling_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.setattr(bes, "CACHE", tmp_path)
    T, seed = 200, 3
    path = bes.run_one("main", "linear", "LinTS", T, seed)
    assert path.parent.parent.parent == tmp_path and path.suffix == ".json"
    record = json.loads(path.read_text())
    assert record["t"] == list(range(2, T + 1, 2)) and record["error"] == ""

    # The same run, by hand: the cached curve is its cumulative regret every T/100.
    env = SyntheticBandit(
        "linear", n_actions=50, n_features=20, noise=0.5, fixed_arms=True
    )
    policy = LinTS(alpha=0.25, nu=0.5, fit_intercept=False, random_state=seed)
    res = simulate(policy, env, T, random_state=seed, progress=False)
    ((curve, seconds, error),) = bes.load("main", "linear", "LinTS", T, [seed])
    assert error == "" and seconds > 0
    assert_allclose(curve, res.cumulative_regret[1::2], atol=1e-4)
    assert abs(curve[bes.at(T, T // 2)] - res.cumulative_regret[T // 2 - 1]) < 1e-4
    assert np.all(bes.marks(10_000) == np.arange(100, 10_001, 100))

    # A rerun reads the file: an edited record comes back unchanged.
    record["cumulative_regret"][-1] = -1.0
    path.write_text(json.dumps(record))
    assert bes.run_one("main", "linear", "LinTS", T, seed) == path
    assert bes.load("main", "linear", "LinTS", T, [seed])[0][0][-1] == -1.0
