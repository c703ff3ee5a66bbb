"""Time per update of an ensemble of the papers' network against the ensemble size.

One update is one training of every member: ``n_steps`` full-batch plain-SGD steps
of the proximal squared loss (Zhang et al. 2021, "Neural Thompson Sampling", eq. 2.3,
``reduction="mean"``) on a buffer of ``n_rows`` digits rows (sklearn's load_digits,
rows l2-normalised, d = 64, K = 10 arms pulled at random, shared contexts through the
block-aware disjoint encoding), one hidden layer of m = 100, each member on the
rewards plus its own stored Gaussian noise as in Neural ensemble sampling (Sun, Wang
and Xu 2025, "Provable Anytime Ensemble Sampling Algorithms in Nonlinear Contextual
Bandits"). Three ways are timed in the same run, from the same parameters:

- ``stacked``: :func:`skbandit.networks._ensemble.ensemble_gradient_descent` on one
  :class:`~skbandit.networks._ensemble.StackedBanditMLP` (hand-written backward);
- ``autograd``: the same stacked steps with autograd's backward, to show why the
  hand-written one was chosen (``--no-autograd`` skips it);
- ``loop``: the reference, a Python loop over ``M`` skorch nets, each trained by
  :func:`skbandit.networks.proximal_gradient_descent`.

Each time is the best of ``--repeats`` updates (the least disturbed by other work
on a shared machine); ``max diff`` is the largest difference between the members
after one stacked update and after one loop update (float32 rounding). Run::

    .venv/bin/python benchmarks/speed/ensemble_training.py --threads 1 2
"""
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.preprocessing import normalize

from skbandit.networks import (
    get_flat_parameters,
    initialize_net,
    make_bandit_net,
    proximal_gradient_descent,
)
from skbandit.networks._ensemble import StackedBanditMLP, ensemble_gradient_descent

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common.machine import cpu_name  # noqa: E402


def best_times(ways, repeats):
    """The fastest of ``repeats`` calls of each ``update``, each from the same start.

    The ways take turns, so that a change in the load of a shared machine falls on
    all of them alike.
    """
    times = {name: [] for name in ways}
    for _ in range(repeats):
        for name, (update, restore) in ways.items():
            restore()
            start = time.perf_counter()
            update()
            times[name].append(time.perf_counter() - start)
            restore()
    return {name: min(t) for name, t in times.items()}


def autograd_update(stacked, X, actions, targets, theta0, coef, lr, n_steps):
    """The stacked steps with autograd's backward (init="ntk": no biases)."""
    M, (m, Kd) = stacked.n_members, stacked.layers[0].weight.shape[1:]
    K = stacked.n_actions
    rows = stacked.pack(X, actions)
    arms, Xt = rows["arms"], rows["X"]
    T, s, d = Xt.shape
    y = targets.new_zeros(M, T * s)
    y[:, rows["index"]] = targets
    c = targets.new_zeros(T * s)
    c[rows["index"]] = 1.0 / X.shape[0]
    params = list(stacked.parameters())
    for _ in range(n_steps):
        V = params[0].view(M, m, K, Kd // K).permute(2, 3, 0, 1)[arms]
        z = torch.bmm(Xt, V.reshape(T, d, M * m)).view(T * s, M, m).transpose(0, 1)
        for W in params[1:]:
            z = torch.bmm(torch.relu(z), W.transpose(1, 2))
        loss = (c * (z[..., 0] * stacked.scale - y).square()).sum() / 2
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g, p0 in zip(params, grads, theta0, strict=True):
                p.sub_(g + coef * (p - p0), alpha=lr)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-models", type=int, nargs="+", default=[1, 5, 10, 25])
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    parser.add_argument("--n-rows", type=int, default=1000)
    parser.add_argument("--n-steps", type=int, default=100)
    parser.add_argument(
        "--hidden", type=int, nargs="+", default=[100], help="hidden widths"
    )
    parser.add_argument("--alpha", type=float, default=1e-3)
    parser.add_argument("--learning-rate", type=float, default=1e-2)
    parser.add_argument("--noise", type=float, default=0.1, help="sigma_R")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-autograd", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    X, label = load_digits(return_X_y=True)
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(X))[: args.n_rows]
    X, label = normalize(X[order]).astype(np.float32), label[order]
    n, d = X.shape
    K = 10
    actions = rng.integers(K, size=n)
    rewards = (actions == label).astype(np.float32)
    X, actions = torch.as_tensor(X), torch.as_tensor(actions)
    settings = dict(alpha=args.alpha, n_steps=args.n_steps)
    print(f"command : python {' '.join(sys.argv)}")
    print(
        f"machine : {platform.platform()}, {cpu_name()}, torch {torch.__version__}, "
        f"python {platform.python_version()}"
    )
    print(
        f"setting : digits rows n = {n}, d = {d}, K = {K} (disjoint, shared "
        f"contexts), hidden {tuple(args.hidden)}, {args.n_steps} full-batch steps "
        "per update, "
        f"lr = {args.learning_rate}, alpha = {args.alpha}, reduction = mean, "
        f"best of {args.repeats}"
    )
    header = (
        f"{'threads':>7} {'M':>3} | {'stacked s':>9} {'ms/member':>9} {'T(M)/T(1)':>9}"
        f" | {'autograd s':>10} | {'loop s':>7} {'ms/member':>9} {'loop/stacked':>12}"
        f" | {'max diff':>8}"
    )
    print(header)
    print("-" * len(header))
    for threads in args.threads:
        torch.set_num_threads(threads)
        first = None
        for M in args.n_models:
            torch.manual_seed(args.seed)
            stacked = StackedBanditMLP(
                d, K, M, hidden_layer_sizes=tuple(args.hidden), disjoint=True
            )
            theta0 = [p.detach().clone() for p in stacked.parameters()]
            noise = torch.as_tensor(rng.normal(0, args.noise, (M, n)), dtype=X.dtype)
            targets = torch.as_tensor(rewards) + noise  # stored per-member noise

            def restore(stacked=stacked, theta0=theta0):
                with torch.no_grad():
                    for p, p0 in zip(stacked.parameters(), theta0, strict=True):
                        p.copy_(p0)

            def update(stacked=stacked, theta0=theta0, targets=targets):
                ensemble_gradient_descent(
                    stacked, X, actions, targets, None, theta0,
                    learning_rate=args.learning_rate, **settings,
                )  # fmt: skip

            ways = {"stacked": (update, restore)}
            if not args.no_autograd:
                coef = stacked.scale**2 * args.alpha / n

                def auto(stacked=stacked, theta0=theta0, targets=targets, coef=coef):
                    autograd_update(
                        stacked, X, actions, targets, theta0, coef,
                        args.learning_rate, args.n_steps,
                    )  # fmt: skip

                ways["autograd"] = (auto, restore)
            nets = []
            for j in range(M):
                net = make_bandit_net(
                    d,
                    K,
                    hidden_layer_sizes=tuple(args.hidden),
                    disjoint=True,
                    learning_rate=args.learning_rate,
                )
                nets.append(initialize_net(net, j))
                nets[-1].module_.load_state_dict(stacked.member(j).state_dict())
            starts = [
                [p.detach().clone() for p in net.module_.parameters()] for net in nets
            ]

            def restore_loop(nets=nets, starts=starts):
                with torch.no_grad():
                    for net, start in zip(nets, starts, strict=True):
                        for p, p0 in zip(net.module_.parameters(), start, strict=True):
                            p.copy_(p0)

            def loop(nets=nets, starts=starts, targets=targets):
                for j, net in enumerate(nets):
                    proximal_gradient_descent(
                        net, X, actions, targets[j], None, starts[j], **settings
                    )

            ways["loop"] = (loop, restore_loop)
            times = best_times(ways, args.repeats)
            t_stacked, t_loop = times["stacked"], times["loop"]
            t_auto = times.get("autograd", float("nan"))
            first = t_stacked if first is None else first
            # The same maths: one update each way gives the same members.
            update()
            loop()
            diff = max(
                float(
                    (
                        get_flat_parameters(stacked.member(j))
                        - get_flat_parameters(net.module_)
                    )
                    .abs()
                    .max()
                )
                for j, net in enumerate(nets)
            )
            print(
                f"{threads:>7} {M:>3} | {t_stacked:>9.3f} {1e3 * t_stacked / M:>9.1f} "
                f"{t_stacked / first:>9.2f} | {t_auto:>10.3f} | {t_loop:>7.3f} "
                f"{1e3 * t_loop / M:>9.1f} {t_loop / t_stacked:>12.2f} | {diff:>8.1e}",
                flush=True,
            )


if __name__ == "__main__":
    main()
