"""Shared pieces of the paper-000 benchmarks (``neural_thompson_sampling/regret.py`` and
``neural_thompson_sampling/training_delay.py``): the two problems, the neural policies,
the command-line options they share, the header they print and the PASS/FAIL
bookkeeping.

The problems (paper 000, section 5 and App. A.1; note 000, sections 3.2 and 6):

``digits``
    scikit-learn's ``load_digits`` (1797 rows, d = 64, K = 10) as a classification
    bandit: rows l2-normalised, shown once each in an order shuffled per seed, reward
    1 for the true class, so the regret counts mistakes. Contexts are shared, ``(n,
    64)``: the neural policies apply the disjoint encoding of the paper block by block,
    the linear ones fit one ridge block per arm (Li et al.'s disjoint LinUCB), which
    is the same model.
``synthetic``
    ``SyntheticBandit("cosine")``: K = 4 per-arm contexts uniform on the unit sphere
    of R^20, reward ``cos(3 a^T x) + 0.1 N(0, 1)``, ``a`` drawn per seed (note 000,
    check 12).

This file is imported by the two scripts (``benchmarks/`` is on ``sys.path`` when
they run); it is not a benchmark itself.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import os
import platform
import sys
from contextlib import nullcontext

import numpy as np
import torch
from joblib import Parallel, delayed, parallel_config
from sklearn.preprocessing import normalize

from skbandit.datasets import load_digits_bandit
from skbandit.environments import ClassificationBandit, SyntheticBandit
from skbandit.pipeline import make_bandit_pipeline
from skbandit.policies import NeuralEpsilonGreedy, NeuralTS, NeuralUCB
from skbandit.preprocessing import MirrorNormalizer

PROBLEMS = ("digits", "synthetic")
#: Rounds per run: every digits row once; 2000 rounds of the synthetic problem.
FULL_ROUNDS = {"digits": 1797, "synthetic": 2000}
QUICK_ROUNDS = {"digits": 150, "synthetic": 150}


# ------------------------------------------------------------------- problems
def make_env(problem):
    """The environment of a problem; ``compare`` reseeds it per run."""
    if problem == "digits":
        X, y = load_digits_bandit(return_X_y=True)
        # Paper 000, App. A.1: rows l2-normalised; ClassificationBandit shuffles the
        # row order on every reset(seed), i.e. per run.
        return ClassificationBandit(normalize(X), y, encoding="shared")
    if problem == "synthetic":
        return SyntheticBandit("cosine", n_actions=4, n_features=20, noise=0.1)
    raise ValueError(f"unknown problem {problem!r}; expected one of {PROBLEMS}")


def describe_problem(problem, n_rounds):
    """One line saying what the problem is."""
    if problem == "digits":
        return (
            f"digits: load_digits rows l2-normalised, shuffled per seed, K = 10, "
            f"d = 64 (shared contexts, disjoint model), T = {n_rounds}; "
            "regret = mistakes"
        )
    return (
        "synthetic: h(x) = cos(3 a^T x), K = 4, d = 20, ||x|| = 1, Gaussian noise "
        f"0.1, a drawn per seed, T = {n_rounds}; regret = expected regret"
    )


# -------------------------------------------------------------------- options
def add_common_arguments(parser, *, n_seeds, problems, nu=(0.1, 0.01), beta=(1.0, 0.1)):
    """Options shared by both scripts; ``nu`` and ``beta`` are the defaults of
    ``--nu`` and ``--beta``. Defaults ``None`` are filled by :func:`resolve_arguments`
    (they depend on ``--quick``)."""
    _add_problem_arguments(parser, n_seeds=n_seeds, problems=problems)
    _add_model_arguments(parser, nu=nu, beta=beta)
    _add_run_arguments(parser)


def _add_problem_arguments(parser, *, n_seeds, problems):
    """What is run: the problems, the seeds and the rounds."""
    parser.add_argument(
        "--problems",
        nargs="+",
        choices=PROBLEMS,
        default=list(problems),
        help=f"problems to run (default: {' '.join(problems)})",
    )
    parser.add_argument(
        "--n-seeds", type=int, default=None, help=f"runs per policy (default {n_seeds})"
    )
    parser.add_argument(
        "--n-rounds",
        type=int,
        nargs="+",
        default=None,
        help="rounds per run, one value per problem in --problems order, or one for "
        "all (default: digits 1797, synthetic 2000)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="random_state given to compare"
    )


def _add_model_arguments(parser, *, nu, beta):
    """The policies' parameters and their training."""
    parser.add_argument(
        "--alpha",
        type=float,
        nargs="+",
        default=[0.01],
        help="lambda of NeuralTS/NeuralUCB (paper grid 1, 0.1, 0.01, 0.001); several "
        "values run each and the checks use the best",
    )
    parser.add_argument(
        "--nu",
        type=float,
        nargs="+",
        default=list(nu),
        help="NeuralTS posterior scale (sample std = nu sigma; paper grid 1e-1..1e-5; "
        f"default {' '.join(map(str, nu))})",
    )
    parser.add_argument(
        "--beta",
        type=float,
        nargs="+",
        default=list(beta),
        help="NeuralUCB width multiplier (index = f + beta sigma; default "
        f"{' '.join(map(str, beta))})",
    )
    parser.add_argument(
        "--learning-rate",
        type=float,
        default=5e-3,
        help="SGD step on the mean loss (default 5e-3). Gradient descent needs a step "
        "below 2 / |grad f|^2 on a buffer dominated by one context, and |grad f|^2 is "
        "about 2m at theta_0 (up to 300 for m = 100 on mirrored digits rows): 1e-2 "
        "diverges on some seeds; the paper's 1e-3 barely moves the network in 1797 "
        "rounds",
    )
    parser.add_argument(
        "--hidden",
        type=int,
        nargs="+",
        default=[100],
        help="hidden layer sizes (paper: one layer of 100)",
    )
    parser.add_argument(
        "--n-steps",
        type=int,
        default=None,
        help="gradient steps per training, J (default 100, --quick 10)",
    )
    parser.add_argument(
        "--max-train-rounds",
        type=int,
        default=1000,
        help="freeze the networks (and U) after this many rounds; 0 trains to the end "
        "(default 1000, the paper's cut-off)",
    )
    parser.add_argument(
        "--no-mirror",
        dest="mirror",
        action="store_false",
        help="feed the neural policies the raw unit-norm rows (note 000, A13) instead "
        "of [x; x] / (sqrt(2) ||x||), the theory's input on which f(x; theta_0) = 0",
    )


def _add_run_arguments(parser):
    """How the runs are run: the smoke test, the processes and the threads."""
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: 2 seeds, 150 rounds, 10 gradient steps per training",
    )
    parser.add_argument(
        "--n-jobs", type=int, default=1, help="parallel runs (joblib, loky backend)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads of each run, inline or in a worker: compare's n_threads "
        "(default 1; the same count whatever --n-jobs, so results do not change "
        "with it)",
    )
    parser.add_argument(
        "--progress", action="store_true", help="progress bar over the runs"
    )


def resolve_arguments(parser, args, *, n_seeds, quick_seeds=2):
    """Fill the ``--quick``-dependent defaults and the per-problem rounds."""
    if args.n_seeds is None:
        args.n_seeds = quick_seeds if args.quick else n_seeds
    if args.n_steps is None:
        args.n_steps = 10 if args.quick else 100
    table = QUICK_ROUNDS if args.quick else FULL_ROUNDS
    if args.n_rounds is None:
        rounds = [table[p] for p in args.problems]
    elif len(args.n_rounds) == 1:
        rounds = args.n_rounds * len(args.problems)
    elif len(args.n_rounds) == len(args.problems):
        rounds = args.n_rounds
    else:
        parser.error("--n-rounds takes one value, or one per problem in --problems")
    args.rounds = dict(zip(args.problems, rounds, strict=True))
    if args.n_seeds < 2:
        parser.error("--n-seeds must be at least 2 (the tables report a std)")
    if args.threads < 1:
        parser.error("--threads must be positive")
    return args


# ------------------------------------------------------------------- policies
def _fmt(value):
    return f"{value:g}"


def family(name):
    """The policy class of a table label (``"NeuralTS a=0.01 nu=0.001"``)."""
    return name.split(" ", 1)[0]


def neural_settings(args):
    """Constructor arguments shared by the neural policies (note 000, 3.2)."""
    return dict(
        # the paper's schedule: every round, full batch, the whole history (the
        # defaults train mini-batches of a bounded buffer every 10 rounds)
        **NeuralTS.PAPER_SCHEDULE,
        hidden_layer_sizes=tuple(args.hidden),
        standardize=False,  # the paper's inputs, as given
        n_steps=args.n_steps,
        learning_rate=args.learning_rate,
        covariance="diag",
        max_train_rounds=args.max_train_rounds or None,
    )


def neural_policies(args, *, epsilons=()):
    """NeuralTS and NeuralUCB over the grid of ``--alpha`` x ``--nu``/``--beta``,
    and neural epsilon-greedy for each of ``epsilons``, by table label; each behind a
    :class:`MirrorNormalizer` unless ``--no-mirror``."""
    out = _neural_policies(args, epsilons)
    if args.mirror:
        out = {k: make_bandit_pipeline(MirrorNormalizer(), p) for k, p in out.items()}
    return out


def _neural_policies(args, epsilons):
    common = neural_settings(args)
    out = {}
    for alpha in args.alpha:
        for nu in args.nu:
            out[f"NeuralTS a={_fmt(alpha)} nu={_fmt(nu)}"] = NeuralTS(
                alpha=alpha, nu=nu, **common
            )
    for alpha in args.alpha:
        for beta in args.beta:
            out[f"NeuralUCB a={_fmt(alpha)} beta={_fmt(beta)}"] = NeuralUCB(
                alpha=alpha, beta=beta, **common
            )
    for eps in epsilons:
        common_eg = {k: v for k, v in common.items() if k != "covariance"}
        out[f"NeuralEpsilonGreedy a={_fmt(args.alpha[0])} eps={_fmt(eps)}"] = (
            NeuralEpsilonGreedy(alpha=args.alpha[0], epsilon=eps, **common_eg)
        )
    return out


def settings_line(args):
    """The neural settings, for the header."""
    return (
        f"neural  : hidden={tuple(args.hidden)}, n_steps (J)={args.n_steps}, "
        f"learning_rate={_fmt(args.learning_rate)}, reduction=mean, "
        f"covariance=diag, warm_start=True, alpha in "
        f"{[_fmt(a) for a in args.alpha]}, nu (TS) in {[_fmt(v) for v in args.nu]}, "
        f"beta (UCB) in {[_fmt(b) for b in args.beta]}, "
        f"max_train_rounds={args.max_train_rounds}, inputs "
        f"{'[x; x] / (sqrt(2) ||x||) (MirrorNormalizer)' if args.mirror else 'raw'}"
    )


# ------------------------------------------------------------- machine, runs
def _torch_threads():
    return torch.get_num_threads()


def parallel_context(args):
    """joblib context of the runs: loky workers started with ``--threads`` threads.

    The thread count that decides the arithmetic is set per run by ``compare``
    (its ``n_threads``, see :func:`compare_options`), the same inline and in a
    worker; this context only starts the loky workers with the thread-count
    environment variables at ``--threads`` too, so nothing oversubscribes before
    a run sets its count.
    """
    if args.n_jobs == 1:
        return nullcontext()
    return parallel_config(backend="loky", inner_max_num_threads=args.threads)


def compare_options(args):
    """Keyword arguments of ``compare``: ``compare(..., **compare_options(args))``.

    ``n_jobs`` is ``--n-jobs`` and ``n_threads`` is ``--threads``. Float32 training
    sums in an order set by the torch thread count, so runs on 2 and on 8 threads
    drift apart by ulps and can then pick different arms; a fixed
    ``n_threads`` per run makes a seed's result the same for every ``--n-jobs``.
    """
    return {"n_jobs": args.n_jobs, "n_threads": args.threads}


def print_header(args):
    """Set the torch threads, then print the command and the machine."""
    torch.set_num_threads(args.threads)
    import sklearn

    if args.n_jobs == 1:
        worker_threads = torch.get_num_threads()
    else:
        with parallel_context(args):
            probes = Parallel(n_jobs=args.n_jobs)(
                delayed(_torch_threads)() for _ in range(4)
            )
            worker_threads = ",".join(str(t) for t in sorted(set(probes)))
    print("command :", " ".join([os.path.basename(sys.executable), *sys.argv]))
    print(
        f"machine : {platform.platform()}, {platform.processor() or 'cpu'}, "
        f"{os.cpu_count()} cores, load avg {os.getloadavg()[0]:.1f} | torch "
        f"{torch.__version__}, {torch.get_num_threads()} thread(s) here, "
        f"{worker_threads} per worker, n_jobs={args.n_jobs} | numpy "
        f"{np.__version__} | sklearn {sklearn.__version__}"
    )


# --------------------------------------------------------------------- checks
class Checks:
    """Collects and prints PASS/FAIL lines."""

    def __init__(self):
        self.rows = []

    def __call__(self, claim, ok, detail):
        self.rows.append((claim, bool(ok), detail))
        print(f"  [{'PASS' if ok else 'FAIL'}] {claim}: {detail}")

    def report(self):
        n_pass = sum(ok for _, ok, _ in self.rows)
        print(f"\n{n_pass}/{len(self.rows)} checks passed")
        return n_pass == len(self.rows)


def mean_std(values):
    """``mean +- std`` (sample std over seeds)."""
    values = np.asarray(values, dtype=float)
    std = values.std(ddof=1) if values.size > 1 else float("nan")
    return f"{values.mean():.1f} +- {std:.1f}"
