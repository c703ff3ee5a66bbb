"""The online fast path of the ridge and neural policies: no snapshot, same safety."""
# SPDX-License-Identifier: BSD-3-Clause

import functools
import pickle

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from skbandit.exceptions import NumericalError
from skbandit.policies import EpsilonGreedy, LinTS, LinUCB, NeuralTS, NeuralUCB

D, K = 5, 3


def _fitted(Policy, **params):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, D))
    return Policy(n_actions=K, random_state=0, **params).fit(
        X, rng.integers(K, size=40), rng.random(40)
    )


def _neural(Policy):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, D)).astype(np.float32)
    policy = Policy(n_actions=K, hidden_layer_sizes=(8,), n_steps=3, random_state=0)
    return policy.fit(X, rng.integers(K, size=20), rng.random(20))


def _state(policy):
    return pickle.dumps(policy)


@pytest.mark.parametrize("Policy", [LinUCB, EpsilonGreedy])
def test_fast_path_skips_the_snapshot(Policy, monkeypatch):
    policy = _fitted(Policy)

    def no_snapshot():
        raise AssertionError("the online fast path took a snapshot")

    monkeypatch.setattr(policy, "_unchanged_on_error", no_snapshot)
    x = np.ones((1, D))
    a = policy.select(x)
    policy.partial_fit(x, a, np.array([1.0]))
    # anything unusual (a list, a mask) takes the validated path with its snapshot
    with pytest.raises(AssertionError, match="snapshot"):
        policy.partial_fit(x.tolist(), a, [1.0])
    with pytest.raises(AssertionError, match="snapshot"):
        policy.select(x, action_mask=np.ones((1, K), dtype=bool))


def test_policies_that_draw_before_failing_keep_the_snapshot(monkeypatch):
    policy = _fitted(LinTS)
    calls = []
    original = policy._unchanged_on_error
    monkeypatch.setattr(
        policy, "_unchanged_on_error", lambda: calls.append(1) or original()
    )
    policy.select(np.ones((1, D)))
    assert calls == [1]


@pytest.mark.parametrize(
    "x, reward",
    [
        (np.full((1, D), 1e200), 1.0),  # x.x overflows: the covariance is NaN
        (np.full((1, D), 1e10), 1e300),  # finite x.x + r, but r x overflows
    ],
)
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_a_failed_online_update_changes_nothing(x, reward, fit_intercept):
    policy = _fitted(LinUCB, fit_intercept=fit_intercept)
    policy.predict_scores(np.ones((1, D)))  # the cached solution exists
    before = _state(policy)
    with pytest.raises(NumericalError, match="left unchanged"):
        policy.partial_fit(x, np.array([1]), np.array([reward]))
    assert _state(policy) == before
    assert np.isfinite(policy.coef_).all()


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_a_failed_select_does_not_advance_the_rng():
    policy = _fitted(LinUCB)
    policy._ridge.moment[0, 0] = np.inf  # a diverged state: every score is NaN
    policy._ridge._coef = None
    before = policy._rng.bit_generator.state
    with pytest.raises(NumericalError, match="non-finite scores"):
        policy.select(np.ones((1, D)))
    assert policy._rng.bit_generator.state == before


@pytest.mark.parametrize("Policy", [LinUCB, EpsilonGreedy])
def test_fast_and_validated_paths_learn_the_same_bits(Policy):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((60, D))
    R = rng.random((60, K))
    fast = Policy(n_actions=K, random_state=3)
    slow = Policy(n_actions=K, random_state=3)
    for t in range(60):
        x = X[t : t + 1]
        a = fast.select(x)
        assert_array_equal(slow.select(x.tolist()), a)  # lists: the validated path
        fast.partial_fit(x, a, R[t, a])
        slow.partial_fit(x.tolist(), a.tolist(), R[t, a].tolist())
    assert_array_equal(fast._ridge.covariance, slow._ridge.covariance)
    assert_array_equal(fast._ridge.precision, slow._ridge.precision)
    assert_array_equal(fast.coef_, slow.coef_)
    assert_array_equal(fast.action_counts_, slow.action_counts_)
    assert fast.n_samples_seen_ == slow.n_samples_seen_ == 60


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN and inf arithmetic
@pytest.mark.parametrize(
    "make",
    [
        functools.partial(_fitted, LinUCB),
        functools.partial(_fitted, EpsilonGreedy),
        functools.partial(_neural, NeuralTS),
        functools.partial(_neural, NeuralUCB),
    ],
    ids=["LinUCB", "EpsilonGreedy", "NeuralTS", "NeuralUCB"],
)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_bad_context_gets_the_validation_message_and_changes_nothing(make, bad):
    # The fast path skips the finiteness scan: the hooks' own checks catch the bad
    # value, nothing is written or drawn (the ridge's cached solution, NeuralTS's
    # draws, U's increment), and the validated path names the input. Rows of the
    # policy's context dtype (float32 for the neural ones) take the fast path.
    policy = make()
    policy.predict_scores(np.ones((1, D)))  # the cached solution exists
    x = np.ones((1, D), dtype=policy._context_dtype)
    x[0, 2] = bad
    before = _state(policy)
    with pytest.raises(ValueError, match="Input X contains"):
        policy.select(x)
    with pytest.raises(ValueError, match="Input X contains"):
        policy.partial_fit(x, np.array([1]), np.array([1.0]))
    assert _state(policy) == before


@pytest.mark.filterwarnings("error")
def test_warnings_as_errors_still_give_the_value_error():
    policy = _fitted(LinUCB)
    policy.predict_scores(np.ones((1, D)))  # the cached solution exists
    x = np.ones((1, D))
    x[0, 0] = np.inf
    before = _state(policy)
    with pytest.raises(ValueError, match="Input X contains infinity"):
        policy.select(x)
    assert _state(policy) == before


@pytest.mark.parametrize("Policy", [NeuralTS, NeuralUCB])
def test_neural_fast_path_skips_the_snapshot_and_learns_the_same(Policy, monkeypatch):
    # float32 rows (the neural context dtype) take the fast path; lists the
    # validated one: the same arms and the same network after the same feedback.
    fast, slow = _neural(Policy), _neural(Policy)

    def no_snapshot():
        raise AssertionError("the online fast path took a snapshot")

    monkeypatch.setattr(fast, "_unchanged_on_error", no_snapshot)
    rng = np.random.default_rng(1)
    for _ in range(5):
        x = rng.standard_normal((1, D)).astype(np.float32)
        a = fast.select(x)
        assert_array_equal(slow.select(x.tolist()), a)
        fast.partial_fit(x, a, np.array([1.0]))
        slow.partial_fit(x.tolist(), a.tolist(), [1.0])
    assert_array_equal(fast.covariance_, slow.covariance_)
    for p, q in zip(fast.net_.module_.parameters(), slow.net_.module_.parameters(),
                    strict=True):  # fmt: skip
        assert_array_equal(p.detach().numpy(), q.detach().numpy())
