"""The combinatorial top-K semi-bandit of Hwang, Chai and Oh (ICML 2023)."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral

import numpy as np
from numpy.typing import ArrayLike, NDArray

from skbandit.environments._synthetic import SyntheticBandit

__all__ = ["TopKBandit"]


class TopKBandit(SyntheticBandit):
    """Choose ``slate_size`` of ``n_actions`` arms; observe each chosen arm's score.

    Hwang, Chai and Oh, "Combinatorial Neural Bandits" (ICML 2023), section 4.1:
    every round shows ``N = n_actions`` contexts on the unit
    sphere; arm ``i`` scores ``v_i = h(x_i) + noise * N(0, 1)``; a slate ``S`` of
    ``K = slate_size`` distinct arms earns ``R(S, v) = sum_{i in S} v_i`` and the
    learner sees every ``v_i`` of ``S`` (semi-bandit feedback). The oracle is top-K,
    so the expected regret of a slate is the top-K sum of the expected scores minus
    the slate's.

    Parameters
    ----------
    reward : {"linear", "quadratic", "cosine_pi", ...}, default="cosine_pi"
        The score function ``h``; the paper uses ``"linear"`` (h1), ``"quadratic"``
        (h2) and ``"cosine_pi"`` (h3). See :class:`SyntheticBandit`.
    n_actions : int, default=20
        Number of base arms ``N``.
    n_features : int, default=80
        Context dimension ``d``.
    slate_size : int, default=4
        Arms per slate ``K``.
    noise : float, default=0.01
        Standard deviation of the score noise (the paper's code: 0.01).
    random_state : int, RandomState instance or None, default=None
        Seed used by :meth:`reset` when it is called without one.

    See Also
    --------
    SyntheticBandit : The single-arm version of the same problems.

    Examples
    --------
    >>> from skbandit.environments import TopKBandit
    >>> env = TopKBandit(n_actions=6, n_features=5, slate_size=2).reset(0)
    >>> env.contexts(3).shape
    (3, 6, 5)
    >>> env.rewards([[0, 1], [2, 3], [4, 5]]).shape
    (3, 2)
    """

    def __init__(
        self,
        reward="cosine_pi",
        n_actions=20,
        n_features=80,
        *,
        slate_size=4,
        noise=0.01,
        random_state=None,
    ):
        super().__init__(
            reward, n_actions, n_features, noise=noise, random_state=random_state
        )
        if not isinstance(slate_size, Integral) or not 1 <= slate_size <= n_actions:
            raise ValueError(
                f"slate_size must be an integer in [1, n_actions={n_actions}], "
                f"got {slate_size!r}."
            )
        self.slate_size = int(slate_size)

    def _check_slates(self, slates: ArrayLike) -> NDArray:
        slates = np.asarray(slates)
        n = self._rounds().expected_rewards.shape[0]
        if slates.shape != (n, self.slate_size):
            raise ValueError(
                f"slates must have shape (n_rounds, slate_size)=({n}, "
                f"{self.slate_size}); got {slates.shape}."
            )
        if slates.size and (slates.min() < 0 or slates.max() >= self.n_actions):
            raise ValueError(f"slates must hold arms in [0, {self.n_actions}).")
        if np.any(np.diff(np.sort(slates, axis=1), axis=1) == 0):
            raise ValueError("a slate must not repeat an arm.")
        return slates.astype(np.intp)

    def rewards(self, slates: ArrayLike) -> NDArray:
        """Semi-bandit feedback: the realised score of every arm of each slate.

        Parameters
        ----------
        slates : array-like of shape (n_rounds, slate_size)
            Distinct arms chosen in each current round.

        Returns
        -------
        scores : ndarray of shape (n_rounds, slate_size)
            Realised scores ``v_i`` of the chosen arms.
        """
        slates = self._check_slates(slates)
        rows = np.arange(slates.shape[0])[:, None]
        current = self._rounds()
        return current.expected_rewards[rows, slates] + self._noise[rows, slates]

    def optimal_value(self) -> NDArray:
        """Top-K sum of the expected scores of each current round, (n_rounds,).

        Returns
        -------
        value : ndarray of shape (n_rounds,)
            The oracle's expected reward.
        """
        h = self._rounds().expected_rewards
        return -np.sort(-h, axis=1)[:, : self.slate_size].sum(axis=1)

    def slate_value(self, slates: ArrayLike) -> NDArray:
        """Expected reward of each slate: the sum of its expected scores, (n_rounds,).

        Parameters
        ----------
        slates : array-like of shape (n_rounds, slate_size)
            Distinct arms chosen in each current round.

        Returns
        -------
        value : ndarray of shape (n_rounds,)
            ``sum_{i in S} h(x_i)``.
        """
        slates = self._check_slates(slates)
        h = self._rounds().expected_rewards
        return h[np.arange(slates.shape[0])[:, None], slates].sum(axis=1)

    def regret(self, slates: ArrayLike) -> NDArray:
        """Expected regret of each slate against the best slate, (n_rounds,).

        Parameters
        ----------
        slates : array-like of shape (n_rounds, slate_size)
            Distinct arms chosen in each current round.

        Returns
        -------
        regret : ndarray of shape (n_rounds,)
            ``optimal_value() - slate_value(slates)``.
        """
        return self.optimal_value() - self.slate_value(slates)

    def __repr__(self) -> str:
        return (
            f"TopKBandit(reward={self.reward!r}, n_actions={self.n_actions}, "
            f"n_features={self.n_features}, slate_size={self.slate_size})"
        )
