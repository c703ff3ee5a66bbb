"""Every policy at its defaults on nonlinear problems: a finished run is one JSON file
with its per-round rewards, and a rerun (or ``--table-only``) reads it."""
# SPDX-License-Identifier: BSD-3-Clause

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir))
from common.scripts import load_script  # noqa: E402

bench = load_script("defaults/estimator_best.py")


def test_a_run_is_cached_with_its_rewards_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "CACHE", tmp_path)
    record = bench.run_one("quadratic", "SquareCB", 0, 60)
    assert record["n_rounds"] == 60 and record["error"] is None
    assert record["losses"].sum() == record["mistakes"]
    # the same run, by hand: the same rewards (the policy and the rows are seeded)
    X, labels, n_actions = bench.problem("quadratic", 60, 0)
    policy = bench.POLICIES["SquareCB"](0).set_params(n_actions=n_actions)
    rewards, _, error = bench.play(policy, X, labels)
    assert error is None
    np.testing.assert_array_equal(1.0 - rewards, record["losses"])
    # --table-only reads the file and never runs
    again = bench.run_one("quadratic", "SquareCB", 0, 60, table_only=True)
    np.testing.assert_array_equal(again["losses"], record["losses"])
    assert bench.run_one("quadratic", "SquareCB", 1, 60, table_only=True) is None


def test_every_plain_context_policy_runs_and_slates_do_not():
    assert {"SquareCB", "FALCON", "BootstrappedTS", "KernelUCB", "NeuralTS"} <= set(
        bench.DEFAULTS
    )
    assert not set(bench.SLATE) & set(bench.DEFAULTS)


def test_a_raising_policy_stops_and_counts_the_rest_as_mistakes():
    class Fails:
        calls = 0

        def select(self, X):
            self.calls += 1
            if self.calls == 3:
                raise ValueError("diverged")
            return np.array([0])

        def partial_fit(self, X, actions, rewards):
            return self

    rewards, _, error = bench.play(Fails(), np.zeros((5, 2)), np.zeros(5, dtype=int))
    np.testing.assert_array_equal(rewards, [1.0, 1.0, 0.0, 0.0, 0.0])
    assert error.startswith("round 2: diverged")
