"""The off-policy learners' ``fit`` over Dask collections: ridge models from sums,
other models by their ``partial_fit``.

A scikit-learn :class:`~sklearn.linear_model.Ridge` with an intercept is the
solution of its centred normal equations, ``(S_xx + alpha I) beta = S_xy`` with
``S`` the weighted scatter of the rows about their weighted means and ``intercept =
mean_y - mean_x^T beta``: sums over rows. Every partition is validated on its
worker by a copy of the learner (the in-memory checks, propensities included) and
reduced to the weighted count, means and centred scatter of its rows ``[x, y]``;
the tree on the workers merges them by the pairwise update of Chan, Golub and
LeVeque (1983), so large feature means do not cancel, and the client solves the
small system. The learners and their models are then the in-memory ones to
rounding:

- :class:`~skbandit.offpolicy.DMLearner` with a ``Ridge`` reward model (the
  default), per arm (one scatter per arm, the in-memory fallback for an arm of
  fewer than two rows) or shared (rows ``[x, one_hot(a)]``), importance-weighted
  or not;
- :class:`~skbandit.offpolicy.IPWLearner` with ``reduction="regression"`` and a
  ``Ridge`` per arm on ``G[:, k] = 1{a = k} u r`` over all rows
  (``self_normalize`` scales each arm's targets by ``n / sum u``, summed in the
  same pass);
- :class:`~skbandit.offpolicy.DRLearner` with ``reduction="regression"`` and
  ``cv=None``: a first pass fits the reward model ``q`` (as DM), a second pass
  regresses ``G = q + 1{a = k} u (r - q)``, ``q`` clipped to the rewards' range;
  with ``select_by_value``, a third regresses the IPW targets; a last pass sums
  the DR value of each policy's greedy arms (``dr_values_``), and the higher is
  kept, as in memory.

A model that is not such a Ridge but has ``partial_fit`` (``SGDRegressor``; for
the classification reduction ``SGDClassifier``) learns partition after partition
instead (``_offpolicy_stream``); the reward model and the reduction each take their
own path (a Ridge ``q`` under a streamed reduction, say). A model with neither,
DR's cross-fitting (``KFold`` over shuffled rows) and estimated propensities are
clear errors.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import dask
import numpy as np
from sklearn.base import clone
from sklearn.linear_model import Ridge

from skbandit._dask._fuse import compute_fused
from skbandit._dask._offpolicy_stream import (
    model_mode,
    reduction_model,
    reward_model,
    targets,
    validated,
)
from skbandit._dask._parts import adopt, blocks, count_actions, tree
from skbandit.offpolicy._base import importance_weights
from skbandit.offpolicy._models import ArmRegressors, _Constant, seeded_clone
from skbandit.offpolicy._reductions import classification_rows, cost_sensitive_targets

__all__ = ["learner_fit"]


# ------------------------------------------------------------- weighted moments
def moments(Z, w):
    """``(W, mean, S)``: the weights' sum, the weighted mean of the rows ``Z`` and
    their weighted scatter about it."""
    W = float(w.sum())
    if W == 0:
        return 0.0, np.zeros(Z.shape[1]), np.zeros((Z.shape[1],) * 2)
    mean = w @ Z / W
    centred = Z - mean
    return W, mean, (centred * w[:, None]).T @ centred


def merge_moments(a, b):
    """The moments of two sets of rows together (Chan, Golub and LeVeque)."""
    (wa, ma, sa), (wb, mb, sb) = a, b
    if wa == 0 or wb == 0:
        return b if wa == 0 else a
    total = wa + wb
    delta = mb - ma
    return (
        total,
        ma + delta * (wb / total),
        sa + sb + np.outer(delta, delta) * (wa * wb / total),
    )


def ridge_from_moments(template, stats, n_features):
    """A fitted ``Ridge`` per target column of ``stats`` (rows ``[x, y_1..y_q]``):
    the estimator's own attributes, as its ``fit`` on the rows would set them."""
    W, mean, S = stats
    d = n_features
    Sxx, Sxy = S[:d, :d], S[:d, d:]
    models = []
    alpha = float(np.asarray(template.alpha))
    if template.fit_intercept:
        coef = np.linalg.solve(Sxx + alpha * np.eye(d), Sxy)  # (d, q)
        intercepts = mean[d:] - mean[:d] @ coef
    else:  # uncentred: S + W m m^T is the raw second moment
        raw = S + W * np.outer(mean, mean)
        coef = np.linalg.solve(raw[:d, :d] + alpha * np.eye(d), raw[:d, d:])
        intercepts = np.zeros(coef.shape[1])
    for j in range(coef.shape[1]):
        model = clone(template)
        model.coef_, model.intercept_ = coef[:, j].copy(), float(intercepts[j])
        if not template.fit_intercept:
            model.intercept_ = 0.0
        model.n_features_in_, model.n_iter_, model.solver_ = d, None, "cholesky"
        models.append(model)
    return models


# ------------------------------------------------------------------- the learners
def _kind(learner, propensities):
    """``"dm"``, ``"ipw"`` or ``"dr"``, or a clear error for what has no Dask form."""
    from skbandit.offpolicy import DMLearner, DRLearner, IPWLearner

    name = type(learner).__name__
    if type(learner) not in (DMLearner, IPWLearner, DRLearner):
        raise TypeError(
            f"{name}.fit does not take Dask collections; DMLearner, IPWLearner and "
            "DRLearner do (ridge models from summed statistics, other models by "
            "their partial_fit)."
        )
    if propensities is None and learner._uses_propensities:
        raise ValueError(
            f"{name}.fit on Dask collections needs the logged propensities: "
            "estimating them (a cross-fitted classifier) has no distributed form "
            "here. Pass them, or estimate them on a sample in memory."
        )
    if type(learner) is DMLearner:
        return "dm"
    if type(learner) is IPWLearner:
        return "ipw"
    if learner.cv is not None:
        raise ValueError(
            f"{name}.fit on Dask collections needs cv=None (its reward model fitted "
            "once on all rows): cross-fitting shuffles rows into folds in memory."
        )
    return "dr"


def _modes(learner, kind, weighted):
    """Each model's estimator and how it is fitted (``"ridge"`` or ``"stream"``)."""
    name = type(learner).__name__
    out = {}
    if kind == "dm":
        model = Ridge() if learner.estimator is None else learner.estimator
        importance = weighted or learner.importance_weighted
        out["reward"] = (
            model,
            model_mode(model, name, "reward model", weighted=importance),
        )
        return out
    if kind == "dr":
        model = Ridge() if learner.reward_model is None else learner.reward_model
        out["reward"] = (
            model,
            model_mode(model, name, "reward model", weighted=weighted),
        )
    model = learner._default_estimator() if learner.estimator is None else (
        learner.estimator
    )  # fmt: skip
    classifier = learner.reduction == "classification"
    role = "classifier" if classifier else "regression"
    mode = model_mode(model, name, role, weighted=classifier, classifier=classifier)
    out["reduction"] = (model, "classification" if classifier else mode)
    return out


def _reward_model_moments(learner, X, actions, rewards, weights, arm_models):
    """The reward model's moments: one per arm, or one over ``[x, one_hot(a)]``."""
    w = np.ones(X.shape[0]) if weights is None else weights
    if arm_models == "shared":
        one_hot = np.eye(learner.n_actions_)[actions]
        return [moments(np.column_stack([X, one_hot, rewards]), w)]
    return [
        moments(np.column_stack([X[rows], rewards[rows]]), w[rows])
        for rows in (actions == k for k in range(learner.n_actions_))
    ]


def _partition(template, kind, stage, mode, *arrays):
    """A partition's sums. Stage 1: counts, reward sums and range, importance
    weights' totals, and (``mode`` True) the Ridge reward model's moments (IPW's
    targets' for IPW). Later stages, given ``(q model, reward range, per-arm
    scale)``: the moments of ``[x, G]`` (``mode="moments"``) or the weighted
    multiclass problem's label counts and weights (``"classification"``)."""
    X = arrays[0]
    if X.shape[0] == 0:
        return None
    learner, X, actions, rewards, p, weight = validated(template, *arrays)
    n_actions = learner.n_actions_
    out = {"n": X.shape[0], "counts": np.bincount(actions, minlength=n_actions)}
    u = None if p is None else importance_weights(p, weight, learner.clip)
    if mode == "values":  # DR's value of each candidate policy on the rows
        return out | _values(learner, *stage, X, actions, rewards, u, weight)
    if stage != 1:
        G = targets(learner, stage, X, actions, rewards, u)
        if mode == "moments":
            out["moments"] = [moments(np.column_stack([X, G]), np.ones(X.shape[0]))]
            return out
        _, labels, class_weights = classification_rows(G)
        out["labels"] = np.bincount(labels, minlength=n_actions)
        out["class_weight"], out["class_rows"] = class_weights.sum(), labels.size
        return out
    out |= {
        "learner": learner,
        "sum_r": np.bincount(actions, rewards, minlength=n_actions),
        "low": rewards.min(),
        "high": rewards.max(),
        "totals": None if u is None else np.bincount(actions, u, minlength=n_actions),
    }
    if mode and kind == "ipw":
        G = cost_sensitive_targets(actions, rewards, u, n_actions)
        out["moments"] = [moments(np.column_stack([X, G]), np.ones(X.shape[0]))]
    elif mode:
        weights = u if kind == "dm" and learner.importance_weighted else weight
        out["moments"] = _reward_model_moments(
            learner, X, actions, rewards, weights, learner.arm_models
        )
    return out


def _values(learner, stage, candidates, X, actions, rewards, u, weight):
    """The weighted sums of the DR targets of each candidate's greedy arms."""
    G = targets(learner, stage, X, actions, rewards, u)
    w = np.ones(X.shape[0]) if weight is None else weight
    rounds = np.arange(X.shape[0])
    out = {"weight": w.sum()}
    for name, model in candidates.items():
        learner.policy_model_ = model
        greedy = learner._reward_scores(X).argmax(axis=1)
        out[f"value_{name}"] = w @ G[rounds, greedy]
    return out


def _merge(*parts):
    """Parts merged key by key: moments pairwise, extremes, sums; first learner."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    out = dict(parts[0])
    for part in parts[1:]:
        for key, value in part.items():
            if key == "moments":
                out[key] = [
                    merge_moments(a, b) for a, b in zip(out[key], value, strict=True)
                ]
            elif key in ("low", "high"):
                out[key] = (min if key == "low" else max)(out[key], value)
            elif key != "learner" and value is not None:
                out[key] = out[key] + value
    return out


def _pass(partitions, template, kind, stage, mode):
    shared, at = dask.delayed(template), dask.delayed(stage)
    parts = [
        dask.delayed(_partition)(shared, kind, at, mode, *part) for part in partitions
    ]
    merged = compute_fused(tree(parts, _merge), parts)
    if merged is None:
        raise ValueError("Found array with 0 sample(s): the logs are empty.")
    return merged


def _ridge_reward_model(estimator, stats, random_state, arm_models, n_features):
    """The fitted ``ArmRegressors`` of a Ridge reward model from its moments."""
    n_actions = stats["counts"].shape[0]
    model = ArmRegressors(estimator, n_actions, arm_models, random_state)
    if arm_models == "shared":
        model.models_ = ridge_from_moments(
            seeded_clone(estimator, random_state),
            stats["moments"][0],
            n_features + n_actions,
        )
        return model
    fallback = float(stats["sum_r"].sum() / stats["n"])
    models = []
    for k, arm in enumerate(stats["moments"]):
        count = stats["counts"][k]
        if count < ArmRegressors.min_rows:
            value = stats["sum_r"][k] / count if count else fallback
            models.append(_Constant(value))
            continue
        ridge = seeded_clone(estimator, random_state)
        models.extend(ridge_from_moments(ridge, arm, n_features))
    model.models_ = models
    return model


def _targets_model(estimator, moments_, random_state, n_actions, n_features, scale):
    """IPW's or DR's per-arm regressions on ``G`` from the moments of ``[x, G]``."""
    W, mean, S = moments_
    if scale is not None:  # self_normalize: each arm's targets times its scale
        d = n_features
        mean, S = mean.copy(), S.copy()
        mean[d:] *= scale
        S[:d, d:] *= scale
    model = ArmRegressors(estimator, n_actions, "per_arm", random_state)
    ridge = seeded_clone(estimator, random_state)
    model.models_ = ridge_from_moments(ridge, (W, mean, S), n_features)
    return model


def _scale(stats):
    """``n / sum u`` per arm (0 where an arm has no weight) for ``self_normalize``."""
    totals = stats["totals"]
    n = stats["n"]
    return np.divide(n, totals, out=np.zeros(totals.shape[0]), where=totals > 0)


def _reward(parts, template, kind, stats, modes, policy):
    """The fitted reward model (DM's, DR's ``q``): from moments, or streamed."""
    estimator, mode = modes["reward"]
    arm_models, rs = policy.arm_models, policy.random_state
    if mode == "ridge":
        d = stats["learner"].n_features_in_
        return _ridge_reward_model(estimator, stats, rs, arm_models, d)
    importance = kind == "dm" and policy.importance_weighted
    return reward_model(parts, template, estimator, stats, arm_models, importance)


def _reduction(parts, template, kind, stats, modes, stage):
    """IPW's or DR's fitted reduction model: Ridge from moments, or streamed."""
    estimator, mode = modes["reduction"]
    learner, rs = stats["learner"], template.random_state
    d, n_actions = learner.n_features_in_, learner.n_actions_
    if mode == "ridge" and kind == "ipw":  # stage 1 summed the unscaled targets
        scale = stage[2] if template.self_normalize else None
        moments_ = stats["moments"][0]
        return _targets_model(estimator, moments_, rs, n_actions, d, scale)
    if mode == "ridge":
        moments_ = _pass(parts, template, kind, stage, "moments")["moments"][0]
        return _targets_model(estimator, moments_, rs, n_actions, d, None)
    classification = None
    if mode == "classification":
        sums = _pass(parts, template, kind, stage, "classification")
        classification = (sums["labels"], sums["class_weight"], sums["class_rows"])
    return reduction_model(parts, template, estimator, stage, classification)


def _dr_policy_model(parts, template, stats, modes, stage, ipw_stage):
    """DR's reduction on its targets and (``select_by_value``) on the IPW targets;
    a pass sums each policy's DR value, and the higher is kept, as in memory."""
    learner = stats["learner"]
    candidates = {"dr": _reduction(parts, template, "dr", stats, modes, stage)}
    if template.select_by_value:
        candidates["ipw"] = _reduction(parts, template, "dr", stats, modes, ipw_stage)
    sums = _pass(parts, template, "dr", (stage, candidates), "values")
    learner.dr_values_ = {
        name: float(sums[f"value_{name}"] / sums["weight"]) for name in candidates
    }
    # Ties keep the DR targets' policy (the first), as in memory.
    learner.selected_targets_ = max(learner.dr_values_, key=learner.dr_values_.get)
    return candidates[learner.selected_targets_]


def learner_fit(
    policy, X, actions, rewards=None, propensities=None, *, sample_weight=None
):
    """``learner.fit`` over Dask collections; see the module docstring."""
    from skbandit.utils.validation import _missing_rewards_error

    if rewards is None:
        raise _missing_rewards_error(type(policy).__name__)
    policy._validate_params()
    kind = _kind(policy, propensities)
    modes = _modes(policy, kind, weighted=sample_weight is not None)
    template = clone(policy).set_params(n_actions=count_actions(policy, X, actions))
    parts = blocks(X, actions, rewards, propensities, sample_weight)
    ridge_first = modes.get("reward", modes.get("reduction"))[1] == "ridge"
    stats = _pass(parts, template, kind, 1, ridge_first)
    learner = stats["learner"]
    if kind == "dm":
        learner.reward_model_ = _reward(parts, template, kind, stats, modes, policy)
    else:
        n_actions = learner.n_actions_
        scale = _scale(stats) if policy.self_normalize else np.ones(n_actions)
        stage = (None, (None, None), scale)
        ipw_stage = (None, (None, None), scale)
        if kind == "ipw":
            model = _reduction(parts, template, kind, stats, modes, ipw_stage)
        else:
            q_model = _reward(parts, template, kind, stats, modes, policy)
            stage = (q_model, (stats["low"], stats["high"]), scale)
            model = _dr_policy_model(parts, template, stats, modes, stage, ipw_stage)
        learner.policy_model_ = model
    learner.n_samples_seen_, learner.action_counts_ = stats["n"], stats["counts"]
    return adopt(policy, learner)
