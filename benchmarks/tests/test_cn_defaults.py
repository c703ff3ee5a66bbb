"""The CN defaults benchmark (``benchmarks/defaults/cn_defaults.py``): random's
regret is what every slate makes on average, a cached run is today's only while its
parameters are, and a cached record is the run it says it is."""
# SPDX-License-Identifier: BSD-3-Clause

import itertools
import json
import os
import sys

import numpy as np
from numpy.testing import assert_allclose

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir))
from common.scripts import load_script  # noqa: E402

cn = load_script("defaults/cn_defaults.py")


def test_random_slate_regret_is_the_mean_over_every_slate():
    # By enumeration: each of the C(20, 4) = 4,845 slates, valued by the problem
    # itself, against the script's top-K value minus K times the mean score.
    T = 3
    env = cn.PROBLEMS["cosine"]().reset(0)
    slates = np.array(list(itertools.combinations(range(env.n_actions), 4)))
    expected = []
    for _ in range(T):
        env.contexts(1)
        values = np.array([env.slate_value(s[None, :])[0] for s in slates])
        expected.append(env.optimal_value()[0] - values.mean())
    # sums of 4,845 terms of order 1: rounding far below 1e-9
    assert_allclose(
        cn.random_slate_regret("cosine", T, 0), np.cumsum(expected), rtol=1e-9
    )


def test_a_run_is_cached_and_read_back(tmp_path):
    record = cn.run_or_load(tmp_path, "linear", "CombLinUCB", "defaults", 20, 0)
    path = cn.cache_path(tmp_path, "linear", "CombLinUCB", "defaults", 20, 0)
    assert json.loads(path.read_text()) == record
    assert record["params"] == cn.full_params("CombLinUCB", "defaults")
    assert len(record["curve"]) == 20 // cn.CURVE_STEP and record["error"] == ""
    # A rerun reads the file: an edited regret comes back as edited.
    record["regret"] = -1.0
    path.write_text(json.dumps(record))
    assert cn.run_or_load(tmp_path, "linear", "CombLinUCB", "defaults", 20, 0) == record


def test_a_record_of_other_parameters_is_stale(tmp_path, monkeypatch):
    # A default changed since the run (here the record says beta=5): the table
    # must not show it as today's defaults, and the run is made again.
    path = cn.cache_path(tmp_path, "linear", "CombLinUCB", "defaults", 20, 0)
    params = {**cn.full_params("CombLinUCB", "defaults"), "beta": 5.0}
    cn.runs.write_record(path, {"params": params, "regret": -1.0})
    assert cn.run_or_load(tmp_path, "linear", "CombLinUCB", "defaults", 20, 0,
                          table_only=True) is None  # fmt: skip
    fresh = cn.run_or_load(tmp_path, "linear", "CombLinUCB", "defaults", 20, 0)
    assert fresh["regret"] >= 0 and fresh["params"]["beta"] == 1.0


def test_settings_are_one_parameter_set_away():
    paper = cn.setting_params("CNUCB", "paper")
    assert paper == dict(cn.policies.CNUCB.PAPER_SCHEDULE)
    # the authors' runs: what the paper's benchmark builds in its code mode
    code = cn.policies.CNTS(random_state=0, **cn.setting_params("CNTS", "paper-code"))
    regret = cn.load_script("combinatorial_neural_bandits/regret.py")
    args = cn.Namespace(mode="code", covariance="full")
    reference = regret.make_policy("CN-TS", args, 4).set_params(random_state=0)
    assert code.get_params() == reference.get_params()
    assert code.get_params()["standardize"] is False  # their contexts, as given
    assert cn.setting_params("CNUCB", "learning_rate=1.0,hidden_layer_sizes=(20,)") == {
        "learning_rate": 1.0,
        "hidden_layer_sizes": (20,),
    }
