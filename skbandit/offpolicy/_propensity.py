"""Logging propensities estimated from the logs, for logs that never recorded them.

A classifier of the logged action given the context estimates the logging policy's
law ``mu(a | x)``; its cross-fitted ``predict_proba`` (each row predicted by a model
that did not see it, so that a flexible classifier cannot memorise the logged
actions and push every propensity to 1) gives each logged action's propensity,
clipped from below so that no importance weight explodes.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import check_array, check_random_state

from skbandit.utils._param_validation import (
    HasMethods,
    Interval,
    StrOptions,
    validate_params,
)

__all__ = ["estimate_propensities"]


def default_propensity_model():
    """The classifier of ``propensity_model=None``: a scaled multinomial logistic
    regression, calibrated by its own log loss."""
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))


def _folds(actions, cv, random_state):
    """Stratified folds, fewer where the rarest logged action is rarer than ``cv``."""
    rarest = int(np.bincount(actions)[np.unique(actions)].min())
    n_splits = max(2, min(cv, rarest))
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    return StratifiedKFold(n_splits, shuffle=True, random_state=seed)


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "actions": ["array-like"],
        "n_actions": [Interval(Integral, 1, None, closed="left"), None],
        "estimator": [None, HasMethods(["fit", "predict_proba"])],
        "calibration": [StrOptions({"sigmoid", "isotonic"}), None],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "clip": [Interval(Real, 0, 1, closed="neither")],
        "return_proba": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def estimate_propensities(
    X,
    actions,
    *,
    n_actions=None,
    estimator=None,
    calibration=None,
    cv=5,
    clip=0.01,
    return_proba=False,
    random_state=None,
):
    """Estimate the logging policy's propensities from logged contexts and actions.

    A classifier of the logged action given the context, cross-fitted over ``cv``
    stratified folds: each row's probabilities come from a model fitted on the other
    folds. The logged action's probability is then clipped from below at ``clip``.

    Valid only under two assumptions that the logs cannot check: the contexts hold
    every variable the logging policy used to choose its action (no unmeasured
    confounding), and the logging policy gave every action a positive probability in
    every context (overlap). Where they fail, every estimate built on these
    propensities is biased.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Logged contexts.
    actions : array-like of shape (n_samples,)
        Logged actions, integers in ``[0, n_actions)``.
    n_actions : int or None, default=None
        Number of arms; None takes ``max(actions) + 1``.
    estimator : classifier or None, default=None
        Any classifier with ``predict_proba``, cloned. None: a standard-scaled
        multinomial :class:`~sklearn.linear_model.LogisticRegression`.
    calibration : {"sigmoid", "isotonic"} or None, default=None
        Wrap the classifier in :class:`~sklearn.calibration.CalibratedClassifierCV`
        with this method (for classifiers whose probabilities are not calibrated,
        such as boosted trees or naive Bayes). The default logistic regression is
        calibrated by its own log loss and needs none.
    cv : int, default=5
        Folds of the cross-fitting (fewer when the rarest action is rarer).
    clip : float, default=0.01
        Lower bound of the returned propensities, in ``(0, 1)``.
    return_proba : bool, default=False
        Also return the whole cross-fitted law, shape (n_samples, n_actions), rows
        summing to one (before clipping).
    random_state : int, RandomState instance or None, default=None
        Seeds the folds.

    Returns
    -------
    propensities : ndarray of shape (n_samples,)
        Estimated probability of each logged action, in ``[clip, 1]``.
    proba : ndarray of shape (n_samples, n_actions)
        The estimated law of every action; only with ``return_proba=True``.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.offpolicy import estimate_propensities
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 2))
    >>> actions = (rng.random(400) < 0.8).astype(int)   # arm 1 with probability 0.8
    >>> p = estimate_propensities(X, actions, random_state=0)
    >>> bool(abs(p[actions == 1].mean() - 0.8) < 0.05)
    True
    """
    actions = check_array(actions, ensure_2d=False, dtype=None, input_name="actions")
    if actions.ndim != 1 or not np.issubdtype(actions.dtype, np.integer):
        if actions.ndim != 1 or not np.all(np.mod(actions, 1) == 0):
            raise ValueError("actions must be a 1-D array of integer arm indices.")
        actions = actions.astype(np.int64)
    if actions.size and actions.min() < 0:
        raise ValueError(f"actions must be non-negative, got {actions.min()}.")
    n_actions = int(actions.max()) + 1 if n_actions is None else n_actions
    if actions.max() >= n_actions:
        raise ValueError(
            f"actions must be in [0, {n_actions}), got {int(actions.max())}."
        )
    model = default_propensity_model() if estimator is None else clone(estimator)
    if calibration is not None:
        model = CalibratedClassifierCV(model, method=calibration, cv=3)
    present = np.unique(actions)
    proba = np.zeros((actions.shape[0], n_actions))
    if present.size == 1:  # one logged action: the logs say it is always played
        proba[:, present[0]] = 1.0
    else:
        folds = _folds(actions, cv, random_state)
        with warnings.catch_warnings():
            # A rare action may miss a training fold; its column there is 0.
            warnings.filterwarnings("ignore", message=".*number of members.*")
            fitted = cross_val_predict(
                model, X, actions, cv=folds, method="predict_proba"
            )
        proba[:, present] = fitted
    chosen = np.maximum(proba[np.arange(actions.shape[0]), actions], clip)
    chosen = np.minimum(chosen, 1.0)
    return (chosen, proba) if return_proba else chosen


#: What estimated propensities assume, said by every warning about them.
ASSUMPTIONS = (
    "This assumes that the contexts X hold every variable the logging policy used "
    "to choose its actions (no unmeasured confounding) and that it gave every "
    "action a positive probability in every context (overlap); where either fails, "
    "the importance weights, and what is learned or estimated from them, are biased."
)


def warn_estimated(owner: str, model, clip: float) -> None:
    """Warn that ``owner`` estimated the propensities, and what that assumes."""
    name = "a scaled LogisticRegression" if model is None else type(model).__name__
    warnings.warn(
        f"{owner} got propensities=None: the logging propensities are estimated by "
        f"{name} (cross-fitted predict_proba of the logged action, clipped below "
        f"at {clip:g}). {ASSUMPTIONS} Pass the logged propensities where they were "
        "recorded.",
        UserWarning,
        stacklevel=3,
    )
