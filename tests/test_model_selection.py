"""Policies in scikit-learn's model selection, with metadata routing (API.md §5)."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
import sklearn
from numpy.testing import assert_allclose
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.preprocessing import StandardScaler
from sklearn.utils import Bunch

from skbandit.evaluation import ips_value, make_ope_scorer, snips_value
from skbandit.pipeline import make_bandit_pipeline
from skbandit.policies import LinTS, LinUCB
from skbandit.utils._tags import is_slate_policy
from skbandit.utils.discovery import all_policies


@pytest.fixture
def with_routing():
    """Metadata routing on for one test only (config_context: it does not leak)."""
    with sklearn.config_context(enable_metadata_routing=True):
        yield
    assert not sklearn.get_config()["enable_metadata_routing"]


def _argmax_bandit(seed, n=300, d=3, n_actions=3):
    """Uniformly logged rounds where arm ``argmax_k w_k . x`` pays 0.9, the others 0.1.

    A policy that learns the context-dependent best arm is worth up to 0.9; one that
    ignores the contexts, 0.9 / 3 + 0.1 * 2 / 3 = 0.367.
    """
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, d))
    W = rng.normal(size=(n_actions, d))
    best = np.argmax(X @ W.T, axis=1)
    expected = np.where(np.arange(n_actions) == best[:, None], 0.9, 0.1)
    actions = rng.randint(n_actions, size=n)
    rewards = (rng.random_sample(n) < expected[np.arange(n), actions]).astype(float)
    return Bunch(
        X=X,
        actions=actions,
        rewards=rewards,
        propensities=np.full(n, 1.0 / n_actions),
    )


@pytest.mark.parametrize("n_actions", [3, None])
def test_api_recipe_grid_search(with_routing, global_random_seed, n_actions):
    # API.md §5, verbatim but for the config_context of the fixture; n_actions=None
    # is STYLE.md's form (inferred from each training fold's actions).
    d = _argmax_bandit(global_random_seed)
    X, actions, rewards, propensities = d.X, d.actions, d.rewards, d.propensities
    policy = (
        LinUCB(n_actions=n_actions)
        .set_fit_request(rewards=True)
        .set_score_request(rewards=True, propensities=True)
    )
    # beta=0 is greedy on the ridge means and learns the best arm; beta=100 lets
    # the confidence width, blind to the rewards, choose the arm.
    search = GridSearchCV(policy, {"beta": [0.0, 100.0]}, cv=3)
    search.fit(X, actions, rewards=rewards, propensities=propensities)

    # Each cell is the SNIPS value of a hand-made 3-fold cross-validation.
    scores = search.cv_results_["mean_test_score"]
    for i, beta in enumerate([0.0, 100.0]):
        expected = _manual_fold_scores(
            LinUCB(n_actions=n_actions, beta=beta), snips_value, d, KFold(3)
        )
        assert scores[i] == pytest.approx(expected.mean(), rel=1e-12)
    # Over seeds 0-99: greedy >= 0.67, wide UCB <= 0.55, gap >= 0.19.
    assert search.best_params_ == {"beta": 0.0}
    assert scores[0] > 0.6 > scores[1] and scores[0] - scores[1] > 0.1
    best = search.best_estimator_
    assert best.beta == 0.0 and best.n_samples_seen_ == X.shape[0]
    assert search.score(
        X, actions, rewards=rewards, propensities=propensities
    ) == pytest.approx(
        snips_value(
            best.predict_action_proba(X),
            actions,
            rewards=rewards,
            propensities=propensities,
        ),
        rel=1e-12,
    )


def _manual_fold_scores(policy, value, d, cv):
    scores = []
    for train, test in cv.split(d.X):
        fitted = clone(policy).fit(d.X[train], d.actions[train], d.rewards[train])
        scores.append(
            value(
                fitted.predict_action_proba(d.X[test]),
                d.actions[test],
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
    expected = [
        _manual_fold_scores(
            LinUCB(n_actions=3, beta=beta), values[method], d, KFold(3)
        ).mean()
        for beta in (0.0, 2.0)
    ]
    assert_allclose(search.cv_results_["mean_test_score"], expected, rtol=1e-12)
    # the first of the best hand-made means (sklearn's tie rule)
    assert search.best_params_ == {"beta": [0.0, 2.0][int(np.argmax(expected))]}


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


def test_grid_search_over_a_bandit_pipeline(with_routing, global_random_seed):
    d = _argmax_bandit(global_random_seed)
    policy = (
        LinUCB(n_actions=3)
        .set_fit_request(rewards=True)
        .set_score_request(rewards=True, propensities=True)
    )
    pipe = make_bandit_pipeline(StandardScaler(), policy)
    grid = {"linucb__beta": [0.0, 100.0]}
    search = GridSearchCV(pipe, grid, cv=3)
    search.fit(d.X, d.actions, rewards=d.rewards, propensities=d.propensities)
    expected = []
    for beta in grid["linucb__beta"]:
        folds = []
        for train, test in KFold(3).split(d.X):
            fitted = clone(pipe).set_params(linucb__beta=beta)
            fitted.fit(d.X[train], d.actions[train], rewards=d.rewards[train])
            folds.append(
                snips_value(
                    fitted.predict_action_proba(d.X[test]),
                    d.actions[test],
                    rewards=d.rewards[test],
                    propensities=d.propensities[test],
                )
            )
        expected.append(np.mean(folds))
    assert_allclose(search.cv_results_["mean_test_score"], expected, rtol=1e-12)
    # as in test_api_recipe_grid_search: greedy learns the best arm, beta=100 not
    assert search.best_params_ == {"linucb__beta": 0.0}
    assert expected[0] - expected[1] > 0.1
    assert search.best_estimator_.select(d.X[:4]).shape == (4,)


@pytest.mark.parametrize("name, Policy", all_policies())
def test_every_policy_tunes_with_the_recipe(with_routing, shared_data, name, Policy):
    if is_slate_policy(Policy(**Policy._get_test_params()[0])):
        pytest.skip(
            "slate policies score with the slate estimator, not SNIPS: "
            "tests/policies/slate/test_comb_linear.py tunes them with the recipe"
        )
    d = shared_data
    params = {**Policy._get_test_params()[0], "n_actions": 3}
    policy = (
        Policy(**params)
        .set_fit_request(rewards=True)
        .set_score_request(rewards=True, propensities=True)
    )
    search = GridSearchCV(policy, {"random_state": [0, 1]}, cv=2, error_score="raise")
    search.fit(d.X, d.actions, rewards=d.rewards, propensities=d.propensities)
    # Each cell is a hand-made 2-fold SNIPS cross-validation of the same candidate
    # (the policies are deterministic given random_state); SNIPS of rewards in
    # {0, 1} is a weighted mean of them, so it lies in [0, 1].
    scores = search.cv_results_["mean_test_score"]
    for i, seed in enumerate([0, 1]):
        expected = _manual_fold_scores(
            Policy(**{**params, "random_state": seed}), snips_value, d, KFold(2)
        )
        assert scores[i] == pytest.approx(expected.mean(), rel=1e-9, abs=1e-12)
    assert np.all((scores >= 0.0) & (scores <= 1.0))


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
        "nu": 0.1,
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
