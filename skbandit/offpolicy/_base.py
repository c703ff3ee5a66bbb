"""The base of the policies learned from logs.

A learner is a :class:`~skbandit.base.BasePolicy`: once fitted it has every verb of a
policy (``select``, ``predict_action_proba``, ``predict``, ``score``...). Its ``fit``
takes the logging propensities besides the logged feedback, and learns from the whole
batch at once; ``partial_fit`` refuses (warm-start an online policy from the logs
instead). Hooks of this base, for its learners:

``_learn(X, actions, rewards, propensities, sample_weight)``
    fit the learner's models on validated logs (propensities None for a learner that
    needs none); rebind attributes only;
``_reward_scores(X)``
    the learned score of every arm, which the policy's greedy choice maximises.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.base import clone

from skbandit._dask import dask_dispatch
from skbandit.base import BasePolicy
from skbandit.offpolicy._propensity import estimate_propensities, warn_estimated
from skbandit.utils._param_validation import HasMethods, Interval
from skbandit.utils.validation import _missing_rewards_error, check_bandit_data

__all__ = ["BaseOffPolicyLearner"]

#: The docstring of the parameters every learner ends with (``%(learner_tail)s``).
LEARNER_TAIL = """
epsilon : float, default=0.0
    Probability of a uniformly random arm when the learned policy selects.
propensity_model : classifier or None, default=None
    Estimates the propensities when ``fit`` gets none: any classifier with
    ``predict_proba``, cross-fitted (see
    :func:`~skbandit.offpolicy.estimate_propensities`); None is a scaled
    logistic regression.
propensity_clip : float, default=0.01
    Lower bound of estimated propensities.
n_actions : int or None, default=None
    Number of arms; None infers it from the logged actions.
random_state : int, RandomState instance or None, default=None
    Seeds ``select``, the folds and the unset random states of the estimators
    (and the network's initialisation and minibatches).
"""

#: Parameters every learner that weights by propensities shares.
PROPENSITY_CONSTRAINTS = {
    "propensity_model": [None, HasMethods(["fit", "predict_proba"])],
    "propensity_clip": [Interval(Real, 0, 1, closed="neither")],
}


class BaseOffPolicyLearner(BasePolicy):
    """Base class of the policies learned from logged bandit feedback.

    ``fit(X, actions, rewards, propensities=None)`` learns a policy that plays the
    arm of highest learned score (ties shared), mixed with a uniform arm with
    probability ``epsilon`` so that the learned policy keeps exploring when it is
    deployed. Shared contexts ``(n_samples, n_features)`` only.
    """

    _parameter_constraints: dict = {
        **BasePolicy._parameter_constraints,
        "epsilon": [Interval(Real, 0, 1, closed="both")],
    }

    _overridden_verbs = {
        "fit": "takes the logging propensities and learns from the whole batch of "
        "logs at once; partial_fit refuses through _update"
    }

    #: Whether ``fit`` needs the logging propensities (estimating them if absent).
    _uses_propensities = True

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.exact_action_proba = True
        tags.policy_tags.stochastic_select = self.epsilon > 0
        return tags

    @dask_dispatch
    def fit(self, X, actions, rewards=None, propensities=None, *, sample_weight=None):
        """Learn a policy from logged bandit feedback.

        Dask arrays or Dask DataFrame columns in place of the arrays fit on the
        Dask workers without gathering the rows (the propensities given): a
        ``Ridge`` from summed statistics, a model with ``partial_fit`` over the
        partitions in order, another model a clear error. See :ref:`past-memory`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Logged contexts.
        actions : array-like of shape (n_samples,)
            Logged actions, integers in ``[0, n_actions)``.
        rewards : array-like of shape (n_samples,)
            Logged rewards (required: ``None`` raises).
        propensities : array-like of shape (n_samples,), default=None
            Probability the logging policy gave each logged action, in ``(0, 1]``.
            None estimates them with ``propensity_model`` (cross-fitted, clipped
            below at ``propensity_clip``) and warns, saying what that assumes.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the logged rounds, multiplying their
            importance weights.

        Returns
        -------
        self : object
            Fitted learner.
        """
        if rewards is None:
            raise _missing_rewards_error(type(self).__name__)
        self._validate_params()
        with self._unchanged_on_error():
            X, n_actions, _, (actions, rewards, weight) = self._validated(
                X, True, None, (actions, rewards, sample_weight), infer=True
            )
            if X.ndim != 2:
                raise ValueError(
                    f"{type(self).__name__} learns from shared contexts of shape "
                    f"(n_samples, n_features); got shape {X.shape}."
                )
            propensities = self._logging_propensities(
                X, actions, propensities, n_actions
            )
            self._initialize(X, n_actions)
            self._learn(X, actions, rewards, propensities, weight)
            self.n_samples_seen_ = X.shape[0]
            self.action_counts_ = np.bincount(actions, minlength=n_actions)
        return self

    def _logging_propensities(self, X, actions, propensities, n_actions):
        """Validated logged propensities, or estimated ones (with the warning)."""
        if propensities is not None:
            return check_bandit_data(
                actions, np.zeros(actions.shape[0]), propensities=propensities,
                n_samples=X.shape[0], n_actions=n_actions,
                estimator_name=type(self).__name__,
            )[2]  # fmt: skip
        if not self._uses_propensities:
            return None
        model = getattr(self, "propensity_model", None)
        clip = getattr(self, "propensity_clip", 0.01)
        warn_estimated(type(self).__name__, model, clip)
        return estimate_propensities(
            X,
            actions,
            n_actions=n_actions,
            estimator=None if model is None else clone(model),
            clip=clip,
            random_state=self.random_state,
        )

    # ---------------------------------------------------------- policy hooks
    def _init_state(self):
        pass

    def _update(self, X, actions, rewards, sample_weight):
        raise NotImplementedError(
            f"{type(self).__name__} learns from a whole batch of logs with their "
            "propensities: call fit(X, actions, rewards, propensities). To go on "
            "learning online, warm-start an online policy from the same logs "
            "(skbandit.offpolicy.warm_start_from_logs)."
        )

    def _scores(self, X, return_std):
        return self._reward_scores(X), None

    def _exploration_rates(self, n_rows):
        if self.epsilon == 0:
            return None
        return np.full(n_rows, float(self.epsilon))

    # ------------------------------------------------------- learner hooks
    def _learn(self, X, actions, rewards, propensities, sample_weight):
        raise NotImplementedError

    def _reward_scores(self, X):
        raise NotImplementedError


def importance_weights(propensities, sample_weight, clip):
    """``min(1 / p_i, clip)`` times the rounds' weights: the weight of a round for a
    deterministic policy that plays its logged action."""
    weights = 1.0 / propensities
    if clip is not None:
        weights = np.minimum(weights, clip)
    return weights if sample_weight is None else weights * sample_weight
