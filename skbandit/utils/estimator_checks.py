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

import os
import pickle
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial

import joblib
import numpy as np
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_array
from sklearn.utils.validation import check_is_fitted

from skbandit.base import BanditTags, is_policy
from skbandit.utils._param_validation import InvalidParameterError

__all__ = [
    "SupervisedViewMixin",
    "check_policy",
    "parametrize_with_policy_checks",
    "policy_checks_generator",
    "supervised_view",
]

_N_ACTIONS = 3
_N_FEATURES = 3


# --------------------------------------------------------------------------- views
class SupervisedViewMixin:
    """Expose ``fit(X, y)`` so that scikit-learn's common checks can drive a policy.

    ``y`` is turned element-wise into logged feedback: ``actions`` in
    ``[0, n_actions)`` and Bernoulli-like ``rewards`` in ``{0, 1}`` (valid for linear
    and logistic policies alike). When ``n_actions`` is None, 3 arms are used and
    the first ``partial_fit`` infers them like ``fit`` does. Test-only: every other
    verb is the policy's own, except that Monte Carlo action probabilities (used by
    ``score``) take 32 draws instead of 256, to keep scikit-learn's checks fast.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.policies import LinUCB
    >>> from skbandit.utils.estimator_checks import supervised_view
    >>> view = supervised_view(LinUCB)(n_actions=2).fit(np.eye(3), [0.0, 1.0, 2.0])
    >>> view.predict(np.eye(3)).shape
    (3,)
    """

    _n_proba_draws = 32

    def _bandit_targets(self, y):
        # Bad parameters must fail with InvalidParameterError before n_actions is used.
        self._validate_params()
        if y is None:
            name = type(self).__name__
            raise ValueError(
                f"{name} requires y to be passed, but the target y is None"
            )
        y = np.abs(
            check_array(
                y,
                ensure_2d=False,
                dtype=np.float64,
                input_name="y",
                ensure_min_samples=0,
            )
        )
        if getattr(self, "n_actions_", None) is not None:
            n_actions = self.n_actions_
        else:
            n_actions = self.n_actions or _N_ACTIONS
        actions = np.floor(y * 7).astype(np.int64) % n_actions
        rewards = (np.floor(y * 3) % 2).astype(np.float64)
        return actions, rewards

    def fit(self, X, y=None, sample_weight=None):
        """Fit the policy on feedback derived from ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        y : array-like of shape (n_samples,)
            Targets, turned into actions and rewards.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rounds.

        Returns
        -------
        self : object
            Fitted policy.
        """
        return super().fit(X, *self._bandit_targets(y), sample_weight=sample_weight)

    def partial_fit(self, X, y=None, sample_weight=None):
        """Continue learning from feedback derived from ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        y : array-like of shape (n_samples,)
            Targets, turned into actions and rewards.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rounds.

        Returns
        -------
        self : object
            Fitted policy.
        """
        actions, rewards = self._bandit_targets(y)
        if self.n_actions is None and not hasattr(self, "n_actions_"):
            return super().fit(X, actions, rewards, sample_weight=sample_weight)
        return super().partial_fit(X, actions, rewards, sample_weight=sample_weight)

    def score(self, X, y=None):
        """Self-normalised IPS value on feedback derived from ``y``, uniform logging.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        y : array-like of shape (n_samples,)
            Targets, turned into actions and rewards.

        Returns
        -------
        score : float
            The policy's estimated value.
        """
        check_is_fitted(self)
        actions, rewards = self._bandit_targets(y)
        propensities = np.full(actions.shape[0], 1.0 / self.n_actions_)
        return super().score(X, actions, rewards, propensities=propensities)


def supervised_view(policy_class: type) -> type:
    """Return the module-level ``<Policy>View`` class of a policy class.

    The class is ``SupervisedViewMixin`` mixed into ``policy_class``. It is registered
    in this module under its name, so instances pickle; a fresh process re-creates
    the views of skbandit's own policies on unpickling.

    Parameters
    ----------
    policy_class : type
        A policy class (a :class:`~skbandit.base.BasePolicy` subclass).

    Returns
    -------
    view : type
        ``class <Policy>View(SupervisedViewMixin, policy_class)``.

    Examples
    --------
    >>> from skbandit.policies import LinTS
    >>> from skbandit.utils.estimator_checks import supervised_view
    >>> supervised_view(LinTS).__qualname__
    'LinTSView'
    """
    name = f"{policy_class.__name__}View"
    view = globals().get(name)
    if isinstance(view, type) and view.__mro__[2] is policy_class:
        return view
    view = type(
        name,
        (SupervisedViewMixin, policy_class),
        {
            "__module__": __name__,
            "__qualname__": name,
            "__doc__": f"Test-only supervised view of {policy_class.__name__}.",
        },
    )
    globals()[name] = view
    return view


def __getattr__(name: str):
    # PEP 562: lets pickle find a view in a process that has not built it yet.
    if name.endswith("View"):
        from skbandit.utils.discovery import all_policies

        for policy_name, policy_class in all_policies():
            if f"{policy_name}View" == name:
                return supervised_view(policy_class)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ------------------------------------------------------------------------- helpers
def _tested_policies() -> Iterator:
    """One instance per ``_get_test_params()`` entry of every public policy."""
    from skbandit.utils.discovery import all_policies

    for _, policy_class in all_policies():
        for params in policy_class._get_test_params():
            yield policy_class(**params)


def _prepare(policy, **params):
    """Clone with ``n_actions`` and an integer ``random_state`` set (when unset)."""
    policy = clone(policy)
    current = policy.get_params(deep=False)
    updates = {}
    if "n_actions" in current and current["n_actions"] is None:
        updates["n_actions"] = _N_ACTIONS
    if "random_state" in current and not isinstance(current["random_state"], int):
        updates["random_state"] = 0
    updates.update(params)
    return policy.set_params(**updates)


def _make_data(n_samples=30, *, n_actions=_N_ACTIONS, per_arm=False, random_state=0):
    """Contexts with logged uniform actions and Bernoulli rewards of a logit model."""
    rng = np.random.RandomState(random_state)
    shape = (n_samples, n_actions, _N_FEATURES) if per_arm else (n_samples, _N_FEATURES)
    X = rng.normal(size=shape)
    actions = rng.randint(n_actions, size=n_samples)
    theta = rng.normal(size=(n_actions, _N_FEATURES))
    rows = np.arange(n_samples)
    chosen = X[rows, actions] if per_arm else X
    weights = np.broadcast_to(theta[0], chosen.shape) if per_arm else theta[actions]
    logits = 2 * np.einsum("nd,nd->n", chosen, weights)
    rewards = (rng.random_sample(n_samples) < 1 / (1 + np.exp(-logits))).astype(float)
    return X, actions, rewards


def _is_rng(value) -> bool:
    if isinstance(value, (np.random.RandomState, np.random.Generator)):
        return True
    cls = type(value)
    return cls.__name__ == "Generator" and cls.__module__.startswith("torch")


def _state(policy, *, rng=True) -> str:
    """Content hash of everything in the policy's ``__dict__`` (arrays by value)."""
    return joblib.hash({k: v for k, v in vars(policy).items() if rng or not _is_rng(v)})


@contextmanager
def _raises(exc, match: str, what: str):
    try:
        yield
    except exc as e:
        if not re.search(match, str(e)):
            raise AssertionError(
                f"{what}: raised {type(e).__name__}({str(e)!r}), which does not "
                f"match {match!r}"
            ) from e
    else:
        raise AssertionError(f"{what}: did not raise {exc.__name__}")


def _warm(policy, X):
    """Fill lazily computed caches, so that state comparisons see only real changes."""
    policy.predict_scores(X[:2], return_std=True)
    policy.predict_action_proba(X[:2])
    policy.select(X[:1])
    return policy


def _selects(policy, X, n_calls=4, size=5):
    return np.concatenate(
        [policy.select(X[i * size : (i + 1) * size]) for i in range(n_calls)]
    )


# -------------------------------------------------------------------------- checks
def check_policy_tags(name, policy):
    """Tags are :class:`~skbandit.base.BanditTags` and declare a policy."""
    tags = policy.__sklearn_tags__()
    assert isinstance(tags, BanditTags), f"{name} tags are {type(tags).__name__}"
    assert is_policy(policy)
    assert tags.estimator_type == "policy"
    assert tags.target_tags.required


def check_policy_unfitted(name, policy):
    """Every verb but ``select`` raises NotFittedError before any feedback."""
    policy = _prepare(policy)
    X, actions, rewards = _make_data(5)
    verbs = {
        "predict_scores": lambda: policy.predict_scores(X),
        "predict": lambda: policy.predict(X),
        "predict_action_proba": lambda: policy.predict_action_proba(X),
        "score": lambda: policy.score(
            X, actions, rewards, propensities=np.full(5, 1 / 3)
        ),
    }
    for verb, call in verbs.items():
        with _raises(NotFittedError, "", f"{name}.{verb} before fit"):
            call()


def check_policy_select_prior(name, policy):
    """``select`` works before any feedback when the number of arms is known."""
    for per_arm in (False, True):
        p = _prepare(policy) if not per_arm else _prepare(policy, n_actions=None)
        X, _, _ = _make_data(8, per_arm=per_arm)
        actions = p.select(X)
        assert actions.dtype == np.int64 and actions.shape == (8,)
        assert np.all((actions >= 0) & (actions < _N_ACTIONS))
        assert p.n_actions_ == _N_ACTIONS
        # the prior is a fitted state: the other verbs now work
        assert p.predict_scores(X).shape == (8, _N_ACTIONS)


def check_policy_output_shapes(name, policy):
    """Shapes, dtypes and ranges of every deciding verb."""
    policy = _prepare(policy)
    X, actions, rewards = _make_data()
    policy.fit(X, actions, rewards)
    n = X.shape[0]
    assert policy.fit(X, actions, rewards) is policy
    assert policy.partial_fit(X, actions, rewards) is policy
    assert policy.n_actions_ == _N_ACTIONS and policy.n_features_in_ == _N_FEATURES
    chosen = policy.select(X)
    assert chosen.dtype == np.int64 and chosen.shape == (n,), chosen
    assert np.all((chosen >= 0) & (chosen < _N_ACTIONS))
    greedy = policy.predict(X)
    assert greedy.dtype == np.int64 and greedy.shape == (n,)
    scores = policy.predict_scores(X)
    assert scores.shape == (n, _N_ACTIONS) and scores.dtype.kind == "f"
    assert np.all(np.isfinite(scores))
    assert_array_equal(greedy, np.argmax(scores, axis=1))
    mean, std = policy.predict_scores(X, return_std=True)
    assert_allclose(mean, scores, rtol=1e-12)
    assert std.shape == (n, _N_ACTIONS) and np.all(std >= 0)
    proba = policy.predict_action_proba(X)
    assert proba.shape == (n, _N_ACTIONS) and np.all(proba >= 0)
    assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-10)


def check_policy_action_mask(name, policy):
    """Masked arms are never selected and have probability zero."""
    policy = _prepare(policy)
    n = 24
    X, actions, rewards = _make_data(n)
    mask = np.random.RandomState(1).random_sample((n, _N_ACTIONS)) < 0.5
    mask[np.arange(n), np.arange(n) % _N_ACTIONS] = True
    for p in (clone(policy), clone(policy).fit(X, actions, rewards)):
        chosen = p.select(X, action_mask=mask)
        assert np.all(mask[np.arange(n), chosen]), f"{name} selected a masked arm"
        if hasattr(p, "n_samples_seen_"):
            proba = p.predict_action_proba(X, action_mask=mask)
            assert np.all(proba[~mask] == 0)
            assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-10)
    # feedback for available arms with a mask is accepted
    mask = np.ones((n, _N_ACTIONS), dtype=bool)
    mask[np.arange(n), (actions + 1) % _N_ACTIONS] = False
    policy.fit(X, actions, rewards, action_mask=mask)
    policy.partial_fit(X, actions, rewards, action_mask=mask)


def check_policy_per_arm_contexts(name, policy):
    """Per-arm contexts of shape (n, n_actions, n_features) work in every verb."""
    X, actions, rewards = _make_data(per_arm=True)
    n = X.shape[0]
    for n_actions in (None, _N_ACTIONS):
        p = _prepare(policy, n_actions=n_actions).fit(X, actions, rewards)
        assert p.n_actions_ == _N_ACTIONS and p.n_features_in_ == _N_FEATURES
        p.partial_fit(X[:7], actions[:7], rewards[:7])
        assert p.n_samples_seen_ == n + 7
        chosen = p.select(X)
        assert chosen.shape == (n,) and chosen.dtype == np.int64
        assert p.predict_scores(X).shape == (n, _N_ACTIONS)
        assert p.predict(X).shape == (n,)
        assert_allclose(p.predict_action_proba(X).sum(axis=1), 1.0, rtol=1e-10)
    # the number of arms may differ from the one contexts were generated with
    X4, a4, r4 = _make_data(n_actions=4, per_arm=True)
    p = _prepare(policy, n_actions=None).fit(X4, a4, r4)
    assert p.predict_scores(X4).shape == (n, 4)


def check_policy_partial_fit_equals_fit(name, policy):
    """For ``exact_partial_fit`` policies, chunked partial_fit equals one fit."""
    for per_arm in (False, True):
        X, actions, rewards = _make_data(per_arm=per_arm)
        weights = np.random.RandomState(2).uniform(0.5, 2.0, size=X.shape[0])
        full = _prepare(policy).fit(X, actions, rewards, sample_weight=weights)
        chunked = _prepare(policy)
        for chunk in np.array_split(np.arange(X.shape[0]), [1, 8, 20]):
            chunked.partial_fit(
                X[chunk], actions[chunk], rewards[chunk], sample_weight=weights[chunk]
            )
        assert chunked.n_samples_seen_ == full.n_samples_seen_ == X.shape[0]
        assert_array_equal(chunked.action_counts_, full.action_counts_)
        for return_std in (False, True):
            assert_allclose(
                chunked.predict_scores(X, return_std=return_std),
                full.predict_scores(X, return_std=return_std),
                rtol=1e-10,
                atol=1e-12,
                err_msg=f"{name}: partial_fit chunks differ from fit",
            )


def check_policy_fit_resets(name, policy):
    """``fit`` forgets earlier feedback; ``partial_fit`` accumulates it."""
    X, actions, rewards = _make_data()
    X2, actions2, rewards2 = _make_data(random_state=1)
    refit = _prepare(policy).fit(X, actions, rewards).fit(X2, actions2, rewards2)
    fresh = _prepare(policy).fit(X2, actions2, rewards2)
    assert refit.n_samples_seen_ == X2.shape[0]
    assert_allclose(refit.predict_scores(X), fresh.predict_scores(X), rtol=1e-12)
    assert_array_equal(_selects(refit, X), _selects(fresh, X))
    more = _prepare(policy).fit(X, actions, rewards).partial_fit(X2, actions2, rewards2)
    assert more.n_samples_seen_ == X.shape[0] + X2.shape[0]
    assert_array_equal(
        more.action_counts_, np.bincount(np.r_[actions, actions2], minlength=3)
    )


def check_policy_select_reproducible(name, policy):
    """The same random_state gives the same ``select`` sequence, from the prior too."""
    X, actions, rewards = _make_data()
    assert_array_equal(_selects(_prepare(policy), X), _selects(_prepare(policy), X))
    a = _prepare(policy).fit(X, actions, rewards)
    b = _prepare(policy).fit(X, actions, rewards)
    c = clone(a).fit(X, actions, rewards)
    expected = _selects(a, X)
    assert_array_equal(_selects(b, X), expected)
    assert_array_equal(_selects(c, X), expected)


def check_policy_pickle_continues_select(name, policy):
    """pickle and joblib round trips mid-stream continue the same select sequence."""
    X, actions, rewards = _make_data()
    policy = _prepare(policy).fit(X, actions, rewards)
    policy.select(X[:5])
    blob = pickle.dumps(policy)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "policy.joblib")
        joblib.dump(policy, path)
        from_joblib = joblib.load(path)
    from_pickle = pickle.loads(blob)
    expected = _selects(policy, X)
    for loaded, how in ((from_pickle, "pickle"), (from_joblib, "joblib")):
        assert type(loaded) is type(policy)
        assert_array_equal(
            _selects(loaded, X), expected, err_msg=f"{name} after {how} round trip"
        )
        assert_allclose(loaded.predict_scores(X), policy.predict_scores(X), rtol=0)


def check_policy_predict_deterministic(name, policy):
    """predict* are pure: same output twice, state and random state untouched."""
    X, actions, rewards = _make_data()
    policy = _warm(_prepare(policy).fit(X, actions, rewards), X)
    twin = clone(policy).fit(X, actions, rewards)
    twin.select(X[:1])  # the only draw _warm made
    before = _state(policy)
    outputs = []
    for _ in range(2):
        outputs.append(
            (
                policy.predict(X),
                policy.predict_scores(X),
                *policy.predict_scores(X, return_std=True),
                policy.predict_action_proba(X[:6]),  # may be Monte Carlo: few rows
            )
        )
    for first, second in zip(*outputs, strict=True):
        assert_array_equal(first, second, err_msg=f"{name}: predict* not deterministic")
    assert _state(policy) == before, f"{name}: predict* changed the policy"
    assert_array_equal(_selects(policy, X), _selects(twin, X))


def check_policy_select_mutates_only_rng(name, policy):
    """``select`` changes nothing but the random state, before and after feedback."""
    X, actions, rewards = _make_data()
    for fitted in (False, True):
        p = _prepare(policy)
        if fitted:
            p.fit(X, actions, rewards)
        else:
            p.select(X[:1])  # the first select materialises the prior
        before = _state(_warm(p, X), rng=False)
        p.select(X)
        p.select(X, action_mask=np.ones((X.shape[0], _N_ACTIONS), dtype=bool))
        assert _state(p, rng=False) == before, f"{name}.select changed the state"


def check_policy_action_proba_matches_select(name, policy):
    """``predict_action_proba`` is the distribution ``select`` draws from."""
    X, actions, rewards = _make_data(8)
    policy = _prepare(policy).fit(X, actions, rewards)
    proba = policy.predict_action_proba(X)
    # 50 calls on 6 copies of each row: 300 draws per row, in few calls.
    n_calls, n_copies = 50, 6
    rows = np.tile(np.arange(X.shape[0]), n_copies)
    counts = np.zeros_like(proba)
    for _ in range(n_calls):
        np.add.at(counts, (rows, policy.select(X[rows])), 1)
    tags = policy.__sklearn_tags__().policy_tags
    atol = 0.1 if tags.exact_action_proba else 0.15
    assert_allclose(
        counts / (n_calls * n_copies),
        proba,
        atol=atol,
        err_msg=f"{name}: select frequencies",
    )


def check_policy_score(name, policy):
    """``score`` is the SNIPS value of ``predict_action_proba`` and is pure."""
    from skbandit.evaluation import snips_value

    X, actions, rewards = _make_data(12)
    propensities = np.full(X.shape[0], 1 / _N_ACTIONS)
    policy = _warm(_prepare(policy).fit(X, actions, rewards), X)
    before = _state(policy)
    value = policy.score(X, actions, rewards, propensities=propensities)
    assert isinstance(value, float)
    expected = snips_value(
        actions,
        policy.predict_action_proba(X),
        rewards=rewards,
        propensities=propensities,
    )
    assert_allclose(value, expected, rtol=1e-12)
    assert _state(policy) == before


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


def check_policy_invalid_feedback(name, policy):
    """Bad feedback raises ValueError naming the argument, and changes nothing."""
    for per_arm in (False, True):
        X, actions, rewards = _make_data(per_arm=per_arm)
        fitted = _warm(_prepare(policy).fit(X, actions, rewards), X)
        cases = _feedback_errors(X, actions, rewards, per_arm=per_arm)
        _check_errors_leave_policy_unchanged(name, policy, cases, fitted)


def check_policy_invalid_decision_input(name, policy):
    """Bad input to select/predict*/score raises ValueError and changes nothing."""
    for per_arm in (False, True):
        X, actions, rewards = _make_data(per_arm=per_arm)
        fitted = _warm(_prepare(policy).fit(X, actions, rewards), X)
        cases = _deciding_errors(X, actions, rewards, per_arm=per_arm)
        _check_errors_leave_policy_unchanged(name, policy, cases, fitted)


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


# ------------------------------------------------------------------------- runners
def _yield_policy_checks(policy) -> Iterator[Callable]:
    yield check_policy_tags
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
    yield check_policy_score
    yield check_policy_invalid_feedback
    yield check_policy_invalid_decision_input
    yield check_policy_propensities_length
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
