"""The pseudo-inverse slate estimator: exact unbiasedness, coverage, errors."""
# SPDX-License-Identifier: BSD-3-Clause

from itertools import combinations, permutations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skbandit.environments import TopKBandit
from skbandit.evaluation import estimate_slate_value, uniform_slate_propensities
from skbandit.oracles import Cascade, PositionBased
from skbandit.policies import CombLinUCB


def _indicator(S, N, ranked):
    v = np.zeros(len(S) * N if ranked else N)
    for k, a in enumerate(S):
        v[k * N + a if ranked else a] = 1.0
    return v


def _all_slates(N, K, ranked):
    return list(permutations(range(N), K) if ranked else combinations(range(N), K))


@pytest.mark.parametrize("ranked", [False, True])
def test_uniform_propensities_enumerate_every_slate(ranked):
    N, K = 5, 3
    slates = _all_slates(N, K, ranked)
    G = sum(
        np.outer(_indicator(S, N, ranked), _indicator(S, N, ranked)) for S in slates
    )
    assert_allclose(uniform_slate_propensities(N, K, ranked=ranked), G / len(slates))


@pytest.mark.parametrize("ranked", [False, True])
@pytest.mark.parametrize("logging", ["uniform", "skewed"])
def test_pseudo_inverse_is_exactly_unbiased(ranked, logging, global_random_seed):
    """E_mu[w r] over every slate equals the target's value q^T phi."""
    rng = np.random.default_rng(global_random_seed)
    N, K = 5, 2
    slates = _all_slates(N, K, ranked)
    mu = (
        np.ones(len(slates))
        if logging == "uniform"
        else rng.uniform(0.2, 3, len(slates))
    )
    mu /= mu.sum()
    pi = rng.dirichlet(np.full(len(slates), 0.3))  # any target distribution
    ind = np.array([_indicator(S, N, ranked) for S in slates])
    phi = rng.normal(size=ind.shape[1])  # additive reward per arm / (slot, arm)
    q = pi @ ind
    G = (mu[:, None, None] * ind[:, :, None] * ind[:, None, :]).sum(axis=0)
    q_in = q.reshape(1, K, N) if ranked else q[None]
    terms = [
        estimate_slate_value(q_in, [S], [phi @ ind[i]], G).value
        for i, S in enumerate(slates)
    ]
    assert_allclose(mu @ np.array(terms), q @ phi, rtol=1e-9, atol=1e-12)


def _logged(env, n, seed):
    rng = np.random.default_rng(seed)
    X = env.contexts(n)
    slates = np.argsort(rng.random((n, env.n_actions)), axis=1)[:, : env.slate_size]
    return X, slates, env.rewards(slates), env.expected_rewards


def test_interval_covers_the_true_value_over_seeds():
    """Uniform logging on the paper's simulator, a learnt CombLinUCB evaluated."""
    N, K = 8, 3
    env = TopKBandit("linear", n_actions=N, n_features=4, slate_size=K, noise=0.1)
    env.reset(0)
    X, S, r, _ = _logged(env, 300, 0)
    target = CombLinUCB(slate_size=K, random_state=0).fit(X, S, r)
    Xbig = env.contexts(100_000)  # the true value: E_x[q(x)^T h(x)]
    truth = (target.predict_action_proba(Xbig) * env.expected_rewards).sum(1).mean()
    G = uniform_slate_propensities(N, K)
    values, half_widths, covered = [], [], []
    for seed in range(60):  # fresh rounds of the same problem (same hidden a)
        X, S, r, _ = _logged(env, 400, seed)
        for method in ("pi", "wpi"):
            v = estimate_slate_value(
                target.predict_action_proba(X), S, r, G, method=method
            )
            covered.append(v.ci_low <= truth <= v.ci_high)
            if method == "pi":
                values.append(v.value)
                half_widths.append((v.ci_high - v.ci_low) / 2)
    # Here 0.95 and 0.49 standard errors; over problems 0-19 (environment, target
    # and log seeds) the coverage was 0.88-0.98 and the bias at most 1.95 of them.
    assert np.mean(covered) >= 0.85
    # Coverage alone passes an interval inflated tenfold. The half-width must match
    # 1.96 times the estimates' spread over the 60 independent logs; that spread
    # is itself known to about 1 / sqrt(2 * 59) = 9 %, so [0.7, 1.4] holds across
    # seeds and still refuses an interval off by a factor of two.
    spread = 1.96 * np.std(values, ddof=1)
    assert 0.7 < np.mean(half_widths) / spread < 1.4
    # no bias: the mean over seeds is within 3 of its standard errors
    assert abs(np.mean(values) - truth) < 3 * np.std(values) / np.sqrt(60)


def test_score_of_a_slate_policy_is_the_weighted_estimate():
    env = TopKBandit("linear", n_actions=6, n_features=3, slate_size=2).reset(1)
    X, S, r, _ = _logged(env, 50, 1)
    policy = CombLinUCB(slate_size=2, random_state=0).fit(X, S, r)
    G = uniform_slate_propensities(6, 2)
    # Derived by hand, not by the estimator's code: uniform slates of K = 2 among
    # N = 6 arms give Gamma = a I + b 1 1^T with b = K (K - 1) / (N (N - 1)) = 1/15
    # and a = K / N - b = 4/15, whose inverse is (I - b / (a + N b) 1 1^T) / a =
    # 15/4 (I - 1 1^T / 10). With q summing to K = 2 over the arms, the weight of a
    # logged slate S is w = q^T Gamma^-1 1_S = 15/4 (q(S) - 2 * 2 / 10), and the
    # weighted estimate is sum w r / sum w over the summed slate rewards.
    q = policy.predict_action_proba(X)
    w = 15 / 4 * (np.take_along_axis(q, S, axis=1).sum(axis=1) - 0.4)
    by_hand = (w * r.sum(axis=1)).sum() / w.sum()
    # A pseudo-inverse against a closed-form inverse: float64 rounding of 50 terms.
    assert policy.score(X, S, r, propensities=G) == pytest.approx(by_hand, rel=1e-9)


def test_score_under_a_position_based_oracle_is_the_ranked_estimate():
    """Position k shows chi_k v: the slate reward adds up over (position, arm)
    pairs, not over arms. The score is then unbiased with the ranked propensities,
    where the unranked estimate (what score used before) misses the truth."""
    N, K, chi = 5, 2, np.array([1.0, 0.2])
    env = TopKBandit("linear", n_actions=N, n_features=3, slate_size=K, noise=0.1)
    env.reset(2)
    X, S, r, _ = _logged(env, 200, 0)
    policy = CombLinUCB(slate_size=K, oracle=PositionBased(chi), random_state=0)
    policy.fit(X, S, r * chi)
    Xbig = env.contexts(5_000)
    slates = policy.select(Xbig)  # deterministic: the slates score evaluates
    truth = (chi * env.expected_rewards[np.arange(5_000)[:, None], slates]).sum(1)
    truth = truth.mean()
    ranked = uniform_slate_propensities(N, K, ranked=True)
    scores, unranked = [], []
    for seed in range(1, 21):  # fresh logs of the same problem
        X, S, r, _ = _logged(env, 300, seed)
        scores.append(policy.score(X, S, r * chi, propensities=ranked))
        q = np.zeros((len(X), N))  # the deterministic policy's arms, unranked
        q[np.arange(len(X))[:, None], policy.select(X)] = 1.0
        G = uniform_slate_propensities(N, K)
        unranked.append(estimate_slate_value(q, S, r * chi, G, method="wpi").value)
    se = np.std(scores) / np.sqrt(len(scores))
    # wPI's bias is O(1/n) at n = 300, far below these 4 standard errors of the mean
    assert abs(np.mean(scores) - truth) < 4 * se
    assert abs(np.mean(unranked) - truth) > 4 * se  # the unranked form is biased
    with pytest.raises(ValueError, match="propensities"):  # unranked Gamma: refused
        policy.score(X, S, r * chi, propensities=G)


def test_score_under_a_cascade_oracle_raises():
    env = TopKBandit("linear", n_actions=4, n_features=3, slate_size=2).reset(0)
    X, S, r, _ = _logged(env, 20, 0)
    policy = CombLinUCB(slate_size=2, oracle=Cascade(), random_state=0).fit(X, S, r)
    with pytest.raises(ValueError, match="cascade"):
        policy.score(X, S, r, propensities=uniform_slate_propensities(4, 2))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"actions": [[0, 0]]}, "repeats an arm"),
        ({"actions": [[0, 5]]}, "actions"),
        ({"rewards": [1.0, 2.0]}, "rewards"),
        ({"propensities": np.eye(4)}, "propensities"),
        ({"propensities": 2 * np.eye(3)}, "probabilities"),
        ({"action_proba": np.ones(3)}, "action_proba"),
        # 0-d arrays: scikit-learn's check_array raises TypeError for them
        ({"rewards": np.array(1.0)}, "rewards must be an array"),
        ({"propensities": np.array(0.5)}, "propensities must be an array"),
        ({"action_proba": np.array(1.0)}, "action_proba must be an array"),
    ],
)
def test_bad_input_is_named(kwargs, match):
    args = {
        "action_proba": [[1.0, 1.0, 0.0]],
        "actions": [[0, 1]],
        "rewards": [1.0],
        "propensities": uniform_slate_propensities(3, 2),
        **kwargs,
    }
    with pytest.raises(ValueError, match=match):
        estimate_slate_value(**args)
