"""warm_start_from_logs: the rounds and weights each policy receives, and that a
warm-started policy starts better than a cold one."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.linear_model import SGDRegressor

from skbandit.offpolicy import DMLearner, warm_start_from_logs, warm_start_weights
from skbandit.policies import FALCON, CombLinUCB, EpsilonGreedy, LinUCB

from ._problems import logged_problem


def test_weights_by_hand():
    actions = np.array([0, 1, 0, 0, 1])
    p = np.array([0.5, 0.25, 0.1, 0.2, 0.5])
    w = warm_start_weights(actions, p, 3)
    # arm 0: 1/p = (2, 10, 5), mean 17/3; arm 1: (4, 2), mean 3.
    expected = np.array([2 * 3 / 17, 4 / 3, 10 * 3 / 17, 5 * 3 / 17, 2 / 3])
    assert_allclose(w, expected, rtol=1e-15)
    clipped = warm_start_weights(actions, p, 3, clip=4.0)
    assert_allclose(clipped[[0, 2, 3]], np.array([2, 4, 4]) / (10 / 3), rtol=1e-15)


def test_unweighted_warm_start_is_partial_fit_on_the_logs():
    problem = logged_problem(0, n=300)
    args = (problem.X, problem.actions, problem.rewards)
    warmed = warm_start_from_logs(LinUCB(n_actions=4), *args)
    direct = LinUCB(n_actions=4).partial_fit(*args)
    # The same update on the same rows: equal to rounding.
    assert_allclose(warmed.predict_scores(problem.X_test[:20]),
                    direct.predict_scores(problem.X_test[:20]), rtol=1e-12)  # fmt: skip
    batched = warm_start_from_logs(LinUCB(n_actions=4), *args, batch_size=64)
    # LinUCB's sufficient statistics add up over batches: rounding again.
    assert_allclose(batched.predict_scores(problem.X_test[:20]),
                    direct.predict_scores(problem.X_test[:20]), rtol=1e-9)  # fmt: skip


def test_importance_weighting_passes_the_weights():
    problem = logged_problem(1, n=300)
    args = (problem.X, problem.actions, problem.rewards)
    warmed = warm_start_from_logs(
        EpsilonGreedy(n_actions=4), *args, problem.propensities,
        weighting="importance", clip=20.0,
    )  # fmt: skip
    weights = warm_start_weights(problem.actions, problem.propensities, 4, 20.0)
    direct = EpsilonGreedy(n_actions=4).partial_fit(*args, sample_weight=weights)
    assert_allclose(warmed.predict_scores(problem.X_test[:20]),
                    direct.predict_scores(problem.X_test[:20]), rtol=1e-12)  # fmt: skip
    with pytest.raises(ValueError, match="propensities"):
        warm_start_from_logs(LinUCB(n_actions=4), *args, weighting="importance")


@pytest.mark.parametrize("weighting", ["none", "importance"])
def test_warm_started_policies_start_better_than_cold_ones(weighting):
    # Greedy value of the warm-started policy on fresh contexts: the logger is
    # worth 0.31, the best policy 0.85; measured 0.84-0.85 for both weightings.
    problem = logged_problem(2, n=1500)
    for policy in (LinUCB(n_actions=4), FALCON(n_actions=4, estimator=SGDRegressor(),
                                               random_state=0)):  # fmt: skip
        warm_start_from_logs(policy, problem.X, problem.actions, problem.rewards,
                             problem.propensities, weighting=weighting)  # fmt: skip
        greedy = policy.predict(problem.X_test)
        value = problem.q_test[np.arange(greedy.size), greedy].mean()
        assert value > problem.logging_value + 0.3, type(policy).__name__


def test_refuses_what_it_cannot_warm_start_and_rolls_back():
    problem = logged_problem(0, n=100)
    args = (problem.X, problem.actions, problem.rewards)
    with pytest.raises(TypeError, match="online"):
        warm_start_from_logs(CombLinUCB(slate_size=2), *args)
    with pytest.raises(NotImplementedError):
        warm_start_from_logs(DMLearner(n_actions=4), *args)
    policy = LinUCB(n_actions=4).partial_fit(*args)
    before = policy.predict_scores(problem.X_test[:5])
    rewards = problem.rewards.copy()
    rewards[-1] = np.nan  # the last batch fails, after the first one learned
    with pytest.raises(ValueError):
        warm_start_from_logs(policy, problem.X, problem.actions, rewards,
                             batch_size=50)  # fmt: skip
    assert_allclose(policy.predict_scores(problem.X_test[:5]), before, rtol=0)
    assert policy.n_samples_seen_ == 100
