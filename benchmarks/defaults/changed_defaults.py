"""Old against new defaults: the policies whose defaults changed with issue 22.

For each of them, the mean cumulative regret at T of its former default setting and of
today's defaults on every problem of the defaults study (``default_quality.py``), read
from the study's tracked cache (this script runs nothing). Each cell is compared on
the seeds both settings ran; "-" where one of them has not run.

The former settings are either parameters of today's code (``beta=None``,
``init="ntk"``: run as points of the study) or the study's earlier runs, cached before
the change under names without the ``v22`` tag (the anytime restarts of LinES, GLMES
and NeuralES, Logistic-UCB-1's theory width, the neural logistic policies before their
gradient features were divided by sqrt(m)).

Today's side of GLMUCB, UCBGLM and GLMES is issue 22's default with the contexts as
given (``standardize=False``): their standardised defaults (issue 33) are the study's
``__std`` runs, in its own table.

Run::

    python benchmarks/defaults/changed_defaults.py [--cache DIR]
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import default_quality as dq  # noqa: E402

OLD_NEURAL_LOGISTIC = "nu=1.0,mirror_inputs=auto"
#: policy -> (the former default, in words; its runs' cache label). The cache label
#: is the study's point label; the runs are untagged where the policy's cache is
#: tagged ``v22`` today (they are the record from before the change).
CHANGED = {
    "GLMUCB": ("`beta=None` (theory width)", "beta=None"),
    "UCBGLM": ("`beta=None` (theory width)", "beta=None"),
    "LogisticUCB1": ('`confidence="theory", nu=1`', "nu=1.0"),
    "LinES": ("anytime restarts, no prior perturbation", "perturbation_scale=auto"),
    "GLMES": ("anytime restarts, `n_warmup=500`", "perturbation_scale=auto"),
    "NeuralES": ('`horizon="anytime"`', "perturbation_scale=auto,mirror_inputs=auto"),
    "ECOLog": ("`nu=0.1`", "nu=0.1"),
    "EpsilonGreedy": ("constant `epsilon=0.01`", "epsilon=0.01"),
    "NeuralLogUCB": (
        "`nu=1`, gradients not divided by √m",
        "nu=1.0,mirror_inputs=auto",
    ),
    "NeuralLogTS": ("`nu=1`, gradients not divided by √m", "nu=1.0,mirror_inputs=auto"),
    "NCBFUCB": ("`nu=1`", "nu=1.0,mirror_inputs=auto"),
    "CNUCB": ('`init="ntk"`', "init=ntk"),
    "CNTS": ('`init="ntk", nu=1`', "init=ntk,nu=1.0"),
}


def load_runs(directory, stem):
    """``{seed: regret}`` of the cached runs named ``stem__seed<k>.json``."""
    runs = {}
    for path in Path(directory).glob(f"{stem}__seed*.json"):
        record = json.loads(path.read_text())
        runs[record["seed"]] = record["regret"]
    return runs


def compare(old, new):
    """``"old → new"`` over the seeds both ran, or "-" where none; "n/a" where the
    policy refuses the problem's rewards."""
    seeds = sorted(set(old) & set(new))
    if not seeds:
        return "-"
    pairs = [(old[s], new[s]) for s in seeds]
    if any(None in p for p in pairs):
        return "n/a"
    cells = []
    for runs in zip(*pairs, strict=True):
        failed = sum(r == dq.DIVERGED for r in runs)
        cells.append(
            f"diverged {failed}/{len(runs)}" if failed else f"{np.mean(runs):.0f}"
        )
    return " → ".join(cells)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default=str(dq.CACHE))
    args = parser.parse_args(argv)
    cache = Path(args.cache)
    classes = dict(dq.all_policies())
    print("| policy: former default → today's | T | " + " | ".join(dq.PROBLEMS) + " |")
    print("|---|---|" + "---|" * len(dq.PROBLEMS))
    for name, (words, old_label) in CHANGED.items():
        cls = classes[name]
        T = 500 if name in dq.NEURAL else 1000
        # Issue 22's change alone: the runs of its defaults before the logistic
        # policies standardised their contexts (issue 33, the study's "__std" runs).
        tag = dq.protocol(name, cls)[1].replace(dq.STANDARDIZE_TAG, "")
        issue22 = dq.CACHE_TAGS.get(name, "").replace(dq.STANDARDIZE_TAG, "")
        old_tag = tag.replace(issue22, "", 1)
        new_label = dq.grid_points(name, cls)[0][2]
        cells = [
            compare(
                load_runs(cache / problem / name, f"{old_label}__T{T}{old_tag}"),
                load_runs(cache / problem / name, f"{new_label}__T{T}{tag}"),
            )
            for problem in dq.PROBLEMS
        ]
        new_words = new_label.replace(",", ", ")
        print(f"| {name}: {words} → `{new_words}` | {T} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
