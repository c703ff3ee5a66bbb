"""The off-policy learners' models by their own ``partial_fit``, partition by partition.

A model that is not a plain ``Ridge`` (solved exactly from summed statistics,
``_offpolicy``) but has ``partial_fit`` (``SGDRegressor``, ``SGDClassifier``,
``MLPRegressor``...) learns on Dask collections through it: its copy travels from
partition to partition in order (``_sequence.in_turn``) and calls ``partial_fit``
on each partition's rows, built as the in-memory ``fit`` builds them:

- a reward model (DM's, DR's ``q``): arm ``k``'s rows and rewards of the partition
  (in row order), or one model on ``[x, one_hot(a)]`` (the partition's rows arm by
  arm), weighted as in memory (DM's importance weights ``u`` or the rounds'
  weights); an arm of fewer than two rows over all partitions predicts its mean
  reward, as in memory;
- the regression reduction: each arm's model on every row of the partition, with the
  targets ``G[:, k]`` (IPW's or DR's, from the broadcast ``q``, clipped to the
  rewards' range, and ``self_normalize``'s per-arm scale summed beforehand);
- the classification reduction: the partition's weighted multiclass rows of ``G``,
  ``partial_fit(X[rows], labels, classes=..., sample_weight=weights / mean)``; the
  labels that occur and the weights' mean over all partitions (the in-memory fit's
  rescaling to mean one) come from one pass before.

The result is the model's ``partial_fit`` over the partitions in order, called in
memory on the same rows (the test's reference); not one ``fit`` over all rows.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import inspect

import numpy as np
from sklearn.base import clone
from sklearn.linear_model import Ridge

from skbandit._dask._sequence import in_turn
from skbandit.offpolicy._base import importance_weights
from skbandit.offpolicy._models import ArmRegressors, _Constant, seeded_clone
from skbandit.offpolicy._reductions import classification_rows, cost_sensitive_targets

__all__ = ["model_mode", "reward_model", "reduction_model", "targets", "validated"]


# ------------------------------------------------------------------ the models
def _plain_ridge(model) -> bool:
    return (
        type(model) is Ridge
        and np.ndim(model.alpha) == 0
        and not model.positive
        and model.solver in ("auto", "cholesky", "svd")
    )


def model_mode(model, name, role, *, weighted, classifier=False) -> str:
    """``"ridge"`` (summed statistics), ``"stream"`` (``partial_fit``) or an error."""
    if not classifier and _plain_ridge(model):
        return "ridge"
    if hasattr(model, "partial_fit"):
        if classifier and "classes" not in _parameters(model.partial_fit):
            raise TypeError(
                f"{name}.fit on Dask collections learns its {role} by its "
                f"partial_fit(X, labels, classes=...), which "
                f"{type(model).__name__}.partial_fit does not take: use a "
                "classifier with partial_fit, e.g. SGDClassifier(loss='log_loss')."
            )
        if weighted and "sample_weight" not in _parameters(model.partial_fit):
            raise TypeError(
                f"{name}.fit on Dask collections learns its {role} by its "
                f"partial_fit, with sample weights, and {type(model).__name__}."
                "partial_fit takes none. Use a model whose partial_fit takes "
                "sample_weight (e.g. SGDRegressor, SGDClassifier)."
            )
        return "stream"
    exact = "" if classifier else (
        "a plain Ridge (scalar alpha, solver 'auto', 'cholesky' or 'svd', "
        "positive=False), solved exactly from summed statistics, or "
    )  # fmt: skip
    example = "SGDClassifier" if classifier else "SGDRegressor"
    raise TypeError(
        f"{name}.fit on Dask collections fits its {role} from {exact}a model with "
        f"partial_fit (e.g. {example}), fed partition after partition; "
        f"{model!r} is neither. Its fit would need every row in one process: fit "
        "on a sample in memory, or use such a model."
    )


def _parameters(method):
    try:
        return inspect.signature(method).parameters
    except (TypeError, ValueError):  # pragma: no cover - a builtin
        return {}


def _partial_fit(model, X, y, weight, **kwargs):
    if weight is not None:
        kwargs["sample_weight"] = weight
    model.partial_fit(X, y, **kwargs)


# ------------------------------------------------------------ a partition's rows
def validated(template, X, actions, rewards, propensities, sample_weight):
    """A partition validated by a copy of the learner, as its in-memory ``fit``."""
    learner = clone(template)
    X, n_actions, _, (actions, rewards, weight) = learner._validated(
        X, True, None, (actions, rewards, sample_weight)
    )
    if X.ndim != 2:
        raise ValueError(
            f"{type(learner).__name__} learns from shared contexts of shape "
            f"(n_samples, n_features); got shape {X.shape}."
        )
    if propensities is not None:
        propensities = learner._logging_propensities(
            X, actions, propensities, n_actions
        )
    learner._initialize(X, n_actions)
    return learner, X, actions, rewards, propensities, weight


def targets(learner, stage, X, actions, rewards, u):
    """``G`` of a partition: IPW's, or DR's with ``stage``'s broadcast reward model
    clipped to the rewards' range; ``u`` times ``stage``'s per-arm scale."""
    model, (low, high), scale = stage
    q_hat = None if model is None else np.clip(model.predict(X), low, high)
    return cost_sensitive_targets(
        actions, rewards, u * scale[actions], learner.n_actions_, q_hat
    )


def _reward_step(state, template, importance, *arrays):
    """A reward model's ``partial_fit`` on one partition's rows of each arm."""
    if arrays[0].shape[0] == 0:
        return state
    learner, X, actions, rewards, p, weight = validated(template, *arrays)
    if importance:
        weight = importance_weights(p, weight, learner.clip)
    rows = [np.flatnonzero(actions == k) for k in range(learner.n_actions_)]
    weights = [None if weight is None else weight[r] for r in rows]
    if state.arm_models == "shared":  # arm by arm, as ArmRegressors.fit stacks them
        design = np.vstack([state._design(X[r], k) for k, r in enumerate(rows)])
        weight = None if weight is None else np.concatenate(weights)
        target = np.concatenate([rewards[r] for r in rows])
        _partial_fit(state.models_[0], design, target, weight)
        return state
    for model, r, w in zip(state.models_, rows, weights, strict=True):
        if r.size:
            _partial_fit(model, X[r], rewards[r], w)
    return state


def _reduction_step(state, template, stage, classes, mean_weight, *arrays):
    """The reduction's ``partial_fit`` on one partition's targets ``G``: each arm's
    regressor on every row, or the classifier on the weighted multiclass rows (their
    weights divided by ``mean_weight``, their mean over all partitions)."""
    if arrays[0].shape[0] == 0:
        return state
    learner, X, actions, rewards, p, weight = validated(template, *arrays)
    G = targets(learner, stage, X, actions, rewards, importance_weights(
        p, weight, learner.clip
    ))  # fmt: skip
    if classes is None:
        for k, model in enumerate(state.models_):
            _partial_fit(model, X, G[:, k], None)
        return state
    rows, labels, weights = classification_rows(G)
    if rows.size:
        _partial_fit(state, X[rows], labels, weights / mean_weight, classes=classes)
    return state


# ------------------------------------------------------------------ the passes
def reward_model(parts, template, estimator, stats, arm_models, importance):
    """A reward model fitted by ``partial_fit`` over the partitions in order."""
    n_actions, rs = stats["counts"].shape[0], template.random_state
    model = ArmRegressors(estimator, n_actions, arm_models, rs)
    n_models = 1 if arm_models == "shared" else n_actions
    model.models_ = [seeded_clone(estimator, rs) for _ in range(n_models)]
    model = in_turn(_reward_step, model, parts, template, importance)
    if arm_models == "per_arm":  # too few rows: the arm's mean, as in memory
        fallback = float(stats["sum_r"].sum() / stats["n"])
        for k, count in enumerate(stats["counts"]):
            if count < ArmRegressors.min_rows:
                value = stats["sum_r"][k] / count if count else fallback
                model.models_[k] = _Constant(value)
    return model


def reduction_model(parts, template, estimator, stage, classification):
    """The reduction's model fitted by ``partial_fit`` over the partitions in order.

    ``classification`` is None for the regression reduction, else the pass's sums
    ``(labels' counts, weights' sum, rows)`` of the weighted multiclass problem.
    """
    rs = template.random_state
    if classification is None:
        n_actions = stage[2].shape[0]
        model = ArmRegressors(estimator, n_actions, "per_arm", rs)
        model.models_ = [seeded_clone(estimator, rs) for _ in range(n_actions)]
        return in_turn(_reduction_step, model, parts, template, stage, None, None)
    label_counts, weight_sum, n_rows = classification
    classes = np.flatnonzero(label_counts)
    if classes.size < 2:  # one arm (or none) ever looks better: as in memory
        scores = np.zeros(label_counts.shape[0])
        scores[classes] = 1.0
        return scores
    mean = weight_sum / n_rows  # the in-memory fit rescales weights to mean one
    model = seeded_clone(estimator, rs)
    return in_turn(_reduction_step, model, parts, template, stage, classes, mean)
