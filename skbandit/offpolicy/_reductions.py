"""Policies learned from logs by reduction to supervised learning: DM, IPW and DR.

Each logged round gives an estimate ``G[i, k]`` of every arm's reward in its context
(Dudik, Langford & Li, "Doubly robust policy evaluation and learning", 2011), with
``u_i = min(1 / p_i, clip)``:

=========  ==================================================================
IPW        ``G[i, k] = 1{a_i = k} u_i r_i``
DR         ``G[i, k] = q(x_i, k) + 1{a_i = k} u_i (r_i - q(x_i, k))``
=========  ==================================================================

The IPS or DR value of a deterministic policy ``pi`` on the logs is
``mean_i G[i, pi(x_i)]``, so learning a policy is cost-sensitive classification with
costs ``-G``. Two reductions of it, as in Vowpal Wabbit's ``--cb``:

- ``reduction="regression"``: one regressor per arm on ``G[:, k]`` over every round
  (Vowpal Wabbit's ``--cb`` with ``ips`` or ``dr``, cost-sensitive one-against-all);
  the policy plays the arm of highest prediction;
- ``reduction="classification"``: weighted multiclass classification whose weighted
  error is, up to a constant, minus the estimated value: every ``(i, k)`` with
  ``G[i, k] > min_j G[i, j]`` is a row of label ``k`` and weight
  ``G[i, k] - min_j G[i, j]``. The weighted error of ``pi`` is
  ``sum_i sum_k (G[i, k] - m_i) - sum_i (G[i, pi(x_i)] - m_i)``, so minimising it
  maximises ``sum_i G[i, pi(x_i)]`` exactly. For IPW with non-negative rewards it is
  one row per round, label ``a_i`` and weight ``u_i r_i`` (Zadrozny, "Policy mining:
  learning decision policies from fixed sets of data", 2003; Open Bandit Pipeline's
  IPWLearner).

``self_normalize=True`` rescales each arm's importance weights ``1{a_i = k} u_i`` so
that they average one over the logs (each arm's Hajek estimate): the weights' common
scale then drops out, as in self-normalised IPS.

The direct method (DM) regresses each arm's logged rewards on its logged contexts
(``importance_weighted=True`` weights them by ``u_i``: Vowpal Wabbit's ``mtr``).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from numpy.typing import NDArray
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skbandit._docstrings import Substitution
from skbandit.offpolicy._base import (
    LEARNER_TAIL,
    PROPENSITY_CONSTRAINTS,
    BaseOffPolicyLearner,
    importance_weights,
)
from skbandit.offpolicy._models import (
    ArmRegressors,
    cross_fitted_rewards,
    fit_reward_model,
    fit_weighted,
    seeded_clone,
)
from skbandit.utils._param_validation import HasMethods, Interval, StrOptions

__all__ = [
    "DMLearner",
    "DRLearner",
    "IPWLearner",
    "classification_rows",
    "cost_sensitive_targets",
]


def cost_sensitive_targets(
    actions, rewards, weights, n_actions, expected_rewards=None, self_normalize=False
) -> NDArray:
    """``G`` of shape (n_samples, n_actions): IPW's, or DR's with ``expected_rewards``.

    ``weights`` are the rounds' importance weights ``u_i``, already clipped.
    """
    n = actions.shape[0]
    u = np.zeros((n, n_actions))
    u[np.arange(n), actions] = weights
    if self_normalize:
        totals = u.sum(axis=0)
        u *= np.divide(n, totals, out=np.zeros(n_actions), where=totals > 0)
    if expected_rewards is None:
        return u * rewards[:, None]
    return expected_rewards + u * (rewards[:, None] - expected_rewards)


def classification_rows(targets: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    """``(row, label, weight)`` of the weighted multiclass problem of ``targets``."""
    shifted = targets - targets.min(axis=1, keepdims=True)
    rows, labels = np.nonzero(shifted > 0)
    return rows, labels, shifted[rows, labels]


def _classifier_scores(model, X, n_actions) -> NDArray:
    """A fitted classifier's score of every arm; an arm it never saw as a label (no
    round where it looked better) scores below every other arm."""
    classes = np.asarray(model.classes_, dtype=np.int64)
    if hasattr(model, "predict_proba"):
        seen = model.predict_proba(X)
    elif hasattr(model, "decision_function") and classes.size > 2:
        seen = model.decision_function(X)
    else:
        seen = (model.predict(X)[:, None] == classes[None, :]).astype(np.float64)
    out = np.full((X.shape[0], n_actions), seen.min() - 1.0 if seen.size else 0.0)
    out[:, classes] = seen
    return out


_COMMON = {
    **BaseOffPolicyLearner._parameter_constraints,
    **PROPENSITY_CONSTRAINTS,
    "estimator": [None, HasMethods(["fit", "predict"])],
    "clip": [Interval(Real, 0, None, closed="neither"), None],
}


class _ReductionMixin:
    """Fits ``estimator`` to cost-sensitive targets by the chosen reduction."""

    def _default_estimator(self):
        if self.reduction == "classification":
            return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
        return Ridge()

    def _fit_reduction(self, X, targets):
        estimator = self._default_estimator() if self.estimator is None else (
            self.estimator
        )  # fmt: skip
        n, n_actions = targets.shape
        if self.reduction == "regression":
            everything = np.arange(n)
            self.policy_model_ = ArmRegressors(
                estimator, n_actions, "per_arm", self.random_state
            ).fit(
                X,
                [everything] * n_actions,
                [targets[:, k] for k in range(n_actions)],
                [None] * n_actions,
                fallback=0.0,
            )
            return
        rows, labels, weights = classification_rows(targets)
        if np.unique(labels).size < 2:
            # One arm (or none) ever looks better: a classifier cannot be fitted.
            scores = np.zeros(n_actions)
            scores[np.unique(labels)] = 1.0
            self.policy_model_ = scores
            return
        model = seeded_clone(estimator, self.random_state)
        # Weights rescaled to mean one: the same minimiser, and a regularised
        # classifier (C=1) keeps its usual balance between fit and penalty.
        self.policy_model_ = fit_weighted(
            model, X[rows], labels, weights / weights.mean()
        )

    def _reward_scores(self, X):
        model = self.policy_model_
        if isinstance(model, np.ndarray):
            return np.broadcast_to(model, (X.shape[0], model.shape[0])).copy()
        if isinstance(model, ArmRegressors):
            return model.predict(X)
        return _classifier_scores(model, X, self.n_actions_)


@Substitution(learner_tail=LEARNER_TAIL)
class DMLearner(BaseOffPolicyLearner):
    """Direct method: a reward model of each arm, played greedily.

    Each arm's logged rewards are regressed on its logged contexts; the policy plays
    the arm of highest predicted reward. Under overlap and a well-specified model
    the regression is unbiased without importance weights: the logging policy
    chooses which rows each arm sees, not their rewards (given the context).

    Parameters
    ----------
    estimator : regressor or None, default=None
        Any scikit-learn regressor (or pipeline ending in one), cloned per arm.
        None: :class:`~sklearn.linear_model.Ridge`.
    arm_models : {"per_arm", "shared"}, default="per_arm"
        One clone per arm on its own rounds, or one clone on ``[x, one_hot(a)]``
        over all rounds (the action as a feature; suits trees and networks,
        which can learn the interactions).
    importance_weighted : bool, default=False
        Weight each round by ``min(1 / p_i, clip)``: the regression then fits the
        error of the reward model where the deterministic policies that play
        each arm would meet it (Vowpal Wabbit's ``--cb_type mtr``). Needs the
        propensities.
    clip : float or None, default=None
        Upper bound of the importance weights of ``importance_weighted``.
    %(learner_tail)s

    Attributes
    ----------
    reward_model_ : object
        The fitted per-arm reward model; ``predict_scores`` is its prediction.
    n_actions_ : int
        Number of arms.
    n_features_in_ : int
        Number of context features.

    See Also
    --------
    DRLearner : The direct method corrected by importance-weighted residuals.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.offpolicy import DMLearner
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> actions = rng.integers(2, size=300)
    >>> rewards = np.where(actions == (X[:, 0] > 0), 1.0, 0.0)
    >>> policy = DMLearner().fit(X, actions, rewards)
    >>> policy.predict([[2.0, 0.0], [-2.0, 0.0]]).tolist()
    [1, 0]
    """

    _parameter_constraints = {
        **_COMMON,
        "arm_models": [StrOptions({"per_arm", "shared"})],
        "importance_weighted": ["boolean"],
    }

    def __init__(
        self,
        estimator=None,
        *,
        arm_models="per_arm",
        importance_weighted=False,
        clip=None,
        epsilon=0.0,
        propensity_model=None,
        propensity_clip=0.01,
        n_actions=None,
        random_state=None,
    ):
        self.estimator = estimator
        self.arm_models = arm_models
        self.importance_weighted = importance_weighted
        self.clip = clip
        self.epsilon = epsilon
        self.propensity_model = propensity_model
        self.propensity_clip = propensity_clip
        self.n_actions = n_actions
        self.random_state = random_state

    @property
    def _uses_propensities(self):
        return self.importance_weighted

    def _learn(self, X, actions, rewards, propensities, sample_weight):
        weights = sample_weight
        if self.importance_weighted:
            weights = importance_weights(propensities, sample_weight, self.clip)
        estimator = Ridge() if self.estimator is None else self.estimator
        self.reward_model_ = fit_reward_model(
            estimator, X, actions, rewards, weights, self.n_actions_,
            self.arm_models, self.random_state,
        )  # fmt: skip

    def _reward_scores(self, X):
        return self.reward_model_.predict(X)


@Substitution(learner_tail=LEARNER_TAIL)
class IPWLearner(_ReductionMixin, BaseOffPolicyLearner):
    """Inverse propensity weighting: the policy maximising the IPS value of the logs.

    Learns from the importance-weighted estimates ``G[i, k] = 1{a_i = k} u_i r_i``
    by weighted multiclass classification (default) or per-arm regression; see
    :mod:`skbandit.offpolicy` for the reductions, exact in the sense that the
    classification's weighted error is a constant minus the IPS value.

    Parameters
    ----------
    estimator : estimator or None, default=None
        A classifier with ``sample_weight`` for ``reduction="classification"``
        (None: standard-scaled :class:`~sklearn.linear_model.LogisticRegression`),
        a regressor for ``"regression"`` (None: :class:`~sklearn.linear_model.Ridge`).
    reduction : {"classification", "regression"}, default="classification"
        Weighted multiclass classification, or one regressor per arm on ``G``
        (Vowpal Wabbit's ``--cb_type ips``).
    clip : float or None, default=None
        Upper bound of the importance weights ``1 / p_i``.
    self_normalize : bool, default=False
        Rescale each arm's importance weights to average one.
    %(learner_tail)s

    Attributes
    ----------
    policy_model_ : object
        The fitted classifier (its ``predict_proba`` ranks the arms) or per-arm
        regressors (their predictions estimate each arm's reward).
    n_actions_ : int
        Number of arms.

    See Also
    --------
    DRLearner : Lower variance with a reward model.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.offpolicy import IPWLearner
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 2))
    >>> actions = rng.integers(2, size=500)
    >>> rewards = np.where(actions == (X[:, 0] > 0), 1.0, 0.0)
    >>> policy = IPWLearner().fit(X, actions, rewards, np.full(500, 0.5))
    >>> policy.predict([[2.0, 0.0], [-2.0, 0.0]]).tolist()
    [1, 0]
    """

    _parameter_constraints = {
        **_COMMON,
        "reduction": [StrOptions({"classification", "regression"})],
        "self_normalize": ["boolean"],
    }

    def __init__(
        self,
        estimator=None,
        *,
        reduction="classification",
        clip=None,
        self_normalize=False,
        epsilon=0.0,
        propensity_model=None,
        propensity_clip=0.01,
        n_actions=None,
        random_state=None,
    ):
        self.estimator = estimator
        self.reduction = reduction
        self.clip = clip
        self.self_normalize = self_normalize
        self.epsilon = epsilon
        self.propensity_model = propensity_model
        self.propensity_clip = propensity_clip
        self.n_actions = n_actions
        self.random_state = random_state

    def _learn(self, X, actions, rewards, propensities, sample_weight):
        weights = importance_weights(propensities, sample_weight, self.clip)
        targets = cost_sensitive_targets(
            actions, rewards, weights, self.n_actions_,
            self_normalize=self.self_normalize,
        )  # fmt: skip
        self._fit_reduction(X, targets)


@Substitution(learner_tail=LEARNER_TAIL)
class DRLearner(_ReductionMixin, BaseOffPolicyLearner):
    """Doubly robust: the policy maximising the DR value of the logs.

    Learns from ``G[i, k] = q(x_i, k) + 1{a_i = k} u_i (r_i - q(x_i, k))``, with a
    reward model ``q`` cross-fitted over ``cv`` folds (each round's ``q`` from a
    model that did not see it) and clipped to the logged rewards' range, by
    weighted multiclass classification (default) or per-arm regression (Vowpal
    Wabbit's ``--cb_type dr``).

    Both reductions optimise a surrogate of the DR value, and on skewed logs they
    can miss it badly: a rarely played arm that failed gets the target
    ``q (1 - 1/p)``, down to ``-q / p``, which a regression cannot confine to its
    context and the classification spreads, as weight, over every other label.
    With ``select_by_value=True`` (default) the reduction is also fitted to the
    IPW targets (``G`` without the reward model), and the policy of higher DR
    value on the logs is kept: the learner then returns the better maximiser of
    the DR value it promises, never a policy that its own objective ranks below
    the IPW one.

    Parameters
    ----------
    estimator : estimator or None, default=None
        The reduction's model: a regressor for ``reduction="regression"`` (None:
        :class:`~sklearn.linear_model.Ridge`), a classifier with
        ``sample_weight`` for ``"classification"`` (None: standard-scaled
        :class:`~sklearn.linear_model.LogisticRegression`).
    reward_model : regressor or None, default=None
        The regressor of ``q``, cloned per arm (or shared, ``arm_models``).
        None: :class:`~sklearn.linear_model.Ridge`.
    reduction : {"classification", "regression"}, default="classification"
        Weighted multiclass classification, or per-arm regression on ``G``.
    arm_models : {"per_arm", "shared"}, default="per_arm"
        How the reward model reads the arm (see :class:`DMLearner`).
    cv : int or None, default=2
        Folds of the reward model's cross-fitting; None fits it once on all rows
        and predicts them in-sample.
    clip : float or None, default=None
        Upper bound of the importance weights ``1 / p_i``.
    self_normalize : bool, default=False
        Rescale each arm's importance weights to average one.
    select_by_value : bool, default=True
        Also fit the reduction to the IPW targets and keep the policy of higher
        DR value on the logs (False: the DR targets' policy, as in the paper).
    %(learner_tail)s

    Attributes
    ----------
    policy_model_ : object
        The fitted reduction (per-arm regressors or a classifier).
    selected_targets_ : {"dr", "ipw"}
        The targets whose policy was kept.
    dr_values_ : dict
        The DR value on the logs of each fitted policy (its greedy arm), by
        targets.
    n_actions_ : int
        Number of arms.

    See Also
    --------
    IPWLearner : Without a reward model.
    DMLearner : The reward model alone.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.offpolicy import DRLearner
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 2))
    >>> actions = rng.integers(2, size=500)
    >>> rewards = np.where(actions == (X[:, 0] > 0), 1.0, 0.0)
    >>> policy = DRLearner(random_state=0).fit(X, actions, rewards, np.full(500, 0.5))
    >>> policy.predict([[2.0, 0.0], [-2.0, 0.0]]).tolist()
    [1, 0]
    """

    _parameter_constraints = {
        **_COMMON,
        "reward_model": [None, HasMethods(["fit", "predict"])],
        "reduction": [StrOptions({"classification", "regression"})],
        "arm_models": [StrOptions({"per_arm", "shared"})],
        "cv": [Interval(Integral, 2, None, closed="left"), None],
        "self_normalize": ["boolean"],
        "select_by_value": ["boolean"],
    }

    def __init__(
        self,
        estimator=None,
        *,
        reward_model=None,
        reduction="classification",
        arm_models="per_arm",
        cv=2,
        clip=None,
        self_normalize=False,
        select_by_value=True,
        epsilon=0.0,
        propensity_model=None,
        propensity_clip=0.01,
        n_actions=None,
        random_state=None,
    ):
        self.estimator = estimator
        self.reward_model = reward_model
        self.reduction = reduction
        self.arm_models = arm_models
        self.cv = cv
        self.clip = clip
        self.self_normalize = self_normalize
        self.select_by_value = select_by_value
        self.epsilon = epsilon
        self.propensity_model = propensity_model
        self.propensity_clip = propensity_clip
        self.n_actions = n_actions
        self.random_state = random_state

    def _learn(self, X, actions, rewards, propensities, sample_weight):
        q_hat = cross_fitted_rewards(
            Ridge() if self.reward_model is None else self.reward_model,
            X, actions, rewards, sample_weight, self.n_actions_,
            self.arm_models, self.cv, self.random_state,
        )  # fmt: skip
        # An expected reward lies in the rewards' range: a model fitted on an
        # arm's few rounds extrapolates far outside it, and DR's correction
        # divides that error by the small propensities of those rounds.
        q_hat = np.clip(q_hat, rewards.min(), rewards.max())
        weights = importance_weights(propensities, sample_weight, self.clip)
        dr_targets = cost_sensitive_targets(
            actions, rewards, weights, self.n_actions_, q_hat, self.self_normalize
        )
        candidates = {"dr": dr_targets}
        if self.select_by_value:
            candidates["ipw"] = cost_sensitive_targets(
                actions, rewards, weights, self.n_actions_,
                self_normalize=self.self_normalize,
            )  # fmt: skip
        rounds = np.arange(X.shape[0])
        fitted, self.dr_values_ = {}, {}
        for name, targets in candidates.items():
            self._fit_reduction(X, targets)
            greedy = self._reward_scores(X).argmax(axis=1)
            value = np.average(dr_targets[rounds, greedy], weights=sample_weight)
            fitted[name], self.dr_values_[name] = self.policy_model_, float(value)
        # Ties keep the DR targets' policy (the first).
        self.selected_targets_ = max(self.dr_values_, key=self.dr_values_.get)
        self.policy_model_ = fitted[self.selected_targets_]
