"""DRLearner's choice between the policies of its DR and IPW targets.

The DR value it records for each candidate is recomputed independently (the reward
model refitted by hand, the value by :func:`skbandit.evaluation.dr_value`), and the
policy it keeps is the candidate of higher value, equal to the learner that fits
those targets alone.
"""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.linear_model import Ridge

from skbandit.evaluation import dr_value
from skbandit.offpolicy import DRLearner, IPWLearner

from ._problems import logged_problem


def _in_sample_rewards(problem, n_actions=4):
    """Each arm's ridge on its own rounds, predicting every round, clipped."""
    q = np.column_stack([
        Ridge().fit(problem.X[problem.actions == k],
                    problem.rewards[problem.actions == k]).predict(problem.X)
        for k in range(n_actions)
    ])  # fmt: skip
    return np.clip(q, problem.rewards.min(), problem.rewards.max())


def test_the_kept_policy_is_the_candidate_of_higher_dr_value():
    seen = set()
    for seed in range(4):
        problem = logged_problem(seed, n=800)
        logs = (problem.X, problem.actions, problem.rewards, problem.propensities)
        learner = DRLearner(cv=None, random_state=0).fit(*logs)
        candidates = {
            "dr": DRLearner(cv=None, select_by_value=False, random_state=0).fit(*logs),
            "ipw": IPWLearner(random_state=0).fit(*logs),
        }
        q = _in_sample_rewards(problem)
        for name, policy in candidates.items():
            greedy = np.eye(4)[policy.predict_scores(problem.X).argmax(axis=1)]
            # Two summations of the same terms in another order: 1e-12.
            assert learner.dr_values_[name] == pytest.approx(
                dr_value(greedy, *logs[1:], expected_rewards=q), rel=1e-12
            )
        kept = max(learner.dr_values_, key=learner.dr_values_.get)
        assert learner.selected_targets_ == kept
        assert_allclose(
            learner.predict_scores(problem.X_test[:50]),
            candidates[kept].predict_scores(problem.X_test[:50]),
            rtol=1e-12,
        )
        seen.add(kept)
    assert seen == {"dr", "ipw"}  # both branches ran


def test_without_selection_only_the_dr_targets_are_fitted():
    problem = logged_problem(0, n=500)
    logs = (problem.X, problem.actions, problem.rewards, problem.propensities)
    learner = DRLearner(select_by_value=False, random_state=0).fit(*logs)
    assert learner.selected_targets_ == "dr"
    assert set(learner.dr_values_) == {"dr"}
