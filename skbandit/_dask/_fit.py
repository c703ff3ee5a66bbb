"""A policy's ``fit`` over Dask collections: partitions learned on the workers.

Four paths, all returning the ordinary fitted policy:

- **Sufficient statistics** (LinUCB, LinTS, EpsilonGreedy without an estimator,
  CombLinUCB, CombLinTS): their whole learned state is the ridge blocks' ``A = alpha
  I + sum w x x^T`` and ``b = sum w y x`` with the arms' counts, all sums over rows.
  Each partition is fitted on its worker by a clone of the policy (the family's own
  update and validation); a tree of merges on the workers adds the clones' ``A -
  alpha I``, ``b`` and counts, and the root inverts ``A`` once. The result equals the
  in-memory ``fit`` to rounding (the sums' order differs).
- **Partial fits in sequence** (policies learning through their scikit-learn
  model's ``partial_fit``: EpsilonGreedy, BootstrappedTS, SquareCB with such an
  estimator): partition ``k`` is learned by ``partial_fit`` on the worker that
  holds it, by the policy that learned partitions ``0 .. k-1`` (the policy moves,
  the rows do not), one partition at a time (``_sequence``). The result is exactly
  ``fit`` on partition 0 then ``partial_fit`` on each later partition in order, in
  memory: the same calls on the same rows (the policy's counts, online
  standardisation, bootstrap draws and random state travel with it). An estimator
  without ``partial_fit``, and FALCON's offline oracle, refit on the logged history,
  which would have to be gathered: clear errors.

- **Distributed Newton** (GLMUCB, UCBGLM, LogTS): one pass over the partitions per
  Newton iterate, their gradients and Hessians summed (``_glm``).
- **Ensemble members from summed statistics** (LinES): ``A``, ``b`` and the members'
  perturbed moments, with per-partition perturbation streams (``_ensemble``); GLMES's
  members by distributed Newton with the same streams (``_glm_es``).

Any other policy raises a clear error: its state is not a sum over rows (LogPHE
redraws its history each round; the online logistic policies step row by row), or
its model has no ``partial_fit``.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import dask
import numpy as np
from sklearn.base import clone

from skbandit._dask._ensemble import lin_es_fit
from skbandit._dask._fuse import compute_fused
from skbandit._dask._glm import glm_policies, newton_fit
from skbandit._dask._glm_es import glm_es_fit
from skbandit._dask._ope import row_aligned
from skbandit._dask._parts import adopt, blocks, count_actions, tree
from skbandit._dask._sequence import in_turn
from skbandit.exceptions import NumericalError

__all__ = ["dask_fit", "fit_path"]


def _ridge_family():
    from skbandit.policies import CombLinTS, CombLinUCB, EpsilonGreedy, LinTS, LinUCB

    return (LinUCB, LinTS, EpsilonGreedy, CombLinUCB, CombLinTS)


def _path(policy) -> str:
    """``"statistics"``, ``"sequence"`` or a clear error, by the policy's state."""
    name = type(policy).__name__
    estimator = getattr(policy, "estimator", None)
    if type(policy) in _ridge_family() and estimator is None:
        return "statistics"
    if type(policy) in glm_policies():
        return "newton"
    from skbandit.policies import GLMES, LinES

    if type(policy) is LinES:
        return "ensemble"
    if type(policy) is GLMES:
        return "glm_es"
    if hasattr(policy, "_learns_online"):  # the estimator policies
        model = policy._default_estimator() if estimator is None else estimator
        if policy._learns_online(model):
            return "sequence"
        raise TypeError(_needs_history(policy, model))
    raise TypeError(
        f"{name}.fit does not take Dask collections: its learned state is not a sum "
        "over rows. Dask fits LinUCB, LinTS, EpsilonGreedy, CombLinUCB and "
        "CombLinTS (summed sufficient statistics), LinES, GLMES, GLMUCB, UCBGLM and "
        "LogTS (distributed Newton) and the estimator policies whose estimator has "
        "partial_fit; fit the others on a sample in memory."
    )


def _needs_history(policy, model) -> str:
    """Why an estimator policy that refits on its logged history cannot fit on Dask."""
    name, model_name = type(policy).__name__, type(model).__name__
    gathered = (
        "that history would have to be gathered into one process, and a fit on "
        "Dask collections never gathers the rows."
    )
    if name == "FALCON":
        return (
            "FALCON.fit on Dask collections: FALCON's oracle is offline by design: "
            f"at the start of every epoch it refits its estimator ({model_name}.fit, "
            "never partial_fit) on the logged history (every round so far, or the "
            f"last epoch's with refit_on='last_epoch'); {gathered} Fit FALCON in "
            "memory on the logs that fit (or a sample), or fit SquareCB (the same "
            "inverse-gap weighting on an online oracle) with an estimator that has "
            "partial_fit, e.g. SGDRegressor, which a Dask fit feeds partition after "
            "partition."
        )
    replicas = " (each bootstrap replica with its own weights)"
    hint = (
        " A Pipeline has no partial_fit: standardize=True standardises the contexts "
        "online, in place of a scaler step."
        if hasattr(model, "steps")
        else ""
    )
    return (
        f"{name}.fit on Dask collections learns partition after partition through "
        f"its estimator's partial_fit, and {model_name} has none: {name} then "
        f"refits it on every logged round{replicas if policy._n_replicas > 1 else ''}"
        f" each time their number reaches a power of two; {gathered} Use an "
        "estimator with partial_fit (e.g. SGDRegressor), or fit in memory on the "
        f"logs that fit.{hint}"
    )


# ------------------------------------------------------------ summed statistics
def _fit_partition(template, X, actions, rewards, sample_weight, action_mask):
    if X.shape[0] == 0:
        return None
    return clone(template).fit(
        X, actions, rewards, sample_weight=sample_weight, action_mask=action_mask
    )


def _add_statistics(*fitted):
    """Sum the fitted clones' statistics into the first (``A`` not yet inverted)."""
    fitted = [f for f in fitted if f is not None]
    if not fitted:
        return None
    out = fitted[0]
    ridge = out._ridge
    for other in fitted[1:]:
        d = other._ridge.moment.shape[1]
        ridge.precision = ridge.precision + (
            other._ridge.precision - other.alpha * np.eye(d)
        )
        ridge.moment = ridge.moment + other._ridge.moment
        out.n_samples_seen_ = out.n_samples_seen_ + other.n_samples_seen_
        out.action_counts_ = out.action_counts_ + other.action_counts_
    return out


def _finish_statistics(merged):
    """Invert the summed precisions once; the root of the tree."""
    if merged is None:
        raise ValueError("Found array with 0 sample(s): the logs are empty.")
    ridge = merged._ridge
    with np.errstate(all="ignore"):
        try:
            covariance = np.linalg.inv(ridge.precision)
        except np.linalg.LinAlgError:
            covariance = np.full_like(ridge.precision, np.nan)
    if not (np.all(np.isfinite(covariance)) and np.all(np.isfinite(ridge.moment))):
        raise NumericalError(
            "The summed ridge statistics are not invertible or not finite (is alpha "
            "> 0 and are the features bounded?); the policy was left unchanged."
        )
    ridge.covariance = covariance
    ridge._chol = ridge._coef = None
    return merged


# ------------------------------------------------------------ partial fits in turn
def _learn_partition(policy, X, actions, rewards, sample_weight, action_mask):
    if X.shape[0] == 0:
        return policy
    kwargs = dict(sample_weight=sample_weight, action_mask=action_mask)
    if not policy._is_initialized():
        return policy.fit(X, actions, rewards, **kwargs)
    return policy.partial_fit(X, actions, rewards, **kwargs)


def fit_path(policy, rewards) -> str:
    """The path of ``policy``'s Dask fit, or its error, before any pass over the
    rows (a pipeline asks before it fits its transformers)."""
    if rewards is None:
        from skbandit.utils.validation import _missing_rewards_error

        raise _missing_rewards_error(type(policy).__name__)
    policy._validate_params()
    return _path(policy)


def dask_fit(policy, X, actions, rewards=None, *, sample_weight=None, action_mask=None):
    """``policy.fit`` over Dask collections; see the module docstring."""
    path = fit_path(policy, rewards)
    n_actions = count_actions(policy, X, actions)
    template = clone(policy).set_params(n_actions=n_actions)
    sizes = [] if path in ("ensemble", "glm_es") and template._anytime else None
    parts = blocks(X, actions, rewards, sample_weight, action_mask, sizes=sizes)
    if path == "ensemble":
        fitted = lin_es_fit(template, parts, sizes)
    elif path in ("newton", "glm_es"):
        (contexts,) = row_aligned(X)  # its columns' number is known
        shape = (contexts.ndim == 3, contexts.shape[-1])
        if path == "newton":
            fitted = newton_fit(template, parts, *shape)
        else:
            fitted = glm_es_fit(template, parts, sizes, *shape)
    elif path == "statistics":
        shared = dask.delayed(template)  # one copy in the graph, not one per task
        fitted = [dask.delayed(_fit_partition)(shared, *part) for part in parts]
        result = dask.delayed(_finish_statistics)(tree(fitted, _add_statistics))
        fitted = compute_fused(result, fitted)  # one task per partition
    else:  # partial fits in turn, one partition at a time
        fitted = in_turn(_learn_partition, template, parts)
    if not fitted._is_initialized():
        raise ValueError("Found array with 0 sample(s): the logs are empty.")
    return adopt(policy, fitted)
