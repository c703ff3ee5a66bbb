"""The GLM policies' ``fit`` over Dask collections: distributed Newton (IRLS).

GLM-UCB, UCB-GLM and LogTS learn the penalised logistic MAP of their whole history
(``LogisticGroupsMixin``). Its objective, gradient and Hessian are sums over rows,
so each Newton iterate is one pass over the partitions: every partition is
validated on its worker by a copy of the policy (the in-memory checks and design,
``_observations``), and reduced to per-block sums at the broadcast coefficients,

    f_b = sum w r softplus(-eta) + w (1 - r) softplus(eta),
    g_b = sum (w mu(eta) - w r) x,    H_b = sum w mu(eta) (1 - mu(eta)) x x^T,

with ``eta = x^T theta_b``, merged by a tree of additions on the workers. The
client holds only ``(n_blocks, d, d)`` numbers and runs the in-memory solver's
iteration (``policies._core._newton``) on them: the same full steps, the same
Armijo backtracking per block, the same stopping rule and the same start (zero).
So the iterates are the in-memory ones up to the rounding of the sums' order; the
first pass also sums what the policies keep beside the MAP (GLM-UCB's ``V = alpha
I + sum w x x^T``, the arms' counts and weights, the largest row norm).

The result is the ordinary fitted policy without its history of rows (gathering
it would bring every row to the client): it selects, scores and pickles as the
in-memory fit does, and its ``partial_fit`` (which refits the MAP on the whole
history) raises a clear error. Each Newton pass reads the logs once (typically
6 to 8 passes): persist the collection when it fits in the workers' memory. A
standardising policy (``standardize``, on by default) scales each partition's rows
from the moments of the partitions before it, after one more pass (``_moments``).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import dask
import numpy as np
from scipy.special import expit

from skbandit._dask._fuse import compute_fused
from skbandit._dask._moments import partition_moments, validated
from skbandit._dask._parts import tree
from skbandit.exceptions import NumericalError, _as_numerical_error

__all__ = ["glm_policies", "newton_fit", "penalised", "solve"]


def glm_policies():
    """The policies whose learned state is the logistic MAP of sums over rows."""
    from skbandit.policies import GLMUCB, UCBGLM, LogTS

    return (GLMUCB, UCBGLM, LogTS)


_NOT_CONVERGED = (
    "The logistic Newton solver did not converge to finite coefficients within "
    "max_iter={max_iter} iterations; increase max_iter or alpha. The policy was "
    "left unchanged."
)


def _prepared(template, before, X, actions, rewards, sample_weight, action_mask):
    """A partition validated and designed as the in-memory fit does (its contexts
    scaled from the moments ``before`` it, when standardising): the policy copy that
    read it (the first partition's becomes the fitted policy), all its actions, and
    ``(blocks, rows, actions, rewards, w)`` of its weighted rows."""
    policy, X, _, (actions, rewards, w) = validated(
        template, before, X, actions, rewards, sample_weight, action_mask
    )
    return policy, actions, policy._observations(X, actions, rewards, w)


def _block_sums(blocks, rows, n_blocks, values):
    """``sum_{rows of b} values_l x_l^T`` per block: (n_blocks, d, q) for ``values``
    (n, q), one GEMM per block over the rows sorted by block once."""
    from skbandit.policies._core._ridge import BlockRows

    out = np.zeros((n_blocks, rows.shape[1], values.shape[1]))
    if rows.shape[0]:
        grouped = BlockRows(blocks)
        out[grouped.labels] = grouped.products(rows, values)
    return out


def _newton_terms(blocks, rows, w, wr, coef):
    """Loss, gradient and Hessian sums per block at ``coef`` (no penalty)."""
    n_blocks, d = coef.shape
    eta = np.einsum("nd,nd->n", rows, coef[blocks])
    mu = expit(eta)
    loss = wr * np.logaddexp(0.0, -eta) + (w - wr) * np.logaddexp(0.0, eta)
    curvature = (w * mu * (1.0 - mu))[:, None] * rows
    sums = _block_sums(
        blocks, rows, n_blocks, np.column_stack([curvature, w * mu - wr])
    )
    return (
        np.bincount(blocks, loss, minlength=n_blocks),
        sums[:, :, d],
        sums[:, :, :d],
    )


def _partition_pass(template, before, coef, first, X, *feedback):
    """One partition's share of a Newton pass at ``coef``; on the first pass also
    the sums the policy keeps beside the MAP, and the partition's policy copy."""
    if X.shape[0] == 0:
        return None
    policy, all_actions, (blocks, rows, kept, r, w) = _prepared(
        template, before, X, *feedback
    )
    terms = _newton_terms(blocks, rows, w, w * r, coef)
    if not first:
        return terms
    n_actions = policy.n_actions_
    kept_stats = (
        X.shape[0],
        np.bincount(all_actions, minlength=n_actions),
        np.bincount(kept, w, minlength=n_actions),
        _block_sums(blocks, rows, coef.shape[0], w[:, None] * rows),
        float(np.max(np.linalg.norm(rows, axis=1))) if rows.shape[0] else 0.0,
    )
    return (*terms, *kept_stats, policy)


#: Where a first pass's part holds the largest row norm (a max, not a sum); the
#: partition's policy copy follows it.
_NORM = 7


def _merge(*parts):
    """Add the parts' sums (the largest row norm is a max; the first policy copy is
    kept): the tree's node, on the workers."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    out = list(parts[0])
    for part in parts[1:]:
        for i, value in enumerate(part[:_NORM]):
            out[i] = out[i] + value
        if len(part) > _NORM:
            out[_NORM] = max(out[_NORM], part[_NORM])
    return tuple(out)


def _evaluate(partitions, befores, template, coef, first, l2):
    """One Newton pass: the penalised objective, gradient and Hessian per block at
    ``coef`` (and the first pass's extras), summed across the partitions."""
    shared = dask.delayed(template)
    at = dask.delayed(coef)
    parts = [
        dask.delayed(_partition_pass)(shared, before, at, first, *part)
        for before, part in zip(befores, partitions, strict=True)
    ]
    merged = compute_fused(tree(parts, _merge), parts)
    if merged is None:
        raise ValueError("Found array with 0 sample(s): the logs are empty.")
    f, grad, hess, *extras = merged
    return (*penalised(f, grad, hess, coef, l2), extras)


def penalised(f, grad, hess, coef, l2):
    """The sums with the penalty ``(l2 / 2) ||theta||^2`` of every problem added."""
    d = coef.shape[-1]
    f = f + 0.5 * l2 * np.einsum("...d,...d->...", coef, coef)
    return f, grad + l2 * coef, hess + l2 * np.eye(d)


def solve(evaluate, coef, tol, max_iter):
    """The in-memory solver's Newton iteration (``_core._newton._solve``), one pass
    over the partitions per evaluated point, for problems of any leading shape
    (blocks; members by blocks); returns the MAP, its Hessian and the first pass's
    extras."""
    f, grad, hess, extras = evaluate(coef, True)
    for _ in range(max_iter):
        if not (np.all(np.isfinite(grad)) and np.all(np.isfinite(hess))):
            break
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        decrement = np.einsum("...d,...d->...", grad, step)
        t = np.ones(coef.shape[:-1])
        slack = 1e-12 * (1.0 + np.abs(f))
        tiny = np.max(np.abs(step), axis=-1) <= tol  # taken in full, as in memory
        for _ in range(60):  # backtracking where a full step is not enough
            new = coef - t[..., None] * step
            f_new, grad_new, hess_new, _ = evaluate(new, False)
            bad = ~(f_new <= f - 1e-4 * t * decrement + slack) & ~tiny
            if not bad.any():
                break
            t = np.where(bad, 0.5 * t, t)
        coef, f, grad, hess = new, f_new, grad_new, hess_new
        if not np.all(np.isfinite(coef)):
            break
        if np.max(np.abs(step), initial=0.0) <= tol and np.all(t == 1.0):
            return coef, hess, extras
    raise NumericalError(_NOT_CONVERGED.format(max_iter=max_iter))


def newton_fit(template, partitions, per_arm_contexts, n_features):
    """The fitted GLM policy from the delayed ``partitions`` (see the module)."""
    l2 = template._l2
    befores, moments = partition_moments(template, partitions, n_features)

    def evaluate(coef, first):
        with np.errstate(over="ignore", invalid="ignore"):
            return _evaluate(partitions, befores, template, coef, first, l2)

    n_blocks = 1 if per_arm_contexts else template.n_actions
    coef = np.zeros((n_blocks, n_features + int(template.fit_intercept)))
    coef, hess, extras = solve(evaluate, coef, template.tol, template.max_iter)
    n_rows, counts, weights, gram, max_norm, policy = extras
    with _as_numerical_error(
        "The logistic Hessian is not positive definite; increase alpha. The "
        "policy was left unchanged."
    ):
        hess_inv = np.linalg.inv(hess)
        chol = np.linalg.cholesky(hess_inv)
    policy._coef, policy._hess_inv, policy._hess_inv_chol = coef, hess_inv, chol
    policy._context_moments = moments
    policy._weight_seen = weights
    policy._max_norm = max_norm
    policy._groups = None  # the rows stay on the workers: no partial_fit
    if policy._gram is not None:
        ridge = policy._gram
        ridge.precision = ridge.precision + gram
        with _as_numerical_error(
            "The summed Gram matrices are not invertible or not finite; the policy "
            "was left unchanged."
        ):
            ridge.covariance = np.linalg.inv(ridge.precision)
    policy.n_samples_seen_ = n_rows
    policy.action_counts_ = counts
    return policy
