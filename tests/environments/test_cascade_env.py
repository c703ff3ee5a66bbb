"""CascadeBandit: the cascade click model, its exact value, and the online loop."""

import itertools

import numpy as np
import pytest
from sklearn.base import clone

from skbandit.environments import CascadeBandit, TopKBandit, cascade_value
from skbandit.evaluation import compare, simulate
from skbandit.oracles import Cascade
from skbandit.policies import CombLinTS, CombLinUCB


def _enumerated_value(u, psi):
    """Expected reward by enumerating every attraction pattern of the slate."""
    value = 0.0
    for pattern in itertools.product([0, 1], repeat=len(u)):
        p = np.prod([ui if w else 1 - ui for ui, w in zip(u, pattern, strict=True)])
        if any(pattern):
            value += p * psi[pattern.index(1)]
    return value


@pytest.mark.parametrize("psi", [None, [1.0, 0.7, 0.2]])
def test_value_matches_enumeration_of_attractions(psi):
    rng = np.random.default_rng(0)
    u = rng.random((6, 3))
    u[0] = [0.0, 1.0, 0.5]
    expected = [_enumerated_value(row, psi or [1.0] * 3) for row in u]
    np.testing.assert_allclose(cascade_value(u, psi), expected, rtol=1e-12)


@pytest.mark.parametrize("psi", [None, [1.0, 0.5, 0.5], [0.9, 0.6, 0.1]])
@pytest.mark.parametrize("reward", ["linear", "quadratic", "cosine_pi"])
def test_optimal_value_is_the_brute_force_best_ordered_slate(reward, psi):
    env = CascadeBandit(
        reward, n_actions=5, n_features=3, slate_size=3, position_discounts=psi
    ).reset(1)
    env.contexts(4)
    u = env.expected_rewards
    perms = list(itertools.permutations(range(5), 3))
    psi_ = psi or [1.0] * 3
    best = [
        max(_enumerated_value(u[t, list(s)], psi_) for s in perms) for t in range(4)
    ]
    np.testing.assert_allclose(env.optimal_value(), best, rtol=1e-12)
    np.testing.assert_allclose(env.regret(env.optimal_slates()), 0.0, atol=1e-15)
    for s in perms[:12]:
        slates = np.tile(s, (4, 1))
        value = [_enumerated_value(u[t, list(s)], psi_) for t in range(4)]
        np.testing.assert_allclose(env.slate_value(slates), value, rtol=1e-12)
        assert np.all(env.regret(slates) >= -1e-15)


def test_feedback_structure_and_monte_carlo_value():
    psi = np.array([1.0, 0.8, 0.5])
    env = CascadeBandit(
        "linear", n_actions=6, n_features=4, slate_size=3, position_discounts=psi
    ).reset(3)
    n = 40_000
    env.contexts(n)
    slates = np.tile([0, 1, 2], (n, 1))
    fb = env.rewards(slates)
    seen = ~np.isnan(fb)
    # A prefix is observed; the click (psi_k) is its last slot, zeros before it.
    assert np.all(seen[:, 0]) and np.all(seen[:, :-1] >= seen[:, 1:])
    last = seen.sum(axis=1) - 1
    rows = np.arange(n)
    at_last = fb[rows, last]
    clicked = at_last > 0
    np.testing.assert_array_equal(at_last[clicked], psi[last[clicked]])
    np.testing.assert_array_equal(last[~clicked], 2)  # no click: all seen, all 0
    assert np.nansum(fb, axis=1)[~clicked].max() == 0
    assert np.all((fb[seen] == 0) | np.isin(fb[seen], psi))
    # Monte Carlo: the realised reward's mean minus the closed form's, within 5 sd.
    diff = np.nansum(fb, axis=1) - env.slate_value(slates)
    assert abs(diff.mean()) < 5 * diff.std() / np.sqrt(n)
    # ... and each slot is seen with the probability of reaching it.
    u = env.expected_rewards[:, :3]
    reach = np.cumprod(np.c_[np.ones(n), 1 - u[:, :2]], axis=1)
    gap = seen - reach
    assert np.all(np.abs(gap.mean(0)) < 5 * gap.std(0) / np.sqrt(n) + 1e-12)


def test_attraction_range_and_common_random_numbers():
    env = CascadeBandit("cosine_pi", n_actions=7, max_attraction=0.3).reset(0)
    env.contexts(200)
    u = env.expected_rewards
    assert u.min() >= 0 and u.max() <= 0.3 and u.max() > 0.2
    a = env.rewards(np.tile([0, 1, 2, 3], (200, 1)))
    b = env.rewards(np.tile([0, 1, 2, 3], (200, 1)))
    np.testing.assert_array_equal(a, b)  # the same round, the same clicks


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"position_discounts": [1.0, 0.5]}, "shape"),
        ({"position_discounts": [0.5, 1.0, 1.0, 1.0]}, "non-increasing"),
        ({"position_discounts": [1.0, 0.5, 0.0, 0.0]}, r"\(0, 1\]"),
        ({"max_attraction": 0.0}, "max_attraction"),
        ({"reward": "quadratic_form"}, "bounded"),
        ({"slate_size": 30}, "slate_size"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CascadeBandit(**kwargs)


def test_bad_slates():
    env = CascadeBandit(n_actions=5, slate_size=2).reset(0)
    env.contexts(2)
    with pytest.raises(ValueError, match="repeat"):
        env.rewards([[0, 0], [1, 2]])
    with pytest.raises(ValueError, match="shape"):
        env.slate_value([[0, 1]])


def test_simulate_reports_the_cascade_regret_and_learns():
    psi = [1.0, 0.8, 0.6]
    env = CascadeBandit(
        "linear",
        n_actions=10,
        n_features=5,
        slate_size=3,
        position_discounts=psi,
        max_attraction=0.5,
    )
    policy = CombLinUCB(
        slate_size=3, oracle=Cascade(psi), alpha=1.0, beta=0.2, random_state=0
    )
    res = simulate(policy, env, 600, random_state=0, progress=False)
    # The first round's regret, derived by brute force rather than by the
    # environment's code: the best of all 720 ordered slates against the chosen one,
    # each valued click by click (position k clicked: psi_k u_k prod_{j<k} (1 - u_j)).
    env.reset(0)
    env.contexts(1)
    u = env.expected_rewards[0]

    def value(slate):
        reach, total = 1.0, 0.0
        for k, arm in enumerate(slate):
            total += reach * u[arm] * psi[k]
            reach *= 1.0 - u[arm]
        return total

    best = max(value(s) for s in itertools.permutations(range(10), 3))
    # Sums of three products in another order: float64 rounding only.
    np.testing.assert_allclose(
        res.regret[0], best - value(res.actions[0]), rtol=1e-9, atol=1e-12
    )
    assert np.all(res.regret >= -1e-12)
    # NaN slots reached the policy, which skipped them; the slate earns its click.
    assert np.isnan(res.rewards).any()
    np.testing.assert_allclose(
        res.mean_reward, np.nansum(res.rewards, axis=1).mean(), rtol=1e-12
    )
    # It learns: the last third's regret is well under the first slate's (the
    # arms' order is random, so a fixed slate is a uniform random one). The ratio is
    # 0.17 here; over seeds 0-19 (policy and environment) 0.006-0.32, median 0.06.
    env.reset(0)
    env.contexts(600)
    fixed = env.regret(np.tile([0, 1, 2], (600, 1)))
    assert res.regret[400:].mean() < 0.4 * fixed[400:].mean()


def test_compare_runs_slate_policies_on_the_cascade():
    env = CascadeBandit("linear", n_actions=8, n_features=4, slate_size=2)
    policies = {
        "UCB": CombLinUCB(slate_size=2, oracle=Cascade()),
        "TS": CombLinTS(slate_size=2),
    }
    table = compare(
        policies, env, n_rounds=60, n_runs=2, random_state=0, progress=False
    )
    summary = table.summary()
    assert set(summary.index) == {"UCB", "TS"}
    # Each run is the simulate run of its seeds: same slates, same cascade regret.
    for name, policy in policies.items():
        finals = []
        for i in range(2):
            manual = simulate(
                clone(policy).set_params(random_state=int(table.policy_seeds[i])),
                env,
                60,
                random_state=int(table.env_seeds[i]),
                progress=False,
            )
            run = table.results[table.policies.index(name) * 2 + i]
            np.testing.assert_array_equal(run.actions, manual.actions)
            np.testing.assert_array_equal(run.regret, manual.regret)
            finals.append(manual.total_regret)
        assert summary.loc[name, "regret_mean"] == pytest.approx(np.mean(finals))


def test_topk_regret_is_optimal_minus_slate_value():
    env = TopKBandit("linear", n_actions=6, n_features=3, slate_size=2).reset(0)
    env.contexts(3)
    slates = np.array([[0, 1], [2, 3], [4, 5]])
    h = env.expected_rewards
    np.testing.assert_allclose(
        env.slate_value(slates), h[[[0], [1], [2]], slates].sum(1)
    )
    best = max(h[0, i] + h[0, j] for i, j in itertools.combinations(range(6), 2))
    np.testing.assert_allclose(env.optimal_value()[0], best)
