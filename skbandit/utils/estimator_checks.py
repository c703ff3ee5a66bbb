"""Checks that a policy keeps skbandit's contract, and a shim for scikit-learn's.

Two layers, as in imbalanced-learn:

- :class:`SupervisedViewMixin` and :func:`supervised_view` turn a policy into a
  ``fit(X, y)`` estimator so that scikit-learn's own ``check_estimator`` /
  ``parametrize_with_checks`` drive the real policy code (parameters, validation,
  fitted attributes, pickling and ``predict`` all stay the policy's own);
- :func:`policy_checks_generator`, :func:`check_policy` and
  :func:`parametrize_with_policy_checks` run what scikit-learn cannot know about:
  ``select``, ``predict_scores``, ``predict_action_proba``, per-arm contexts, the
  random state, and the errors of the public contract, each of which must leave the
  policy exactly as it was.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from functools import partial

from skbandit.utils._checks import _slate_checks as checks
from skbandit.utils._checks._policy_checks import _state as _state  # for the tests
from skbandit.utils._checks._policy_checks import (
    check_policy_action_mask,
    check_policy_action_proba_matches_select,
    check_policy_fit_resets,
    check_policy_output_shapes,
    check_policy_partial_fit_equals_fit,
    check_policy_per_arm_contexts,
    check_policy_pickle_continues_select,
    check_policy_predict_deterministic,
    check_policy_score,
    check_policy_select_mutates_only_rng,
    check_policy_select_prior,
    check_policy_select_propensities,
    check_policy_select_reproducible,
    check_policy_tags,
    check_policy_unfitted,
)
from skbandit.utils._checks._policy_error_checks import (
    check_policy_invalid_decision_input,
    check_policy_invalid_feedback,
    check_policy_invalid_params,
    check_policy_n_actions_required,
    check_policy_propensities_length,
)
from skbandit.utils._checks._supervised_view import (
    SupervisedViewMixin,
    _view_named,
    supervised_view,
)
from skbandit.utils._tags import is_slate_policy
from skbandit.utils.discovery import all_policies

__all__ = [
    "SupervisedViewMixin",
    "check_policy",
    "parametrize_with_policy_checks",
    "policy_checks_generator",
    "supervised_view",
]


def __getattr__(name: str):
    # PEP 562: the views live here for pickle, also in a process that has not
    # built them yet (skbandit's own policies' views are re-created on demand).
    view = _view_named(name)
    if view is not None:
        return view
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _tested_policies() -> Iterator:
    """One instance per ``_get_test_params()`` entry of every public policy."""
    for _, policy_class in all_policies():
        for params in policy_class._get_test_params():
            yield policy_class(**params)


# ------------------------------------------------------------------------- runners
def _yield_policy_checks(policy) -> Iterator[Callable]:
    yield check_policy_tags
    if is_slate_policy(policy):
        yield from _yield_slate_checks()
        return
    yield check_policy_unfitted
    yield check_policy_select_prior
    yield check_policy_output_shapes
    yield check_policy_action_mask
    yield check_policy_per_arm_contexts
    if policy.__sklearn_tags__().policy_tags.exact_partial_fit:
        yield check_policy_partial_fit_equals_fit
    yield check_policy_fit_resets
    yield check_policy_select_reproducible
    yield check_policy_pickle_continues_select
    yield check_policy_predict_deterministic
    yield check_policy_select_mutates_only_rng
    yield check_policy_action_proba_matches_select
    yield check_policy_select_propensities
    yield check_policy_score
    yield check_policy_invalid_feedback
    yield check_policy_invalid_decision_input
    yield check_policy_propensities_length
    yield check_policy_n_actions_required
    yield check_policy_invalid_params


def _yield_slate_checks() -> Iterator[Callable]:
    yield checks.check_slate_unfitted
    yield checks.check_slate_shapes
    yield checks.check_slate_action_mask
    yield checks.check_slate_batch_equals_rounds
    yield checks.check_slate_feedback_alignment
    yield checks.check_slate_random_state
    yield checks.check_slate_predict_pure
    yield checks.check_slate_action_proba_matches_select
    yield check_policy_select_propensities
    yield checks.check_slate_score
    yield checks.check_slate_invalid_feedback
    yield check_policy_n_actions_required
    yield check_policy_invalid_params


def policy_checks_generator(
    policy, *, expected_failed_checks=None, mark=None, xfail_strict=None
) -> Iterator[tuple[object, Callable]]:
    """Yield ``(policy, check)`` pairs; ``check(policy)`` runs one policy check.

    Parameters
    ----------
    policy : BasePolicy
        Policy instance to check. It is cloned by every check, never modified.
    expected_failed_checks : dict or None, default=None
        Check name to the reason it is expected to fail.
    mark : {"xfail", "skip"} or None, default=None
        What to do with an expected failure: mark it as a pytest ``xfail``, replace
        it by a check that skips, or (None) run it anyway.
    xfail_strict : bool or None, default=None
        ``strict`` of the ``xfail`` marks (None: pytest's configuration).

    Yields
    ------
    policy : BasePolicy
        The policy passed in.
    check : callable
        A check taking the policy as its only argument.

    Examples
    --------
    >>> from skbandit.policies import RandomPolicy
    >>> from skbandit.utils.estimator_checks import policy_checks_generator
    >>> pairs = list(policy_checks_generator(RandomPolicy(n_actions=3)))
    >>> policy, check = pairs[0]
    >>> check(policy)  # check_policy_tags
    """
    name = type(policy).__name__
    expected_failed_checks = expected_failed_checks or {}
    for check in _yield_policy_checks(policy):
        check = partial(check, name)
        reason = expected_failed_checks.get(_check_name(check))
        if reason is None or mark is None:
            yield policy, check
        elif mark == "xfail":
            import pytest

            yield pytest.param(
                policy,
                check,
                marks=pytest.mark.xfail(reason=reason, strict=xfail_strict),
            )
        else:
            yield policy, partial(_skip, reason=reason)


def _skip(name, policy=None, *, reason):
    import pytest

    pytest.skip(reason)


def check_policy(policy, *, expected_failed_checks=None) -> None:
    """Run every skbandit policy check on ``policy``; raise on the first failure.

    Parameters
    ----------
    policy : BasePolicy
        Policy instance to check.
    expected_failed_checks : dict or None, default=None
        Check name to the reason it is expected to fail; those are not run.

    Examples
    --------
    >>> from skbandit.policies import LinUCB
    >>> from skbandit.utils.estimator_checks import check_policy
    >>> check_policy(LinUCB(n_actions=3))
    """
    expected_failed_checks = expected_failed_checks or {}
    for p, check in policy_checks_generator(policy):
        if _check_name(check) not in expected_failed_checks:
            check(p)


def _check_name(check) -> str:
    while isinstance(check, partial):
        check = check.func
    return check.__name__


def _policy_id(obj) -> str:
    if callable(obj) and not hasattr(obj, "get_params"):
        return _check_name(obj)
    return re.sub(r"\s", "", str(obj))


def parametrize_with_policy_checks(
    policies: Iterable, *, expected_failed_checks=None, xfail_strict=None
):
    """Pytest decorator parametrising ``(policy, check)`` over the policy checks.

    Parameters
    ----------
    policies : iterable of BasePolicy
        Policy instances.
    expected_failed_checks : callable or None, default=None
        ``policy -> {check name: reason}``; those checks are marked ``xfail``.
    xfail_strict : bool or None, default=None
        Whether an expected failure that passes fails the suite.

    Returns
    -------
    decorator : pytest.MarkDecorator
        Apply to a test ``def test_policy(policy, check): check(policy)``.

    Examples
    --------
    >>> from skbandit.policies import LinUCB
    >>> from skbandit.utils.estimator_checks import parametrize_with_policy_checks
    >>> @parametrize_with_policy_checks([LinUCB(n_actions=3)])
    ... def test_policy(policy, check):
    ...     check(policy)
    """
    import pytest

    pairs = [
        pair
        for policy in policies
        for pair in policy_checks_generator(
            policy,
            expected_failed_checks=(
                expected_failed_checks(policy) if expected_failed_checks else None
            ),
            mark="xfail",
            xfail_strict=xfail_strict,
        )
    ]
    return pytest.mark.parametrize("policy, check", pairs, ids=_policy_id)
