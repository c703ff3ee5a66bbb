"""skbandit's policy checks for slate policies (those with a ``slate_size``).

The slate counterparts of :mod:`skbandit.utils._checks._policy_checks`: ``select``
returns ``(n, slate_size)`` distinct arms, feedback is ``(n, slate_size)`` with
``NaN`` for unobserved slots, ``predict_action_proba`` gives inclusion probabilities
summing to ``slate_size``. :mod:`skbandit.utils.estimator_checks` runs them on
every policy whose ``slate`` policy tag is set.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import pickle

import numpy as np
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from skbandit.utils._checks._policy_checks import (
    _N_ACTIONS,
    _prepare,
    _raises,
    _slate_data,
    _state,
)
from skbandit.utils._tags import is_slate_policy


def _uniform_gamma(n_actions, K):
    return np.full((n_actions, n_actions), K * (K - 1) / (n_actions * (n_actions - 1)))


def _gamma(n_actions, K):
    G = _uniform_gamma(n_actions, K) if n_actions > 1 else np.zeros((1, 1))
    np.fill_diagonal(G, K / n_actions)
    return G


def _check_slates(name, slates, n, K, n_actions=_N_ACTIONS):
    assert slates.dtype == np.int64 and slates.shape == (n, K), (name, slates.shape)
    assert np.all((slates >= 0) & (slates < n_actions)), name
    assert all(len(set(row)) == K for row in slates), f"{name}: repeated arm"


def _selects(policy, X, n_calls=4, size=5):
    return np.concatenate(
        [policy.select(X[i * size : (i + 1) * size]) for i in range(n_calls)]
    )


def _warm(policy, X):
    policy.predict_scores(X[:2], return_std=True)
    policy.predict_action_proba(X[:2])
    policy.select(X[:1])
    return policy


def check_slate_unfitted(name, policy):
    """Every verb but ``select`` raises NotFittedError before any feedback."""
    policy = _prepare(policy)
    X, actions, rewards = _slate_data(policy, 5)
    G = _gamma(_N_ACTIONS, policy.slate_size)
    for verb, call in {
        "predict_scores": lambda: policy.predict_scores(X),
        "predict": lambda: policy.predict(X),
        "predict_action_proba": lambda: policy.predict_action_proba(X),
        "score": lambda: policy.score(X, actions, rewards, propensities=G),
    }.items():
        with _raises(NotFittedError, "", f"{name}.{verb} before fit"):
            call()


def check_slate_shapes(name, policy):
    """Shapes of every verb, from the prior and after feedback, both context forms."""
    K = policy.slate_size
    for per_arm in (False, True):
        p = _prepare(policy, **({"n_actions": None} if per_arm else {}))
        X, actions, rewards = _slate_data(p, per_arm=per_arm)
        n = X.shape[0]
        _check_slates(name, p.select(X), n, K)  # the prior
        assert p.fit(X, actions, rewards) is p
        assert p.partial_fit(X[:7], actions[:7], rewards[:7]) is p
        assert p.n_samples_seen_ == n + 7 and p.n_actions_ == _N_ACTIONS
        _check_slates(name, p.select(X), n, K)
        _check_slates(name, p.predict(X), n, K)
        scores = p.predict_scores(X)
        assert scores.shape == (n, _N_ACTIONS) and np.all(np.isfinite(scores))
        mean, std = p.predict_scores(X, return_std=True)
        assert_allclose(mean, scores) and std.shape == scores.shape
        proba = p.predict_action_proba(X)
        assert proba.shape == (n, _N_ACTIONS)
        assert np.all((proba >= 0) & (proba <= 1 + 1e-12))
        assert_allclose(proba.sum(axis=1), K, rtol=1e-10)
    X4, a4, r4 = _slate_data(policy, n_actions=4, per_arm=True)
    p = _prepare(policy, n_actions=None).fit(X4, a4, r4)
    assert p.predict_scores(X4).shape == (X4.shape[0], 4)


def check_slate_action_mask(name, policy):
    """Masked arms are never chosen; fewer available arms than slate_size raises."""
    policy = _prepare(policy)
    K = policy.slate_size
    X, actions, rewards = _slate_data(policy, 24)
    mask = np.ones((24, _N_ACTIONS), dtype=bool)
    if K < _N_ACTIONS:
        mask[np.arange(24), np.arange(24) % _N_ACTIONS] = False
    for p in (clone(policy), clone(policy).fit(X, actions, rewards)):
        slates = p.select(X, action_mask=mask)
        assert np.all(mask[np.arange(24)[:, None], slates]), f"{name}: masked arm"
        if hasattr(p, "n_samples_seen_"):
            proba = p.predict_action_proba(X, action_mask=mask)
            assert np.all(proba[~mask] == 0)
            assert_allclose(proba.sum(axis=1), K, rtol=1e-10)
    if K > 1:
        short = np.ones((24, _N_ACTIONS), dtype=bool)
        short[3, : _N_ACTIONS - K + 1] = False
        before = _state(p)
        for verb in ("select", "predict_action_proba"):
            with _raises(ValueError, "slate_size", f"{name}.{verb} with a short row"):
                getattr(p, verb)(X, action_mask=short)
        assert _state(p) == before
    p.fit(X, actions, rewards, action_mask=np.ones((24, _N_ACTIONS), dtype=bool))


def check_slate_batch_equals_rounds(name, policy):
    """One partial_fit on n rounds equals n single-round calls (and chunks, fit)."""
    for per_arm in (False, True):
        X, actions, rewards = _slate_data(policy, 12, per_arm=per_arm)
        batch = _prepare(policy).partial_fit(X, actions, rewards)
        single = _prepare(policy)
        for t in range(X.shape[0]):
            single.partial_fit(X[t : t + 1], actions[t : t + 1], rewards[t : t + 1])
        fitted = _prepare(policy).fit(X, actions, rewards)
        assert single.n_samples_seen_ == batch.n_samples_seen_ == X.shape[0]
        assert_array_equal(single.action_counts_, batch.action_counts_)
        for other in (single, fitted):
            for std in (False, True):
                assert_allclose(
                    other.predict_scores(X, return_std=std),
                    batch.predict_scores(X, return_std=std),
                    rtol=1e-7,
                    atol=1e-10,
                    err_msg=f"{name}: one batch differs from single rounds",
                )


def check_slate_feedback_alignment(name, policy):
    """Permuting the slots of actions and rewards together changes nothing."""
    X, actions, rewards = _slate_data(policy, per_arm=True)
    perm = np.roll(np.arange(policy.slate_size), 1)  # no slot stays in place
    a = _prepare(policy).fit(X, actions, rewards)
    b = _prepare(policy).fit(X, actions[:, perm], rewards[:, perm])
    assert_allclose(a.predict_scores(X), b.predict_scores(X), rtol=1e-7, atol=1e-10)


def check_slate_random_state(name, policy):
    """Same random_state, same slates; fit resets; pickles continue the sequence."""
    X, actions, rewards = _slate_data(policy)
    X2, actions2, rewards2 = _slate_data(policy, seed=1)
    assert_array_equal(_selects(_prepare(policy), X), _selects(_prepare(policy), X))
    a = _prepare(policy).fit(X2, actions2, rewards2).fit(X, actions, rewards)
    b = _prepare(policy).fit(X, actions, rewards)
    assert_array_equal(_selects(a, X), _selects(b, X))
    a.select(X[:3])
    loaded = pickle.loads(pickle.dumps(a))
    assert_array_equal(_selects(loaded, X), _selects(a, X))


def check_slate_predict_pure(name, policy):
    """predict* and select change nothing but select's random state."""
    X, actions, rewards = _slate_data(policy)
    p = _warm(_prepare(policy).fit(X, actions, rewards), X)
    before = _state(p)
    first = (p.predict(X), p.predict_scores(X), p.predict_action_proba(X[:6]))
    second = (p.predict(X), p.predict_scores(X), p.predict_action_proba(X[:6]))
    for u, v in zip(first, second, strict=True):
        assert_array_equal(u, v, err_msg=f"{name}: predict* not deterministic")
    assert _state(p) == before, f"{name}: predict* changed the policy"
    before = _state(p, rng=False)
    p.select(X)
    assert _state(p, rng=False) == before, f"{name}.select changed the state"


def check_slate_action_proba_matches_select(name, policy):
    """Inclusion probabilities are the frequencies of each arm in ``select``."""
    X, actions, rewards = _slate_data(policy, 8)
    p = _prepare(policy).fit(X, actions, rewards)
    proba = p.predict_action_proba(X)
    rows = np.tile(np.arange(8), 6)
    counts = np.zeros_like(proba)
    for _ in range(50):
        slates = p.select(X[rows])
        np.add.at(counts, (np.repeat(rows, p.slate_size), slates.ravel()), 1)
    assert_allclose(counts / 300, proba, atol=0.15, err_msg=f"{name}: frequencies")


def check_slate_score(name, policy):
    """``score`` is the weighted pseudo-inverse value, derived here in closed form.

    Under uniform logging ``Gamma = a I + b 1 1^T`` (``a = K/N - b``,
    ``b = K(K-1)/(N(N-1))``), whose inverse is ``(I - b/(a + N b) 1 1^T) / a``, so
    ``w = (sum_{i in S} q_i - K^2 b / (a + N b)) / a``.
    """
    X, actions, rewards = _slate_data(policy, 12)
    p = _warm(_prepare(policy).fit(X, actions, rewards), X)
    N, K = _N_ACTIONS, p.slate_size
    rewards = np.nan_to_num(rewards)
    G = _gamma(N, K)
    if np.linalg.matrix_rank(G) < N:
        return  # K = N: every slate is the same
    q = p.predict_action_proba(X)
    b = K * (K - 1) / (N * (N - 1))
    a = K / N - b
    w = (q[np.arange(12)[:, None], actions].sum(axis=1) - K * K * b / (a + N * b)) / a
    r = rewards.sum(axis=1)
    before = _state(p)
    value = p.score(X, actions, rewards, propensities=G)
    assert isinstance(value, float)
    assert_allclose(value, (w * r).sum() / w.sum(), rtol=1e-9, err_msg=name)
    assert _state(p) == before


def check_slate_invalid_feedback(name, policy):
    """Bad slate feedback raises ValueError naming the argument, changes nothing."""
    X, actions, rewards = _slate_data(policy, per_arm=True)
    p = _warm(_prepare(policy).fit(X, actions, rewards), X)
    K = policy.slate_size
    bad = {}
    inf_r = rewards.copy()
    inf_r[2, 0] = np.inf
    bad["inf in rewards"] = ((X, actions, inf_r), {}, "rewards")
    nan_X = X.copy()
    nan_X[1] = np.nan
    bad["NaN in X"] = ((nan_X, actions, rewards), {}, "X contains NaN")
    big = actions.copy()
    big[0, 0] = _N_ACTIONS
    bad["action >= n_actions"] = ((X, big, rewards), {}, "actions")
    neg = actions.copy()
    neg[0, 0] = -1
    bad["negative action"] = ((X, neg, rewards), {}, "actions")
    bad["1-D actions"] = ((X, actions[:, 0], rewards[:, 0]), {}, "actions")
    bad["short actions"] = ((X, actions[:-1], rewards), {}, "actions")
    bad["rewards shape"] = (
        (X, actions, rewards[:, :1].repeat(K + 1, 1)),
        {},
        "rewards",
    )
    if K > 1:
        rep = actions.copy()
        rep[4, 1] = rep[4, 0]
        bad["repeated arm"] = ((X, rep, rewards), {}, "repeats an arm")
    mask = np.ones((X.shape[0], _N_ACTIONS), dtype=bool)
    mask[0, actions[0, 0]] = False
    bad["masked-out action"] = ((X, actions, rewards), {"action_mask": mask}, "mask")
    weight = -np.ones(X.shape[0])
    bad["negative weight"] = (
        (X, actions, rewards),
        {"sample_weight": weight},
        "weight",
    )
    for label, (args, kwargs, match) in bad.items():
        for verb in ("fit", "partial_fit"):
            before = _state(p)
            with _raises(ValueError, match, f"{name}.{verb} with {label}"):
                getattr(p, verb)(*args, **kwargs)
            assert _state(p) == before, f"{name}.{verb} with {label} changed it"


def as_slate_feedback(policy, actions, rewards, n_actions=_N_ACTIONS):
    """Single-arm logs as slate feedback for a slate policy (unchanged otherwise).

    Slot ``k`` of round ``t`` holds arm ``(a_t + k) % n_actions`` with reward ``r_t``,
    so that tests written for single-arm policies can drive slate policies too.
    Supervised views are left alone: they derive slates from ``y``.
    """
    from skbandit.utils._checks._supervised_view import SupervisedViewMixin

    # A supervised view makes its own slates from y.
    is_view = isinstance(policy, SupervisedViewMixin)
    if not is_slate_policy(policy) or is_view:
        return actions, rewards
    shift = np.arange(policy.slate_size)
    slates = (np.asarray(actions)[:, None] + shift) % n_actions
    return slates, np.repeat(np.asarray(rewards, dtype=float)[:, None], shift.size, 1)
