"""The learners learn, and are scikit-learn estimators: clone, pickle, Pipeline,
GridSearchCV, errors that leave them unchanged."""
# SPDX-License-Identifier: BSD-3-Clause

import pickle
import warnings

import joblib
import numpy as np
import pytest
import sklearn
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skbandit.offpolicy import (
    DMLearner,
    DRLearner,
    IPWLearner,
    NeuralPolicyLearner,
    estimate_propensities,
)
from skbandit.pipeline import make_bandit_pipeline
from skbandit.utils._param_validation import InvalidParameterError

from ._problems import logged_problem, true_value


def _fast_neural(**params):
    return NeuralPolicyLearner(max_epochs=15, **params)


LEARNERS = {
    "DM": lambda: DMLearner(),
    "IPW": lambda: IPWLearner(),
    "IPW-regression": lambda: IPWLearner(reduction="regression"),
    "DR": lambda: DRLearner(random_state=0),
    "DR-classification": lambda: DRLearner(reduction="classification", random_state=0),
    "Neural-snipw": lambda: _fast_neural(objective="snipw", random_state=0),
    "Neural-dr": lambda: _fast_neural(random_state=0),
}


@pytest.mark.parametrize("name", list(LEARNERS))
@pytest.mark.parametrize("seed", [0, 1])
def test_learners_beat_the_logging_policy(name, seed):
    # The logging policy favours poor arms (value about 0.32); the best policy is
    # worth about 0.8. Every learner's true value on fresh contexts, measured on
    # seeds 0-2 at n=2000, was above 0.75: a 0.3 margin over the logger, and 0.1
    # below the best policy, hold with room.
    problem = logged_problem(seed)
    policy = LEARNERS[name]().fit(
        problem.X, problem.actions, problem.rewards, problem.propensities
    )
    value = true_value(policy, problem)
    assert value > problem.logging_value + 0.3
    assert value > problem.best_value - 0.1


def test_missing_propensities_are_estimated_with_a_warning_that_says_why():
    problem = logged_problem(0)
    with pytest.warns(UserWarning) as caught:
        policy = DRLearner(random_state=0).fit(
            problem.X, problem.actions, problem.rewards
        )
    message = str(caught[0].message)
    assert "unmeasured confounding" in message and "overlap" in message
    assert true_value(policy, problem) > problem.best_value - 0.1
    # DM needs no propensities: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DMLearner().fit(problem.X, problem.actions, problem.rewards)


def test_estimated_propensities_recover_a_logistic_logging_law():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4000, 3))
    logits = X @ rng.normal(size=(3, 4))
    law = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    actions = np.argmax(np.cumsum(law, axis=1) > rng.random(4000)[:, None], axis=1)
    estimated, proba = estimate_propensities(
        X, actions, random_state=0, return_proba=True
    )
    # A well-specified multinomial logit on 4000 rows: mean error measured at
    # 0.01-0.02 over seeds; 0.03 leaves room, while an unfitted (uniform) law
    # would be 0.2 off.
    assert np.mean(np.abs(estimated - law[np.arange(4000), actions])) < 0.03
    assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-9)
    assert estimated.min() >= 0.01


def test_epsilon_mixes_a_uniform_arm():
    problem = logged_problem(0, n=500)
    greedy = DMLearner().fit(problem.X, problem.actions, problem.rewards)
    mixed = DMLearner(epsilon=0.2).fit(problem.X, problem.actions, problem.rewards)
    g = greedy.predict_action_proba(problem.X_test[:50])
    m = mixed.predict_action_proba(problem.X_test[:50])
    # Exact: a convex combination of two exact laws.
    assert_allclose(m, 0.8 * g + 0.2 / 4, rtol=1e-12)
    assert mixed.__sklearn_tags__().policy_tags.stochastic_select
    assert not greedy.__sklearn_tags__().policy_tags.stochastic_select


@pytest.mark.parametrize("name", ["DM", "IPW", "DR", "Neural-snipw"])
def test_clone_pickle_and_joblib(name, tmp_path):
    problem = logged_problem(0, n=400)
    policy = LEARNERS[name]()
    assert clone(policy).get_params() == policy.get_params()
    policy.fit(problem.X, problem.actions, problem.rewards, problem.propensities)
    path = tmp_path / "policy.joblib"
    joblib.dump(policy, path)
    for loaded in (joblib.load(path), pickle.loads(pickle.dumps(policy))):
        assert_array_equal(
            loaded.predict_action_proba(problem.X_test[:20]),
            policy.predict_action_proba(problem.X_test[:20]),
        )
        # The same select sequence after loading.
        assert_array_equal(
            loaded.select(problem.X_test[:20]),
            pickle.loads(pickle.dumps(policy)).select(problem.X_test[:20]),
        )


def test_pipelines_pass_the_propensities():
    problem = logged_problem(2, n=600)
    args = (problem.X, problem.actions)
    direct = DRLearner(random_state=0).fit(
        StandardScaler().fit_transform(problem.X), problem.actions, problem.rewards,
        problem.propensities,
    )  # fmt: skip
    expected = direct.predict_scores(
        StandardScaler().fit(problem.X).transform(problem.X_test[:30])
    )
    plain = Pipeline([("scale", StandardScaler()), ("dr", DRLearner(random_state=0))])
    plain.fit(*args, dr__rewards=problem.rewards, dr__propensities=problem.propensities)
    bandit = make_bandit_pipeline(StandardScaler(), DRLearner(random_state=0))
    bandit.fit(*args, problem.rewards, drlearner__propensities=problem.propensities)
    for pipe in (plain, bandit):
        # The same rows and seeds through the same code: equal to rounding.
        got = pipe[-1].predict_scores(pipe[:-1].transform(problem.X_test[:30]))
        assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert bandit.select(problem.X_test[:5]).shape == (5,)
    assert np.isfinite(
        bandit.score(problem.X, problem.actions, problem.rewards,
                     propensities=problem.propensities)
    )  # fmt: skip


def test_grid_search_on_held_out_logs():
    problem = logged_problem(0, n=1500)
    with sklearn.config_context(enable_metadata_routing=True):
        learner = (
            IPWLearner(reduction="regression")
            .set_fit_request(rewards=True, propensities=True)
            .set_score_request(rewards=True, propensities=True)
        )
        search = GridSearchCV(learner, {"clip": [2.0, None]}, cv=3)
        search.fit(problem.X, problem.actions, rewards=problem.rewards,
                   propensities=problem.propensities)  # fmt: skip
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and np.all((scores >= 0) & (scores <= 1))
    assert true_value(search.best_estimator_, problem) > problem.logging_value + 0.3


def test_failed_fit_leaves_the_learner_unchanged():
    problem = logged_problem(0, n=300)
    policy = DRLearner(random_state=0).fit(
        problem.X, problem.actions, problem.rewards, problem.propensities
    )
    before = policy.predict_scores(problem.X_test[:10])
    state = dict(vars(policy))
    bad = problem.propensities.copy()
    bad[3] = 0.0
    with pytest.raises(ValueError, match="propensities"):
        policy.fit(problem.X, problem.actions, problem.rewards, bad)
    # A model that fails mid-fit, after the propensities passed.
    policy.set_params(reward_model=HistGradientBoostingRegressor(max_iter=-1))
    with pytest.raises(InvalidParameterError):
        policy.fit(problem.X, problem.actions, problem.rewards, problem.propensities)
    assert vars(policy).keys() == state.keys()
    assert all(vars(policy)[k] is v for k, v in state.items() if k != "reward_model")
    assert_array_equal(policy.predict_scores(problem.X_test[:10]), before)


def test_partial_fit_refuses_and_leaves_it_unfitted():
    problem = logged_problem(0, n=100)
    policy = IPWLearner(n_actions=4)
    with pytest.raises(NotImplementedError, match="warm-start"):
        policy.partial_fit(problem.X, problem.actions, problem.rewards)
    assert not hasattr(policy, "n_actions_")


def test_bad_parameters_and_contexts_are_named():
    problem = logged_problem(0, n=100)
    with pytest.raises(InvalidParameterError, match="reduction"):
        IPWLearner(reduction="tree").fit(
            problem.X, problem.actions, problem.rewards, problem.propensities
        )
    with pytest.raises(ValueError, match="rewards"):
        DMLearner().fit(problem.X, problem.actions)
    with pytest.raises(ValueError, match="shared contexts"):
        DMLearner().fit(np.zeros((10, 4, 2)), np.zeros(10, dtype=int), np.zeros(10))
