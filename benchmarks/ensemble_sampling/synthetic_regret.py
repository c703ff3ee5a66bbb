"""Ensemble sampling (Sun, Wang, Xu), section 7: LinES and GLMES on synthetic bandits.

The paper's four problems (section 7.1): a fixed set of K = 50 arms in R^20, uniform on
the unit sphere, redrawn per instance with ``theta*`` (unit) and ``A`` (i.i.d. N(0, 1));
Gaussian reward noise sigma = 0.5; T = 10,000 rounds; cumulative pseudo-regret.
``SyntheticBandit(reward, n_actions=50, n_features=20, noise=0.5, fixed_arms=True)``:

- ``linear``: h(x) = x^T theta* (tests Lin-ES);
- ``logistic``: h(x) = sigmoid(x^T theta*), Gaussian noise (tests GLM-ES);
- ``distance``: h(x) = -||x - theta*||, ``quadratic``: h(x) = 10^-2 x^T A^T A x (the
  neural problems; the linear and GLM policies run there as references, the neural
  ensemble policies are in their own benchmark).

Policies (``--study main``); the paper's settings where it gives them (section 7.2),
ours (marked) where it does not:

- Lin-ES: m = 25, sigma_R = 0.1, lambda = 1, ``horizon=T``; DT100 / DT300: the anytime
  version (``horizon="anytime"``, ``first_phase`` 100 / 300, b = (3 + sqrt 5)/2, m_i =
  ceil(2 ln tau_i), sigma_i = 0.02 ln tau_i); greedy: sigma_R = 0; "+prior": with Lee
  and Oh's prior perturbation (``prior_perturbation=True``), which the paper's
  framework omits; "s=0.5": sigma_R = 0.5, the noise level (our addition);
- GLM-ES (logistic link): m = 10, sigma_R = 0.1, lambda = 1, G-optimal warm-up of 500
  rounds, ``horizon=T``, exact Newton solve; "GLM-ES (GD)": the experiments' 100 steps
  of gradient descent at 0.01 (on the mean loss); DT100 / DT300 as for Lin-ES;
- LinTS (prior N(0, I), noise sigma = 0.5: alpha = 0.25, nu = 0.5), LinUCB (beta = 1,
  lambda = 1): ours, the
  paper gives no settings;
- LinPHE (a in {0.1, 1}, lambda = 1, rewards clipped to [-2, 2], the range PHE needs):
  ours;
- LogTS (GLM-TSL, Laplace) and UCB-GLM (Li et al., theory width), rewards clipped to
  [0, 1] (the GLM baselines need bounded rewards; clipping keeps the arms' order):
  ours -- the paper does not name its GLM baselines.

``--study sensitivity`` (Fig. 2 and 3a, logistic problem, GLM-ES): one parameter at a
time around the fixed-T baseline (m = 10, sigma_R = 0.1, lambda = 1): m in {5, 50},
sigma_R in {0.001, 10}, lambda in {1e-4, 1e3}; and the anytime base b in {1.5, 5}
against 2.618 (T0 = 100).

``--study neural`` (Fig. 1d-e): Neural-ES against Neural-TS, Neural-UCB, Neural-PHE,
greedy and random on the distance and quadratic problems, in a reduced protocol
(``benchmarks/ensemble_sampling/_neural_problems.py``; ``--study neural_paper`` is the
paper's).

Each finished run is one JSON file under the tracked
``benchmarks/results/ensemble_sampling/<study>/<problem>/`` (the cumulative regret
every T / 100 rounds, the seconds, the parameters), so the study accumulates over
sessions: a rerun skips what is cached, and ``--table-only`` prints the tables from the
files alone. The table prints the cumulative regret at t = T/10, T/2 and T (mean +-
standard deviation over the seeds, as the paper's bands), the seconds per run, and
the note's checks 11-13.

Run::

    cd benchmarks/ensemble_sampling
    nice -n 15 python synthetic_regret.py --study main --seeds 8
    nice -n 15 python synthetic_regret.py --study sensitivity --seeds 8
    nice -n 15 python synthetic_regret.py --study neural --rounds 2000 --seeds 4
    python synthetic_regret.py --study all --table-only --plot \\
        ../../docs/_static/ensemble_sampling_regret.png  # tables + figure from cache
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np
from _neural_problems import NEURAL_PROBLEMS, neural_policies  # the script's folder
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, clone

from skbandit.environments import SyntheticBandit
from skbandit.evaluation import simulate
from skbandit.policies import GLMES, UCBGLM, LinES, LinPHE, LinTS, LinUCB, LogTS

PROBLEMS = ("linear", "logistic", "distance", "quadratic")
REWARD = {"quadratic": "quadratic_form"}
#: One JSON file per finished (study, problem, policy, T, seed), tracked by git so
#: that the study accumulates over sessions on a fresh clone.
CACHE = Path(__file__).resolve().parents[1] / "results" / "ensemble_sampling"
#: The cumulative regret is kept at these fractions of T (every T / 100 rounds).
N_MARKS = 100


class ClippedRewards(BaseEstimator):
    """A policy fed rewards clipped to ``[low, high]`` (bounded-reward baselines)."""

    def __init__(self, policy=None, low=0.0, high=1.0):
        self.policy = policy
        self.low = low
        self.high = high

    def _inner(self):
        if not hasattr(self, "policy_"):
            self.policy_ = clone(self.policy)
        return self.policy_

    def select(self, X, action_mask=None):
        return self._inner().select(X, action_mask=action_mask)

    def partial_fit(self, X, actions, rewards, action_mask=None):
        clipped = np.clip(rewards, self.low, self.high)
        self._inner().partial_fit(X, actions, clipped, action_mask=action_mask)
        return self


def _lin_es(**kw):
    # The paper's settings, pinned (the defaults perturb the prior with 0.3)
    paper = {"n_models": 25, "perturbation_scale": 0.1, "alpha": 1.0}
    return LinES(**{**paper, "prior_perturbation": False, **kw})


def _glm_es(**kw):
    # The paper's settings, pinned; its contexts are read as given (the default
    # standardises them online)
    params = {"n_models": 10, "perturbation_scale": 0.1, "alpha": 1.0, "n_warmup": 500}
    params["standardize"] = False
    return GLMES(**{**params, **kw})


def _anytime(make, first_phase, **kw):
    # The anytime schedule is opt-in: the defaults never restart.
    return make(
        n_models="auto",
        perturbation_scale="auto",
        horizon="anytime",
        first_phase=first_phase,
        **kw,
    )


def main_policies(problem, T):
    """The policies of ``--study main`` on ``problem``, by label."""
    out = {
        "Lin-ES": _lin_es(horizon=T),
        "Lin-ES DT100": _anytime(_lin_es, 100),
        "Lin-ES DT300": _anytime(_lin_es, 300),
        "Lin-ES +prior": _lin_es(horizon=T, prior_perturbation=True),
        "Lin-ES +prior DT100": _anytime(_lin_es, 100, prior_perturbation=True),
        "Lin-ES +prior DT300": _anytime(_lin_es, 300, prior_perturbation=True),
        "Lin-ES +prior s=0.5": _lin_es(
            horizon=T, prior_perturbation=True, perturbation_scale=0.5
        ),
        "Lin-ES greedy": _lin_es(horizon=T).set_params(perturbation_scale=0.0),
        "LinTS": LinTS(alpha=0.25, nu=0.5, fit_intercept=False),
        "LinUCB": LinUCB(alpha=1.0, beta=1.0, fit_intercept=False),
        "LinPHE a=0.1": ClippedRewards(
            LinPHE(perturbation_scale=0.1, reward_range=(-2, 2), fit_intercept=False),
            -2.0,
            2.0,
        ),
        "LinPHE a=1": ClippedRewards(
            LinPHE(perturbation_scale=1.0, reward_range=(-2, 2), fit_intercept=False),
            -2.0,
            2.0,
        ),
    }
    if problem == "logistic":
        out.update(
            {
                "GLM-ES": _glm_es(horizon=T),
                "GLM-ES (GD)": _glm_es(horizon=T, solver="gd"),
                "GLM-ES DT100": _anytime(_glm_es, 100),
                "GLM-ES DT300": _anytime(_glm_es, 300),
                # contexts as given, as the paper (the defaults standardise)
                "LogTS": ClippedRewards(
                    LogTS(nu=1.0, fit_intercept=False, standardize=False)
                ),
                "UCB-GLM": ClippedRewards(
                    UCBGLM(beta=None, fit_intercept=False, horizon=T, standardize=False)
                ),
            }
        )
    return out


def sensitivity_policies(problem, T):
    """GLM-ES around its baseline, one parameter at a time (logistic problem)."""
    base = _glm_es(horizon=T)
    out = {"GLM-ES": base}
    for m in (5, 50):
        out[f"m = {m}"] = clone(base).set_params(n_models=m)
    for s in (0.001, 10.0):
        out[f"sigma_R = {s:g}"] = clone(base).set_params(perturbation_scale=s)
    for lam in (1e-4, 1e3):
        out[f"lambda = {lam:g}"] = clone(base).set_params(alpha=lam)
    for b in (1.5, 2.618, 5.0):
        out[f"DT100 b = {b:g}"] = _anytime(_glm_es, 100, restart_base=b)
    return out


STUDIES = {
    "main": (PROBLEMS, main_policies),
    "sensitivity": (("logistic",), sensitivity_policies),
    "neural": (NEURAL_PROBLEMS, neural_policies("neural")),
    "neural_paper": (NEURAL_PROBLEMS, neural_policies("neural_paper")),
}


def _path(study, problem, label, T, seed):
    safe = "".join(c if c.isalnum() else "_" for c in label).strip("_")
    return CACHE / study / problem / f"{safe}__T{T}__s{seed}.json"


def marks(T):
    """The rounds ``t`` (1-based) whose cumulative regret a cached run keeps."""
    return np.linspace(T / N_MARKS, T, N_MARKS).round().astype(int)


def run_one(study, problem, label, T, seed):
    """One run, cached: cumulative regret every T / 100 rounds, seconds, errors."""
    path = _path(study, problem, label, T, seed)
    if path.exists():
        return path
    policy = STUDIES[study][1](problem, T)[label]
    policy.set_params(
        **{k: seed for k in policy.get_params() if k.endswith("random_state")}
    )
    env = SyntheticBandit(
        REWARD.get(problem, problem),
        n_actions=50,
        n_features=20,
        noise=0.5,
        fixed_arms=True,
    )
    t = marks(T)
    try:
        res = simulate(policy, env, T, random_state=seed, progress=False, name=label)
        curve, error = res.cumulative_regret[t - 1], ""
        seconds = float(res.select_time.sum() + res.update_time.sum())
    except Exception as exc:  # a diverging configuration is a result too
        curve, seconds, error = np.full(t.size, np.nan), float("nan"), repr(exc)[:200]
    out = dict(
        study=study,
        problem=problem,
        policy=label,
        params=repr(policy.get_params(deep=False))[:2000],
        T=T,
        seed=seed,
        t=t.tolist(),
        cumulative_regret=[None if np.isnan(c) else round(float(c), 4) for c in curve],
        seconds=None if np.isnan(seconds) else round(seconds, 3),
        error=error,
        machine=f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        finished=time.strftime("%Y-%m-%d %H:%M:%S"),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out) + "\n")
    os.replace(tmp, path)  # atomic: a killed run leaves no half file
    return path


def load(study, problem, label, T, seeds):
    """``(curve at marks(T), seconds, error)`` of each cached seed."""
    rows = []
    for seed in seeds:
        path = _path(study, problem, label, T, seed)
        if path.exists():
            f = json.loads(path.read_text())
            curve = np.array(
                [np.nan if c is None else c for c in f["cumulative_regret"]]
            )
            seconds = np.nan if f["seconds"] is None else f["seconds"]
            rows.append((curve, seconds, f["error"]))
    return rows


def summarise(study, T, seeds):
    problems, make = STUDIES[study]
    table = {}
    for problem in problems:
        for label in make(problem, T):
            rows = load(study, problem, label, T, seeds)
            if not rows:
                continue
            curves = np.array([r[0] for r in rows])
            errors = [r[2] for r in rows if r[2]]
            table[problem, label] = dict(
                n=len(rows),
                curves=curves,
                mean=curves.mean(axis=0),
                std=curves.std(axis=0, ddof=1) if len(rows) > 1 else 0 * curves[0],
                seconds=float(np.nanmean([r[1] for r in rows])),
                errors=errors,
            )
    return table


def at(T, t):
    """The index of round ``t`` (a multiple of T / 100) in a cached curve."""
    return round(t * N_MARKS / T) - 1


def _cell(s, T, t):
    if s["errors"]:
        return f"failed ({len(s['errors'])}/{s['n']})"
    return f"{s['mean'][at(T, t)]:.0f} +- {s['std'][at(T, t)]:.0f}"


def print_tables(study, table, T, markdown=False):
    problems, make = STUDIES[study]
    checkpoints = (T // 10, T // 2, T)
    for problem in problems:
        if not any(k[0] == problem for k in table):
            continue
        print(f"\n{study} / {problem}: cumulative regret R(t), mean +- std over seeds")
        if markdown:
            head = " | ".join(f"R({t})" for t in checkpoints)
            print(f"\n| policy | {head} | s/run | seeds |\n|---|---|---|---|---|---|")
        else:
            head = "".join(f"{f'R({t})':>18}" for t in checkpoints)
            print(f"{'policy':<18}{head}{'s/run':>9}{'seeds':>7}")
        for label in make(problem, T):
            s = table.get((problem, label))
            if s is None:
                continue
            cells = [_cell(s, T, t).replace("+-", "±") for t in checkpoints]
            if markdown:
                print(
                    f"| {label} | {' | '.join(cells)} | {s['seconds']:.1f} | {s['n']} |"
                )
            else:
                cells = "".join(f"{c:>18}" for c in cells)
                print(f"{label:<18}{cells}{s['seconds']:>9.1f}{s['n']:>7}")
            for err in sorted(set(s["errors"])):
                print(f"{'':<18}error: {err}")


def check(claim, ok, detail):
    print(f"  [{'PASS' if ok else 'FAIL'}] {claim}: {detail}")


def final(table, problem, label):
    s = table.get((problem, label))
    if s is None or s["errors"]:
        return None
    return s["curves"][:, -1]


def check_item11(table, T, problem, es, best, weaker):
    """Item 11: ``es`` sublinear, within one std of the best of ``best``, below
    each of ``weaker`` (random, greedy)."""
    s = table.get((problem, es))
    if s is None:
        return None
    c = s["mean"]
    first, last = c[at(T, T // 5)], c[-1] - c[at(T, T - T // 5)]
    check(
        f"11 {es} sublinear on {problem}",
        last < 0.5 * first,
        f"regret in the last 20% {last:.0f} vs first 20% {first:.0f}",
    )
    mine = s["curves"][:, -1]
    finals = {b: final(table, problem, b) for b in best}
    finals = {b: v for b, v in finals.items() if v is not None}
    if finals:
        b = min(finals, key=lambda k: finals[k].mean())
        spread = finals[b].std(ddof=1) if finals[b].size > 1 else 0.0
        check(
            f"11 {es} within one std of the best baseline ({b})",
            mine.mean() <= finals[b].mean() + spread,
            f"{mine.mean():.0f} vs {finals[b].mean():.0f} +- {spread:.0f}",
        )
    for w in weaker:
        v = final(table, problem, w)
        if v is not None:
            check(
                f"11 {es} beats {w}",
                mine.mean() < v.mean(),
                f"{mine.mean():.0f} vs {v.mean():.0f}",
            )
    return s


def checks_neural(table, T):
    print("\nChecks (the paper note's section 6, item 11, neural problems):")
    for problem in NEURAL_PROBLEMS:
        check_item11(
            table,
            T,
            problem,
            "Neural-ES",
            ("NeuralTS", "NeuralUCB", "NeuralPHE"),
            ("Random", "Neural-ES greedy"),
        )


def checks_main(table, T):
    print("\nChecks (the paper note's section 6, items 11-12):")
    for problem, es, best, weaker in (
        ("linear", "Lin-ES", ("LinTS", "LinUCB"), ("Lin-ES greedy",)),
        ("logistic", "GLM-ES", ("LogTS", "UCB-GLM", "LinTS", "LinUCB"), ()),
    ):
        s = check_item11(table, T, problem, es, best, weaker)
        if s is None:
            continue
        for dt in ("DT100", "DT300"):
            v = final(table, problem, f"{es} {dt}")
            if v is not None:
                ratio = v.mean() / s["curves"][:, -1].mean()
                check(
                    f"12 {es} {dt} within 3.3x of fixed T",
                    ratio <= 3.3,
                    f"{ratio:.2f}x",
                )


def checks_sensitivity(table, T):
    print("\nChecks (the paper note's section 6, item 13; logistic, GLM-ES):")
    R = {k: final(table, "logistic", k) for _, k in table}
    base = R.get("GLM-ES")
    if base is None:
        return

    def cmp(claim, worse, better):
        if R.get(worse) is None or R.get(better) is None:
            check(claim, False, "missing or failed runs")
            return
        check(
            claim,
            R[worse].mean() > R[better].mean(),
            f"{worse}: {R[worse].mean():.0f} +- {R[worse].std(ddof=1):.0f}, "
            f"{better}: {R[better].mean():.0f} +- {R[better].std(ddof=1):.0f}",
        )

    cmp("13 m = 5 worse than m = 10", "m = 5", "GLM-ES")
    if R.get("m = 5") is not None:
        check(
            "13 m = 5 more variable than m = 10",
            R["m = 5"].std() > base.std(),
            f"std {R['m = 5'].std():.0f} vs {base.std():.0f}",
        )
    if R.get("m = 50") is not None:
        gain = 1 - R["m = 50"].mean() / base.mean()
        check(
            "13 m = 50 at most marginally better than m = 10",
            gain < 0.25,
            f"gain {100 * gain:.0f}%",
        )
    cmp("13 sigma_R = 0.1 beats 0.001", "sigma_R = 0.001", "GLM-ES")
    cmp("13 sigma_R = 0.1 beats 10", "sigma_R = 10", "GLM-ES")
    cmp("13 lambda = 1 beats 1e-4", "lambda = 0.0001", "GLM-ES")
    cmp("13 lambda = 1 beats 1e3", "lambda = 1000", "GLM-ES")
    cmp("13 b = 1.5 worse than b = 2.618", "DT100 b = 1.5", "DT100 b = 2.618")
    cmp("13 b = 5 worse than b = 2.618", "DT100 b = 5", "DT100 b = 2.618")


CHECKS = {
    "main": checks_main,
    "sensitivity": checks_sensitivity,
    "neural": checks_neural,
    "neural_paper": checks_neural,
}


def plot(tables, T, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = {
        "linear": (
            "Lin-ES",
            "Lin-ES +prior",
            "Lin-ES +prior s=0.5",
            "Lin-ES +prior DT100",
            "Lin-ES +prior DT300",
            "LinTS",
            "LinUCB",
            "LinPHE a=0.1",
        ),
        "logistic": (
            "GLM-ES",
            "GLM-ES (GD)",
            "GLM-ES DT100",
            "GLM-ES DT300",
            "LogTS",
            "UCB-GLM",
            "Lin-ES",
            "Lin-ES +prior",
            "LinTS",
        ),
        "distance": ("Lin-ES +prior", "LinTS", "LinUCB", "LinPHE a=0.1"),
        "quadratic": ("Lin-ES +prior", "LinTS", "LinUCB", "LinPHE a=0.1"),
    }
    table = tables.get("main", {})
    problems = [p for p in PROBLEMS if any(k[0] == p for k in table)]
    fig, axes = plt.subplots(
        1, len(problems), figsize=(6 * len(problems), 4.2), constrained_layout=True
    )
    t = marks(T)
    for ax, problem in zip(np.atleast_1d(axes), problems, strict=True):
        for label in shown[problem]:
            s = table.get((problem, label))
            if s is None or s["errors"]:
                continue
            style = ":" if "DT" in label else ("--" if "ES" in label else "-")
            ax.plot(t, s["mean"], style, label=f"{label} ({s['n']} seeds)")
            ax.fill_between(t, s["mean"] - s["std"], s["mean"] + s["std"], alpha=0.12)
        ax.set_title(f"{problem} (K = 50, d = 20, sigma = 0.5)")
        ax.set_xlabel("round t")
        ax.set_ylabel("cumulative regret")
        ax.legend(fontsize=7)
    fig.savefig(path, dpi=90)
    print(f"\nsaved {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", choices=[*STUDIES, "all"], default="main")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--problems", nargs="*", default=None)
    parser.add_argument("--only", nargs="*", default=None, help="policy labels")
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument(
        "--table-only",
        "--no-run",
        dest="no_run",
        action="store_true",
        help="print the tables of the cached runs, run nothing",
    )
    parser.add_argument("--plot", default=None, help="save the regret figure here")
    parser.add_argument("--markdown", action="store_true", help="tables as Markdown")
    args = parser.parse_args(argv)
    T = args.rounds
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    studies = (
        ("main", "sensitivity", "neural") if args.study == "all" else (args.study,)
    )
    print(f"command: python {shlex.join(sys.argv)}")
    print(
        f"machine: {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}"
    )
    tables = {}
    for study in studies:
        problems, make = STUDIES[study]
        problems = [p for p in problems if not args.problems or p in args.problems]
        # Seed by seed, so that an interrupted study has every policy on its
        # first seeds.
        jobs = [
            (study, p, label, T, s)
            for s in seeds
            for p in problems
            for label in make(p, T)
            if not args.only or label in args.only
        ]
        if not args.no_run:
            todo = [j for j in jobs if not _path(*j).exists()]
            print(f"{study}: {len(jobs) - len(todo)} cached runs, {len(todo)} to run")
            try:
                from tqdm import tqdm
            except ImportError:  # pragma: no cover
                tqdm = list
            Parallel(n_jobs=args.n_jobs)(
                delayed(run_one)(*j) for j in tqdm(todo, desc=study)
            )
        tables[study] = summarise(study, T, seeds)
        print_tables(study, tables[study], T, markdown=args.markdown)
        CHECKS[study](tables[study], T)
    if args.plot:
        plot(tables, T, args.plot)


if __name__ == "__main__":
    main()
