"""The rollback protocol: checkpoint() gives an undo, Rollback runs them on error."""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from skbandit._base._rollback import Rollback, checkpoint_attributes
from skbandit.networks import TangentPrecision
from skbandit.policies import CNUCB


class _Part:
    """A stateful part that records when its undo runs."""

    def __init__(self, name, log):
        self.name, self.log, self.value = name, log, 0

    def checkpoint(self):
        value = self.value
        return lambda: (self.log.append(self.name), setattr(self, "value", value))


def test_undos_run_last_first_and_only_on_error():
    log = []
    first, second = _Part("first", log), _Part("second", log)
    with Rollback() as rollback:
        rollback.hold(first).value = 1
    assert log == [] and first.value == 1  # success: nothing undone
    with pytest.raises(ValueError), Rollback() as rollback:
        rollback.hold(first).value = 2
        rollback.hold(second).value = 2
        raise ValueError("rejected")
    assert log == ["second", "first"]
    assert (first.value, second.value) == (1, 0)


def test_attribute_checkpoint_restores_bindings_and_rng_state():
    class Policy:
        pass

    policy = Policy()
    policy.coef, policy._rng = np.zeros(3), np.random.default_rng(0)
    policy._data_rng = np.random.default_rng(1)  # a stream of its own, any name
    expected = np.random.default_rng(0).random()
    expected_data = np.random.default_rng(1).random()
    undo = checkpoint_attributes(policy)
    policy.coef = np.ones(3)  # rebound, as hooks do
    policy.extra = 1
    policy._rng.random()
    policy._data_rng.random()  # advanced in place
    undo()
    assert_array_equal(policy.coef, np.zeros(3))
    assert not hasattr(policy, "extra")
    assert policy._rng.random() == expected
    assert policy._data_rng.random() == expected_data


def test_deep_checkpoint_restores_in_place_writes_twice():
    class Step:
        pass

    step = Step()
    step.mean_ = np.zeros(2)
    undo = checkpoint_attributes(step, deep=True)
    for _ in range(2):  # a second undo must restore again, not hand out a used copy
        step.mean_ += 1.0  # written in place, as partial_fit does
        undo()
        assert_array_equal(step.mean_, np.zeros(2))


def test_precision_checkpoint_is_bit_exact_and_downdate_undo_needs_no_copy():
    rng = np.random.default_rng(0)
    U = TangentPrecision(20, 0.5, kind="full")
    U.downdate_(U.woodbury_factor(rng.normal(size=(3, 20))))
    state = pickle.dumps(U)
    undo = U.checkpoint()
    U.downdate_(U.woodbury_factor(rng.normal(size=(4, 20))))
    assert pickle.dumps(U) != state  # the check can fail
    undo()
    assert pickle.dumps(U) == state
    # The rank-k undo: B B^T added back; the old matrix up to float64 rounding of
    # entries of order 1 / alpha = 2, accumulated over 20-term sums (1e-12 is loose).
    before = U.covariance.copy()
    rank_k_undo = U.downdate_(U.woodbury_factor(rng.normal(size=(4, 20))))
    rank_k_undo()
    np.testing.assert_allclose(U.covariance, before, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n_rounds", [1, 3])
def test_failed_cn_update_leaves_the_policy_as_it_was(monkeypatch, n_rounds):
    # One round fails before Z^{-1} is touched; a batch fails in its last round,
    # after the earlier rounds downdated Z^{-1} and trained the network.
    rng = np.random.default_rng(1)
    X = rng.normal(size=(8, 4, 3)).astype(np.float32)
    policy = CNUCB(
        slate_size=2, hidden_layer_sizes=(4,), covariance="full", n_steps=2,
        train_every=1, random_state=0,
    )  # fmt: skip
    slates = np.array([[0, 1], [2, 3]] * 2)
    policy.partial_fit(X[:4], slates, rng.random((4, 2)))
    state = pickle.dumps(policy)
    calls = {"n": 0}
    original = type(policy)._z_increment

    def fail_on_last(self, *args):
        calls["n"] += 1
        if calls["n"] == n_rounds:
            raise RuntimeError("boom")
        return original(self, *args)

    monkeypatch.setattr(type(policy), "_z_increment", fail_on_last)
    rows = slice(4, 4 + n_rounds)
    with pytest.raises(RuntimeError):
        policy.partial_fit(X[rows], slates[:n_rounds], np.ones((n_rounds, 2)))
    assert calls["n"] == n_rounds  # the earlier rounds did run
    assert pickle.dumps(policy) == state
