"""The decision log on a real SQLite file: rows, joins, waits, errors, exports."""
# SPDX-License-Identifier: BSD-3-Clause

import copy
import pickle
import sqlite3
import time

import numpy as np
import pytest
import scipy.sparse as sp
from _live import Clock
from numpy.testing import assert_array_equal
from sklearn.linear_model import SGDRegressor

from skbandit.policies import CombLinUCB, EpsilonGreedy, LinUCB, SquareCB
from skbandit.serving import DecisionLog, DuplicateEventError, UnknownEventError


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def log(tmp_path, clock):
    with DecisionLog(tmp_path / "decisions.sqlite", clock=clock) as log:
        yield log


def _fitted(n_actions=3, n_features=4, seed=0, cls=EpsilonGreedy, **params):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(30, n_features))
    actions = rng.integers(n_actions, size=30)
    policy = cls(n_actions=n_actions, random_state=seed, **params)
    policy.fit(X, actions, rng.normal(size=30))
    # Fill the lazy caches (the ridge blocks' coefficients) without touching the
    # random state, so that a pickle taken now changes only if the model does.
    policy.predict_scores(X[:1])
    return policy, rng


def _rows(path):
    with sqlite3.connect(path) as con:
        return (
            con.execute("SELECT * FROM events ORDER BY seq").fetchall(),
            con.execute("SELECT * FROM rewards ORDER BY seq").fetchall(),
        )


def test_decide_logs_what_select_returns(log, clock):
    policy, rng = _fitted()
    twin = copy.deepcopy(policy)  # same state, same random state
    for i in range(20):
        x = rng.normal(size=4)
        mask = np.array([True, i % 2 == 0, True])
        clock.now += 1
        event = log.decide(policy, x, mask=mask)
        arms, props = twin.select(
            x[None], action_mask=mask[None], return_propensities=True
        )
        assert event.action == arms[0] and event.propensity == props[0]
        assert event.time == clock.now
        assert mask[event.action]
    clock.now += 100
    log.close(wait=10)
    data = log.to_arrays()
    assert data.X.shape == (20, 4) and data.actions.shape == (20,)
    assert_array_equal(data.action_mask[:, 1], np.arange(20) % 2 == 0)
    assert_array_equal(data.rewards, 0.0)  # no reward came: the default


def test_context_round_trips_bit_for_bit(log, clock):
    """Dense, per-arm and sparse contexts come back exactly as they went in."""
    policy, rng = _fitted()
    dense = rng.normal(size=(5, 4))
    for x in dense:
        log.decide(policy, x)
    slate = CombLinUCB(slate_size=2, random_state=0)
    per_arm = rng.normal(size=(3, 6, 2))
    sparse_policy = SquareCB(n_actions=3, estimator=SGDRegressor(), random_state=0)
    sparse_rows = sp.random(4, 7, density=0.4, format="csr", random_state=0)
    with (
        DecisionLog(log.path.with_name("slates.sqlite"), clock=clock) as slates,
        DecisionLog(log.path.with_name("sparse.sqlite"), clock=clock) as sparse,
    ):
        for x in per_arm:
            slates.decide(slate, x)
        for i in range(4):
            sparse.decide(sparse_policy, sparse_rows[i])
        clock.now += 10
        log.close(0), slates.close(0), sparse.close(0)
        assert_array_equal(log.to_arrays().X, dense)
        slate_data = slates.to_arrays()
        assert_array_equal(slate_data.X, per_arm)
        assert slate_data.actions.shape == (3, 2) == slate_data.rewards.shape
        back = sparse.to_arrays().X
        assert sp.issparse(back)
        assert_array_equal(back.toarray(), sparse_rows.toarray())


_PICKLED = []


class Counted(LinUCB):
    """LinUCB that counts its pickles."""

    def __getstate__(self):
        _PICKLED.append(1)
        return super().__getstate__()


def test_version_is_the_pickle_hash_cached_until_the_policy_learns(log):
    calls = _PICKLED
    calls.clear()
    policy = Counted(n_actions=2, random_state=0)
    x = np.array([1.0, 0.5])
    first = [log.decide(policy, x).policy_version for _ in range(10)]
    assert len(set(first)) == 1 and len(calls) == 1  # pickled once, not per decision
    policy.partial_fit(x[None], [0], [1.0])
    second = log.decide(policy, x).policy_version
    assert second != first[0] and len(calls) == 2
    # The version is the content hash: an equal pickle gives an equal version.
    twin = pickle.loads(pickle.dumps(policy))
    with DecisionLog(log.path.with_name("other.sqlite")) as other:
        assert other.policy_version(twin) == other.policy_version(twin)


def test_partial_rewards_add_up_and_missing_ones_get_the_default(log, clock):
    policy, _ = _fitted()
    x = np.zeros(4)
    for event_id in ("a", "b", "c"):
        log.decide(policy, x, event_id=event_id)
    assert log.reward("a", 0.25) is False
    assert log.reward("a", 0.5) is False
    clock.now += 5
    log.reward("b", 1.0)
    clock.now += 10
    assert log.close(wait=10, default_reward=-1.0) == 3
    data = log.to_arrays()
    # a: both rewards in time; b: came at +5, in time; c: none, the default.
    assert_array_equal(data.rewards, [0.75, 1.0, -1.0])
    status = log.status()
    assert status["n_defaulted"] == 1 and status["n_open"] == 0
    assert status["mean_reward"] == pytest.approx((0.75 + 1.0 - 1.0) / 3, rel=1e-12)


def test_a_reward_after_the_wait_is_kept_counted_and_not_joined(log, clock):
    policy, _ = _fitted()
    log.decide(policy, np.zeros(4), event_id="slow")
    log.decide(policy, np.zeros(4), event_id="slower")
    clock.now += 11
    # Past the wait but before anyone closed the event: late all the same.
    assert log.reward("slow", 1.0) is False
    log.close(wait=10, default_reward=0.0)
    assert log.reward("slower", 2.0) is True  # after the close
    assert_array_equal(log.to_arrays().rewards, [0.0, 0.0])
    status = log.status()
    assert status["n_late_rewards"] == 2 and status["late_reward_sum"] == 3.0
    _, rewards = _rows(log.path)
    assert len(rewards) == 2  # both kept


def test_unknown_and_duplicate_event_ids_are_clear_errors(log):
    policy, _ = _fitted()
    log.decide(policy, np.zeros(4), event_id="e1")
    before = pickle.dumps(policy)
    with pytest.raises(DuplicateEventError, match="'e1' is already in the log"):
        log.decide(policy, np.zeros(4), event_id="e1")
    assert pickle.dumps(policy) == before  # the policy did not even choose
    with pytest.raises(UnknownEventError, match="No decision with event_id 'nope'"):
        log.reward("nope", 1.0)
    with pytest.raises(UnknownEventError):
        log.activate("nope")
    events, rewards = _rows(log.path)
    assert len(events) == 1 and rewards == []


@pytest.mark.parametrize(
    "x, mask, event_id, match",
    [
        (np.array([0.0, np.nan, 0, 0]), None, None, "NaN"),
        (np.zeros(5), None, None, "5 features"),
        (np.zeros(4), np.array([False, False, False]), None, "available"),
        (np.zeros(4), np.array([1, 0, 1]), None, "mask must be a boolean"),
        (np.zeros(4), None, "", "event_id must be a string"),
        (np.zeros(4), None, "tab\there", "printable"),
        (np.zeros((2, 2, 4)), None, None, "one round"),
    ],
)
def test_a_bad_decision_logs_nothing_and_leaves_the_policy(
    log, x, mask, event_id, match
):
    policy, _ = _fitted()
    before = pickle.dumps(policy)
    with pytest.raises(ValueError, match=match):
        log.decide(policy, x, mask=mask, event_id=event_id)
    assert pickle.dumps(policy) == before
    assert _rows(log.path) == ([], [])


@pytest.mark.parametrize(
    "value, match",
    [
        (np.nan, "finite"),
        (np.inf, "finite"),
        ("one", "a number"),
        ([1.0, 2.0], "a number"),
    ],
)
def test_a_bad_reward_is_refused(log, value, match):
    policy, _ = _fitted()
    log.decide(policy, np.zeros(4), event_id="e")
    with pytest.raises(ValueError, match=match):
        log.reward("e", value)
    assert _rows(log.path)[1] == []


def test_slate_rewards_join_per_position(log, clock):
    slate = CombLinUCB(slate_size=3, random_state=0)
    x = np.random.default_rng(0).normal(size=(5, 2))
    log.decide(slate, x, event_id="s")
    log.reward("s", [1.0, np.nan, 0.0])
    log.reward("s", [0.5, np.nan, np.nan])
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        log.reward("s", 1.0)
    clock.now += 1
    log.close(wait=0, default_reward=-1.0)
    assert_array_equal(log.to_arrays().rewards, [[1.5, -1.0, 0.0]])


def test_deferred_activation(log, clock):
    policy, _ = _fitted()
    log.decide(policy, np.zeros(4), event_id="shown", learn=False)
    log.decide(policy, np.zeros(4), event_id="not shown", learn=False)
    log.activate("shown")
    clock.now += 1
    log.close(wait=0)
    assert list(log.to_arrays().event_ids) == ["shown"]
    assert len(log.to_arrays(learnable=False).event_ids) == 2
    with pytest.raises(ValueError, match="closed"):
        log.activate("not shown")


def test_batch_durability_queues_then_writes(tmp_path):
    policy, _ = _fitted()
    path = tmp_path / "b.sqlite"
    with DecisionLog(
        path, durability="batch", flush_every=3, flush_interval=3600
    ) as log:
        log.decide(policy, np.zeros(4), event_id="q1")
        assert _rows(path)[0] == []  # queued, not yet written
        with pytest.raises(DuplicateEventError):
            log.decide(policy, np.zeros(4), event_id="q1")
        log.decide(policy, np.zeros(4))
        log.decide(policy, np.zeros(4))  # the third wakes the writer thread
        deadline = time.monotonic() + 30
        while len(_rows(path)[0]) < 3:
            assert time.monotonic() < deadline, "the writer never wrote"
            time.sleep(0.01)
        log.decide(policy, np.zeros(4), event_id="q4")
        log.reward("q4", 1.0)  # a reward writes the queue first
        assert len(_rows(path)[0]) == 4
    with DecisionLog(path, durability="batch", flush_interval=0.01) as log:
        log.decide(policy, np.zeros(4), event_id="q5")  # written within 10 ms
        deadline = time.monotonic() + 30
        while len(_rows(path)[0]) < 5:
            assert time.monotonic() < deadline, "the interval never wrote"
            time.sleep(0.01)
        log.decide(policy, np.zeros(4), event_id="q6")
    assert len(_rows(path)[0]) == 6  # closing writes the queue


def test_parquet_export_reads_in_duckdb(log, clock, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    policy, rng = _fitted()
    for i in range(12):
        log.decide(policy, rng.normal(size=4), event_id=f"e{i}")
        if i % 3:
            log.reward(f"e{i}", float(i))
    clock.now += 20
    log.close(wait=10)
    log.reward("e0", 7.0)  # late
    path = log.to_parquet(tmp_path / "events.parquet")
    con = duckdb.connect()
    n, total, late, width = con.execute(
        "SELECT count(*), sum(reward), sum(late_reward_sum), max(len(context)) "
        f"FROM read_parquet('{path}')"
    ).fetchone()
    assert (n, late, width) == (12, 7.0, 4)
    assert total == sum(i for i in range(12) if i % 3)
    data = log.to_arrays()
    first = con.execute(
        f"SELECT context, action, propensity FROM read_parquet('{path}') "
        "WHERE event_id = 'e5'"
    ).fetchone()
    assert_array_equal(first[0], data.X[5])
    assert first[1] == data.actions[5] and first[2] == data.propensities[5]


def test_arrays_feed_the_offline_estimators(log, clock):
    from skbandit.evaluation import estimate_value

    policy, rng = _fitted(epsilon=0.5, schedule="constant")
    for _ in range(50):
        event = log.decide(policy, rng.normal(size=4))
        log.reward(event.event_id, float(event.action == 1))
    clock.now += 1
    log.close(wait=0)
    data = log.to_arrays()
    always_one = np.tile([0.0, 1.0, 0.0], (50, 1))
    value = estimate_value(
        always_one, data.actions, data.rewards, data.propensities, method="ips"
    )
    # Rewarded exactly when arm 1 was played, so IPS of "always 1" is the mean of
    # 1/p over those rounds, divided by n: computed directly here.
    direct = np.sum((data.actions == 1) / data.propensities) / 50
    assert value.value == pytest.approx(direct, rel=1e-12)


def test_close_finds_open_events_left_behind_by_a_clock_step_back(log, clock):
    policy, _ = _fitted()
    clock.now = 100.0
    log.decide(policy, np.zeros(4), event_id="first")
    clock.now = 99.0  # the clock steps back: a later event with an earlier time
    log.decide(policy, np.zeros(4), event_id="second")
    clock.now = 99.6
    assert log.close(wait=0.5) == 1  # only "second" has waited 0.5 s
    assert log.status()["n_open"] == 1
    clock.now = 101.0
    assert log.close(wait=0.5) == 1  # "first", found below the closed one
    log.decide(policy, np.zeros(4), event_id="third")
    clock.now = 102.0
    assert log.close(wait=0.5) == 1 and log.status()["n_open"] == 0
    assert list(log.to_arrays().event_ids) == ["first", "second", "third"]
