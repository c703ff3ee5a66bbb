"""Exact maths and behaviour of KernelUCB and KernelTS.

The maths is checked on the contexts as given: ``standardize=False`` (the online
standardisation is tested in ``tests/utils/test_standardize.py``).
"""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, Matern

from skbandit.exceptions import NumericalError
from skbandit.policies import KernelTS, KernelUCB, RandomPolicy


def _data(seed, n=200, d=3, K=3, per_arm=False):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, K, d) if per_arm else (n, d))
    actions = rng.randint(K, size=n)
    rewards = rng.normal(size=n)
    return X, actions, rewards


def _direct(policy, X_hist, w, y, Xq):
    """Posterior of one block by a direct solve, unit or given weights."""
    K = policy._kernel(X_hist, X_hist)
    M = K + policy.alpha * np.diag(1.0 / w)
    kq = policy._kernel(Xq, X_hist)
    mean = kq @ np.linalg.solve(M, y)
    var = policy._kernel_diag(Xq) - np.einsum(
        "nt,nt->n", kq, np.linalg.solve(M, kq.T).T
    )
    return mean, var


@pytest.mark.parametrize("kernel", ["rbf", "laplacian_l2"])
@pytest.mark.parametrize("per_arm", [False, True])
def test_incremental_inverse_matches_direct_solve(kernel, per_arm):
    X, actions, rewards = _data(0, n=150, per_arm=per_arm)
    w = np.random.RandomState(1).uniform(0.2, 3.0, size=len(rewards))
    policy = KernelUCB(standardize=False, n_actions=3, kernel=kernel, alpha=0.5)
    for i in range(0, len(X), 1 if per_arm else 4):  # one-row and 4-row batches
        s = slice(i, i + (1 if per_arm else 4))
        policy.partial_fit(X[s], actions[s], rewards[s], sample_weight=w[s])
    rows = X[np.arange(len(X)), actions] if per_arm else X
    blocks = np.zeros_like(actions) if per_arm else actions
    for b in range(policy._n_blocks):
        sel = blocks == b
        t = policy._counts[b]
        Z = rows[sel]
        M = policy._kernel(Z, Z) * np.sqrt(np.outer(w[sel], w[sel]))
        M += 0.5 * np.eye(t)
        assert_allclose(policy._inv[b, :t, :t], np.linalg.inv(M), atol=1e-8)
    Xq = _data(5, n=20, per_arm=per_arm)[0]
    mean, std = policy.predict_scores(Xq, return_std=True)
    for k in range(3):
        b = 0 if per_arm else k
        sel = blocks == b
        q = Xq[:, k] if per_arm else Xq
        m, v = _direct(policy, rows[sel], w[sel], rewards[sel], q)
        assert_allclose(mean[:, k], m, atol=1e-8)
        assert_allclose(std[:, k] ** 2, v, atol=1e-8)


def test_max_history_keeps_most_recent_rows():
    X, actions, rewards = _data(2, n=120, per_arm=True)
    capped = KernelUCB(standardize=False, kernel="laplacian_l2", max_history=25)
    for i in range(0, len(X), 3):
        capped.partial_fit(X[i : i + 3], actions[i : i + 3], rewards[i : i + 3])
    recent = slice(len(X) - 25, None)
    direct = KernelUCB(standardize=False, kernel="laplacian_l2").fit(
        X[recent], actions[recent], rewards[recent]
    )
    assert capped._counts[0] == 25
    for return_std in (False, True):
        assert_allclose(
            capped.predict_scores(X[:10], return_std=return_std),
            direct.predict_scores(X[:10], return_std=return_std),
            atol=1e-8,
        )


@pytest.mark.parametrize("gp_kernel", [RBF(length_scale=1.3), Matern(nu=1.5)])
def test_posterior_equals_sklearn_gp(gp_kernel):
    X, actions, rewards = _data(3, n=80)
    alpha = 0.3
    policy = KernelUCB(
        standardize=False, n_actions=3, kernel=gp_kernel, alpha=alpha
    ).fit(X, actions, rewards)
    Xq = _data(4, n=15)[0]
    mean, std = policy.predict_scores(Xq, return_std=True)
    for k in range(3):
        sel = actions == k
        gp = GaussianProcessRegressor(gp_kernel, alpha=alpha, optimizer=None)
        m, s = gp.fit(X[sel], rewards[sel]).predict(Xq, return_std=True)
        assert_allclose(mean[:, k], m, atol=1e-8)
        assert_allclose(std[:, k], s, atol=1e-8)


def test_builtin_kernels():
    # "rbf" is exp(-gamma d^2); "laplacian_l2" is exp(-||x - y||_2), not L1.
    a, b = np.array([[0.0, 0.0]]), np.array([[3.0, 4.0]])
    rbf = KernelUCB(standardize=False, n_actions=1, kernel="rbf", gamma=0.1).fit(
        a, [0], [0.0]
    )
    lap = KernelUCB(standardize=False, n_actions=1, kernel="laplacian_l2").fit(
        a, [0], [0.0]
    )
    assert_allclose(rbf._kernel(a, b), np.exp(-2.5))
    assert_allclose(lap._kernel(a, b), np.exp(-5.0))
    default = KernelUCB(standardize=False, n_actions=1).fit(a, [0], [0.0])
    assert_allclose(default._kernel(a, b), np.exp(-25.0 / 2))  # gamma = 1 / d


def test_variance_shrinks_at_repeated_context():
    x = np.array([[0.3, -0.2]])
    policy = KernelTS(standardize=False, n_actions=2, nu=1.0, random_state=0)
    policy.partial_fit(np.zeros((1, 2)) + 5, [1], [0.0])
    stds = []
    for _ in range(6):
        stds.append(policy.predict_scores(x, return_std=True)[1][0, 0])
        policy.partial_fit(x, [0], [1.0])
    assert np.all(np.diff(stds) < 0)
    assert_allclose(stds[0], 1.0)  # prior: k(x, x) = 1
    # n pulls with alpha = 1: sigma^2 = 1 / (n + 1)
    assert_allclose(np.array(stds) ** 2, 1 / np.arange(1, 7), rtol=1e-10)


def test_ucb_beta_zero_is_greedy():
    X, actions, rewards = _data(6, n=100)
    policy = KernelUCB(standardize=False, n_actions=3, beta=0.0, random_state=0).fit(
        X, actions, rewards
    )
    assert_array_equal(policy.select(X), policy.predict(X))
    wide = KernelUCB(standardize=False, n_actions=3, beta=50.0, random_state=0).fit(
        X, actions, rewards
    )
    mean, std = wide.predict_scores(X, return_std=True)
    assert_array_equal(wide.select(X), np.argmax(mean + 50.0 * std, axis=1))


def test_ts_sampling_law():
    X, actions, rewards = _data(7, n=60)
    policy = KernelTS(standardize=False, n_actions=3, nu=0.7, random_state=0).fit(
        X, actions, rewards
    )
    x = X[:2]
    mean, std = policy.predict_scores(x, return_std=True)
    sampler = policy._score_sampler(x)
    draws = np.stack([sampler(policy._rng) for _ in range(20000)])
    assert_allclose(draws.mean(0), mean, atol=4 * std.max() / np.sqrt(20000) * 1.5)
    assert_allclose(draws.std(0), std, rtol=0.03)
    # independent per arm
    corr = np.corrcoef(draws[:, 0, 0], draws[:, 0, 1])[0, 1]
    assert abs(corr) < 0.05
    # std is nu * sigma
    base = KernelUCB(standardize=False, n_actions=3, random_state=0).fit(
        X, actions, rewards
    )
    assert_allclose(std, 0.7 * base.predict_scores(x, return_std=True)[1])


def _fragile(A, B):
    """An RBF kernel that breaks on 4-row batches (after other blocks are done)."""
    if len(A) == 4:
        raise RuntimeError("kernel broke")
    return np.exp(-((A[:, None] - B[None]) ** 2).sum(-1))


@pytest.mark.parametrize("Policy", [KernelUCB, KernelTS])
def test_failed_partial_fit_leaves_state_unchanged(Policy):
    import joblib

    X, actions, rewards = _data(8, n=40)
    policy = Policy(standardize=False, n_actions=3, random_state=0).fit(
        X, actions, rewards
    )
    before = joblib.hash(vars(policy))
    with pytest.raises(ValueError):
        policy.partial_fit(X[:5], actions[:5], rewards[:5], sample_weight=-np.ones(5))

    with pytest.raises(ValueError):
        policy.partial_fit(X[:5, :2], actions[:5], rewards[:5])
    assert joblib.hash(vars(policy)) == before
    # a failure inside _update, after other blocks were computed, restores it too
    policy = Policy(
        standardize=False, n_actions=3, kernel=_fragile, random_state=0
    ).fit(X, actions, rewards)
    before = joblib.hash(vars(policy))
    with pytest.raises(RuntimeError, match="broke"):
        policy.partial_fit(X[:6], [0, 0, 1, 1, 1, 1], rewards[:6])
    assert joblib.hash(vars(policy)) == before
    # a non positive definite kernel raises NumericalError, state unchanged
    neg = Policy(
        standardize=False,
        n_actions=3,
        kernel=lambda A, B: -10 * np.ones((len(A), len(B))),
    )
    with pytest.raises(NumericalError):
        neg.fit(X[:3], [0, 1, 2], rewards[:3])
    assert not hasattr(neg, "n_actions_")


def _run(policy, seed, T=400, K=4, d=2):
    rng = np.random.RandomState(seed)
    centres = rng.normal(size=(K, d))
    total = 0.0
    for _ in range(T):
        x = rng.uniform(-2, 2, size=(1, d))
        means = np.exp(-np.sum((x - centres) ** 2, axis=1))  # nonlinear bumps
        a = policy.select(x)
        r = means[a] + 0.1 * rng.normal(size=1)
        policy.partial_fit(x, a, r)
        total += means[a[0]]
    return total / T


@pytest.mark.parametrize("seed", [0, 1, 2])  # margins 0.15-0.3 on seeds 0-7
def test_beats_random_on_nonlinear_problem(seed):
    rand = _run(RandomPolicy(n_actions=4, random_state=seed), seed)
    ucb = _run(
        KernelUCB(
            standardize=False, n_actions=4, beta=0.5, alpha=0.1, random_state=seed
        ),
        seed,
    )
    ts = _run(
        KernelTS(standardize=False, n_actions=4, nu=0.3, alpha=0.1, random_state=seed),
        seed,
    )
    assert ucb > rand + 0.1
    assert ts > rand + 0.1


@pytest.mark.parametrize("Policy", [KernelUCB, KernelTS])
def test_max_train_rounds_keeps_the_first_rows(Policy):
    # Paper 000's kernel baselines stop adding points at t = 1000.
    rng = np.random.default_rng(0)
    X, a, r = rng.normal(size=(30, 3)), rng.integers(0, 2, 30), rng.normal(size=30)
    capped = Policy(standardize=False, n_actions=2, max_train_rounds=12, random_state=0)
    capped.partial_fit(X[:10], a[:10], r[:10]).partial_fit(X[10:], a[10:], r[10:])
    first = Policy(standardize=False, n_actions=2, random_state=0).partial_fit(
        X[:12], a[:12], r[:12]
    )
    for got, want in zip(
        capped.predict_scores(X, return_std=True),
        first.predict_scores(X, return_std=True),
        strict=True,
    ):
        assert_allclose(got, want, rtol=1e-10)
    assert capped.n_samples_seen_ == 30
    recent = Policy(
        standardize=False, n_actions=2, max_history=12, random_state=0
    ).partial_fit(X, a, r)
    assert not np.allclose(recent.predict_scores(X), capped.predict_scores(X))
