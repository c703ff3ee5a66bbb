"""Linear policies in batches: skbandit against a numpy per-arm batch LinUCB.

100 batches of 1,000 rows, d = 20 features, K = 10 arms, shared contexts (one ridge
model per arm): each batch is ``select`` on its 1,000 rows, then ``partial_fit`` on
their rewards. The reference is disjoint LinUCB as batch libraries write it (MABWiser,
contextualbandits): per batch, one inverse per arm, the scores by one GEMM per arm,
and the learning by ``X_k^T X_k`` and ``X_k^T r_k`` summed per arm. LinTS and
EpsilonGreedy get references of the same form (LinTS: one Cholesky factor per arm
and per batch, one Gaussian draw per row and arm; epsilon-greedy: the ridge means and
a uniform arm with probability epsilon). LinES gets a numpy batch Lin-ES (the same
ridge state, plus per arm the ``m`` perturbed moments ``X_k^T Z_k``, with ``Z`` drawn
once per row and kept in a preallocated array; each row scored by its member through
one GEMM against all members) and is also set against the LinUCB reference, which
does less: no ``m`` draws per row. LinPHE is left out: it redraws a pseudo-reward
for every stored observation in every round (Kveton, Szepesvari,
Ghavamzadeh, Boutilier, "Perturbed-history exploration in stochastic linear
bandits", 2019, Algorithm 1), so a batch
costs its rows times the history, which no batch reference shares.
The target (docs/performance.md): every ridge-block policy within 1.5x of its reference.

Both BLAS settings are timed, on a loaded machine (``--busy`` busy-looping processes
beside the timings): one BLAS thread set by the user (``threadpool_limits(1)``) and
the machine's default threads, where skbandit runs its small work on one thread by
itself (:mod:`skbandit.utils.threads`) and the references run as numpy does.

Run::

    python benchmarks/speed/linear_batches.py [--n-batches 100] [--batch-size 1000]
        [--repeat 3] [--busy 1]
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from time import process_time

import numpy as np
from sklearn.base import clone

from skbandit.policies import EpsilonGreedy, LinES, LinTS, LinUCB

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common/
from common.load import add_busy_argument, blas_settings, busy_machine  # noqa: E402
from common.machine import print_machine  # noqa: E402

D, K, ALPHA, BETA, NU, EPSILON = 20, 10, 1.0, 1.0, 0.1, 0.01
M, SIGMA = 25, 0.3  # LinES: members, perturbation scale (its prior perturbed too)


def make_data(n_rows, seed=0):
    """Contexts and the mean rewards of every arm, linear in the contexts and inside
    [0, 1] (LinPHE's pseudo-rewards assume bounded rewards; the draws are Bernoulli)."""
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n_rows, D)) / np.sqrt(D)
    theta = rng.standard_normal((K, D))
    theta *= 0.4 / np.linalg.norm(theta, axis=1, keepdims=True)
    return X, 0.5 + X @ theta.T


def _learn(A, b, X, actions, rewards):
    """Add each arm's rows: ``A_k += X_k^T X_k``, ``b_k += X_k^T r_k``."""
    for k in range(K):
        rows = actions == k
        Xk = X[rows]
        A[k] += Xk.T @ Xk
        b[k] += Xk.T @ rewards[rows]


def _numpy_batches(X, mean_rewards, batch_size, seed, choose):
    """The references' batch loop; ``choose(A_inv, theta, Xb, rng)`` picks the arms."""
    rng = np.random.default_rng(seed)
    noise = np.random.RandomState(seed + 1)
    A = np.repeat(ALPHA * np.eye(D)[None], K, axis=0)
    b = np.zeros((K, D))
    actions = np.empty(X.shape[0], dtype=np.int64)
    for start in range(0, X.shape[0], batch_size):
        Xb = X[start : start + batch_size]
        A_inv = np.linalg.inv(A)
        theta = np.einsum("kij,kj->ki", A_inv, b)
        chosen = choose(A_inv, theta, Xb, rng)
        rows = np.arange(start, start + Xb.shape[0])
        rewards = (noise.random_sample(rows.size) < mean_rewards[rows, chosen]) * 1.0
        _learn(A, b, Xb, chosen, rewards)
        actions[rows] = chosen
    return actions


def _argmax(scores, rng):
    """Row-wise argmax, ties uniform at random (the first batch: all arms tie)."""
    best = scores.max(axis=1, keepdims=True)
    ties = scores >= best
    if np.count_nonzero(ties) == scores.shape[0]:
        return np.argmax(scores, axis=1)
    return np.argmax(np.where(ties, rng.random(scores.shape), -1.0), axis=1)


def _ucb_choice(A_inv, theta, Xb, rng):
    scores = Xb @ theta.T
    for k in range(K):  # one GEMM per arm for the widths
        scores[:, k] += BETA * np.sqrt(np.einsum("ij,ij->i", Xb @ A_inv[k], Xb))
    return _argmax(scores, rng)


def _ts_choice(A_inv, theta, Xb, rng):
    chol = np.linalg.cholesky(A_inv)
    scores = np.empty((Xb.shape[0], K))
    for k in range(K):  # theta_k + nu L_k z, one draw per row
        draws = theta[k] + NU * rng.standard_normal((Xb.shape[0], D)) @ chol[k].T
        scores[:, k] = np.einsum("ij,ij->i", Xb, draws)
    return np.argmax(scores, axis=1)


def _greedy_choice(A_inv, theta, Xb, rng):
    chosen = _argmax(Xb @ theta.T, rng)
    explore = rng.random(Xb.shape[0]) < EPSILON
    chosen[explore] = rng.integers(K, size=int(explore.sum()))
    return chosen


def _numpy_es_batches(X, mean_rewards, batch_size, seed):
    """Lin-ES in numpy batches: member ``j``'s moment is ``b + B^j``, with ``B^j``
    started at ``sqrt(alpha) sigma U^j`` and grown by ``X_k^T Z_k^j`` per arm."""
    rng, z_rng = np.random.default_rng(seed), np.random.default_rng(seed + 2)
    noise = np.random.RandomState(seed + 1)
    A = np.repeat(ALPHA * np.eye(D)[None], K, axis=0)
    b = np.zeros((K, D))
    B = np.sqrt(ALPHA) * SIGMA * z_rng.standard_normal((M, K, D))
    Z = np.empty((X.shape[0], M))  # every row's perturbations, kept
    actions = np.empty(X.shape[0], dtype=np.int64)
    for start in range(0, X.shape[0], batch_size):
        Xb = X[start : start + batch_size]
        n, rows = Xb.shape[0], np.arange(start, start + Xb.shape[0])
        coef = np.einsum("kij,mkj->mki", np.linalg.inv(A), b + B)
        members = rng.integers(M, size=n)
        scores = (Xb @ coef.reshape(M * K, D).T).reshape(n, M, K)
        chosen = _argmax(scores[np.arange(n), members], rng)
        rewards = (noise.random_sample(n) < mean_rewards[rows, chosen]) * 1.0
        Z[rows] = SIGMA * z_rng.standard_normal((n, M))
        _learn(A, b, Xb, chosen, rewards)
        for k in range(K):
            B[:, k] += Z[rows][chosen == k].T @ Xb[chosen == k]
        actions[rows] = chosen
    return actions


def _skbandit_batches(policy, X, mean_rewards, batch_size, seed):
    noise = np.random.RandomState(seed + 1)
    actions = np.empty(X.shape[0], dtype=np.int64)
    for start in range(0, X.shape[0], batch_size):
        Xb = X[start : start + batch_size]
        chosen = policy.select(Xb)
        rows = np.arange(start, start + Xb.shape[0])
        rewards = (noise.random_sample(rows.size) < mean_rewards[rows, chosen]) * 1.0
        policy.partial_fit(Xb, chosen, rewards)
        actions[rows] = chosen
    return actions


REFERENCES = {
    "ucb": partial(_numpy_batches, choose=_ucb_choice),
    "ts": partial(_numpy_batches, choose=_ts_choice),
    "greedy": partial(_numpy_batches, choose=_greedy_choice),
    "es": _numpy_es_batches,
}


def policies(seed):
    """``(name, policy, reference key)`` of every ridge-block policy timed."""
    common = {"n_actions": K, "alpha": ALPHA, "fit_intercept": False}
    return [
        ("LinUCB", LinUCB(beta=BETA, random_state=seed, **common), "ucb"),
        ("LinTS", LinTS(nu=NU, random_state=seed, **common), "ts"),
        (
            "EpsilonGreedy",
            EpsilonGreedy(
                epsilon=EPSILON, schedule="constant", random_state=seed, **common
            ),
            "greedy",
        ),
        (
            "LinES",
            LinES(n_models=M, perturbation_scale=SIGMA, random_state=seed, **common),
            "es",
        ),
    ]


def regret(actions, mean_rewards):
    best = mean_rewards.max(axis=1)
    return float(np.sum(best - mean_rewards[np.arange(actions.size), actions]))


def _best_alternating(runs, repeat):
    """Best CPU time of each of ``runs`` (callables), timed in turn ``repeat`` times,
    so that a shared machine's load weighs on all alike; with the last outputs."""
    best = [float("inf")] * len(runs)
    outs = [None] * len(runs)
    for _ in range(repeat):
        for i, run in enumerate(runs):
            start = process_time()
            outs[i] = run()
            best[i] = min(best[i], process_time() - start)
    return best, outs


def _timed_table(X, mean_rewards, size, seed, repeat):
    """Time every reference and policy (alternating), print their table and return
    ``[(name, ratio to its reference)]``."""
    entries = policies(seed)
    runs = [
        (lambda ref=ref: ref(X, mean_rewards, size, seed))
        for ref in REFERENCES.values()
    ] + [
        (lambda p=policy: _skbandit_batches(clone(p), X, mean_rewards, size, seed))
        for _, policy, _ in entries
    ]
    times, outs = _best_alternating(runs, repeat)
    ref_time = dict(zip(REFERENCES, times[: len(REFERENCES)], strict=True))
    header = (
        f"{'implementation':<26}{'seconds':>9}{'regret':>10}{'reference':>20}"
        f"{'ratio':>7}"
    )
    print(header)
    print("-" * len(header))
    for key, t, out in zip(REFERENCES, times, outs, strict=False):
        name = f"numpy batch {key}"
        print(f"{name:<26}{t:>9.3f}{regret(out, mean_rewards):>10.1f}")
    verdicts = []
    ours = zip(entries, times[len(REFERENCES) :], outs[len(REFERENCES) :], strict=True)
    for (name, _, key), t, out in ours:
        ratio = t / ref_time[key]
        verdicts.append((name, ratio))
        print(
            f"{'skbandit ' + name:<26}{t:>9.3f}{regret(out, mean_rewards):>10.1f}"
            f"{'numpy batch ' + key:>20}{ratio:>7.2f}"
        )
    print("-" * len(header))
    es_to_ucb = times[-1] / ref_time["ucb"]
    print(f"(LinES: {es_to_ucb:.2f}x the LinUCB reference, which draws no m per row)")
    return verdicts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-batches", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    add_busy_argument(parser)
    args = parser.parse_args(argv)

    print_machine()
    n_rows, size, seed = args.n_batches * args.batch_size, args.batch_size, args.seed
    print(
        f"problem : disjoint ridge models, d={D}, K={K}, alpha={ALPHA}, "
        f"{args.n_batches} batches of {size} rows, select then learn, "
        f"best of {args.repeat} (CPU time, interleaved), "
        f"{args.busy} busy process(es) beside"
    )
    X, mean_rewards = make_data(n_rows, seed)
    verdicts = {}
    with busy_machine(args.busy):
        for setting, limit in blas_settings():
            print(f"\n{setting}:")
            with limit():
                verdicts[setting] = _timed_table(
                    X, mean_rewards, size, seed, args.repeat
                )
    print()
    for setting, results in verdicts.items():
        for name, ratio in results:
            verdict = "PASS" if ratio <= 1.5 else "FAIL"
            print(
                f"{setting}: {name} {ratio:.2f}x its reference (target <= 1.5): "
                f"{verdict}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
