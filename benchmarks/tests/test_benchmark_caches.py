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

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir))
from common.scripts import load_script  # noqa: E402

bes = load_script("ensemble_sampling/synthetic_regret.py")


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


def test_real_data_full_protocol_cost_scales_each_part():
    """The core-hour estimate of the real-data study, by hand: a network's update
    grows with the gradient steps per round, GLM-ES's update as T^2, the rest as T;
    times the paper's grid and 8 seeds."""
    brd = load_script("neural_thompson_sampling/real_data.py")

    run = dict(n_rounds=2000, n_steps=25, train_every=20, wall_s=10.0, update_s=4.0)
    results = {
        ("magic", "NeuralTS"): {0.1: [run], 0.01: [dict(run, wall_s=20.0)]},
        ("magic", "GLMES"): {None: [run]},
        ("mushroom", "LinUCB"): {1.0: [run]},
    }
    cost = brd.full_protocol_cost(results, {"magic": 19020, "mushroom": 5644})
    neural = np.mean([6 * 5 + 4 * 80, 16 * 5 + 4 * 80]) * 5 * 8  # 5 values of nu
    glm = (6 * 5 + 4 * 25) * 8
    linear = 10 * 5644 / 2000 * 3 * 8  # 3 values of beta
    assert_allclose(cost["magic"], (neural + glm) / 3600)
    assert_allclose(cost["mushroom"], linear / 3600)
