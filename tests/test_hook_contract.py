"""The hook contract: a policy overrides only the hooks its bases document.

``skbandit.base``'s docstring lists every hook of :class:`~skbandit.base.BasePolicy`; a
family base (a class of ``skbandit/policies/_<family>/`` that a policy inherits) names
its own hooks in its class or module docstring. A private name that a policy's class
redefines must be one of the hooks of the class that introduced it; a policy's own
helpers, defined once, are free.
"""

import inspect
import re
import sys

import pytest

import skbandit.base
from skbandit.base import BasePolicy
from skbandit.utils._tags import is_slate_policy
from skbandit.utils.discovery import all_policies

#: Names every scikit-learn estimator redefines by convention, not hooks.
_CONVENTIONS = {"_get_test_params", "_parameter_constraints", "_abc_impl"}


def _documented(text):
    """The private names a docstring writes as ``_name``."""
    return set(re.findall(r"``(_[a-z][a-z0-9_]*)", text or ""))


def _hooks_of(klass):
    if klass is BasePolicy:  # the base's list is its module's docstring
        return _documented(skbandit.base.__doc__)
    module = sys.modules[klass.__module__]
    return _documented(klass.__doc__) | _documented(module.__doc__)


def _redefinitions(policy_class):
    """``(name, introducing class, redefining class)`` over a policy's classes."""
    mro = [
        k
        for k in policy_class.__mro__
        if k is policy_class or k.__module__.startswith("skbandit")
    ]
    for i, klass in enumerate(mro):
        for name in vars(klass):
            private = name.startswith("_") and not name.startswith("__")
            if not private or name in _CONVENTIONS or "__" in name:
                continue
            introducers = [base for base in mro[i + 1 :] if name in vars(base)]
            if introducers:
                yield name, introducers[-1], klass


def test_base_docstring_lists_only_hooks_that_exist():
    # A typo in the list would document a hook the base never calls.
    for name in _hooks_of(BasePolicy):
        assert hasattr(BasePolicy, name), name


@pytest.mark.parametrize("name, Policy", all_policies())
def test_policy_overrides_only_documented_hooks(name, Policy):
    undocumented = {
        f"{klass.__qualname__}.{hook} (introduced by {base.__qualname__})"
        for hook, base, klass in _redefinitions(Policy)
        if hook not in _hooks_of(base)
    }
    assert not undocumented


def test_the_check_catches_an_undocumented_override():
    # The walk itself must see a redefinition of a base helper that is no hook.
    class Rogue(all_policies()[0][1]):
        def _apply_feedback(self, X, actions, rewards, sample_weight=None):
            pass

    found = {(hook, base) for hook, base, _ in _redefinitions(Rogue)}
    assert ("_apply_feedback", BasePolicy) in found
    assert "_apply_feedback" not in _hooks_of(BasePolicy)


@pytest.mark.parametrize("name, Policy", all_policies())
def test_one_sampling_hook(name, Policy):
    # _score_sampler is the only sampling hook; _sample_scores is gone everywhere.
    defines = [k.__qualname__ for k in Policy.__mro__ if "_sample_scores" in vars(k)]
    assert defines == []


@pytest.mark.parametrize("name, Policy", all_policies())
def test_slate_policies_say_so_by_their_tag(name, Policy):
    policy = Policy(**Policy._get_test_params()[0])
    # slate_size is the slate family's parameter: the tag and it go together
    has_slate_size = "slate_size" in inspect.signature(Policy).parameters
    assert is_slate_policy(policy) == has_slate_size
    assert policy.__sklearn_tags__().policy_tags.slate == has_slate_size


#: The public verbs of the base: a class overrides one only with a declared reason.
_VERBS = (
    "fit",
    "partial_fit",
    "select",
    "predict_scores",
    "predict",
    "predict_action_proba",
    "score",
)


def _undeclared_verbs(policy_class):
    """``Class.verb`` for every public verb a class of the policy overrides without
    naming it, with a reason, in its own ``_overridden_verbs``."""
    found = set()
    for klass in policy_class.__mro__:
        if klass is BasePolicy:
            continue
        declared = vars(klass).get("_overridden_verbs", {})
        for verb in _VERBS:
            if verb in vars(klass) and not str(declared.get(verb, "")).strip():
                found.add(f"{klass.__qualname__}.{verb}")
    return found


@pytest.mark.parametrize("name, Policy", all_policies())
def test_public_verbs_are_overridden_only_with_a_declared_reason(name, Policy):
    assert _undeclared_verbs(Policy) == set()


@pytest.mark.parametrize("name, Policy", all_policies())
def test_no_policy_of_skbandit_overrides_a_public_verb(name, Policy):
    """The slates' shapes, their greedy slate and value, and the neural family's
    threads are hooks of the base (``_greedy_actions``, ``_off_policy_value``,
    ``_work_scope``): every verb a policy of skbandit answers is the base's."""
    overriding = {
        f"{klass.__qualname__}.{verb}"
        for klass in Policy.__mro__
        if klass is not BasePolicy
        for verb in _VERBS
        if verb in vars(klass)
    }
    assert overriding == set()
    assert not any(vars(k).get("_overridden_verbs") for k in Policy.__mro__)


def test_an_undeclared_public_override_is_caught():
    base = dict(all_policies())["LinUCB"]

    class Rogue(base):
        def predict(self, X):
            return super().predict(X)

    class Declared(base):
        _overridden_verbs = {"predict": "a reason"}

        def predict(self, X):
            return super().predict(X)

    class EmptyReason(base):
        _overridden_verbs = {"predict": " "}

        def predict(self, X):
            return super().predict(X)

    assert _undeclared_verbs(Rogue) == {
        "test_an_undeclared_public_override_is_caught.<locals>.Rogue.predict"
    }
    assert _undeclared_verbs(Declared) == set()
    assert len(_undeclared_verbs(EmptyReason)) == 1
