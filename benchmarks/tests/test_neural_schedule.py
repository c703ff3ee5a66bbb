"""The neural schedule benchmark (``benchmarks/defaults/neural_schedule.py``): a cached
run holds the parameters it ran with, and one of other parameters runs again."""
# SPDX-License-Identifier: BSD-3-Clause

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir))
from common.scripts import load_script  # noqa: E402

pytest.importorskip("torch")
ns = load_script("defaults/neural_schedule.py")


def test_schedules_are_one_parameter_set_away():
    assert ns.schedule_params("NeuralUCB", "defaults") == {}
    paper = ns.schedule_params("NeuralUCB", "paper")
    assert paper == dict(ns.policies.NeuralUCB.PAPER_SCHEDULE)
    assert ns.schedule_params("NeuralUCB", "train_every=5,n_steps=100") == {
        "train_every": 5,
        "n_steps": 100,
    }


def test_a_record_of_other_parameters_is_run_again(tmp_path):
    envs = {"wine": ns.make_env("wine")}
    path = ns.cache_path(tmp_path, "wine", "NeuralUCB", "defaults", 5, 0)
    record = ns.run_and_save(path, "NeuralUCB", "defaults", "wine", envs, 5, 0)
    assert json.loads(path.read_text()) == record
    params = ns.full_params("NeuralUCB", "defaults")
    assert record["params"] == params and params["train_every"] == 10
    assert ns.current_record(path, params) == record
    # a record of another default (say a former learning rate) is stale
    stale = {**record, "params": {**params, "learning_rate": 0.5}}
    path.write_text(json.dumps(stale))
    assert ns.current_record(path, params) is None
