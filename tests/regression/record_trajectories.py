"""Record fixed-seed online trajectories of every public policy.

The recording pins the behaviour of the code it runs on: every chosen action, and at
a few checkpoints the scores, exploration stds and action probabilities on a fixed
probe set. ``test_trajectories.py`` replays :func:`run_trajectory` on the current
code and compares against the stored arrays.

Record against the pre-redesign code (commit 1fbbcbd) with::

    cd /path/to/baseline-worktree && PYTHONPATH=$PWD python \\
        /path/to/tests/regression/record_trajectories.py \\
        --out /path/to/tests/regression/data/trajectories.npz

The environment is synthetic and built with numpy here, so the recording depends
on nothing but the policies. Rounds are mostly online (``select`` one context,
``partial_fit`` its reward at once); a few are delayed batches (``select`` on five
contexts at once, one ``partial_fit`` on the five rounds), one of them with a
``sample_weight``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

#: Number of arms and raw context width of the synthetic environment.
N_ACTIONS = 4
N_FEATURES = 6
#: Seed of the environment (contexts, reward function, noise, probe set).
ENV_SEED = 20240601
N_PROBE = 8
#: Delayed batches: (first round, size, weighted). Rounds past the horizon are
#: dropped, so short trajectories keep the early batches.
DELAYED_BATCHES = ((30, 5, False), (55, 5, True), (120, 5, False), (170, 5, True))
BATCH_WEIGHTS = np.array([0.5, 1.0, 2.0, 1.5, 0.25])
CONTEXT_FORMS = ("shared", "per_arm")

_NEURAL = {"hidden_layer_sizes": (8,), "n_steps": 3, "learning_rate": 0.05}

#: case name -> (policy class name, parameters, number of rounds). Every public
#: policy has at least one case; the variants cover the paths the parameters select.
CASES = {
    "EpsilonGreedy": ("EpsilonGreedy", {"epsilon": 0.2, "schedule": "constant"}, 200),
    "EpsilonGreedy_inverse_sqrt": (
        "EpsilonGreedy",
        {"epsilon": 0.5, "schedule": "inverse_sqrt", "horizon": 200},
        200,
    ),
    "GLMUCB": ("GLMUCB", {"beta": 0.5}, 200),
    "UCBGLM": ("UCBGLM", {"beta": None, "delta": 0.1}, 200),
    "KernelTS": (
        "KernelTS",
        {"kernel": "laplacian_l2", "nu": 0.5, "alpha": 0.5, "max_history": 60},
        200,
    ),
    "KernelUCB": ("KernelUCB", {"gamma": 0.5, "beta": 0.5}, 200),
    "LinPHE": ("LinPHE", {"perturbation_scale": 0.5}, 200),
    "LinTS": ("LinTS", {"nu": 0.3, "alpha": 0.5}, 200),
    "LinUCB": ("LinUCB", {"beta": 1.0}, 200),
    "LogPHE": ("LogPHE", {"perturbation_scale": 0.5}, 200),
    "LogTS": ("LogTS", {"nu": 0.5}, 200),
    "RandomPolicy": ("RandomPolicy", {}, 200),
    "NeuralTS_diag": (
        "NeuralTS",
        {**_NEURAL, "nu": 0.1, "covariance": "diag"},
        200,
    ),
    "NeuralTS_full": (
        "NeuralTS",
        {**_NEURAL, "nu": 0.1, "covariance": "full", "batch_size": 16},
        200,
    ),
    "NeuralUCB_diag": (
        "NeuralUCB",
        {**_NEURAL, "beta": 0.5, "covariance": "diag", "max_buffer_size": 64},
        200,
    ),
    "NeuralUCB_full": (
        "NeuralUCB",
        {
            **_NEURAL,
            "learning_rate": 0.002,
            "beta": 0.5,
            "covariance": "full",
            "reduction": "sum",
        },
        200,
    ),
    # PyTorch's default init, not the mirrored one: at theta_0 the mirrored network
    # scores every arm 0 exactly, so the greedy argmax would be decided by float32
    # rounding noise, which differs between CPUs (AVX2 / AVX-512 kernels).
    "NeuralEpsilonGreedy": (
        "NeuralEpsilonGreedy",
        {**_NEURAL, "epsilon": 0.1, "train_every": 2, "init": "default"},
        200,
    ),
    "NeuralLinear": (
        "NeuralLinear",
        {**_NEURAL, "nu": 0.1, "train_every": 3},
        200,
    ),
    "NeuralBootstrap": (
        "NeuralBootstrap",
        {**_NEURAL, "n_models": 3, "train_every": 2},
        200,
    ),
}

#: Policy classes whose neural inputs are mirrored float32 contexts.
NEURAL_POLICIES = frozenset(
    {"NeuralTS", "NeuralUCB", "NeuralEpsilonGreedy", "NeuralLinear", "NeuralBootstrap"}
)


def _mirror(X):
    """``[x; x] / (sqrt(2) ||x||)`` on the last axis, as float32."""
    norm = np.linalg.norm(X, axis=-1, keepdims=True) * np.sqrt(2.0)
    Z = X / norm
    return np.concatenate([Z, Z], axis=-1).astype(np.float32)


def make_environment(form, n_rounds):
    """Contexts, mean rewards, noisy rewards and probe contexts of the environment.

    Parameters
    ----------
    form : {"shared", "per_arm"}
        Context form: ``(n, d)`` or ``(n, K, d)``.
    n_rounds : int
        Horizon.

    Returns
    -------
    X, noisy_rewards, probe : ndarrays
        Contexts, rewards of every arm in every round, shape ``(n, K)`` and in
        ``[0, 1]``, and ``N_PROBE`` probe contexts.
    """
    rng = np.random.default_rng(ENV_SEED)
    A = rng.normal(size=(N_ACTIONS, N_FEATURES))
    B = rng.normal(size=(N_ACTIONS, N_FEATURES)) / np.sqrt(N_FEATURES)
    n_total = n_rounds + N_PROBE
    if form == "shared":
        X = rng.normal(size=(n_total, N_FEATURES))
        f = np.sin(X @ A.T) + (X @ B.T) ** 2 - 0.5  # (n, K)
    elif form == "per_arm":
        X = rng.normal(size=(n_total, N_ACTIONS, N_FEATURES))
        f = np.sin(X @ A[0]) + (X @ B[0]) ** 2 - 0.5  # one function of the arm vector
    else:
        raise ValueError(f"unknown context form {form!r}")
    mean = 1.0 / (1.0 + np.exp(-2.0 * f))
    noisy = np.clip(mean + 0.1 * rng.normal(size=mean.shape), 0.0, 1.0)
    return X[:n_rounds], noisy[:n_rounds], X[n_rounds:]


def _schedule(n_rounds):
    """Steps ``(start, stop, weights)``: online rounds and the delayed batches."""
    batches = {s: (n, w) for s, n, w in DELAYED_BATCHES if s + n <= n_rounds}
    steps, t = [], 0
    while t < n_rounds:
        if t in batches:
            n, weighted = batches[t]
            steps.append((t, t + n, BATCH_WEIGHTS[:n] if weighted else None))
            t += n
        else:
            steps.append((t, t + 1, None))
            t += 1
    return steps


def make_policy(class_name, params, random_state=0):
    """The policy ``class_name(n_actions=N_ACTIONS, random_state=..., **params)``."""
    from skbandit.utils.discovery import all_policies

    cls = dict(all_policies())[class_name]
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}
    if "mirror_inputs" in cls().get_params():
        # Recorded before the neural policies mirrored their inputs by default.
        params.setdefault("mirror_inputs", False)
    if "standardize" in cls().get_params():
        # Recorded before policies standardised their contexts online (issue 33).
        params.setdefault("standardize", False)
    # Recorded when the neural policies trained on the papers' schedule by default
    # (every round, full batch, whole history), before the flat-cost defaults.
    params = {**getattr(cls, "PAPER_SCHEDULE", {}), **params}
    return cls(n_actions=N_ACTIONS, random_state=random_state, **params)


def _probe(policy, probe):
    scores, std = policy.predict_scores(probe, return_std=True)
    return scores, std, policy.predict_action_proba(probe)


def _gaps(scores, mask):
    """Per row, the best available score minus the second best (inf for one arm)."""
    scores = np.asarray(scores, dtype=np.float64)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    if scores.shape[1] < 2:
        return np.full(scores.shape[0], np.inf)
    top = np.sort(scores, axis=1)[:, -2:]
    with np.errstate(invalid="ignore"):
        gap = top[:, 1] - top[:, 0]
    return np.where(np.isfinite(top[:, 0]), gap, np.inf)


@contextmanager
def decision_gaps():
    """Record the gap of every argmax a ``select`` takes (its decision margin).

    Every float-dependent choice of the recorded policies is one call of
    ``random_argmax`` on the sampled scores (UCB indices, Thompson draws, greedy
    means); the base's select calls it by the name its module imported. The names
    bound to it in every loaded ``skbandit`` module are wrapped for the duration,
    so the hook follows the function wherever the code base moves it.

    Yields
    ------
    gaps : list of ndarray
        Appended to on each call: the per-row gaps of that call's scores.
    """
    from skbandit._base._selection import random_argmax

    gaps = []

    def recording_argmax(scores, rng, mask=None):
        gaps.append(_gaps(scores, mask))
        return random_argmax(scores, rng, mask)

    holders = [
        module
        for name, module in list(sys.modules.items())
        if name.startswith("skbandit")
        and getattr(module, "random_argmax", None) is random_argmax
    ]
    for module in holders:
        module.random_argmax = recording_argmax
    try:
        yield gaps
    finally:
        for module in holders:
            module.random_argmax = random_argmax


def _jittered(X, seed):
    """``X`` with each entry moved by -1, 0 or +1 unit in its last place.

    A rounding difference at the source, as another kernel makes in every
    operation: ``measure_drift.py`` measures how far it carries.
    """
    rng = np.random.default_rng(seed)
    step = rng.integers(-1, 2, size=X.shape)
    toward = np.where(step > 0, np.inf, -np.inf).astype(X.dtype)
    return np.where(step == 0, X, np.nextafter(X, toward)).astype(X.dtype)


def run_trajectory(class_name, params, n_rounds, form, jitter=None):
    """Play the policy online in the synthetic environment.

    Parameters
    ----------
    class_name : str
        Name of a public policy in :mod:`skbandit.policies`.
    params : dict
        Policy parameters (lists are turned into tuples).
    n_rounds : int
        Number of rounds.
    form : {"shared", "per_arm"}
        Context form.
    jitter : int or None
        Seed of a one-ulp perturbation of the contexts (:func:`_jittered`), or
        ``None`` for the recorded run.

    Returns
    -------
    record : dict of ndarray
        ``actions`` (n_rounds,), ``margins`` (n_rounds,): the smallest gap between
        the best and the second-best sampled score in the round's ``select``
        (``inf`` where it took no argmax), and ``scores``, ``stds``, ``probas``, each of
        shape ``(3, N_PROBE, N_ACTIONS)`` at three checkpoints: after the first
        ``select`` (before any feedback), at mid-run and at the end.
    """
    X, rewards, probe = make_environment(form, n_rounds)
    if class_name in NEURAL_POLICIES:
        X, probe = _mirror(X), _mirror(probe)
    if jitter is not None:
        X = _jittered(X, jitter)
    policy = make_policy(class_name, params)
    actions = np.full(n_rounds, -1, dtype=np.int64)
    margins = np.full(n_rounds, np.inf)
    checkpoints = []
    for start, stop, weights in _schedule(n_rounds):
        with decision_gaps() as gaps:
            a = policy.select(X[start:stop])
        if gaps:  # forced rounds (and policies without an argmax) take none
            margins[start:stop] = np.concatenate(gaps).min()
        actions[start:stop] = a
        if start == 0:
            checkpoints.append(_probe(policy, probe))
        r = rewards[np.arange(start, stop), a]
        policy.partial_fit(X[start:stop], a, r, sample_weight=weights)
        if start < n_rounds // 2 <= stop:
            checkpoints.append(_probe(policy, probe))
    checkpoints.append(_probe(policy, probe))
    scores, stds, probas = (
        np.stack(arrays) for arrays in zip(*checkpoints, strict=True)
    )
    return {
        "actions": actions,
        "margins": margins,
        "scores": scores,
        "stds": stds,
        "probas": probas,
    }


def float_kernels():
    """Name the CPU vendor and torch's kernel set, which fix the float32 rounding.

    The same code rounds differently on another vendor's BLAS path or another
    instruction set (AVX2 against AVX-512), so the neural replays compare their
    floats tightly only where this matches the recording's.
    """
    import platform

    import torch

    vendor = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            vendor = next(
                line.split(":", 1)[1].strip()
                for line in cpuinfo
                if line.startswith("vendor_id")
            )
    except (OSError, StopIteration):
        pass
    return f"{vendor} {torch.backends.cpu.get_cpu_capability()}"


def record(out):
    """Run every case in both context forms and save them to ``out`` (npz)."""
    import torch

    from skbandit.utils.discovery import all_policies

    torch.set_num_threads(1)
    covered = {class_name for class_name, _, _ in CASES.values()}
    missing = sorted(set(dict(all_policies())) - covered)
    if missing:
        raise SystemExit(f"public policies without a recorded case: {missing}")
    arrays = {
        "cases_json": np.array(json.dumps(CASES)),
        "float_kernels": np.array(float_kernels()),
    }
    for case, (class_name, params, n_rounds) in CASES.items():
        for form in CONTEXT_FORMS:
            tic = time.perf_counter()
            result = run_trajectory(class_name, params, n_rounds, form)
            for key, value in result.items():
                arrays[f"{case}__{form}__{key}"] = value
            print(f"{case:28s} {form:8s} {time.perf_counter() - tic:6.2f} s")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, **arrays)
    print(f"wrote {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="npz file to write")
    record(parser.parse_args().out)
