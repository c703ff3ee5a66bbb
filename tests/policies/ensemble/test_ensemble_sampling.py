"""LinES and GLMES against the checks of Sun, Wang and Xu's ensemble sampling (section 6
of the paper note): closed forms and optimality against independent solves, stored
perturbations, the warm-up design, the anytime schedule, cost and reproducibility."""
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from scipy.optimize import brentq, minimize
from scipy.special import expit

from skbandit.policies import GLMES, LinES
from skbandit.policies._core._anytime_schedule import (
    GOLDEN_RESTART_BASE,
    loss_factor,
    phase_ends,
    phase_n_models,
    phase_perturbation_scale,
)
from skbandit.policies._core._newton import fit_glm_newton
from skbandit.policies._ensemble._g_optimal_design import (
    g_optimal_design,
    round_design,
    warmup_sequence,
)

#: The members' maths is checked on the rows GLMES is given (its online
#: standardisation, on by default, has its own tests).
pytestmark = pytest.mark.usefixtures("glm_contexts_as_given")

K, D = 6, 4


def _arms(seed=0, n_arms=K, dim=D):
    A = np.random.default_rng(seed).standard_normal((n_arms, dim))
    return A / np.linalg.norm(A, axis=1, keepdims=True)


def _logged(n, seed=0, arms=None, logistic=False):
    """Uniformly logged rounds of a fixed arm set (per-arm contexts): Gaussian
    rewards around a linear mean, or clicks (a logistic GLM needs rewards in
    [0, 1], and GLMES checks it)."""
    rng = np.random.default_rng(seed)
    arms = _arms(seed) if arms is None else arms
    theta = rng.standard_normal(arms.shape[1])
    actions = rng.integers(arms.shape[0], size=n)
    z = arms[actions] @ theta
    if logistic:
        rewards = (rng.random(n) < expit(z)).astype(np.float64)
    else:
        rewards = z + 0.5 * rng.standard_normal(n)
    X = np.broadcast_to(arms, (n, *arms.shape)).copy()
    return X, actions, rewards


def _ridge_members(rows, rewards, Z, alpha, weights=None):
    """Direct solve of every member's ridge problem (item 1)."""
    w = np.ones(rows.shape[0]) if weights is None else weights
    A = alpha * np.eye(rows.shape[1]) + rows.T @ (w[:, None] * rows)
    targets = w[:, None] * rewards[:, None] + np.sqrt(w)[:, None] * Z
    return np.linalg.solve(A, rows.T @ targets).T  # (m, d)


# ------------------------------------------------------------- 1. closed form
@pytest.mark.parametrize("per_arm", [True, False])
def test_lines_members_are_ridge_on_perturbed_rewards(per_arm):
    X, actions, rewards = _logged(40)
    if not per_arm:
        X = X[:, 0] + 0.1 * np.random.default_rng(1).standard_normal((40, D))
    policy = LinES(
        n_actions=K,
        n_models=7,
        perturbation_scale=0.3,
        horizon=100,
        prior_perturbation=False,
    )
    policy.fit(X, actions, rewards)
    Z = policy.perturbations_
    assert Z.shape == (40, 7)
    rows = X[np.arange(40), actions] if per_arm else X
    for block in range(policy.coef_.shape[1]):
        sel = np.ones(40, bool) if per_arm else actions == block
        expected = _ridge_members(rows[sel], rewards[sel], Z[sel], 1.0)
        assert_allclose(policy.coef_[:, block], expected, atol=1e-10)


def test_prior_perturbation_is_a_random_prior_mean():
    X, actions, rewards = _logged(30)
    policy = LinES(
        n_models=400,
        perturbation_scale=0.5,
        alpha=2.0,
        horizon=100,
        prior_perturbation=True,
        random_state=0,
    )
    policy.select(X[:1])  # the prior: theta_0^j ~ N(0, sigma^2 / lambda I)
    prior = policy.coef_[:, 0]
    assert_allclose(prior.std(axis=0), 0.5 / np.sqrt(2.0), rtol=0.15)
    U = prior * np.sqrt(2.0) / 0.5  # the moment's sqrt(lambda) sigma U^j
    policy.fit(X, actions, rewards)
    rows = X[np.arange(30), actions]
    A = 2.0 * np.eye(D) + rows.T @ rows
    b = rows.T @ (rewards[:, None] + policy.perturbations_) + np.sqrt(2.0) * 0.5 * U.T
    assert_allclose(policy.coef_[:, 0], np.linalg.solve(A, b).T, atol=1e-10)
    # without it, every member starts at 0 and stays there off the data's span
    plain = LinES(n_models=4, horizon=100, prior_perturbation=False)
    plain.fit(X[:1], actions[:1], rewards[:1])
    off = np.linalg.svd(rows[:1])[2][1:]  # directions the one row does not reach
    assert_allclose(plain.coef_[:, 0] @ off.T, 0.0, atol=1e-12)


def test_glmes_identity_newton_equals_lines_closed_form():
    X, actions, rewards = _logged(60)
    params = dict(n_models=5, perturbation_scale=0.2, horizon=500, random_state=3)
    lin = LinES(prior_perturbation=False, **params).fit(X, actions, rewards)
    glm = GLMES(link="identity", n_warmup=0, **params).fit(X, actions, rewards)
    assert_array_equal(lin.perturbations_, glm.perturbations_)
    assert_allclose(glm.coef_, lin.coef_, atol=1e-8)


def test_sample_weight_counts_observations():
    X, actions, rewards = _logged(30)
    w = np.random.default_rng(2).uniform(0.5, 3.0, 30)
    policy = LinES(
        n_models=3,
        perturbation_scale=0.4,
        horizon=100,
        alpha=0.5,
        prior_perturbation=False,
    )
    policy.fit(X, actions, rewards, sample_weight=w)
    rows = X[np.arange(30), actions]
    expected = _ridge_members(rows, rewards, policy.perturbations_, 0.5, w)
    assert_allclose(policy.coef_[:, 0], expected, atol=1e-10)


# ------------------------------------------------- 2-3. GLM optimality identities
def _F(theta, rows, alpha):
    return rows.T @ expit(rows @ theta) + alpha * theta


@pytest.mark.parametrize("solver_tol", [1e-8])
def test_glmes_first_order_optimality_after_each_update(solver_tol):
    X, actions, rewards = _logged(50, logistic=True)
    policy = GLMES(
        n_models=4,
        perturbation_scale=0.5,
        n_warmup=0,
        horizon=100,
        alpha=0.7,
        tol=solver_tol,
        random_state=0,
    )
    for t in range(50):
        policy.partial_fit(X[t : t + 1], actions[t : t + 1], rewards[t : t + 1])
        rows = X[np.arange(t + 1), actions[: t + 1]]
        Z = policy.perturbations_
        for j, theta in enumerate(policy.coef_[:, 0]):
            grad = 0.7 * theta + rows.T @ (
                expit(rows @ theta) - rewards[: t + 1] - Z[:, j]
            )
            assert np.linalg.norm(grad) < 1e-6


def test_glmes_perturbation_identity_no_prior_term():
    X, actions, rewards = _logged(80, logistic=True)
    policy = GLMES(n_models=6, perturbation_scale=0.3, n_warmup=0, horizon=200)
    policy.fit(X, actions, rewards)
    greedy = GLMES(n_models=1, perturbation_scale=0.0, n_warmup=0, horizon=200)
    theta_bar = greedy.fit(X, actions, rewards).coef_[0, 0]
    rows = X[np.arange(80), actions]
    Z = policy.perturbations_
    for j, theta in enumerate(policy.coef_[:, 0]):
        lhs = _F(theta, rows, 1.0) - _F(theta_bar, rows, 1.0)
        assert_allclose(lhs, rows.T @ Z[:, j], atol=1e-7)


def test_glmes_matches_scipy_minimiser_for_every_link():
    X, actions, rewards = _logged(40, logistic=True)
    rows = X[np.arange(40), actions]
    for link, b in (
        ("logistic", lambda z: np.logaddexp(0, z)),
        ("poisson", np.exp),
        ("identity", lambda z: 0.5 * z**2),
    ):
        policy = GLMES(
            n_models=3,
            perturbation_scale=0.4,
            n_warmup=0,
            link=link,
            horizon=100,
            alpha=2.0,
        ).fit(X, actions, rewards)
        for j in range(3):
            y = rewards + policy.perturbations_[:, j]

            def loss(th, y=y, b=b):
                return 0.5 * 2.0 * th @ th - y @ (rows @ th) + b(rows @ th).sum()

            ref = minimize(loss, np.zeros(D), method="BFGS", options={"gtol": 1e-10}).x
            assert_allclose(policy.coef_[j, 0], ref, atol=1e-5, err_msg=link)


def test_newton_converges_when_the_minimum_is_zero_from_large_cancelling_terms():
    """A large sigma_R puts the perturbed targets far outside (0, 1): the objective's
    terms are then large and, at a minimum value near 0, cancel to their rounding
    error, which the Armijo test read as an increase, halving a converged step for
    ever (GLM-ES with sigma_R = 10 stopped with a NumericalError). The solve must
    converge, to scipy's minimiser, with a zero gradient."""
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((50, 20))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    count = rng.integers(200, 4000, size=50).astype(float)
    noise = np.sqrt(count) * rng.standard_normal(50)

    def solve(scale):
        y = 0.5 * count + scale * noise

        def loss(th):
            return np.sum(count * np.logaddexp(0, rows @ th) - y * (rows @ th)) + (
                0.5 * th @ th
            )

        def grad(th):
            return rows.T @ (count * expit(rows @ th) - y) + th

        opts = {"gtol": 1e-10}
        return y, minimize(loss, np.zeros(20), jac=grad, method="BFGS", options=opts)

    # the perturbation scale (about 10, sigma_R's value) at which the minimum is 0
    scale = brentq(lambda s: solve(s)[1].fun, 0.0, 30.0, xtol=1e-13)
    y, ref = solve(scale)
    assert abs(ref.fun) < 1e-6 < np.abs(y - count).max() / 100
    coef = fit_glm_newton(rows, y, count, 1.0, tol=1e-8)[0][0]
    assert_allclose(rows.T @ (count * expit(rows @ coef) - y) + coef, 0, atol=1e-7)
    assert_allclose(coef, ref.x, atol=1e-5)


def test_glmes_gradient_descent_is_the_papers_approximation():
    X, actions, rewards = _logged(200, logistic=True)
    exact = GLMES(n_models=3, n_warmup=0, horizon=500, random_state=1)
    exact.fit(X, actions, rewards)
    gd = GLMES(
        n_models=3,
        n_warmup=0,
        horizon=500,
        random_state=1,
        solver="gd",
        n_steps=20_000,
        learning_rate=1.0,
    ).fit(X, actions, rewards)
    assert_allclose(gd.coef_, exact.coef_, atol=1e-4)
    # the experiments' 100 steps at 0.01 from zero move only part of the way
    short = GLMES(n_models=3, n_warmup=0, horizon=500, random_state=1, solver="gd")
    short.fit(X, actions, rewards)
    assert np.abs(short.coef_ - exact.coef_).max() > 1e-2


# --------------------------------------------------------------- 4. persistence
def test_perturbations_are_stored_never_redrawn_and_gaussian():
    X, actions, rewards = _logged(300)
    policy = LinES(n_models=40, perturbation_scale=0.7, horizon=1000, random_state=5)
    seen = np.zeros((0, 40))
    for chunk in np.array_split(np.arange(300), 30):
        policy.select(X[:3])  # selects in between draw nothing from the store
        policy.partial_fit(X[chunk], actions[chunk], rewards[chunk])
        Z = policy.perturbations_
        assert Z.shape == (seen.shape[0] + chunk.size, 40)  # m new per observation
        assert_array_equal(Z[: seen.shape[0]], seen)  # bit-identical
        seen = Z.copy()
    assert stats.kstest(seen.ravel() / 0.7, "norm").pvalue > 0.01
    assert seen.size >= 10_000


def test_chunked_feedback_gives_the_same_perturbations():
    X, actions, rewards = _logged(50, logistic=True)
    one = GLMES(n_models=4, n_warmup=0, horizon=100, random_state=2).fit(
        X, actions, rewards
    )
    chunked = GLMES(n_models=4, n_warmup=0, horizon=100, random_state=2)
    for chunk in np.array_split(np.arange(50), [1, 10, 11, 30]):
        chunked.partial_fit(X[chunk], actions[chunk], rewards[chunk])
    assert_array_equal(chunked.perturbations_, one.perturbations_)
    assert_allclose(chunked.coef_, one.coef_, atol=1e-7)


# ---------------------------------------------------------------- 5. sigma_R = 0
def test_zero_perturbation_gives_identical_members_equal_to_the_mle():
    X, actions, rewards = _logged(40, logistic=True)
    rows = X[np.arange(40), actions]
    lin = LinES(n_models=5, perturbation_scale=0.0, horizon=100).fit(
        X, actions, rewards
    )  # sigma_R = 0 also zeroes the prior perturbation
    ridge = np.linalg.solve(np.eye(D) + rows.T @ rows, rows.T @ rewards)
    assert_allclose(lin.coef_[:, 0], np.tile(ridge, (5, 1)), atol=1e-12)
    glm = GLMES(n_models=5, perturbation_scale=0.0, n_warmup=0, horizon=100)
    glm.fit(X, actions, rewards)
    assert np.ptp(glm.coef_, axis=0).max() == 0.0
    grad = glm.coef_[0, 0] + rows.T @ (expit(rows @ glm.coef_[0, 0]) - rewards)
    assert np.linalg.norm(grad) < 1e-8
    assert not glm.__sklearn_tags__().policy_tags.stochastic_select


# --------------------------------------------------------------- 7. the warm-up
def test_g_optimal_design_reaches_kiefer_wolfowitz_value():
    arms = _arms(3, n_arms=50, dim=20)
    zeta = g_optimal_design(arms)
    assert_allclose(zeta.sum(), 1.0)
    V = arms.T @ (zeta[:, None] * arms)
    g = np.einsum("kd,de,ke->k", arms, np.linalg.inv(V), arms)
    assert g.max() <= 20 * (1 + 1e-3)
    # arms in a 5-dimensional subspace of R^8: the value is the rank
    sub = (
        np.hstack([arms[:, :5], np.zeros((50, 3))])
        @ np.linalg.qr(np.random.default_rng(0).standard_normal((8, 8)))[0]
    )
    zeta = g_optimal_design(sub)
    V = sub.T @ (zeta[:, None] * sub)
    g = np.einsum("kd,de,ke->k", sub, np.linalg.pinv(V), sub)
    assert g.max() <= 5 * (1 + 1e-3)


@pytest.mark.parametrize("n_pulls", [1, 7, 50, 333])
def test_rounding_returns_exactly_tau_pulls(n_pulls):
    zeta = g_optimal_design(_arms(4, n_arms=30, dim=6))
    counts = round_design(n_pulls, zeta)
    assert counts.sum() == n_pulls and counts.min() >= 0


@pytest.mark.parametrize("iota", [1.0, 2.0, 3.0])
def test_design_warmup_bounds_every_arm_width(iota):
    arms = _arms(5, n_arms=40, dim=8)
    tau = math.ceil(1.5 * iota**2 * 8)  # Lemma B.4, identity link (mu'_min = 1)
    pulls = warmup_sequence(arms, tau, seed=0)
    V = np.eye(8) + arms[pulls].T @ arms[pulls]
    widths = np.sqrt(np.einsum("kd,de,ke->k", arms, np.linalg.inv(V), arms))
    assert widths.max() <= 1.0 / iota


def test_glmes_warmup_pulls_the_rounded_design_then_learns():
    arms = _arms(6, n_arms=12, dim=5)
    policy = GLMES(n_models=3, n_warmup=30, horizon=200, random_state=0)
    X = np.broadcast_to(arms, (30, 12, 5)).copy()
    pulls = policy.select(X)
    zeta = g_optimal_design(arms)
    assert_array_equal(np.bincount(pulls, minlength=12), round_design(30, zeta))
    # one round at a time gives the same sequence (it does not depend on batching)
    mu = expit(arms @ (3 * np.random.default_rng(100).standard_normal(5)))
    rng = np.random.default_rng(0)
    one_by_one, gaps = [], []
    for _ in range(200):
        a = policy.select(X[:1])
        one_by_one.append(a[0])
        gaps.append(mu.max() - mu[a[0]])
        policy.partial_fit(X[:1], a, (rng.random(1) < mu[a]).astype(float))
    assert_array_equal(one_by_one[:30], pulls)
    # then it learns: the last 50 rounds' regret against a uniform arm's. 0.004 here;
    # over seeds 0-19 (arms, parameter, rewards, policy) at most 0.48, median 0.
    assert np.mean(gaps[-50:]) < 0.6 * np.mean(mu.max() - mu)


def test_round_robin_and_random_warmups():
    X, _, _ = _logged(12)
    rr = GLMES(n_models=2, n_warmup=12, warmup="round_robin", horizon=50)
    assert_array_equal(rr.select(X), np.arange(12) % K)
    rnd = GLMES(n_models=2, n_warmup=12, warmup="random", horizon=50, random_state=0)
    proba = rnd.fit(X[:1], [0], [0.0]).predict_action_proba(X[:3])
    assert_allclose(proba, np.full((3, K), 1 / K))


# -------------------------------------------------------------- 8. the schedule
def test_schedule_values_of_the_paper():
    ends = phase_ends(100, GOLDEN_RESTART_BASE, 10_000)
    assert ends.tolist() == [100, 261, 685, 1794, 4697, 12299]
    lengths = np.diff(np.r_[0, ends])
    assert lengths.tolist() == [100, 161, 424, 1109, 2903, 7602]
    assert [phase_n_models(t) for t in lengths] == [10, 11, 13, 15, 16, 18]
    scales = [phase_perturbation_scale(t) for t in lengths]
    assert_allclose(scales, [0.0921, 0.1016, 0.1210, 0.1402, 0.1595, 0.1787], atol=1e-4)
    assert phase_ends(300, GOLDEN_RESTART_BASE, 10_000).tolist() == [
        300,
        785,
        2056,
        5383,
        14093,
    ]
    for T0, b, value in (
        (100, GOLDEN_RESTART_BASE, 3.336),
        (300, GOLDEN_RESTART_BASE, 3.332),
        (100, 2.0, 3.425),
        (100, 4.0, 3.467),
    ):
        assert round(loss_factor(T0, b), 3) == value


def test_anytime_restarts_empty_the_history_and_rerun_the_warmup():
    X, actions, rewards = _logged(300, logistic=True)
    policy = GLMES(n_warmup=20, warmup="round_robin", horizon="anytime", random_state=0)
    sizes = []
    for t in range(300):
        policy.partial_fit(X[t : t + 1], actions[t : t + 1], rewards[t : t + 1])
        sizes.append((policy.phase_, policy.n_models_, policy.perturbations_.shape[0]))
        if t + 1 in (100, 261):
            # the feedback of round T_i ends the phase: empty, warm-up again
            assert policy.perturbations_.shape == (0, policy.n_models_)
            assert_array_equal(policy.coef_, 0.0)
            assert_array_equal(policy.select(X[:K]), np.arange(K))
    assert sizes[98] == (0, 10, 99)
    assert sizes[99] == (1, 11, 0)
    assert sizes[260] == (2, 13, 0)
    assert sizes[299] == (2, 13, 39)
    assert_allclose(policy.perturbation_scale_, 0.02 * math.log(424))


def test_fixed_horizon_never_restarts_and_auto_is_the_experiments_values():
    X, actions, rewards = _logged(150, logistic=True)
    lin = LinES(horizon=120, perturbation_scale="auto", random_state=0)
    lin.fit(X, actions, rewards)
    assert (lin.phase_, lin.n_models_, lin.perturbation_scale_) == (0, 25, 0.1)
    assert lin.perturbations_.shape == (150, 25)
    glm = GLMES(horizon=120, n_warmup=0).fit(X, actions, rewards)
    assert glm.n_models_ == 10


def test_batched_feedback_across_a_restart_equals_one_by_one():
    X, actions, rewards = _logged(120)  # restart after round 50, the next after 130
    batch = LinES(first_phase=50, horizon="anytime", random_state=4)
    batch.fit(X, actions, rewards)
    online = LinES(first_phase=50, horizon="anytime", random_state=4)
    for t in range(120):
        online.partial_fit(X[t : t + 1], actions[t : t + 1], rewards[t : t + 1])
    assert batch.phase_ == online.phase_ == 1
    assert_array_equal(batch.perturbations_, online.perturbations_)
    assert_allclose(batch.coef_, online.coef_, atol=1e-10)


# ------------------------------------------------------- 9. cost, 10. reproducing
class _CountingGenerator:
    def __init__(self, rng):
        self.rng, self.sizes = rng, []
        self.bit_generator = rng.bit_generator

    def standard_normal(self, size):
        self.sizes.append(size)
        return self.rng.standard_normal(size)


@pytest.mark.parametrize("Policy", [LinES, GLMES])
def test_gaussian_draws_per_round_are_m_whatever_t(Policy):
    X, actions, rewards = _logged(300, logistic=True)
    policy = Policy(n_models=8, horizon=1000, random_state=0)
    policy.partial_fit(X[:1], actions[:1], rewards[:1])
    counter = policy._noise = _CountingGenerator(policy._noise)
    for t in range(1, 300):
        policy.select(X[:1])
        policy.partial_fit(X[t : t + 1], actions[t : t + 1], rewards[t : t + 1])
    assert counter.sizes == [(1, 8)] * 299  # m draws per round, constant in t
    assert policy.perturbations_.shape == (300, 8)


def test_same_seed_same_arms_and_regret():
    arms = _arms(8, n_arms=10, dim=4)
    theta = _arms(9, n_arms=1, dim=4)[0]
    mean = arms @ theta

    def run(policy, seed):
        rng = np.random.default_rng(seed)
        X = arms[None]
        pulls = []
        for _ in range(150):
            a = policy.select(X)
            policy.partial_fit(X, a, mean[a] + 0.5 * rng.standard_normal(1))
            pulls.append(a[0])
        return np.array(pulls), np.sum(mean.max() - mean[pulls])

    for make in (
        lambda: LinES(first_phase=30, horizon="anytime", random_state=11),
        lambda: GLMES(link="identity", n_warmup=10, horizon="anytime", random_state=11),
    ):
        a1, r1 = run(make(), 0)
        a2, r2 = run(make(), 0)
        assert_array_equal(a1, a2)
        assert r1 == r2
        a3, _ = run(make().set_params(random_state=12), 0)
        assert not np.array_equal(a1, a3)


def test_exact_action_proba_is_the_member_mixture():
    X, actions, rewards = _logged(30)
    policy = LinES(n_models=6, perturbation_scale=1.0, horizon=100, random_state=0)
    policy.fit(X, actions, rewards)
    proba = policy.predict_action_proba(X[:1])[0]
    greedy = np.argmax(np.einsum("kd,md->mk", X[0], policy.coef_[:, 0]), axis=1)
    assert_allclose(proba, np.bincount(greedy, minlength=K) / 6)


def test_positive_rewards_lock_in_without_a_prior_perturbation():
    # After one pull of arm a with reward y > 0, arm a scores highest under every
    # member while y + Z^j > 0 (x_k^T A^-1 x_a <= x_a^T A^-1 x_a for unit arms):
    # Sun, Wang and Xu's reward-only perturbations never leave it; a random prior
    # (Lee and Oh) does.
    X = np.broadcast_to(_arms(7, n_arms=20, dim=5), (1, 20, 5)).copy()
    pulled = {}
    for prior in (False, True):
        policy = LinES(
            n_models=10,
            perturbation_scale=0.1,
            horizon=500,
            prior_perturbation=prior,
            random_state=0,
        )
        arms = set()
        for _ in range(60):
            a = policy.select(X)
            arms.add(int(a[0]))
            policy.partial_fit(X, a, [0.5])
        pulled[prior] = len(arms)
    assert pulled[False] == 1
    assert pulled[True] > 1
