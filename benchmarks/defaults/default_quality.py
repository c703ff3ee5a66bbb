"""Default quality: every policy's defaults against the best point of a small grid.

Every policy of ``all_policies()`` runs online (``simulate``, one row per round) with
its default parameters and with each point of a grid over its key exploration
parameter (a width or scale over at least four decades, plus 0 where 0 is meaningful:
``GRIDS``), on the problems of its kind, over several seeds. The
table gives the mean cumulative regret at the last round for the defaults and for the
best grid point, and their ratio; a ratio above 1.5 flags a default that is far off
(issue 11). Policies with ``mirror_inputs`` also run ``mirror_inputs=False``.

Problems (features standard-scaled, as a user would; shared contexts):

- ``digits``, ``wine``: scikit-learn's data sets, K = 10 and 3;
- ``magic``, ``mushroom``: the KEEL data sets, K = 2 (skipped when not installed);
- ``linear``: ``LinearBandit(n_actions=10, n_features=5)``, Bernoulli rewards;
- ``logistic``: ``LogisticBandit(n_actions=10, n_features=5)``, Bernoulli rewards with a
  linear logit (fixed arms, per-arm contexts);
- ``cosine``: ``SyntheticBandit("cosine", n_actions=4, n_features=20, noise=0.1)``;
- ``es_linear``: ``SyntheticBandit("linear", n_actions=50, n_features=20, noise=0.5,
  fixed_arms=True)``, the linear problem of Sun, Wang and Xu's ensemble sampling paper
  (50 fixed arms); ``es_linear_small``: the same with 5 features and noise 0.1;
  ``es_bernoulli``: ``LinearBandit(n_actions=50, n_features=20)``, Bernoulli rewards;
- ``topk_cosine``: ``TopKBandit("cosine_pi", n_actions=20, n_features=10,
  slate_size=4)``, the combinatorial neural paper's nonlinear score ``cos(pi a^T x)`` on
  a smaller problem than its ``d = 80``;
- ``topk``: ``TopKBandit("linear", n_actions=20, n_features=10, slate_size=4)``, the
  slate policies' problem (a slate policy runs only there, a single-arm one never).

Every cell whose defaults make more than half of the random policy's regret on that
problem (``RandomPolicy``'s row; for ``topk``, a uniformly random slate's expected
regret) is marked ``!``, beside the 1.5x flags.

Classification regret counts mistakes. Policies that need rewards in [0, 1] (the
logistic and PHE ones) are "n/a" on ``cosine``. A run whose training diverges
(``NumericalError``) is cached as "diverged": such a grid point is never the best, and
defaults that diverge show as "diverged k/n".

The reduced protocol (compute): the neural and kernel policies run
``--neural-rounds`` (500) rounds on their paper's training schedule (the class's
``PAPER_SCHEDULE``: full batches over the whole history; the defaults' flat-cost
schedule is the full protocol's), and a neural policy of width 100 runs
``hidden_layer_sizes=(20,), train_every=20`` (its other parameters at their
defaults); the ones of width 20, trained every 50 rounds, run their own. The table
says which.

Resumable and cumulative: every finished run is one JSON file under ``--cache``
(default: the tracked ``benchmarks/results/defaults``, named by problem, policy,
parameter values, horizon, protocol and seed); rerunning skips them, so the command can
be cut, restarted, or extended by a later session. ``--table-only`` prints the cached
runs; ``--policies`` and ``--problems`` restrict the study.

Run::

    python benchmarks/defaults/default_quality.py [--n-rounds 1000] [--n-seeds 4]
        [--neural-rounds 500] [--policies LinTS NeuralTS] [--problems digits wine]
        [--table-only] [--markdown]

``--full-protocol`` runs the neural policies at their defaults, width and flat-cost
schedule included, instead (cached apart, tagged ``__flat``), and ``--points nu=0.01``
restricts the grid beside the defaults: the user guide's check of NeuralTS is
``--full-protocol --policies NeuralTS --points nu=0.01 --n-seeds 2``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from time import process_time

import numpy as np
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler
from tqdm import tqdm

from skbandit.datasets import load_digits_bandit, load_magic, load_mushroom
from skbandit.environments import (
    ClassificationBandit,
    LinearBandit,
    LogisticBandit,
    SyntheticBandit,
    TopKBandit,
)
from skbandit.evaluation import simulate
from skbandit.exceptions import NumericalError
from skbandit.utils.discovery import all_policies, policy_family

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common.machine import print_machine  # noqa: E402

PROBLEMS = (
    "digits", "wine", "magic", "mushroom", "linear", "logistic", "cosine", "topk",
    "es_linear", "es_linear_small", "es_bernoulli", "topk_cosine",
)  # fmt: skip
#: The problems of slate policies (the others run every other problem).
SLATE_PROBLEMS = ("topk", "topk_cosine")

#: The grid of each policy: its key exploration parameter (the default is its own
#: point, and is among them or beside them). Every width or scale spans at least four
#: decades, plus 0 (greedy) where 0 is meaningful, and the theory width where the
#: policy has one (``beta=None`` of the GLM UCBs, ``confidence="theory"`` of
#: Logistic-UCB-1 is left to the neural logistic benchmark). Probabilities
#: (``epsilon``, ``bootstrap_prob``) and counts (``n_models``) span their range
#: instead. The inverse-gap weightings' ``gamma_scale`` has no meaningful 0 (uniform
#: play). The neural logistic widths work at 1e-5 ... 1e-2 (the gradient features'
#: units: larger widths play at random, issue 22).
WIDTHS = [0.0, 0.001, 0.01, 0.1, 1.0, 10.0]
SMALL_WIDTHS = [0.0, 1e-4, 0.001, 0.01, 0.1, 1.0]
NEURAL_LOGISTIC_WIDTHS = [0.0, 1e-5, 1e-4, 1e-3, 1e-2, 0.1]
GRIDS = {
    "RandomPolicy": {},
    "EpsilonGreedy": {"epsilon": [0.0, 0.01, 0.1, 0.3, 3.0, 10.0]},
    "LinUCB": {"beta": [*WIDTHS, 0.3, 3.0]},
    "LinTS": {"nu": [*WIDTHS, 0.003, 0.03, 0.3]},
    "LinPHE": {"perturbation_scale": [*WIDTHS, 0.3, 2.0]},
    "LinES": {"perturbation_scale": [*WIDTHS, 0.03, 0.2]},
    "LogPHE": {"perturbation_scale": [*WIDTHS, 0.3, 2.0]},
    "GLMUCB": {"beta": [None, *WIDTHS]},
    "UCBGLM": {"beta": [None, *WIDTHS, 0.3]},
    "GLMES": {"perturbation_scale": [*WIDTHS, 0.3]},
    "LogTS": {"nu": [*WIDTHS, 0.3]},
    "ECOLog": {"nu": [*SMALL_WIDTHS, 0.3]},
    "LogisticUCB1": {"nu": [*WIDTHS, 0.03, 0.3]},
    "KernelUCB": {"beta": [*WIDTHS, 0.3]},
    "KernelTS": {"nu": [*WIDTHS, 0.3]},
    "NeuralTS": {"nu": SMALL_WIDTHS},
    "NeuralUCB": {"beta": SMALL_WIDTHS},
    "NeuralEpsilonGreedy": {"epsilon": [0.0, 0.001, 0.01, 0.05, 0.2]},
    "NeuralLinear": {"nu": WIDTHS},
    "NeuralBootstrap": {"bootstrap_prob": [0.5, 0.8, 1.0]},
    "NeuralES": {"perturbation_scale": SMALL_WIDTHS},
    "NeuralPHE": {"perturbation_scale": SMALL_WIDTHS},
    "NeuralLogTS": {"nu": NEURAL_LOGISTIC_WIDTHS},
    "NeuralLogUCB": {"nu": NEURAL_LOGISTIC_WIDTHS},
    "NCBFUCB": {"nu": NEURAL_LOGISTIC_WIDTHS},
    "SquareCB": {"gamma_scale": [0.1, 1.0, 10.0, 100.0, 1000.0]},
    "FALCON": {"gamma_scale": [0.01, 0.1, 1.0, 10.0, 100.0]},
    "BootstrappedTS": {"n_models": [2, 5, 10, 20]},
    "CombLinUCB": {"beta": WIDTHS},
    "CombLinTS": {"nu": WIDTHS},
    "CNUCB": {"beta": WIDTHS},
    "CNTS": {"nu": WIDTHS},
}
#: Former defaults (before issue 22) that are parameter settings of today's code,
#: run beside the grid as one point each: the record of what the change bought. The
#: other changed defaults (the anytime restarts of LinES and GLMES, Logistic-UCB-1's
#: theory width, the neural logistic widths) are earlier cached runs of their own.
OLD_DEFAULTS = {
    "CNUCB": {"init": "ntk"},
    "CNTS": {"init": "ntk", "nu": 1.0},
}
#: Further points beside a policy's grid, each a parameter set (cached under its
#: values; the defaults' cache name stays that of the grid's parameters alone).
EXTRA_POINTS = {
    "LinES": [
        {"n_models": 10},
        {"n_models": 50},
        {"n_models": 100},
        {"fit_intercept": True},
    ],
    # what holds CN-UCB and CN-TS back on the nonlinear slate problem: the step,
    # the width, the network, the schedule (the exploration scale is the grid)
    **{
        name: [
            {"learning_rate": 0.1},
            {"learning_rate": 0.3},
            {"learning_rate": 1.0},
            {"learning_rate": 3.0},
            {"reduction": "sum"},
            {"hidden_layer_sizes": (20,)},
            {"hidden_layer_sizes": (20,), "learning_rate": 1.0},
            {"init": "ntk", "mirror_inputs": True, "learning_rate": 1.0},
            {"n_steps": 100, "batch_size": None, "max_buffer_size": None},
            {"train_every": 1},
        ]
        for name in ("CNUCB", "CNTS")
    },
}
#: Neural and kernel policies (a training or an O(t^2) solve per round) run fewer
#: rounds (``--neural-rounds``): the neural family, the kernel module of the linear
#: family and the slate family's combinatorial neural policies.
NEURAL = {
    name
    for name, cls in all_policies()
    if policy_family(cls) == "neural"
    or cls.__module__.endswith(("._kernel", "._cn_ucb", "._cn_ts"))
}
#: The reduced neural protocol (compute): a policy whose defaults train a width-100
#: network every round runs width 20, trained every 20 rounds; the others (width 20,
#: every 50 rounds already) run their defaults. Part of each cached run's name.
NEURAL_SMALL = {"hidden_layer_sizes": (20,), "train_every": 20}
#: Every policy with ``mirror_inputs`` also runs ``mirror_inputs=False``.
MIRROR_POINT = {"mirror_inputs": [False]}
#: The cached regret of a run whose training diverged (``NumericalError``).
DIVERGED = "diverged"
#: A tag in the cache names of policies whose meaning of a grid point changed with
#: issue 22 (LinES, GLMES and NeuralES no longer restart, LinES perturbs its prior,
#: LogisticUCB1's nu is a fixed width unless confidence="theory", the neural logistic
#: policies' gradient features are divided by sqrt(m), EpsilonGreedy's epsilon scales
#: the inverse_t schedule instead of being a constant rate): their
#: earlier runs stay in the cache, untagged, as the record of the former defaults.
CACHE_TAGS = {
    name: "__v22"
    for name in (
        "LinES", "GLMES", "NeuralES", "LogisticUCB1",
        "NeuralLogTS", "NeuralLogUCB", "NCBFUCB", "EpsilonGreedy",
    )
}  # fmt: skip
#: The logistic policies that standardise their contexts online by default since issue
#: 33 (``standardize="auto"``; ``standardize=False`` is their former default): their
#: runs before it stay in the cache, untagged (or ``__v22``), as its record.
STANDARDIZE_TAG = "__std"
CACHE_TAGS.update(
    {
        name: CACHE_TAGS.get(name, "") + STANDARDIZE_TAG
        for name in ("GLMES", "GLMUCB", "UCBGLM", "LogTS", "LogPHE")
    }
)
#: The tracked cache: one JSON file per (problem, policy, parameters, seed).
CACHE = Path(__file__).resolve().parents[1] / "results" / "defaults"


def protocol(name, cls, full=False):
    """``(fixed parameters, tag)``: what every run of a policy is given beyond its
    grid point, and the tag naming it in the cache (empty for the defaults).
    ``full=True`` runs every policy at its defaults (``--full-protocol``)."""
    tag = CACHE_TAGS.get(name, "")
    paper = dict(getattr(cls, "PAPER_SCHEDULE", {}))
    if full:
        # The neural defaults' flat-cost schedule (mini-batches of a bounded buffer)
        # is tagged: the runs cached before it trained on the paper's schedule.
        return {}, tag + ("__flat" if paper else "")
    if name not in NEURAL:
        return {}, tag
    defaults = cls().get_params()
    widths = defaults.get("hidden_layer_sizes", ())
    small = NEURAL_SMALL if max(np.atleast_1d(widths), default=0) > 20 else {}
    tag += "".join(
        f"__{k}={','.join(map(str, np.atleast_1d(v)))}" for k, v in small.items()
    )
    # The reduced protocol trains on the paper's schedule (full batches over the
    # whole history), under the train_every of NEURAL_SMALL where it applies: what
    # its cached runs ran before the neural defaults' flat-cost schedule.
    return {**paper, **small}, tag


#: The synthetic problems, by name: each a maker of its environment.
SYNTHETIC = {
    "linear": lambda: LinearBandit(n_actions=10, n_features=5),
    "logistic": lambda: LogisticBandit(n_actions=10, n_features=5),
    "topk": lambda: TopKBandit("linear", n_actions=20, n_features=10, slate_size=4),
    # the combinatorial paper's h3 = cos(pi a^T x), on 10 features instead of 80
    "topk_cosine": lambda: TopKBandit(
        "cosine_pi", n_actions=20, n_features=10, slate_size=4
    ),
    "cosine": lambda: SyntheticBandit("cosine", n_actions=4, n_features=20, noise=0.1),
    # Sun, Wang and Xu's linear problem (their section 7.1): 50 fixed arms
    "es_linear": lambda: SyntheticBandit(
        "linear", n_actions=50, n_features=20, noise=0.5, fixed_arms=True
    ),
    # the same shape, held out: 5 features and less noise, or Bernoulli rewards
    "es_linear_small": lambda: SyntheticBandit(
        "linear", n_actions=50, n_features=5, noise=0.1, fixed_arms=True
    ),
    "es_bernoulli": lambda: LinearBandit(n_actions=50, n_features=20),
}


def make_env(problem):
    """The environment of a problem, or None where its data is not installed."""
    scale = StandardScaler().fit_transform
    if problem in SYNTHETIC:
        return SYNTHETIC[problem]()
    if problem == "digits":
        X, y = load_digits_bandit(return_X_y=True)
    elif problem == "wine":
        X, y = load_wine(return_X_y=True)
    elif problem in ("magic", "mushroom"):
        loader = load_magic if problem == "magic" else load_mushroom
        try:
            X, y = loader(return_X_y=True)
        except (ImportError, OSError, ValueError):
            return None
    else:
        raise ValueError(f"unknown problem {problem!r}; expected one of {PROBLEMS}")
    X = np.asarray(X, dtype=np.float64)
    keep = X.std(axis=0) > 0
    return ClassificationBandit(scale(X[:, keep]), y)


def grid_points(name, cls):
    """``[(label, params, cache_name)]``: the defaults first, then the grid's other
    points. A run is cached under its parameter values (``nu=0.1``), never under
    "default", so that the cache survives a change of the defaults."""
    defaults = cls().get_params()
    grid = dict(GRIDS.get(name, {}))
    if "mirror_inputs" in defaults:
        grid.update(MIRROR_POINT)
    default_name = ",".join(f"{p}={defaults[p]}" for p in grid) or "default"
    points = [("default", {}, default_name)]
    for param, values in grid.items():
        for value in values:
            if value != defaults[param]:
                label = f"{param}={value}"
                points.append((label, {param: value}, label))
    extra = [OLD_DEFAULTS[name]] if name in OLD_DEFAULTS else []
    for params in [*extra, *EXTRA_POINTS.get(name, [])]:
        label = ",".join(f"{k}={v}" for k, v in params.items())
        points.append((label, dict(params), label))
    return points


def run_one(cls, params, env, n_rounds, seed):
    """Cumulative regret at the last round; None where the policy refuses the
    problem's rewards (a ValueError on the first feedback); ``"diverged"`` where its
    training diverged (a NumericalError: the run is a failure, not a number)."""
    import torch

    torch.set_num_threads(1)
    policy = cls(random_state=seed, **params)
    try:
        result = simulate(policy, env, n_rounds, random_state=seed, progress=False)
    except NumericalError:
        return DIVERGED
    except ValueError as exc:
        if "reward" in str(exc):
            return None
        raise
    return float(result.cumulative_regret[-1])


def _jsonable(params):
    return {k: list(v) if isinstance(v, tuple) else v for k, v in params.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rounds", type=int, default=1000)
    parser.add_argument("--neural-rounds", type=int, default=500)
    parser.add_argument("--n-seeds", type=int, default=4)
    parser.add_argument("--policies", nargs="*", default=None)
    parser.add_argument("--problems", nargs="*", default=list(PROBLEMS))
    parser.add_argument("--cache", default=str(CACHE))
    parser.add_argument(
        "--table-only", action="store_true", help="print the cached runs, run nothing"
    )
    parser.add_argument(
        "--markdown", action="store_true", help="also print the table in Markdown"
    )
    parser.add_argument(
        "--full-protocol",
        action="store_true",
        help="neural policies at their own width and schedule, not the reduced "
        "protocol (slow: a check of the reduced protocol's verdicts)",
    )
    parser.add_argument(
        "--points",
        nargs="*",
        default=None,
        help="run only these grid points beside the defaults (e.g. nu=0.01)",
    )
    args = parser.parse_args(argv)
    print_machine()
    policies = [
        (n, c)
        for n, c in all_policies()
        if n in GRIDS and (not args.policies or n in args.policies)
    ]
    envs = {p: make_env(p) for p in args.problems}
    for p, env in envs.items():
        if env is None:
            print(f"{p}: not installed, skipped")
    cache = Path(args.cache)
    jobs = []
    for name, cls in policies:
        T = args.neural_rounds if name in NEURAL else args.n_rounds
        fixed, tag = protocol(name, cls, args.full_protocol)
        slate = "slate_size" in cls().get_params()
        for problem, env in envs.items():
            if env is None or slate != (problem in SLATE_PROBLEMS):
                continue
            for label, params, cached in grid_points(name, cls):
                if args.points is not None and label not in ("default", *args.points):
                    continue
                for seed in range(args.n_seeds):
                    file = f"{cached}__T{T}{tag}__seed{seed}.json"
                    path = cache / problem / name / file
                    params = {**fixed, **params}
                    jobs.append((name, cls, problem, env, label, params, T, seed, path))
    todo = [j for j in jobs if not j[-1].exists()]
    print(
        f"runs: {len(jobs)} in all, {len(jobs) - len(todo)} cached, {len(todo)} to run"
    )
    if not args.table_only:
        for name, cls, problem, env, _, params, T, seed, path in tqdm(todo):
            start = process_time()
            regret = run_one(cls, params, env, T, seed)
            record = {
                "policy": name, "problem": problem, "params": _jsonable(params),
                "n_rounds": T, "seed": seed, "regret": regret,
                "cpu_seconds": round(process_time() - start, 2),
            }  # fmt: skip
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".part")  # a cut run leaves no half file
            partial.write_text(json.dumps(record, indent=1) + "\n")
            partial.replace(path)
    print_table(jobs, envs, markdown=args.markdown, full=args.full_protocol)
    return 0


def random_regret_rates(results, envs):
    """Random's regret per round on each problem: ``RandomPolicy``'s mean over its
    cached runs (its expected regret grows linearly in the rounds, so rows run for
    fewer rounds compare with the same rate); for the slate problem, a uniformly
    random slate's expected regret, computed on the problem's first 1,000 rounds."""
    rates = {}
    for (name, problem, T), entry in results.items():
        if name == "RandomPolicy" and entry.get("default"):
            rates[problem] = float(np.mean(entry["default"])) / T
    for problem in SLATE_PROBLEMS:
        env = envs.get(problem)
        if env is not None:
            env.reset(0)
            env.contexts(1000)
            # expected_rewards is the current rounds' array (a property)
            means = env.expected_rewards
            gap = env.optimal_value() - env.slate_size * means.mean(axis=1)
            rates[problem] = float(gap.mean())
    return rates


def _half_random(cell, rate, T):
    """Whether a cell's defaults make more than half of random's regret."""
    return not isinstance(cell, str) and rate is not None and cell[0] > 0.5 * rate * T


def print_table(jobs, envs, markdown=False, full=False):
    results, classes = {}, {}
    for name, cls, problem, _, label, _, T, seed, path in jobs:
        classes[name] = cls
        if path.exists():
            regret = json.loads(path.read_text())["regret"]
            results.setdefault((name, problem, T), {}).setdefault(label, {})[seed] = (
                regret
            )
    results = {key: _paired(entry) for key, entry in results.items()}
    rates = random_regret_rates(results, envs)
    print()
    print(
        "mean cumulative regret at T over seeds: defaults, best grid point, ratio "
        "(* where the defaults are worse than 1.5x the best, ! above half of "
        "random's regret; n: seeds)"
    )
    problems = [p for p, env in envs.items() if env is not None]
    header = f"{'policy':<20}" + "".join(f"{p:>26}" for p in problems)
    print(header)
    print("-" * len(header))
    rows, flagged = {}, []
    for (name, problem, T), entry in sorted(results.items()):
        row = rows.setdefault((name, T), ["-"] * len(problems))
        cell = _cell(entry)
        if cell is None:
            continue
        if isinstance(cell, str):  # "n/a", or defaults that diverged
            row[problems.index(problem)] = cell
            continue
        d, b, best, ratio, n = cell
        half = name != "RandomPolicy" and _half_random(cell, rates.get(problem), T)
        if ratio > 1.5 or half:
            flagged.append((name, problem, best, d, b))
        row[problems.index(problem)] = (*cell, half)
    for (name, _), row in sorted(rows.items()):
        cells = [
            f"{c:>26}" if isinstance(c, str) else
            f"{c[0]:>7.0f}{'!' if c[5] else ' '}{c[1]:>6.0f} {c[3]:>5.2f}"
            f"{'*' if c[3] > 1.5 else ' '} n={c[4]:<2}"
            for c in row
        ]  # fmt: skip
        print(f"{name:<20}" + "".join(cells))
    print("-" * len(header))
    for name, problem, best, d, b in flagged:
        best = "(no grid point run)" if best is None else f"{best} {b:.0f}"
        print(f"* {name} on {problem}: defaults {d:.0f}, best {best}")
    if markdown:
        print()
        print("| policy (defaults) | T, protocol | " + " | ".join(problems) + " |")
        print("|---|---|" + "---|" * len(problems))
        for (name, T), row in sorted(rows.items()):
            cls = classes[name]
            default = grid_points(name, cls)[0][2].replace(",", ", ")
            tag = protocol(name, cls, full)[1].replace("__", ", ").strip(", ")
            cells = [c if isinstance(c, str) else _markdown_cell(*c) for c in row]
            print(
                f"| {name} (`{default}`) | {T}{', ' + tag if tag else ''} | "
                + " | ".join(cells) + " |"
            )  # fmt: skip
        _print_mirror_table(results, problems)


def _print_mirror_table(results, problems):
    """Defaults (mirrored inputs) against ``mirror_inputs=False``, where both ran."""
    label = "mirror_inputs=False"
    pairs = {}
    for (name, problem, T), entry in results.items():
        if label in entry and "default" in entry and None not in entry["default"]:
            pairs.setdefault((name, T), {})[problem] = " / ".join(
                DIVERGED if DIVERGED in runs else f"{np.mean(runs):.0f}"
                for runs in (entry["default"], entry[label])
            )
    if not pairs:
        return
    print()
    head = "| policy: defaults / `mirror_inputs=False` | T | "
    print(head + " | ".join(problems) + " |")
    print("|---|---|" + "---|" * len(problems))
    for (name, T), cells in sorted(pairs.items()):
        row = [cells.get(p, "-") for p in problems]
        print(f"| {name} | {T} | " + " | ".join(row) + " |")


def _paired(entry):
    """``{label: runs}`` on the seeds the defaults ran (in seed order): a grid point
    is compared with the defaults on the same seeds, and left out where it lacks one
    of them (a point run on more seeds keeps only the defaults' ones)."""
    if "default" not in entry:
        return {label: list(runs.values()) for label, runs in entry.items()}
    seeds = sorted(entry["default"])
    return {
        label: [runs[s] for s in seeds]
        for label, runs in entry.items()
        if all(s in runs for s in seeds)
    }


def _cell(entry):
    """``(default, best, best label, ratio, seeds)`` of one (policy, problem), over
    the grid points run on the defaults' seeds (``_paired``; best and ratio NaN, label
    None, where none ran); "n/a" where the policy refuses the problem; None before the
    defaults ran."""
    if "default" not in entry:
        return None
    if any(r is None for r in entry["default"]):
        return "n/a"
    n = len(entry["default"])
    failed = entry["default"].count(DIVERGED)
    if failed:
        return f"diverged {failed}/{n}"
    if len(entry) == 1:  # no grid point ran on these seeds: no best to quote
        return float(np.mean(entry["default"])), np.nan, None, np.nan, n
    # A grid point that diverged on any seed is not a candidate for the best.
    means = {
        lab: np.mean(v)
        for lab, v in entry.items()
        if None not in v and DIVERGED not in v
    }
    best = min(means, key=means.get)
    d, b = means["default"], means[best]
    ratio = d / b if b > 0 else (1.0 if d == 0 else np.inf)
    return d, b, best, ratio, n


def _markdown_cell(d, b, best, ratio, n, half=False):
    flag = f" **×{ratio:.1f}**" if ratio > 1.5 else ""
    flag += " **!**" if half else ""
    if best is None:  # the defaults alone ran (no grid point on their seeds)
        return f"{d:.0f} / –{flag}"
    point = "" if best == "default" else f" (`{best}`)"
    return f"{d:.0f} / {b:.0f}{point}{flag}"


if __name__ == "__main__":
    sys.exit(main())
