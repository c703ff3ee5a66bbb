"""A slate simulator with cascade feedback: the user clicks the first attractive arm."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from skbandit.environments._topk import TopKBandit

__all__ = ["CascadeBandit"]

#: Range of each score function ``h`` on the unit sphere, mapped onto [0, 1].
_RANGES = {
    "linear": (-1.0, 1.0),
    "logistic": (0.0, 1.0),
    "quadratic": (0.0, 1.0),
    "cosine": (-1.0, 1.0),
    "cosine_pi": (-1.0, 1.0),
    "distance": (-2.0, 0.0),
}


def cascade_value(attraction: ArrayLike, discounts: ArrayLike | None = None) -> NDArray:
    """Expected reward of slates shown to a cascading user, in closed form.

    The user scans the slate from position 0 and clicks the first arm she finds
    attractive; arm ``s_k`` attracts her with probability ``u_k``, independently.
    A click at position ``k`` earns ``psi_k``, no click earns 0, so the expected
    reward is ``sum_k psi_k u_k prod_{j<k} (1 - u_j)``.

    Parameters
    ----------
    attraction : array-like of shape (n_rounds, slate_size)
        Attraction probabilities ``u_k`` of the slate's arms, position 0 first.
    discounts : array-like of shape (slate_size,) or None, default=None
        Position discounts ``psi_k``; ``None`` for all ones (then the value is
        ``1 - prod_k (1 - u_k)``, the probability of a click).

    Returns
    -------
    value : ndarray of shape (n_rounds,)
        Expected reward of each slate.

    Examples
    --------
    >>> from skbandit.environments import cascade_value
    >>> cascade_value([[0.5, 0.5]])
    array([0.75])
    >>> cascade_value([[0.5, 0.5]], [1.0, 0.5])
    array([0.625])
    """
    u = np.asarray(attraction, dtype=np.float64)
    # P(the user reaches position k) = prod_{j<k} (1 - u_j).
    reach = np.cumprod(np.concatenate([np.ones_like(u[:, :1]), 1.0 - u[:, :-1]], 1), 1)
    clicks = reach * u
    if discounts is not None:
        clicks = clicks * np.asarray(discounts, dtype=np.float64)
    return clicks.sum(axis=1)


class CascadeBandit(TopKBandit):
    """Slates of ``slate_size`` arms under the cascade click model.

    The cascade model of Kveton et al., "Cascading bandits" (ICML 2015), with the
    position discounts of Algorithm 7 of Hwang, Chai and Oh, "Combinatorial Neural
    Bandits" (ICML 2023), Appendix G, on the contexts of :class:`TopKBandit`: every
    round shows ``N = n_actions`` contexts uniform on the unit sphere; arm ``i``
    attracts the user with probability

    ``u_i = max_attraction * (h(x_i) - lo) / (hi - lo)``

    where ``[lo, hi]`` is the range of ``h`` (``[-1, 1]`` for ``"linear"`` and the
    cosines, ``[0, 1]`` for ``"quadratic"``), so ``u_i`` lies in
    ``[0, max_attraction]``. Arms attract independently (one uniform per arm and
    round, drawn with the round: common random numbers). The user scans the slate
    from position 0 and clicks the first attractive arm, at position ``F``; she
    does not look further. The feedback of :meth:`rewards` is, per slot ``k``,
    ``psi_k`` at the click, 0 before it, ``NaN`` after it (not observed), and 0 in
    every slot when nothing was clicked. The slate earns ``psi_F`` (0 without a
    click), of expectation :func:`cascade_value`.

    With non-increasing discounts, the ``K`` most attractive arms in descending
    order of attraction are an optimal slate (an exchange argument: swapping two
    adjacent arms changes the value by ``(psi_k - psi_{k+1})(u_a - u_b)``), which is
    what the :class:`~skbandit.oracles.Cascade` oracle chooses from the policy's
    scores; a policy given ``oracle=Cascade(position_discounts)`` learns ``u``
    from ``feedback / psi_k``. :meth:`optimal_value`, :meth:`slate_value` and
    :meth:`regret` are exact, and :func:`~skbandit.evaluation.simulate` reports
    this regret.

    Parameters
    ----------
    reward : {"linear", "quadratic", "cosine_pi", "cosine", "logistic", \
            "distance"}, default="linear"
        The score function ``h`` (see :class:`SyntheticBandit`), mapped onto
        attraction probabilities.
    n_actions : int, default=20
        Number of base arms ``N``.
    n_features : int, default=10
        Context dimension ``d``.
    slate_size : int, default=4
        Arms per slate ``K``.
    position_discounts : array-like of shape (slate_size,) or None, default=None
        Non-increasing discounts ``psi_k`` in (0, 1] of a click at position ``k``;
        ``None`` for all ones (the plain cascade).
    max_attraction : float, default=1.0
        Largest attraction probability, in (0, 1]: smaller values make users scan
        deeper.
    random_state : int, RandomState instance or None, default=None
        Seed used by :meth:`reset` when it is called without one.

    See Also
    --------
    TopKBandit : The same contexts with every chosen score observed.
    skbandit.oracles.Cascade : The oracle of this model.

    Examples
    --------
    >>> from skbandit.environments import CascadeBandit
    >>> env = CascadeBandit(n_actions=6, n_features=5, slate_size=3).reset(0)
    >>> env.contexts(2).shape
    (2, 6, 5)
    >>> env.rewards([[0, 1, 2], [3, 4, 5]]).shape
    (2, 3)
    >>> env.regret(env.optimal_slates()).tolist()
    [0.0, 0.0]
    """

    def __init__(
        self,
        reward="linear",
        n_actions=20,
        n_features=10,
        *,
        slate_size=4,
        position_discounts=None,
        max_attraction=1.0,
        random_state=None,
    ):
        if reward not in _RANGES:
            raise ValueError(
                f"reward must be one of {tuple(_RANGES)} (a bounded h), got {reward!r}."
            )
        super().__init__(
            reward,
            n_actions,
            n_features,
            slate_size=slate_size,
            noise=0.0,
            random_state=random_state,
        )
        if position_discounts is not None:
            psi = np.asarray(position_discounts, dtype=np.float64)
            if psi.shape != (self.slate_size,):
                raise ValueError(
                    f"position_discounts must have shape (slate_size,)="
                    f"({self.slate_size},), got {psi.shape}."
                )
            if not (np.all(psi > 0) and np.all(psi <= 1) and np.all(np.diff(psi) <= 0)):
                raise ValueError(
                    "position_discounts must be non-increasing and in (0, 1], "
                    f"got {psi.tolist()}."
                )
            position_discounts = psi
        if not 0 < max_attraction <= 1:
            raise ValueError(
                f"max_attraction must be in (0, 1], got {max_attraction!r}."
            )
        self.position_discounts = position_discounts
        self.max_attraction = float(max_attraction)

    def _draw(self, n_rounds, rng):
        X, h, _ = super()._draw(n_rounds, rng)
        lo, hi = _RANGES[self.reward]
        attraction = self.max_attraction * np.clip((h - lo) / (hi - lo), 0.0, 1.0)
        # Whether each arm would attract the user this round, drawn with the round.
        self._attracts = rng.random_sample(attraction.shape) < attraction
        return X, attraction, None

    def _discounts(self) -> NDArray:
        if self.position_discounts is None:
            return np.ones(self.slate_size)
        return self.position_discounts

    def rewards(self, slates: ArrayLike) -> NDArray:
        """Cascade feedback of each slate: the click and what was seen before it.

        Parameters
        ----------
        slates : array-like of shape (n_rounds, slate_size)
            Distinct arms shown in each current round, position 0 first.

        Returns
        -------
        feedback : ndarray of shape (n_rounds, slate_size)
            ``psi_k`` at the clicked position, 0 at the positions scanned before
            it, ``NaN`` after it; all 0 when nothing was clicked. The slate's
            reward is the ``nansum`` of its row.
        """
        slates = self._check_slates(slates)
        self._rounds()
        rows = np.arange(slates.shape[0])[:, None]
        attracts = self._attracts[rows, slates]
        clicked = attracts.any(axis=1)
        first = np.where(clicked, attracts.argmax(axis=1), self.slate_size)
        position = np.arange(self.slate_size)
        feedback = np.where(position == first[:, None], self._discounts(), 0.0)
        return np.where(position > first[:, None], np.nan, feedback)

    def slate_value(self, slates: ArrayLike) -> NDArray:
        """Expected reward of each slate, (n_rounds,) (:func:`cascade_value`).

        Parameters
        ----------
        slates : array-like of shape (n_rounds, slate_size)
            Distinct arms shown in each current round, position 0 first.

        Returns
        -------
        value : ndarray of shape (n_rounds,)
            Expected reward ``sum_k psi_k u_{s_k} prod_{j<k} (1 - u_{s_j})``.
        """
        slates = self._check_slates(slates)
        u = self._rounds().expected_rewards
        return cascade_value(
            u[np.arange(slates.shape[0])[:, None], slates], self._discounts()
        )

    def optimal_slates(self) -> NDArray:
        """The best slate of each current round: the most attractive arms, best first.

        Returns
        -------
        slates : ndarray of shape (n_rounds, slate_size)
            Arms in descending order of attraction.
        """
        u = self._rounds().expected_rewards
        return np.argsort(-u, axis=1, kind="stable")[:, : self.slate_size]

    def optimal_value(self) -> NDArray:
        """Expected reward of the best slate of each current round, (n_rounds,).

        Returns
        -------
        value : ndarray of shape (n_rounds,)
            :meth:`slate_value` of :meth:`optimal_slates`.
        """
        return self.slate_value(self.optimal_slates())

    def __repr__(self) -> str:
        return (
            f"CascadeBandit(reward={self.reward!r}, n_actions={self.n_actions}, "
            f"n_features={self.n_features}, slate_size={self.slate_size})"
        )
