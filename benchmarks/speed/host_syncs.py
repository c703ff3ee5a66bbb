"""Host synchronisations of a neural round, counted on the CPU (no GPU needed).

On a GPU, a round's time is lost where the host waits for the device: reading a
tensor's value into Python (``.item()``, ``float(t)``, ``bool(t)``, ``.tolist()``,
``.numpy()``), ``nonzero`` (its output size), and copies to the host (``.cpu()``,
``.to("cpu")``); copies from host memory (``torch.as_tensor`` of a numpy array,
``torch.tensor``) are not syncs but pageable transfers. None of these needs a GPU to
be seen: this script runs a few rounds of NeuralTS, NeuralUCB (one thread) and
CN-UCB with a full ``Z`` on the CPU, counts them with
:class:`~skbandit.networks._host_traffic.HostTraffic` (the Python-level calls
through a ``TorchFunctionMode``, the aten ops that wait, ``_local_scalar_dense`` and
``nonzero``, and the allocations through a ``TorchDispatchMode``), and splits the
counts into per training step and per round by timing two step counts:
``per step = (count(2J) - count(J)) / J``. Each policy runs twice: on the CPU's own
code, and on the code a GPU runs (eager hand-written steps, which a GPU captures
as a graph; CN-UCB's ``Z^{-1} Phi^T`` recomputed on the device rather than matched
on the host). ``tests/networks/test_host_traffic.py`` asserts these counts.

The shapes are small (the counts do not depend on them): d = 8 mirrored to 16,
K = 4, m = 32; CN-UCB with N = 6 arms of d = 8, slates of 2, full ``Z`` (p = 288).

Run::

    python benchmarks/speed/host_syncs.py [--rounds 5] [--steps 10]
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

from skbandit.networks import _jstep, _precision, _training
from skbandit.networks._descent import HandGradientSGD
from skbandit.networks._host_traffic import HostTraffic
from skbandit.policies import CNUCB, NeuralTS, NeuralUCB
from skbandit.preprocessing import MirrorNormalizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common.machine import print_machine  # noqa: E402

#: The counts printed, in this order.
KEYS = (
    "syncs",
    "host reads",
    "values read",
    "to host",
    "from host",
    "to(device)",
    "staged to(device)",  # of those, from the reusable staging buffer
    "allocations",
)


@contextmanager
def _device_code_path(on):
    """With ``on``, the code a GPU runs, on the CPU: the papers' network's J steps
    as one function (:mod:`skbandit.networks._jstep`, one graph replay on a GPU),
    other networks' eager hand-written steps (a GPU captures each as a graph) and
    CN-UCB's ``Z^{-1} Phi^T`` recomputed where ``Z^{-1}`` lives, not matched on
    the host."""
    tiled, match = HandGradientSGD._tiled_one_hidden, _precision._MATCH_PRODUCTS_ON
    hosts, every_row = _training.HOST_DEVICES, _jstep.EVERY_ROW_DEVICES
    if on:
        HandGradientSGD._tiled_one_hidden = lambda *args: False
        _precision._MATCH_PRODUCTS_ON = _training.HOST_DEVICES = frozenset()
        _jstep.EVERY_ROW_DEVICES = frozenset({"cpu", *every_row})
    try:
        yield
    finally:
        HandGradientSGD._tiled_one_hidden = tiled
        _precision._MATCH_PRODUCTS_ON, _training.HOST_DEVICES = match, hosts
        _jstep.EVERY_ROW_DEVICES = every_row


def _mirrored(shape, seed):
    raw = np.random.default_rng(seed).normal(size=shape)
    return MirrorNormalizer().fit_transform(raw).astype(np.float32)


def _cases(n_steps):
    """``(name, policy, contexts, reward function)`` of each policy counted."""
    small = {
        **NeuralTS.PAPER_SCHEDULE,  # train every round, full batch
        "hidden_layer_sizes": (32,),
        "n_steps": n_steps,
        "random_state": 0,
    }
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
    """:class:`HostTraffic` counts over ``n_rounds`` online rounds after ``n_warm``
    logged ones."""
    warm = policy.select(X[:n_warm])
    t = np.arange(n_warm).reshape(-1, *[1] * (warm.ndim - 1))  # slates: (n, 1)
    policy.partial_fit(X[:n_warm], warm, rewards(t, warm))
    with HostTraffic() as traffic:
        for t in range(n_warm, n_warm + n_rounds):
            actions = policy.select(X[t : t + 1])
            policy.partial_fit(X[t : t + 1], actions, rewards(t, actions))
    return traffic.counts


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
    rows = []
    for path in (False, True):
        with _device_code_path(path):
            for (name, policy, X, rewards), (_, twice, _, _) in zip(
                _cases(J), _cases(2 * J), strict=True
            ):
                one = _count_rounds(policy, X, rewards, args.warm, R)
                two = _count_rounds(twice, X, rewards, args.warm, R)
                label = f"{name}{' [device path]' if path else ''}"
                for key in KEYS:
                    per_step = (two[key] - one[key]) / (J * R)
                    per_round = one[key] / R - J * per_step
                    rows.append((label, key, per_step, per_round))
    header = f"{'policy':<34}{'count':<18}{'per step':>10}{'per round':>11}"
    print(header)
    print("-" * len(header))
    for name, key, per_step, per_round in rows:
        print(f"{name:<34}{key:<18}{per_step:>10.2f}{per_round:>11.2f}")
    print("-" * len(header))
    waits = [r[:2] for r in rows if r[2] and r[1] not in ("allocations",)]
    print("per-step syncs, reads or copies:", "none" if not waits else waits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
