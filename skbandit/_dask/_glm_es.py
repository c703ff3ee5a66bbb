"""GLMES's ``fit`` over Dask collections: its members by distributed Newton.

GLMES's ``m`` members each solve the penalised GLM likelihood of the history with
perturbed targets ``w (Y + Z^j / sqrt(w))`` (the target sum ``w Y + sqrt(w) Z^j`` of a
row of weight ``w``), one problem per member and block, by the Newton solver. As for
the GLM policies (``_glm``), each Newton iterate is one pass over the partitions: each
partition is validated on its worker, draws its rows' perturbations as LinES's Dask
fit does (``_ensemble``; here from ``numpy.random.default_rng([noise_seed, p, k,
1])``, since GLMES's warm-up already draws from ``[noise_seed, p, 1]``), and reduces
its rows to every member's per-block loss, gradient and Hessian sums at the broadcast
coefficients, in one GEMM per block; the client takes the in-memory solver's steps
for all ``m`` times ``n_blocks`` problems at once.

So the counts, phase and prior are the in-memory fit's and the members solve the
in-memory problems for their draws: the same in law as the in-memory members, not
draw for draw, reproducible per ``random_state`` and partitioning. As for the GLM
policies, the history of rows (and the per-row perturbations) stay on the workers:
``partial_fit`` within the fitted phase raises a clear error (it refits the members
on the whole perturbed history); after a restart of the anytime schedule, which
discards the history, it learns again. ``solver="gd"`` has no exact distributed
form here (a fixed number of full-batch steps from the phase's start would be, but is
not provided) and is a clear error.

A standardising GLMES (``standardize``, on by default) scales its rows online, each
partition from the moments of the partitions before it (``_moments``).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import dask
import numpy as np

from skbandit._dask._ensemble import ensemble_setup
from skbandit._dask._fuse import compute_fused
from skbandit._dask._glm import _block_sums, penalised, solve
from skbandit._dask._moments import partition_moments, validated
from skbandit._dask._parts import add_parts, tree

__all__ = ["glm_es_fit"]


def _prepared(template, phase, k, offset, before, X, actions, rewards, weight, mask):
    """Partition ``k`` validated by a copy of the policy: the copy, the counts and
    ``(blocks, rows, count, target)`` of the phase's rows, perturbations drawn.
    ``before``: the moments of the earlier partitions' rows, which scale this
    one's (``None``: contexts as given)."""
    from skbandit.utils._reward_range import check_reward_range

    policy, X, _, (actions, rewards, weight) = validated(
        template, before, X, actions, rewards, weight, mask
    )
    high = {"logistic": 1.0, "poisson": np.inf}.get(policy.link)
    if high is not None:  # GLMES._update's check, at the door
        reason = f"the {policy.link} link's likelihood"
        check_reward_range(rewards, type(policy).__name__, reason, high=high)
    n_rows, counts = X.shape[0], np.bincount(actions, minlength=policy.n_actions_)
    index, start = phase
    if index != policy.phase_:
        policy._enter_phase(index)
    keep = slice(max(0, start - offset), n_rows)  # rows of completed phases go
    X, actions, rewards = X[keep], actions[keep], rewards[keep]
    w = np.ones(actions.shape[0]) if weight is None else weight[keep]
    noise = np.random.default_rng([policy._noise_seed, index, k, 1])
    z = policy.perturbation_scale_ * noise.standard_normal(
        (w.shape[0], policy.n_models_)
    )
    rows = policy._learning_rows(X, actions)
    target = (w * rewards)[None] + (np.sqrt(w)[:, None] * z).T  # (m, n)
    return policy, n_rows, counts, (policy._arm_blocks[actions], rows, w, target)


def _terms(link, blocks, rows, count, target, coef):
    """Every member's loss, gradient and Hessian sums per block at ``coef``."""
    m, n_blocks, d = coef.shape
    eta = np.einsum("nd,mnd->mn", rows, coef[:, blocks])
    mean = link.mean(eta)
    loss = link.loss(eta, target, count, count - target)
    curvature = link.weight(mean, count)
    values = np.column_stack(
        [curvature[j][:, None] * rows for j in range(m)] + [(count * mean - target).T]
    )
    sums = _block_sums(blocks, rows, n_blocks, values)  # (B, d, m d + m)
    hess = sums[:, :, : m * d].reshape(n_blocks, d, m, d).transpose(2, 0, 1, 3)
    grad = sums[:, :, m * d :].transpose(2, 0, 1)
    f = np.stack([np.bincount(blocks, loss[j], minlength=n_blocks) for j in range(m)])
    return f, grad, hess


def _partition_pass(template, phase, k, offset, before, coef, first, *arrays):
    if arrays[0].shape[0] == 0:
        return None
    policy, n_rows, counts, (blocks, rows, w, target) = _prepared(
        template, phase, k, offset, before, *arrays
    )
    with np.errstate(over="ignore", invalid="ignore"):
        terms = _terms(policy._link, blocks, rows, w, target, coef)
    return (*terms, n_rows, counts, policy) if first else terms


def _merge(*parts):
    # the Newton sums, then a first pass's row and arm counts
    return add_parts(parts, 5)


def glm_es_fit(template, partitions, row_chunks, per_arm_contexts, n_features):
    """The fitted GLMES from the delayed ``partitions`` (see the module)."""
    if template.solver != "newton":
        raise TypeError(
            "GLMES.fit on Dask collections solves its members by distributed Newton "
            "(solver='newton'); solver='gd' has no exact distributed form here."
        )
    template, phase, offsets = ensemble_setup(template, partitions, row_chunks)
    shared = dask.delayed(template)
    befores, total = partition_moments(template, partitions, n_features)

    def evaluate(coef, first):
        at = dask.delayed(coef)
        parts = [
            dask.delayed(_partition_pass)(
                shared, phase, k, int(offsets[k]), befores[k], at, first, *part
            )
            for k, part in enumerate(partitions)
        ]
        merged = compute_fused(tree(parts, _merge), parts)
        if merged is None:
            raise ValueError("Found array with 0 sample(s): the logs are empty.")
        f, grad, hess, *extras = merged
        return (*penalised(f, grad, hess, coef, template.alpha), extras)

    n_models = _members(template, phase)
    n_blocks = 1 if per_arm_contexts else template.n_actions
    coef = np.zeros((n_models, n_blocks, n_features + int(template.fit_intercept)))
    coef, _, (n_rows, counts, policy) = solve(
        evaluate, coef, template.tol, template.max_iter
    )
    if policy.phase_ != phase[0]:
        policy._enter_phase(phase[0])
    policy._coef = coef
    policy._context_moments = total
    policy._groups = policy._group_noise = None  # the rows stay on the workers
    policy._perturbations = None
    policy.n_samples_seen_, policy.action_counts_ = n_rows, counts
    return policy


def _members(template, phase):
    """The number of members of the phase the rows end in (``_enter_phase``'s)."""
    from skbandit.policies._core._anytime_schedule import _MAX_ROUNDS, phase_ends

    if template._anytime:
        ends = phase_ends(template.first_phase, template.restart_base, _MAX_ROUNDS)
        length = int(ends[phase[0]]) - phase[1]
    else:
        length = _MAX_ROUNDS if template.horizon is None else int(template.horizon)
    return template._phase_settings(length)[0]
