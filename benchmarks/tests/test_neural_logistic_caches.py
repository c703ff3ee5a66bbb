"""The tracked run caches of the neural logistic benchmarks: a record is written once
and read back unchanged, a run cut short leaves no file, and the synthetic study's
tables print from the committed cache alone."""
# SPDX-License-Identifier: BSD-3-Clause

import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir))
from common.scripts import load_script  # noqa: E402

_experiments = load_script("neural_logistic_bandits/_experiments.py")
CACHE = _experiments.CACHE
paired_verdict = _experiments.paired_verdict
params_digest = _experiments.params_digest
run_record = _experiments.run_record
thin_curve = _experiments.thin_curve

from skbandit.policies import NeuralLogUCB  # noqa: E402


def test_thin_curve_keeps_every_kth_round_and_the_last():
    cum = np.cumsum(np.arange(1.0, 46.0))  # 45 rounds
    thin = thin_curve(cum, 20)
    assert thin == [cum[19], cum[39], cum[44]]


def test_digest_ignores_the_seed_and_sees_every_other_parameter():
    a = params_digest(NeuralLogUCB(nu=0.1, random_state=0))
    assert a == params_digest(NeuralLogUCB(nu=0.1, random_state=5))
    assert a != params_digest(NeuralLogUCB(nu=0.2, random_state=0))
    assert a != params_digest(NeuralLogUCB(nu=0.1, variant=1, random_state=0))


def test_paired_verdict_reads_the_paired_differences_only():
    a = {0: 10.0, 1: 20.0, 2: 30.0, 3: 99.0}
    # b - a is 5 +- 0 on the shared seeds, though the unpaired spreads overlap.
    assert paired_verdict(a, {0: 15.0, 1: 25.0, 2: 35.0}) == (-5.0, 0.0, 3, "holds")
    assert paired_verdict({0: 15.0, 1: 25.0, 2: 35.0}, a)[3] == "reversed"
    # Differences -1 and +3: mean 1, standard error 2, within 2 standard errors.
    m, se, n, verdict = paired_verdict({0: 1.0, 1: 5.0}, {0: 2.0, 1: 2.0})
    assert (m, se, n, verdict) == (1.0, 2.0, 2, "tie")
    assert paired_verdict(a, {3: 1.0})[2:] == (1, "one seed")
    assert paired_verdict(a, {7: 1.0})[2:] == (0, "no seed")


def test_run_record_computes_once_and_a_failed_run_leaves_no_file(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"final_regret": 1.5}

    path = tmp_path / "p" / "run.json"
    first = run_record(path, compute, policy="x", seed=0)
    again = run_record(path, compute, policy="x", seed=0)
    assert calls == [1] and first == again == json.loads(path.read_text())
    assert first["final_regret"] == 1.5 and first["seed"] == 0

    def broken():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_record(tmp_path / "cut.json", broken)
    assert not list(tmp_path.glob("cut*"))


@pytest.fixture
def one_torch_thread():
    """Replay a cached neural run on one torch thread, as it was recorded (here, not in
    a conftest.py: two conftest.py outside packages collide when ``tests/`` and
    ``benchmarks/tests/`` are collected in one session)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.skipif(
    not (CACHE / "synthetic").is_dir(), reason="no tracked synthetic runs"
)
def test_synthetic_tables_print_from_the_tracked_cache(capsys, one_torch_thread):
    # one_torch_thread restores the count that the benchmark's main() sets to 1.
    bench = load_script("neural_logistic_bandits/synthetic_regret.py")

    bench.main(["--table-only", "--problems", "h2"])
    out = capsys.readouterr().out
    assert "## h2" in out and "| NeuralLog-UCB-2 |" in out


def test_every_cached_synthetic_run_is_still_the_benchmarks_policy():
    """The NeuralLog and NCBF-UCB defaults changed (0.3); the benchmark pins what
    its runs used, so every cached run keeps its digest and the paper page's
    figures are read from the same runs. A run whose digest no longer matches
    would be silently left out of the tables."""
    synthetic = load_script("neural_logistic_bandits/synthetic_regret.py")
    stale = []
    for path in sorted(synthetic.ROOT.rglob("*.json")):
        rec = json.loads(path.read_text())
        policy = synthetic.make_policy(rec["policy"], rec["nu"], 0)
        if rec["digest"] != params_digest(policy):
            stale.append(path.name)
    assert stale == []
