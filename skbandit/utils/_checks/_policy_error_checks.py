"""skbandit's policy checks of errors: bad input raises and changes nothing.

Bad feedback, bad input to the deciding verbs, missing ``n_actions`` and invalid
parameters each raise the documented error, naming the argument, and leave the
policy exactly as it was. :mod:`skbandit.utils.estimator_checks` runs them.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np

from skbandit.utils._checks._policy_checks import (
    _N_ACTIONS,
    _make_data,
    _prepare,
    _raises,
    _state,
    _warm,
)
from skbandit.utils._param_validation import InvalidParameterError


def _feedback_errors(X, actions, rewards, *, per_arm):
    """(label, verb, args, kwargs, match) for bad feedback given to a fitted policy."""
    n = X.shape[0]
    nan_X, inf_X, nan_r, inf_r = X.copy(), X.copy(), rewards.copy(), rewards.copy()
    nan_X[3, ...] = np.nan
    inf_X[2, ...] = np.inf
    nan_r[1], inf_r[4] = np.nan, -np.inf
    wide = np.concatenate([X, X[..., :1]], axis=-1)
    bad_a = actions.copy()
    bad_a[5] = _N_ACTIONS
    neg_a = actions.copy()
    neg_a[0] = -1
    float_a = actions.astype(float)
    float_a[2] = 0.5
    masked = np.ones((n, _N_ACTIONS), dtype=bool)
    masked[0, actions[0]] = False
    other_form = X[:, 0] if per_arm else np.repeat(X[:, None], _N_ACTIONS, axis=1)
    cases = [
        ("NaN in X", (nan_X, actions, rewards), {}, r"X contains NaN"),
        ("inf in X", (inf_X, actions, rewards), {}, r"X contains infinity"),
        ("NaN in rewards", (X, actions, nan_r), {}, r"rewards contains NaN"),
        ("inf in rewards", (X, actions, inf_r), {}, r"rewards contains infinity"),
        ("action >= n_actions", (X, bad_a, rewards), {}, r"actions"),
        ("negative action", (X, neg_a, rewards), {}, r"actions"),
        ("non-integer action", (X, float_a, rewards), {}, r"actions"),
        ("2-D actions", (X, actions[:, None], rewards), {}, r"actions"),
        ("short actions", (X, actions[:-1], rewards), {}, r"actions"),
        ("short rewards", (X, actions, rewards[:-1]), {}, r"rewards"),
        ("masked-out action", (X, actions, rewards), {"action_mask": masked}, "mask"),
        (
            "bad action_mask shape",
            (X, actions, rewards),
            {"action_mask": masked[:, :-1]},
            r"action_mask",
        ),
        (
            "negative sample_weight",
            (X, actions, rewards),
            {"sample_weight": -np.ones(n)},
            r"sample_weight",
        ),
        (
            "short sample_weight",
            (X, actions, rewards),
            {"sample_weight": np.ones(n - 1)},
            r"sample_weight",
        ),
    ]
    for label, args, kwargs, match in cases:
        yield label, "fit", args, kwargs, match
        yield label, "partial_fit", args, kwargs, match
    yield "more features", "partial_fit", (wide, actions, rewards), {}, r"X has 4 feat"
    yield "other context form", "partial_fit", (other_form, actions, rewards), {}, "X"
    if per_arm:
        X4 = np.concatenate([X, X[:, :1]], axis=1)
        yield "more arms", "partial_fit", (X4, actions, rewards), {}, r"X has 4 arms"


def _deciding_errors(X, actions, rewards, *, per_arm):
    """(label, verb, args, kwargs, match) for bad input to the deciding verbs."""
    n = X.shape[0]
    nan_X, inf_X = X.copy(), X.copy()
    nan_X[3, ...] = np.nan
    inf_X[2, ...] = np.inf
    wide = np.concatenate([X, X[..., :1]], axis=-1)
    other_form = X[:, 0] if per_arm else np.repeat(X[:, None], _N_ACTIONS, axis=1)
    empty_row = np.ones((n, _N_ACTIONS), dtype=bool)
    empty_row[2] = False
    bad_X = [
        ("NaN in X", nan_X, r"X contains NaN"),
        ("inf in X", inf_X, r"X contains infinity"),
        ("more features", wide, r"X has 4 feat"),
        ("other context form", other_form, r"X"),
        ("1-D X", X.reshape(-1), r"X|array"),
    ]
    if per_arm:
        bad_X.append(("more arms", np.concatenate([X, X[:, :1]], axis=1), "arms"))
    p = np.full(n, 1 / _N_ACTIONS)
    for label, Xb, match in bad_X:
        for verb in ("select", "predict_scores", "predict", "predict_action_proba"):
            yield label, verb, (Xb,), {}, match
        yield label, "score", (Xb, actions, rewards), {"propensities": p}, match
    for verb in ("select", "predict_action_proba"):
        yield "mask shape", verb, (X,), {"action_mask": empty_row[:, :2]}, "action_mask"
        yield "mask empty row", verb, (X,), {"action_mask": empty_row}, "action_mask"
        yield "mask values", verb, (X,), {"action_mask": 2 * empty_row}, "action_mask"
    if per_arm:
        return  # feedback is validated the same way for both context forms
    # score validates feedback after predict_action_proba, which may be Monte Carlo:
    # keep these cases to a few rows.
    X, actions, rewards, p, n = X[:4], actions[:4], rewards[:4], p[:4], 4
    bad_p = [np.zeros(n), np.full(n, 1.5), np.where(np.arange(n) == 3, np.nan, p)]
    for i, props in enumerate(bad_p):
        yield (
            f"propensities {i}",
            "score",
            (X, actions, rewards),
            {"propensities": props},
            r"propensities",
        )
    bad_a = actions.copy()
    bad_a[0] = _N_ACTIONS
    yield (
        "action >= n_actions",
        "score",
        (X, bad_a, rewards),
        {"propensities": p},
        r"actions",
    )
    nan_r = rewards.copy()
    nan_r[0] = np.nan
    yield (
        "NaN in rewards",
        "score",
        (X, actions, nan_r),
        {"propensities": p},
        r"rewards",
    )


def _check_errors_leave_policy_unchanged(name, policy, cases, fitted):
    for label, verb, args, kwargs, match in cases:
        before = _state(fitted)
        with _raises(ValueError, match, f"{name}.{verb} with {label}"):
            getattr(fitted, verb)(*args, **kwargs)
        assert _state(fitted) == before, (
            f"{name}.{verb} with {label} raised but changed the policy"
        )


def _check_cases_on_both_layouts(name, policy, make_cases):
    """Run ``make_cases``'s error cases on a fitted policy, shared then per-arm."""
    for per_arm in (False, True):
        X, actions, rewards = _make_data(per_arm=per_arm)
        fitted = _warm(_prepare(policy).fit(X, actions, rewards), X)
        cases = make_cases(X, actions, rewards, per_arm=per_arm)
        _check_errors_leave_policy_unchanged(name, policy, cases, fitted)


def check_policy_invalid_feedback(name, policy):
    """Bad feedback raises ValueError naming the argument, and changes nothing."""
    _check_cases_on_both_layouts(name, policy, _feedback_errors)


def check_policy_invalid_decision_input(name, policy):
    """Bad input to select/predict*/score raises ValueError and changes nothing."""
    _check_cases_on_both_layouts(name, policy, _deciding_errors)


def check_policy_propensities_length(name, policy):
    """``score`` with propensities of the wrong length names ``propensities``."""
    X, actions, rewards = _make_data()
    fitted = _warm(_prepare(policy).fit(X, actions, rewards), X)
    X, actions, rewards = X[:4], actions[:4], rewards[:4]
    p = np.full(X.shape[0] - 1, 1 / _N_ACTIONS)
    cases = [
        (
            "short propensities",
            "score",
            (X, actions, rewards),
            {"propensities": p},
            r"propensities",
        )
    ]
    _check_errors_leave_policy_unchanged(name, policy, cases, fitted)


def check_policy_n_actions_required(name, policy):
    """Without n_actions, a first partial_fit or select on shared contexts raises."""
    X, actions, rewards = _make_data()
    p = _prepare(policy, n_actions=None)
    before = _state(p)
    with _raises(ValueError, "n_actions", f"{name}.partial_fit without n_actions"):
        p.partial_fit(X, actions, rewards)
    with _raises(ValueError, "n_actions", f"{name}.select without n_actions"):
        p.select(X)
    assert _state(p) == before and not hasattr(p, "n_actions_")
    # per-arm contexts disagreeing with n_actions
    X4, _, _ = _make_data(n_actions=4, per_arm=True)
    p = _prepare(policy, n_actions=_N_ACTIONS)
    before = _state(p)
    with _raises(ValueError, "n_actions", f"{name}.select with 4 arms in X"):
        p.select(X4)
    assert _state(p) == before and not hasattr(p, "n_actions_")


class _InvalidValue:
    """A value no parameter constraint accepts."""

    def __repr__(self):
        return "<invalid>"


def check_policy_invalid_params(name, policy):
    """A bad parameter raises InvalidParameterError in fit, partial_fit and select."""
    X, actions, rewards = _make_data(5)
    constraints = getattr(policy, "_parameter_constraints", {})
    assert set(constraints) == set(policy.get_params(deep=False)), (
        f"{name}._parameter_constraints must cover exactly the __init__ parameters"
    )
    for param, options in constraints.items():
        if "no_validation" in options:
            continue
        for verb in ("fit", "partial_fit", "select"):
            p = _prepare(policy).set_params(**{param: _InvalidValue()})
            args = (X,) if verb == "select" else (X, actions, rewards)
            with _raises(InvalidParameterError, param, f"{name}.{verb} with {param}"):
                getattr(p, verb)(*args)
            assert not hasattr(p, "n_actions_")
