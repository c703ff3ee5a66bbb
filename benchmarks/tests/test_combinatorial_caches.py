"""The tracked result caches of the combinatorial benchmarks: a finished run is one
JSON file, a rerun reads it, and runs on one fixed problem (``--env-seed``) are kept
apart from runs that draw a problem per seed."""
# SPDX-License-Identifier: BSD-3-Clause

import json
import os
import sys

import numpy as np
from numpy.testing import assert_allclose

from skbandit.environments import TopKBandit

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir))
from common.scripts import load_script  # noqa: E402

bcl = load_script("combinatorial_neural_bandits/linear_baselines.py")
bcn = load_script("combinatorial_neural_bandits/regret.py")


def test_linear_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.setattr(bcl, "CACHE", tmp_path)
    assert bcl.run("random", "h1", 3, table_only=True) is None
    final, _ = bcl.run("random", "h1", 3)
    (path,) = tmp_path.glob("*.json")
    # The same run by hand: the exact expected regret of a uniformly random slate.
    env = TopKBandit("linear", n_actions=20, n_features=80, slate_size=4, noise=0.01)
    env.reset(3)
    regret = np.empty(2000)
    for t in range(2000):
        env.contexts(1)
        regret[t] = env.optimal_value()[0] - 4 * env.expected_rewards[0].mean()
    record = json.loads(path.read_text())
    assert_allclose(final, regret.sum())
    assert_allclose(record["curve"], np.cumsum(regret)[49::50], atol=1e-3)
    record["final_regret"] = -1.0  # a rerun, and the table, read the file
    path.write_text(json.dumps(record))
    assert bcl.run("random", "h1", 3)[0] == -1.0
    assert bcl.run("random", "h1", 3, table_only=True)[0] == -1.0


def test_neural_cache_keeps_fixed_problem_runs_apart(tmp_path, monkeypatch):
    monkeypatch.setattr(bcn, "RESULTS", tmp_path)
    argv = ["--covariance", "diag", "--policies", "CN-UCB"]
    plain = bcn.parse_args(argv)
    fixed = bcn.parse_args([*argv, "--env-seed", "1"])
    runs = {
        (args.env_seed, seed): bcn.run_one(args, "CN-UCB", "linear", 4, 5, 5, seed)
        for args in (plain, fixed)
        for seed in (0, 1)
    }
    assert len(list(tmp_path.glob("*.json"))) == 4
    assert len(list(tmp_path.glob("*-env1-*.json"))) == 2
    # seed 1 on the problem of seed 1 is the plain seed 1: same problem, same network
    assert runs[1, 1]["final_regret"] == runs[None, 1]["final_regret"]
    # seed 0 on the problem of seed 1 is another problem than the plain seed 0's
    assert runs[1, 0]["final_regret"] != runs[None, 0]["final_regret"]
    assert sorted(r["seed"] for r in bcn.load_cache(fixed)) == [0, 1]
    assert all(r["env_seed"] == 1 for r in bcn.load_cache(fixed))
    assert all(r["env_seed"] is None for r in bcn.load_cache(plain))
    # a rerun reads the file
    path = next(tmp_path.glob("*-env1-*-s0.json"))
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "final_regret": -1.0}))
    assert bcn.run_one(fixed, "CN-UCB", "linear", 4, 5, 5, 0)["final_regret"] == -1.0
