"""Every policy against scikit-learn's common checks and skbandit's own contract.

Two layers, as in imbalanced-learn: scikit-learn's ``parametrize_with_checks`` on
each policy's test-only supervised view (``fit(X, y)``), then skbandit's policy
checks (``select``, per-arm contexts, the random state, errors that change nothing).
Policies are discovered, so a new one is covered by its ``_get_test_params()``.
"""
# SPDX-License-Identifier: BSD-3-Clause

import re

import numpy as np
import pytest
from sklearn.utils.estimator_checks import (
    check_dataframe_column_names_consistency,
    check_estimators_partial_fit_n_features,
    check_param_validation,
    parametrize_with_checks,
)

from skbandit.evaluation import ips_value, replay_value
from skbandit.policies import LinTS, LinUCB
from skbandit.utils.discovery import all_policies
from skbandit.utils.estimator_checks import (
    _state,
    _tested_policies,
    check_policy_predict_deterministic,
    check_policy_score,
    check_policy_select_mutates_only_rng,
    parametrize_with_policy_checks,
    supervised_view,
)

#: scikit-learn checks a view is expected to fail: {check: reason} keyed by the view
#: class name (every instance) or by one instance's repr without spaces, e.g.
#: "LinUCBView(alpha=0.5,beta=0.0)". Each entry needs its reason; keep it empty.
EXPECTED_FAILED: dict[str, dict[str, str]] = {}

#: Online standardisation scales a row by the moments of the rows up to it, so a
#: weight of 2 equals a repeated row only where the repeat comes next: this check
#: shuffles the repeated rows. ``standardize=False`` passes it (tested below).
_PREQUENTIAL = {
    "check_sample_weight_equivalence_on_dense_data": (
        "online standardisation depends on the order of the rows, which the "
        "check shuffles"
    )
}
EXPECTED_FAILED.update(
    {
        f"{name}View": _PREQUENTIAL
        for name in (
            *("ECOLog", "LogisticUCB1", "GLMES"),
            *("GLMUCB", "UCBGLM", "LogTS", "LogPHE"),
        )
    }
)

#: skbandit checks a policy is expected to fail, keyed the same way by class name.
EXPECTED_POLICY_FAILED: dict[str, dict[str, str]] = {}


def _views():
    for policy in _tested_policies():
        yield supervised_view(type(policy))(**policy.get_params(deep=False))


def _id(estimator):
    return re.sub(r"\s", "", repr(estimator))


def _expected(table):
    def lookup(estimator):
        return {
            **table.get(type(estimator).__name__, {}),
            **table.get(_id(estimator), {}),
        }

    return lookup


VIEWS = list(_views())


@parametrize_with_checks(
    VIEWS,
    expected_failed_checks=_expected(EXPECTED_FAILED),
    xfail_strict=True,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("view", VIEWS, ids=_id)
@pytest.mark.parametrize(
    "check",
    [
        check_param_validation,
        check_dataframe_column_names_consistency,
        check_estimators_partial_fit_n_features,
    ],
    ids=lambda check: check.__name__,
)
def test_sklearn_checks_called_directly(view, check):
    check(type(view).__name__, view)


@parametrize_with_policy_checks(
    list(_tested_policies()),
    expected_failed_checks=_expected(EXPECTED_POLICY_FAILED),
    xfail_strict=True,
)
def test_policy_contract(policy, check):
    check(policy)


@pytest.mark.parametrize("name, Policy", all_policies())
def test_every_policy_has_test_params(name, Policy):
    params = Policy._get_test_params()
    assert isinstance(params, list) and params, f"{name}._get_test_params() is empty"
    for p in params:
        assert isinstance(p, dict)
        Policy(**p)  # stores parameters only


def test_expected_failures_name_real_checks():
    views = {type(v).__name__ for v in VIEWS} | {_id(v) for v in VIEWS}
    policies = list(_tested_policies())
    names = {type(p).__name__ for p in policies} | {_id(p) for p in policies}
    for table, known in ((EXPECTED_FAILED, views), (EXPECTED_POLICY_FAILED, names)):
        for key, checks in table.items():
            assert key in known, f"{key!r} is no tested estimator"
            assert all(isinstance(r, str) and r for r in checks.values()), key


# ----------------------------------------------- the checks catch broken policies
class _SelectWritesState(LinUCB):
    def _select(self, X, mask):
        self._ridge.moment[0, 0] += 1.0  # in place: select must change only the RNG
        return super()._select(X, mask)


class _ScoresDrawFromRNG(LinUCB):
    def _scores(self, X, return_std):
        self._rng.random()  # predict* must not advance the random state
        return super()._scores(X, return_std)


class _HalfAppliedUpdate(LinUCB):
    def _update(self, X, actions, rewards, sample_weight):
        self._ridge.moment += 1.0  # mutates, then fails: not restored by the base
        if np.any(rewards > 0.5):
            raise ValueError("rewards must not exceed 0.5 in this broken policy")
        super()._update(X, actions, rewards, sample_weight)


class _ScoreIsIPS(LinUCB):
    def score(self, X, actions, rewards, *, propensities=None):
        # not self-normalised: score must be SNIPS
        proba = self.predict_action_proba(X)
        return ips_value(proba, actions, rewards=rewards, propensities=propensities)


class _ScoreIgnoresPropensities(LinTS):
    def score(self, X, actions, rewards, *, propensities=None):
        # replay: right only under uniform logging
        proba = self.predict_action_proba(X)
        return replay_value(proba, actions, rewards=rewards)


@pytest.mark.parametrize(
    "policy, check, match",
    [
        (_SelectWritesState(), check_policy_select_mutates_only_rng, "changed"),
        (_ScoresDrawFromRNG(), check_policy_predict_deterministic, "changed"),
        (_ScoreIsIPS(), check_policy_score, "self-normalised IPS"),
        (_ScoreIgnoresPropensities(), check_policy_score, "self-normalised IPS"),
    ],
    ids=["select-writes-state", "scores-draw", "score-is-ips", "score-is-replay"],
)
def test_policy_checks_catch_broken_policies(policy, check, match):
    with pytest.raises(AssertionError, match=match):
        check(type(policy).__name__, policy)


def test_state_comparison_sees_in_place_changes():
    policy = _HalfAppliedUpdate(n_actions=3).fit(np.eye(3), [0, 1, 2], [0.0, 0.1, 0.2])
    before = _state(policy)
    with pytest.raises(ValueError, match="broken"):
        policy.partial_fit(np.eye(3), [0, 1, 2], [0.0, 1.0, 0.0])
    assert _state(policy) != before
