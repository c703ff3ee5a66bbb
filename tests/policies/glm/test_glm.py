"""GLM-UCB, UCB-GLM, LogTS and the Newton solver: paper 003's logistic baselines."""
# SPDX-License-Identifier: BSD-3-Clause

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from skbandit.exceptions import NumericalError
from skbandit.policies import GLMUCB, UCBGLM, LogTS, RandomPolicy
from skbandit.policies._core._newton import fit_logistic_newton

#: The fits are checked on the rows the policies are given (their online
#: standardisation, on by default, has its own tests).
pytestmark = pytest.mark.usefixtures("glm_contexts_as_given")

SEEDS = [0, 1, 2]
POLICIES = [GLMUCB, UCBGLM, LogTS]


def logistic_data(n, K, seed, per_arm=False):
    rng = np.random.RandomState(seed)
    shape = (n, K, 3) if per_arm else (n, 3)
    X = rng.normal(size=shape)
    actions = rng.randint(K, size=n)
    rows = X[np.arange(n), actions] if per_arm else X
    rewards = (rng.rand(n) < expit(rows @ [1.0, -1.0, 0.5] + 0.2)).astype(float)
    return X, actions, rewards


def sklearn_c(policy):
    """LogisticRegression's C for the policy's penalty (note P9)."""
    return 1.0 / policy.alpha if isinstance(policy, LogTS) else 1.0 / (2 * policy.alpha)


@pytest.mark.parametrize("Policy", POLICIES)
@pytest.mark.parametrize("seed", SEEDS)
def test_map_equals_sklearn_shared_contexts(Policy, seed):
    X, actions, rewards = logistic_data(120, 3, seed)
    policy = Policy(n_actions=3, alpha=0.7).fit(X, actions, rewards)
    for k in range(3):
        rows = np.c_[X[actions == k], np.ones((actions == k).sum())]  # penalised bias
        clf = LogisticRegression(
            C=sklearn_c(policy), fit_intercept=False, tol=1e-12, max_iter=10_000
        ).fit(rows, rewards[actions == k])
        assert_allclose(policy.coef_[k], clf.coef_[0, :3], atol=1e-5)
        assert_allclose(policy.intercept_[k], clf.coef_[0, 3], atol=1e-5)


@pytest.mark.parametrize("Policy", POLICIES)
def test_map_equals_sklearn_per_arm_contexts_and_weights(Policy):
    X, actions, rewards = logistic_data(150, 4, 0, per_arm=True)
    w = np.random.RandomState(1).randint(1, 4, size=150).astype(float)
    policy = Policy(alpha=1.0, fit_intercept=False).fit(
        X, actions, rewards, sample_weight=w
    )
    rows = X[np.arange(150), actions]
    clf = LogisticRegression(
        C=sklearn_c(policy), fit_intercept=False, tol=1e-12, max_iter=10_000
    ).fit(rows, rewards, sample_weight=w)
    assert_allclose(policy.coef_[0], clf.coef_[0], atol=1e-5)


@pytest.mark.parametrize("Policy", POLICIES)
def test_online_updates_equal_batch_fit(Policy):
    X, actions, rewards = logistic_data(60, 3, 4, per_arm=True)
    batch = Policy(random_state=0).fit(X, actions, rewards)
    online = Policy(random_state=0)
    for i in range(0, 60, 7):
        online.partial_fit(X[i : i + 7], actions[i : i + 7], rewards[i : i + 7])
    assert_allclose(online.coef_, batch.coef_, atol=1e-7)
    assert_allclose(online._hess_inv, batch._hess_inv, atol=1e-7)


@pytest.mark.parametrize("seed", SEEDS)
def test_logts_laplace_covariance_is_inverse_hessian(seed):
    X, actions, rewards = logistic_data(200, 4, seed, per_arm=True)
    policy = LogTS(alpha=2.0, nu=0.5, random_state=seed).fit(X, actions, rewards)
    rows = np.c_[X[np.arange(200), actions], np.ones(200)]
    theta = np.r_[policy.coef_[0], policy.intercept_[0]]
    p = expit(rows @ theta)
    H = (rows * (p * (1 - p))[:, None]).T @ rows + 2.0 * np.eye(4)
    assert_allclose(policy.covariance_[0], np.linalg.inv(H), atol=1e-10)
    # Posterior draws have mean theta_hat and covariance nu^2 H^-1.
    rng = np.random.RandomState(seed)
    Xq = np.eye(4)[None, :, :3]  # probe x = e_1, e_2, e_3 plus bias
    sampler = policy._score_sampler(Xq)
    logits = np.log([(lambda s: s / (1 - s))(sampler(rng)[0]) for _ in range(4000)])
    probes = np.c_[np.eye(4)[:, :3], np.ones(4)]
    cov = 0.25 * probes @ np.linalg.inv(H) @ probes.T
    assert_allclose(
        logits.mean(axis=0), probes @ theta, atol=5 * np.sqrt(cov.max() / 4000)
    )
    assert_allclose(np.cov(logits.T), cov, atol=0.1 * np.max(np.diag(cov)))


@pytest.mark.parametrize("seed", SEEDS)
def test_ucbglm_scores_and_exact_proba(seed):
    X, actions, rewards = logistic_data(80, 4, seed, per_arm=True)
    policy = UCBGLM(alpha=1.0, beta=None, horizon=1000, random_state=seed).fit(
        X, actions, rewards
    )
    rows = np.c_[X[np.arange(80), actions], np.ones(80)]
    V = np.eye(4) + rows.T @ rows
    assert_allclose(policy._gram.precision[0], V)
    d, n, delta = 4, 1000, 1 / 1000
    width_mult = (0.5 / 0.25) * np.sqrt(
        d / 2 * np.log(1 + 2 * n / d) + np.log(1 / delta)
    )
    Xq = np.c_[X[:5].reshape(-1, 3), np.ones(20)].reshape(5, 4, 4)
    theta = np.r_[policy.coef_[0], policy.intercept_[0]]
    width = np.sqrt(np.einsum("nkd,de,nke->nk", Xq, np.linalg.inv(V), Xq))
    ucb = Xq @ theta + width_mult * width
    assert_allclose(policy._score_sampler(X[:5])(None), ucb, atol=1e-10)
    assert_array_equal(policy.predict_action_proba(X[:5]), np.eye(4)[ucb.argmax(1)])
    assert_array_equal(policy.select(X[:5]), ucb.argmax(1))
    assert_allclose(policy.predict_scores(X[:5]), expit(Xq @ theta))
    _, std = policy.predict_scores(X[:5], return_std=True)
    assert_allclose(std, width)
    over = policy.set_params(beta=0.3)._score_sampler(X[:5])(None)
    assert_allclose(over, Xq @ theta + 0.3 * width, atol=1e-10)


@pytest.mark.parametrize("seed", SEEDS)
def test_glmucb_rho_uses_current_round(seed):
    X, actions, rewards = logistic_data(50, 3, seed, per_arm=True)
    policy = GLMUCB(alpha=1.0, beta=None, random_state=seed)
    policy.fit(X, actions, rewards)
    rows = np.c_[X.reshape(-1, 3), np.ones(150)]
    Xq = np.c_[X[:4].reshape(-1, 3), np.ones(12)].reshape(4, 3, 4)
    c_m = np.linalg.norm(
        np.r_[rows[np.arange(50) * 3 + actions], Xq.reshape(-1, 4)], axis=1
    )
    d = 4
    kappa = np.sqrt(3 + 2 * np.log(1 + 2 * c_m.max() ** 2 / 1.0))
    t = 50 + np.arange(1, 5)
    n, delta = t, 1 / t  # horizon=None, delta=None: anytime, delta = 1/t
    rho = (2 * 0.25 * kappa / 0.25) * np.sqrt(
        2 * d * np.log(t) * np.log(2 * d * n / delta)
    )
    V = (
        np.eye(4)
        + rows[np.arange(50) * 3 + actions].T @ rows[np.arange(50) * 3 + actions]
    )
    theta = np.r_[policy.coef_[0], policy.intercept_[0]]
    width = np.sqrt(np.einsum("nkd,de,nke->nk", Xq, np.linalg.inv(V), Xq))
    ucb = expit(Xq @ theta) + rho[:, None] * width
    assert_allclose(policy._score_sampler(X[:4])(None), ucb, atol=1e-10)
    assert_array_equal(policy.predict_action_proba(X[:4]), np.eye(3)[ucb.argmax(1)])
    assert policy.__sklearn_tags__().policy_tags.exact_action_proba
    fixed = GLMUCB(horizon=500, delta=0.05, beta=None).fit(X, actions, rewards)
    rho_n = fixed._rho(np.array([51.0]), c_m.max())
    expected = (2 * kappa) * np.sqrt(2 * d * np.log(51) * np.log(2 * d * 500 / 0.05))
    assert_allclose(rho_n, expected)


@pytest.mark.parametrize("Policy", POLICIES)
@pytest.mark.parametrize("bad", [2.0, -0.1, np.nan])
def test_failed_partial_fit_leaves_policy_unchanged(Policy, bad):
    X, actions, rewards = logistic_data(30, 3, 0)
    policy = Policy(n_actions=3, random_state=0).fit(X, actions, rewards)
    policy.select(X[:2])
    before = pickle.dumps(policy)
    with pytest.raises(ValueError):
        policy.partial_fit(X[:2], [0, 1], [1.0, bad])
    assert pickle.dumps(policy) == before


@pytest.mark.parametrize("Policy", POLICIES)
def test_solver_failure_leaves_policy_unchanged(Policy):
    X, actions, rewards = logistic_data(30, 3, 0)
    policy = Policy(n_actions=3, random_state=0).fit(X, actions, rewards)
    before = pickle.dumps(policy)
    policy.set_params(max_iter=1)
    surprising = float(policy.predict_scores(X[:1] * 100)[0, 0] < 0.5)
    with pytest.raises(NumericalError):
        policy.partial_fit(X[:1] * 100, [0], [surprising])
    policy.set_params(max_iter=100)
    assert pickle.dumps(policy) == before


def test_newton_blocks_and_replicates_equal_separate_solves():
    rng = np.random.RandomState(0)
    G, d = 30, 3
    X = rng.normal(size=(G, d))
    blocks = rng.randint(3, size=G)
    pos = rng.randint(0, 5, size=(2, G)).astype(float)
    neg = rng.randint(0, 5, size=(2, G)).astype(float)
    coef, hess = fit_logistic_newton(X, pos, neg, 0.5, blocks=blocks, n_blocks=4)
    for i in range(2):
        for b in range(4):
            sel = blocks == b
            alone, h = fit_logistic_newton(X[sel], pos[i, sel], neg[i, sel], 0.5)
            assert_allclose(coef[i, b], alone[0], atol=1e-9)
            assert_allclose(hess[i, b], h[0], atol=1e-9)
    assert_allclose(coef[:, 3], 0.0)  # an empty block sits at the prior mode
    # Separable data stays finite thanks to the penalty; line search handles a far
    # start.
    sep, _ = fit_logistic_newton(
        X, (X[:, 0] > 0) * 10.0, (X[:, 0] <= 0) * 10.0, 1e-3, coef_init=[[50, -50, 50]]
    )
    assert np.all(np.isfinite(sep))
    with pytest.raises(NumericalError, match="max_iter"):
        fit_logistic_newton(
            X, pos[0], neg[0], 1e-3, coef_init=[[30, 30, 30]], max_iter=2
        )


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_glm_policies_beat_random(seed):
    rng = np.random.RandomState(seed)
    K, d, n = 8, 4, 600
    u = rng.normal(size=(K, d - 1))
    arms = np.c_[u / np.linalg.norm(u, axis=1, keepdims=True), np.ones(K)]
    v = rng.normal(size=d - 1)
    mu = expit(arms @ np.r_[1.5 * v / np.linalg.norm(v), 0.0])
    draws = rng.rand(n)
    regret = {}
    for name, policy in {
        "ts": LogTS(fit_intercept=False, random_state=seed),
        "ucb": UCBGLM(beta=None, fit_intercept=False, horizon=n, random_state=seed),
        "random": RandomPolicy(n_actions=K, random_state=seed),
    }.items():
        total = 0.0
        for t in range(n):
            a = policy.select(arms[None])
            policy.partial_fit(arms[None], a, np.array([float(draws[t] < mu[a[0]])]))
            total += mu.max() - mu[a[0]]
        regret[name] = total
    # Seeds 0 and 1 give ts/random 0.23 and 0.10, ucb/random 0.24 and 0.15. Over
    # seeds 0-19 the median is 0.12 (ts) and 0.17 (ucb), the worst 0.64 and 0.48 on
    # seed 7, whose three best arms lie within 0.04 (600 rounds do not separate them).
    assert regret["ts"] < 0.5 * regret["random"]
    assert regret["ucb"] < 0.7 * regret["random"]
