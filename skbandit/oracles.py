"""Slate oracles: from per-arm scores to a slate of distinct arms.

A slate policy (:class:`~skbandit.policies.CombLinUCB` and the other policies with a
``slate_size``) scores every arm and hands the scores to its ``oracle``, which
returns the slate: ``slate_size`` distinct arms, position 0 first. This is the
optimisation oracle ``O_S(v) = argmax_S R(S, v)`` of Hwang, Chai and Oh,
"Combinatorial Neural Bandits" (ICML 2023), section 2.2.

An oracle is any callable ``oracle(scores, slate_size, rng) -> slates``:

``scores``
    float array of shape ``(n_rounds, n_actions)``; unavailable arms are ``-inf``.
``slate_size``
    the number ``K`` of arms per slate.
``rng``
    a :class:`numpy.random.Generator` for random tie-breaking, or ``None`` for a
    deterministic answer.
``slates``
    int array of shape ``(n_rounds, slate_size)`` of distinct available arms.

A plain function is an (alpha-)approximation oracle (the paper's Remark 2): the
policy calls it as it is. The classes below add two optional methods the policies
use when present:

``inclusion_proba(scores, slate_size)``
    the exact probability of each arm being in the slate under random tie-breaking,
    shape ``(n_rounds, n_actions)``, for ``predict_action_proba`` of deterministic
    policies (otherwise Monte Carlo over the tie-breaks);
``slot_weights(slate_size)``
    the known weight ``w_k`` of each position in the feedback, shape
    ``(slate_size,)``: the score observed at position ``k`` is ``w_k v``, so a
    policy learns ``v`` from ``r / w_k`` with weight ``w_k^2`` (least squares on
    the feature ``w_k x``).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import linear_sum_assignment

from skbandit.exceptions import _non_finite_scores

__all__ = ["Cascade", "PositionBased", "TopK", "assignment_slates", "top_k_slates"]


def _check_scores(scores: ArrayLike) -> NDArray:
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2:
        raise ValueError(
            f"scores must have shape (n_rounds, n_actions), got {scores.shape}."
        )
    if np.isnan(scores).any() or np.isposinf(scores).any():
        raise _non_finite_scores()
    return scores


def top_k_slates(
    scores: ArrayLike, slate_size: int, rng: np.random.Generator | None = None
) -> NDArray[np.int64]:
    """The ``slate_size`` highest-scoring arms of each round, best first.

    Parameters
    ----------
    scores : array-like of shape (n_rounds, n_actions)
        Scores; ``-inf`` marks an unavailable arm.
    slate_size : int
        Arms per slate.
    rng : numpy.random.Generator or None, default=None
        Breaks ties uniformly at random; ``None`` breaks them by the lower index.

    Returns
    -------
    slates : ndarray of shape (n_rounds, slate_size), dtype int64
        Arms in descending order of score.

    Examples
    --------
    >>> from skbandit.oracles import top_k_slates
    >>> top_k_slates([[0.1, 0.9, 0.5, 0.3]], 2)
    array([[1, 2]])
    """
    scores = _check_scores(scores)
    if rng is None:
        order = np.argsort(-scores, axis=1, kind="stable")
    else:
        # Sort by score, then by a random key: uniform among tied arms.
        order = np.lexsort((rng.random(scores.shape), -scores), axis=-1)
    return order[:, :slate_size].astype(np.int64)


def _top_k_inclusion(scores: NDArray, slate_size: int) -> NDArray:
    """Exact inclusion probabilities of the random-tie top-K."""
    kth = -np.sort(-scores, axis=1)[:, slate_size - 1 : slate_size]
    above = scores > kth
    tied = scores == kth
    free = slate_size - above.sum(axis=1, keepdims=True)
    return above + tied * (free / tied.sum(axis=1, keepdims=True))


class TopK:
    """Exact top-K oracle: the ``K`` best arms, best first (the default oracle).

    Optimal for every reward that is a sum of the chosen arms' scores, the top-K
    semi-bandit of the combinatorial neural bandit paper; ties are broken at
    random.

    See Also
    --------
    PositionBased : Arm-by-position weights, solved as an assignment.
    Cascade : Top-K with cascade feedback.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.oracles import TopK
    >>> TopK()(np.array([[0.1, 0.9, 0.5]]), 2, None)
    array([[1, 2]])
    >>> TopK().inclusion_proba(np.array([[1.0, 1.0, 0.0]]), 1)
    array([[0.5, 0.5, 0. ]])
    """

    def __call__(self, scores, slate_size, rng=None):
        return top_k_slates(scores, slate_size, rng)

    def inclusion_proba(self, scores: ArrayLike, slate_size: int) -> NDArray:
        """Probability of each arm being in the slate, ties broken at random.

        Parameters
        ----------
        scores : array-like of shape (n_rounds, n_actions)
            Scores; ``-inf`` marks an unavailable arm.
        slate_size : int
            Arms per slate.

        Returns
        -------
        proba : ndarray of shape (n_rounds, n_actions)
            Rows sum to ``slate_size``.
        """
        return _top_k_inclusion(_check_scores(scores), slate_size)

    def slot_weights(self, slate_size: int) -> None:
        """Positions do not weigh the feedback: ``None``.

        Parameters
        ----------
        slate_size : int
            Arms per slate.
        """
        return None

    def __repr__(self) -> str:
        return "TopK()"

    def __eq__(self, other) -> bool:
        return type(other) is type(self)

    __hash__ = object.__hash__


def _check_weights(weights: ArrayLike, slate_size: int, name: str) -> NDArray:
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if w.shape != (slate_size,):
        raise ValueError(
            f"{name} must have one weight per position, slate_size={slate_size}; "
            f"got {w.shape[0]}."
        )
    if not (np.all(np.isfinite(w)) and np.all(w > 0)):
        raise ValueError(f"{name} must be positive and finite, got {w}.")
    return w


def assignment_slates(
    weights: ArrayLike, rng: np.random.Generator | None = None
) -> NDArray[np.int64]:
    """Best assignment of distinct arms to positions, one round at a time.

    Maximises ``sum_k W[t, s_k, k]`` over slates ``s`` of distinct arms with
    :func:`scipy.optimize.linear_sum_assignment` (exact, polynomial time).

    Parameters
    ----------
    weights : array-like of shape (n_rounds, n_actions, slate_size)
        Value of each arm at each position; an arm whose row holds ``-inf`` is
        unavailable.
    rng : numpy.random.Generator or None, default=None
        Breaks ties at random (by shuffling the arms); ``None``: lower index.

    Returns
    -------
    slates : ndarray of shape (n_rounds, slate_size), dtype int64
        The arm shown at each position.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.oracles import assignment_slates
    >>> W = np.array([[[1.0, 0.0], [0.0, 3.0], [2.0, 2.5]]])
    >>> assignment_slates(W)
    array([[2, 1]])
    """
    W = np.asarray(weights, dtype=np.float64)
    if W.ndim != 3:
        raise ValueError(
            f"weights must have shape (n_rounds, n_actions, slate_size), got {W.shape}."
        )
    n, n_actions, slate_size = W.shape
    slates = np.empty((n, slate_size), dtype=np.int64)
    for t in range(n):  # scipy solves one assignment at a time
        arms = np.flatnonzero(np.isfinite(W[t]).all(axis=1))
        if rng is not None:
            arms = rng.permutation(arms)
        if arms.size < slate_size:
            raise ValueError(
                f"round {t} has {arms.size} available arms, fewer than "
                f"slate_size={slate_size}."
            )
        rows, cols = linear_sum_assignment(W[t, arms], maximize=True)
        slates[t, cols] = arms[rows]
    return slates


class PositionBased:
    """Position-based model: arm ``i`` at position ``k`` is worth ``chi_k u_i``.

    The oracle solves the assignment of arms to positions that maximises
    ``sum_k chi_k u_{s_k}`` (the position-based model of Appendix G of the
    combinatorial neural bandit paper, with known position qualities ``chi``),
    exactly, with :func:`assignment_slates`. The feedback at position ``k`` is
    ``chi_k v``: :meth:`slot_weights` tells the policy to learn ``v`` from it.

    Parameters
    ----------
    position_weights : array-like of shape (slate_size,)
        Position qualities ``chi_k > 0`` (examination probabilities), position 0
        first. They need not decrease.

    See Also
    --------
    TopK : Positions that do not matter.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.oracles import PositionBased
    >>> oracle = PositionBased([0.5, 1.0])   # the second position is seen most
    >>> oracle(np.array([[0.1, 0.9, 0.5]]), 2, None)
    array([[2, 1]])
    """

    def __init__(self, position_weights):
        self.position_weights = position_weights

    def __call__(self, scores, slate_size, rng=None):
        scores = _check_scores(scores)
        chi = _check_weights(self.position_weights, slate_size, "position_weights")
        with np.errstate(invalid="ignore"):  # -inf * chi stays -inf
            weights = scores[:, :, None] * chi
        return assignment_slates(weights, rng)

    def slot_weights(self, slate_size: int) -> NDArray:
        """The position qualities ``chi``, shape (slate_size,).

        Parameters
        ----------
        slate_size : int
            Arms per slate.

        Returns
        -------
        weights : ndarray of shape (slate_size,)
            Weight of each position in the feedback.
        """
        return _check_weights(self.position_weights, slate_size, "position_weights")

    def __repr__(self) -> str:
        return (
            f"PositionBased(position_weights={list(np.ravel(self.position_weights))})"
        )

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and np.array_equal(
            self.position_weights, other.position_weights
        )

    __hash__ = object.__hash__


class Cascade(TopK):
    """Cascade model: top-K, best first; feedback stops after the first click.

    The user scans the slate from position 0 and stops at the first arm she
    likes: the arms after it are not observed, which the feedback marks with
    ``NaN`` (a policy skips those slots). The score observed at position ``k`` is
    discounted by a known ``psi_k`` (Algorithm 7 of the combinatorial neural bandit
    paper); with non-increasing discounts the top-K slate in descending order is
    optimal for the cascade's expected reward
    ``sum_k psi_k u_{s_k} prod_{j<k} (1 - u_{s_j})``.

    Parameters
    ----------
    position_discounts : array-like of shape (slate_size,) or None, default=None
        Discounts ``psi_k > 0``, non-increasing (position 0 first); ``None`` means
        no discount (all ones). Increasing discounts are rejected: the descending
        top-K slate is then not optimal, and this oracle would not be exact.

    See Also
    --------
    TopK : The same slates, with every slot observed.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.oracles import Cascade
    >>> Cascade([1.0, 0.5])(np.array([[0.1, 0.9, 0.5]]), 2, None)
    array([[1, 2]])
    """

    def __init__(self, position_discounts=None):
        self.position_discounts = position_discounts

    def __call__(self, scores, slate_size, rng=None):
        self.slot_weights(slate_size)  # the discounts are checked before any slate
        return super().__call__(scores, slate_size, rng)

    def slot_weights(self, slate_size: int) -> NDArray | None:
        """The discounts ``psi``, shape (slate_size,), or ``None`` without them.

        Parameters
        ----------
        slate_size : int
            Arms per slate.

        Returns
        -------
        weights : ndarray of shape (slate_size,) or None
            Weight of each position in the feedback.
        """
        if self.position_discounts is None:
            return None
        psi = _check_weights(self.position_discounts, slate_size, "position_discounts")
        if np.any(np.diff(psi) > 0):
            # Swapping the arms of positions k < j with psi_k < psi_j can raise
            # the expected reward, so descending top-K would not be the best slate.
            raise ValueError(
                "position_discounts must be non-increasing (position 0 first), for "
                f"the descending top-K slate to be optimal; got {psi}. Use "
                "PositionBased for positions whose weights need not decrease."
            )
        return psi

    def __repr__(self) -> str:
        if self.position_discounts is None:
            return "Cascade()"
        return f"Cascade(position_discounts={list(np.ravel(self.position_discounts))})"

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and np.array_equal(
            np.asarray(self.position_discounts, dtype=object),
            np.asarray(other.position_discounts, dtype=object),
        )

    __hash__ = object.__hash__
