"""Per-round counts of what waits, copies and allocates, from ``torch.profiler``.

Runs NeuralTS (digits as a bandit, the papers' network: m = 100, diagonal U) on
the papers' schedule (J = 100 full-batch steps every round) and on the flat-cost
defaults (50 mini-batches of 64 rows every 10 rounds), and CN-UCB (Experiment 1's
shapes: N = 20 arms of d = 80, slates of 4, m = 100, full Z, p = 8,100) for
``--warm`` online rounds, then profiles ``--rounds`` more (10: one training of the
defaults) with CPU and CUDA activities and prints, per round, the host synchronisations
(``cudaStreamSynchronize``, ``cudaDeviceSynchronize``, ``cudaEventSynchronize``,
``aten::_local_scalar_dense``), the copies (``cudaMemcpyAsync`` and the device's
``Memcpy`` records by direction and host memory kind: pageable or pinned), the
allocations (``cudaMalloc``/``cudaFree``, ``cudaHostAlloc``/``cudaFreeHost``) and
the launches (``cudaGraphLaunch``, ``cudaLaunchKernel``), and the trainings
whose J steps ran as one graph replay, were captured, or ran eagerly (the J-step
form: one replay per training expected, one ``cudaGraphLaunch``, where a
full-batch training replayed a graph per step). With ``--device cpu`` it
runs the same rounds with CPU activity only (a smoke test: the CUDA rows are zero).

Run (``benchmarks/gpu_session.sh issue32`` runs it on a lent GPU)::

    python3 benchmarks/speed/gpu_round_profile.py --device cuda [--rounds 5]
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

from skbandit.datasets import load_digits_bandit
from skbandit.networks import _jstep
from skbandit.policies import CNUCB, NeuralTS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common.machine import machine, print_machine  # noqa: E402

#: (row label, event names counted under it); a name that ends with "*" is a prefix.
ROWS = [
    (
        "syncs",
        (
            "cudaStreamSynchronize",
            "cudaDeviceSynchronize",
            "cudaEventSynchronize",
        ),
    ),
    ("value reads (aten::_local_scalar_dense)", ("aten::_local_scalar_dense",)),
    ("aten::nonzero", ("aten::nonzero",)),
    ("cudaMemcpyAsync / cudaMemcpy", ("cudaMemcpyAsync", "cudaMemcpy")),
    ("  host -> device, pageable", ("Memcpy HtoD (Pageable -> Device)",)),
    ("  host -> device, pinned", ("Memcpy HtoD (Pinned -> Device)",)),
    ("  device -> host, pageable", ("Memcpy DtoH (Device -> Pageable)",)),
    ("  device -> host, pinned", ("Memcpy DtoH (Device -> Pinned)",)),
    ("cudaMalloc / cudaFree", ("cudaMalloc", "cudaFree")),
    ("cudaHostAlloc / cudaFreeHost", ("cudaHostAlloc", "cudaFreeHost")),
    ("cudaGraphLaunch", ("cudaGraphLaunch",)),
    ("cudaLaunchKernel", ("cudaLaunchKernel",)),
    # trainings whose J steps ran as one function (skbandit.networks._jstep):
    # replayed as one graph, run eagerly and captured, or run eagerly
    ("J-step graph replays", ("J-step replayed",)),
    ("J-step captures", ("J-step captured",)),
    ("J-step eager runs", ("J-step eager",)),
]


def _neural_ts(device, schedule=None):
    X, y = load_digits_bandit(return_X_y=True)
    X = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    policy = NeuralTS(
        n_actions=10,
        hidden_layer_sizes=(100,),
        learning_rate=1e-2,
        alpha=0.01,
        nu=0.01,
        covariance="diag",
        standardize=False,  # unit-norm rows, as the papers' benchmarks pin it
        device=device,
        random_state=0,
        **({"n_steps": 100} if schedule is None else schedule),
    )
    return policy, X, lambda t, a: (np.asarray(a) == y[t]).astype(np.float64)


def _neural_ts_papers(device):
    return _neural_ts(device, {**NeuralTS.PAPER_SCHEDULE, "n_steps": 100})


def _cn_ucb(device):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 20, 80)).astype(np.float32) / np.sqrt(80)
    theta = rng.normal(size=80) / np.sqrt(80)

    def scores(t, slate):
        return X[t, np.asarray(slate).ravel()] @ theta

    policy = CNUCB(
        slate_size=4,
        hidden_layer_sizes=(100,),
        covariance="full",
        n_steps=100,
        train_every=10,
        device=device,
        random_state=0,
    )
    return policy, X, lambda t, s: scores(t, s)[None]


def _round(policy, X, reward, t):
    actions = policy.select(X[t : t + 1])
    policy.partial_fit(X[t : t + 1], actions, np.atleast_1d(reward(t, actions)))


def _count(policy, X, reward, n_warm, n_rounds, device):
    for t in range(n_warm):
        _round(policy, X, reward, t)
    activities = [ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
        torch.cuda.synchronize()
    before = dict(_jstep.COUNTS)
    with profile(activities=activities) as prof:
        for t in range(n_warm, n_warm + n_rounds):
            _round(policy, X, reward, t)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    counts = Counter()
    for event in prof.key_averages():
        counts[event.key] += event.count
    for key, value in _jstep.COUNTS.items():  # the profiled rounds' trainings
        counts[f"J-step {key}"] += value - before.get(key, 0)
    return {label: sum(counts[n] for n in names) / n_rounds for label, names in ROWS}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--warm", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print_machine(torch=torch.__version__)
    print("device  :", machine(args.device))
    print(f"setting : {args.rounds} profiled rounds after {args.warm}, per round")
    cases = [
        ("NeuralTS papers'", _neural_ts_papers),
        ("NeuralTS defaults", _neural_ts),
        ("CN-UCB full Z", _cn_ucb),
    ]
    table = {}
    for name, make in cases:
        policy, X, reward = make(args.device)
        table[name] = _count(policy, X, reward, args.warm, args.rounds, args.device)
    header = f"{'per round':<42}" + "".join(f"{name:>18}" for name, _ in cases)
    print()
    print(header)
    print("-" * len(header))
    for label, _ in ROWS:
        values = "".join(f"{table[name][label]:>18.1f}" for name, _ in cases)
        print(f"{label:<42}{values}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
