"""Exact maths and behaviour of LinUCB, LinTS, EpsilonGreedy and RandomPolicy."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skbandit.exceptions import NumericalError
from skbandit.policies import EpsilonGreedy, LinTS, LinUCB, RandomPolicy
from skbandit.policies._core._ridge import BlockRows, RidgeBlocks

SEEDS = [0, 1, 2, 3, 4]


def _data(seed, n=300, d=4, K=3, per_arm=False):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, K, d) if per_arm else (n, d))
    actions = rng.randint(K, size=n)
    rewards = rng.normal(size=n)
    return X, actions, rewards


def _direct_ridge(X, actions, rewards, K, alpha, weights=None):
    """Per-arm ridge by a direct solve on the design with an intercept column."""
    Z = np.hstack([X, np.ones((X.shape[0], 1))])
    w = np.ones(len(rewards)) if weights is None else weights
    coefs, covs = [], []
    for k in range(K):
        sel = actions == k
        A = alpha * np.eye(Z.shape[1]) + (Z[sel] * w[sel, None]).T @ Z[sel]
        coefs.append(np.linalg.solve(A, (Z[sel] * w[sel, None]).T @ rewards[sel]))
        covs.append(np.linalg.inv(A))
    return np.array(coefs), np.array(covs)


@pytest.mark.parametrize("seed", SEEDS)
def test_sherman_morrison_matches_direct_solve(seed):
    # 1000 one-row updates by Sherman-Morrison against inv(A) and solve(A, b).
    X, actions, rewards = _data(seed, n=1000)
    policy = LinUCB(n_actions=3, alpha=0.5)
    for i in range(len(X)):
        policy.partial_fit(X[i : i + 1], actions[i : i + 1], rewards[i : i + 1])
    coef, cov = _direct_ridge(X, actions, rewards, 3, 0.5)
    assert_allclose(policy.covariance_, cov, atol=1e-8)
    assert_allclose(policy.coef_, coef[:, :-1], atol=1e-8)
    assert_allclose(policy.intercept_, coef[:, -1], atol=1e-8)


@pytest.mark.parametrize("Policy", [LinUCB, LinTS, EpsilonGreedy])
def test_batch_equals_online_and_weights(Policy):
    X, actions, rewards = _data(0)
    w = np.random.RandomState(1).uniform(0.1, 3, size=len(rewards))
    batch = Policy(n_actions=3).fit(X, actions, rewards, sample_weight=w)
    online = Policy(n_actions=3)
    for i in range(0, len(X), 7):  # chunks of 7 rows, some blocks hit twice
        s = slice(i, i + 7)
        online.partial_fit(X[s], actions[s], rewards[s], sample_weight=w[s])
    coef, cov = _direct_ridge(X, actions, rewards, 3, 1.0, weights=w)
    assert_allclose(batch.coef_, coef[:, :-1], rtol=1e-10, atol=1e-12)
    assert_allclose(online.predict_scores(X), batch.predict_scores(X), rtol=1e-9)
    assert_allclose(batch.covariance_, cov, rtol=1e-9, atol=1e-12)


def test_per_arm_contexts_share_one_parameter():
    X, actions, rewards = _data(0, per_arm=True)
    policy = LinUCB(fit_intercept=False, alpha=2.0).fit(X, actions, rewards)
    rows = X[np.arange(len(X)), actions]
    A = 2.0 * np.eye(4) + rows.T @ rows
    theta = np.linalg.solve(A, rows.T @ rewards)
    assert policy.n_actions_ == 3 and policy.coef_.shape == (1, 4)
    assert_allclose(policy.coef_[0], theta, rtol=1e-10)
    mean, std = policy.predict_scores(X[:5], return_std=True)
    assert_allclose(mean, X[:5] @ theta, rtol=1e-10)
    expected_std = np.sqrt(np.einsum("nkd,de,nke->nk", X[:5], np.linalg.inv(A), X[:5]))
    assert_allclose(std, expected_std, rtol=1e-10)


def test_linucb_select_is_argmax_of_index():
    X, actions, rewards = _data(3)
    policy = LinUCB(n_actions=3, beta=2.0, random_state=0).fit(X, actions, rewards)
    mean, std = policy.predict_scores(X, return_std=True)
    assert_array_equal(policy.select(X), np.argmax(mean + 2.0 * std, axis=1))
    proba = policy.predict_action_proba(X)
    assert_array_equal(proba.argmax(axis=1), np.argmax(mean + 2.0 * std, axis=1))
    assert_allclose(proba.max(axis=1), 1.0)


def test_ties_are_broken_uniformly():
    # Before any feedback every arm has the same index: select must be uniform.
    policy = LinUCB(n_actions=4, random_state=0)
    picks = policy.select(np.zeros((4000, 2)))
    counts = np.bincount(picks, minlength=4)
    assert np.all(np.abs(counts - 1000) < 150)  # 5 binomial std devs
    assert_allclose(policy.predict_action_proba(np.zeros((1, 2))), [[0.25] * 4])


@pytest.mark.parametrize("seed", SEEDS)
def test_lints_sampling_law(seed):
    # select draws theta ~ N(theta_hat, nu^2 A^{-1}); on per-arm contexts with two
    # arms, P(arm 1) = Phi(mean gap / std of the gap) exactly.
    from scipy.stats import norm

    X, actions, rewards = _data(seed, n=40, d=3, K=2, per_arm=True)
    policy = LinTS(nu=0.7, fit_intercept=False, random_state=seed)
    policy.fit(X, actions, rewards)
    x = np.random.RandomState(seed + 100).normal(size=(1, 2, 3))
    diff = x[0, 1] - x[0, 0]
    gap_mean = diff @ policy.coef_[0]
    gap_std = 0.7 * np.sqrt(diff @ policy.covariance_[0] @ diff)
    p1 = norm.cdf(gap_mean / gap_std)
    picks = policy.select(np.repeat(x, 20000, axis=0))
    assert abs(picks.mean() - p1) < 5 * np.sqrt(p1 * (1 - p1) / 20000) + 1e-3
    assert abs(policy.predict_action_proba(x)[0, 1] - p1) < 0.1


def test_lints_nu_zero_is_greedy():
    X, actions, rewards = _data(0)
    policy = LinTS(n_actions=3, nu=0.0, random_state=0).fit(X, actions, rewards)
    assert_array_equal(policy.select(X), policy.predict(X))


def test_epsilon_greedy_proba_is_exact():
    X, actions, rewards = _data(0)
    policy = EpsilonGreedy(
        n_actions=3, epsilon=0.3, schedule="constant", random_state=0
    )
    policy.fit(X, actions, rewards)
    proba = policy.predict_action_proba(X[:1])
    greedy = policy.predict(X[:1])[0]
    assert_allclose(proba[0, greedy], 0.7 + 0.1)
    picks = policy.select(np.repeat(X[:1], 30000, axis=0))
    freq = np.bincount(picks, minlength=3) / 30000
    assert_allclose(freq, proba[0], atol=0.015)


def test_epsilon_greedy_paper003_schedule():
    # eps_t = min(1, eps sqrt(n) / (2 sqrt t)): averages eps over the horizon.
    policy = EpsilonGreedy(
        n_actions=2, epsilon=0.05, schedule="inverse_sqrt", horizon=10_000
    )
    policy.select(np.zeros((1, 1)))
    # eps_t after t - 1 feedback rounds, t = 1..n (the rate of a call at that time)
    eps = np.array([_rate_after(policy, seen) for seen in range(10_000)])
    assert eps[0] == 1.0
    assert_allclose(eps.mean(), 0.05, rtol=0.05)
    with pytest.raises(ValueError, match="horizon"):
        EpsilonGreedy(n_actions=2, schedule="inverse_sqrt").select(np.zeros((1, 1)))


def _rate_after(policy, seen):
    """The exploration rate of a call after ``seen`` feedback rounds."""
    kept = policy.n_samples_seen_
    policy.n_samples_seen_ = seen
    try:
        return policy._exploration_rates(1)[0]
    finally:
        policy.n_samples_seen_ = kept


@pytest.mark.parametrize("schedule", ["inverse_sqrt", "inverse_t"])
def test_a_row_law_does_not_depend_on_its_place_in_the_call(schedule):
    # The rate of a call is shared by its rows: the same context has the same law at
    # row 0 and row 399 (it was .885 and .974 under inverse_sqrt), and select's
    # arms follow that law wherever the row stands.
    X, actions, rewards = _data(0)
    policy = EpsilonGreedy(epsilon=0.5, schedule=schedule, horizon=1000, random_state=0)
    policy.fit(X, actions, rewards)
    batch = np.repeat(X[:1], 400, axis=0)
    proba = policy.predict_action_proba(batch)
    assert_array_equal(proba[0], proba[399])
    assert_allclose(proba[0], policy.predict_action_proba(X[:1])[0], rtol=0, atol=0)
    greedy = int(np.argmax(proba[0]))
    t = policy.n_samples_seen_ + 1
    rate = {
        "inverse_sqrt": min(1.0, 0.5 * np.sqrt(1000 / t) / 2),
        "inverse_t": min(1.0, 0.5 * 3 / t),
    }[schedule]
    assert_allclose(proba[0, greedy], 1 - rate + rate / 3, rtol=1e-12)
    # Both halves of a 20,000-row call play the greedy arm at that rate: the
    # frequencies' standard error is at most sqrt(.25 / 10,000) = .005, so .02 is
    # four standard errors.
    picks = policy.select(np.repeat(X[:1], 20_000, axis=0)) == greedy
    assert_allclose(
        [picks[:10_000].mean(), picks[10_000:].mean()], proba[0, greedy], atol=0.02
    )


def test_epsilon_greedy_inverse_t_schedule():
    # The default: eps_t = min(1, eps K / t), eps = 1 (Auer et al. 2002's
    # epsilon_n-greedy with c / d^2 = 1): uniform for the first K rounds, then K / t.
    X, arms, rewards = np.zeros((6, 1)), [0, 1, 2, 3, 0, 1], [1, 0, 0, 0, 1, 0]
    policy = EpsilonGreedy(n_actions=4).fit(X, arms, rewards)  # arm 0 is greedy
    # Six rounds seen: t = 7 for every row of the next call.
    assert_array_equal(policy._exploration_rates(5), np.full(5, 4 / 7))
    fresh = EpsilonGreedy(n_actions=4, epsilon=2.0, random_state=0)
    fresh.select(np.zeros((1, 1)))
    assert_array_equal(fresh._exploration_rates(3), 1.0)  # min(1, 8 / 1)
    fresh.partial_fit(np.zeros((9, 1)), np.arange(9) % 4, np.zeros(9))
    assert_array_equal(fresh._exploration_rates(2), 0.8)  # 2 * 4 / 10
    # The uniform share each arm gets is eps_t / K in the exact probabilities.
    proba = policy.predict_action_proba(np.zeros((1, 1)))[0]
    assert_allclose(np.sort(proba)[:3], 4 / 7 / 4)


def test_epsilon_above_one_is_refused_where_it_is_a_probability():
    for schedule in ("constant", "inverse_sqrt"):
        policy = EpsilonGreedy(n_actions=2, epsilon=2.0, schedule=schedule, horizon=9)
        with pytest.raises(ValueError, match="in \\[0, 1\\]"):
            policy.select(np.zeros((1, 1)))


def test_action_mask_is_respected():
    X, actions, rewards = _data(0)
    mask = np.ones((len(X), 3), dtype=bool)
    mask[:, 1] = False
    for Policy in (LinUCB, LinTS, EpsilonGreedy, RandomPolicy):
        policy = Policy(n_actions=3, random_state=0).fit(X, actions, rewards)
        assert not np.any(policy.select(X, action_mask=mask) == 1)
        assert_allclose(
            policy.predict_action_proba(X[:5], action_mask=mask[:5])[:, 1], 0
        )


def test_numerical_failure_leaves_policy_unchanged():
    X, actions, rewards = _data(0)
    policy = LinUCB(n_actions=3).fit(X, actions, rewards)
    before = policy.predict_scores(X[:3], return_std=True)
    huge = np.full((1, 4), 1e200)
    with pytest.raises(NumericalError):
        policy.partial_fit(huge, [0], [1.0])
    after = policy.predict_scores(X[:3], return_std=True)
    assert_allclose(before[0], after[0])
    assert_allclose(before[1], after[1])
    assert policy.n_samples_seen_ == len(X)


def test_ridge_blocks_batch_path_touches_only_its_blocks():
    ridge = RidgeBlocks(3, 2, alpha=1.0)
    ridge.update(np.array([0, 0]), np.array([[1.0, 0.0], [0.0, 1.0]]), np.ones(2))
    assert_allclose(ridge.covariance[1], np.eye(2))
    assert_allclose(ridge.covariance[0], np.eye(2) / 2)


def test_unweighted_batch_fit_matches_direct_solve():
    # The unit-weight batch path gathers [x, y] once (left factor = its first d
    # columns); against inv(A) and solve(A, b) built row by row. 1e-10: a few
    # hundred rows of O(1) features, rounding of the order 1e-14.
    X, actions, rewards = _data(2, n=500)
    policy = LinUCB(n_actions=3, alpha=0.5).fit(X, actions, rewards)
    coef, cov = _direct_ridge(X, actions, rewards, 3, 0.5)
    assert_allclose(policy.coef_, coef[:, :-1], rtol=1e-10, atol=1e-12)
    assert_allclose(policy.intercept_, coef[:, -1], rtol=1e-10, atol=1e-12)
    assert_allclose(policy.covariance_, cov, rtol=1e-10, atol=1e-12)


def test_block_rows_products_match_per_block_sums():
    # Blocks 0, 2 and 5 present (1, 3, 4 absent), rows in no order; a 1-D part is
    # one column. Against each block's own rows multiplied directly (1e-12: sums
    # of 100 products of O(1) numbers, the same terms in another order at most).
    rng = np.random.default_rng(0)
    blocks = rng.choice([0, 2, 5], size=100)
    left, right, column = (rng.normal(size=s) for s in ((100, 3), (100, 2), 100))
    grouped = BlockRows(blocks)
    assert_array_equal(grouped.labels, [0, 2, 5])
    both = np.column_stack([right, column])
    direct = np.stack([left[blocks == b].T @ both[blocks == b] for b in (0, 2, 5)])
    assert_allclose(grouped.products(left, right, column), direct, rtol=1e-12)
    whole = np.column_stack([left, right, column])
    gram = np.stack([left[blocks == b].T @ whole[blocks == b] for b in (0, 2, 5)])
    assert_allclose(grouped.leading_products(3, left, right, column), gram, rtol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("rows", [1, 2, 400])  # online, one row per arm, batch
def test_intercept_written_by_the_gather_is_the_design_column(weighted, rows):
    # fit_intercept=True hands the ridge X without its column of ones, which the
    # batch gather writes itself; against the same X with that column added and
    # fit_intercept=False: the same buffer and products, so equal to the bit.
    X, actions, rewards = _data(4, n=rows)
    actions[:2] = [0, 1][:rows]  # two rows: one per arm, the vectorised path
    weights = np.random.default_rng(0).uniform(0.5, 2, rows) if weighted else None
    with_ones = np.column_stack([X, np.ones(rows)])
    got = LinUCB(n_actions=3).fit(X, actions, rewards, sample_weight=weights)
    want = LinUCB(n_actions=3, fit_intercept=False).fit(
        with_ones, actions, rewards, sample_weight=weights
    )
    assert_array_equal(got._ridge.precision, want._ridge.precision)
    assert_array_equal(got._ridge.moment, want._ridge.moment)
    assert_array_equal(got._ridge.covariance, want._ridge.covariance)


def test_block_rows_constant_part_is_a_column():
    blocks = np.array([2, 0, 2, 1])
    X = np.arange(8.0).reshape(4, 2)
    grouped = BlockRows(blocks)
    order = np.argsort(blocks, kind="stable")
    want = np.column_stack([X, np.ones(4), X[:, 0]])[order]
    assert_array_equal(grouped.sorted_rows(X, 1.0, X[:, 0]), want)


def test_linear_policies_learn(global_random_seed):
    # Behaviour against a trivial baseline: on a linear problem with noise, each
    # linear policy's regret over 600 rounds is far below the random policy's.
    rng = np.random.RandomState(global_random_seed)
    theta = rng.normal(size=(4, 5))
    X = rng.normal(size=(600, 5))
    means = X @ theta.T
    regrets = {}
    for Policy in (LinUCB, LinTS, EpsilonGreedy, RandomPolicy):
        policy = Policy(n_actions=4, random_state=global_random_seed)
        regret = 0.0
        for t in range(0, 600, 10):
            x = X[t : t + 10]
            a = policy.select(x)
            r = means[t : t + 10][np.arange(10), a] + rng.normal(size=10)
            policy.partial_fit(x, a, r)
            regret += (
                means[t : t + 10].max(1) - means[t : t + 10][np.arange(10), a]
            ).sum()
        regrets[Policy.__name__] = regret
    for name in ("LinUCB", "LinTS", "EpsilonGreedy"):
        assert regrets[name] < 0.4 * regrets["RandomPolicy"], regrets
