"""The defaults study (``benchmarks/defaults/default_quality.py``): its grids cover
every policy over the working region, random's regret on the slate problem is what
random slates make, and the table flags the cells it promises to flag."""
# SPDX-License-Identifier: BSD-3-Clause

import json
import os
import sys

import numpy as np

from skbandit.utils.discovery import all_policies

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir))
from common.scripts import load_script  # noqa: E402

dq = load_script("defaults/default_quality.py")

#: Grid parameters that are not widths or scales (probabilities, counts, slopes):
#: they span their own range instead of four decades.
NOT_WIDTHS = {"epsilon", "bootstrap_prob", "n_models", "c_mu"}
#: Widths whose 0 is not meaningful (an inverse-gap weighting at 0 plays uniformly).
NO_ZERO = {"gamma_scale"}


def test_every_policy_has_a_grid_over_four_decades():
    assert {name for name, _ in all_policies()} <= set(dq.GRIDS)
    for name, grid in dq.GRIDS.items():
        for param, values in grid.items():
            if param in NOT_WIDTHS:
                continue
            positive = [v for v in values if v is not None and v > 0]
            assert max(positive) / min(positive) >= 1e4, (name, param)
            assert (0.0 in values) != (param in NO_ZERO), (name, param)


def test_random_slate_rate_matches_random_slates():
    env = dq.make_env("topk")
    rate = dq.random_regret_rates({}, {"topk": env})["topk"]
    env.reset(0)
    env.contexts(1000)
    rng = np.random.default_rng(0)
    k = env.slate_size
    slates = [rng.permutation(env.n_actions)[:k] for _ in range(20 * 1000)]
    draws = np.concatenate([env.regret(s) for s in np.split(np.stack(slates), 20)])
    # Five standard errors of the Monte Carlo mean: a miss has odds below 1e-6.
    sem = draws.std() / np.sqrt(draws.size)
    assert abs(draws.mean() - rate) < 5 * sem
    assert rate > 0


def _cache(root, policy, label, regret, T=1000, seed=0):
    tag = dq.CACHE_TAGS.get(policy, "")
    path = root / "linear" / policy / f"{label}__T{T}{tag}__seed{seed}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"regret": regret}))


def test_table_flags_half_random_and_far_from_best(tmp_path, capsys):
    _cache(tmp_path, "RandomPolicy", "default", 400.0)
    _cache(tmp_path, "LinUCB", "beta=1.0", 250.0)  # above 200, half random; 2.5x best
    _cache(tmp_path, "LinUCB", "beta=0.1", 100.0)
    _cache(tmp_path, "LinTS", "nu=0.1", 190.0)  # below half random, 1.36x best
    _cache(tmp_path, "LinTS", "nu=0.03", 140.0)
    # Points are compared on the defaults' seeds: seed 1 of these points is left out.
    _cache(tmp_path, "LinTS", "nu=0.03", 1e6, seed=1)
    _cache(tmp_path, "LinUCB", "beta=0.1", 1e6, seed=1)
    args = ["--table-only", "--markdown", "--n-seeds", "2", "--cache", str(tmp_path)]
    _cache(tmp_path, "LinPHE", "perturbation_scale=0.3", 50.0)  # the defaults alone
    args += ["--problems", "linear", "--policies", "RandomPolicy", "LinUCB", "LinTS"]
    args += ["LinPHE"]
    assert dq.main(args) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line[:1].isalpha()}
    assert "250!" in rows["LinUCB"]
    assert "2.50*" in rows["LinUCB"]
    assert "!" not in rows["LinTS"]
    assert "*" not in rows["LinTS"]
    assert "!" not in rows["RandomPolicy"]
    linucb = "| LinUCB (`beta=1.0`) | 1000 | 250 / 100 (`beta=0.1`) **×2.5** **!** |"
    assert linucb in out
    assert "| LinTS (`nu=0.1`) | 1000 | 190 / 140 (`nu=0.03`) |" in out
    # No grid point ran beside these defaults: no best is quoted (not "50 / 50").
    assert "| LinPHE (`perturbation_scale=0.3`) | 1000 | 50 / – |" in out
    flagged = [line for line in out.splitlines() if line.startswith("* ")]
    assert flagged == ["* LinUCB on linear: defaults 250, best beta=0.1 100"]


def test_standardising_policies_are_cached_apart_from_their_former_defaults():
    # Their runs before standardize="auto" stay untagged (or __v22) as its record;
    # the runs of today's defaults must not be read from them.
    for name in ("GLMES", "GLMUCB", "UCBGLM", "LogTS", "LogPHE"):
        assert dq.CACHE_TAGS[name].endswith("__std"), name
    assert dq.CACHE_TAGS["GLMES"] == "__v22__std"
    assert "__std" not in dq.CACHE_TAGS["LinES"]  # unchanged defaults
