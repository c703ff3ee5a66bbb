"""Online standardisation of contexts: per-feature running mean and variance.

A bandit sees its contexts one batch at a time, so no scaler can be fitted in
advance. A policy that standardises (its ``standardize`` parameter) keeps the
running moments of every context row it has learned from, as an immutable
:class:`ContextMoments` (rebound, never written: the call's snapshot rolls it back).

Rows are scaled **prequentially**: a learning row is scaled by the moments of the
rows up to and including its own round, which the batch extends one round at a
time, so a batch learned in one call or in chunks sees the same scaled rows (up to
rounding), and ``partial_fit`` in chunks equals ``fit``. ``select`` and the
predictions scale by the moments of every row learned so far and teach them nothing.
A learning batch can also be had as ``select`` scaled it (each round by the moments
before it, ``learn(..., as_selected=True)``): CN-UCB and CN-TS update ``Z`` with it.

Per-arm contexts ``(n, K, d)`` count all ``K`` rows of a round (the arms' features
were all observed); a constant feature (zero variance so far) is centred only.

Standardised values are clipped to ``[-CLIP, CLIP]`` (5 standard deviations). A
feature that is almost always 0 (a pixel at the edge of a digit) has a tiny
standard deviation, so its rare non-zero values land tens of deviations out
(up to ``sqrt(n)`` after ``n`` rows: 32 on digits, where one row's squared norm
reached 20 times the mean's); such a row dominates a gradient step or a kernel
distance. Clipping bounds every value, of ``select``'s rows too (a feature
constant so far is only centred), and leaves well-scaled features alone: a
Gaussian feature is beyond 5 deviations once in 1.7 million rows.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from skbandit.utils._param_validation import StrOptions

__all__ = [
    "STANDARDIZE_CONSTRAINT",
    "ContextMoments",
    "grouping_rows",
    "standardize_doc",
    "standardized",
    "standardizes",
]

#: A variance at most this fraction of the squared mean is rounding: scale 1.
_RELATIVE_FLOOR = 1e-12

#: Standardised values are clipped to ``[-CLIP, CLIP]``.
CLIP = 5.0


@dataclass(frozen=True)
class ContextMoments:
    """Count and sums of the rows learned so far, about the first row learned.

    Sums about a fixed shift (the first row) are accurate for data whose spread is
    not tiny against its offset, and a batch learned in chunks adds its rows in
    the same order as in one call, so both give the same bits.

    Parameters
    ----------
    count : int
        Rows seen (a per-arm round counts its ``K`` rows).
    shift : ndarray of shape (n_features,)
        The first row learned (zeros before it).
    first : ndarray of shape (n_features,)
        Sum of the rows' deviations from ``shift``.
    second : ndarray of shape (n_features,)
        Sum of their squares.
    """

    count: int
    shift: np.ndarray
    first: np.ndarray
    second: np.ndarray

    @classmethod
    def empty(cls, n_features):
        """No rows yet: scaling is the identity."""
        zeros = np.zeros(n_features)
        return cls(0, zeros, zeros, zeros)

    @property
    def mean_(self):
        """Per-feature mean of the rows learned (zeros before any)."""
        return self.shift + self.first / max(self.count, 1)

    @property
    def scale_(self):
        """Per-feature standard deviation (1 where the variance is 0 or no rows)."""
        return _scales(self.shift, self.first, self.second, max(self.count, 1))

    def scale(self, X, dtype):
        """``X`` standardised by these moments (``select``, the predictions)."""
        if self.count == 0:
            return X
        scaled = _clipped((X - self.mean_) / self.scale_)
        return scaled.astype(dtype, copy=False)

    def learn(self, X, dtype, *, as_selected=False):
        """Scale the learning rows ``X`` prequentially and return the new moments.

        Row ``i`` (with the other arms of its round) is scaled by the moments of
        every row up to its round.

        Parameters
        ----------
        X : ndarray of shape (n, d) or (n, K, d)
        dtype : numpy dtype
            Of the scaled rows.
        as_selected : bool, default=False
            Also return the rows as ``select`` scaled them: each round by the moments
            of the rows *before* it (the rows as given before any row is learned),
            bit for bit what :meth:`scale` gives with those moments.

        Returns
        -------
        scaled : ndarray of the shape of ``X``, of ``dtype``
        moments : ContextMoments
            The moments including ``X``.
        selected : ndarray of the shape of ``X``, of ``dtype``
            Only with ``as_selected``.
        """
        n = X.shape[0]
        per_round = 1 if X.ndim == 2 else X.shape[1]
        rows = np.asarray(X, dtype=np.float64).reshape(n, per_round, -1)
        shift = self.shift if self.count else rows[0, 0]
        deviations = rows - shift
        # the earlier sums lead each cumulative sum: the same additions, in the
        # same order, as when the rows arrive in one call; entry t holds the sums
        # before round t (entry 0: this object's own)
        first = np.cumsum(np.vstack([self.first, deviations.sum(axis=1)]), axis=0)
        second = np.cumsum(
            np.vstack([self.second, (deviations * deviations).sum(axis=1)]), axis=0
        )
        counts = (self.count + per_round * np.arange(n + 1))[:, None]
        # max(count, 1), as mean_ and scale_: before any row the moments go unused
        means = shift + first / np.maximum(counts, 1)
        scales = _scales(shift, first, second, np.maximum(counts, 1))
        scaled = _clipped((rows - means[1:, None, :]) / scales[1:, None, :])
        moments = ContextMoments(int(counts[-1, 0]), shift, first[-1], second[-1])
        scaled = scaled.reshape(X.shape).astype(dtype, copy=False)
        if not as_selected:
            return scaled, moments
        selected = _clipped((rows - means[:-1, None, :]) / scales[:-1, None, :])
        if self.count == 0:  # the first round: as given, as scale() returns it
            selected[0] = rows[0]
        return scaled, moments, selected.reshape(X.shape).astype(dtype, copy=False)

    def followed_by(self, later):
        """The moments of these rows, then ``later``'s (sums about either's first
        row, moved to this one's): what a fit over partitions learned in turn
        starts each partition from. Equal to learning the rows in one call up to
        the rounding of the move."""
        if self.count == 0:
            return later
        if later.count == 0:
            return self
        move = later.shift - self.shift
        first = self.first + later.first + later.count * move
        second = (
            self.second + later.second + move * (2 * later.first + later.count * move)
        )
        return ContextMoments(self.count + later.count, self.shift, first, second)


def _clipped(deviations):
    """``deviations`` clipped to ``[-CLIP, CLIP]``, infinities kept: the online fast
    path skips the finiteness scan and counts on a non-finite input staying
    non-finite until a hook's check sees it (NaN stays NaN through ``np.clip``)."""
    clipped = np.clip(deviations, -CLIP, CLIP)
    return np.where(np.isinf(deviations), deviations, clipped)


def _scales(shift, first, second, count):
    """Standard deviations from sums about ``shift``; 1 where the variance is 0
    (or rounding: at most ``_RELATIVE_FLOOR`` of the squared mean, plus one)."""
    offset = first / count
    variance = np.maximum(second / count - offset * offset, 0.0)
    mean = shift + offset
    floor = _RELATIVE_FLOOR * (mean * mean + 1.0)
    return np.where(variance > floor, np.sqrt(np.maximum(variance, floor)), 1.0)


#: Decimals kept of a standardised learning row that a policy groups with its
#: equals (values within 5 deviations): a billionth of a standard deviation.
GROUPING_DECIMALS = 9


def grouping_rows(policy, rows):
    """A standardising ``policy``'s learning ``rows`` kept to
    :data:`GROUPING_DECIMALS` decimals (others as given), for the policies that
    merge equal rows into groups (the logistic GLMs, GLM-ES): a raw row that repeats
    under moments that have not moved (a fixed arm set's, constant after its first
    round) then repeats bit for bit and joins its group. Without it, the moments'
    rounding (1e-14) made every round's rows new and an update's cost grew with the
    rounds."""
    if policy._context_moments is None:
        return rows
    return np.round(rows, GROUPING_DECIMALS)


def standardizes(policy):
    """Whether ``policy``'s ``standardize`` (absent: never) standardises dense
    contexts: ``"auto"`` by the class flag ``_standardize_auto``."""
    setting = getattr(policy, "standardize", False)
    return bool(policy._standardize_auto if setting == "auto" else setting)


def standardized(policy, X, *, reset, learn):
    """``policy``'s validated contexts ``X``, standardised online when it standardises.

    Its ``standardize`` parameter (absent: never) decides on the first call
    (``reset``), ``"auto"`` by the class flag ``_standardize_auto``; the choice and
    the moments, ``policy._context_moments`` (``None``: not standardising), are
    rebound, never written. Learning rows (``learn``) extend the moments; other
    rows are scaled by them. A policy whose first batch is ``scipy.sparse`` never
    standardises (centring would densify every batch); one that standardises a
    dense history densifies a later sparse batch, so that its rows are scaled as
    the rows it learned from (read as given, they would mix two scales in one
    model, silently). A policy whose class sets ``_keeps_rows_as_selected`` also
    gets its learning rows as ``select`` scaled them (by the moments before each
    round), as ``policy._rows_as_selected``, for its update to take (and remove).
    """
    if reset:
        on = standardizes(policy) and not sparse.issparse(X)
        policy._context_moments = ContextMoments.empty(X.shape[-1]) if on else None
    moments = policy._context_moments
    if moments is None:
        return X
    if sparse.issparse(X):
        X = X.toarray()  # as wide as the dense batches this policy learned from
    if not learn:
        return moments.scale(X, policy._context_dtype)
    if getattr(policy, "_keeps_rows_as_selected", False) and X.shape[0]:
        # for the policy's update, which pops it (see CombinatorialNeuralPolicy)
        X, policy._context_moments, policy._rows_as_selected = moments.learn(
            X, policy._context_dtype, as_selected=True
        )
        return X
    X, policy._context_moments = moments.learn(X, policy._context_dtype)
    return X


#: The ``standardize`` parameter's constraint, for ``_parameter_constraints``.
STANDARDIZE_CONSTRAINT = {"standardize": ["boolean", StrOptions({"auto"})]}


def standardize_doc(auto=True):
    """The numpydoc entry of ``standardize``, for a ``%(standardize)s`` marker."""
    what = (
        "does so for this policy"
        if auto
        else "reads them as given for this policy (a per-feature prior, no more)"
    )
    return f"""standardize : bool or "auto", default="auto"
    Standardise the contexts online, so that raw features need no scaler:
    each feature by the running mean and standard deviation of the contexts
    learned from so far (a learning row by those up to its own round),
    clipped to 5 standard deviations.
    ``"auto"`` {what}; ``False`` reads the contexts as given.
    See :ref:`raw_features`."""
