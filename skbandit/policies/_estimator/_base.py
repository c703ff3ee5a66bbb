"""The base of the policies on a scikit-learn estimator: the closed-form action law.

:class:`BaseEstimatorPolicy` joins the estimator model
(:class:`~skbandit.policies._core._estimator_model.EstimatorModelMixin`, shared with
:class:`~skbandit.policies.EpsilonGreedy`) to the action law that ``select`` draws
from and ``predict_action_proba`` returns.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from skbandit._base._selection import draw_from
from skbandit._docstrings import Substitution
from skbandit.base import BasePolicy
from skbandit.exceptions import NumericalError
from skbandit.policies._core._estimator_model import EstimatorModelMixin
from skbandit.utils._param_validation import HasMethods, StrOptions
from skbandit.utils._standardize import STANDARDIZE_CONSTRAINT

__all__ = ["BaseEstimatorPolicy", "inverse_gap_weights"]


#: Docstring text shared by the family, filled by :class:`Substitution`.
FAMILY_DOCS = Substitution(
    arms_and_contexts="""Shared contexts ``(n, d)`` give each arm its own clone of the
estimator; per-arm contexts ``(n, K, d)`` give one clone learning from the pulled arms'
rows (``arm_models`` chooses the other). ``scipy.sparse`` shared contexts are
accepted wherever the estimator accepts them, mixed with dense batches.

Read more in the :ref:`User Guide <estimators>`.

Parameters
----------
n_actions : int or None, default=None
    Number of arms; ``None`` infers it in ``fit``.""",
    arm_models="""arm_models : {"auto", "per_arm", "shared"}, default="auto"
    ``"per_arm"``: one model per arm; ``"shared"``: one model of all arms (of
    ``[x, one_hot(arm)]`` for shared contexts, which then cannot gain arms);
    ``"auto"``: per arm for shared contexts, shared for per-arm contexts.""",
    standardize="""standardize : bool or "auto", default="auto"
    Standardise the contexts online before the estimator sees them, so that raw
    features need no scaler: each feature by the running mean and standard
    deviation of the contexts learned from so far (a learning row by those up to
    its own round), clipped to 5 standard deviations. ``"auto"`` does so for
    the default model (random features made for unit-scale inputs) and reads
    the contexts as given otherwise: a ridge learns the same up to a
    per-feature prior, and an estimator passed brings its own preprocessing (a
    pipeline). ``True`` standardises for any estimator; ``scipy.sparse``
    contexts are never standardised. See :ref:`raw_features`.""",
    fitted_attributes="""n_actions_ : int
    Number of arms.
n_features_in_ : int
    Number of context features.
n_samples_seen_ : int
    Rounds of feedback learnt from.
action_counts_ : ndarray of shape (n_actions_,)
    Feedback rounds per arm.
last_refit_round_ : int
    Feedback rounds the reward models had seen when they last learned:
    ``n_samples_seen_`` for an estimator that learns online, the last refit's
    round for a refit schedule (rounds since then wait for the next refit).
n_refits_ : int
    Refits of the reward models from the logged history (0 when online).""",
)

_ESTIMATOR_CONSTRAINTS = {
    **BasePolicy._parameter_constraints,
    "estimator": [HasMethods(["fit", "predict"]), None],
    "arm_models": [StrOptions({"auto", "per_arm", "shared"})],
    **STANDARDIZE_CONSTRAINT,
}


class BaseEstimatorPolicy(EstimatorModelMixin, BasePolicy):
    """Base of the policies on any scikit-learn regressor.

    The base of :class:`~skbandit.policies.SquareCB`,
    :class:`~skbandit.policies.FALCON` and :class:`~skbandit.policies.BootstrappedTS`.
    It keeps clones of the user's regressor as the reward model (one per arm for
    shared contexts, one for all arms of per-arm contexts; ``arm_models`` chooses the
    other), which learn online where the regressor has ``partial_fit`` and are refit
    from the logged history on a schedule otherwise. It fills in ``_init_state``,
    ``_update``, ``_add_arms`` and ``_scores`` (the models' predictions), and the
    decision: ``select`` draws from an exact action law (one uniform per round) and
    ``predict_action_proba`` returns that law. A subclass implements the law,
    ``_action_law(X, mask)``: the ``(n, n_actions)`` probability of each arm, zero
    on masked arms. The family's hooks, with their defaults: ``_default_estimator()``
    (the regressor of ``estimator=None``, a ridge), ``_default_needs_scaled_features``
    (False: whether that regressor needs unit-scale contexts, so that
    ``standardize="auto"`` standardises them), ``_learns_online(estimator)``,
    ``_refit_due(n_old, n_new)`` and ``_refit_start(models)`` (the refit schedule and
    its window).

    A policy on it has the parameters ``estimator``, ``arm_models`` and
    ``standardize`` (optional: without it, the contexts are read as given) beside
    its own; ``BaseEstimatorPolicy._parameter_constraints`` holds their
    constraints.

    Parameters
    ----------
    n_actions : int or None, default=None
        Number of arms; ``None`` infers it in ``fit``.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws of ``select`` (and the estimator's unset random states).

    See Also
    --------
    skbandit.base.BasePolicy : The verbs and the hooks of every policy.

    Examples
    --------
    Softmax exploration on any regressor's predicted rewards:

    >>> import numpy as np
    >>> from numbers import Real
    >>> from skbandit.policies.base import BaseEstimatorPolicy
    >>> from skbandit.utils.validation import Interval
    >>> class EstimatorSoftmax(BaseEstimatorPolicy):
    ...     _parameter_constraints = {
    ...         **BaseEstimatorPolicy._parameter_constraints,
    ...         "temperature": [Interval(Real, 0, None, closed="neither")],
    ...     }
    ...
    ...     def __init__(self, n_actions=None, *, estimator=None, arm_models="auto",
    ...                  temperature=0.1, random_state=None):
    ...         self.n_actions = n_actions
    ...         self.estimator = estimator
    ...         self.arm_models = arm_models
    ...         self.temperature = temperature
    ...         self.random_state = random_state
    ...
    ...     def _action_law(self, X, mask):
    ...         scores, _ = self._scores(X, False)
    ...         if mask is not None:  # masked arms get probability 0
    ...             scores = np.where(mask, scores, -np.inf)
    ...         top = scores.max(axis=1, keepdims=True)
    ...         weights = np.exp((scores - top) / self.temperature)
    ...         return weights / weights.sum(axis=1, keepdims=True)
    >>> X = np.eye(2)
    >>> policy = EstimatorSoftmax(random_state=0).fit(X, [0, 1], [1.0, 0.0])
    >>> policy.predict_action_proba(X).sum(axis=1)
    array([1., 1.])
    """

    _parameter_constraints = _ESTIMATOR_CONSTRAINTS

    #: Whether the model of ``estimator=None`` needs unit-scale features (then
    #: ``standardize="auto"`` standardises when no estimator is passed).
    _default_needs_scaled_features = False

    @property
    def _standardize_auto(self):
        return self.estimator is None and self._default_needs_scaled_features

    def _arm_models(self):
        return self.arm_models

    def _init_state(self):
        self._init_models()

    def _update(self, X, actions, rewards, sample_weight):
        self._update_models(X, actions, rewards, sample_weight)

    def _add_arms(self, n_new):
        self._grow_models(n_new)

    def _scores(self, X, return_std):
        predictions, fitted = self._model_predictions(X)
        return predictions[0], None

    def _action_law(self, X, mask):
        raise NotImplementedError

    def _decide_free(self, X, mask, with_proba):
        # One prediction for the arms and their law: the law is what select draws.
        law = self._action_law(X, mask)
        return draw_from(law, self._rng), (law if with_proba else None), None

    def _action_proba_free(self, X, mask):
        return self._action_law(X, mask)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.exact_action_proba = True
        tags.input_tags.sparse = self._estimator_accepts_sparse()
        return tags


def inverse_gap_weights(scores: NDArray, gamma: float, mask=None) -> NDArray:
    """Inverse-gap weighting of predicted rewards, exact and row-wise.

    With ``b`` the best available arm, ``p_a = 1 / (K + gamma (y_b - y_a))`` for
    every other available arm (``K`` the arms available in the row) and ``p_b``
    takes the rest; arms tied at the best share the rest equally (the law of a
    uniformly random ``b`` among them). Masked arms get 0.
    """
    available = np.ones(scores.shape, dtype=bool) if mask is None else mask
    masked = np.where(available, scores, -np.inf)
    best = masked.max(axis=1, keepdims=True)
    if not np.isfinite(best).all() or np.isnan(scores[available]).any():
        raise NumericalError(
            "The estimator predicted non-finite rewards; refit it or check its "
            "parameters."
        )
    gap = np.where(available, best - masked, 0.0)
    n_available = available.sum(axis=1, keepdims=True)
    proba = np.where(available, 1.0 / (n_available + gamma * gap), 0.0)
    top = available & (gap <= 0.0)
    rest = 1.0 - np.where(top, 0.0, proba).sum(axis=1, keepdims=True)
    return np.where(top, rest / top.sum(axis=1, keepdims=True), proba)
