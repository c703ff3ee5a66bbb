"""Same seeds, same regret: ``compare`` across processes, ``n_jobs`` and threads.

Two causes made identical neural benchmark runs differ, and each has a test here:

- a policy inside a pipeline kept ``random_state=None`` (``compare`` seeded only a
  top-level ``random_state``), so every run drew its network and tie-breaks from
  fresh OS entropy;
- float32 training sums in an order set by the torch thread count, which differs
  between the calling process and joblib's workers; ``compare`` now pins every
  run to ``n_threads`` threads.
"""
# SPDX-License-Identifier: BSD-3-Clause

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from skbandit.environments import LinearBandit, SyntheticBandit
from skbandit.evaluation import compare
from skbandit.pipeline import make_bandit_pipeline
from skbandit.policies import LinTS
from skbandit.preprocessing import MirrorNormalizer

N_ROUNDS, N_RUNS = 40, 2
# The step 0.01 is ten times the default: large enough for three steps to move the
# networks (and the runs' actions), small enough for the standardised rows, whose
# squared norm is about the number of features (the mirrored rows of
# MirrorNormalizer have norm 1 before the policy standardises them; 0.05, a step
# for those, makes the networks diverge).
_TINY = dict(hidden_layer_sizes=(8,), n_steps=3, learning_rate=0.01)


def run_neural_compare(n_jobs=1):
    """Regret and actions of two tiny neural policies, as one array per field."""
    from skbandit.policies import NeuralTS, NeuralUCB

    policies = {
        # The policy behind a preprocessing step: its random_state is nested.
        "NeuralUCB": make_bandit_pipeline(MirrorNormalizer(), NeuralUCB(**_TINY)),
        "NeuralTS": NeuralTS(covariance="full", nu=0.5, **_TINY),
    }
    env = SyntheticBandit("cosine", n_actions=4, n_features=6, noise=0.1)
    res = compare(policies, env, N_ROUNDS, n_runs=N_RUNS, n_jobs=n_jobs, random_state=0)
    return {
        "regret": np.stack([r.regret for r in res.results]),
        "actions": np.stack([r.actions for r in res.results]),
    }


# Run by the fresh processes of test_fresh_processes_give_identical_runs.
_CHILD = """
import sys
import numpy as np
import torch
torch.set_num_threads(int(sys.argv[1]))
from test_reproducibility import run_neural_compare
np.savez(sys.argv[2], **run_neural_compare())
"""


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="module")
def inline_runs(torch):
    return run_neural_compare(n_jobs=1)


def test_pipeline_policy_is_seeded_per_run():
    policy = make_bandit_pipeline(MirrorNormalizer(), LinTS(fit_intercept=False))
    env = LinearBandit(n_actions=3, n_features=4)
    runs = [
        compare({"ts": policy}, env, 30, n_runs=3, random_state=0) for _ in range(2)
    ]
    for res in runs:
        seeds = [r.policy.get_params()["lints__random_state"] for r in res.results]
        assert seeds == res.policy_seeds.tolist()
    assert_array_equal(
        np.stack([r.regret for r in runs[0].results]),
        np.stack([r.regret for r in runs[1].results]),
    )
    # The policy given is left as it was.
    assert policy.get_params()["lints__random_state"] is None


class _ThreadCounter(LinTS):
    """LinTS that records the torch threads it learnt with."""

    def partial_fit(self, X, actions, rewards=None, **kwargs):
        self.torch_threads_ = sys.modules["torch"].get_num_threads()
        return super().partial_fit(X, actions, rewards, **kwargs)


@pytest.mark.parametrize("n_threads", [1, 2, None])
def test_runs_use_n_threads_and_restore(torch, n_threads):
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        res = compare(
            {"ts": _ThreadCounter()},
            LinearBandit(n_actions=3, n_features=4),
            5,
            n_runs=2,
            n_threads=n_threads,
            random_state=0,
        )
        expected = 3 if n_threads is None else n_threads
        assert {r.policy.torch_threads_ for r in res.results} == {expected}
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


def test_n_jobs_gives_identical_runs(torch, inline_runs):
    from joblib import parallel_config

    before = torch.get_num_threads()
    # loky's workers start with cpu_count // n_jobs threads, this process has its own.
    with parallel_config(backend="loky"):
        got = run_neural_compare(n_jobs=2)
    for key, expected in inline_runs.items():
        assert_array_equal(got[key], expected, err_msg=key)
    # The inline runs set n_threads and gave the caller's count back.
    assert torch.get_num_threads() == before


def test_fresh_processes_give_identical_runs(inline_runs, tmp_path, fresh_process_env):
    # Different hash seeds and caller thread counts in each process.
    for threads, hash_seed in [(1, "0"), (2, "1")]:
        out = tmp_path / f"runs_{threads}.npz"
        env = {
            **fresh_process_env(Path(__file__).resolve().parent),
            "PYTHONHASHSEED": hash_seed,
        }
        subprocess.run(
            [sys.executable, "-c", _CHILD, str(threads), str(out)],
            env=env,
            check=True,
            timeout=300,
        )
        with np.load(out) as got:
            for key, expected in inline_runs.items():
                assert_array_equal(got[key], expected, err_msg=f"{key}, {threads}")
