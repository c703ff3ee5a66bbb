"""Policies in scikit-learn's model selection, with metadata routing (API.md §5)."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
import sklearn
from numpy.testing import assert_allclose
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.preprocessing import StandardScaler

from skbandit.evaluation import ips_value, make_ope_scorer, snips_value
from skbandit.pipeline import make_bandit_pipeline
from skbandit.policies import LinTS, LinUCB
from skbandit.utils.discovery import all_policies


@pytest.fixture
def with_routing():
    """Metadata routing on for one test only (config_context: it does not leak)."""
    with sklearn.config_context(enable_metadata_routing=True):
        yield
    assert not sklearn.get_config()["enable_metadata_routing"]


@pytest.mark.parametrize("n_actions", [3, None])
def test_api_recipe_grid_search(with_routing, shared_data, n_actions):
    # API.md §5, verbatim but for the config_context of the fixture; n_actions=None
    # is STYLE.md's form (inferred from each training fold's actions).
    X, actions, rewards, propensities = (
        shared_data.X,
        shared_data.actions,
        shared_data.rewards,
        shared_data.propensities,
    )
    policy = (
        LinUCB(n_actions=n_actions)
        .set_fit_request(rewards=True)
        .set_score_request(rewards=True, propensities=True)
    )
    search = GridSearchCV(policy, {"beta": [0.1, 1.0]}, cv=3)
    search.fit(X, actions, rewards=rewards, propensities=propensities)

    assert search.best_params_["beta"] in (0.1, 1.0)
    scores = search.cv_results_["mean_test_score"]
    assert scores.shape == (2,) and np.all(np.isfinite(scores))
    best = search.best_estimator_
    assert best.n_samples_seen_ == X.shape[0]
    assert search.score(
        X, actions, rewards=rewards, propensities=propensities
    ) == pytest.approx(best.score(X, actions, rewards, propensities=propensities))


def _manual_fold_scores(policy, value, d, cv):
    scores = []
    for train, test in cv.split(d.X):
        fitted = clone(policy).fit(d.X[train], d.actions[train], d.rewards[train])
        scores.append(
            value(
                d.actions[test],
                fitted.predict_action_proba(d.X[test]),
                rewards=d.rewards[test],
                propensities=d.propensities[test],
            )
        )
    return np.array(scores)


@pytest.mark.parametrize("method, value", [("ips", ips_value), ("snips", snips_value)])
def test_ope_scorer_in_cross_validate(with_routing, shared_data, method, value):
    d = shared_data
    cv = KFold(3)
    policy = LinTS(n_actions=3, random_state=0).set_fit_request(rewards=True)
    result = cross_validate(
        policy,
        d.X,
        d.actions,
        cv=cv,
        scoring=make_ope_scorer(method),
        params={"rewards": d.rewards, "propensities": d.propensities},
    )
    expected = _manual_fold_scores(LinTS(n_actions=3, random_state=0), value, d, cv)
    assert_allclose(result["test_score"], expected, rtol=1e-12)


@pytest.mark.parametrize("method", ["ips", "snips"])
def test_ope_scorer_in_grid_search(with_routing, shared_data, method):
    d = shared_data
    policy = LinUCB(n_actions=3).set_fit_request(rewards=True)
    search = GridSearchCV(
        policy, {"beta": [0.0, 2.0]}, cv=KFold(3), scoring=make_ope_scorer(method)
    )
    search.fit(d.X, d.actions, rewards=d.rewards, propensities=d.propensities)
    values = {"ips": ips_value, "snips": snips_value}
    for i, beta in enumerate([0.0, 2.0]):
        expected = _manual_fold_scores(
            LinUCB(n_actions=3, beta=beta), values[method], d, KFold(3)
        )
        assert search.cv_results_["mean_test_score"][i] == pytest.approx(
            expected.mean(), rel=1e-12
        )


def test_default_score_equals_snips_scorer(with_routing, shared_data):
    d = shared_data
    policy = (
        LinUCB(n_actions=3)
        .set_fit_request(rewards=True)
        .set_score_request(rewards=True, propensities=True)
    )
    params = {"rewards": d.rewards, "propensities": d.propensities}
    default = cross_validate(policy, d.X, d.actions, cv=3, params=params)
    snips = cross_validate(
        policy, d.X, d.actions, cv=3, params=params, scoring=make_ope_scorer("snips")
    )
    assert_allclose(default["test_score"], snips["test_score"], rtol=1e-12)


def test_grid_search_over_a_bandit_pipeline(with_routing, shared_data):
    d = shared_data
    policy = (
        LinUCB(n_actions=3)
        .set_fit_request(rewards=True)
        .set_score_request(rewards=True, propensities=True)
    )
    pipe = make_bandit_pipeline(StandardScaler(), policy)
    search = GridSearchCV(pipe, {"linucb__beta": [0.1, 1.0]}, cv=3)
    search.fit(d.X, d.actions, rewards=d.rewards, propensities=d.propensities)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_estimator_.select(d.X[:4]).shape == (4,)


@pytest.mark.parametrize("name, Policy", all_policies())
def test_every_policy_tunes_with_the_recipe(with_routing, shared_data, name, Policy):
    d = shared_data
    params = {**Policy._get_test_params()[0], "n_actions": 3}
    policy = (
        Policy(**params)
        .set_fit_request(rewards=True)
        .set_score_request(rewards=True, propensities=True)
    )
    search = GridSearchCV(policy, {"random_state": [0, 1]}, cv=2, error_score="raise")
    search.fit(d.X, d.actions, rewards=d.rewards, propensities=d.propensities)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_make_ope_scorer_errors():
    with sklearn.config_context(enable_metadata_routing=False):
        with pytest.raises(RuntimeError, match="enable_metadata_routing=True"):
            make_ope_scorer("snips")
    with sklearn.config_context(enable_metadata_routing=True):
        with pytest.raises(ValueError, match="method must be one of"):
            make_ope_scorer("nope")


def test_clone_get_params_set_params(shared_data):
    d = shared_data
    policy = LinTS(n_actions=3, random_state=0).fit(d.X, d.actions, d.rewards)
    params = policy.get_params()
    assert params == {
        "alpha": 1.0,
        "fit_intercept": True,
        "n_actions": 3,
        "nu": 1.0,
        "random_state": 0,
    }
    cloned = clone(policy)
    assert not hasattr(cloned, "n_actions_") and cloned.get_params() == params
    assert policy.set_params(nu=0.01) is policy and policy.nu == 0.01
    cloned.set_params(nu=0.01).fit(d.X, d.actions, d.rewards)
    refit = clone(policy).fit(d.X, d.actions, d.rewards)
    assert_allclose(cloned.predict_scores(d.X), refit.predict_scores(d.X))
    np.testing.assert_array_equal(cloned.select(d.X), refit.select(d.X))


def test_clone_keeps_metadata_requests(with_routing):
    policy = (
        LinUCB()
        .set_fit_request(rewards=True)
        .set_score_request(rewards=True, propensities=True)
    )
    routing = clone(policy).get_metadata_routing()
    assert routing.fit.requests["rewards"] is True
    assert routing.score.requests["rewards"] is True
    assert routing.score.requests["propensities"] is True
