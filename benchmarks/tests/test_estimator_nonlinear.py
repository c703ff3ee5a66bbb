"""The estimator policies' nonlinear benchmark: a finished run is one JSON file, and a
rerun (or ``--table-only``) reads it instead of running again."""
# SPDX-License-Identifier: BSD-3-Clause

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir))
from common.scripts import load_script  # noqa: E402

bench = load_script("defaults/estimator_nonlinear.py")


def test_a_run_is_cached_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "CACHE", tmp_path)
    record = bench.run_one("quadratic", "SquareCB", 0, 60)
    assert record["n_rounds"] == 60 and 0 <= record["mistakes"] <= 60
    path = bench.cache_path("quadratic", "SquareCB", 0, 60)
    assert path.parent.parent.parent == tmp_path
    # the same run, by hand: the same mistakes (the policy and the rows are seeded)
    X, labels, n_actions = bench.problem("quadratic", 60, 0)
    policy = bench.POLICIES["SquareCB"](0).set_params(n_actions=n_actions)
    assert bench.play(policy, X, labels)[0] == record["mistakes"]
    # a rerun reads the file; --table-only never runs
    assert bench.run_one("quadratic", "SquareCB", 0, 60, table_only=True) == record
    assert bench.run_one("quadratic", "SquareCB", 1, 60, table_only=True) is None
    name = bench.cache_path("q", "SquareCB(OnlineRidge) [former default]", 2, 9).name
    assert name == "SquareCB_OnlineRidge_former_default_seed2.json"
