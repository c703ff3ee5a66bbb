"""Tests of the online loop skbandit.evaluation.simulate."""
# SPDX-License-Identifier: BSD-3-Clause

import matplotlib
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import BaseEstimator

from skbandit.environments import BaseEnvironment, ClassificationBandit, LinearBandit
from skbandit.evaluation import SimulationResult, simulate
from skbandit.policies import EpsilonGreedy, LinTS, LinUCB, RandomPolicy
from skbandit.utils._param_validation import InvalidParameterError

matplotlib.use("Agg")


class Oracle(BaseEstimator):
    """Knows theta*: plays the best arm of per-arm contexts, or argmax of a one-hot."""

    def __init__(self, theta=None):
        self.theta = theta

    def select(self, X, action_mask=None):
        scores = X @ self.theta if X.ndim == 3 else X
        if action_mask is not None:
            scores = np.where(action_mask, scores, -np.inf)
        return np.argmax(scores, axis=1)

    def partial_fit(self, X, actions, rewards, action_mask=None):
        return self


def _onehot_bandit(n=30, n_classes=4, **kwargs):
    y = np.arange(n) % n_classes
    return ClassificationBandit(np.eye(n_classes)[y], y, **kwargs), y


def test_oracle_has_zero_regret():
    env = LinearBandit(n_actions=20, n_features=4).reset(0)
    res = simulate(Oracle(env.theta_), env, 300, random_state=0, progress=False)
    assert_array_equal(res.regret, 0.0)
    assert_array_equal(res.actions, np.argmax(env.means_))
    env, _ = _onehot_bandit()
    res = simulate(Oracle(), env, 100, random_state=0, progress=False)
    assert res.total_regret == 0.0 and res.mean_reward == 1.0


def test_random_policy_regret_matches_closed_form():
    n = 4000
    env = LinearBandit(n_actions=10, n_features=5).reset(3)
    gaps = env.means_.max() - env.means_
    res = simulate(RandomPolicy(random_state=1), env, n, random_state=3, progress=False)
    # Sum of n i.i.d. gaps of uniform arms: mean n E[gap], sd sqrt(n Var[gap]).
    assert abs(res.total_regret - n * gaps.mean()) < 4 * np.sqrt(n * gaps.var())
    assert_allclose(res.regret, gaps[res.actions])
    # On a classification bandit, a uniform guess is wrong with probability 1 - 1/K.
    env, _ = _onehot_bandit(n=40, n_classes=5)
    res = simulate(RandomPolicy(random_state=0), env, n, random_state=0, progress=False)
    p = 1 - 1 / 5
    assert abs(res.total_regret - n * p) < 4 * np.sqrt(n * p * (1 - p))


def test_classification_regret_counts_mistakes():
    rng = np.random.RandomState(0)
    X, y = rng.normal(size=(50, 3)), rng.randint(3, size=50)
    env = ClassificationBandit(X, y)
    res = simulate(LinUCB(random_state=0), env, 120, random_state=2, progress=False)
    # Replay the row order of the same seed.
    env.reset(2)
    rows = np.concatenate([(env.contexts(1), env.row_indices_)[1] for _ in range(120)])
    mistakes = res.actions != y[rows]
    assert_array_equal(res.regret, mistakes.astype(float))
    assert_array_equal(res.rewards, 1.0 - mistakes)
    assert res.total_regret == mistakes.sum() == 120 - res.rewards.sum()


def _manual_loop(policy, env, n_rounds, batch_size, seed):
    env.reset(seed)
    actions = []
    for start in range(0, n_rounds, batch_size):
        X = env.contexts(min(batch_size, n_rounds - start))
        a = policy.select(X)
        policy.partial_fit(X, a, env.rewards(a))
        actions.append(a)
    return np.concatenate(actions), policy


@pytest.mark.parametrize("batch_size", [1, 7, 50])
@pytest.mark.parametrize("policy", [LinUCB(random_state=0), LinTS(random_state=0)])
def test_batches_are_delayed_updates(policy, batch_size):
    env = LinearBandit(n_actions=6, n_features=3)
    res = simulate(
        policy, env, 50, batch_size=batch_size, random_state=4, progress=False
    )
    manual, fitted = _manual_loop(
        policy.__class__(**policy.get_params()), env, 50, batch_size, 4
    )
    assert_array_equal(res.actions, manual)
    assert res.select_time.shape == res.update_time.shape == (-(-50 // batch_size),)
    assert_allclose(res.policy.coef_, fitted.coef_)


def test_one_batch_is_one_delayed_update():
    # A single batch: every round decided by the prior, one update at the end.
    env = LinearBandit(n_actions=5, n_features=3)
    policy = LinUCB(fit_intercept=False, random_state=0)
    res = simulate(policy, env, 40, batch_size=40, random_state=0, progress=False)
    prior = policy.set_params(n_actions=5).select(env.reset(0).contexts(40))
    assert_array_equal(res.actions, prior)
    assert res.policy.n_samples_seen_ == 40


def test_policy_is_cloned_and_result_is_reproducible():
    env = LinearBandit(n_actions=5, n_features=3)
    policy = EpsilonGreedy(epsilon=0.2, random_state=0)
    a = simulate(policy, env, 60, random_state=1, progress=False)
    b = simulate(policy, env, 60, random_state=1, progress=False)
    assert not hasattr(policy, "n_actions_") and policy.n_actions is None
    assert a.policy is not policy and a.policy.n_samples_seen_ == 60
    assert a.policy.n_actions_ == 5
    assert_array_equal(a.actions, b.actions)
    assert_array_equal(a.rewards, b.rewards)
    # n_actions=None on shared contexts is filled in from the environment.
    env, _ = _onehot_bandit()
    assert simulate(LinUCB(), env, 5, progress=False).policy.n_actions == 4


def test_mask_regret_uses_best_available_arm():
    class Masked(BaseEnvironment):
        n_actions = 3
        n_features = 3

        def _setup(self, rng):
            pass

        def _draw(self, n_rounds, rng):
            mask = np.ones((n_rounds, 3), dtype=bool)
            rounds = self.n_rounds_drawn_ + np.arange(n_rounds)
            mask[rounds % 2 == 0, 2] = False  # the best arm is away every other round
            X = np.tile([0.1, 0.5, 0.9], (n_rounds, 1))  # the oracle reads these
            return X, X.copy(), mask

    res = simulate(Oracle(), Masked(), 20, random_state=0, progress=False)
    assert_allclose(res.optimal_rewards[::2], 0.5)
    assert_allclose(res.optimal_rewards[1::2], 0.9)
    res = simulate(
        RandomPolicy(random_state=0),
        Masked(),
        200,
        batch_size=3,
        random_state=0,
        progress=False,
    )
    assert not np.any(res.actions[::2] == 2)
    assert np.all(res.regret >= 0)


def test_result_frame_and_plot():
    env = LinearBandit(n_actions=5, n_features=3)
    res = simulate(
        LinUCB(fit_intercept=False),
        env,
        25,
        batch_size=10,
        random_state=0,
        progress=False,
        name="ucb",
    )
    assert isinstance(res, SimulationResult) and res.n_rounds == 25
    assert_allclose(res.cumulative_regret, np.cumsum(res.regret))
    assert np.all(np.diff(res.cumulative_regret) >= 0)
    frame = res.to_frame()
    assert len(frame) == 25
    assert list(frame.columns) == [
        "round",
        "batch",
        "action",
        "reward",
        "expected_reward",
        "optimal_reward",
        "regret",
        "cumulative_regret",
        "select_time",
        "update_time",
    ]
    assert_allclose(frame.groupby("batch").select_time.sum(), res.select_time)
    assert_allclose(frame.regret, frame.optimal_reward - frame.expected_reward)
    ax = res.plot()
    assert ax.get_legend().get_texts()[0].get_text() == "ucb"
    assert_allclose(ax.lines[0].get_ydata(), res.cumulative_regret)
    ax = res.plot(ax=ax, label="again")
    assert len(ax.lines) == 2
    import matplotlib.pyplot as plt

    plt.close("all")


def test_progress_bar(capsys):
    env, _ = _onehot_bandit()
    simulate(RandomPolicy(), env, 10, progress=True)
    simulate(RandomPolicy(), env, 10, progress=False)
    assert "RandomPolicy" not in capsys.readouterr().out


@pytest.mark.parametrize(
    "kwargs",
    [{"n_rounds": 0}, {"n_rounds": 5, "batch_size": 0}, {"n_rounds": 2.5}],
)
def test_invalid_arguments(kwargs):
    env, _ = _onehot_bandit()
    with pytest.raises(InvalidParameterError):
        simulate(RandomPolicy(), env, **kwargs)
    with pytest.raises(InvalidParameterError, match="policy"):
        simulate(object(), env, 5)


def test_pipeline_policy_gets_the_environments_n_actions():
    from skbandit.environments import ClassificationBandit
    from skbandit.pipeline import make_bandit_pipeline
    from skbandit.policies import LinUCB
    from skbandit.preprocessing import MirrorNormalizer

    rng = np.random.default_rng(0)
    env = ClassificationBandit(rng.normal(size=(40, 3)), rng.integers(0, 4, 40))
    pipe = make_bandit_pipeline(MirrorNormalizer(), LinUCB())
    result = simulate(pipe, env, n_rounds=20, random_state=0)
    assert result.policy.steps[-1][1].n_actions_ == 4
    assert pipe.steps[-1][1].n_actions is None  # the pipeline given is untouched
