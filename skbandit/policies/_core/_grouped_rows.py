"""History stored as groups of identical rows: the sufficient statistics of PHE, GLMs.

Rows with the same parameter block and the same feature vector are merged into one group
holding its (weighted) count ``T_g``, reward sum ``V_g`` and PHE pseudo-count ``M_g``.
With a fixed arm set (per-arm contexts that repeat every round) there are at most
``n_actions`` groups, so per-round costs do not grow with ``t`` (eq. 4 of Kveton et
al., UAI 2019);
with genuinely contextual rows each observation is its own group (the per-observation
form). No switch is needed: the data decide.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["GroupedRows", "pseudo_counts"]


def _ceil(values: NDArray) -> NDArray:
    # a * k for a float a and an integer k may land 1 ulp above an integer (0.7 * 10).
    return np.ceil(values - 1e-9 * np.maximum(1.0, np.abs(values)))


def pseudo_counts(
    actions: NDArray, weights: NDArray, seen: NDArray, scale: float
) -> tuple[NDArray, NDArray]:
    """Pseudo-reward counts of new observations, fixed at insertion (a Bresenham rule).

    The observation that brings action ``i``'s cumulative weight from ``W`` to
    ``W + w`` gets ``ceil(a (W + w)) - ceil(a W)`` pseudo-rewards, so after ``T`` unit
    observations action ``i`` has exactly ``ceil(a T)`` of them (the paper's
    ``B(ceil(a T_i), 1/2)`` for non-integer ``a``) and integer ``a`` gives ``a`` per
    observation (Algorithm 1).

    Parameters
    ----------
    actions : ndarray of shape (n,)
        Actions of the observations, in arrival order.
    weights : ndarray of shape (n,)
        Their weights (1 for an ordinary round).
    seen : ndarray of shape (n_actions,)
        Cumulative weight per action before these observations.
    scale : float
        Perturbation scale ``a``.

    Returns
    -------
    counts : ndarray of shape (n,), int64
        Pseudo-counts of the observations.
    seen : ndarray of shape (n_actions,)
        Updated cumulative weights (a new array).
    """
    order = np.argsort(actions, kind="stable")
    acts, w = actions[order], weights[order]
    csum = np.cumsum(w)
    start = np.r_[True, acts[1:] != acts[:-1]]
    first = np.flatnonzero(start)
    within = csum - (csum - w)[first][np.cumsum(start) - 1]
    after = seen[acts] + within
    counts = np.empty(actions.shape[0], dtype=np.int64)
    counts[order] = (_ceil(scale * after) - _ceil(scale * (after - w))).astype(np.int64)
    new_seen = seen + np.bincount(actions, weights, minlength=seen.shape[0])
    return counts, new_seen


def _filled(name: str, doc: str) -> property:
    """The first ``n_groups`` rows of the storage array ``name`` (the rest is room)."""
    return property(lambda self: getattr(self, name)[: self.n_groups], doc=doc)


@dataclass
class _Plan:
    ids: NDArray  # group id of every row
    new_rows: NDArray  # batch row opening each new group
    new_keys: list  # their dictionary keys


class GroupedRows:
    """Distinct ``(block, row)`` pairs with their summed statistics.

    ``plan`` and ``preview`` mutate nothing; ``commit`` writes, and cannot fail, so a
    policy calls it only once everything that may raise has run. Arrays grow by
    doubling, so a commit costs ``O(d)`` amortised per row.

    Parameters
    ----------
    n_dims : int
        Dimension of the rows.
    """

    def __init__(self, n_dims: int):
        self.n_groups = 0
        self._index: dict[bytes, int] = {}
        self._alloc(16, n_dims)

    def _alloc(self, capacity, n_dims):
        self._block = np.zeros(capacity, dtype=np.intp)
        self._X = np.zeros((capacity, n_dims))
        self._count = np.zeros(capacity)
        self._reward = np.zeros(capacity)
        self._pseudo = np.zeros(capacity, dtype=np.int64)

    block = _filled("_block", "Parameter block of each group, shape (n_groups,).")
    X = _filled("_X", "Feature row of each group, shape (n_groups, n_dims).")
    count = _filled(
        "_count", "Weighted number of real observations ``T_g``, shape (n_groups,)."
    )
    reward = _filled("_reward", "Weighted reward sum ``V_g``, shape (n_groups,).")
    pseudo = _filled("_pseudo", "Pseudo-reward count ``M_g``, (n_groups,), int64.")

    def plan(self, blocks: NDArray, X: NDArray) -> _Plan:
        """Find (or number) the group of every row, without writing anything."""
        n, d = X.shape
        keys = np.empty((n, d + 1))
        keys[:, 1:] = X + 0.0  # -0.0 and 0.0 share a group
        keys.view(np.int64)[:, 0] = blocks
        voids = (
            np.ascontiguousarray(keys).view(np.dtype((np.void, 8 * (d + 1)))).ravel()
        )
        uniq, first, inverse = np.unique(voids, return_index=True, return_inverse=True)
        uniq_ids = np.empty(uniq.shape[0], dtype=np.intp)
        new_rows, new_keys = [], []
        for j, key in enumerate(uniq):  # one dict look-up per distinct row
            key = key.tobytes()
            gid = self._index.get(key)
            if gid is None:
                gid = self.n_groups + len(new_keys)
                new_keys.append(key)
                new_rows.append(first[j])
            uniq_ids[j] = gid
        return _Plan(uniq_ids[inverse.ravel()], np.asarray(new_rows, np.intp), new_keys)

    def preview(self, plan, blocks, X, count, reward, pseudo, touched):
        """Groups of the blocks in ``touched`` after adding the rows, as new arrays.

        Returns ``(block, X, count, reward, pseudo)`` restricted to those groups.
        """
        old = np.flatnonzero(np.isin(self.block, touched))
        n_new = plan.new_rows.shape[0]
        local = np.full(self.n_groups + n_new, -1, dtype=np.intp)
        local[old] = np.arange(old.shape[0])
        local[self.n_groups :] = old.shape[0] + np.arange(n_new)
        out_block = np.r_[self.block[old], blocks[plan.new_rows]]
        out_X = np.concatenate([self.X[old], X[plan.new_rows]])
        out = []
        for base, add in (
            (self.count, count),
            (self.reward, reward),
            (self.pseudo, pseudo),
        ):
            arr = np.r_[base[old], np.zeros(n_new, dtype=base.dtype)]
            np.add.at(arr, local[plan.ids], add)
            out.append(arr)
        return (out_block, out_X, *out)

    def commit(self, plan, blocks, X, count, reward, pseudo) -> None:
        """Write the rows into their groups (call only once nothing else can fail)."""
        n_new = plan.new_rows.shape[0]
        needed = self.n_groups + n_new
        if needed > self._block.shape[0]:
            old = (self._block, self._X, self._count, self._reward, self._pseudo)
            self._alloc(max(needed, 2 * self._block.shape[0]), self._X.shape[1])
            for new_arr, old_arr in zip(
                (self._block, self._X, self._count, self._reward, self._pseudo),
                old,
                strict=True,
            ):
                new_arr[: self.n_groups] = old_arr[: self.n_groups]
        new = slice(self.n_groups, needed)
        self._block[new] = blocks[plan.new_rows]
        self._X[new] = X[plan.new_rows]
        self._count[new] = 0.0
        self._reward[new] = 0.0
        self._pseudo[new] = 0
        np.add.at(self._count, plan.ids, count)
        np.add.at(self._reward, plan.ids, reward)
        np.add.at(self._pseudo, plan.ids, pseudo)
        for offset, key in enumerate(plan.new_keys):
            self._index[key] = self.n_groups + offset
        self.n_groups = needed
