"""Off-policy estimates over Dask collections: per-partition moments, combined exactly.

Every estimator of :mod:`skbandit.evaluation._ope` is ``mean(d_i) + sum(c_i) /
sum(m_i)`` over per-round terms ``z_i = (d_i, c_i, m_i)``. Its value needs the sums of
``z``, and its analytic standard error the sum of squared influence terms, which is
the quadratic form ``u^T M u`` of the centred co-moment matrix ``M = sum (z_i - zbar)
(z_i - zbar)^T`` with a vector ``u`` set by the sums (see
:meth:`_MomentTerms.sum_squared_influence`). So each partition returns 14 numbers
(its row count, matched rounds, ``sum z`` and its own centred ``M``), computed on the
worker by the in-memory code itself (``_terms`` on the partition's rows, with all
of its validation); the client merges them with Chan, Golub and LeVeque's pairwise
update, exact up to rounding. No row reaches the client.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from dataclasses import dataclass

import dask.array as da
import numpy as np
from numpy.typing import NDArray

from skbandit._dask import NO_BOOTSTRAP_ON_DASK, is_dask
from skbandit._dask._fuse import one_task_per_block

__all__ = ["dask_terms", "propensity_range", "row_aligned"]

#: Per-partition moments: rows, matched rows, sum z (3), centred co-moments (3 x 3).
_N_MOMENTS = 14


# ----------------------------------------------------------------- row alignment
def _as_dask_array(arr):
    """A Dask array of a Dask array, DataFrame or Series; None for anything else."""
    if arr is None or not is_dask(arr):
        return None
    if isinstance(arr, da.Array):
        return arr
    if hasattr(arr, "to_dask_array"):  # Dask DataFrame or Series
        return arr.to_dask_array()
    raise TypeError(
        f"Expected a Dask array, DataFrame or Series, got {type(arr).__name__}."
    )


def _known_chunks(arr: da.Array) -> bool:
    return not any(np.isnan(c) for c in arr.chunks[0])


def row_aligned(*arrays):
    """The arrays as Dask arrays cut into the same row partitions (None stays None).

    Dask inputs keep their partitions; numpy inputs are cut like the first Dask
    input. Inputs of unknown partition sizes (a DataFrame's columns) are used as
    they are when every input has as many partitions; otherwise their sizes are
    computed first (one pass over them). Other axes than the rows get one chunk.
    """
    as_dask = [_as_dask_array(a) for a in arrays]
    present = [a for a in as_dask if a is not None]
    if not present:
        raise TypeError("row_aligned needs at least one Dask collection.")
    ref = present[0]
    n_blocks = {a.numblocks[0] for a in present}
    needs_sizes = any(a is not None and not is_dask(a) for a in arrays) or (
        len(n_blocks) > 1 and not all(_known_chunks(a) for a in present)
    )
    if needs_sizes:
        # Numpy inputs are cut like ref, which needs its partition sizes known.
        as_dask = [
            a.compute_chunk_sizes() if a is not None and not _known_chunks(a) else a
            for a in as_dask
        ]
        ref = next(a for a in as_dask if a is not None)
    out = []
    for raw, arr in zip(arrays, as_dask, strict=True):
        if raw is None:
            out.append(None)
            continue
        if arr is None:  # numpy or list: cut like ref
            raw = np.asarray(raw)
            chunks = (ref.chunks[0], *((-1,) * (raw.ndim - 1)))
            arr = da.from_array(raw, chunks=chunks)
        if any(n > 1 for n in arr.numblocks[1:]):
            arr = arr.rechunk({i: -1 for i in range(1, arr.ndim)})
        out.append(arr)
    present = [a for a in out if a is not None]
    if all(_known_chunks(a) for a in present):  # one cut for all: blockwise's own
        # rows share index "i"; every other axis gets a letter of its own
        letters = iter("abcdefghjklmnopq")
        pairs = [
            (a, "i" + "".join(next(letters) for _ in a.shape[1:])) for a in present
        ]
        _, unified = da.core.unify_chunks(*(x for pair in pairs for x in pair))
        unified = iter(unified)
        out = [None if a is None else next(unified) for a in out]
    return out


# ---------------------------------------------------------------- per partition
def _centred_moments(parts: list) -> tuple[NDArray, NDArray]:
    """``sum z`` and the centred co-moments of the three parts' columns, a part of
    None a column of zeros: only the present parts are stacked, as rows (each sum
    pairwise over contiguous memory; one GEMM of (k, n) by (n, k) for the
    co-moments), not an (n, 3) copy with its zero columns."""
    present = [i for i, part in enumerate(parts) if part is not None]
    sums, comoments = np.zeros(3), np.zeros((3, 3))
    if not present:
        return sums, comoments
    z = np.stack([parts[i] for i in present]).astype(np.float64, copy=False)
    sums[present] = z.sum(axis=1)
    z -= (sums[present] / z.shape[1])[:, None]
    comoments[np.ix_(present, present)] = z @ z.T
    return sums, comoments


def _partition_moments(
    ap, act, rew, prop, q, *, method, clip, tau, in_memory, block_id=None
):
    """The 14 moments of one partition, computed by the in-memory terms."""
    out = np.zeros((1, _N_MOMENTS))
    n = ap.shape[0]
    if n == 0:  # an empty partition (a filtered DataFrame's) adds nothing
        return out
    column = None if act is None else act[:, 0]
    try:
        terms = in_memory(
            method,
            ap,
            column,
            None if rew is None else rew[:, 0],
            None if prop is None else prop[:, 0],
            q,
            clip,
            tau,
        )
    except ValueError as exc:
        raise ValueError(
            f"In partition {block_id[0]} (rows counted from its start): {exc}"
        ) from exc
    sums, comoments = _centred_moments([terms.direct, terms.ratio_num, terms.ratio_den])
    out[0, 0] = n
    out[0, 1] = 0 if terms.n_matched is None else terms.n_matched
    out[0, 2:5] = sums
    out[0, 5:] = comoments.ravel()
    return out


def _merge(moments: NDArray) -> tuple[int, int, NDArray, NDArray]:
    """Chan, Golub and LeVeque's pairwise merge of the partitions' moments."""
    n, matched = 0.0, 0.0
    sums, comoments = np.zeros(3), np.zeros((3, 3))
    for row in moments:
        n_b = row[0]
        if n_b == 0:
            continue
        sums_b, comoments_b = row[2:5], row[5:].reshape(3, 3)
        if n:
            delta = sums_b / n_b - sums / n
            comoments = (
                comoments + comoments_b + np.outer(delta, delta) * (n * n_b / (n + n_b))
            )
        else:
            comoments = comoments_b.copy()
        n, matched, sums = n + n_b, matched + row[1], sums + sums_b
    return int(n), int(matched), sums, comoments


# ------------------------------------------------------------------ the estimate
@dataclass(frozen=True)
class _MomentTerms:
    """``_Terms``'s estimate from merged moments rather than per-round arrays.

    ``has`` says which of the parts (direct, ratio numerator, ratio denominator)
    the estimator has, as ``_Terms``'s None entries do.
    """

    n_samples: int
    n_matched: int | None
    sums: NDArray
    comoments: NDArray
    has: tuple[bool, bool, bool]

    def value(self) -> float:
        n = self.n_samples
        has_direct, has_num, has_den = self.has
        out = float(self.sums[0] / n) if has_direct else 0.0
        if not has_num:
            return out
        if not has_den:
            return out + float(self.sums[1] / n)
        total = self.sums[2]
        return out + (float(self.sums[1] / total) if total > 0 else 0.0)

    def sum_squared_influence(self) -> float:
        """``sum phi_i^2`` of ``_Terms.influence``, as ``u^T M u``.

        With a denominator, ``phi_i = (d_i - dbar) + (c_i - R m_i) / mbar`` and
        ``c_i - R m_i = (c_i - cbar) - R (m_i - mbar)`` since ``R = sum c / sum m``:
        ``u = (1, 1 / mbar, -R / mbar)``. Without one, ``u = (1, 1, 0)``.
        """
        has_direct, has_num, has_den = self.has
        u = np.array([1.0 if has_direct else 0.0, 0.0, 0.0])
        if has_num and not has_den:
            u[1] = 1.0
        elif has_num:
            mean_den = self.sums[2] / self.n_samples
            if mean_den > 0:
                ratio = self.sums[1] / self.sums[2]
                u[1:] = 1.0 / mean_den, -ratio / mean_den
        return float(max(u @ self.comoments @ u, 0.0))

    def bootstrap(self, counts: NDArray) -> NDArray:
        raise ValueError(NO_BOOTSTRAP_ON_DASK)


#: Which parts (direct, ratio numerator, ratio denominator) each estimator has.
_PARTS = {
    "ips": (False, True, False),
    "snips": (False, True, True),
    "replay": (False, True, True),
    "dm": (True, False, False),
    "dr": (True, True, False),
    "sndr": (True, True, True),
    "switch-dr": (True, True, False),
}


def dask_terms(
    method,
    action_proba,
    actions,
    rewards,
    propensities,
    expected_rewards=None,
    clip=None,
    tau=None,
    *,
    in_memory,
    methods,
) -> _MomentTerms:
    """``in_memory`` (the evaluation's ``_terms``) over Dask collections: one pass
    on the workers, moments back. The evaluation passes its ``_terms`` and its
    ``methods``: this backend imports nothing of it (no import circle)."""
    if method not in _PARTS:
        raise ValueError(f"method must be one of {methods}, got {method!r}.")
    if action_proba is None or np.ndim(action_proba) != 2:
        raise ValueError(
            "action_proba must be 2-D of shape (n_samples, n_actions), got shape "
            f"{np.shape(action_proba)}."
        )
    if method != "dm":
        for name, arr in (("actions", actions), ("rewards", rewards)):
            if arr is None:
                raise ValueError(f"{name} is required by method={method!r}.")
    if method in ("dm", "dr", "sndr", "switch-dr") and expected_rewards is None:
        raise ValueError(
            "expected_rewards is required: pass a reward model's predictions of "
            "shape (n_samples, n_actions)."
        )
    ap, act, rew, prop, q = row_aligned(
        action_proba, actions, rewards, propensities, expected_rewards
    )
    if q is not None and not np.isnan(ap.shape[1]) and q.shape[1] != ap.shape[1]:
        raise ValueError(
            "expected_rewards must have the shape of action_proba; got "
            f"{q.shape[1]} columns against {ap.shape[1]}."
        )
    columns = [None if a is None else a[:, None] for a in (act, rew, prop)]
    moments = da.map_blocks(
        _partition_moments,
        ap,
        *columns,
        q,
        method=method,
        clip=clip,
        tau=tau,
        in_memory=in_memory,
        chunks=((1,) * ap.numblocks[0], (_N_MOMENTS,)),
        dtype=np.float64,
        meta=np.empty((0, 0)),
    )
    moments = one_task_per_block(moments)  # one task per partition, from the read on
    n, matched, sums, comoments = _merge(moments.compute(optimize_graph=False))
    if n == 0:
        raise ValueError("Found array with 0 sample(s): the logs are empty.")
    return _MomentTerms(
        n, None if method == "dm" else matched, sums, comoments, _PARTS[method]
    )


def propensity_range(propensities) -> tuple[float, float]:
    """Minimum and maximum of a Dask column, computed on the workers."""
    (arr,) = row_aligned(propensities)
    low, high = da.compute(arr.min(), arr.max())
    return float(low), float(high)
