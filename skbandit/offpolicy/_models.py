"""The scikit-learn models that the off-policy learners fit, and how they fit them.

``ArmRegressors`` is a reward model (or a regression on importance-weighted targets):
one clone of a regressor per arm, or one clone reading ``[x, one_hot(arm)]``.
``fit_weighted`` passes sample weights to any estimator, a ``Pipeline`` included.
``cross_fitted_rewards`` predicts each logged row's rewards with a model that did not
see it.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from sklearn import config_context
from sklearn.base import clone
from sklearn.model_selection import KFold
from sklearn.pipeline import Pipeline
from sklearn.utils import check_random_state

__all__ = ["ArmRegressors", "cross_fitted_rewards", "fit_weighted", "seeded_clone"]


def seeded_clone(estimator, random_state):
    """A clone of ``estimator``, its unset random states seeded from ``random_state``.

    A learner with an integer ``random_state`` is then reproducible also with
    estimators that draw (forests, SGD); ``random_state=None`` leaves them unseeded.
    """
    template = clone(estimator)
    if random_state is None:
        return template
    seeds = check_random_state(random_state)
    unset = {
        name: int(seeds.randint(np.iinfo(np.int32).max))
        for name, value in sorted(template.get_params(deep=True).items())
        if (name == "random_state" or name.endswith("__random_state")) and value is None
    }
    return template.set_params(**unset)


def fit_weighted(model, X, y, sample_weight=None):
    """``model.fit(X, y)`` with ``sample_weight`` given to the model's final step.

    Metadata routing is off for this internal call (the model is our clone), so a
    ``Pipeline`` takes ``<last step>__sample_weight`` whatever the global setting.
    """
    if sample_weight is None:
        return model.fit(X, y)
    with config_context(enable_metadata_routing=False):
        if isinstance(model, Pipeline):
            name = model.steps[-1][0]
            return model.fit(X, y, **{f"{name}__sample_weight": sample_weight})
        return model.fit(X, y, sample_weight=sample_weight)


class _Constant:
    """A fitted stand-in predicting one value: an arm with too few rows to fit."""

    def __init__(self, value: float):
        self.value = float(value)

    def predict(self, X):
        return np.full(X.shape[0], self.value)


class ArmRegressors:
    """Regressions of a target per arm: one clone per arm, or one shared clone.

    ``arm_models="per_arm"`` fits arm ``k``'s clone on the rows ``rows[k]`` with
    targets ``targets[k]``; ``"shared"`` fits one clone on ``[x, one_hot(k)]`` over
    all of them. An arm with fewer than ``min_rows`` rows predicts ``fallback``.
    """

    min_rows = 2

    def __init__(self, estimator, n_actions: int, arm_models: str, random_state):
        self.estimator = estimator
        self.n_actions = n_actions
        self.arm_models = arm_models
        self.random_state = random_state

    def _design(self, X, arm: int) -> NDArray:
        one_hot = np.zeros((X.shape[0], self.n_actions))
        one_hot[:, arm] = 1.0
        return np.hstack([X, one_hot])

    def fit(self, X, rows, targets, weights, fallback: float):
        """Fit on ``X[rows[k]]`` -> ``targets[k]`` (weights ``weights[k]`` or None)."""
        if self.arm_models == "shared":
            design = np.vstack([self._design(X[r], k) for k, r in enumerate(rows)])
            target = np.concatenate(targets)
            weight = None if weights[0] is None else np.concatenate(weights)
            model = seeded_clone(self.estimator, self.random_state)
            self.models_ = [fit_weighted(model, design, target, weight)]
            return self
        models = []
        for k in range(self.n_actions):
            if rows[k].shape[0] < self.min_rows:
                value = targets[k].mean() if targets[k].size else fallback
                models.append(_Constant(value))
                continue
            model = seeded_clone(self.estimator, self.random_state)
            models.append(fit_weighted(model, X[rows[k]], targets[k], weights[k]))
        self.models_ = models
        return self

    def predict(self, X) -> NDArray:
        """Predicted target of every arm, shape (n_samples, n_actions)."""
        out = np.empty((X.shape[0], self.n_actions))
        for k in range(self.n_actions):
            if self.arm_models == "shared":
                out[:, k] = self.models_[0].predict(self._design(X, k))
            else:
                out[:, k] = self.models_[k].predict(X)
        return out


def logged_rows(actions, n_actions):
    """The row indices of each arm's logged rounds."""
    return [np.flatnonzero(actions == k) for k in range(n_actions)]


def fit_reward_model(estimator, X, actions, rewards, weights, n_actions, arm_models,
                     random_state):  # fmt: skip
    """A reward model of the logged rewards: each arm regressed on its own rounds."""
    rows = logged_rows(actions, n_actions)
    model = ArmRegressors(estimator, n_actions, arm_models, random_state)
    return model.fit(
        X,
        rows,
        [rewards[r] for r in rows],
        [None if weights is None else weights[r] for r in rows],
        fallback=float(rewards.mean()),
    )


def cross_fitted_rewards(estimator, X, actions, rewards, weights, n_actions,
                         arm_models, cv, random_state):  # fmt: skip
    """Each row's predicted rewards of every arm from a model that did not see it.

    ``cv=None`` fits one model on all rows and predicts them in-sample.
    """
    args = (n_actions, arm_models, random_state)
    if cv is None:
        return fit_reward_model(estimator, X, actions, rewards, weights, *args).predict(
            X
        )
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    out = np.empty((X.shape[0], n_actions))
    for train, test in KFold(cv, shuffle=True, random_state=seed).split(X):
        w = None if weights is None else weights[train]
        model = fit_reward_model(
            estimator, X[train], actions[train], rewards[train], w, *args
        )
        out[test] = model.predict(X[test])
    return out
