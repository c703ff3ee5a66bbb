"""A synthetic logged-bandit problem whose every policy's value is known exactly."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.utils import Bunch


def logged_problem(seed, n=2000, n_features=5, n_actions=4, logging="peaked"):
    """Logs of a logging policy on a problem with Bernoulli rewards.

    ``q(x, k) = sigmoid(2 x . theta_k)``; the logging policy is a softmax over a
    *wrong* score (the negated truth, so it favours poor arms) mixed with 20% uniform
    (``"peaked"``), or uniform. ``expected_rewards`` of fresh test contexts give any
    policy's exact value there.
    """
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(n_features, n_actions))

    def expected(X):
        return 1.0 / (1.0 + np.exp(-2.0 * X @ theta))

    X = rng.normal(size=(n, n_features))
    q = expected(X)
    if logging == "uniform":
        law = np.full((n, n_actions), 1.0 / n_actions)
    else:
        wrong = np.exp(-3.0 * q)
        law = 0.2 / n_actions + 0.8 * wrong / wrong.sum(axis=1, keepdims=True)
    cumulative = np.cumsum(law, axis=1)
    actions = np.argmax(cumulative > rng.random(n)[:, None], axis=1)
    rewards = (rng.random(n) < q[np.arange(n), actions]).astype(float)
    X_test = rng.normal(size=(4000, n_features))
    return Bunch(
        X=X,
        actions=actions,
        rewards=rewards,
        propensities=law[np.arange(n), actions],
        logging_value=float(np.mean(np.sum(law * q, axis=1))),
        X_test=X_test,
        q_test=expected(X_test),
        best_value=float(expected(X_test).max(axis=1).mean()),
    )


def true_value(policy, problem):
    """The exact expected reward of ``policy`` on the problem's test contexts."""
    proba = policy.predict_action_proba(problem.X_test)
    return float(np.mean(np.sum(proba * problem.q_test, axis=1)))
