"""Cascade DR of ranked slates: by hand, its special cases, OBP's RIPS, unbiasedness."""
# SPDX-License-Identifier: BSD-3-Clause

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skbandit.evaluation import cascade_dr_value, dr_value


def _plackett_luce(scores, prefix):
    """Softmax over the arms not in ``prefix``."""
    z = np.exp(scores)
    z[list(prefix)] = 0.0
    return z / z.sum()


def _logs(rng, n, n_arms=4, k=2, with_model=True):
    """Uniform logging without replacement; a Plackett-Luce target."""
    scores = np.array([1.0, 0.0, -1.0, 0.5])[:n_arms]
    actions = np.array([rng.permutation(n_arms)[:k] for _ in range(n)])
    proba = np.empty((n, k, n_arms))
    for i in range(n):
        for j in range(k):
            proba[i, j] = _plackett_luce(scores, actions[i, :j])
    propensities = np.tile(1.0 / (n_arms - np.arange(k)), (n, 1))
    # Cascade rewards: position j's click depends on its arm and the one above.
    attract = np.array([0.3, 0.6, 0.2, 0.5])[:n_arms]
    rewards = np.zeros((n, k))
    for j in range(k):
        p = attract[actions[:, j]] * (0.5 if j else 1.0)
        if j:
            p = p * (1 - 0.5 * attract[actions[:, j - 1]])
        rewards[:, j] = rng.random(n) < p
    q = rng.random((n, k, n_arms)) * 0.3 if with_model else None
    return proba, actions, rewards, propensities, q, scores, attract


def test_by_hand():
    proba = np.array([[[0.5, 0.5, 0.0], [0.0, 0.2, 0.8]]])
    q = np.array([[[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]])
    actions, rewards, prop = [[0, 2]], [[1.0, 0.5]], [[0.25, 0.5]]
    w1, w2 = 0.5 / 0.25, 0.5 / 0.25 * 0.8 / 0.5
    expected = (
        w1 * (1.0 - 0.1) + (0.5 * 0.1 + 0.5 * 0.2)
        + w2 * (0.5 - 0.6) + w1 * (0.2 * 0.5 + 0.8 * 0.6)
    )  # fmt: skip
    got = cascade_dr_value(proba, actions, rewards, prop, expected_rewards=q)
    # A dozen float operations: rounding.
    assert got == pytest.approx(expected, rel=1e-14)
    weighted = cascade_dr_value(proba, actions, rewards, prop, expected_rewards=q,
                                position_weights=[1.0, 0.0])  # fmt: skip
    assert weighted == pytest.approx(w1 * 0.9 + 0.15, rel=1e-14)


def test_one_slot_is_dr():
    rng = np.random.default_rng(0)
    proba, actions, rewards, prop, q, _, _ = _logs(rng, 300, k=1)
    got = cascade_dr_value(proba, actions, rewards, prop, expected_rewards=q)
    expected = dr_value(proba[:, 0], actions[:, 0], rewards[:, 0], prop[:, 0],
                        expected_rewards=q[:, 0])  # fmt: skip
    assert got == pytest.approx(expected, rel=1e-12)


def test_without_a_model_it_is_open_bandit_pipelines_rips():
    ope = pytest.importorskip("obp.ope")
    rng = np.random.default_rng(1)
    n, k = 300, 3
    proba, actions, rewards, prop, _, _, _ = _logs(rng, n, k=k, with_model=False)
    target = np.cumprod(proba[np.arange(n)[:, None], np.arange(k), actions], axis=1)
    theirs = ope.SlateRewardInteractionIPS(len_list=k).estimate_policy_value(
        slate_id=np.repeat(np.arange(n), k),
        reward=rewards.ravel(),
        position=np.tile(np.arange(k), n),
        pscore_cascade=np.cumprod(prop, axis=1).ravel(),
        evaluation_policy_pscore_cascade=target.ravel(),
    )
    ours = cascade_dr_value(proba, actions, rewards, prop)
    assert_allclose(ours, theirs, rtol=1e-9)


def test_unbiased_under_the_cascade_model():
    # The exact value by enumerating the target's slates; the mean estimate over
    # 200 data sets of 200 rounds within 4 of its standard errors (a random
    # reward model, so DR's correction is exercised).
    rng = np.random.default_rng(2)
    n_arms, k = 4, 2
    _, _, _, _, _, scores, attract = _logs(rng, 1)
    truth = 0.0
    for slate in itertools.permutations(range(n_arms), k):
        p = np.prod([_plackett_luce(scores, slate[:j])[slate[j]] for j in range(k)])
        value = attract[slate[0]] + attract[slate[1]] * 0.5 * (
            1 - 0.5 * attract[slate[0]]
        )
        truth += p * value
    estimates = []
    for _ in range(200):
        logs = _logs(rng, 200)
        estimates.append(cascade_dr_value(*logs[:4], expected_rewards=logs[4]))
    estimates = np.array(estimates)
    assert abs(estimates.mean() - truth) < 4 * estimates.std() / np.sqrt(200)


def test_rejects_bad_shapes():
    proba = np.full((2, 2, 3), 1 / 3)
    with pytest.raises(ValueError, match="3-D"):
        cascade_dr_value(proba[:, 0], [[0, 1]] * 2, [[1, 0]] * 2, [[0.5, 0.5]] * 2)
    with pytest.raises(ValueError, match="rewards"):
        cascade_dr_value(proba, [[0, 1]] * 2, [[1.0]] * 2, [[0.5, 0.5]] * 2)
