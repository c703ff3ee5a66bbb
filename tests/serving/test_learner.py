"""The learner: closed events in event order, each learned exactly once."""
# SPDX-License-Identifier: BSD-3-Clause

import copy

import numpy as np
import pytest
from _live import Clock
from numpy.testing import assert_allclose, assert_array_equal

from skbandit.policies import CombLinUCB, EpsilonGreedy, LinUCB
from skbandit.serving import DecisionLog, Learner


@pytest.fixture
def clock():
    return Clock()


def _serve(log, policy, clock, n, seed=0, learn=True):
    """n decisions one second apart, each rewarded 1 when arm 0 was played."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        clock.now += 1
        event = log.decide(policy, rng.normal(size=3), learn=learn)
        log.reward(event.event_id, float(event.action == 0))


def test_learns_closed_events_once_in_event_order(tmp_path, clock):
    policy = LinUCB(n_actions=3, random_state=0)
    log = DecisionLog(tmp_path / "d.sqlite", clock=clock)
    learner = Learner(policy, log, wait=5, batch_size=4)
    _serve(log, policy, clock, 10)
    # Decided at 1001..1010, now 1010: those at or before 1005 are closed.
    assert learner.step() == 5
    assert learner.step() == 0  # nothing new: nothing learned twice
    assert policy.n_samples_seen_ == 5 and learner.watermark_ == 5
    clock.now += 100
    assert learner.step() == 5
    assert policy.n_samples_seen_ == 10 == learner.n_learned_
    # The same batches fed by hand give the same model (same float operations in
    # the same order; the tolerance only absorbs BLAS kernel differences).
    twin = LinUCB(n_actions=3, random_state=0)
    data = log.to_arrays()
    for chunk in ([0, 1, 2, 3], [4], [5, 6, 7, 8], [9]):
        twin.partial_fit(data.X[chunk], data.actions[chunk], data.rewards[chunk])
    x = np.eye(3)
    assert_allclose(policy.predict_scores(x), twin.predict_scores(x), rtol=1e-12)


def test_stops_at_the_first_open_event(tmp_path, clock):
    policy = LinUCB(n_actions=2, random_state=0)
    log = DecisionLog(tmp_path / "d.sqlite", clock=clock)
    learner = Learner(policy, log, wait=1.5)
    log.decide(policy, np.ones(2), event_id="old")
    clock.now += 1
    log.decide(policy, np.ones(2), event_id="new")
    clock.now += 1
    assert learner.step() == 1 and learner.watermark_ == 1


def _learning(path, clock, n):
    """A LinUCB, its log and learner (no wait), after n served decisions."""
    policy = LinUCB(n_actions=3, random_state=0)
    log = DecisionLog(path, clock=clock)
    learner = Learner(policy, log, wait=0)
    _serve(log, policy, clock, n)
    return policy, log, learner


def test_restart_restores_the_checkpoint_in_place(tmp_path, clock):
    path = tmp_path / "d.sqlite"
    policy, log, learner = _learning(path, clock, 6)
    learner.step()
    learned_scores = policy.predict_scores(np.eye(3))
    log.close_connection()
    # A new process: the policy file on disk is the unfitted one.
    fresh = LinUCB(n_actions=3, random_state=0)
    log = DecisionLog(path, clock=clock)
    learner = Learner(fresh, log, wait=0)
    assert fresh.n_samples_seen_ == 6 and learner.n_learned_ == 6
    assert_array_equal(fresh.predict_scores(np.eye(3)), learned_scores)
    _serve(log, fresh, clock, 4, seed=1)
    clock.now += 1
    assert learner.step() == 4 and fresh.n_samples_seen_ == 10
    with pytest.raises(TypeError, match="checkpoint holds a LinUCB"):
        Learner(EpsilonGreedy(n_actions=3), log)


class _Killed(BaseException):
    """Stands for SIGKILL between learning and the checkpoint's commit."""


def test_a_crash_before_the_checkpoint_relearns_from_the_last_one(
    tmp_path, clock, monkeypatch
):
    path = tmp_path / "d.sqlite"
    policy, log, learner = _learning(path, clock, 5)
    learner.step()
    _serve(log, policy, clock, 5, seed=1)
    clock.now += 1

    def die(*args, **kwargs):
        raise _Killed

    monkeypatch.setattr(log, "_write_checkpoint", die)
    with pytest.raises(_Killed):
        learner.step()
    assert policy.n_samples_seen_ == 10  # learned in memory, never committed
    monkeypatch.undo()
    log.close_connection()
    restarted = LinUCB(n_actions=3)
    learner = Learner(restarted, DecisionLog(path, clock=clock), wait=0)
    assert restarted.n_samples_seen_ == 5  # the last checkpoint
    assert learner.step() == 5
    assert restarted.n_samples_seen_ == 10 == learner.n_learned_


def test_deferred_events_are_logged_not_learned(tmp_path, clock):
    policy = LinUCB(n_actions=2, random_state=0)
    log = DecisionLog(tmp_path / "d.sqlite", clock=clock)
    learner = Learner(policy, log, wait=0)
    log.decide(policy, np.ones(2), event_id="a", learn=False)
    log.decide(policy, np.ones(2), event_id="b", learn=False)
    log.decide(policy, np.ones(2), event_id="c")
    log.activate("b")
    clock.now += 1
    assert learner.step() == 2  # b and c
    assert learner.watermark_ == 3  # a was passed over, not left behind
    assert log.status()["n_events"] == 3


def test_slates_and_masks_reach_partial_fit(tmp_path, clock):
    policy = CombLinUCB(slate_size=2, random_state=0)
    log = DecisionLog(tmp_path / "d.sqlite", clock=clock)
    learner = Learner(policy, log, wait=0)
    rng = np.random.default_rng(0)
    mask = np.array([True, True, False, True])
    for _ in range(5):
        event = log.decide(policy, rng.normal(size=(4, 2)), mask=mask)
        assert not set(event.action) & {2}
        log.reward(event.event_id, [1.0, 0.0])
    clock.now += 1
    assert learner.step() == 5 and policy.n_samples_seen_ == 5


def test_install_checkpoints_the_new_policy_with_the_watermark(tmp_path, clock):
    policy = LinUCB(n_actions=3, random_state=0)
    log = DecisionLog(tmp_path / "d.sqlite", clock=clock)
    learner = Learner(policy, log, wait=0)
    _serve(log, policy, clock, 4)
    learner.step()
    candidate = LinUCB(n_actions=3, beta=0.1, random_state=1)
    candidate.fit(np.eye(3), [0, 1, 2], [1.0, 0.0, 0.0])
    learner.install(candidate)
    assert policy.beta == 0.1 and policy.n_samples_seen_ == 3
    assert learner.watermark_ == 4
    # Decisions now carry the version of the checkpointed candidate.
    version = log.decide(policy, np.ones(3)).policy_version
    assert version == log.status()["learned_version"]
    assert version != log.to_arrays(learnable=False).policy_versions[0]
    fresh = copy.deepcopy(policy)
    Learner(fresh, log, wait=0)
    assert fresh.beta == 0.1


def test_learner_checks_its_arguments(tmp_path):
    log = DecisionLog(tmp_path / "d.sqlite")
    with pytest.raises(ValueError, match="batch_size"):
        Learner(LinUCB(n_actions=2), log, batch_size=0)
    with pytest.raises(ValueError, match="wait"):
        Learner(LinUCB(n_actions=2), log, wait=-1)
