"""Measure how far the trajectories drift across float kernels and thread counts.

The tolerances of ``test_trajectories.py`` come from this measurement. ``run``
plays every case in one setting (an ``OPENBLAS_CORETYPE``, torch's CPU capability,
a torch thread count); ``jitter`` plays every case with its contexts moved by one
unit in the last place (4 seeds), which emulates another CPU's rounding;
``calibrate`` writes, from those runs, each case's decision margins, their drift
envelope and the checkpoint drifts into ``data/trajectories.npz``
(``calibration__*`` keys; the recorded arrays stay as they are); ``compare``
prints how the settings differ from the recording. The calibration in the file
was made on a 2-core AMD EPYC with AVX-512 with (from the repository root,
``M=tests/regression/measure_drift.py``, ``D=/tmp/drift``)::

    for core in SkylakeX Haswell Zen Sandybridge Prescott; do
        OPENBLAS_CORETYPE=$core PYTHONPATH=$PWD python $M run --threads 1 \
            --out $D/$core-1.npz; done
    for t in 2 4; do for core in SkylakeX Haswell Prescott; do
        OPENBLAS_CORETYPE=$core PYTHONPATH=$PWD python $M run --neural-only \
            --threads $t --out $D/$core-$t.npz; done; done
    for t in 1 2; do
        ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 PYTHONPATH=$PWD \
            python $M run --neural-only --threads $t --out $D/avx2-$t.npz
        ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2 PYTHONPATH=$PWD \
            python $M run --neural-only --threads $t --out $D/sse-$t.npz; done
    PYTHONPATH=$PWD python $M jitter --out $D/jitter-all.npz
    cd tests/regression && PYTHONPATH=$PWD/../.. python measure_drift.py \
        calibrate --base $D/SkylakeX-1.npz $(ls $D/*.npz | grep -v SkylakeX-1)
    PYTHONPATH=$PWD/../.. python measure_drift.py compare $D/[A-Z]*.npz

Re-recording the file (``record_trajectories.py``) drops the calibration: run
this again after it.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from record_trajectories import CASES, CONTEXT_FORMS, NEURAL_POLICIES, run_trajectory

DATA = Path(__file__).parent / "data" / "trajectories.npz"
FLOATS = ("scores", "stds", "probas")


def _setting(threads):
    import torch
    from threadpoolctl import threadpool_info

    blas = [i.get("architecture") for i in threadpool_info() if i["user_api"] == "blas"]
    return (
        f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')} "
        f"(openblas kernels {blas}) torch {torch.backends.cpu.get_cpu_capability()} "
        f"MKL_ENABLE_INSTRUCTIONS={os.environ.get('MKL_ENABLE_INSTRUCTIONS', '')} "
        f"threads={threads}"
    )


def jitter(out, seeds=(1, 2, 3, 4), neural_only=False):
    """Run every case with its contexts moved by one ulp, once per seed; save.

    Settings on this machine leave the float32 runs bit-identical; a CPU of
    another vendor (MKL picks its kernels by vendor) rounds differently from the
    first operation on. One-ulp changes of the inputs emulate that: the drift
    they cause is the sensitivity of each trajectory to rounding.
    """
    import torch

    torch.set_num_threads(1)
    arrays = {}
    for case, (name, params, n_rounds) in CASES.items():
        if neural_only and name not in NEURAL_POLICIES:
            continue
        for form in CONTEXT_FORMS:
            for seed in seeds:
                got = run_trajectory(name, params, n_rounds, form, jitter=seed)
                for key, value in got.items():
                    arrays[f"{case}__{form}__{key}__{seed}"] = value
    np.savez_compressed(out, **arrays)


def run(threads, out, neural_only=False):
    """Run every case in both forms under ``threads`` torch threads; save to ``out``.

    With ``neural_only``, only the policies that train with torch (the others do
    not depend on torch's thread count or CPU capability).
    """
    import torch

    import skbandit  # noqa: F401  (a count set after the import is the user's)

    torch.set_num_threads(threads)
    arrays = {"setting": np.array(_setting(threads))}
    tic = time.perf_counter()
    for case, (name, params, n_rounds) in CASES.items():
        if neural_only and name not in NEURAL_POLICIES:
            continue
        for form in CONTEXT_FORMS:
            for key, value in run_trajectory(name, params, n_rounds, form).items():
                arrays[f"{case}__{form}__{key}"] = value
    np.savez_compressed(out, **arrays)
    print(f"{arrays['setting']}: {time.perf_counter() - tic:.1f} s -> {out}")


def _checkpoint_rounds(n_rounds):
    """The rounds whose actions a checkpoint follows (after round 0, n/2 and n)."""
    return (1, n_rounds // 2 + 1, n_rounds)


def _load(path):
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def _float_drift(runs, reference, key, covered):
    """Largest absolute and relative (to ``|x| + 1e-3``) change of the floats of
    the ``covered`` checkpoints between ``runs`` and ``reference``."""
    absolute, relative = 0.0, 0.0
    for got in runs:
        for name in FLOATS:
            b = reference[key + name][covered]
            d = np.abs(got[key + name][covered] - b)
            if d.size:
                absolute = max(absolute, float(d.max()))
                relative = max(relative, float((d / (np.abs(b) + 1e-3)).max()))
    return absolute, relative


def compare(paths, recording=DATA):
    """Print the margins and drifts of the saved runs against the recording.

    Columns: the first round where any setting chose another arm than the
    recording (``P``, the horizon if none) and the setting; the recorded-code
    margin there; the smallest margin before it; the largest drift of the
    decision margins over the rounds before ``P``; the largest absolute and
    relative (to ``|x| + 1e-3``) drift of the checkpoint floats that ``P`` covers,
    against the recording and between the settings.
    """
    rec = _load(recording)
    runs = {Path(path).stem: _load(path) for path in paths}
    header = ("case", "form", "P", "setting", "margin@P", "min<P", "dmargin",
              "abs-rec", "rel-rec", "abs-set", "rel-set")  # fmt: skip
    print(("{:24s} {:7s} {:>4s} {:>12s}" + " {:>9s}" * 7).format(*header))
    for case, (_, _, n_rounds) in CASES.items():
        for form in CONTEXT_FORMS:
            key = f"{case}__{form}__"
            have = {n: r for n, r in runs.items() if key + "actions" in r}
            if key + "actions" not in rec or not have:
                continue
            first, where = n_rounds, "-"
            for name, got in have.items():
                diff = np.flatnonzero(got[key + "actions"] != rec[key + "actions"])
                if diff.size and diff[0] < first:
                    first, where = int(diff[0]), name
            margins = np.stack([got[key + "margins"] for got in have.values()])
            before = margins[:, :first]
            finite = np.isfinite(before).all(axis=0)
            dmargin = np.ptp(before[:, finite], axis=0).max(initial=0.0)
            rounds = _checkpoint_rounds(n_rounds)
            covered = [i for i, r in enumerate(rounds) if r <= first]
            ref = next(iter(have.values()))
            drift = {
                kind: _float_drift(have.values(), other, key, covered)
                for kind, other in (("rec", rec), ("set", ref))
            }
            at = margins[:, first].min() if first < n_rounds else np.inf
            low = before[np.isfinite(before)]
            low = low[low > 0].min(initial=np.inf)  # exact ties are exact everywhere
            print(
                ("{:24s} {:7s} {:4d} {:>12s}" + " {:9.2g}" * 7).format(
                    case[:24],
                    form,
                    first,
                    where[:12],
                    at,
                    low,
                    dmargin,
                    *drift["rec"],
                    *drift["set"],
                )  # fmt: skip
            )


def _variants(paths):
    """Each saved run as ``{case__form__key: array}``; a jitter file gives one
    run per seed (its keys end in ``__seed``)."""
    for path in paths:
        data = _load(path)
        if not any(k.endswith("__actions__1") for k in data):
            yield data
            continue
        for seed in sorted({k.rsplit("__", 1)[1] for k in data}):
            tail = f"__{seed}"
            yield {k[: -len(tail)]: v for k, v in data.items() if k.endswith(tail)}


def calibrate(base_path, paths, out=DATA):
    """Write each case's margins, margin-drift envelope and checkpoint drifts.

    ``base_path`` is a run in the default environment; ``paths`` the other
    settings and the jitter files. Per (case, form) whose base run chooses the
    recorded actions: ``margins`` (the base run's), ``envelope`` (per round, the
    running maximum over the variants of the change of the margin; ``inf`` from the
    first round where a variant chose another arm) and ``drift`` (per checkpoint,
    the largest change of a score, std or probability over the variants; ``inf``
    where a variant had diverged before it). The recorded arrays are kept as they
    are; the calibration arrays are added under ``calibration__...`` keys.
    """
    rec = _load(out)
    base = _load(base_path)
    variants = list(_variants(paths))
    arrays = {k: v for k, v in rec.items() if not k.startswith("calibration__")}
    for case, (_, _, n_rounds) in CASES.items():
        for form in CONTEXT_FORMS:
            key = f"{case}__{form}__"
            if not np.array_equal(base[key + "actions"], rec[key + "actions"]):
                print(f"{key}: the base run does not replay the recording; skipped")
                continue
            envelope = np.zeros(n_rounds)
            drift = np.zeros(3)
            rounds = np.array(_checkpoint_rounds(n_rounds))
            for got in variants:
                if key + "actions" not in got:
                    continue
                diff = np.flatnonzero(got[key + "actions"] != base[key + "actions"])
                first = int(diff[0]) if diff.size else n_rounds
                a, b = got[key + "margins"], base[key + "margins"]
                both = np.isfinite(a) & np.isfinite(b)
                change = np.abs(np.where(both, a - b, 0.0))
                change[first:] = np.inf
                envelope = np.maximum(envelope, change)
                for i, r in enumerate(rounds):
                    d = max(
                        np.abs(got[key + f][i] - base[key + f][i]).max() for f in FLOATS
                    )
                    drift[i] = max(drift[i], d if r <= first else np.inf)
            envelope = np.maximum.accumulate(envelope)
            arrays[f"calibration__{key}margins"] = base[key + "margins"]
            arrays[f"calibration__{key}envelope"] = envelope
            arrays[f"calibration__{key}drift"] = drift
    arrays["calibration__variants"] = np.array(len(variants))
    np.savez_compressed(out, **arrays)
    print(f"calibrated {out} from {len(variants)} variant runs")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("run")
    one.add_argument("--threads", type=int, required=True)
    one.add_argument("--out", required=True)
    one.add_argument("--neural-only", action="store_true")
    jit = sub.add_parser("jitter")
    jit.add_argument("--out", required=True)
    jit.add_argument("--neural-only", action="store_true")
    cal = sub.add_parser("calibrate")
    cal.add_argument("--base", required=True)
    cal.add_argument("paths", nargs="+")
    many = sub.add_parser("compare")
    many.add_argument("paths", nargs="+")
    args = parser.parse_args()
    if args.command == "run":
        run(args.threads, args.out, args.neural_only)
    elif args.command == "calibrate":
        calibrate(args.base, args.paths)
    elif args.command == "jitter":
        jitter(args.out, neural_only=args.neural_only)
    else:
        compare(args.paths)
