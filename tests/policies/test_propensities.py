"""``select(X, return_propensities=True)``: the probability of each chosen arm.

API section 5e: ``p[i]`` is the probability that the policy, in its current state,
picks ``a[i]`` for ``X[i]`` (for slates, each arm's probability of being in the
slate). These tests draw one context thousands of times from fitted policies of
every family and compare how often each arm comes with the propensity returned.
"""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skbandit.evaluation import chosen_propensities
from skbandit.policies import (
    FALCON,
    BootstrappedTS,
    CombLinTS,
    CombLinUCB,
    EpsilonGreedy,
    LinES,
    LinTS,
    LinUCB,
    LogTS,
    NeuralEpsilonGreedy,
    NeuralTS,
    RandomPolicy,
    SquareCB,
)

#: Draws of the one context: the binomial standard error of a frequency is then at
#: most 0.5 / sqrt(2000) = 0.011 (0.018 with the 800 draws of the slow policies,
#: whose every select refits or runs a network).
N_DRAWS = 2000
SLOW = (BootstrappedTS, NeuralTS, NeuralEpsilonGreedy)
#: Calls checked against predict_action_proba, with return_propensities=True.
N_CHECKED = 30
#: Monte Carlo draws behind a sampling policy's propensity (``_n_proba_draws``).
N_MC = 256

_NEURAL = {"hidden_layer_sizes": (8,), "n_steps": 20, "random_state": 0}

# (family, policy): a policy of each family, exact and Monte Carlo, slates included.
POLICIES = [
    ("linear", LinTS(n_actions=3, nu=1.0, random_state=0)),
    # A constant 0.3: each arm the greedy choice passes over is played 1/10 of the
    # time (inverse_t's 0.3 K / t is 0.02 at round 41: a policy that never
    # explored missed its frequencies by less than the margin).
    (
        "linear",
        EpsilonGreedy(n_actions=3, epsilon=0.3, schedule="constant", random_state=0),
    ),
    # inverse_t at round 41: min(1, 10 * 3 / 41) = 0.73.
    ("linear", EpsilonGreedy(n_actions=3, epsilon=10.0, random_state=0)),
    ("linear", LinUCB(n_actions=3, random_state=0)),
    ("glm", LogTS(n_actions=3, nu=1.0, random_state=0)),
    ("estimator", SquareCB(n_actions=3, random_state=0)),
    ("estimator", FALCON(n_actions=3, random_state=0)),
    ("estimator", BootstrappedTS(n_actions=3, random_state=0)),
    (
        "ensemble",
        LinES(n_actions=3, first_phase=10, perturbation_scale=1.0, random_state=0),
    ),
    ("neural", NeuralTS(n_actions=3, nu=1.0, **_NEURAL)),
    ("neural", NeuralEpsilonGreedy(n_actions=3, epsilon=0.3, **_NEURAL)),
    ("slate", CombLinTS(n_actions=5, slate_size=2, random_state=0)),
    ("slate", CombLinUCB(n_actions=5, slate_size=2, random_state=0)),
    ("random", RandomPolicy(n_actions=3, random_state=0)),
]


def _fitted(policy):
    """The policy after 40 logged rounds of a 3-feature problem (binary rewards)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    slate = getattr(policy, "slate_size", None)
    n_actions = policy.n_actions
    if slate is None:
        actions = rng.integers(0, n_actions, size=40)
        rewards = (rng.random(40) < 0.3 + 0.2 * (actions == 1)).astype(float)
    else:
        actions = np.array([rng.permutation(n_actions)[:slate] for _ in range(40)])
        rewards = (rng.random((40, slate)) < 0.3).astype(float)
    return policy.fit(X, actions, rewards), X[:1]


def _ids(cases):
    return [f"{family}-{type(policy).__name__}" for family, policy in cases]


@pytest.mark.parametrize("family, policy", POLICIES, ids=_ids(POLICIES))
def test_select_frequencies_match_the_propensities(family, policy):
    policy, x = _fitted(policy)
    # The propensities of a few draws: the state does not move between draws, so
    # each arm has one propensity, predict_action_proba's (repaired where a Monte
    # Carlo estimate missed an arm that select drew).
    n_mc = N_MC if _samples(policy) else None
    proba = policy.predict_action_proba(x)[0]
    for _ in range(N_CHECKED):
        arms, props = policy.select(x, return_propensities=True)
        assert props.shape == arms.shape
        expected = chosen_propensities(proba[None], arms, n_draws=n_mc)
        assert_allclose(props, expected, rtol=1e-12)
    _assert_frequencies_match(policy, x, proba, n_mc)


def _assert_frequencies_match(policy, x, p, n_mc):
    """How often select plays each arm on ``x`` against its propensities ``p``.

    ``p`` is every arm's propensity, drawn or not (slates: its inclusion
    probability). The frequency of each arm over n draws (one select call each,
    as a server makes them) against those propensities. Margin: 5 standard errors
    of the binomial frequency, plus (for Monte Carlo propensities) those of the
    ``n_mc``-draw estimate itself, floored at one draw in n so that p near 0 or 1
    does not shrink it to nothing, and one draw of slack for granularity.
    """
    n = 800 if isinstance(policy, SLOW) else N_DRAWS
    drawn = np.array([policy.select(x)[0] for _ in range(n)])
    freq = np.array([np.count_nonzero(drawn == arm) for arm in range(p.size)]) / n
    variance = p * (1 - p) * (1 / n + (0 if n_mc is None else 1 / n_mc))
    margin = 5 * np.sqrt(np.maximum(variance, 1 / n**2)) + 1 / n
    assert np.all(np.abs(freq - p) <= margin), (type(policy), freq, p, margin)


class _NeverExplores(EpsilonGreedy):
    """An epsilon-greedy policy whose select forgets to explore (a broken one)."""

    def select(self, X, **kwargs):
        return self.predict_scores(X).argmax(axis=1)


@pytest.mark.parametrize("params", [{"epsilon": 0.3, "schedule": "constant"}, {}])
def test_the_frequency_check_fails_a_policy_that_never_explores(params):
    # Its propensities still say epsilon (0.3 constant, or inverse_t's 3 / 41 = 0.07
    # at the default epsilon=1): the frequencies must give it away.
    policy, x = _fitted(_NeverExplores(n_actions=3, random_state=0, **params))
    with pytest.raises(AssertionError):
        _assert_frequencies_match(policy, x, policy.predict_action_proba(x)[0], None)


def _samples(policy):
    """Whether the policy's propensities are a Monte Carlo estimate."""
    tags = policy.__sklearn_tags__().policy_tags
    return tags.stochastic_select and not tags.exact_action_proba


@pytest.mark.parametrize(
    "policy",
    [LinUCB(n_actions=3, random_state=0), CombLinUCB(n_actions=5, slate_size=2)],
    ids=["LinUCB", "CombLinUCB"],
)
def test_a_deterministic_policy_logs_propensity_one(policy):
    policy, x = _fitted(policy)
    X = np.repeat(x, 5, axis=0)
    arms, props = policy.select(X, return_propensities=True)
    assert_array_equal(props, np.ones(arms.shape))


def test_ties_share_the_propensity():
    # Unfitted LinUCB scores every arm alike: the tie-break is uniform over 4 arms.
    policy = LinUCB(n_actions=4, random_state=0)
    arms, props = policy.select(np.zeros((6, 2)), return_propensities=True)
    assert_allclose(props, 0.25, rtol=1e-12)  # 1/4 exactly in floating point
    assert arms.shape == (6,)


@pytest.mark.parametrize(
    "policy",
    [LinTS(n_actions=3, nu=1.0), CombLinTS(n_actions=5, slate_size=2)],
    ids=["LinTS", "CombLinTS"],
)
def test_propensities_do_not_change_the_arms(policy):
    # Asking for the propensities draws from the policy's random state exactly as
    # select alone does: the same seed gives the same arms.
    a, x = _fitted(policy.set_params(random_state=3))
    b, _ = _fitted(type(policy)(**policy.get_params()))
    X = np.repeat(x, 4, axis=0)
    alone = [a.select(X) for _ in range(5)]
    with_props = [b.select(X, return_propensities=True)[0] for _ in range(5)]
    for one, other in zip(alone, with_props, strict=True):
        assert_array_equal(one, other)


def test_masked_arms_never_drawn_and_propensities_renormalised():
    policy, x = _fitted(
        EpsilonGreedy(n_actions=3, epsilon=0.3, schedule="constant", random_state=0)
    )
    mask = np.array([[True, False, True]] * 200)
    X = np.repeat(x, 200, axis=0)
    arms, props = policy.select(X, action_mask=mask, return_propensities=True)
    assert not np.any(arms == 1)
    proba = policy.predict_action_proba(x, action_mask=mask[:1])[0]
    assert_allclose(props, proba[arms], rtol=1e-12)


def test_a_pipeline_returns_the_policy_propensities():
    from sklearn.preprocessing import StandardScaler

    from skbandit.pipeline import make_bandit_pipeline

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    actions, rewards = rng.integers(0, 3, size=60), rng.random(60)
    pipe = make_bandit_pipeline(StandardScaler(), SquareCB(n_actions=3, random_state=0))
    pipe.fit(X, actions, rewards)
    arms, props = pipe.select(X[:10], return_propensities=True)
    proba = pipe.predict_action_proba(X[:10])
    # Inverse-gap weighting is exact: the same float operations on the same state.
    assert_allclose(props, proba[np.arange(10), arms], rtol=1e-12)
