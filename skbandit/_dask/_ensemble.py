"""LinES's ``fit`` over Dask collections: its members from summed statistics.

LinES's members share one ridge Gram matrix ``A = alpha I + sum w x x^T`` and the
moment ``b = sum w y x``; member ``j`` adds its perturbed moment ``sum sqrt(w) x
Z^j`` (plus the prior's ``sqrt(alpha) sigma_R U^j``). All are sums over rows, so
every partition is validated on its worker by a copy of the policy and reduced to
its per-block ``[sum w x x^T | sum w y x | sum sqrt(w) x Z^j]`` in one GEMM per
block, and a tree on the workers adds them.

The perturbations ``Z^j`` of a row are drawn once, with the row, as in memory, but
from a generator of its partition: partition ``k`` (0-based, in row order) of the
phase ``p`` being learned draws its kept rows' ``(n_k, m)`` perturbations, in row
order, from ``numpy.random.default_rng([noise_seed, p, k])`` times ``sigma_R``,
where ``noise_seed`` is the policy's perturbation seed (drawn from
``random_state`` exactly as the in-memory fit draws it). The in-memory fit draws
one stream over all rows, which no partition can enter at its offset (normal
draws consume a variable number of random words), so: ``A``, ``b``, the counts,
the phase and the prior's perturbation are the in-memory fit's (the latter draw
for draw), and the members' perturbed moments are the same in law, not draw for
draw, reproducible given ``random_state`` and the partitioning.

The per-row draws stay on the workers (``perturbations_`` is not kept: at 10^8
rows and 25 members it would be 20 GB); nothing else needs them, and
``partial_fit`` continues from the fitted state, drawing its rows' perturbations
from the phase's own stream as in memory (a stream the partitions' draws are
independent of).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import dask
import numpy as np
from sklearn.base import clone
from sklearn.utils import check_random_state

from skbandit._dask._fuse import compute_fused
from skbandit._dask._glm import _block_sums
from skbandit._dask._parts import add_parts, tree
from skbandit.exceptions import NumericalError

__all__ = ["ensemble_setup", "lin_es_fit"]


def _phase(template, n_rows):
    """``(index, first row)`` of the phase that ``n_rows`` rows end in."""
    from skbandit.policies._core._anytime_schedule import _MAX_ROUNDS, phase_ends

    if not template._anytime:
        return 0, 0
    ends = phase_ends(template.first_phase, template.restart_base, _MAX_ROUNDS)
    index = int(np.searchsorted(ends, n_rows, side="right"))
    return index, 0 if index == 0 else int(ends[index - 1])


def _partition_sums(template, phase, k, offset, X, actions, rewards, weight, mask):
    """Partition ``k``'s share: row count, arm counts, the block sums and its
    policy copy (the first one becomes the fitted policy)."""
    if X.shape[0] == 0:
        return None
    policy = clone(template)
    X, n_actions, _, (actions, rewards, weight) = policy._validated(
        X, True, mask, (actions, rewards, weight)
    )
    policy._initialize(X, n_actions)
    n_rows, counts = X.shape[0], np.bincount(actions, minlength=n_actions)
    index, start = phase
    if index != policy.phase_:
        policy._enter_phase(index)  # this phase's members and scale
    keep = slice(max(0, start - offset), X.shape[0])  # rows of completed phases go
    n_keep = X.shape[0] - keep.start
    m, d = policy.n_models_, policy._ridge.moment.shape[1]
    sums = np.zeros((policy._n_blocks, d, d + 1 + m))
    if n_keep > 0:
        X, actions, rewards = X[keep], actions[keep], rewards[keep]
        w = np.ones(n_keep) if weight is None else weight[keep]
        noise = np.random.default_rng([policy._noise_seed, index, k])
        z = policy.perturbation_scale_ * noise.standard_normal((n_keep, m))
        rows = policy._design(policy._chosen_features(X, actions))
        wz = np.sqrt(w)[:, None] * z  # see LinES's Notes on weights
        values = np.column_stack([w[:, None] * rows, w * rewards, wz])
        sums = _block_sums(policy._arm_blocks[actions], rows, policy._n_blocks, values)
    return [n_rows, counts, sums, policy]


def _merge(*parts):
    return add_parts(parts, 3)  # row count, arm counts, block sums


def _offsets(chunks):
    return np.concatenate([[0], np.cumsum(chunks)[:-1]]).astype(np.int64)


def ensemble_setup(template, partitions, row_chunks):
    """The template with an integer ``random_state`` (one perturbation seed for
    every partition's copy, drawn as fit draws it), the phase ``(index, first
    row)`` the rows end in, and the partitions' first rows (for ``"anytime"``)."""
    if not isinstance(template.random_state, int | np.integer):
        seed = check_random_state(template.random_state).randint(np.iinfo(np.int32).max)
        template = clone(template).set_params(random_state=int(seed))
    if template._anytime:
        return template, _phase(template, int(sum(row_chunks))), _offsets(row_chunks)
    return template, (0, 0), np.zeros(len(partitions), dtype=np.int64)


def lin_es_fit(template, partitions, row_chunks):
    """The fitted LinES from the delayed ``partitions`` (see the module).

    ``row_chunks`` are the partitions' row counts (needed, and then known, only for
    ``horizon="anytime"``, whose phase depends on the number of rows).
    """
    template, phase, offsets = ensemble_setup(template, partitions, row_chunks)
    shared = dask.delayed(template)
    parts = [
        dask.delayed(_partition_sums)(shared, phase, k, int(offsets[k]), *part)
        for k, part in enumerate(partitions)
    ]
    merged = compute_fused(tree(parts, _merge), parts)
    if merged is None:
        raise ValueError("Found array with 0 sample(s): the logs are empty.")
    n_rows, counts, sums, policy = merged
    if policy.phase_ != phase[0]:
        policy._enter_phase(phase[0])
    # The copy drew its phase's prior (as in memory) and learned nothing yet.
    ridge, d = policy._ridge, sums.shape[1]
    ridge.precision = ridge.precision + sums[:, :, :d]
    ridge.moment = ridge.moment + sums[:, :, d]
    with np.errstate(all="ignore"):
        try:
            ridge.covariance = np.linalg.inv(ridge.precision)
        except np.linalg.LinAlgError:
            ridge.covariance = np.full_like(ridge.precision, np.nan)
    noise_moment = policy._noise_moment + sums[:, :, d + 1 :].transpose(2, 0, 1)
    finite = np.all(np.isfinite(ridge.covariance)) and np.all(np.isfinite(noise_moment))
    if not finite:
        raise NumericalError(
            "The summed ridge statistics are not invertible or not finite (is alpha "
            "> 0 and are the features bounded?); the policy was left unchanged."
        )
    policy._noise_moment = noise_moment
    policy._coef = ridge.perturbed_coef(noise_moment)
    policy._perturbations = None  # drawn and kept on the workers
    policy.n_samples_seen_, policy.action_counts_ = n_rows, counts
    return policy
