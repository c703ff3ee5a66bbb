"""skbandit's NeuralTS against a plain-torch reference, in one process (issue 10).

The setting of issue 10's CPU target: NeuralTS at paper 000's settings (one hidden
layer of m = 100; J = 100 full-batch steps on all history every round; diagonal U;
alpha = 1e-3, nu = 1, learning_rate = 1e-2) on the digits bandit, played online one
round at a time (``select`` then ``partial_fit``). The data is prepared as in
``speed/neural_ts.py``: ``load_digits`` rows l2-normalised to float32, shuffled
with ``RandomState(seed)``, cycled past 1797 rounds; shared contexts, reward 1 for the
true class, so the regret counts mistakes.

Two references, the strong one first (PERFORMANCE.md: a weak reference hides a
slowdown). ``lean`` is a lean plain-torch NeuralTS kept outside the package, read
from the file given as ``--lean-path`` (or ``$SKBANDIT_LEAN_REFERENCE``; its disjoint
learner class ``LeanNeuralTSDisjoint``:
block-aware first layer, closed-form per-arm gradient features, a hand-written
forward/backward with in-place updates, preallocated buffers; a network with biases
and PyTorch's default initialisation, on the raw 64 inputs). ``reference`` is
``speed/reference_neural_ts.py`` (plain torch, autograd, block-aware first layer,
same maths and seeding as skbandit), about 4.5x slower than ``lean``. The
implementations run in this process, in turn, alternating their order when
``--repeats`` > 1; the table gives the medians of the repeats (wall
time, and the process's CPU time, steadier on a shared machine) and the fastest run.
Each is first warmed up on two untimed rounds: skorch's first ``initialize`` imports
torch._dynamo (2-5 s, once per process), which is no per-round cost. The arithmetic
floor is ``neural_ts.arithmetic_floor``: the two GEMMs a training step cannot
avoid, timed alone at the same shapes. Runs (``LEAN`` is the lean reference's file)::

    # issue 23's "skbandit / lean" at T = 600, one thread (both references)
    .venv/bin/python benchmarks/speed/neural_ts_against_reference.py --threads 1 \
        --lean-path LEAN
    # against the lean reference only, three alternating runs of each
    .venv/bin/python benchmarks/speed/neural_ts_against_reference.py --threads 1 \
        --implementation skbandit lean --repeats 3 --lean-path LEAN
    # the same on older code: a checkout of it first on the path
    PYTHONPATH=OLD_CHECKOUT .venv/bin/python \
        benchmarks/speed/neural_ts_against_reference.py --lean-path LEAN
    # the full digits run at two threads
    .venv/bin/python benchmarks/speed/neural_ts_against_reference.py --n-rounds 1797 \
        --threads 2 --implementation skbandit lean --lean-path LEAN
"""
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import os
import platform
import sys
import time

import numpy as np
import torch
from reference_neural_ts import ReferenceNeuralTS  # the script's folder
from sklearn.datasets import load_digits
from sklearn.preprocessing import normalize

IMPLEMENTATIONS = ("skbandit", "lean", "reference")
#: Where the lean reference's file is, unless ``--lean-path`` says.
LEAN_PATH = os.environ.get("SKBANDIT_LEAN_REFERENCE")


def load_lean(path):
    """The lean reference's disjoint learner class, from its file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("lean_neural_ts", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LeanNeuralTSDisjoint


def digits_rounds(n_rounds, seed):
    """``speed/neural_ts.py``'s data: normalised float32 rows, shuffled, cycled."""
    X, y = load_digits(return_X_y=True)
    X = normalize(X).astype(np.float32)
    order = np.resize(np.random.RandomState(seed).permutation(len(X)), n_rounds)
    return X[order], y[order]


def floor_seconds(n_rounds, hidden, n_steps, d):
    """The arithmetic floor of ``speed/neural_ts.py`` (imported when it imports)."""
    try:
        from neural_ts import arithmetic_floor
    except ImportError:  # skbandit's private modules moved: the same timing, here
        arithmetic_floor = _arithmetic_floor
    return arithmetic_floor(n_rounds, hidden, n_steps, "cpu", d=d)


def _arithmetic_floor(n_trainings, hidden, n_steps, device, d=64, K=10, points=12):
    sizes = np.unique(np.linspace(1, n_trainings, points).astype(int))
    per_step = []
    for n in sizes:
        X = torch.randn(K, -(-n // K), d)
        Xt, W = X.transpose(1, 2), torch.randn(K, d, hidden)
        delta = torch.randn(K, X.shape[1], hidden)
        for _ in range(3):
            torch.bmm(X, W), torch.bmm(Xt, delta)
        reps = max(5, int(2e7 / max(n * d * hidden, 1)))
        start = time.perf_counter()
        for _ in range(reps):
            torch.bmm(X, W), torch.bmm(Xt, delta)
        per_step.append((time.perf_counter() - start) / reps)
    return float(np.interp(np.arange(1, n_trainings + 1), sizes, per_step).sum()) * (
        n_steps
    )


def make_policy(name, args):
    """The online loop's two calls, ``select(x) -> arm`` and ``update(x, arm, r)``."""
    if name == "lean":
        torch.manual_seed(args.seed)
        lean = load_lean(args.lean_path)(
            64, 10, args.n_rounds, args.hidden, args.alpha, args.nu,
            lr=args.learning_rate, steps=args.n_steps,
        )  # fmt: skip

        def lean_update(x, a, r):
            lean.train(torch.from_numpy(x[0]), a, r)

        return (lambda x: lean.select(torch.from_numpy(x[0]))), lean_update
    if name == "reference":
        ref = ReferenceNeuralTS(
            10,
            64,
            hidden=args.hidden,
            alpha=args.alpha,
            nu=args.nu,
            n_steps=args.n_steps,
            learning_rate=args.learning_rate,
            features=args.features,
            penalty=args.penalty,
            random_state=args.seed,
        )
        return (lambda x: ref.select(x[0])), (lambda x, a, r: ref.update(x[0], a, r))
    from skbandit.policies import NeuralTS

    policy = NeuralTS(
        **{**NeuralTS.PAPER_SCHEDULE, "n_steps": args.n_steps},
        standardize=False,  # l2-normalised rows, as the reference sees them
        n_actions=10,
        hidden_layer_sizes=(args.hidden,),
        alpha=args.alpha,
        nu=args.nu,
        learning_rate=args.learning_rate,
        covariance="diag",
        random_state=args.seed,
    )

    def update(x, a, r):
        policy.partial_fit(x, np.array([a]), np.array([r]))

    return (lambda x: int(policy.select(x)[0])), update


def play(name, X, y, args):
    """One online run: wall seconds (total, select, update), mistakes, CPU seconds."""
    select, update = make_policy(name, args)
    T = X.shape[0]
    t_select = t_update = 0.0
    mistakes = 0
    start, cpu = time.perf_counter(), time.process_time()
    for t in range(T):
        x = X[t : t + 1]
        t0 = time.perf_counter()
        a = select(x)
        t1 = time.perf_counter()
        r = float(a == y[t])
        update(x, a, r)
        t_select += t1 - t0
        t_update += time.perf_counter() - t1
        mistakes += int(r == 0)
    total = time.perf_counter() - start
    return total, t_select, t_update, mistakes, time.process_time() - cpu


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def _parser():
    """The command line's options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rounds", type=int, default=600)
    parser.add_argument("--threads", type=int, choices=[1, 2], default=1)
    parser.add_argument(
        "--implementation",
        nargs="+",
        choices=IMPLEMENTATIONS,
        default=list(IMPLEMENTATIONS),
        help="which to run (all three by default)",
    )
    parser.add_argument(
        "--lean-path",
        default=LEAN_PATH,
        help="the lean reference's file (default: $SKBANDIT_LEAN_REFERENCE)",
    )
    parser.add_argument("--repeats", type=int, default=1, help="runs of each, medians")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hidden", type=int, default=100)
    parser.add_argument("--n-steps", type=int, default=100)
    parser.add_argument("--alpha", type=float, default=1e-3)
    parser.add_argument("--nu", type=float, default=1.0)
    parser.add_argument("--learning-rate", type=float, default=1e-2)
    parser.add_argument(
        "--features",
        choices=["closed", "func"],
        default="closed",
        help="the reference's per-arm tangent features: closed form or torch.func",
    )
    parser.add_argument(
        "--penalty",
        choices=["closed", "autograd"],
        default="closed",
        help="the reference's penalty gradient: added to .grad, or autograd's",
    )
    parser.add_argument(
        "--no-warmup",
        action="store_true",
        help="time the first run with its one-off costs (imports) included",
    )
    parser.add_argument("--no-floor", action="store_true", help="skip the floor")
    return parser


def _runs(names, X, y, args):
    """``(runs, warmup)``: each implementation's runs, alternating the order from
    one repeat to the next, and its one-off warm-up seconds."""
    warmup = {}
    if not args.no_warmup:  # one-off costs: skorch's first initialize imports dynamo
        for name in names:
            start = time.perf_counter()
            play(name, X[:2], y[:2], args)
            warmup[name] = time.perf_counter() - start
    runs = {name: [] for name in names}
    for i in range(args.repeats):
        for name in names if i % 2 == 0 else names[::-1]:
            runs[name].append(play(name, X, y, args))
            total, sel, upd, mistakes, cpu = runs[name][-1]
            print(
                f"  {name} run {i + 1}: {total:.2f} s wall, {cpu:.2f} s CPU, "
                f"{mistakes} mistakes",
                flush=True,
            )
    return runs, warmup


def _print_setting(names, args):
    """The command, the machine, the skbandit imported and the setting."""
    skbandit_file = "-"
    if "skbandit" in names:
        import skbandit

        skbandit_file = os.path.dirname(skbandit.__file__)
    print()
    print(f"command : {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(
        f"machine : {platform.platform()}, {cpu_model()}, {os.cpu_count()} cores, "
        f"torch {torch.__version__}, {torch.get_num_threads()} torch thread(s), "
        f"load avg {os.getloadavg()[0]:.1f}"
    )
    print(f"skbandit: {skbandit_file}")
    print(
        f"setting : NeuralTS, digits K=10 d=64, T={args.n_rounds}, m={args.hidden}, "
        f"J={args.n_steps}, diag U, alpha={args.alpha}, nu={args.nu}, "
        f"lr={args.learning_rate}, seed={args.seed}, reference features="
        f"{args.features}, penalty={args.penalty}, {args.repeats} repeat(s), medians"
    )


def _print_table(runs, floor, args):
    """Each implementation's medians; returns ``(medians, cpus)``: the median wall
    and CPU seconds, by implementation."""
    print()
    header = f"{'implementation':<16}{'total s':>10}{'select s':>10}{'update s':>10}"
    print(f"{header}{'CPU s':>8}{'min s':>8}{'mistakes':>10}{'/ floor':>9}")
    medians, cpus = {}, {}
    for name in runs:
        total, sel, upd = (
            float(np.median([r[j] for r in runs[name]])) for j in range(3)
        )
        cpus[name] = float(np.median([r[4] for r in runs[name]]))
        fastest = min(r[0] for r in runs[name])
        mistakes = sorted({r[3] for r in runs[name]})
        medians[name] = total
        over = f"{total / floor:>9.2f}" if floor else f"{'-':>9}"
        print(
            f"{name:<16}{total:>10.2f}{sel:>10.2f}{upd:>10.2f}{cpus[name]:>8.2f}"
            f"{fastest:>8.2f}{'/'.join(map(str, mistakes)):>10}{over}"
        )
    if floor:
        print(
            f"{'floor':<16}{floor:>10.2f}   (two GEMMs per step, {args.n_rounds} "
            "trainings, this machine)"
        )
    return medians, cpus


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    if "lean" in args.implementation and not args.lean_path:
        parser.error(
            "the lean reference runs from its file: pass --lean-path FILE (or set "
            "SKBANDIT_LEAN_REFERENCE), or leave lean out of --implementation"
        )
    torch.set_num_threads(args.threads)
    names = [name for name in IMPLEMENTATIONS if name in args.implementation]
    X, y = digits_rounds(args.n_rounds, args.seed)
    runs, warmup = _runs(names, X, y, args)
    floor = (
        None
        if args.no_floor
        else floor_seconds(args.n_rounds, args.hidden, args.n_steps, X.shape[1])
    )
    _print_setting(names, args)
    medians, cpus = _print_table(runs, floor, args)
    for name, seconds in warmup.items():
        print(
            f"one-off warm-up of {name} (2 rounds, not in the table): {seconds:.2f} s"
        )
    if "skbandit" in medians:
        print()
    for reference in ("lean", "reference"):
        if "skbandit" in medians and reference in medians:
            ratio = medians["skbandit"] / medians[reference]
            by_cpu = cpus["skbandit"] / cpus[reference]
            target = " (issue 23 target <= 0.8x)" if reference == "lean" else ""
            print(
                f"skbandit / {reference} = {ratio:.2f}x wall, {by_cpu:.2f}x CPU "
                f"time{target}"
            )


if __name__ == "__main__":
    main()
