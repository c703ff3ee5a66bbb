"""Host synchronisations of a neural round, counted on the CPU (no GPU needed).

On a GPU, a round's time is lost where the host waits for the device: reading a
tensor's value into Python (``.item()``, ``float(t)``, ``bool(t)``, ``.tolist()``,
``.numpy()``), ``nonzero`` (its output size), and copies to the host (``.cpu()``,
``.to("cpu")``); copies from host memory (``torch.as_tensor`` of a numpy array,
``torch.tensor``) are not syncs but pageable transfers. None of these needs a GPU to
be seen: this script runs a few rounds of NeuralTS, NeuralUCB (one thread) and
CN-UCB with a full ``Z`` on the CPU, counts every such call through a
``TorchFunctionMode`` (each Python-level tensor call) and the profiler's
``aten::_local_scalar_dense`` and ``aten::nonzero`` (the ops every value read and
nonzero reach), and splits the counts into per training step and per round by
timing two step counts: ``per step = (count(2J) - count(J)) / J``.

The shapes are small (the counts do not depend on them): d = 8 mirrored to 16,
K = 4, m = 32; CN-UCB with N = 6 arms of d = 8, slates of 2, full ``Z`` (p = 288).

Run::

    python benchmarks/speed/host_syncs.py [--rounds 5] [--steps 10]
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import torch
from torch.overrides import TorchFunctionMode
from torch.profiler import ProfilerActivity, profile

from skbandit.policies import CNUCB, NeuralTS, NeuralUCB
from skbandit.preprocessing import MirrorNormalizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common.machine import print_machine  # noqa: E402

#: Python-level calls that read a device value on the host (a sync on a GPU).
READS = {"item", "__bool__", "__float__", "__int__", "__index__", "tolist", "numpy"}
#: Copies to the host, and transfers from host memory.
TO_HOST = {"cpu"}
FROM_HOST = {"as_tensor", "tensor", "from_numpy"}
#: The aten ops that every read and every nonzero reach.
ATEN = ("aten::_local_scalar_dense", "aten::nonzero")


class _CountCalls(TorchFunctionMode):
    """Counts the torch calls named in READS, TO_HOST and FROM_HOST, and ``.to``
    calls that name a device."""

    def __init__(self):
        super().__init__()
        self.counts = Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in READS or name in TO_HOST or name in FROM_HOST:
            self.counts[name] += 1
        elif name == "to" and (
            "device" in kwargs
            or any(isinstance(a, (str, torch.device)) for a in args[1:])
        ):
            self.counts["to(device)"] += 1
        return func(*args, **kwargs)


def _mirrored(shape, seed):
    raw = np.random.default_rng(seed).normal(size=shape)
    return MirrorNormalizer().fit_transform(raw).astype(np.float32)


def _cases(n_steps):
    """``(name, policy, contexts, reward function)`` of each policy counted."""
    small = {"hidden_layer_sizes": (32,), "n_steps": n_steps, "random_state": 0}
    X = _mirrored((80, 8), 0)
    Z = _mirrored((80, 6, 8), 1)

    def rewards(t, actions):
        return np.cos(t + np.asarray(actions, dtype=np.float64))

    return [
        ("NeuralTS (diag U)", NeuralTS(n_actions=4, **small), X, rewards),
        ("NeuralUCB (diag U)", NeuralUCB(n_actions=4, **small), X, rewards),
        (
            "CN-UCB (full Z)",
            CNUCB(slate_size=2, covariance="full", **small),
            Z,
            rewards,
        ),
    ]


def _count_rounds(policy, X, rewards, n_warm, n_rounds):
    """Counts over ``n_rounds`` online rounds after ``n_warm`` logged ones."""
    warm = policy.select(X[:n_warm])
    t = np.arange(n_warm).reshape(-1, *[1] * (warm.ndim - 1))  # slates: (n, 1)
    policy.partial_fit(X[:n_warm], warm, rewards(t, warm))
    calls = _CountCalls()
    with profile(activities=[ProfilerActivity.CPU]) as prof, calls:
        for t in range(n_warm, n_warm + n_rounds):
            actions = policy.select(X[t : t + 1])
            policy.partial_fit(X[t : t + 1], actions, rewards(t, actions))
    counts = Counter(calls.counts)
    for event in prof.key_averages():
        if event.key in ATEN:
            counts[event.key] = event.count
    return counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10, help="J; 2J is also run")
    parser.add_argument("--warm", type=int, default=40)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print_machine(torch=torch.__version__)
    J, R = args.steps, args.rounds
    print(f"setting : {R} online rounds after {args.warm} logged, J = {J} and {2 * J}")
    print("          steps a training (one training a round); counts per round")
    print()
    keys = [*ATEN, *sorted(READS), *sorted(TO_HOST), "to(device)", *sorted(FROM_HOST)]
    rows = []
    for (name, policy, X, rewards), (_, twice, _, _) in zip(
        _cases(J), _cases(2 * J), strict=True
    ):
        one = _count_rounds(policy, X, rewards, args.warm, R)
        two = _count_rounds(twice, X, rewards, args.warm, R)
        for key in keys:
            per_step = (two[key] - one[key]) / (J * R)
            per_round = one[key] / R - J * per_step
            if one[key] or two[key]:
                rows.append((name, key, per_step, per_round))
    header = f"{'policy':<20}{'call':<28}{'per step':>10}{'per round':>11}"
    print(header)
    print("-" * len(header))
    for name, key, per_step, per_round in rows:
        print(f"{name:<20}{key:<28}{per_step:>10.2f}{per_round:>11.2f}")
    print("-" * len(header))
    steps = [r for r in rows if r[2] and r[1] not in FROM_HOST]
    print("per-step host syncs:", "none" if not steps else steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
