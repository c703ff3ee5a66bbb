"""One argument order for every off-policy estimator, and its cheap validation."""
# SPDX-License-Identifier: BSD-3-Clause

import inspect
import pickle

import numpy as np
import pytest
import sklearn
from sklearn.model_selection import cross_val_score

from skbandit.evaluation import (
    dm_value,
    dr_value,
    estimate_value,
    ips_value,
    make_ope_scorer,
    replay_value,
    sndr_value,
    snips_value,
    switch_dr_value,
)
from skbandit.policies import LinUCB

ACTIONS = np.array([0, 2, 1, 2])
PROBA = np.array([[0.5, 0.25, 0.25], [0.0, 0.0, 1.0], [0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])
REWARDS = np.array([1.0, 0.5, 0.0, 2.0])
PROPENSITIES = np.array([0.25, 0.5, 0.6, 0.8])
Q_HAT = np.array([[0.4, 0.1, 0.3], [0.2, 0.2, 0.6], [0.0, 0.5, 1.0], [0.3, 0.3, 0.9]])
for _shared in (ACTIONS, PROBA, REWARDS, PROPENSITIES, Q_HAT):
    _shared.setflags(write=False)  # shared by the module's tests: none may write
LOGGED = ["action_proba", "actions", "rewards", "propensities"]
ESTIMATORS = [
    (ips_value, {}),
    (snips_value, {}),
    (dr_value, {"expected_rewards": Q_HAT}),
    (sndr_value, {"expected_rewards": Q_HAT}),
    (switch_dr_value, {"expected_rewards": Q_HAT, "tau": 1.0}),
    (replay_value, {}),
]


@pytest.mark.parametrize(
    "fn", [fn for fn, _ in ESTIMATORS] + [estimate_value], ids=lambda f: f.__name__
)
def test_every_estimator_takes_estimate_values_order(fn):
    params = list(inspect.signature(fn).parameters.values())
    assert [p.name for p in params[:4]] == LOGGED
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params[:4])
    assert all(p.kind is p.KEYWORD_ONLY for p in params[4:])


def test_dm_takes_the_policy_first_and_the_model_as_a_keyword():
    params = list(inspect.signature(dm_value).parameters.values())
    assert [p.name for p in params] == ["action_proba", "expected_rewards"]
    assert params[1].kind is params[1].KEYWORD_ONLY


@pytest.mark.filterwarnings("ignore:replay assumes uniformly random logging")
@pytest.mark.parametrize("fn, kw", ESTIMATORS, ids=lambda f: getattr(f, "__name__", ""))
def test_positional_and_keyword_calls_agree_with_estimate_value(fn, kw):
    positional = fn(PROBA, ACTIONS, REWARDS, PROPENSITIES, **kw)
    by_name = fn(
        action_proba=PROBA,
        actions=ACTIONS,
        rewards=REWARDS,
        propensities=PROPENSITIES,
        **kw,
    )
    method = fn.__name__.removesuffix("_value").replace("_", "-")
    full = estimate_value(PROBA, ACTIONS, REWARDS, PROPENSITIES, method=method, **kw)
    assert positional == by_name == full.value


@pytest.mark.parametrize("fn, kw", ESTIMATORS, ids=lambda f: getattr(f, "__name__", ""))
def test_the_former_order_is_an_error_that_names_the_order(fn, kw):
    # The former (actions, action_proba, *, rewards, propensities) is never misread.
    with pytest.raises(ValueError, match=r"swapped.*\(action_proba, actions, rewards"):
        fn(ACTIONS, PROBA, rewards=REWARDS, propensities=PROPENSITIES, **kw)


def test_nan_and_inf_in_action_proba_are_named_without_a_finiteness_pass():
    for bad in (np.nan, np.inf, -np.inf):
        proba = PROBA.copy()
        proba[2, 1] = bad
        with pytest.raises(ValueError, match="action_proba must be finite; row 2"):
            ips_value(proba, ACTIONS, REWARDS, PROPENSITIES)
    # +inf and -inf in one row sum to NaN; a negative entry in a row summing to 1
    proba = PROBA.copy()
    proba[1] = [np.inf, -np.inf, 1.0]
    with pytest.raises(ValueError, match="row 1"):
        ips_value(proba, ACTIONS, REWARDS, PROPENSITIES)
    proba[1] = [-0.5, 0.5, 1.0]
    with pytest.raises(ValueError, match="non-negative, got -0.5"):
        ips_value(proba, ACTIONS, REWARDS, PROPENSITIES)


def test_integer_actions_of_any_width():
    value = ips_value(PROBA, ACTIONS, REWARDS, PROPENSITIES)
    for dtype in (np.int8, np.uint16, np.int32, np.float64):
        assert ips_value(PROBA, ACTIONS.astype(dtype), REWARDS, PROPENSITIES) == value
    with pytest.raises(ValueError, match="integers"):
        ips_value(PROBA, ACTIONS + 0.5, REWARDS, PROPENSITIES)


def test_scorer_feeds_the_new_order_and_pickles():
    rng = np.random.RandomState(0)
    X, actions = rng.normal(size=(60, 3)), rng.randint(3, size=60)
    rewards, propensities = rng.binomial(1, 0.5, size=60), np.full(60, 1 / 3)
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = pickle.loads(pickle.dumps(make_ope_scorer("ips")))
        policy = LinUCB(n_actions=3).set_fit_request(rewards=True)
        scores = cross_val_score(
            policy,
            X,
            actions,
            cv=2,
            scoring=scorer,
            params={"rewards": rewards, "propensities": propensities},
        )
        fitted = LinUCB(n_actions=3).fit(X[30:], actions[30:], rewards[30:])
    expected = ips_value(
        fitted.predict_action_proba(X[:30]),
        actions[:30],
        rewards[:30],
        propensities[:30],
    )
    assert scores[0] == pytest.approx(expected, rel=1e-12)
    assert "ips_value" in repr(scorer)
