"""Defaults learn (STYLE rule 39c, API 5e): the linear, GLM and ensemble policies.

Each policy runs with its defaults (``random_state`` only) online on small problems of
its kind and must make less than half of a uniformly random policy's expected regret:

- ``wine``: scikit-learn's wine data, standard-scaled, as a 3-arm classification bandit
  (shared contexts), 300 rounds; random's expected regret is ``(2 / 3) 300 = 200``.
- ``logistic``: ``LogisticBandit(n_actions=10, n_features=5)`` (fixed arms, Bernoulli
  rewards with a linear logit), 500 rounds; random's expected regret is
  ``500 (max mean - mean of the means)`` of each instance (87 to 159 over seeds 0-7).
  The GLM and ensemble policies run it: it is their model.

The margin: on wine over seeds 0-5 no seed exceeded 0.28 of random's regret (KernelTS;
the means of seeds 0-2 and of 3-5 at most 0.26, ECOLog), so three seeds suffice. On
``logistic`` single instances reach 0.94 (LogTS on instance 5, whose best arm it locks
out; GLM-UCB 0.71 there), and the mean of seeds 3-5 reached 0.47 for LogTS: the test
averages five seeds, whose mean over any five of seeds 0-5 stays at most 0.32 (LogTS;
UCB-GLM 0.30, GLM-ES 0.24). The former defaults fail it: GLM-UCB's and
Logistic-UCB-1's theory widths and GLM-ES's anytime restarts with 500 warm-up rounds
played at random (477, 470 and 488 mistakes of about 500 on breast_cancer), and LinES
without a perturbed prior played worse than random on ``logistic`` (461 against 304 in
1,000 rounds).
"""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

from skbandit import policies
from skbandit.environments import ClassificationBandit, LogisticBandit
from skbandit.evaluation import simulate

SEEDS = (0, 1, 2)
#: The logistic problem's instances differ more (see the module docstring).
LOGISTIC_SEEDS = (0, 1, 2, 3, 4)
#: A policy's mean regret over the seeds must stay below this fraction of random's.
HALF = 0.5

LINEAR = [
    "EpsilonGreedy",
    "LinUCB",
    "LinTS",
    "LinPHE",
    "KernelUCB",
    "KernelTS",
    "LinES",
]
GLM = [
    "GLMUCB",
    "UCBGLM",
    "LogTS",
    "LogPHE",
    "ECOLog",
    "LogisticUCB1",
    "GLMES",
]


def _wine():
    X, y = load_wine(return_X_y=True)
    return ClassificationBandit(StandardScaler().fit_transform(X), y), 300


def _random_regret(env, n_rounds, seed):
    """A uniformly random policy's expected regret on the instance of ``seed``."""
    if isinstance(env, ClassificationBandit):
        return n_rounds * (1.0 - 1.0 / env.n_actions)
    env.reset(seed)
    return n_rounds * (env.means_.max() - env.means_.mean())


def _assert_defaults_learn(name, env, n_rounds, seeds=SEEDS):
    cls = getattr(policies, name)
    regret, random = [], []
    for seed in seeds:
        result = simulate(
            cls(random_state=seed), env, n_rounds, random_state=seed, progress=False
        )
        regret.append(result.cumulative_regret[-1])
        random.append(_random_regret(env, n_rounds, seed))
    assert np.mean(regret) < HALF * np.mean(random), (name, regret, random)


@pytest.mark.parametrize("name", LINEAR + GLM)
def test_defaults_learn_on_wine(name):
    env, n_rounds = _wine()
    _assert_defaults_learn(name, env, n_rounds)


@pytest.mark.parametrize("name", [*GLM, "LinES", "EpsilonGreedy"])
def test_defaults_learn_on_a_logistic_bandit(name):
    env = LogisticBandit(n_actions=10, n_features=5)
    _assert_defaults_learn(name, env, 500, seeds=LOGISTIC_SEEDS)


def test_the_random_regret_is_what_a_random_policy_makes():
    # The yardstick itself: RandomPolicy's regret over the seeds is near it (the
    # mean of 3 x 300 Bernoulli(2/3) mistakes has sd 8; 3 sd is 25).
    env, n_rounds = _wine()
    regret = [
        simulate(
            policies.RandomPolicy(random_state=s),
            env,
            n_rounds,
            random_state=s,
            progress=False,
        ).cumulative_regret[-1]
        for s in SEEDS
    ]
    assert abs(np.mean(regret) - _random_regret(env, n_rounds, 0)) < 25


def test_ensemble_defaults_never_restart_and_fit_keeps_every_row():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    actions = rng.integers(3, size=300)
    rewards = rng.integers(2, size=300).astype(float)
    for cls in (policies.LinES, policies.GLMES):
        policy = cls(random_state=0).fit(X, actions, rewards)
        # the anytime schedule would be in phase 2 with the last 39 rows only
        assert policy.phase_ == 0
        assert policy.perturbations_.shape[0] == 300
        anytime = cls(horizon="anytime", random_state=0).fit(X, actions, rewards)
        assert (anytime.phase_, anytime.perturbations_.shape[0]) == (2, 39)
