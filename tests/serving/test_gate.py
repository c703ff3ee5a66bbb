"""The gate and the apprentice report: off-policy evaluation on a real log."""
# SPDX-License-Identifier: BSD-3-Clause

import sqlite3

import numpy as np
import pytest
from _live import Clock
from numpy.testing import assert_allclose

from skbandit.evaluation import estimate_value
from skbandit.policies import EpsilonGreedy, LinUCB
from skbandit.serving import (
    DecisionLog,
    Gate,
    Learner,
    apprentice_report,
)
from skbandit.serving._reward_model import cross_fitted_rewards

N_ARMS, N_FEATURES = 3, 4
TRUTH = np.random.default_rng(42).normal(size=(N_ARMS, N_FEATURES))


def _best(x):
    return int(np.argmax(TRUTH @ x))


def _logged(tmp_path, n=600, seed=0):
    """A log written by an exploring epsilon-greedy: reward 1 for the best arm."""
    rng = np.random.default_rng(seed)
    clock = Clock()
    log = DecisionLog(tmp_path / "d.sqlite", clock=clock)
    logger = EpsilonGreedy(
        n_actions=N_ARMS, epsilon=0.9, schedule="constant", random_state=seed
    )
    X = rng.normal(size=(n, N_FEATURES))
    for x in X:
        event = log.decide(logger, x)
        log.reward(event.event_id, float(event.action == _best(x)))
    clock.now += 1
    log.close(wait=0.5)
    return log, X


def _good_policy(X):
    """LinUCB fitted on full-information rows of the truth: plays the best arm."""
    policy = LinUCB(n_actions=N_ARMS, beta=0.0, random_state=0)
    arms = np.tile(np.arange(N_ARMS), len(X))
    rows = np.repeat(X, N_ARMS, axis=0)
    rewards = (arms == np.array([_best(x) for x in rows])).astype(float)
    return policy.fit(rows, arms, rewards)


def _bad_policy():
    policy = LinUCB(n_actions=N_ARMS, beta=0.0, random_state=0)
    return policy.fit(np.eye(N_FEATURES)[:1], [0], [1.0])  # always arm 0, roughly


def test_gate_promotes_a_better_candidate_and_records_it(tmp_path):
    log, X = _logged(tmp_path)
    champion, candidate = _bad_policy(), _good_policy(X[:200])
    held, best = X[300:], [_best(x) for x in X[300:]]
    truths = [np.mean(p.predict(held) == best) for p in (candidate, champion)]
    learner = Learner(champion, log, wait=0.5)
    result = Gate().promote(candidate, learner, start=301)
    assert result.promoted
    # Both estimates lie within 4 standard errors of the policies' true values on
    # these contexts (a 1-in-15,000 miss for a normal estimate).
    for truth, value in zip(truths, (result.candidate, result.champion), strict=True):
        assert abs(value.value - truth) < 4 * value.std_error
    assert champion.n_samples_seen_ == candidate.n_samples_seen_  # installed
    status = log.status()
    assert status["last_promotion"]["candidate_value"] == result.candidate.value
    assert status["last_promotion"]["first_seq"] == 301
    assert status["learned_version"] == result.candidate_version


def test_gate_refuses_a_worse_candidate_and_records_that_too(tmp_path):
    log, X = _logged(tmp_path)
    champion = _good_policy(X[:200])
    learner = Learner(champion, log, wait=0.5)
    before = champion.predict_scores(X[:5])
    result = Gate().promote(_bad_policy(), learner)
    assert not result.promoted
    assert_allclose(champion.predict_scores(X[:5]), before, rtol=0)  # untouched
    with sqlite3.connect(log.path) as con:
        ((promoted,),) = con.execute("SELECT promoted FROM promotions").fetchall()
    assert promoted == 0 and log.status()["last_promotion"] is None


def test_gate_figures_are_estimate_value_on_the_log(tmp_path):
    """The gate adds nothing to the estimator: its figures are estimate_value's."""
    log, X = _logged(tmp_path, n=200)
    champion, candidate = _bad_policy(), _good_policy(X[:50])
    result = Gate(alpha=0.1).evaluate(champion, candidate, log)
    data = log.to_arrays()
    q = cross_fitted_rewards(data.X, data.actions, data.rewards, N_ARMS)
    direct = estimate_value(
        candidate.predict_action_proba(data.X),
        data.actions,
        data.rewards,
        data.propensities,
        method="dr",
        expected_rewards=q,
        alpha=0.1,
    )
    assert result.candidate == direct
    with pytest.raises(ValueError, match="min_events=500"):
        Gate(min_events=500).evaluate(champion, candidate, log)


def test_apprentice_report(tmp_path):
    rng = np.random.default_rng(1)
    clock = Clock()
    log = DecisionLog(tmp_path / "d.sqlite", clock=clock)
    X = rng.normal(size=(400, N_FEATURES))
    apprentice = _good_policy(X[:100])
    caller_proba = np.array([0.5, 0.25, 0.25])  # the caller's own rule, random
    rewards = []
    for x in X:
        arm = int(rng.choice(N_ARMS, p=caller_proba))
        event = log.apprentice(apprentice, x, arm, propensity=caller_proba[arm])
        assert event.action == arm and event.propensity == caller_proba[arm]
        rewards.append(float(_best(x) == arm))
        log.reward(event.event_id, rewards[-1])
    log.decide(apprentice, X[0])  # a plain decision: not part of the report
    clock.now += 1
    log.close(wait=0.5)
    report = apprentice_report(log)
    assert report.n_events == 400
    # The caller's value is its mean reward, exactly.
    assert report.caller.value == pytest.approx(np.mean(rewards), rel=1e-12)
    # The policy's estimate lies within 4 standard errors of its true value (a
    # 1-in-15,000 miss for a normal estimate); the caller's true value is about
    # 1/3, the policy's near 0.9: the lift and the preference are clear.
    best = np.array([_best(x) for x in X])
    policy_truth = np.mean(apprentice.predict(X) == best)
    assert abs(report.policy.value - policy_truth) < 4 * report.policy.std_error
    assert report.lift > 0.3 and report.better_rate > 0.7
    assert 0.1 < report.agreement < 0.7
    assert "apprentice events" in str(report)
