"""skbandit's policy checks of the behaviour that scikit-learn cannot know about.

``select``, ``predict_scores``, ``predict_action_proba``, ``score``, per-arm contexts,
masks and the random state, each checked on small synthetic logs and leaving the
policy it is given untouched. The checks of errors are in
:mod:`skbandit.utils._checks._policy_error_checks`;
:mod:`skbandit.utils.estimator_checks` runs them all.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import os
import pickle
import re
import tempfile
from contextlib import contextmanager

import joblib
import numpy as np
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from skbandit.base import BanditTags, is_policy

_N_ACTIONS = 3
_N_FEATURES = 3


# ------------------------------------------------------------------------- helpers
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


def _slate_data(policy, n_samples=30, *, n_actions=_N_ACTIONS, per_arm=False, seed=0):
    """Contexts, random slates and their scores, some slots unobserved (NaN)."""
    rng = np.random.RandomState(seed)
    K = policy.slate_size
    shape = (n_samples, n_actions, _N_FEATURES) if per_arm else (n_samples, _N_FEATURES)
    X = rng.normal(size=shape)
    actions = np.argsort(rng.random_sample((n_samples, n_actions)), axis=1)[:, :K]
    rewards = rng.normal(size=(n_samples, K))
    if K > 1:
        rewards[rng.random_sample(n_samples) < 0.3, K - 1] = np.nan  # cascade-like
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
        # rtol 1e-6: float64 solves of a kernel's Gram matrix (laplacian, 12 rows
        # kept) moved by up to 3.2e-8 relative between chunked and one fit under
        # OPENBLAS_CORETYPE=SkylakeX with 4 threads (1e-10 under 1 thread: the
        # kernels' reduction order, amplified by the Gram matrix's condition); a
        # real chunking error (a row dropped or learned twice) moves scores by 1e-2.
        for return_std in (False, True):
            assert_allclose(
                chunked.predict_scores(X, return_std=return_std),
                full.predict_scores(X, return_std=return_std),
                rtol=1e-6,
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


def check_policy_select_propensities(name, policy):
    """``select(X, return_propensities=True)`` draws the arms (slates) of ``select``
    alone and returns ``predict_action_proba``'s probability of each, repaired only
    where a Monte Carlo estimate missed a drawn arm (for slates: each arm's
    inclusion probability)."""
    from skbandit.evaluation import chosen_propensities

    if getattr(policy, "slate_size", None) is not None:
        X, actions, rewards = _slate_data(policy, 8)
    else:
        X, actions, rewards = _make_data(8)
    a = _prepare(policy).fit(X, actions, rewards)
    twin = _prepare(policy).fit(X, actions, rewards)
    proba = a.predict_action_proba(X)
    exact = a.__sklearn_tags__().policy_tags.exact_action_proba
    for _ in range(3):
        arms, propensities = a.select(X, return_propensities=True)
        assert_array_equal(arms, twin.select(X), err_msg=f"{name}: other arms")
        expected = chosen_propensities(
            proba, arms, n_draws=None if exact else a._n_proba_draws
        )
        # The same computation on the same state and contexts: equal to rounding.
        assert_allclose(propensities, expected, rtol=1e-12, err_msg=name)


def _snips_round_by_round(actions, proba, rewards, propensities) -> float:
    """Self-normalised IPS written out one logged round at a time.

    A peer of :func:`~skbandit.evaluation.snips_value` that shares none of its code:
    ``sum_i w_i r_i / sum_i w_i`` with ``w_i = pi(a_i | x_i) / p_i`` (0 when no
    weight is positive).
    """
    num = den = 0.0
    for a, row, r, p in zip(actions, proba, rewards, propensities, strict=True):
        w = float(row[a]) / float(p)
        num += w * float(r)
        den += w
    return num / den if den > 0 else 0.0


def check_policy_score(name, policy):
    """``score`` is the self-normalised IPS value of the policy, and is pure.

    The expected value is derived without :func:`~skbandit.evaluation.snips_value`,
    on propensities that vary between rounds, so that an estimate that does not
    normalise (IPS) or ignores the propensities (replay) differs:

    - round by round, ``sum_i w_i r_i / sum_i w_i`` with
      ``w_i = pi(a_i | x_i) / p_i``;
    - where ``predict_action_proba`` is one-hot (a greedy policy), from the logged
      rounds whose logged arm is the policy's arm alone:
      ``sum r_i / p_i / sum 1 / p_i`` over those rounds.
    """
    X, actions, rewards = _make_data(12)
    policy = _warm(_prepare(policy).fit(X, actions, rewards), X)
    proba = policy.predict_action_proba(X)
    # Logs the value cannot be degenerate on: every other round logs the policy's
    # likeliest arm, rewards alternate within both halves, propensities vary.
    n, rows = X.shape[0], np.arange(X.shape[0])
    likeliest = proba.argmax(axis=1)
    actions = np.where(rows % 2 == 0, likeliest, (likeliest + 1) % _N_ACTIONS)
    rewards = (rows % 4 < 2).astype(np.float64)
    propensities = np.random.RandomState(3).uniform(0.2, 0.9, size=n)
    before = _state(policy)
    value = policy.score(X, actions, rewards, propensities=propensities)
    assert isinstance(value, float)
    assert_allclose(
        value,
        _snips_round_by_round(actions, proba, rewards, propensities),
        rtol=1e-12,
        err_msg=f"{name}.score is not the self-normalised IPS value",
    )
    if np.all((proba == 0.0) | (proba == 1.0)):
        hits = [i for i in range(n) if likeliest[i] == actions[i]]
        num = sum(rewards[i] / propensities[i] for i in hits)
        den = sum(1.0 / propensities[i] for i in hits)
        assert_allclose(
            value,
            num / den,
            rtol=1e-12,
            err_msg=f"{name}.score of a greedy policy: not the matched rounds' value",
        )
    assert _state(policy) == before
