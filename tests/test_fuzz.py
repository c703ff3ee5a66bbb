"""Fuzz the bad inputs: random shapes, dtypes, NaN/inf/huge values, empty arrays,
wrong masks and wrong propensities, thrown at every policy and at a pipeline; and,
for the slate policies, slates with repeated or unknown arms, the wrong width, and
masks that leave fewer than ``slate_size`` arms.

Each call either works, or raises a ``ValueError`` (``InvalidParameterError`` and
``NotFittedError`` are ValueErrors) with a message; a call that raises leaves the
policy, or the whole pipeline, exactly as it was. A call that works leaves a policy
that still decides on clean contexts.

The default run is small (``max_examples`` below, a few seconds); set
``SKBANDIT_FUZZ_EXAMPLES=500`` for a deep run.
"""
# SPDX-License-Identifier: BSD-3-Clause

import copy
import os
import pickle
import warnings

import joblib
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skbandit.exceptions import NumericalError  # noqa: E402
from skbandit.pipeline import make_bandit_pipeline  # noqa: E402
from skbandit.policies._core._slate import SlatePolicyMixin  # noqa: E402
from skbandit.utils._checks._policy_checks import (  # noqa: E402
    _N_ACTIONS,
    _N_FEATURES,
    _make_data,
    _prepare,
    _state,
    _warm,
)
from skbandit.utils._checks._slate_checks import _slate_data  # noqa: E402
from skbandit.utils.discovery import all_policies  # noqa: E402

N_EXAMPLES = int(os.environ.get("SKBANDIT_FUZZ_EXAMPLES", 10))
FUZZ = settings(
    max_examples=N_EXAMPLES,
    deadline=None,
    database=None,
    derandomize="SKBANDIT_FUZZ_EXAMPLES" not in os.environ,
    suppress_health_check=list(HealthCheck),
)

#: Values that are not numbers, or not reasonable ones.
BAD_NUMBERS = [np.nan, np.inf, -np.inf, 1e308, -1e308, 1e154, 1e-320, 2.0**62]
DTYPES = [np.float32, np.int64, np.bool_, np.complex128, object, str]


# -------------------------------------------------------------------- strategies
@st.composite
def arrays(draw, shape, *, kind="float", low=0, high=1):
    """A valid array of ``shape``, or one of its broken variants."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if kind == "int":
        good = rng.integers(low, high, size=shape)
    elif kind == "mask":
        good = rng.random(shape) < 0.7
        if len(shape) == 2 and shape[1]:
            good[np.arange(shape[0]), rng.integers(shape[1], size=shape[0])] = True
    elif kind == "proba":
        good = rng.uniform(0.05, 1.0, size=shape)
    else:
        good = rng.normal(size=shape)
    how = draw(
        st.sampled_from(
            ["good", "good", "values", "shape", "dtype", "empty", "list", "scalar"]
        )
    )
    if how == "good":
        return good
    if how == "values":
        bad = good.astype(float)
        if bad.size:
            flat = bad.reshape(-1)
            n_bad = draw(st.integers(1, flat.size))
            values = draw(
                st.lists(st.sampled_from(BAD_NUMBERS + [-1.0, 0.5, 7.0, 0.0]))
            )
            for i in range(n_bad):
                flat[rng.integers(flat.size)] = (
                    values[i % len(values)] if values else np.nan
                )
        return bad
    if how == "shape":
        ndim = draw(st.integers(0, 4))
        return rng.normal(size=tuple(draw(st.integers(0, 4)) for _ in range(ndim)))
    if how == "dtype":
        dtype = draw(st.sampled_from(DTYPES))
        return good.astype(dtype)
    if how == "empty":
        return good[:0]
    if how == "list":
        return good.tolist()
    return draw(st.sampled_from([0, 1.5, np.nan, "a", None]))


@st.composite
def calls(draw, *, per_arm, fresh, K=None):
    """``(verb, args, kwargs)``: one call of a public verb, its inputs fuzzed; with
    ``K``, of a slate policy (``(n, K)`` slates and scores, masks short of arms)."""
    verbs = ["fit", "partial_fit", "select"]
    if not fresh:
        verbs += ["predict_scores", "predict_action_proba", "predict", "score"]
    verb = draw(st.sampled_from(verbs))
    n = draw(st.integers(1, 4))
    shape = (n, _N_ACTIONS, _N_FEATURES) if per_arm else (n, _N_FEATURES)
    X = draw(arrays(shape))
    if K is None:
        masks = arrays((n, _N_ACTIONS), kind="mask")
    else:
        masks = slate_masks(n, K)
    kwargs = {}
    if verb in ("select", "predict_action_proba") and draw(st.booleans()):
        kwargs["action_mask"] = draw(masks)
    if verb in ("select", "predict_scores", "predict_action_proba", "predict"):
        return verb, (X,), kwargs
    if K is None:
        actions = draw(arrays((n,), kind="int", high=_N_ACTIONS))
        rewards = draw(arrays((n,)))
        propensities = (n,)
    else:
        actions = draw(slates(n, K))
        rewards = draw(arrays((n, K)))
        numeric = isinstance(rewards, np.ndarray) and rewards.dtype.kind in "biuf"
        if draw(st.booleans()) and numeric and rewards.ndim and rewards.size:
            rewards = rewards.astype(float)
            rewards[..., -1] = np.nan  # an unobserved slot, which is fine
        propensities = draw(
            st.sampled_from([(_N_ACTIONS,) * 2, (n, _N_ACTIONS, _N_ACTIONS)])
        )
    if verb == "score":
        kwargs["propensities"] = draw(arrays(propensities, kind="proba"))
        return verb, (X, actions, rewards), kwargs
    if draw(st.booleans()):
        kwargs["sample_weight"] = draw(arrays((n,), kind="proba"))
    if draw(st.booleans()):
        kwargs["action_mask"] = draw(masks)
    return verb, (X, actions, rewards), kwargs


# ------------------------------------------------------------------- the targets
# Single-arm policies: the generators above draw 1-D actions and rewards; the slate
# policies ((n, slate_size) actions) have their own generators below.
POLICIES = [
    name for name, cls in all_policies() if not issubclass(cls, SlatePolicyMixin)
]
SLATE_POLICIES = [
    name for name, cls in all_policies() if issubclass(cls, SlatePolicyMixin)
]
FORMS = ["fresh", "shared", "per_arm"]


def _target(name, form):
    """A policy, fresh or fitted on shared or per-arm contexts: every example starts
    from its own copy."""
    key = (name, form)
    if key not in _TARGETS:
        policy = _prepare(dict(all_policies())[name](**_test_params(name)))
        if form != "fresh":
            per_arm = form == "per_arm"
            if isinstance(policy, SlatePolicyMixin):
                X, actions, rewards = _slate_data(policy, 8, per_arm=per_arm)
            else:
                X, actions, rewards = _make_data(per_arm=per_arm)
            policy = _warm(policy.fit(X, actions, rewards), X)
        _TARGETS[key] = policy
    return _copy(_TARGETS[key])


def _copy(policy):
    """A deep copy that keeps the caches a pickle drops (``__getstate__``): a failed
    call refilling a cache would otherwise look like a change of state."""
    twin = object.__new__(type(policy))
    twin.__dict__.update(copy.deepcopy(policy.__dict__))
    return twin


_TARGETS: dict = {}


def _test_params(name):
    return dict(all_policies())[name]._get_test_params()[0]


def _clean_contexts(policy):
    per_arm = getattr(policy, "_per_arm_contexts", False)
    return _make_data(n_samples=3, per_arm=per_arm, random_state=1)[0]


def _check_call(target, verb, args, kwargs, state):
    """The call works or raises ValueError with a message, and then changed nothing."""
    before = state(target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # overflow warnings of huge values are fine
        try:
            getattr(target, verb)(*args, **kwargs)
        except ValueError as exc:
            assert str(exc).strip(), f"{verb} raised {type(exc).__name__} without text"
            assert state(target) == before, f"a {verb} that raised changed the state"
            return False
    return True


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", POLICIES)
@FUZZ
@given(data=st.data())
def test_bad_inputs_raise_value_errors_and_change_nothing(name, form, data):
    per_arm = form == "per_arm" or (form == "fresh" and data.draw(st.booleans()))
    verb, args, kwargs = data.draw(calls(per_arm=per_arm, fresh=form == "fresh"))
    policy = _target(name, form)
    if _check_call(policy, verb, args, kwargs, _state):
        _still_decides(policy)


def _still_decides(policy):
    """A call that worked leaves a policy that decides on clean contexts: finite
    scores and an arm, or the NumericalError (a ValueError) of a policy whose state
    lost precision, which says to refit; never a NaN score given silently."""
    if getattr(policy, "n_features_in_", _N_FEATURES) != _N_FEATURES:
        return  # it learned other contexts (a fresh policy fitted on odd ones)
    clean = _clean_contexts(policy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            width = (policy.slate_size,) if _is_slate(policy) else ()
            assert policy.select(clean).shape == (3, *width)
            assert np.isfinite(policy.predict_scores(clean)).all()
        except NumericalError as exc:
            assert "Refit" in str(exc) or "refit" in str(exc), str(exc)


@FUZZ
@given(data=st.data())
def test_bad_inputs_leave_the_whole_pipeline_unchanged(data):
    pipe = make_bandit_pipeline(StandardScaler(), _target("LinUCB", "fresh"))
    fitted = data.draw(st.booleans())
    if fitted:
        X, actions, rewards = _make_data()
        pipe.partial_fit(X, actions, rewards)
        pipe.predict_scores(X), pipe.predict_action_proba(X)  # fill the caches
    verb, args, kwargs = data.draw(calls(per_arm=False, fresh=not fitted))
    if verb in ("fit", "partial_fit") and "action_mask" in kwargs:
        kwargs["linucb__action_mask" if verb == "fit" else "action_mask"] = kwargs.pop(
            "action_mask"
        )
    if verb == "fit" and "sample_weight" in kwargs:
        kwargs["linucb__sample_weight"] = kwargs.pop("sample_weight")
    _check_call(pipe, verb, args, kwargs, joblib.hash)


# ------------------------------------------------------------------------ slates
def _is_slate(policy):
    return isinstance(policy, SlatePolicyMixin)


@st.composite
def slates(draw, n, K):
    """Slates of ``K`` distinct arms, or broken ones: a repeated arm, an unknown or
    negative arm, the wrong width, 1-D, non-integers, or any broken array."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    good = np.argsort(rng.random((n, _N_ACTIONS)), axis=1)[:, :K]
    how = draw(
        st.sampled_from(
            ["good", "good", "repeat", "unknown", "negative", "wide", "narrow", "1d"]
            + ["fraction", "broken"]
        )
    )
    if how == "good":
        return good
    row = rng.integers(n)
    bad = good.copy()
    if how == "repeat":
        bad[row, -1] = bad[row, 0]
        return bad
    if how == "unknown":
        bad[row, rng.integers(K)] = _N_ACTIONS + draw(st.integers(0, 2**40))
        return bad
    if how == "negative":
        bad[row, rng.integers(K)] = -1
        return bad
    if how == "wide":
        return np.c_[good, good[:, :1]]
    if how == "narrow":
        return good[:, :-1]
    if how == "1d":
        return good[:, 0]
    if how == "fraction":
        return good + 0.5
    return draw(arrays((n, K), kind="int", high=_N_ACTIONS))


@st.composite
def slate_masks(draw, n, K):
    """Masks, some of whose rows allow fewer than ``K`` arms (or none)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if draw(st.booleans()):
        return draw(arrays((n, _N_ACTIONS), kind="mask"))
    allowed = draw(st.lists(st.integers(0, _N_ACTIONS), min_size=n, max_size=n))
    order = np.argsort(rng.random((n, _N_ACTIONS)), axis=1)
    return order < np.asarray(allowed)[:, None]


def _slate_state(policy):
    """The content hash of ``__dict__`` and the pickle's bytes."""
    return _state(policy), pickle.dumps(policy)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", SLATE_POLICIES)
@FUZZ
@given(data=st.data())
def test_bad_slates_raise_value_errors_and_change_nothing(name, form, data):
    policy = _target(name, form)
    per_arm = form == "per_arm" or (form == "fresh" and data.draw(st.booleans()))
    call = calls(per_arm=per_arm, fresh=form == "fresh", K=policy.slate_size)
    verb, args, kwargs = data.draw(call)
    if _check_call(policy, verb, args, kwargs, _slate_state):
        _still_decides(policy)
